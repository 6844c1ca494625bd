"""`annotate setup`: connect coding agents to a project's review notes, and undo it exactly.

For each agent (Claude Code, Codex, OpenCode) and scope (the project, or the user's home) it writes
the MCP server's entry into the agent's configuration, merged with what is there, and a skill file
that teaches the workflow; `.annotate/` goes into the project's `.gitignore`. The hosts that show
the review view in their chat (`HOSTS`: Claude Desktop, VS Code, Cursor; Goose, whose YAML is
printed to paste) get the server entry alone. Every entry the project's own files or a host's
carry names the project's absolute path (`--project`): a host starts servers in a folder of its
own, where no project is found (issue #27); a user-scope entry of a terminal agent, started in
whatever project the agent is in, names none.
With `gate=True` it also installs `annotate hook stop` as a Stop hook (Claude Code's
`settings.json`, Codex's `hooks.json`; OpenCode has no hook that can hold a turn), which keeps the
agent at a review it took until every note is addressed (annotate/hook.py).
Everything written is recorded in `.annotate/config.json`, so a second run changes
nothing and `--uninstall` removes exactly that: our entries, never the user's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import store as store_module
from .agents import CLI, MCP, intents, mode_instructions, order_of_work
from .errors import ValidationError

__all__ = ["AGENTS", "EVERY", "HOSTS", "SCOPES", "Action", "install", "skill_text", "uninstall"]

AGENTS = ("claude", "codex", "opencode")  # terminal agents: `--agent all`
# Hosts that render MCP App views (docs/chat.md); Claude Desktop and Goose have a user file only.
HOSTS = ("claude-desktop", "vscode", "cursor", "goose")
EVERY = AGENTS + HOSTS
USER_ONLY = ("claude-desktop", "goose")
SCOPES = ("project", "user")
NAME = "mkdocs-annotate"  # the MCP server's key and the skill's name
CONFIG = "config.json"
CONFIG_VERSION = 1
GITIGNORE_LINE = ".annotate/"
IGNORED = {".annotate", ".annotate/", "/.annotate", "/.annotate/", ".annotate/*"}
TOML_BEGIN = (
    f"# {NAME}: begin (written by `annotate setup`; `annotate setup --uninstall` removes it)"
)
TOML_END = f"# {NAME}: end"
OPENCODE_SCHEMA = "https://opencode.ai/config.json"
HOOK_TIMEOUT = 10  # seconds; the hook answers in well under one (benchmarks/agent_round.py)
NO_GATE = "no stop gate: OpenCode's plugins cannot hold a turn (docs/agents.md)"
# The plan gate (issue #29, docs/plans.md): Claude Code's PermissionRequest hook on ExitPlanMode.
# Its timeout is the hook's own (`annotate hook plan --timeout`) and a minute more, so the hook
# always answers (or says it timed out) before Claude Code gives up on it.
PLAN_HOOK_TIMEOUT = 3060
NO_PLAN_GATE = (
    "no plan gate: only Claude Code has a hook on its plan step; use the MCP tool "
    "request_review (docs/plans.md)"
)


@dataclass(frozen=True)
class Action:
    """One thing setup did (or left alone), for the summary it prints."""

    verb: str  # wrote, unchanged, removed, skipped
    path: Path
    what: str

    def __str__(self) -> str:
        return f"{self.verb} {self.path}: {self.what}"


@dataclass(frozen=True)
class Target:
    """Where one agent keeps its MCP configuration, its skills and its hooks, in one scope."""

    agent: str
    scope: str
    mcp: Path
    kind: str  # mcp-json (key `mcpServers` / `mcp` / `servers`), mcp-toml, or snippet (printed)
    skill: Path | None  # None: the host reads no skill files
    hooks: Path | None  # None: the agent has no Stop hook that can hold a turn


def _app_config(*parts: str) -> Path:
    """A desktop application's configuration folder on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        return home.joinpath("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")).joinpath(*parts)
    return home.joinpath(".config", *parts)


