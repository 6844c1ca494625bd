"""The `annotate` command: each subcommand opens the store, makes one library call, prints.

Human-readable output by default (for an agent reading it in a conversation), `--json` everywhere.
Exit codes: 0 ok, 1 a user error with a one-line message, 2 usage (docs/cli.md).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from . import agents, backends, importing, inline, pullrequests, shows
from . import context as context_module
from . import export as export_module
from . import plans as plans_module
from . import store as store_module
from .context import DEFAULT_LINES, MAX_LINES
from .diff import annotation_change
from .errors import AnnotateError, StoreError
from .models import (
    ANCHOR_STATES,
    DECISIONS,
    REVIEW_MODES,
    STATUSES,
    Annotation,
    HistoryEntry,
    PageNote,
    Review,
    Shown,
    Summary,
    lean,
    lean_item,
)
from .project import find_project
from .visible import visible, visible_json


class StoreNotFound(StoreError):
    """`--db` names an SQLite file that does not exist, for a command that only reads or changes
    notes already there (issue #27): never a silent new, empty store."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} does not exist: check --db (or $ANNOTATE_DB); annotate serve, proxy, mcp, "
            "import and token add make a new store there"
        )
        self.path = path


def _missing_db(db: str | None) -> str | None:
    """`db` when it names an SQLite file that does not exist (a typo, or a store not made yet)."""
    if not db or backends.is_url(db) or os.path.lexists(db):
        return None
    return db


def _created(db: str) -> None:
    """Say on stderr that `--db` made a new store: a mistyped path shows at once (issue #27)."""
    click.echo(
        f"New, empty store at {visible(db, keep='')} (--db named no existing file)", err=True
    )


def _say_if_new(db: str | None) -> None:
    """`_created` for a command that makes its store later (a server): said before it starts."""
    missing = _missing_db(db)
    if missing is not None:
        _created(missing)


class Ctx:
    """What every command needs: where the store is and how to print."""

    def __init__(
        self, project: str | None, db: str | None, as_json: bool, creates: bool = False
    ) -> None:
        self.project = project
        self.db = db
        self.as_json = as_json
        # Whether the command may make the store `--db` names when there is none (docs/cli.md).
        self.creates = creates
        self._store: store_module.Store | None = None

    def store(self) -> store_module.Store:
        """The store `--db` names, else the project's; its notes point into the project found
        upwards from `--project` or the current folder, with the build of its checkout
        (annotate/build.py), which reconciliation reads. A `--db` file that does not exist is
        refused, or made and said so by a command that creates notes."""
        missing = _missing_db(self.db)
        if missing is not None and not self.creates:
            raise StoreNotFound(missing)
        found = store_module.open(self.project, db=self.db or None, build="auto")
        if missing is not None:
            _created(missing)
        self._store = found
        return found

    def lean(self, item: Annotation | PageNote) -> dict[str, Any]:
        """`lean_item`, leaving out a build that is the checkout's (the store's build)."""
        return lean_item(item, self._store.build if self._store is not None else None)

    def emit(self, data: Any, human: Callable[[], str]) -> None:
        # Notes come from browsers and agents: a terminal escape in one must show, not act
        # (issue #17).
        if self.as_json:
            click.echo(visible_json(json.dumps(data, indent=2, ensure_ascii=False)))
        else:
            click.echo(visible(human()))


project_option = click.option(
    "--project",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (the folder of the site config). Default: the nearest folder from the "
    "current one upwards holding zensical.toml, mkdocs.yml, mkdocs.yaml or properdocs.yml.",
)
db_option = click.option(
    "--db",
    envvar="ANNOTATE_DB",
    metavar="FILE|URL",
    help="Database: an SQLite file, or a PostgreSQL URL postgresql://USER:PASSWORD@HOST/DBNAME "
    "(needs mkdocs-annotate[postgres]). Default: $ANNOTATE_DB, else "
    "PROJECT/.annotate/annotations.db.",
)


def command(
    group: click.Group, name: str, *, creates: bool = False, **kwargs: Any
) -> Callable[[Callable[..., None]], click.Command]:
    """A subcommand with `--project`, `--db` and `--json`, whose library errors exit 1.

    `creates`: the command adds notes or tokens, so a `--db` file that does not exist is made
    (and said so); any other command refuses it."""

    def decorate(fn: Callable[..., None]) -> click.Command:
        @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
        @db_option
        @project_option
        @functools.wraps(fn)
        def wrapper(project: str | None, db: str | None, as_json: bool, **params: Any) -> None:
            ctx = Ctx(project, db, as_json, creates)
            try:
                fn(ctx, **params)
            except AnnotateError as e:
                raise SystemExit(_fail(str(e))) from None

        return group.command(name, **kwargs)(wrapper)

    return decorate


def _fail(message: str) -> int:
    # One line, whatever the message quotes.
    click.echo(f"Error: {visible(message, keep='')}", err=True)
    return 1


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mkdocs-annotate", prog_name="annotate")
def cli() -> None:
    """Review notes on a rendered MkDocs site, for coding agents.

    Agents: run `annotate summary`, then `annotate list`; for each note `annotate start ID`, edit the
    Markdown file it points at, `annotate address ID --replaced-text TEXT` and
    `annotate reply ID "what you changed"`.
    """


# -- formatting ---------------------------------------------------------------------------------


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(item: Annotation | PageNote) -> str:
    if isinstance(item, Annotation) and item.source:
        return f"{item.page_url} {item.source.lines}"
    return item.page_url


def _replies_line(item: Annotation | PageNote) -> str:
    n = len(item.replies)
    if not n:
        return "0 replies"
    return f"{n} repl{'y' if n == 1 else 'ies'}, last reply from: {item.replies[-1].role}"


def _item_block(item: Annotation | PageNote) -> list[str]:
    if isinstance(item, Annotation):
        attrs = [f"status={item.status}", f"anchor={item.anchor_state}"]
        if item.intent != "comment":
            attrs.append(f"intent={item.intent}")
        lines = [f"[{item.id}] {_where(item)} ({', '.join(attrs)})"]
        if item.type == "text":
            lines.append(f'  quote: "{_short(item.selected_text or "")}"')
        elif item.element_selector:
            lines.append(f"  element: {_short(item.element_selector.css_selector)}")
    else:
        where = f" {item.source.path}" if item.source else ""
        lines = [f"[{item.id}] {item.page_url}{where} (page note, status={item.status})"]
    if item.note:
        lines.append(f'  "{_short(item.note)}"')
    if isinstance(item, Annotation) and item.suggestion:
        lines.append(f'  suggestion: "{_short(item.suggestion)}"')
    lines.append(f"  {_replies_line(item)}")
    return lines


