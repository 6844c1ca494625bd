"""A document (a Markdown file or a plan's revision) served for review on loopback (issue #29).

The page is rendered by annotate/documents.py into a folder of its own and served by the same app
as `annotate serve` (`annotate.web.app.create_app`): the overlay, the REST API, and the token,
Origin and Host guard, all unchanged. Its page URL is registered with the document's Markdown
file, so a note gets its file and lines as on a site page. A review sent from it with a verdict
("Send to agent" with a decision) answers the revision served: `Verdicts` reads the review the API
answered and records it with `store.plans.decide`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import documents
from .backends import DEFAULT_DIR
from .errors import AnnotateError
from .plans import Plan, Revision
from .store import Store

__all__ = ["Served", "Verdicts", "deciding", "plan_page", "plan_source", "serve_document"]

log = logging.getLogger(__name__)
REVIEWS_PATH = "/__annotate/api/reviews"
MAX_SCOPED_BODY = 65_536  # a review's JSON is a few hundred bytes; `ids` at most ~20 kB


def plan_source(plan_id: str) -> str:
    """Where a session's plan is written for its notes to be located (relative to the project):
    inside the store's folder, which is never part of the project's content."""
    return f"{DEFAULT_DIR}/plans/{plan_id}.md"


def _title(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip() or fallback
    return fallback


def plan_page(plan: Plan, number: int, *, source: str) -> str:
    """The page of revision `number`: the document, what changed since the last reviewed
    revision, and the history of revisions with their decisions."""
    revision = plan.revision(number)
    title = plan.title or _title(revision.markdown, "Plan")
    changes = ""
    before = plan.last_reviewed(number)
    if before is not None:
        diff, added, removed = documents.word_diff_html(before.markdown, revision.markdown)
        changes = (
            f"<p>Since revision {before.number} ({before.decision}): {added} words added, "
            f"{removed} removed.</p>{diff}"
        )
    history = [
        (f"Revision {r.number}", f"{r.created_at}: {r.decision or 'waiting for a decision'}")
        for r in plan.revisions
    ]
    meta = (
        f"Revision {number} of {plan.key} · notes carry the lines of {source} · answer with "
        "the review panel's Send to agent and a verdict (Approve, Approve with notes, Request "
        "changes)"
    )
    return documents.page(
        title,
        documents.render(revision.markdown),
        meta=meta,
        changes_html=changes,
        history=history,
        gate=True,
    )


class Verdicts:
    """ASGI middleware: a review created through this server with a decision decides the
    revision it serves (`on_review(review)` with the API's answer, in a worker thread).

    "Send to agent" on the page sends the batch; here the batch is the page's own notes only
    (`pageUrl` added to the request): a plan reviewed while a docs review is open, or two plans
    at once, never take each other's notes."""

    def __init__(
        self,
        app: ASGIApp,
        on_review: Callable[[dict[str, Any]], None],
        page_url: str,
        answered: threading.Event | None = None,
    ) -> None:
        self.app = app
        self.on_review = on_review
        self.page_url = page_url
        # Set once a verdict's answer went back to the page: the server may stop then.
        self.answered = answered or threading.Event()

    async def _scoped(self, receive: Receive) -> tuple[Receive, list[tuple[bytes, bytes]]]:
        """`receive` replaying the request body with `pageUrl` set, and the headers to send
        with it (its new length). A body that is no JSON object goes on as it came."""
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        with contextlib.suppress(ValueError):
            data = json.loads(body or b"{}")
            if isinstance(data, dict) and "ids" not in data:
                data["pageUrl"] = self.page_url
                body = json.dumps(data).encode()
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay, [(b"content-length", str(len(body)).encode())]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != REVIEWS_PATH:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) <= MAX_SCOPED_BODY:
            # Only a body of a size said up front is read here; anything else goes on as it came
            # to the app's own checks (its size limit among them), unscoped.
            receive, length = await self._scoped(receive)
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers, *length]}
        status = 0
        body: list[bytes] = []
        held: list[Message] = []
        verdict = False

        async def capture(message: Message) -> None:
            # The answer is held until the verdict is recorded: the page that sees its review
            # created sees the plan decided too (a review's answer is a few kB).
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
            held.append(message)

        try:
            await self.app(scope, receive, capture)
            if status == 201:
                with contextlib.suppress(ValueError):
                    review = json.loads(b"".join(body))
                    if isinstance(review, dict) and review.get("decision"):
                        await run_in_threadpool(self.on_review, review)
                        verdict = True
        finally:
            for message in held:
                await send(message)
            if verdict:
                self.answered.set()


@dataclass
class Served:
    """A running document server: its page's address, and how to stop it."""

    url: str
    page_url: str
    stop: Callable[[], None]
    errors: list[BaseException]
    # Set once the page that sent a verdict has its answer (it then says so and stops asking).
    answered: threading.Event


def serve_document(
    store: Store,
    pages: dict[str, tuple[str, str]],
    *,
    page_url: str,
    on_review: Callable[[dict[str, Any]], None],
    port: int = 0,
) -> Served:
    """Serve `pages` (page URL → (HTML, Markdown path relative to the project)) with the overlay
    on loopback, in a thread; the answer's `url` is `page_url`'s full address."""
    import uvicorn

    host = "127.0.0.1"

    from .tokens import TokenFile
    from .web.app import create_app

    folder = Path(tempfile.mkdtemp(prefix="annotate-doc-"))
    for url, (html, _) in pages.items():
        target = folder / url.strip("/") / "index.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    app = create_app(
        store,
        token=TokenFile(store.project_dir),
        site_dir=folder,
        page_sources={url: source for url, (_, source) in pages.items()},
    )
    # Loopback only (the hook's page is the person's, on this machine); port 0: a free one.
    sock = socket.create_server((host, port))
    sock.setblocking(False)
    answered = threading.Event()
    config = uvicorn.Config(
        Verdicts(app, on_review, page_url, answered),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as e:  # the waiting side reports it
            errors.append(e)

    thread = threading.Thread(target=run, name="annotate-document", daemon=True)
    thread.start()
    base = f"http://{host}:{sock.getsockname()[1]}"

    def stop() -> None:
        app.state.feed.close()
        server.should_exit = True
        thread.join(5)
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)

    return Served(base + page_url, page_url, stop, errors, answered)


def deciding(store: Store, revision: Revision) -> Callable[[dict[str, Any]], None]:
    """What records a review's verdict as `revision`'s decision (the first one stands)."""

    def decide(review: dict[str, Any]) -> None:
        with contextlib.suppress(AnnotateError):
            store.plans.decide(
                revision.plan_id,
                revision.number,
                str(review["decision"]),
                review.get("message") or None,
                review_id=str(review.get("id")),
            )

    return decide