def targets(project: Path, agent: str, scope: str) -> Target:
    home = Path.home()
    if agent in USER_ONLY:
        scope = "user"
    base = project if scope == "project" else home
    skill = Path("skills") / NAME / "SKILL.md"
    if agent == "claude-desktop":
        mcp = _app_config("Claude", "claude_desktop_config.json")
        return Target(agent, scope, mcp, "mcp-json", None, None)
    if agent == "vscode":
        mcp = (
            project / ".vscode" / "mcp.json"
            if scope == "project"
            else _app_config("Code", "User", "mcp.json")
        )
        return Target(agent, scope, mcp, "mcp-json", None, None)
    if agent == "cursor":
        return Target(agent, scope, base / ".cursor" / "mcp.json", "mcp-json", None, None)
    if agent == "goose":
        # YAML that `goose configure` and Goose Desktop rewrite: a rewrite of ours would drop the
        # user's comments, so the entry is printed to paste (docs/agents.md).
        return Target(agent, scope, _app_config("goose", "config.yaml"), "snippet", None, None)
    if agent == "claude":
        mcp = project / ".mcp.json" if scope == "project" else home / ".claude.json"
        claude = base / ".claude"
        return Target(agent, scope, mcp, "mcp-json", claude / skill, claude / "settings.json")
    if agent == "codex":
        codex = base / ".codex"
        return Target(
            agent, scope, codex / "config.toml", "mcp-toml", codex / skill, codex / "hooks.json"
        )
    if scope == "project":
        return Target(
            agent, scope, project / "opencode.json", "mcp-json", project / ".opencode" / skill, None
        )
    config = home / ".config" / "opencode"
    return Target(agent, scope, config / "opencode.json", "mcp-json", config / skill, None)


def server_command() -> str:
    """The absolute path of the `annotate` that is running (issue #14, item 9).

    Never the bare name: an agent started outside the virtual environment setup ran in (activated
    or not) would not find it. A symlink (pipx's `~/.local/bin/annotate`) is kept as it is, so the
    command survives a reinstall. `python -m annotate.cli` runs write the environment's own
    `annotate`, and `annotate` only when there is none.
    """
    argv0 = Path(sys.argv[0])
    if argv0.name == "annotate" and argv0.is_file():
        return str(argv0.absolute())
    here = Path(sys.executable).parent / "annotate"
    return str(here.absolute()) if here.is_file() else "annotate"


# -- the files ----------------------------------------------------------------------------------