def _listing(items: Sequence[Annotation | PageNote], noun: str, filters: str) -> str:
    plural = noun if len(items) == 1 else noun + "s"
    head = f"{len(items)} {plural} ({filters}):" if items else f"No {noun}s ({filters})."
    blocks = ["\n".join(_item_block(i)) for i in items]
    return "\n\n".join([head, *blocks])


def _detail(item: Annotation | PageNote) -> str:
    if isinstance(item, Annotation):
        kind = "text annotation" if item.type == "text" else "element annotation"
    else:
        kind = "page note"
    title = f" ({item.page_title})" if item.page_title else ""
    lines = [f"[{item.id}] {kind} on {item.page_url}{title}", f"status: {item.status}"]
    if item.build is not None:
        lines.append(f"build: {item.build.text()}")
    if isinstance(item, PageNote) and item.source:
        lines.append(f"source: {item.source.path}")
    if isinstance(item, Annotation):
        score = f", score {item.anchor_score:g}" if item.anchor_score is not None else ""
        lines.append(f"anchor: {item.anchor_state}{score}")
        if item.source:
            lines.append(f"source: {item.source.lines}")
        if item.type == "text":
            lines.append(f'quote: "{item.selected_text}"')
        elif item.element_selector:
            sel = item.element_selector
            lines.append(f"element: {sel.css_selector}")
            if sel.description:
                lines.append(f"description: {sel.description}")
            if sel.outer_html_preview:
                lines.append(f"preview: {sel.outer_html_preview}")
        lines.append(f"intent: {item.intent}")
    lines.append("note:")
    lines += [f"  {line}" for line in (item.note or "(none)").splitlines()]
    if isinstance(item, Annotation):
        if item.suggestion:
            lines.append("suggestion:")
            lines += [f"  {line}" for line in item.suggestion.splitlines()]
        if item.replaced_text:
            lines.append(f'replaced by: "{item.replaced_text}"')
        change = annotation_change(item)
        if change:
            lines.append("change in the Markdown ([-removed-]{+added+}):")
            lines += [f"  {line}" for line in change.splitlines()]
    lines.append(f"created: {item.created_at}, updated: {item.updated_at}")
    lines.append(f"replies ({len(item.replies)}):" if item.replies else "replies: none")
    for r in item.replies:
        lines.append(f"  [{r.role} {r.created_at}] {r.message}")
    return "\n".join(lines)


def _changed(verb: str, item: Annotation | PageNote) -> str:
    return f"{verb} {item.id} (status: {item.status})"


def _summary_text(s: Summary, branch: str | None = None) -> str:
    a, n = s.annotations, s.page_notes
    pages = f"{s.pages} page{'' if s.pages == 1 else 's'}"
    made = f" (notes made on branch {branch})" if branch is not None else ""
    lines = [
        f"{s.open_items} item{'' if s.open_items == 1 else 's'} waiting for the agent on "
        f"{pages}{made}.",
        "annotations: " + ", ".join(f"{a[k]} {k.replace('_', ' ')}" for k in STATUSES),
        "page notes: " + ", ".join(f"{n[k]} {k.replace('_', ' ')}" for k in STATUSES),
        "anchors: " + ", ".join(f"{s.anchor_states[k]} {k}" for k in ANCHOR_STATES),
    ]
    if s.pending_reviews:
        lines.append(
            f"{s.pending_reviews} review{'' if s.pending_reviews == 1 else 's'} sent to the agent "
            "and not picked up yet."
        )
    return "\n".join(lines)


def _history_text(id: str, entries: Sequence[HistoryEntry]) -> str:
    """One line a change: when, what, the status it set, by whom (when the store knows)."""
    lines = [f"{id}: {len(entries)} change{'' if len(entries) == 1 else 's'}, oldest first:"]
    for e in entries:
        status = f"-> {e.status}" if e.status else ""
        by = f"by {e.author}" if e.author else ""
        lines.append(f"  {e.at}  {e.action:<15} {status:<15} {by}".rstrip())
    return "\n".join(lines)


def _review_text(review: Review, names: dict[str, str], offset: int = 0) -> str:
    brief = review.brief(offset)
    head = f"Review {review.id} ({review.mode} mode, {review.status}), sent {review.created_at}"
    lines = [head + ":"]
    if review.decision:
        lines.append(f"decision: {review.decision}")
    if review.message:
        lines.append(f'message: "{review.message}"')
    lines += [agents.mode_instructions(review.mode, names), ""]
    shown = brief["notes"]
    first = offset + 1
    lines.append(
        f"Notes {first}-{offset + len(shown)} of {brief['total']}:" if shown else "No notes."
    )
    for note in shown:
        lines += _brief_lines(note)
    if "next" in brief:
        lines.append(f"More: annotate review {review.id} --offset {brief['next']}")
    return "\n".join(lines)


def _brief_lines(note: dict[str, Any]) -> list[str]:
    """One note of a review, compact: what it asks and where; the rest with `annotate context`."""
    where = note.get("at") or note.get("page", "")
    attrs = [note["kind"], *(note.get(k) for k in ("intent", "status", "anchorState"))]
    lines = [f"[{note['id']}] {where} ({', '.join(a for a in attrs if a)})"]
    for key in ("quote", "element", "note", "suggestion", "followUp"):
        if key in note:
            lines.append(f'  {key}: "{note[key]}"')
    return lines


def _reviews_text(items: Sequence[Review], pending: bool) -> str:
    if not items:
        return "No pending reviews." if pending else "No reviews."
    lines = [f"{len(items)} review{'' if len(items) == 1 else 's'}:"]
    for r in items:
        n = len(r.annotations) + len(r.page_notes)
        message = f' "{_short(r.message, 80)}"' if r.message else ""
        lines.append(
            f"[{r.id}] {r.mode} mode, {r.status}, {n} note{'' if n == 1 else 's'}, "
            f"sent {r.created_at}{message}"
        )
    return "\n".join(lines)


def _filters_text(
    page: str | None, status: Sequence[str], include_all: bool, branch: str | None = None
) -> str:
    parts = [
        f"status={','.join(status)}"
        if status
        else ("status=all" if include_all else "status=open,in_progress,addressed")
    ]
    if page:
        parts.append(f"page={page}")
    if branch:
        parts.append(f"branch={branch}")
    return ", ".join(parts)


