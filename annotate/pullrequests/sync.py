"""`annotate pr push` and `annotate pr pull` (issue #30, docs/pull-requests.md): the open notes
posted to a pull request as one review, and the conversation there brought back.

Where each note goes is decided before anything is posted, from the pull request's own diff
(annotate/pullrequests/hunks.py): a note on lines inside a hunk is a line comment (a
`suggestion` block when it asks to replace or delete text that stands verbatim in those lines),
a note on lines outside the diff a file-level comment quoting them, a page note or a note on a
file the pull request does not touch a paragraph of the review's body. Every posted text ends
with a hidden marker `<!-- annotate:ID -->`, so a push cut short after the host accepted a
request is recognised by the next one rather than posted twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError, ProjectNotFound, ValidationError
from ..models import Annotation, PageNote
from ..validation import MAX_REPLY
from .comments import (
    Planned,
    Where,
    as_file_comment,
    clean_text,
    place_note,
)
from .errors import HostRefused, NoPullRequest, NoToken
from .git import Checkout, checkout
from .github import GitHub, api_url_for, token_for
from .gitlab import GitLab
from .gitlab import token_for as gitlab_token_for
from .links import Link, Target

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["EVENTS", "PullResult", "PushResult", "Sent", "event_for", "pull", "push"]

# --event's choices, as GitHub spells them.
EVENTS = {"comment": "COMMENT", "request-changes": "REQUEST_CHANGES", "approve": "APPROVE"}
# A review decision (NOUNS.md: approve | approve_with_notes | request_changes) as the event of
# the review posted: an approval with notes still approves, its notes ride along as comments.
DECISION_EVENTS = {
    "approve": "APPROVE",
    "approve_with_notes": "APPROVE",
    "request_changes": "REQUEST_CHANGES",
}
_MARK = re.compile(r"<!-- annotate:([A-Za-z0-9_-]{1,64}) -->")
# The marker of a reply of the store's posted to the host (`push`): `pull` never brings it back.
REPLY_MARK = "<!-- annotate-reply:{id} -->"
_REPLY_MARK = re.compile(r"<!-- annotate-reply:([A-Za-z0-9_-]{1,64}) -->")
# Where a reply from the host comes from, in the note's thread.
AUTHOR = "{login} (GitHub)"
GITLAB_AUTHOR = "{login} (GitLab)"
# A review's body: its paragraphs apart, and how long it may grow (GitHub refuses a body over
# 65,536 characters; the margin is for the first line).
SEPARATOR = "\n\n---\n\n"
MAX_BODY = 65_536 - 1_000


def event_for(decision: str | None) -> str:
    """The review event of a review decision: APPROVE, REQUEST_CHANGES, or COMMENT (no
    decision, or one this release does not know)."""
    return DECISION_EVENTS.get(decision or "", "COMMENT")


@dataclass(slots=True)
class Sent:
    """Where one note went: `placement` "line", "file" or "body"; `at`: `path:12-14` or the
    page; `suggestion`: whether a suggestion block came with it."""

    note: str
    placement: str
    at: str
    suggestion: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "note": self.note,
            "placement": self.placement,
            "at": self.at,
            "suggestion": self.suggestion,
        }


@dataclass(slots=True)
class PushResult:
    """What `push` did (or, with `dry_run`, would do: `requests` holds them, unsent)."""

    target: str
    event: str
    dry_run: bool
    sent: list[Sent] = field(default_factory=list)
    # Notes already on the pull request: linked before, or found there by their marker.
    already: list[str] = field(default_factory=list)
    # The store's replies posted in the notes' threads there: {note, reply}.
    replies: list[dict[str, str]] = field(default_factory=list)
    review_id: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pullRequest": self.target,
            "event": self.event,
            "dryRun": self.dry_run,
            "sent": [s.to_dict() for s in self.sent],
            "already": self.already,
            "replies": self.replies,
            "reviewId": self.review_id,
            "warnings": self.warnings,
        }
        if self.dry_run:
            out["requests"] = self.requests
        return out


@dataclass(slots=True)
class PullResult:
    """What `pull` changed: replies added to notes' threads, notes marked addressed."""

    target: str
    replies: list[dict[str, str]] = field(default_factory=list)
    addressed: list[dict[str, str]] = field(default_factory=list)
    linked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pullRequest": self.target,
            "linked": self.linked,
            "replies": self.replies,
            "addressed": self.addressed,
        }