def skill_text() -> str:
    """The SKILL.md every agent gets (front matter `name`, `description`)."""
    mcp, cli = MCP, CLI
    return f"""\
---
name: {NAME}
description: Review notes a docs author left on the rendered MkDocs site (mkdocs-annotate). Use when the user mentions review notes, annotations, feedback on the docs site, "Send to agent", an annotation id like a_3f9c01ab22, or `annotate`; and before starting work on the docs, to check for pending notes.
---

# Review notes on the docs site (mkdocs-annotate)

The author reads the rendered site (`mkdocs serve`), selects text or an element, and writes a note.
Each note is stored in `.annotate/annotations.db` (never in the docs, never in git) and points at a
**Markdown file and line range** (`source`). You read the notes, edit the Markdown, and reply; the
author sees your replies on the page and accepts or reopens each note.

## When to check

- Before starting work on the docs, and when the user says they left notes or feedback: run the
  `summary` tool (or `annotate summary`). Nothing open and no pending review: say so briefly and
  carry on with the main task.
- When the user asks you to wait for their review, call `wait_for_review` (or `annotate wait`): it
  returns when they press **Send to agent** and tells you the review's mode. After a timeout it says
  "No review yet"; call it again if the user wants you to keep waiting.
- When the user mentions a note by id, open it with `get_annotation` / `get_context`.

## The workflow (MCP tools)

1. `summary`, then `list_annotations` (filters `pageUrl`, `status`) and `list_page_notes`; or
   `wait_for_review` for the notes the author sent.
2. For each note: `get_context` shows its Markdown with line numbers.
3. Then, in this order: {order_of_work(mcp)}.

The server's prompts `address-review` (the current review) and `address-note` (one note, by id)
walk through the same; clients show them as slash commands.

## What a note asks

{intents(mcp)}

- `replace` and `insert` carry the author's wording in `suggestion`; use it as given unless the
  note says otherwise. After an `insert`, `replacedText` is the quote followed by what you added.
- `replacedText` is the text as the rendered page shows it, not Markdown (no backticks, `**` or
  link syntax): it is compared with the page's text to find the note again.
- Element notes (`elementSelector`) are about an element of the page (an image, a table…); page
  notes are about the whole page, its Markdown file in `source.path`. Neither has `replacedText`.

## The same from the shell

Every tool has a command; add `--json` for JSON. `annotate summary`, `annotate list [--page URL]`,
`annotate notes`, `annotate get ID`, `annotate context ID`, `annotate wait`, then for each note:
{order_of_work(cli)}. `annotate export` gives everything as Markdown.

## When a Stop hook says the review is not finished

With `annotate setup --gate`, ending your turn while a review you took still has notes that are
not addressed is blocked, with those notes listed (at most 3 times in a row). Go on with them; a
note you cannot do gets a reply saying why and is addressed, or you ask the user.

## Edit mode and review mode

A review sent with **Send to agent** has a mode and an optional message from the author.

- {mode_instructions("edit", mcp)}
- {mode_instructions("review", mcp)}

Without a review, edit only when the user or the note clearly asks for a change; otherwise reply.

## Stale and orphaned notes

`anchorState` is independent of the status. `anchored`: `source` points at the annotated text.
`stale`: the text was rewritten since the note was made; `source` shows where it was last seen, so
read the context and make sure the note still applies before editing, and say in your reply what you
found. `orphaned`: the Markdown file is gone or renamed; do not guess, find the text by its quote or
ask. Never act on a stale or orphaned note without checking. `removed`: the note was addressed
with `deleted: true` (its text was deleted as asked); it is not located again.

## Threads and the main conversation

- A note's thread is for that note: reply there (`message` of `address_annotation`, or
  `add_agent_reply`) with what you changed or your answer, in a sentence or two.
- The main conversation is for the task as a whole. Choose one channel per item: the thread for
  local feedback, the main conversation for decisions that cut across notes.
- When a note needs a longer discussion there, leave a short pointer in the thread rather than a
  copy of the answer.
- A note that is informational or a preference, with no change requested: acknowledge it briefly in
  the thread; do not edit.
- If the notes together suggest a different direction (not just line-level fixes), raise it in the
  main conversation instead of replying piecemeal.
- Do not edit files unless a note, the review's mode or the user clearly asks for a change.
- Leave accepting and reopening to the author: `addressed` means it is their turn.

## When something fails

- `Annotation with ID "…" not found`: the note was deleted or the id is wrong; list the notes again.
- `… is resolved; reopen it first`: the author closed it; leave it, or ask them to reopen it.
  Replies are always allowed.
- `replacedText must not be empty` / `not a text annotation`: give the new text, and only for text
  annotations (element annotations and page notes have none).
- `… is busy (another process is writing); try again`: retry in a moment.
- `… is not a readable annotation database` or `… written by a newer mkdocs-annotate`: stop and
  tell the user; do not delete `.annotate/`.
- The MCP server is not available: use the `annotate` command instead; the store is the same.
"""


