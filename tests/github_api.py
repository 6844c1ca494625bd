"""An emulated GitHub API for `annotate pr` (issue #30): the endpoints it uses, with the request
and answer shapes of GitHub's REST description (github/rest-api-description) and its refusals,
served by uvicorn on a real port over a real git repository.

What it reproduces: Bearer-token sign-in (401 "Bad credentials"), 404 for an unknown repository
or pull request, a pull request's files with their diff `patch` (computed by git), the review
POST that is all or nothing (422 "Pull request review thread line must be part of the diff"
when one comment's line is outside the hunks, and nothing created), a `body` required for
COMMENT and REQUEST_CHANGES, file-level comments (`subject_type: "file"`), replies
(`in_reply_to`), `Link: rel="next"` pagination, contents at a commit (base64), GraphQL
`reviewThreads { isResolved }`, and the rate limit (403 with `x-ratelimit-remaining: 0`, or 429
with `retry-after`).
"""

from __future__ import annotations

import base64
import contextlib
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

TOKEN = "ghp_emulated0123456789abcdefABCDEF012345"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class PullRequest:
    number: int
    head_ref: str
    base_ref: str
    # The pull request's author; the token is ada's, who may not approve her own.
    user: str = "grace"


@dataclass
class GitHubState:
    """The emulated GitHub's data: one repository (`owner/name`) backed by the git repository
    at `repo`, its pull requests, comments and reviews, and the faults to answer with."""

    repo: Path
    full_name: str = "acme/docs"
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    resolved: set[int] = field(default_factory=set)
    # Every request as (method, path, query, Authorization header).
    log: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    # The next requests answer this (status, headers) instead, when set.
    fault: tuple[int, dict[str, str]] | None = None
    # Fail POSTs after this many were taken (a push cut short), with this status.
    posts_left: int | None = None
    next_id: int = 1000
    per_page_max: int = 100
    # The diff context the review POST checks lines against: 3, as the files' patches, unless a
    # test makes GitHub's view of the diff narrower than what the client read (a pull request
    # updated between the read and the post).
    review_context: int = 3
    # Where requests for repository acme/moved are redirected (301), as GitHub moves renamed
    # repositories.
    moved_to: str | None = None

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def sha(self, ref: str) -> str:
        return git(self.repo, "rev-parse", ref)

    def patches(self, pr: PullRequest, context: int = 3) -> dict[str, tuple[str, str]]:
        """filename -> (status, patch) of the pull request's diff (three-dot, as GitHub)."""
        base = git(self.repo, "merge-base", pr.base_ref, pr.head_ref)
        diff = git(self.repo, "diff", "--no-color", f"-U{context}", base, self.sha(pr.head_ref))
        out: dict[str, tuple[str, str]] = {}
        for chunk in re.split(r"^diff --git ", diff, flags=re.MULTILINE)[1:]:
            head, _, body = chunk.partition("\n@@")
            name = re.search(r"^\+\+\+ (?:b/(.+)|/dev/null)$", head, re.MULTILINE)
            old = re.search(r"^--- a/(.+)$", head, re.MULTILINE)
            status = "added" if "new file mode" in head else "modified"
            if name is None or name[1] is None:
                status = "removed"
                filename = old[1] if old else "?"
            else:
                filename = name[1]
            out[filename] = (status, ("@@" + body) if body else "")
        return out

    def hunks(self, pr: PullRequest, path: str, context: int = 3) -> list[tuple[int, int]]:
        patch = self.patches(pr, context).get(path, ("", ""))[1]
        ranges = []
        for m in _HUNK.finditer(patch):
            start, count = int(m[1]), 1 if m[2] is None else int(m[2])
            if count:
                ranges.append((start, start + count - 1))
        return ranges


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse(
        {"message": message, "documentation_url": "https://docs.github.com/rest", **extra},
        status,
    )


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10**6, "type": "User"}