def _resolve(
    store: Store,
    repo: str | None,
    number: int | None,
    api_url: str | None,
    token: str | None,
    *,
    need_token: bool,
    gitlab: str | None = None,
) -> Where:
    try:
        project = store.project_dir
    except ProjectNotFound:
        project = Path.cwd()
    try:
        found: Checkout | None = checkout(project)
    except NoPullRequest:
        if repo is None or number is None:
            raise
        found = None
    name = repo or (found.repo if found else None)
    if name is None:
        raise NoPullRequest(
            "The checkout has no remote to tell the repository from: name it with --repo OWNER/NAME"
        )
    remote_host = found.host if found and found.repo == name else None
    # GitLab when asked (--gitlab URL) or when the remote's host says so (gitlab.com,
    # gitlab.example.com); GitHub otherwise.
    on_gitlab = gitlab is not None or "gitlab" in (remote_host or "").split(".")[0]
    # A GitLab project may sit in subgroups: group/sub/name.
    shape = (
        r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+" if on_gitlab else r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
    )
    # `.` and `..` would climb the API's paths (with the token): never a repository's name.
    if not re.fullmatch(shape, name) or {".", ".."} & set(name.split("/")):
        raise ValidationError(f"--repo must be OWNER/NAME, got {name!r}", "repo")
    if on_gitlab:
        root_url = (gitlab or f"https://{remote_host}").rstrip("/")
        api = (api_url or f"{root_url}/api/v4").rstrip("/")
    else:
        api = (api_url or api_url_for(remote_host)).rstrip("/")
    for value, option in ((api, "--api-url"), (gitlab, "--gitlab")):
        if value is not None and not re.match(r"https?://", value):
            raise ValidationError(f"{option} must be an http(s) URL, got {value!r}", option[2:])
    if token is None:
        try:
            token = gitlab_token_for() if on_gitlab else token_for(remote_host)
        except NoToken:
            if need_token:
                raise
    host: GitHub | GitLab = GitLab(api, name, token) if on_gitlab else GitHub(api, name, token)
    if number is None:
        if found is None or found.branch is None:
            raise NoPullRequest(
                "The checkout is on no branch (detached HEAD): name the pull request with --pr N"
            )
        number = host.find(name.partition("/")[0], found.branch)
    if number < 1:
        raise ValidationError(f"--pr must be a positive number, got {number}", "pr")
    root = found.root if found else project
    return Where(host, number, root, project, found)


# -- push ---------------------------------------------------------------------------------------