def _read_json(path: Path) -> dict[str, Any] | None:
    """The file's JSON object; `{{}}` if it does not exist; None if it cannot be merged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _write(path: Path, text: str) -> bool:
    """Write if different; True when the file changed."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    path.write_text(text, encoding="utf-8")
    return True


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _mkdirs(folder: Path) -> list[str]:
    """Create `folder` and missing parents; return those created, deepest first."""
    made: list[str] = []
    p = folder
    while not p.exists():
        made.append(str(p))
        p = p.parent
    folder.mkdir(parents=True, exist_ok=True)
    return made


def _remove_dirs(dirs: Iterable[str]) -> None:
    for d in dirs:  # deepest first
        # Not empty (the user put something there), or gone: leave it.
        with contextlib.suppress(OSError):
            os.rmdir(d)


def server_args(t: Target, project: Path) -> list[str]:
    """`annotate`'s arguments in `t`: `mcp --project ABS` wherever the server may start outside
    the project (every host, every project file); plain `mcp` in a terminal agent's home-folder
    configuration, which serves whichever project the agent is started in."""
    if t.scope == "user" and t.agent in AGENTS:
        return ["mcp"]
    return ["mcp", "--project", str(project)]


def server_name(t: Target, project: Path) -> str:
    """The entry's key: one per project in a host's own (user) file, which several projects
    share; NAME in the project's files and a terminal agent's."""
    if t.scope == "user" and t.agent in HOSTS:
        return f"{NAME}-{re.sub(r'[^A-Za-z0-9_-]+', '-', project.name).strip('-') or 'project'}"
    return NAME


def _mcp_entry(agent: str, command: str, args: list[str]) -> tuple[str, dict[str, Any]]:
    if agent in ("claude", "claude-desktop", "cursor"):
        return "mcpServers", {"command": command, "args": args}
    if agent == "vscode":
        return "servers", {"type": "stdio", "command": command, "args": args}
    return "mcp", {"type": "local", "command": [command, *args], "enabled": True}


def _toml_block(command: str, args: list[str]) -> str:
    return (
        f"{TOML_BEGIN}\n[mcp_servers.{NAME}]\ncommand = {json.dumps(command)}\n"
        f"args = {json.dumps(args, ensure_ascii=False)}\n{TOML_END}\n"
    )


def goose_snippet(command: str, args: list[str], name: str) -> str:
    """The Goose extension entry to paste under `extensions:` in its config.yaml."""
    return (
        f"  {name}:\n    enabled: true\n    type: stdio\n    name: {name}\n"
        f"    cmd: {json.dumps(command)}\n    args: {json.dumps(args, ensure_ascii=False)}\n"
        "    timeout: 300\n"
    )


def _hook_handler(command: str) -> dict[str, Any]:
    # Both agents run it through a shell: quote a path with spaces.
    return {
        "type": "command",
        "command": f"{shlex.quote(command)} hook stop",
        "timeout": HOOK_TIMEOUT,
    }


def _is_our_hook(handler: Any, command: str | None) -> bool:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    return handler["command"] == command or bool(_OUR_HOOK.search(handler["command"]))


def _without_our_hooks(groups: list[Any], command: str | None) -> list[Any]:
    """The Stop groups with our handlers taken out, and groups left empty by that dropped."""
    kept = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(handlers, list):
            left = [h for h in handlers if not _is_our_hook(h, command)]
            if len(left) != len(handlers):
                if left:
                    kept.append({**group, "hooks": left})
                continue
        kept.append(group)
    return kept


# `… annotate hook stop`, whatever path or quoting precedes it.
_OUR_HOOK = re.compile(r"""(?:^|[/\\\s'"])annotate['"]?\s+hook\s+stop\s*$""")
_TOML_OWN_TABLE = re.compile(rf'^\s*\[\s*mcp_servers\.(?:{NAME}|"{NAME}")\s*\]', re.M)
_TOML_BLOCK = re.compile(rf"^{re.escape(TOML_BEGIN)}\n.*?^{re.escape(TOML_END)}\n?", re.M | re.S)


# -- the record ---------------------------------------------------------------------------------