def create_app(state: GitHubState) -> Starlette:
    def guard(request: Request) -> Response | None:
        auth = request.headers.get("authorization")
        state.log.append((request.method, request.url.path, request.url.query, auth))
        if state.fault is not None:
            status, headers = state.fault
            message = (
                "API rate limit exceeded for user ID 1." if status in (403, 429) else "Server Error"
            )
            return JSONResponse({"message": message}, status, headers=headers)
        owner, name = request.path_params.get("owner"), request.path_params.get("name")
        if state.moved_to is not None and f"{owner}/{name}" == "acme/moved":
            path = request.url.path.replace("/acme/moved/", f"/{state.full_name}/")
            return Response(status_code=301, headers={"location": state.moved_to + path})
        if auth != f"Bearer {TOKEN}":
            return _error(401, "Bad credentials")
        if owner is not None and f"{owner}/{name}" != state.full_name:
            return _error(404, "Not Found")
        if request.method == "POST" and state.posts_left is not None:
            if state.posts_left <= 0:
                return JSONResponse(
                    {"message": "You have exceeded a secondary rate limit."},
                    429,
                    headers={"retry-after": "60"},
                )
            state.posts_left -= 1
        return None

    def the_pull(request: Request) -> PullRequest | None:
        return state.pulls.get(int(request.path_params["number"]))

    def paginate(request: Request, items: list[Any]) -> Response:
        per_page = min(int(request.query_params.get("per_page", 30)), state.per_page_max)
        page = int(request.query_params.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            query = dict(request.query_params)
            query["page"] = str(page + 1)
            nxt = request.url.include_query_params(**query)
            headers["link"] = f'<{nxt}>; rel="next"'
        return JSONResponse(chunk, headers=headers)

    def pr_json(pr: PullRequest) -> dict[str, Any]:
        owner = state.full_name.split("/")[0]
        return {
            "number": pr.number,
            "state": "open",
            "title": f"Docs change {pr.number}",
            "user": _user(pr.user),
            "head": {
                "ref": pr.head_ref,
                "sha": state.sha(pr.head_ref),
                "label": f"{owner}:{pr.head_ref}",
            },
            "base": {"ref": pr.base_ref, "sha": state.sha(pr.base_ref)},
        }

    async def list_pulls(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        head = request.query_params.get("head")
        owner = state.full_name.split("/")[0]
        found = [
            pr_json(pr)
            for pr in state.pulls.values()
            if head is None or head == f"{owner}:{pr.head_ref}"
        ]
        return paginate(request, found)

    async def get_pull(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        pr = the_pull(request)
        return _error(404, "Not Found") if pr is None else JSONResponse(pr_json(pr))

    async def files(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        pr = the_pull(request)
        if pr is None:
            return _error(404, "Not Found")
        out = [
            {"filename": name, "status": status, "patch": patch}
            for name, (status, patch) in sorted(state.patches(pr).items())
        ]
        return paginate(request, out)

    async def comments(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        pr = the_pull(request)
        if pr is None:
            return _error(404, "Not Found")
        if request.method == "GET":
            return paginate(request, [c for c in state.comments if c["_pr"] == pr.number])
        body = await request.json()
        if body.get("in_reply_to"):
            parent = next((c for c in state.comments if c["id"] == body["in_reply_to"]), None)
            if parent is None:
                return _error(404, "Not Found")
            comment = _comment(
                state,
                pr,
                parent["path"],
                body["body"],
                "ada",
                reply_to=parent["id"],
                subject=parent["subject_type"],
            )
            return JSONResponse(_public(comment), 201)
        if not body.get("body") or not body.get("commit_id") or not body.get("path"):
            return _error(422, "Invalid request.", errors=["body, commit_id and path are required"])
        if body["path"] not in state.patches(pr):
            return _error(422, "Validation Failed", errors=[{"field": "path", "code": "invalid"}])
        if body.get("subject_type") != "file":
            line = body.get("line")
            if not any(lo <= (line or 0) <= hi for lo, hi in state.hunks(pr, body["path"])):
                return _error(
                    422,
                    "Validation Failed",
                    errors=["Pull request review thread line must be part of the diff"],
                )
        comment = _comment(
            state,
            pr,
            body["path"],
            body["body"],
            "ada",
            subject=body.get("subject_type", "line"),
            line=body.get("line"),
        )
        return JSONResponse(_public(comment), 201)

    async def reviews(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        pr = the_pull(request)
        if pr is None:
            return _error(404, "Not Found")
        if request.method == "GET":
            return paginate(request, [r for r in state.reviews if r["_pr"] == pr.number])
        body = await request.json()
        event = body.get("event")
        if event not in (None, "APPROVE", "REQUEST_CHANGES", "COMMENT"):
            return _error(422, "Validation Failed", errors=[f"event {event!r} is not valid"])
        if event in ("REQUEST_CHANGES", "COMMENT") and not body.get("body"):
            return _error(
                422,
                "Unprocessable Entity",
                errors=[f"Review Can not {event.lower()} without a body"],
            )
        if len(body.get("body") or "") > 65536:
            return _error(
                422, "Validation Failed", errors=["body is too long (maximum is 65536 characters)"]
            )
        if event == "APPROVE" and pr.user == "ada":
            return _error(
                422, "Unprocessable Entity", errors=["Review Can not approve your own pull request"]
            )
        files = state.patches(pr)
        for c in body.get("comments") or []:
            hunks = state.hunks(pr, c.get("path", ""), state.review_context)
            first, last = c.get("start_line", c.get("line")), c.get("line")
            if c.get("path") not in files or not any(
                lo <= (first or 0) and (last or 0) <= hi for lo, hi in hunks
            ):
                # All or nothing: one line outside the diff refuses the whole review.
                return _error(
                    422,
                    "Unprocessable Entity",
                    errors=["Pull request review thread line must be part of the diff"],
                )
        review = {
            "id": state.new_id(),
            "_pr": pr.number,
            "user": _user("ada"),
            "body": body.get("body") or "",
            "state": {
                "APPROVE": "APPROVED",
                "REQUEST_CHANGES": "CHANGES_REQUESTED",
                "COMMENT": "COMMENTED",
                None: "PENDING",
            }[event],
            "commit_id": body.get("commit_id"),
        }
        state.reviews.append(review)
        for c in body.get("comments") or []:
            _comment(
                state,
                pr,
                c["path"],
                c["body"],
                "ada",
                line=c["line"],
                start_line=c.get("start_line"),
                review=review["id"],
            )
        return JSONResponse(review)

    async def review_comments(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        wanted = int(request.path_params["review"])
        found = [_public(c) for c in state.comments if c.get("_review") == wanted]
        return paginate(request, found)

    async def contents(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        ref = request.query_params.get("ref", "HEAD")
        try:
            text = git(state.repo, "show", f"{ref}:{request.path_params['path']}")
        except subprocess.CalledProcessError:
            return _error(404, "Not Found")
        data = (text + "\n").encode()
        return JSONResponse(
            {"type": "file", "encoding": "base64", "content": base64.b64encode(data).decode()}
        )

    async def graphql(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        body = await request.json()
        if "reviewThreads" not in body.get("query", ""):
            return JSONResponse({"errors": [{"message": "unsupported query"}]})
        v = body["variables"]
        if f"{v['owner']}/{v['name']}" != state.full_name or v["number"] not in state.pulls:
            return JSONResponse(
                {
                    "data": {"repository": None},
                    "errors": [{"type": "NOT_FOUND", "message": "Could not resolve"}],
                }
            )
        roots = [
            c for c in state.comments if c["_pr"] == v["number"] and c["in_reply_to_id"] is None
        ]
        start = int(v.get("cursor") or 0)
        page = roots[start : start + 2]  # small pages, so the client must follow the cursor
        nodes = [
            {
                "id": f"PRRT_{c['id']}",
                "isResolved": c["id"] in state.resolved,
                "comments": {"nodes": [{"databaseId": c["id"]}]},
            }
            for c in page
        ]
        more = start + 2 < len(roots)
        info = {"hasNextPage": more, "endCursor": str(start + 2) if more else None}
        return JSONResponse(
            {
                "data": {
                    "repository": {
                        "pullRequest": {"reviewThreads": {"pageInfo": info, "nodes": nodes}}
                    }
                }
            }
        )

    base = "/repos/{owner}/{name}"
    return Starlette(
        routes=[
            Route(f"{base}/pulls", list_pulls),
            Route(f"{base}/pulls/{{number:int}}", get_pull),
            Route(f"{base}/pulls/{{number:int}}/files", files),
            Route(f"{base}/pulls/{{number:int}}/comments", comments, methods=["GET", "POST"]),
            Route(f"{base}/pulls/{{number:int}}/reviews", reviews, methods=["GET", "POST"]),
            Route(f"{base}/pulls/{{number:int}}/reviews/{{review:int}}/comments", review_comments),
            Route(f"{base}/contents/{{path:path}}", contents),
            Route("/graphql", graphql, methods=["POST"]),
        ]
    )


def _comment(
    state: GitHubState,
    pr: PullRequest,
    path: str,
    body: str,
    login: str,
    *,
    subject: str = "line",
    line: int | None = None,
    start_line: int | None = None,
    reply_to: int | None = None,
    review: int | None = None,
) -> dict[str, Any]:
    comment = {
        "id": state.new_id(),
        "_pr": pr.number,
        "_review": review,
        "pull_request_review_id": review,
        "path": path,
        "body": body,
        "user": _user(login),
        "subject_type": subject,
        "line": line,
        "start_line": start_line,
        "side": "RIGHT",
        "in_reply_to_id": reply_to,
        "commit_id": state.sha(pr.head_ref),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    state.comments.append(comment)
    return comment


def _public(c: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in c.items() if not k.startswith("_")}


def reply(state: GitHubState, to: int, body: str, login: str = "bob") -> int:
    """Someone answers comment `to` on GitHub (as `POST …/comments` with `in_reply_to`)."""
    parent = next(c for c in state.comments if c["id"] == to)
    pr = state.pulls[parent["_pr"]]
    return int(
        _comment(
            state, pr, parent["path"], body, login, reply_to=to, subject=parent["subject_type"]
        )["id"]
    )


def serve(state: GitHubState) -> contextlib.AbstractContextManager[str]:
    """The emulated API on 127.0.0.1 (a free port) while the block runs: its base URL."""
    return serve_app(create_app(state))


@contextlib.contextmanager
def serve_app(app: Starlette) -> Iterator[str]:
    """`app` on 127.0.0.1 (a free port) by uvicorn while the block runs: its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise AssertionError("the emulated API did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