def push(
    store: Store,
    *,
    repo: str | None = None,
    number: int | None = None,
    event: str | None = None,
    dry_run: bool = False,
    api_url: str | None = None,
    token: str | None = None,
    gitlab: str | None = None,
) -> PushResult:
    """Post the open notes to a pull request as one review (plus a file-level comment per note
    on lines outside its diff); notes already there are left out.

    `repo` (`OWNER/NAME`) and `number` default to the checkout's remote and the open pull
    request of its branch; `event`: "comment", "request-changes" or "approve", else the latest
    review's decision (`event_for`); `dry_run`: read the pull request, send nothing, return the
    requests; `token` defaults to GH_TOKEN, GITHUB_TOKEN, then `gh auth token`. `gitlab`: a
    GitLab instance's URL (a remote on a host named gitlab… is one too): a merge request,
    its notes posted as draft notes published together, the token from GITLAB_TOKEN.
    """
    if event is not None and event not in EVENTS:
        raise ValidationError(f"event must be one of {', '.join(EVENTS)}, got {event!r}", "event")
    where = _resolve(store, repo, number, api_url, token, need_token=not dry_run, gitlab=gitlab)
    chosen = EVENTS[event] if event is not None else event_for(store.reviews.latest_decision())
    gh, n, target = where.host, where.number, where.target
    result = PushResult(str(target), chosen, dry_run)
    if isinstance(gh, GitLab):
        return _push_gitlab(store, where, gh, result)
    pr = gh.pull_request(n)
    head = str(pr["head"]["sha"])
    if where.checkout is not None and where.checkout.head not in (None, head):
        result.warnings.append(
            f"The checkout is at {str(where.checkout.head)[:12]}, the pull request's head at "
            f"{head[:12]}: line numbers are the checkout's"
        )
    files = gh.files(n)
    notes = _not_posted(store, target, result)
    if notes:
        # A push cut short after the host took a request: its notes carry their marker there.
        found = _on_host(gh, n, {item.id for item in notes})
        if found:
            if not dry_run:
                store.pull_requests.add(target, found)
            result.already += [link.note_id for link in found]
            notes = [item for item in notes if item.id not in {f.note_id for f in found}]
    shots = frozenset(store.screenshots.list(item.id for item in notes))
    plan = [place_note(item, files, where, item.id in shots) for item in notes]
    lines = [p for p in plan if p.placement == "line"]
    body = [p for p in plan if p.placement == "body"]
    singles = [p for p in plan if p.placement == "file"]
    # A review when there is something for it; an approval (or a request for changes) comes
    # with new notes only, so pushing again posts nothing.
    # GitHub takes 65,536 characters a body: page notes beyond that go in further reviews
    # (COMMENT, body only) after the first, which carries the line comments and the event.
    parts = _parts(body)
    if lines or body or (singles and chosen != "COMMENT"):
        payload = _review(head, chosen, lines, parts[0], len(plan))
        if dry_run:
            result.requests.append(_request(gh.reviews_url(n), payload))
        else:
            try:
                result.review_id = gh.post_review(n, payload)
            except HostRefused as e:
                # Only a refusal about lines ("…line must be part of the diff", "Line could
                # not be resolved"); another (approving one's own pull request) stands.
                about_lines = any(w in str(e).lower() for w in ("diff", "line"))
                if not lines or e.status != 422 or not about_lines:
                    raise
                # The diff moved between our read and the post (or GitHub drew its hunks
                # otherwise): the lines go as file-level comments rather than sink the review.
                result.warnings.append(
                    f"GitHub refused the line comments ({e}); they went as file-level comments"
                )
                singles = [as_file_comment(p) for p in lines] + singles
                lines = []
                result.review_id = gh.post_review(
                    n, _review(head, chosen, lines, parts[0], len(plan))
                )
            ids = _markers_of(gh.review_comments(n, result.review_id)) if lines else {}
            store.pull_requests.add(
                target,
                [_linked(p, ids.get(p.note)) for p in lines]
                + [_linked(p, result.review_id) for p in parts[0]],
            )
        result.sent += [_sent(p) for p in lines + parts[0]]
    for more in parts[1:]:
        payload = _review(head, "COMMENT", [], more, len(plan))
        if dry_run:
            result.requests.append(_request(gh.reviews_url(n), payload))
        else:
            review = gh.post_review(n, payload)
            store.pull_requests.add(target, [_linked(p, review) for p in more])
        result.sent += [_sent(p) for p in more]
    for p in singles:
        payload = {"body": p.text, "commit_id": head, "path": p.path, "subject_type": "file"}
        if dry_run:
            result.requests.append(_request(gh.comments_url(n), payload))
        else:
            # One request per note, recorded as soon as it is taken: a failure later keeps it.
            store.pull_requests.add(target, [_linked(p, gh.post_comment(n, payload))])
        result.sent.append(_sent(p))
    _push_replies(store, gh, n, target, result)
    return result


def _push_replies(
    store: Store, host: GitHub | GitLab, n: int, target: Target, result: PushResult
) -> None:
    """Post the replies in the notes' threads here (the agent's above all) that the pull
    request's thread of the note does not have yet, each as a reply there."""
    on_gitlab = isinstance(host, GitLab)
    threads = [
        link
        for link in store.pull_requests.links(target).values()
        if link.comment_id and (on_gitlab or link.placement in ("line", "file"))
    ]
    done = store.pull_requests.reply_ids(target)
    waiting: list[tuple[Link, Any]] = []
    for link in threads:
        try:
            item = store.get_annotation(link.note_id)
        except NotFoundError:
            continue
        waiting += [(link, r) for r in item.replies if r.id not in done]
    if not waiting:
        return
    if not result.dry_run:
        # Posted before, but never remembered (a push cut short): remembered now, not reposted.
        for remote_id, reply_id in _reply_marks(host, n):
            if reply_id in {r.id for _, r in waiting}:
                note = next(link.note_id for link, r in waiting if r.id == reply_id)
                store.pull_requests.remember(target, remote_id, note, reply_id)
                done.add(reply_id)
    for link, r in waiting:
        if r.id in done:
            continue
        who = r.author or ("the agent" if r.role == "agent" else "the reviewer")
        text = f"**{clean_text(who)}** ({r.role}): {clean_text(r.message)}\n\n{REPLY_MARK.format(id=r.id)}"
        comment = str(link.comment_id)
        if result.dry_run:
            url, payload = _reply_request(host, n, comment, text)
            result.requests.append(_request(url, payload))
        else:
            remote = (
                host.post_reply(n, comment, text)
                if isinstance(host, GitLab)
                else host.post_comment(n, {"body": text, "in_reply_to": int(comment)})
            )
            store.pull_requests.remember(target, remote, link.note_id, r.id)
        result.replies.append({"note": link.note_id, "reply": r.id})