class Record:
    """`.annotate/config.json`: every file setup wrote to, with what to undo."""

    def __init__(self, project: Path) -> None:
        self.path = project / store_module.DEFAULT_DIR / CONFIG
        data = _read_json(self.path)
        if data is None:
            raise ValidationError(f"{self.path} is not valid JSON; fix or delete it", "config")
        self.installs: list[dict[str, Any]] = list(data.get("installs", []))

    def find(self, kind: str, path: Path) -> dict[str, Any] | None:
        for entry in self.installs:
            if entry["kind"] == kind and entry["path"] == str(path):
                return entry
        return None

    def add(self, entry: dict[str, Any]) -> None:
        if self.find(entry["kind"], Path(entry["path"])) is None:
            self.installs.append(entry)

    def save(self) -> None:
        if not self.installs:
            self.path.unlink(missing_ok=True)
            return
        _write(self.path, _dump({"version": CONFIG_VERSION, "installs": self.installs}))


# -- install ------------------------------------------------------------------------------------


def _check(project: Path, chosen: Iterable[str], scope: str | None) -> list[str]:
    if not project.is_dir():
        raise ValidationError(f"Project folder {str(project)!r} does not exist", "project")
    chosen = list(chosen)
    for a in chosen:
        if a not in EVERY:
            raise ValidationError(f"agent must be one of {', '.join(EVERY)}, got {a!r}", "agent")
    if scope is not None and scope not in SCOPES:
        raise ValidationError(f"scope must be project or user, got {scope!r}", "scope")
    return chosen


def install(
    project: str | os.PathLike[str] = ".",
    agents: Iterable[str] = AGENTS,
    scope: str = "project",
    *,
    command: str | None = None,
    gate: bool = False,
    plan_gate: bool = False,
) -> list[Action]:
    """Connect the agents to the project's notes; idempotent. Returns what was done.

    `gate` also installs the Stop hook `annotate hook stop` where the agent has one;
    `plan_gate` Claude Code's PermissionRequest hook `annotate hook plan` on ExitPlanMode."""
    root = Path(project).resolve()
    chosen = _check(root, agents, scope)
    store_module.open(root).close()  # .annotate/ with its own `*` .gitignore
    record = Record(root)
    command = command or server_command()
    actions = [_gitignore(root, record)]
    for agent in chosen:
        t = targets(root, agent, scope)
        actions.append(_install_mcp(t, record, command, root))
        if t.skill is not None:
            actions.append(_install_skill(t, record))
        if gate and agent in AGENTS:
            actions.append(_install_gate(t, record, command))
        if plan_gate and agent in AGENTS:
            actions.append(_install_plan_gate(t, record, command))
    record.save()
    return actions


def _gitignore(root: Path, record: Record) -> Action:
    path = root / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    ours = record.find("gitignore", path)
    if text is not None and any(line.strip() in IGNORED for line in text.splitlines()):
        return Action("unchanged", path, f"{GITIGNORE_LINE} is ignored")
    new = (text or "") + ("\n" if text and not text.endswith("\n") else "") + GITIGNORE_LINE + "\n"
    path.write_text(new, encoding="utf-8")
    if ours is None:
        record.add({"agent": "*", "scope": "project", "kind": "gitignore", "path": str(path),
                    "created": text is None})  # fmt: skip
    return Action("wrote", path, f"added {GITIGNORE_LINE}")