# -- commands -----------------------------------------------------------------------------------

STATUS_CHOICE = click.Choice(STATUSES)


@command(cli, "list")
@click.option("--page", help="Only this page, e.g. /guide/install/.")
@click.option(
    "--status", "status", multiple=True, type=STATUS_CHOICE, help="Only this status (repeatable)."
)
@click.option(
    "--type",
    "kind",
    type=click.Choice(["text", "element"]),
    help="Only text or element annotations.",
)
@click.option("--anchor", type=click.Choice(ANCHOR_STATES), help="Only this anchor state.")
@click.option("--all", "include_all", is_flag=True, help="Include resolved annotations.")
@click.option("--branch", help="Only notes made on a build of this branch.")
def list_(
    ctx: Ctx,
    page: str | None,
    status: tuple[str, ...],
    kind: str | None,
    anchor: str | None,
    include_all: bool,
    branch: str | None,
) -> None:
    """List annotations, then page notes (resolved ones only with --all or --status resolved).

    Page notes are left out when --type or --anchor asks for what they do not have.
    """
    store = ctx.store()
    statuses = list(status) or None
    items: list[Annotation | PageNote] = list(
        store.list_annotations(
            page,
            statuses,
            type=kind,
            anchor_state=anchor,
            include_resolved=include_all,
            branch=branch,
        )
    )
    if kind is None and anchor is None:
        items += store.list_page_notes(page, statuses, include_resolved=include_all, branch=branch)
    _hint(store, page, items)
    ctx.emit(
        [ctx.lean(i) for i in items],
        lambda: _listing(items, "note", _filters_text(page, status, include_all, branch)),
    )


def _hint(store: store_module.Store, page: str | None, items: Sequence[Any]) -> None:
    """A page filter that matches no page with notes says so (on stderr), naming the closest."""
    if page is not None and not items:
        hint = store.page_hint(page)
        if hint:
            click.echo(hint, err=True)


@command(cli, "get")
@click.argument("id")
def get(ctx: Ctx, id: str) -> None:
    """Show one annotation or page note in full, with its replies."""
    item = ctx.store().get_annotation(id)
    ctx.emit(ctx.lean(item), lambda: _detail(item))


@command(cli, "screenshot")
@click.argument("id")
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the image here (default: ID.webp in the current folder); `-` for stdout.",
)
def screenshot(ctx: Ctx, id: str, out: Path | None) -> None:
    """Save the screenshot a reviewer attached to a note (WebP; get_screenshot)."""
    shot = ctx.store().screenshots.get(id)
    if out is not None and str(out) == "-":
        sys.stdout.buffer.write(shot.data)
        return
    target = out or Path(f"{id}.webp")
    target.write_bytes(shot.data)
    data = {**shot.to_dict(), "path": str(target)}
    ctx.emit(data, lambda: f"Saved {id}'s screenshot ({shot.width}×{shot.height}) to {target}")


@command(cli, "start")
@click.argument("id")
def start(ctx: Ctx, id: str) -> None:
    """Mark a note in progress before editing the Markdown (set_in_progress)."""
    item = ctx.store().set_in_progress(id)
    ctx.emit(ctx.lean(item), lambda: _changed("Started", item))


@command(cli, "address")
@click.argument("id")
@click.option("--replaced-text", help="The text that now stands where the quote was.")
@click.option(
    "-m", "--message", help="A reply saying what you did, stored with the status in one step."
)
@click.option(
    "--deleted",
    is_flag=True,
    help="You deleted the annotated text as asked: it is not looked for again.",
)
def address(
    ctx: Ctx, id: str, replaced_text: str | None, message: str | None, deleted: bool
) -> None:
    """Mark a note addressed: done, waiting for the reviewer (address_annotation)."""
    item = ctx.store().address_annotation(id, replaced_text, message=message, deleted=deleted)
    ctx.emit(ctx.lean(item), lambda: _changed("Addressed", item))


@command(cli, "target")
@click.argument("id")
@click.argument("replaced_text")
def target(ctx: Ctx, id: str, replaced_text: str) -> None:
    """Record the text that replaced the quote (update_annotation_target)."""
    item = ctx.store().update_annotation_target(id, replaced_text)
    ctx.emit(ctx.lean(item), lambda: f"Updated the target of {item.id}")


@command(cli, "reply")
@click.argument("id")
@click.argument("message", required=False)
@click.option("-m", "--message", "message_option", help="The reply (instead of the argument).")
@click.option(
    "--role",
    type=click.Choice(["agent", "reviewer"]),
    default="agent",
    show_default=True,
    help="Who is replying.",
)
def reply(ctx: Ctx, id: str, message: str | None, message_option: str | None, role: str) -> None:
    """Add a reply to a note's thread (add_agent_reply)."""
    text = message if message is not None else message_option
    if text is None:
        raise click.UsageError("Give the reply as an argument or with --message.")
    item = ctx.store().add_reply(id, text, role=role)
    ctx.emit(ctx.lean(item), lambda: f"Replied to {item.id} as {role} ({_replies_line(item)})")


@command(cli, "accept")
@click.argument("id")
def accept(ctx: Ctx, id: str) -> None:
    """Accept a note: it becomes resolved."""
    item = ctx.store().accept(id)
    ctx.emit(ctx.lean(item), lambda: _changed("Accepted", item))


@command(cli, "reopen")
@click.argument("id")
@click.option(
    "--note",
    help="A follow-up note, added as a reviewer reply; the note goes back to the agent at once.",
)
def reopen(ctx: Ctx, id: str, note: str | None) -> None:
    """Reopen an addressed or resolved note."""
    item = ctx.store().reopen(id, note)
    ctx.emit(ctx.lean(item), lambda: _changed("Reopened", item))


@command(cli, "delete")
@click.argument("id")
def delete(ctx: Ctx, id: str) -> None:
    """Delete an annotation or page note and its replies."""
    ctx.store().delete(id)
    ctx.emit({"deleted": id}, lambda: f"Deleted {id}")


