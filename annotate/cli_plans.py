"""The plan commands (issue #29, docs/plans.md): `annotate hook plan`, `annotate open FILE`,
`annotate plans`, `annotate plans show ID`, `annotate export --html`'s writer lives in
annotate/share.py. Registered on annotate/cli.py's groups when that module loads."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from . import plangate
from .cli import MAX_HOOK_INPUT, Ctx, _fail, cli, command, db_option, hook, project_option
from .errors import AnnotateError
from .plans import Plan
from .store import open as open_store
from .visible import visible

__all__ = ["hook_plan", "open_file", "plans", "plans_show"]


def _timeout_option(f: Any) -> Any:
    return click.option(
        "--timeout",
        type=click.FloatRange(0, 86_400),
        default=plangate.DEFAULT_TIMEOUT_S,
        show_default=True,
        help="Seconds to wait for the decision; then the command ends, saying so.",
    )(f)


def _browser_option(f: Any) -> Any:
    return click.option(
        "--no-browser",
        is_flag=True,
        help=f"Print the page's address only (also when ${plangate.NO_BROWSER_ENV} is set).",
    )(f)


def _err(line: str) -> None:
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
    if sys.stdin.isatty():
        raise SystemExit(_fail("annotate hook plan reads Claude Code's hook input (JSON) on stdin"))
    text = sys.stdin.read(MAX_HOOK_INPUT + 1)
    try:
        if len(text) > MAX_HOOK_INPUT:
            raise ValueError(f"over {MAX_HOOK_INPUT} characters")
        payload = json.loads(text)
    except ValueError as e:
        raise SystemExit(_fail(f"The hook's input is not JSON: {e}")) from None
    try:
        key, markdown = plangate.plan_input(payload)
        with open_store(plangate.project_of(payload, project)) as store:
            revision, page_url, source = plangate.submit_text(store, key, markdown)
            outcome = plangate.review_document(
                store,
                revision,
                page_url,
                source,
                timeout_s=timeout,
                open_browser=not no_browser,
                say=_err,
            )
    except AnnotateError as e:
        raise SystemExit(_fail(str(e))) from None
    if not outcome.decided:
        _err(f"No decision within {timeout:g} s: Claude Code asks as usual.")
    click.echo(json.dumps(plangate.hook_answer(outcome, timeout), ensure_ascii=False))


@command(cli, "open", creates=True)
@click.argument("file")
@click.option("--wait", is_flag=True, help="Wait for the verdict, print it and the notes, exit.")
@_timeout_option
@_browser_option
def open_file(ctx: Ctx, file: str, wait: bool, timeout: float, no_browser: bool) -> None:
    """Review any Markdown file of the project: serve it rendered with the overlay on loopback.
    Without --wait it serves until the first verdict or the timeout."""
    store = ctx.store()
    revision, page_url, source = plangate.submit_file(store, file)
    outcome = plangate.review_document(
        store,
        revision,
        page_url,
        source,
        timeout_s=timeout,
        open_browser=not no_browser,
        say=_err,
    )
    if not outcome.decided:
        raise SystemExit(_fail(f"No decision within {timeout:g} s ({outcome.url})"))
    if wait or ctx.as_json:
        ctx.emit(outcome.to_dict(), lambda: plangate.changes_message(outcome))
    else:
        click.echo(f"{outcome.revision.decision}: {file} (revision {outcome.revision.number})")


def _plan_line(plan: Plan) -> str:
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
    from .diff import word_diff

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