def _install_mcp(t: Target, record: Record, command: str, project: Path) -> Action:
    path = t.mcp
    args = server_args(t, project)
    name = server_name(t, project)
    if t.kind == "snippet":
        return Action(
            "print",
            path,
            f"add under `extensions:` (or run `goose configure`):\n{goose_snippet(command, args, name)}",
        )
    ours = record.find(t.kind, path)
    if t.kind == "mcp-toml":
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        block = _toml_block(command, args)
        current = text or ""
        if _TOML_BLOCK.search(current):
            new = _TOML_BLOCK.sub(lambda m: block, current, count=1)
        elif _TOML_OWN_TABLE.search(current):
            return Action("skipped", path, f"[mcp_servers.{NAME}] is already configured by hand")
        else:
            sep = (
                ""
                if not current or current.endswith("\n\n")
                else "\n"
                if current.endswith("\n")
                else "\n\n"
            )
            new = current + sep + block
        entry: dict[str, Any] = {"created": text is None}
    else:
        data = _read_json(path)
        if data is None:
            return Action(
                "skipped", path, "not a JSON object; add the server by hand (docs/agents.md)"
            )
        key, server = _mcp_entry(t.agent, command, args)
        existed = path.exists()
        container_existed = isinstance(data.get(key), dict)
        if not existed and t.agent == "opencode":
            data["$schema"] = OPENCODE_SCHEMA
        servers = data.setdefault(key, {}) if container_existed or key not in data else None
        if servers is None:
            return Action("skipped", path, f"{key!r} is not an object; add the server by hand")
        servers[name] = server
        new = _dump(data)
        entry = {"created": not existed, "key": key, "containerCreated": not container_existed}
        if name != NAME:
            entry["name"] = name
    dirs = _mkdirs(path.parent)
    changed = _write(path, new)
    if ours is None:
        record.add({"agent": t.agent, "scope": t.scope, "kind": t.kind, "path": str(path),
                    **entry, "dirs": dirs})  # fmt: skip
    return Action("wrote" if changed else "unchanged", path, f"MCP server {name!r} for {t.agent}")


def _install_skill(t: Target, record: Record) -> Action:
    assert t.skill is not None  # install() asks only for those that have one
    ours = record.find("skill", t.skill)
    dirs = _mkdirs(t.skill.parent)
    changed = _write(t.skill, skill_text())
    if ours is None:
        record.add({"agent": t.agent, "scope": t.scope, "kind": "skill", "path": str(t.skill),
                    "created": True, "dirs": dirs})  # fmt: skip
    return Action("wrote" if changed else "unchanged", t.skill, f"skill for {t.agent}")


def _install_gate(t: Target, record: Record, command: str) -> Action:
    if t.hooks is None:
        return Action("skipped", t.mcp, NO_GATE)
    path = t.hooks
    data = _read_json(path)
    if data is None:
        return Action("skipped", path, "not a JSON object; add the hook by hand (docs/agents.md)")
    hooks = data.get("hooks")
    stop = hooks.get("Stop") if isinstance(hooks, dict) else None
    bad_hooks = hooks is not None and not isinstance(hooks, dict)
    if bad_hooks or (stop is not None and not isinstance(stop, list)):
        return Action("skipped", path, "'hooks' is not in the expected form; add it by hand")
    ours = record.find("hook-json", path)
    wanted = _hook_handler(command)
    groups = list(stop or [])
    if not any(isinstance(g, dict) and wanted in (g.get("hooks") or []) for g in groups):
        # An older entry of ours (another command path) makes way for the new one.
        groups = _without_our_hooks(groups, ours.get("command") if ours else None)
        groups.append({"hooks": [wanted]})
    entry = {"created": not path.exists(), "hooksCreated": hooks is None,
             "stopCreated": stop is None}  # fmt: skip
    data["hooks"] = {**(hooks or {}), "Stop": groups}
    dirs = _mkdirs(path.parent)
    changed = _write(path, _dump(data))
    if ours is None:
        record.add({"agent": t.agent, "scope": t.scope, "kind": "hook-json", "path": str(path),
                    **entry, "command": wanted["command"], "dirs": dirs})  # fmt: skip
    else:
        ours["command"] = wanted["command"]
    return Action("wrote" if changed else "unchanged", path, f"Stop hook for {t.agent}")