@command(cli, "notes")
@click.option("--page", help="Only this page, e.g. /guide/install/.")
@click.option(
    "--status", "status", multiple=True, type=STATUS_CHOICE, help="Only this status (repeatable)."
)
@click.option("--all", "include_all", is_flag=True, help="Include resolved page notes.")
@click.option("--branch", help="Only notes made on a build of this branch.")
def notes(
    ctx: Ctx, page: str | None, status: tuple[str, ...], include_all: bool, branch: str | None
) -> None:
    """List page notes: feedback about a page as a whole."""
    store = ctx.store()
    items = store.list_page_notes(
        page, list(status) or None, include_resolved=include_all, branch=branch
    )
    _hint(store, page, items)
    ctx.emit(
        [ctx.lean(n) for n in items],
        lambda: _listing(items, "page note", _filters_text(page, status, include_all, branch)),
    )


@command(cli, "summary")
@click.option("--branch", help="Only notes made on a build of this branch.")
def summary(ctx: Ctx, branch: str | None) -> None:
    """Counts of notes by status and anchor state: is there work for the agent?"""
    s = ctx.store().summary(branch=branch)
    ctx.emit(s.to_dict(), lambda: _summary_text(s, branch))


@command(cli, "history")
@click.argument("id")
def history(ctx: Ctx, id: str) -> None:
    """Who changed a note and when: its change rows, oldest first."""
    entries = ctx.store().history(id)
    ctx.emit([lean(e.to_dict()) for e in entries], lambda: _history_text(id, entries))


@command(cli, "export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "w3c"]),
    default=None,
    help="markdown (default), json (the whole store) or w3c (Web Annotation JSON-LD).",
)
@click.option(
    "--include-resolved/--no-include-resolved",
    default=None,
    help="Include resolved notes (default: only in json and w3c).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write to this file instead of standard output.",
)
@click.option(
    "--inline",
    "in_markdown",
    is_flag=True,
    help="Write each note not yet resolved into its Markdown file, as a comment marker before "
    "the block it is about (docs/inline.md).",
)
@click.option("--page", help="With --inline: only the notes of this page URL.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Write one reviewed plan or file as one self-contained HTML file (docs/plans.md).",
)
@click.option("--plan", "plan_id", help="With --html: this plan (default: the latest revised).")
def export(
    ctx: Ctx,
    fmt: str | None,
    include_resolved: bool | None,
    output: str | None,
    in_markdown: bool,
    page: str | None,
    html_file: str | None,
    plan_id: str | None,
) -> None:
    """Export every note: Markdown to paste into a chat, JSON, or W3C JSON-LD; or, with
    --inline, into the Markdown files themselves; or, with --html, one reviewed plan."""
    if html_file is not None:
        from .share import write_html

        click.echo(f"Wrote {write_html(ctx.store(), html_file, plan_id)}")
        return
    if in_markdown:
        if fmt or output or include_resolved is not None:
            raise click.UsageError(
                "--inline writes into the Markdown files: --format, --output and "
                "--include-resolved do not apply"
            )
        result = inline.export_inline(ctx.store(), page)
        ctx.emit(result.to_dict(), lambda: _exported_inline(result))
        return
    if page is not None:
        raise click.UsageError("--page goes with --inline")
    fmt = fmt or ("json" if ctx.as_json else "markdown")
    text = export_module.render(ctx.store(), fmt, include_resolved=include_resolved)
    if output:
        Path(output).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        click.echo(f"Wrote {fmt} export to {output}", err=True)
    else:
        text = text.rstrip("\n")
        click.echo(visible(text) if fmt == "markdown" else visible_json(text))


def _exported_inline(result: inline.ExportResult) -> str:
    files = len(result.files)
    text = (
        f"Wrote {result.written} marker{'' if result.written == 1 else 's'} into "
        f"{files} file{'' if files == 1 else 's'}"
    )
    if result.files:
        text += ": " + ", ".join(result.files)
    if result.already:
        text += f"\n{result.already} already marked"
    if result.no_file:
        text += f"\n{result.no_file} on pages without a Markdown file (left out)"
    return text


@command(cli, "import", creates=True)
@click.argument("file", required=False)
@click.option(
    "--inline",
    "in_markdown",
    is_flag=True,
    help="Read the notes marked in Markdown files (FILE: a file or folder, default the docs "
    "folder) by export --inline.",
)
@click.option("--strip", is_flag=True, help="With --inline: then remove the markers.")
def import_(ctx: Ctx, file: str | None, in_markdown: bool, strip: bool) -> None:
    """Import a JSON export, or astro-inline-review's inline-review.json; or, with --inline,
    the notes marked in Markdown files."""
    if in_markdown:
        result = inline.import_inline(ctx.store(), file, strip_markers=strip)
        ctx.emit(result.to_dict(), lambda: _imported_inline(result))
        return
    if strip:
        raise click.UsageError("--strip goes with --inline")
    if file is None:
        raise click.UsageError("Missing argument 'FILE'.")
    if Path(file).is_dir():
        raise click.UsageError(f"{file} is a folder: name a JSON file (or use --inline)")
    counts = importing.import_file(ctx.store(), file)

    def human() -> str:
        parts = [
            f"{counts['annotations']} annotations",
            f"{counts['pageNotes']} page notes",
            f"{counts['replies']} replies",
        ]
        if counts["reviews"]:
            parts.append(f"{counts['reviews']} reviews")
        return f"Imported {', '.join(parts)} from {file} ({counts['skipped']} already present)"

    ctx.emit(counts, human)


def _imported_inline(result: inline.ImportResult) -> str:
    c = result.counts
    text = (
        f"Read {result.markers} marker{'' if result.markers == 1 else 's'}: imported "
        f"{c['annotations']} annotations, {c['pageNotes']} page notes, {c['replies']} replies "
        f"({c['skipped']} already present)"
    )
    if result.stripped:
        n = len(result.stripped)
        text += f"\nRemoved the markers from {n} file{'' if n == 1 else 's'}"
    return text


@command(cli, "purge")
@click.option("--resolved", is_flag=True, help="Delete every resolved note (required).")
def purge(ctx: Ctx, resolved: bool) -> None:
    """Delete resolved notes for good."""
    if not resolved:
        raise click.UsageError("Say what to purge: annotate purge --resolved")
    n = ctx.store().purge_resolved()
    ctx.emit({"purged": n}, lambda: f"Purged {n} resolved item{'' if n == 1 else 's'}")


@command(cli, "context")
@click.argument("id")
@click.option(
    "--lines",
    type=click.IntRange(0, MAX_LINES),
    default=DEFAULT_LINES,
    show_default=True,
    help="Lines of Markdown to show before and after the note's lines.",
)
def context(ctx: Ctx, id: str, lines: int) -> None:
    """Show a note with the current Markdown around it, line-numbered (get_context)."""
    found = context_module.get_context(ctx.store(), id, lines)
    ctx.emit(lean(found.to_dict()), found.text)


