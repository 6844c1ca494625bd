"""`annotate hook stop`: a Stop hook that keeps an agent at a review it took (issue #14, item 12).

Claude Code and Codex run a Stop hook when the agent is about to end its turn, with a JSON object on
standard input (`session_id`, `cwd`, `stop_hook_active`, …), and take `{"decision": "block",
"reason": …}` on standard output as "not yet: go on with this" (the reason becomes the agent's next
instruction). While a review the agent picked up ("Send to agent", then `wait_for_review`) still
has notes that are neither addressed nor resolved, `stop` blocks with the list of those notes.

It never blocks forever. Blocks in a row are counted per session in `.annotate/hook-stop.json`: a
stop with `stop_hook_active` (the agent is only still working because a Stop hook blocked) adds to
the count, any other stop starts it again. After `MAX_BLOCKS` in a row the stop goes through, with a
message to the user naming the notes left; the same unfinished notes then never block that session
again (the user has seen them), while new or reopened work does. Without a store, or with nothing
unfinished, the hook says nothing and the agent stops. It reads the store and never creates one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import store as store_module
from .errors import AnnotateError, ValidationError
from .models import Annotation, PageNote, Review, Source
from .project import find_project

__all__ = ["MAX_BLOCKS", "Decision", "find_store", "stop", "unfinished"]

MAX_BLOCKS = 3
STATE_FILE = "hook-stop.json"
MAX_SESSIONS = 50  # sessions remembered in the state file; older ones are forgotten
MAX_LISTED = 20  # notes named in one reason; the rest are counted
WORK = ("open", "in_progress")


@dataclass(frozen=True)
class Decision:
    """What the hook answers: block with a reason for the agent, or let it stop (with a message
    for the user, or silently)."""

    block: bool
    reason: str = ""
    message: str = ""

    def to_dict(self) -> dict[str, str] | None:
        """The JSON the agent's hook runner reads; None when there is nothing to say."""
        if self.block:
            return {"decision": "block", "reason": self.reason}
        return {"systemMessage": self.message} if self.message else None


def find_store(start: str | os.PathLike[str]) -> Path | None:
    """The store of the project found upwards from `start`, as every command finds it
    (`annotate/project.py`); None when that project has no store yet, or `start` is no folder."""
    try:
        project = find_project(start)
    except AnnotateError:
        return None
    db = store_module.project_db_path(project)
    return db if db.is_file() else None


def unfinished(store: store_module.Store) -> list[tuple[Review, list[Annotation | PageNote]]]:
    """Reviews an agent picked up, each with its notes that are still open or in progress."""
    found = []
    for review in store.list_reviews():
        if review.picked_up_at is None:
            continue
        notes: list[Annotation | PageNote] = [*review.annotations, *review.page_notes]
        left = [n for n in notes if n.status in WORK]
        if left:
            found.append((review, left))
    return found