def _plan_handler(command: str) -> dict[str, Any]:
    return {
        "type": "command",
        "command": f"{shlex.quote(command)} hook plan",
        "timeout": PLAN_HOOK_TIMEOUT,
    }


# `… annotate hook plan`, whatever path, quoting or options come with it.
_OUR_PLAN_HOOK = re.compile(r"""(?:^|[/\\\s'"])annotate['"]?\s+hook\s+plan(?:\s|$)""")


def _without_plan_hook(groups: list[Any], command: str | None) -> list[Any]:
    """The PermissionRequest groups without our ExitPlanMode handler (`command`, as recorded, or
    any `annotate hook plan`); a group left empty goes."""

    def ours(h: Any) -> bool:
        line = str(h.get("command", "")) if isinstance(h, dict) else ""
        return bool(line) and (line == command or bool(_OUR_PLAN_HOOK.search(line)))

    kept = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(handlers, list):
            left = [h for h in handlers if not ours(h)]
            if len(left) != len(handlers):
                if left:
                    kept.append({**group, "hooks": left})
                continue
        kept.append(group)
    return kept


def _install_plan_gate(t: Target, record: Record, command: str) -> Action:
    if t.agent != "claude" or t.hooks is None:
        return Action("skipped", t.mcp, NO_PLAN_GATE)
    path = t.hooks
    data = _read_json(path)
    if data is None:
        return Action("skipped", path, "not a JSON object; add the hook by hand (docs/plans.md)")
    hooks = data.get("hooks")
    asks = hooks.get("PermissionRequest") if isinstance(hooks, dict) else None
    if (hooks is not None and not isinstance(hooks, dict)) or (
        asks is not None and not isinstance(asks, list)
    ):
        return Action("skipped", path, "'hooks' is not in the expected form; add it by hand")
    handler = _plan_handler(command)
    wanted = {"matcher": "ExitPlanMode", "hooks": [handler]}
    recorded = record.find("plan-hook-json", path)
    groups = list(asks or [])
    if wanted not in groups:  # an older entry of ours makes way
        groups = [
            *_without_plan_hook(groups, recorded.get("command") if recorded else None),
            wanted,
        ]
    entry = {"created": not path.exists(), "hooksCreated": hooks is None,
             "askCreated": asks is None}  # fmt: skip
    data["hooks"] = {**(hooks or {}), "PermissionRequest": groups}
    dirs = _mkdirs(path.parent)
    changed = _write(path, _dump(data))
    if recorded is None:
        record.add({"agent": t.agent, "scope": t.scope, "kind": "plan-hook-json",
                    "path": str(path), **entry, "command": handler["command"],
                    "dirs": dirs})  # fmt: skip
    else:
        recorded["command"] = handler["command"]
    return Action(
        "wrote" if changed else "unchanged", path, f"plan gate (ExitPlanMode) for {t.agent}"
    )


# -- uninstall ----------------------------------------------------------------------------------


def uninstall(
    project: str | os.PathLike[str] = ".",
    agents: Iterable[str] = EVERY,
    scope: str | None = None,
    *,
    gate: bool = False,
    plan_gate: bool = False,
) -> list[Action]:
    """Remove what `install` recorded for these agents (and scope); the `.gitignore` line only
    when every agent goes. Skill files installed before the record existed are found by path.
    `gate` removes the Stop hooks only, `plan_gate` the plan gate only (both: both)."""
    root = Path(project).resolve()
    chosen = _check(root, agents, scope)
    record = Record(root)
    # The .gitignore line goes with the last agent or host setup connected.
    others = {e["agent"] for e in record.installs} - {"*", *chosen}
    only = {k for k, on in (("hook-json", gate), ("plan-hook-json", plan_gate)) if on}
    every = set(chosen) >= set(AGENTS) and not others and scope is None and not only
    actions: list[Action] = []
    keep: list[dict[str, Any]] = []
    undone: list[dict[str, Any]] = []
    for entry in record.installs:
        wanted = entry["agent"] in chosen and scope in (None, entry["scope"])
        if only and entry["kind"] not in only:
            wanted = False
        if entry["kind"] == "gitignore":
            wanted = every
        if not wanted:
            keep.append(entry)
            continue
        actions.append(_undo(entry))
        undone.append(entry)
    record.installs = keep
    folders = {d for e in undone for d in e.get("dirs", [])}
    # Without a record (older installs), look in the known places.
    recorded = {e["path"] for e in record.installs} | {str(a.path) for a in actions}
    for agent in () if only else chosen:
        for s in SCOPES if scope is None else (scope,):
            path = targets(root, agent, s).skill
            if path is not None and str(path) not in recorded and _is_our_skill(path):
                actions.append(_undo({"kind": "skill", "path": str(path)}))
                folders.add(str(path.parent))
    # The folders setup made, once every file is gone, deepest first.
    _remove_dirs(sorted(folders, key=lambda d: d.count(os.sep), reverse=True))
    if (root / store_module.DEFAULT_DIR).is_dir():
        record.save()
    return actions