def _reply_request(
    host: GitHub | GitLab, n: int, comment: str, text: str
) -> tuple[str, dict[str, Any]]:
    if isinstance(host, GitLab):
        return host.reply_url(n, comment), {"body": text}
    return host.comments_url(n), {"body": text, "in_reply_to": int(comment)}


def _reply_marks(host: GitHub | GitLab, n: int) -> list[tuple[str, str]]:
    """(host's id, store's reply id) of the replies of ours already on the pull request."""
    if isinstance(host, GitLab):
        notes = [note for d in host.discussions(n) for note in d.get("notes") or []]
    else:
        notes = host.comments(n)
    return [
        (str(c["id"]), found) for c in notes for found in _REPLY_MARK.findall(c.get("body") or "")
    ]


def _not_posted(store: Store, target: Target, result: PushResult) -> list[Annotation | PageNote]:
    """The open notes not on `target` yet; those already there go to `result.already`."""
    known = store.pull_requests.links(target)
    notes: list[Annotation | PageNote] = [
        *store.list_annotations(status="open"),
        *store.list_page_notes(status="open"),
    ]
    result.already = [item.id for item in notes if item.id in known]
    return [item for item in notes if item.id not in known]


def _request(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    # What --dry-run shows: never a header, so never the token.
    return {"method": "POST", "url": url, "json": payload}


def _sent(p: Planned) -> Sent:
    return Sent(p.note, p.placement, p.at, p.suggestion)


def _linked(p: Planned, comment_id: str | None) -> Link:
    return Link(
        p.note,
        p.placement,
        comment_id,
        p.path,
        p.line[0] if p.line else None,
        p.line[1] if p.line else None,
        p.link.excerpt,
        p.link.suggestion,
    )


def _on_host(gh: GitHub, number: int, wanted: set[str]) -> list[Link]:
    """Links for the notes in `wanted` whose marker is already on the pull request."""
    found: dict[str, Link] = {}
    for c in gh.comments(number):
        for note in _MARK.findall(c.get("body") or ""):
            if note in wanted and note not in found and c.get("in_reply_to_id") is None:
                placement = "file" if c.get("subject_type") == "file" else "line"
                found[note] = Link(note, placement, str(c["id"]), c.get("path"))
    for review, text in gh.review_bodies(number):
        for note in _MARK.findall(text):
            if note in wanted and note not in found:
                found[note] = Link(note, "body", review)
    return list(found.values())


def _markers_of(comments: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in comments:
        for note in _MARK.findall(c.get("body") or ""):
            out.setdefault(note, str(c["id"]))
    return out


def _parts(body: list[Planned]) -> list[list[Planned]]:
    """The body's paragraphs in groups that each fit a review's body (at least one group)."""
    parts: list[list[Planned]] = [[]]
    size = 0
    for p in body:
        grown = size + len(p.text) + len(SEPARATOR)
        if parts[-1] and grown > MAX_BODY:
            parts.append([])
            grown = len(p.text) + len(SEPARATOR)
        parts[-1].append(p)
        size = grown
    return parts


def _review(
    head: str, event: str, lines: list[Planned], body: list[Planned], count: int
) -> dict[str, Any]:
    head_line = (
        f"Review notes from the rendered documentation ({count} "
        f"note{'' if count == 1 else 's'}, mkdocs-annotate)."
    )
    comments = []
    for p in lines:
        assert p.line is not None and p.path is not None
        comment: dict[str, Any] = {"path": p.path, "line": p.line[1], "side": "RIGHT"}
        if p.line[0] != p.line[1]:
            comment.update(start_line=p.line[0], start_side="RIGHT")
        comment["body"] = p.text
        comments.append(comment)
    text = SEPARATOR.join([head_line, *(p.text for p in body)])
    return {"commit_id": head, "event": event, "body": text, "comments": comments}


# -- pull ---------------------------------------------------------------------------------------


def pull(
    store: Store,
    *,
    repo: str | None = None,
    number: int | None = None,
    api_url: str | None = None,
    token: str | None = None,
    gitlab: str | None = None,
) -> PullResult:
    """Bring the pull request's conversation back: replies on the notes' comments join their
    threads (author named), a note whose thread is resolved, or whose suggestion now stands
    in the file at the pull request's head, becomes addressed. Idempotent."""
    where = _resolve(store, repo, number, api_url, token, need_token=True, gitlab=gitlab)
    gh, n, target = where.host, where.number, where.target
    result = PullResult(str(target))
    if isinstance(gh, GitLab):
        return _pull_gitlab(store, gh, n, target, result)
    head = str(gh.pull_request(n)["head"]["sha"])  # also: a pull request that is not there
    links = store.pull_requests.links(target)
    result.linked = len(links)
    threads = {
        link.comment_id: link
        for link in links.values()
        if link.placement in ("line", "file") and link.comment_id
    }
    if not threads:
        return result
    comments = sorted(gh.comments(n), key=lambda c: (str(c.get("created_at")), int(c["id"])))
    replies = [
        (
            str(c.get("in_reply_to_id") or ""),
            str(c["id"]),
            str((c.get("user") or {}).get("login") or "someone"),
            c.get("body") or "",
        )
        for c in comments
    ]
    _bring_replies(store, target, threads, replies, result)
    _settle(store, gh, head, threads, gh.resolved_threads(n), result)
    return result


def _bring_replies(
    store: Store,
    target: Target,
    threads: dict[str, Link],
    replies: list[tuple[str, str, str, str]],
    result: PullResult,
    author: str = AUTHOR,
) -> None:
    """Add each reply (thread's first comment id, reply id, login, text) on a note's thread that
    is not ours and not brought back before."""
    pulled = store.pull_requests.remote_ids(target)
    for root, cid, login, text in replies:
        if root not in threads or cid in pulled or _MARK.search(text) or _REPLY_MARK.search(text):
            continue
        note = threads[root].note_id
        message = text.strip()[:MAX_REPLY] or "(empty reply)"
        name = author.format(login=login)
        reply_id = None
        try:
            item = store.add_reply(note, message, role="reviewer", author=name)
        except NotFoundError:
            pass  # the note was deleted here: its replies have nowhere to go
        else:
            reply_id = next(
                (r.id for r in reversed(item.replies) if (r.author, r.message) == (name, message)),
                None,
            )
            result.replies.append({"note": note, "author": login, "remoteId": cid})
        store.pull_requests.remember(target, cid, note, reply_id)


def _settle(
    store: Store,
    host: GitHub | GitLab,
    head: str,
    threads: dict[str, Link],
    resolved: dict[str, bool],
    result: PullResult,
) -> None:
    """Mark addressed the open notes whose thread is resolved or whose suggestion stands in the
    file at `head`."""
    texts: dict[str, str | None] = {}
    for link in threads.values():
        status = _status(store, link.note_id)
        if status not in ("open", "in_progress"):
            continue
        why = None
        if resolved.get(str(link.comment_id)):
            why = "thread resolved"
        elif link.suggestion is not None and link.path and link.line_start:
            if link.path not in texts:
                texts[link.path] = host.file_text(link.path, head)
            if _applied(texts[link.path], link):
                why = "suggestion applied"
        if why is not None:
            store.address_annotation(link.note_id)
            result.addressed.append({"note": link.note_id, "why": why})


def _status(store: Store, id: str) -> str | None:
    try:
        return store.get_annotation(id).status
    except NotFoundError:
        return None


def _applied(text: str | None, link: Link) -> bool:
    """Whether the file now holds the suggestion where the comment was: its lines from
    `line_start` are the suggested ones (for a deletion: the old lines are nowhere)."""
    if text is None or link.suggestion is None or link.line_start is None:
        return False
    lines = text.splitlines()
    new = link.suggestion.split("\n") if link.suggestion else []
    old = (link.excerpt or "").split("\n")
    if not new:
        return not _contains(lines, old)
    at = link.line_start - 1
    return lines[at : at + len(new)] == new or (_contains(lines, new) and not _contains(lines, old))


def _contains(lines: list[str], block: list[str]) -> bool:
    k = len(block)
    return k > 0 and any(lines[i : i + k] == block for i in range(len(lines) - k + 1))


# -- GitLab -------------------------------------------------------------------------------------


def _push_gitlab(store: Store, where: Where, gl: GitLab, result: PushResult) -> PushResult:
    """`push` on a merge request: one draft note per note, then one `bulk_publish`, so the
    merge request's people see the notes together, as a review."""
    n, target, dry_run = where.number, where.target, result.dry_run
    refs = gl.refs(n)
    head = refs["head_sha"]
    if where.checkout is not None and where.checkout.head not in (None, head):
        result.warnings.append(
            f"The checkout is at {str(where.checkout.head)[:12]}, the merge request's head at "
            f"{head[:12]}: line numbers are the checkout's"
        )
    files = gl.files(n)
    notes = _not_posted(store, target, result)
    if notes:
        found = _on_gitlab(gl, n, {item.id for item in notes})
        if found and not dry_run:
            store.pull_requests.add(target, found)
        result.already += [link.note_id for link in found]
        notes = [item for item in notes if item.id not in {f.note_id for f in found}]
    # Drafts of an earlier push that never published: published now with the rest.
    drafted = {m for d in gl.drafts(n) for m in _MARK.findall(d.get("note") or "")}
    shots = frozenset(store.screenshots.list(item.id for item in notes))
    plan = [place_note(item, files, where, item.id in shots) for item in notes]
    for p in plan:
        payload: dict[str, Any] = {"note": _gitlab_text(p)}
        if p.placement != "body" and p.path is not None:
            line = p.line[1] if p.placement == "line" and p.line else None
            payload["position"] = gl.position(refs, p.path, line)
        if dry_run:
            result.requests.append(_request(gl.drafts_url(n), payload))
        elif p.note not in drafted:
            gl.post_draft(n, payload)
        result.sent.append(_sent(p))
    if plan or drafted:
        if dry_run:
            result.requests.append(_request(gl.publish_url(n), {}))
        else:
            gl.publish(n)
            ids = _on_gitlab(gl, n, {p.note for p in plan})
            by_note = {link.note_id: link.comment_id for link in ids}
            store.pull_requests.add(target, [_linked(p, by_note.get(p.note)) for p in plan])
    if result.event == "APPROVE":
        if dry_run:
            result.requests.append(_request(gl.approve_url(n), {}))
        else:
            gl.approve(n)
    elif result.event == "REQUEST_CHANGES":
        result.warnings.append(
            "GitLab's API has no event that requests changes: the notes went as comments"
        )
    _push_replies(store, gl, n, target, result)
    return result


def _gitlab_text(p: Planned) -> str:
    """GitLab's suggestion block names the lines it replaces: `suggestion:-N+0`, the N lines
    above the commented (last) line and that line."""
    if not p.suggestion or p.line is None:
        return p.text
    above = p.line[1] - p.line[0]
    return re.sub(
        r"^(`{3,})suggestion$", rf"\1suggestion:-{above}+0", p.text, count=1, flags=re.MULTILINE
    )


def _on_gitlab(gl: GitLab, number: int, wanted: set[str]) -> list[Link]:
    """Links for the notes in `wanted` whose marker opens a discussion of the merge request."""
    found: dict[str, Link] = {}
    for d in gl.discussions(number):
        first = (d.get("notes") or [{}])[0]
        for note in _MARK.findall(first.get("body") or ""):
            if note in wanted and note not in found:
                position = first.get("position") or {}
                placement = (
                    "body"
                    if not position
                    else "file"
                    if position.get("position_type") == "file"
                    else "line"
                )
                found[note] = Link(note, placement, str(d["id"]), position.get("new_path"))
    return list(found.values())


def _pull_gitlab(
    store: Store, gl: GitLab, n: int, target: Target, result: PullResult
) -> PullResult:
    head = gl.refs(n)["head_sha"]
    links = store.pull_requests.links(target)
    result.linked = len(links)
    # On GitLab every note opened a discussion, page notes too.
    threads = {link.comment_id: link for link in links.values() if link.comment_id}
    if not threads:
        return result
    replies: list[tuple[str, str, str, str]] = []
    resolved: dict[str, bool] = {}
    for d in gl.discussions(n):
        notes = d.get("notes") or []
        if not notes:
            continue
        resolved[str(d["id"])] = bool(notes[0].get("resolved"))
        for note in notes[1:]:
            if note.get("system"):
                continue
            login = str((note.get("author") or {}).get("username") or "someone")
            replies.append((str(d["id"]), str(note["id"]), login, note.get("body") or ""))
    _bring_replies(store, target, threads, replies, result, GITLAB_AUTHOR)
    _settle(store, gl, head, threads, resolved, result)
    return result