def stop(payload: Any, project: str | os.PathLike[str] | None = None) -> Decision:
    """The Stop hook's answer for `payload` (the JSON object the agent sent).

    `project` is the project folder; without it the store is looked for from the payload's `cwd`
    (else the current folder) upwards.
    """
    if not isinstance(payload, Mapping):
        raise ValidationError("The hook's input must be a JSON object", "input")
    active = payload.get("stop_hook_active", False)
    if not isinstance(active, bool):
        raise ValidationError(f"stop_hook_active must be true or false, got {active!r}", "input")
    session = payload.get("session_id") or ""
    if not isinstance(session, str):
        raise ValidationError(f"session_id must be a string, got {session!r}", "input")
    db: Path | None
    if project is not None:
        if not Path(project).is_dir():
            raise ValidationError(f"Project folder {str(project)!r} does not exist", "project")
        db = store_module.project_db_path(project)
        db = db if db.is_file() else None
    else:
        cwd = payload.get("cwd")
        db = find_store(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    if db is None:
        return Decision(False)
    with store_module.Store(db) as store:
        left = unfinished(store)
    state = _State(db.parent / STATE_FILE)
    entry = state.sessions.get(session)
    if not left:
        if entry is not None:
            del state.sessions[session]
            state.save()
        return Decision(False)
    key = ",".join(n.id for _, notes in left for n in notes)
    entry = dict(entry or {})
    if entry.get("spent") == key:
        return Decision(False)  # this session was reminded of exactly these notes already
    blocks = entry.get("blocks") if active else 0
    blocks = blocks if isinstance(blocks, int) else 0
    if blocks >= MAX_BLOCKS:
        entry.update(blocks=0, spent=key)
        state.put(session, entry)
        return Decision(False, message=_gave_up(left))
    entry.update(blocks=blocks + 1)
    state.put(session, entry)
    return Decision(True, reason=_reason(left, blocks + 1))


# -- the texts ----------------------------------------------------------------------------------


def _short(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(item: Annotation | PageNote) -> str:
    source = item.source
    if isinstance(source, Source) and source.line_start:
        return source.lines
    return (source.path if source is not None else "") or item.page_url


def _line(item: Annotation | PageNote) -> str:
    quote: str | None = None
    suggestion: str | None = None
    if isinstance(item, Annotation):
        kind = item.intent if item.type == "text" else f"element, {item.intent}"
        quote, suggestion = item.selected_text, item.suggestion
    else:
        kind = "page note"
    if item.status == "in_progress":
        kind += ", in progress"
    quoted = f' "{_short(quote, 50)}"' if quote else ""
    suggested = f' (suggestion: "{_short(suggestion, 80)}")' if suggestion else ""
    return f"- {item.id} ({kind}) {_where(item)}{quoted}: {_short(item.note, 100)}{suggested}"


def _listing(left: list[tuple[Review, list[Annotation | PageNote]]]) -> list[str]:
    lines: list[str] = []
    room = MAX_LISTED
    for review, notes in left:
        n = len(notes)
        lines.append(
            f"Review {review.id} ({review.mode} mode) has {n} note{'' if n == 1 else 's'} "
            "not addressed yet:"
        )
        shown = notes[:room]
        lines += [_line(item) for item in shown]
        room -= len(shown)
        if len(shown) < n:
            lines.append(f"- … and {n - len(shown)} more: get_review {review.id} lists them all.")
    return lines


def _reason(left: list[tuple[Review, list[Annotation | PageNote]]], block: int) -> str:
    lines = ["mkdocs-annotate: the review you took is not finished.", *_listing(left)]
    lines.append(
        "For each: do what its intent asks (answer a question in the reply, with no edit), then "
        "address_annotation with `message` (your reply) and, for a deletion you made, "
        "`deleted: true`; or `annotate address ID --message TEXT` from a shell. A note you cannot "
        "do: reply saying why and address it, or ask the user."
    )
    lines.append(
        f"(Stop hook reminder {block} of {MAX_BLOCKS} in a row; after {MAX_BLOCKS} the stop goes "
        "through.)"
    )
    return "\n".join(lines)


def _gave_up(left: list[tuple[Review, list[Annotation | PageNote]]]) -> str:
    n = sum(len(notes) for _, notes in left)
    ids = ", ".join(item.id for _, notes in left for item in notes[:MAX_LISTED])
    return (
        f"mkdocs-annotate: {n} note{'' if n == 1 else 's'} of a review the agent took "
        f"{'is' if n == 1 else 'are'} still not addressed ({ids}); the stop hook let the agent "
        f"stop after {MAX_BLOCKS} reminders in a row."
    )


# -- the state file -----------------------------------------------------------------------------


class _State:
    """`.annotate/hook-stop.json`: per session, blocks in a row and the notes already spent.

    Written whole through a temporary file and a rename, so a reader never sees half of it. Two
    sessions stopping at the same instant may lose one count: one more reminder, never a loop.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}  # missing or damaged: start again rather than fail the agent's stop
        sessions = data.get("sessions") if isinstance(data, dict) else None
        self.sessions: dict[str, dict[str, Any]] = {
            k: v for k, v in (sessions or {}).items() if isinstance(v, dict)
        }

    def put(self, session: str, entry: dict[str, Any]) -> None:
        entry["at"] = store_module.now()
        self.sessions.pop(session, None)
        self.sessions[session] = entry  # newest last
        while len(self.sessions) > MAX_SESSIONS:
            del self.sessions[next(iter(self.sessions))]
        self.save()

    def save(self) -> None:
        text = json.dumps({"sessions": self.sessions}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".hook-stop.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