def _is_our_skill(path: Path) -> bool:
    try:
        return f"\nname: {NAME}\n" in path.read_text(encoding="utf-8")[:200]
    except OSError:
        return False


def _undo(entry: dict[str, Any]) -> Action:
    path = Path(entry["path"])
    kind = entry["kind"]
    if not path.exists():
        return Action("removed", path, "already gone")
    if kind == "skill":
        path.unlink()
        return Action("removed", path, "skill")
    text = path.read_text(encoding="utf-8")
    if kind == "gitignore":
        lines = text.splitlines(keepends=True)
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip() == GITIGNORE_LINE:
                del lines[i]
                break
        new = "".join(lines)
    elif kind == "hook-json":
        data = _read_json(path)
        if data is None:
            return Action("skipped", path, "not a JSON object any more; remove the hook by hand")
        hooks = data.get("hooks")
        if isinstance(hooks, dict) and isinstance(hooks.get("Stop"), list):
            hooks["Stop"] = _without_our_hooks(hooks["Stop"], entry.get("command"))
            if not hooks["Stop"] and entry.get("stopCreated"):
                del hooks["Stop"]
            if not hooks and entry.get("hooksCreated"):
                del data["hooks"]
        new = _dump(data) if data else ""
    elif kind == "plan-hook-json":
        data = _read_json(path)
        if data is None:
            return Action("skipped", path, "not a JSON object any more; remove the hook by hand")
        hooks = data.get("hooks")
        if isinstance(hooks, dict) and isinstance(hooks.get("PermissionRequest"), list):
            hooks["PermissionRequest"] = _without_plan_hook(
                hooks["PermissionRequest"], entry.get("command")
            )
            if not hooks["PermissionRequest"] and entry.get("askCreated"):
                del hooks["PermissionRequest"]
            if not hooks and entry.get("hooksCreated"):
                del data["hooks"]
        new = _dump(data) if data else ""
    elif kind == "mcp-toml":
        new = _TOML_BLOCK.sub("", text, count=1)
        new = new.rstrip("\n") + "\n" if new.strip() else ""
    else:
        data = _read_json(path)
        if data is None:
            return Action("skipped", path, "not a JSON object any more; remove the server by hand")
        key = entry.get("key", "mcpServers")
        servers = data.get(key)
        if isinstance(servers, dict):
            servers.pop(entry.get("name", NAME), None)
            if not servers and entry.get("containerCreated"):
                del data[key]
        if entry.get("created") and set(data) <= {"$schema"}:
            data = {}
        new = _dump(data) if data else ""
    if entry.get("created") and not new.strip():
        path.unlink()
        return Action("removed", path, "file written by setup")
    _write(path, new)
    what = {"hook-json": "Stop hook", "plan-hook-json": "plan gate"}.get(kind, f"{NAME} entry")
    return Action("removed", path, what)