@command(cli, "wait")
@click.option(
    "--timeout",
    type=click.FloatRange(0, agents.MAX_WAIT_S),
    default=agents.DEFAULT_WAIT_S,
    show_default=True,
    help="Seconds to wait at most.",
)
def wait(ctx: Ctx, timeout: float) -> None:
    """Wait for the reviewer's "Send to agent" and take that review (wait_for_review)."""
    review = ctx.store().wait_for_review(timeout)
    if review is None:
        message = agents.no_review(timeout, agents.CLI)
        ctx.emit({"review": None, "instructions": message}, lambda: message)
        return
    data = {
        "review": review.brief(),
        "instructions": agents.mode_instructions(review.mode, agents.CLI),
    }
    ctx.emit(data, lambda: _review_text(review, agents.CLI))


@command(cli, "show")
@click.argument("id")
@click.option(
    "--wait",
    type=click.FloatRange(0, shows.MAX_SHOW_WAIT_S),
    default=shows.SHOW_WAIT_S,
    show_default=True,
    help="Seconds to wait at most for the open views to answer.",
)
def show(ctx: Ctx, id: str, wait: float) -> None:
    """Scroll every open view of a note's page to it and flash it (show_annotation)."""
    shown = ctx.store().show_annotation(id, wait)
    ctx.emit(shown.to_dict(), lambda: _shown_text(shown, wait))


def _shown_text(shown: Shown, wait: float) -> str:
    n = int(shown)
    head = (
        f"Shown {shown.id} in {n} view{'' if n == 1 else 's'} of {shown.page_url}"
        if n
        else f"No view of {shown.page_url} answered within {wait:g} s (is the page open?)"
    )
    return head + (f"\n{shown.why_not}" if shown.why_not else "")


@command(cli, "reviews")
@click.option("--pending", is_flag=True, help="Only reviews no agent has picked up yet.")
def reviews(ctx: Ctx, pending: bool) -> None:
    """List reviews ("Send to agent" batches), oldest first (list_reviews)."""
    items = ctx.store().list_reviews(pending_only=pending)
    ctx.emit([r.outline() for r in items], lambda: _reviews_text(items, pending))


@command(cli, "review")
@click.argument("id")
@click.option(
    "--offset",
    type=click.IntRange(0),
    default=0,
    help="Skip this many notes (a long review is shown a page at a time).",
)
@click.option(
    "--changes", is_flag=True, help="What changed in each file since the review was sent."
)
def review(ctx: Ctx, id: str, offset: int, changes: bool) -> None:
    """Show one review with its notes, compact (get_review)."""
    if changes:
        got = ctx.store().reviews.changes(id)
        ctx.emit(got, lambda: _changes_text(got))
        return
    found = ctx.store().get_review(id)
    ctx.emit(found.brief(offset), lambda: _review_text(found, agents.CLI, offset))


def _changes_text(got: dict[str, Any]) -> str:
    """`annotate review ID --changes`: per file, its word diff since the review was sent."""
    lines = [f"Changed since review {got['review']} was sent:"]
    for f in got["files"]:
        if f.get("missing"):
            lines.append(f"{f['path']}: deleted")
        elif not f["changed"]:
            lines.append(f"{f['path']}: unchanged")
        else:
            lines += [f"{f['path']}: +{f['added']} -{f['removed']} words", f["diff"]]
    if not got["files"]:
        lines.append("No Markdown file was recorded with this review.")
    return "\n".join(lines)


@command(cli, "send")
@click.argument("ids", nargs=-1)
@click.option(
    "--mode",
    type=click.Choice(REVIEW_MODES),
    default="edit",
    show_default=True,
    help="edit: apply the changes; review: answer, change nothing yet.",
)
@click.option("-m", "--message", help="A message for the agent.")
@click.option(
    "--decision",
    type=click.Choice(DECISIONS),
    help="The verdict: approve, approve_with_notes or request_changes.",
)
def send(
    ctx: Ctx, ids: tuple[str, ...], mode: str, message: str | None, decision: str | None
) -> None:
    """Send to agent: every open note not sent yet, or just the notes IDS (create_review)."""
    data: dict[str, Any] = {"mode": mode, "message": message, "decision": decision}
    if ids:
        data["ids"] = list(ids)
    found = ctx.store().create_review(data)
    n = len(found.annotations) + len(found.page_notes)
    ctx.emit(
        found.outline(),
        lambda: f"Sent review {found.id} ({mode} mode, {n} note{'' if n == 1 else 's'})",
    )


@cli.command("mcp")
@project_option
@db_option
@click.option(
    "--remote",
    metavar="URL",
    help="Answer each tool from the team server at URL (its base URL) over Streamable HTTP; "
    "`source` and get_context still come from this checkout's Markdown.",
)
@click.option(
    "--token-file",
    metavar="F",
    type=click.Path(dir_okay=False),
    help="With --remote: the file holding the agent token (mode 0600; refused when other users "
    "can read it).",
)
@click.option("--pretty", is_flag=True, help="Indent JSON answers (compact by default).")
def mcp(
    project: str | None, db: str | None, remote: str | None, token_file: str | None, pretty: bool
) -> None:
    """Run the MCP server over stdio, for coding agents (configured by `annotate setup`)."""
    if remote is None:
        if token_file is not None:
            raise SystemExit(_fail("--token-file is only used with --remote URL"))
        from .compose import run

        _say_if_new(db)  # made at the first tool call, by the server
        run(project, db, pretty=pretty)
        return
    if db is not None or token_file is None:
        why = "--db names a local store" if db is not None else "--remote needs --token-file F"
        raise SystemExit(_fail(f"{why}: annotate mcp --remote URL --token-file F [--project DIR]"))
    from .mcp_remote import run_remote

    root, problem = None, None
    try:
        root = find_project(project)
    except AnnotateError as e:
        # As annotate mcp outside a project: each tool call answers why, the server still starts.
        problem = str(e)
    run_remote(remote, token_file, root, problem=problem)


@cli.command("chat")
@project_option
@click.option("--page", "page_url", metavar="URL", help="The page to show (default: home).")
@click.option("--path", metavar="FILE", help="Or its Markdown file, e.g. docs/guide.md.")
@click.option("--port", type=int, default=0, help="Port on 127.0.0.1 (default: a free one).")
@click.option("--no-browser", is_flag=True, help="Print the URL only; open no browser.")
def chat(
    project: str | None, page_url: str | None, path: str | None, port: int, no_browser: bool
) -> None:
    """Show the review view in a browser tab, as a chat host would, with the host's messages."""
    from .chathost import run

    try:
        run(find_project(project), page_url=page_url, path=path, port=port,
            open_browser=not no_browser)  # fmt: skip
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None


@cli.command("setup")
@click.option(
    "--agent",
    "agent",
    type=click.Choice(
        ["claude", "codex", "opencode", "all", "claude-desktop", "vscode", "cursor", "goose"]
    ),
    default="all",
    show_default=True,
    help="Which agent to connect: `all` is the terminal agents; the hosts that show the review "
    "view (claude-desktop, vscode, cursor, goose) one at a time.",
)
@click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default=None,
    help="Write into the project (default) or into your home folder, for every project.",
)
@click.option("--uninstall", is_flag=True, help="Remove exactly what setup wrote.")
@click.option(
    "--gate",
    is_flag=True,
    help="Also install the Stop hook `annotate hook stop` (Claude Code, Codex); with "
    "--uninstall, remove only it.",
)
@click.option(
    "--plan-gate",
    is_flag=True,
    help="Also install the plan gate `annotate hook plan` (Claude Code's PermissionRequest hook "
    "on ExitPlanMode, docs/plans.md); with --uninstall, remove only it.",
)
@click.option(
    "--command",
    "server_command",
    help="The command agents run (default: the absolute path of this annotate).",
)
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def setup(
    agent: str,
    scope: str | None,
    uninstall: bool,
    gate: bool,
    plan_gate: bool,
    server_command: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Connect coding agents: MCP configuration, skill files, .gitignore (idempotent)."""
    from . import agent_setup

    every = agent_setup.EVERY if uninstall else agent_setup.AGENTS
    chosen = every if agent == "all" else (agent,)
    try:
        project = str(find_project(project))
        if uninstall:
            actions = agent_setup.uninstall(project, chosen, scope, gate=gate, plan_gate=plan_gate)
        else:
            actions = agent_setup.install(
                project,
                chosen,
                scope or "project",
                command=server_command,
                gate=gate,
                plan_gate=plan_gate,
            )
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None
    ctx = Ctx(project, None, as_json)
    data = [{"action": a.verb, "path": str(a.path), "what": a.what} for a in actions]
    none = "Nothing to remove." if uninstall else "Nothing to do."
    ctx.emit(data, lambda: "\n".join(str(a) for a in actions) or none)


@cli.group("hook")
def hook() -> None:
    """Hooks that coding agents run (`annotate setup --gate` installs them)."""


MAX_HOOK_INPUT = 1_000_000  # the hook's JSON; Claude Code's and Codex's are a few hundred bytes


def _hook_input(on_a_terminal: str) -> Any:
    """A hook's JSON from standard input (at most MAX_HOOK_INPUT characters); `on_a_terminal`:
    the line said when a person runs the hook by hand."""
    if sys.stdin.isatty():
        raise SystemExit(_fail(on_a_terminal))
    text = sys.stdin.read(MAX_HOOK_INPUT + 1)
    try:
        if len(text) > MAX_HOOK_INPUT:
            raise ValueError(f"over {MAX_HOOK_INPUT} characters")
        return json.loads(text)
    except ValueError as e:
        raise SystemExit(_fail(f"The hook's input is not JSON: {e}")) from None


@hook.command("stop")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (default: found from the agent's working folder upwards).",
)
def hook_stop(project: str | None) -> None:
    """Stop hook (Claude Code, Codex): block the stop while a review the agent took has notes
    not addressed, at most 3 times in a row. Reads the hook's JSON on standard input."""
    from . import hook as hook_module

    payload = _hook_input("annotate hook stop reads the agent's hook input (JSON) on stdin")
    try:
        answer = hook_module.stop(payload, project).to_dict()
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None
    if answer is not None:
        click.echo(json.dumps(answer, ensure_ascii=False))


def listen_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--port` and `--host` of the commands that serve pages (`serve`, `proxy`)."""
    f = click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="Address to listen on; loopback unless you choose otherwise.",
    )(f)
    return click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=8000,
        show_default=True,
        help="Port to listen on (0: any free port).",
    )(f)


def _echo_now(line: str) -> None:
    """A line of a long-running command, shown at once even when stdout is a pipe."""
    click.echo(line)
    sys.stdout.flush()


@cli.command("serve")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@listen_options
@project_option
@db_option
@click.option("--read-only", is_flag=True, help="Serve the review without accepting changes.")
@click.option(
    "--team",
    is_flag=True,
    help="Team mode: every request is a person's (identity header or personal token).",
)
@click.option(
    "--identity-header",
    metavar="NAME",
    help="The SSO proxy's header naming the person, e.g. X-Forwarded-Email (implies --team).",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    metavar="ADDR",
    multiple=True,
    help="An address or network whose identity header is trusted (repeatable; default loopback).",
)
@click.option(
    "--maintainer",
    "maintainers",
    metavar="NAME",
    multiple=True,
    help="A header identity that is a maintainer (repeatable); the others are reviewers.",
)
@click.option(
    "--public-url",
    metavar="URL",
    help="The URL reviewers open (https://review.example.com): its host and origin are accepted.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port (a busy team server: one per core).",
)
def serve(
    directory: Path,
    port: int,
    host: str,
    project: str | None,
    db: str | None,
    read_only: bool,
    team: bool,
    identity_header: str | None,
    trusted_proxies: tuple[str, ...],
    maintainers: tuple[str, ...],
    public_url: str | None,
    workers: int,
) -> None:
    """Serve a built static site (MkDocs site/, Sphinx, Hugo…) with the review overlay and API."""
    from .web.server import serve as run
    from .web.team import Settings

    try:
        settings = None
        if team or identity_header:
            settings = Settings(
                identity_header=identity_header,
                trusted_proxies=trusted_proxies or Settings.trusted_proxies,
                maintainers=maintainers,
                public_url=public_url,
            )
        elif trusted_proxies or maintainers or public_url:
            raise SystemExit(
                _fail(
                    "--trusted-proxy, --maintainer and --public-url apply in team mode: add "
                    "--team (or --identity-header NAME)"
                )
            )
        root = find_project(project)
        _say_if_new(db)
        run(
            directory,
            project=root,
            host=host,
            port=port,
            read_only=read_only,
            echo=_echo_now,
            db=db or None,
            team=settings,
            workers=workers,
        )
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None


@cli.command("proxy", context_settings={"ignore_unknown_options": True})
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- CMD...]")
@listen_options
@click.option(
    "--upstream",
    metavar="URL",
    help="The dev server's address (http://127.0.0.1:8001): a running one when no CMD is given, "
    "else where CMD listens.",
)
@click.option(
    "--allow-remote-upstream",
    is_flag=True,
    help="Allow an upstream that is not a loopback address.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0),
    default=60.0,
    show_default=True,
    help="Seconds to wait for the dev server to listen.",
)
@project_option
@db_option
@click.option("--read-only", is_flag=True, help="Show the review without accepting changes.")
def proxy(
    command: tuple[str, ...],
    port: int,
    host: str,
    upstream: str | None,
    allow_remote_upstream: bool,
    timeout: float,
    project: str | None,
    db: str | None,
    read_only: bool,
) -> None:
    """Review any dev server's pages: start CMD (zensical serve, mkdocs serve, hugo server --port
    {port}…) and put the overlay in front of it."""
    from .devserver import run

    try:
        _say_if_new(db)
        code = run(
            command,
            upstream_url=upstream,
            project=project,
            host=host,
            port=port,
            read_only=read_only,
            allow_remote_upstream=allow_remote_upstream,
            timeout=timeout,
            echo=_echo_now,
            db=db or None,
        )
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None
    if code:
        raise SystemExit(code)


@cli.group("token", invoke_without_command=True)
@click.option("--rotate", is_flag=True, help="Replace the token (open pages must be reloaded).")
@project_option
@click.pass_context
def token(click_ctx: click.Context, rotate: bool, project: str | None) -> None:
    """Print the project's API token (X-Annotate-Token), creating it when missing; `token add`,
    `list` and `revoke` manage team mode's personal tokens."""
    if click_ctx.invoked_subcommand is not None:
        return
    from . import tokens

    try:
        root = find_project(project)
        click.echo(tokens.rotate_token(root) if rotate else tokens.read_token(root))
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None


@command(token, "add", creates=True)
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["reviewer", "agent", "maintainer"]),
    default="reviewer",
    show_default=True,
    help="What the person may do (docs/team.md, Roles).",
)
def token_add(ctx: Ctx, name: str, role: str) -> None:
    """A personal token for NAME (team mode), printed once: only its hash is kept."""
    secret = ctx.store().add_token(name, role)
    if ctx.as_json:
        ctx.emit({"name": name.strip(), "role": role, "token": secret}, lambda: "")
        return
    # The token alone on stdout, so that TOKEN=$(annotate token add NAME) holds just it.
    click.echo(secret)
    click.echo(
        visible(f"(the token of {name.strip()}, {role}: shown once, keep it secret)"), err=True
    )


@command(token, "list")
def token_list(ctx: Ctx) -> None:
    """The personal tokens by name, role and state (never the tokens)."""
    found = ctx.store().list_tokens()

    def human() -> str:
        if not found:
            return "No personal tokens (annotate token add NAME)."
        return "\n".join(
            f"{t['name']}  {t['role']}  "
            + (f"revoked {t['revokedAt']}" if t["revokedAt"] else f"since {t['createdAt']}")
            for t in found
        )

    ctx.emit({"tokens": found}, human)


@command(token, "revoke")
@click.argument("name")
def token_revoke(ctx: Ctx, name: str) -> None:
    """Revoke NAME's personal token: their requests are refused from now on."""
    ctx.store().revoke_token(name)
    ctx.emit(
        {"name": name.strip(), "revoked": True}, lambda: f"Revoked the token of {name.strip()}."
    )


@cli.group("pr")
def pr() -> None:
    """Notes to and from a pull request: `pr push` posts the open notes as one review, `pr pull`
    brings replies and resolutions back (docs/pull-requests.md)."""


def pr_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--repo`, `--pr`, `--api-url` and `--gitlab`, shared by `pr push` and `pr pull`."""
    f = click.option(
        "--gitlab",
        metavar="URL",
        help="A GitLab instance (https://gitlab.example.com): a merge request there. Default: "
        "GitLab when the remote's host is named gitlab…, else GitHub.",
    )(f)
    f = click.option(
        "--api-url",
        metavar="URL",
        help="The API's root, for GitHub Enterprise (https://HOST/api/v3). Default: "
        "api.github.com, or the remote's host's /api/v3.",
    )(f)
    f = click.option(
        "--pr",
        "number",
        type=click.IntRange(min=1),
        metavar="N",
        help="The pull request's number. Default: the open one whose head is the current branch.",
    )(f)
    f = click.option(
        "--repo",
        metavar="OWNER/NAME",
        help="The repository. Default: the current branch's remote (else origin).",
    )(f)
    return f


@command(pr, "push")
@pr_options
@click.option(
    "--event",
    type=click.Choice(sorted(pullrequests.EVENTS)),
    help="The review's event. Default: the latest review's decision, else comment.",
)
@click.option("--dry-run", is_flag=True, help="Print the requests instead of sending them.")
def pr_push(
    ctx: Ctx,
    repo: str | None,
    number: int | None,
    api_url: str | None,
    gitlab: str | None,
    event: str | None,
    dry_run: bool,
) -> None:
    """Post the open notes to the pull request as one review; notes already there are left out."""
    done = pullrequests.push(
        ctx.store(),
        repo=repo,
        number=number,
        event=event,
        dry_run=dry_run,
        api_url=api_url,
        gitlab=gitlab,
    )
    if dry_run and not ctx.as_json:
        # The requests as JSON (never their headers, so never the token).
        click.echo(visible_json(json.dumps(done.requests, indent=2, ensure_ascii=False)))
        return
    ctx.emit(done.to_dict(), lambda: _pushed_text(done))


def _pushed_text(done: pullrequests.PushResult) -> str:
    lines = [f"{p.note}: {p.placement} comment at {p.at}" for p in done.sent]
    lines += [f"{r['note']}: reply {r['reply']}" for r in done.replies]
    n, k = len(done.sent), len(done.replies)
    said = [f"{n} note{'' if n == 1 else 's'}"] if n else []
    said += [f"{k} repl{'y' if k == 1 else 'ies'}"] if k else []
    head = (
        f"Posted {' and '.join(said)} to {done.target} ({done.event})"
        if said
        else f"Nothing new to post to {done.target}"
    )
    if done.already:
        head += f"; {len(done.already)} already there"
    return "\n".join([head + ".", *lines, *(f"Warning: {w}" for w in done.warnings)])


@command(pr, "pull")
@pr_options
def pr_pull(
    ctx: Ctx, repo: str | None, number: int | None, api_url: str | None, gitlab: str | None
) -> None:
    """Bring replies on the notes' comments into their threads; a resolved thread or an applied
    suggestion marks its note addressed."""
    done = pullrequests.pull(ctx.store(), repo=repo, number=number, api_url=api_url, gitlab=gitlab)

    def human() -> str:
        lines = [f"{r['note']}: reply from {r['author']}" for r in done.replies]
        lines += [f"{a['note']}: addressed ({a['why']})" for a in done.addressed]
        if not done.linked:
            return f"No note was pushed to {done.target} yet (annotate pr push)."
        if not lines:
            return f"Nothing new on {done.target}."
        return "\n".join([f"From {done.target}:", *lines])

    ctx.emit(done.to_dict(), human)


# -- plans and any Markdown file (issue #29, docs/plans.md) -------------------------------------


def _timeout_option(f: Any) -> Any:
    return click.option(
        "--timeout",
        type=click.FloatRange(0, 86_400),
        default=3000.0,  # plangate.DEFAULT_TIMEOUT_S, not imported by every command
        show_default=True,
        help="Seconds to wait for the decision; then the command ends, saying so.",
    )(f)


def _browser_option(f: Any) -> Any:
    return click.option(
        "--no-browser",
        is_flag=True,
        help="Print the page's address only (also when $ANNOTATE_NO_BROWSER is set).",
    )(f)


def _plan_err(line: str) -> None:
    click.echo(visible(line), err=True)


@hook.command("plan")
@click.option(
    "--project",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (default: found from the agent's working folder upwards).",
)
@_timeout_option
@_browser_option
def hook_plan(project: str | None, timeout: float, no_browser: bool) -> None:
    """PermissionRequest hook for ExitPlanMode (Claude Code): show the plan for review, wait for
    Approve / Approve with notes / Request changes, answer allow or deny. Reads the hook's JSON
    on standard input; the page's address goes to standard error."""
    from . import plangate

    payload = _hook_input("annotate hook plan reads Claude Code's hook input (JSON) on stdin")
    try:
        key, markdown = plangate.plan_input(payload)
        # The store `annotate` uses there: $ANNOTATE_DB (a team's PostgreSQL), else the file.
        db = os.environ.get("ANNOTATE_DB") or None
        with store_module.open(plangate.project_of(payload, project), db=db) as store:
            outcome = plangate.review_text(
                store,
                key,
                markdown,
                timeout_s=timeout,
                open_browser=not no_browser,
                say=_plan_err,
            )
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None
    if not outcome.decided:
        _plan_err(f"No decision within {timeout:g} s: Claude Code asks as usual.")
    click.echo(json.dumps(plangate.hook_answer(outcome, timeout), ensure_ascii=False))


@command(cli, "open", creates=True)
@click.argument("file")
@click.option("--wait", is_flag=True, help="Wait for the verdict, print it and the notes, exit.")
@_timeout_option
@_browser_option
def open_file(ctx: Ctx, file: str, wait: bool, timeout: float, no_browser: bool) -> None:
    """Review any Markdown file of the project: serve it rendered with the overlay on loopback.
    Without --wait it serves until the first verdict or the timeout."""
    from . import plangate

    outcome = plangate.review_file(
        ctx.store(),
        file,
        timeout_s=timeout,
        open_browser=not no_browser,
        say=_plan_err,
    )
    if not outcome.decided:
        raise SystemExit(_fail(f"No decision within {timeout:g} s ({outcome.url})"))
    if wait or ctx.as_json:
        ctx.emit(outcome.to_dict(), lambda: plangate.changes_message(outcome))
    else:
        click.echo(f"{outcome.revision.decision}: {file} (revision {outcome.revision.number})")


def _plan_line(plan: plans_module.Plan) -> str:
    last = plan.latest
    verdict = last.decision or "waiting"
    return (
        f"{plan.id}  {plan.key}  {len(plan.revisions)} revision"
        f"{'' if len(plan.revisions) == 1 else 's'}, last {last.number}: {verdict}"
        + (f"  ({plan.title})" if plan.title else "")
    )


@cli.group("plans", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@db_option
@project_option
@click.pass_context
def plans(click_ctx: click.Context, project: str | None, db: str | None, as_json: bool) -> None:
    """Plans and reviewed files with their revisions: `annotate plans` lists them, `annotate
    plans show ID [--revision N]` shows one."""
    if click_ctx.invoked_subcommand is None:
        click_ctx.invoke(plans_list, project=project, db=db, as_json=as_json)


@command(plans, "list")
def plans_list(ctx: Ctx) -> None:
    """Every plan, the most recently revised first."""
    found = ctx.store().plans.list()
    ctx.emit(
        [p.to_dict() for p in found],
        lambda: "\n".join(_plan_line(p) for p in found) or "No plans yet.",
    )


@command(plans, "show")
@click.argument("id")
@click.option("--revision", type=click.IntRange(1), help="This revision (default: the latest).")
def plans_show(ctx: Ctx, id: str, revision: int | None) -> None:
    """One plan's revision: its decision and Markdown, and what changed since the last reviewed
    one."""
    from .documents import word_diff_text as word_diff

    plan = ctx.store().plans.get(id)
    shown = plan.revision(revision)
    before = plan.last_reviewed(shown.number)

    def human() -> str:
        lines = [_plan_line(plan), ""]
        for r in plan.revisions:
            mark = "*" if r.number == shown.number else " "
            verdict = r.decision or "waiting"
            message = f' "{r.message}"' if r.message else ""
            lines.append(f"{mark} revision {r.number}  {r.created_at}  {verdict}{message}")
        if before is not None:
            lines += ["", f"Changes since revision {before.number}:"]
            lines.append(word_diff(before.markdown, shown.markdown) or "(none)")
        lines += ["", f"Revision {shown.number}:", shown.markdown]
        return "\n".join(lines)

    data = plan.to_dict()
    data["shown"] = shown.to_dict()
    if before is not None:
        data["changesSince"] = before.number
        data["changes"] = word_diff(before.markdown, shown.markdown)
    ctx.emit(data, human)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="annotate")


if __name__ == "__main__":  # pragma: no cover
    main()
