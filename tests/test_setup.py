"""`annotate setup`: idempotent, merges with the user's files, and `--uninstall` removes exactly
what it wrote (issue #7, docs/agents.md). HOME is a temp folder in every test."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotate import ValidationError, agent_setup
from annotate.cli import cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = None

USER_MCP = {
    "mcpServers": {"docs-search": {"command": "docs-search", "args": ["--stdio"]}},
    "other": {"kept": True},
}
USER_TOML = """model = "o4-mini"

[mcp_servers.docs-search]
command = "docs-search"
args = ["--stdio"]
"""
USER_OPENCODE = {"$schema": "https://opencode.ai/config.json", "theme": "dark"}
USER_GITIGNORE = "site/\n__pycache__/\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "index.md").write_text("# Home\n")
    return root


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file's bytes (the database aside), by path."""
    return {
        str(p): p.read_bytes()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith("annotations.db")
    }


def folders(*roots: Path) -> set[str]:
    return {str(p) for root in roots for p in root.rglob("*") if p.is_dir()}


def test_project_scope_writes_every_agent(project: Path, home: Path) -> None:
    actions = agent_setup.install(project, command="annotate")
    assert {(a.verb, a.path.relative_to(project).as_posix()) for a in actions} == {
        ("wrote", ".gitignore"),
        ("wrote", ".mcp.json"),
        ("wrote", ".claude/skills/mkdocs-annotate/SKILL.md"),
        ("wrote", ".codex/config.toml"),
        ("wrote", ".codex/skills/mkdocs-annotate/SKILL.md"),
        ("wrote", "opencode.json"),
        ("wrote", ".opencode/skills/mkdocs-annotate/SKILL.md"),
    }
    assert (project / ".gitignore").read_text() == ".annotate/\n"
    # The project's absolute path: a client that starts the server elsewhere finds it (#27).
    args = ["mcp", "--project", str(project.resolve())]
    assert json.loads((project / ".mcp.json").read_text()) == {
        "mcpServers": {"mkdocs-annotate": {"command": "annotate", "args": args}}
    }
    assert json.loads((project / "opencode.json").read_text()) == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {
            "mkdocs-annotate": {"type": "local", "command": ["annotate", *args], "enabled": True}
        },
    }
    toml = (project / ".codex" / "config.toml").read_text()
    if tomllib is not None:
        assert tomllib.loads(toml) == {
            "mcp_servers": {"mkdocs-annotate": {"command": "annotate", "args": args}}
        }
    skill = (project / ".claude" / "skills" / "mkdocs-annotate" / "SKILL.md").read_text()
    assert skill == agent_setup.skill_text()
    for agent in (".codex", ".opencode"):
        assert (project / agent / "skills" / "mkdocs-annotate" / "SKILL.md").read_text() == skill
    assert snapshot(home) == {}  # project scope leaves the home folder alone
    record = json.loads((project / ".annotate" / "config.json").read_text())
    assert record["version"] == 1
    assert {Path(e["path"]) for e in record["installs"]} == {a.path for a in actions}
    assert all(Path(e["path"]).is_absolute() for e in record["installs"])
    assert {(e["agent"], e["kind"]) for e in record["installs"]} == {
        ("*", "gitignore"),
        ("claude", "mcp-json"),
        ("claude", "skill"),
        ("codex", "mcp-toml"),
        ("codex", "skill"),
        ("opencode", "mcp-json"),
        ("opencode", "skill"),
    }


def test_two_runs_give_identical_files(project: Path, home: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps(USER_MCP, indent=2) + "\n")
    agent_setup.install(project, command="annotate")
    agent_setup.install(project, ["claude"], "user", command="annotate")
    first = snapshot(project, home)
    again = agent_setup.install(project, command="annotate") + agent_setup.install(
        project, ["claude"], "user", command="annotate"
    )
    assert snapshot(project, home) == first
    assert {a.verb for a in again} == {"unchanged"}


def test_uninstall_keeps_the_users_entries(project: Path, home: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps(USER_MCP, indent=2) + "\n")
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text(USER_TOML)
    (project / "opencode.json").write_text(json.dumps(USER_OPENCODE, indent=2) + "\n")
    (project / ".gitignore").write_text(USER_GITIGNORE)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{}\n")  # the user's, in a folder we use
    before_files, before_folders = snapshot(project), folders(project)

    agent_setup.install(project, command="annotate")
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["docs-search"] == USER_MCP["mcpServers"]["docs-search"]
    assert mcp["mcpServers"]["mkdocs-annotate"]["args"][:2] == ["mcp", "--project"]
    assert mcp["other"] == {"kept": True}
    assert (project / ".gitignore").read_text() == USER_GITIGNORE + ".annotate/\n"
    toml = (project / ".codex" / "config.toml").read_text()
    assert toml.startswith(USER_TOML)
    if tomllib is not None:
        parsed = tomllib.loads(toml)
        assert parsed["model"] == "o4-mini"
        assert set(parsed["mcp_servers"]) == {"docs-search", "mkdocs-annotate"}
    opencode = json.loads((project / "opencode.json").read_text())
    assert opencode["theme"] == "dark" and "mkdocs-annotate" in opencode["mcp"]

    actions = agent_setup.uninstall(project)
    assert {a.verb for a in actions} == {"removed"}
    after = snapshot(project)
    after.pop(str(project / ".annotate" / ".gitignore"))  # the store's own folder stays
    assert after == before_files
    assert folders(project) - {str(project / ".annotate")} == before_folders
    assert not (project / ".annotate" / "config.json").exists()


def test_user_scope_writes_under_home(project: Path, home: Path) -> None:
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, **USER_MCP}, indent=2))
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(USER_TOML)
    before = snapshot(home)

    actions = agent_setup.install(project, scope="user", command="/opt/bin/annotate")
    written = {a.path for a in actions if a.verb == "wrote"}
    assert written == {
        project / ".gitignore",
        home / ".claude.json",
        home / ".claude" / "skills" / "mkdocs-annotate" / "SKILL.md",
        home / ".codex" / "config.toml",
        home / ".codex" / "skills" / "mkdocs-annotate" / "SKILL.md",
        home / ".config" / "opencode" / "opencode.json",
        home / ".config" / "opencode" / "skills" / "mkdocs-annotate" / "SKILL.md",
    }
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 3
    assert claude["mcpServers"]["mkdocs-annotate"] == {
        "command": "/opt/bin/annotate",
        "args": ["mcp"],
    }
    assert set(claude["mcpServers"]) == {"docs-search", "mkdocs-annotate"}
    assert 'command = "/opt/bin/annotate"' in (home / ".codex" / "config.toml").read_text()
    # In the project: only the .gitignore entry and the record.
    assert set(snapshot(project)) == {
        str(project / ".gitignore"),
        str(project / ".annotate" / ".gitignore"),
        str(project / ".annotate" / "config.json"),
        str(project / "mkdocs.yml"),
        str(project / "docs" / "index.md"),
    }

    agent_setup.uninstall(project, scope="user")
    after = snapshot(home)
    # JSON we merged into is rewritten in our layout; its content is the user's again.
    assert json.loads(after.pop(str(home / ".claude.json"))) == json.loads(
        before.pop(str(home / ".claude.json"))
    )
    assert after == before
    assert folders(home) == {str(home / ".codex")}
    # A scope-limited uninstall leaves the project's .gitignore entry.
    assert (project / ".gitignore").read_text() == ".annotate/\n"


def test_one_agent_at_a_time(project: Path) -> None:
    agent_setup.install(project, ["claude"], command="annotate")
    assert (project / ".mcp.json").exists()
    assert not (project / ".codex").exists() and not (project / "opencode.json").exists()
    agent_setup.install(project, ["codex"], command="annotate")
    agent_setup.uninstall(project, ["claude"])
    assert not (project / ".mcp.json").exists()
    assert not (project / ".claude").exists()
    assert (project / ".codex" / "config.toml").exists()
    assert (project / ".gitignore").read_text() == ".annotate/\n"  # codex still uses it
    record = json.loads((project / ".annotate" / "config.json").read_text())
    assert {e["agent"] for e in record["installs"]} == {"*", "codex"}
    agent_setup.uninstall(project)
    assert not (project / ".gitignore").exists()
    assert not (project / ".codex").exists()


def test_existing_ignore_rule_is_not_ours(project: Path) -> None:
    (project / ".gitignore").write_text("/.annotate/\n")
    actions = agent_setup.install(project, ["claude"], command="annotate")
    assert actions[0].verb == "unchanged"
    agent_setup.uninstall(project)
    assert (project / ".gitignore").read_text() == "/.annotate/\n"


def test_files_it_cannot_merge_are_left_alone(project: Path) -> None:
    (project / ".mcp.json").write_text("{not json")
    (project / ".codex").mkdir()
    own = '[mcp_servers."mkdocs-annotate"]\ncommand = "my-annotate"\n'
    (project / ".codex" / "config.toml").write_text(own)
    actions = {a.path.name: a for a in agent_setup.install(project, command="annotate")}
    assert actions[".mcp.json"].verb == "skipped"
    assert "add the server by hand" in actions[".mcp.json"].what
    assert actions["config.toml"].verb == "skipped"
    assert (project / ".mcp.json").read_text() == "{not json"
    assert (project / ".codex" / "config.toml").read_text() == own
    assert actions["opencode.json"].verb == "wrote"  # the others are still set up
    agent_setup.uninstall(project)
    assert (project / ".mcp.json").read_text() == "{not json"
    assert (project / ".codex" / "config.toml").read_text() == own


def test_uninstall_without_a_record_finds_our_skills(project: Path) -> None:
    agent_setup.install(project, command="annotate")
    (project / ".annotate" / "config.json").unlink()
    (project / ".claude" / "skills" / "other").mkdir()
    actions = agent_setup.uninstall(project)
    removed = {a.path for a in actions}
    assert project / ".claude" / "skills" / "mkdocs-annotate" / "SKILL.md" in removed
    assert not (project / ".claude" / "skills" / "mkdocs-annotate").exists()
    assert (project / ".claude" / "skills" / "other").is_dir()


def test_skill_file() -> None:
    text = agent_setup.skill_text()
    head, _, body = text.removeprefix("---\n").partition("\n---\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    assert set(fields) == {"name", "description"}
    assert fields["name"] == "mkdocs-annotate"
    assert 0 < len(fields["description"]) <= 1024
    for needed in (
        "## When to check",
        "summary",
        "set_in_progress → edit the Markdown",
        "update_annotation_target",
        "`annotate start ID`",
        "`annotate context ID`",
        "Edit mode:",
        "Review mode:",
        "`stale`",
        "`orphaned`",
        "main conversation",
        "short pointer",
        "## When something fails",
        "reopen it first",
    ):
        assert needed in body, needed


def test_bad_arguments(project: Path, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="agent must be one of"):
        agent_setup.install(project, ["windsurf"])
    with pytest.raises(ValidationError, match="scope must be project or user"):
        agent_setup.install(project, scope="global")
    with pytest.raises(ValidationError, match="does not exist"):
        agent_setup.install(tmp_path / "nowhere")


def test_cli(project: Path, home: Path) -> None:
    runner = CliRunner()
    args = ["setup", "--project", str(project), "--command", "annotate"]
    first = runner.invoke(cli, [*args, "--agent", "claude"])
    assert first.exit_code == 0, first.output
    assert first.output == (
        f"wrote {project}/.gitignore: added .annotate/\n"
        f"wrote {project}/.mcp.json: MCP server 'mkdocs-annotate' for claude\n"
        f"wrote {project}/.claude/skills/mkdocs-annotate/SKILL.md: skill for claude\n"
    )
    again = runner.invoke(cli, [*args, "--agent", "claude", "--json"])
    assert [a["action"] for a in json.loads(again.output)] == ["unchanged"] * 3
    gone = runner.invoke(cli, ["setup", "--project", str(project), "--uninstall"])
    assert gone.exit_code == 0, gone.output
    assert gone.output.count("removed ") == 3
    assert runner.invoke(cli, ["setup", "--project", str(project), "--uninstall"]).output == (
        "Nothing to remove.\n"
    )
    bad = runner.invoke(cli, ["setup", "--project", str(project / "nowhere")])
    assert bad.exit_code == 1
    assert bad.output.startswith("Error: Project folder ")


# -- the Stop hook (issue #14, item 12) and the command written (item 9) -------------------------

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def hook(command: str) -> dict[str, object]:
    return {"type": "command", "command": f"{command} hook stop", "timeout": 10}


def test_gate_merges_into_the_agents_hooks(project: Path, home: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    before = snapshot(project)
    actions = agent_setup.install(project, command="/opt/my env/annotate", gate=True)
    gates = {(a.verb, a.path.relative_to(project).as_posix(), a.what) for a in actions}
    assert gates >= {
        ("wrote", ".claude/settings.json", "Stop hook for claude"),
        ("wrote", ".codex/hooks.json", "Stop hook for codex"),
        ("skipped", "opencode.json", agent_setup.NO_GATE),
    }
    ours = hook("'/opt/my env/annotate'")  # a path with a space, quoted for the shell
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings == {
        "permissions": USER_SETTINGS["permissions"],
        "hooks": {
            "PreToolUse": USER_SETTINGS["hooks"]["PreToolUse"],
            "Stop": [*USER_SETTINGS["hooks"]["Stop"], {"hooks": [ours]}],
        },
    }
    # Codex's hooks.json takes only `hooks` (and `description`) at its root.
    codex = json.loads((project / ".codex" / "hooks.json").read_text())
    assert codex == {"hooks": {"Stop": [{"hooks": [ours]}]}}

    first = snapshot(project, home)
    again = agent_setup.install(project, command="/opt/my env/annotate", gate=True)
    assert snapshot(project, home) == first
    assert {a.verb for a in again} == {"unchanged", "skipped"}

    # Another command replaces our hook rather than adding a second one.
    agent_setup.install(project, ["claude"], command="/usr/bin/annotate", gate=True)
    stop = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["Stop"]
    assert stop == [*USER_SETTINGS["hooks"]["Stop"], {"hooks": [hook("/usr/bin/annotate")]}]

    # --uninstall --gate takes the hooks away and nothing else.
    removed = agent_setup.uninstall(project, gate=True)
    assert {(a.verb, a.path.relative_to(project).as_posix()) for a in removed} == {
        ("removed", ".claude/settings.json"),
        ("removed", ".codex/hooks.json"),
    }
    assert json.loads((project / ".claude" / "settings.json").read_text()) == USER_SETTINGS
    assert not (project / ".codex" / "hooks.json").exists()
    assert (project / ".mcp.json").exists() and (project / ".codex" / "config.toml").exists()
    assert agent_setup.uninstall(project, gate=True) == []

    # A full uninstall after a gate leaves the project as it was.
    agent_setup.install(project, command="annotate", gate=True)
    agent_setup.uninstall(project)
    after = snapshot(project)
    after.pop(str(project / ".annotate" / ".gitignore"))
    assert after == before


def test_gate_in_the_home_folder(project: Path, home: Path) -> None:
    agent_setup.install(
        project, ["claude", "codex"], "user", command="/opt/bin/annotate", gate=True
    )
    for path in (home / ".claude" / "settings.json", home / ".codex" / "hooks.json"):
        assert json.loads(path.read_text()) == {
            "hooks": {"Stop": [{"hooks": [hook("/opt/bin/annotate")]}]}
        }
    assert not (project / ".claude").exists()
    agent_setup.uninstall(project, scope="user")
    assert snapshot(home) == {}


def test_gate_leaves_hooks_it_cannot_read(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"hooks": []}\n')
    (project / ".codex").mkdir()
    (project / ".codex" / "hooks.json").write_text("{oops")
    actions = {a.path.name: a for a in agent_setup.install(project, command="annotate", gate=True)}
    assert actions["settings.json"].verb == "skipped"
    assert actions["hooks.json"].verb == "skipped"
    assert (project / ".claude" / "settings.json").read_text() == '{"hooks": []}\n'
    assert (project / ".codex" / "hooks.json").read_text() == "{oops"


def test_gate_cli(project: Path, home: Path) -> None:
    runner = CliRunner()
    args = ["setup", "--project", str(project), "--agent", "claude", "--command", "annotate"]
    first = runner.invoke(cli, [*args, "--gate"])
    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[-1] == (
        f"wrote {project}/.claude/settings.json: Stop hook for claude"
    )
    gone = runner.invoke(cli, ["setup", "--project", str(project), "--uninstall", "--gate"])
    assert gone.output == f"removed {project}/.claude/settings.json: file written by setup\n"
    assert (project / ".mcp.json").exists()


def test_command_is_the_running_annotate(project: Path, home: Path) -> None:
    """From an activated virtual environment too: the absolute path, never the bare name."""
    bin_dir = Path(sys.executable).parent
    annotate_path = str(bin_dir / "annotate")
    env = {
        **os.environ,
        "HOME": str(home),
        "VIRTUAL_ENV": str(bin_dir.parent),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for argv in (
        ["annotate", "setup", "--agent", "claude", "--gate"],  # found on PATH, as when activated
        [annotate_path, "setup", "--agent", "claude", "--gate"],
        [sys.executable, "-m", "annotate.cli", "setup", "--agent", "claude", "--gate"],
    ):
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        mcp = json.loads((project / ".mcp.json").read_text())
        assert mcp["mcpServers"]["mkdocs-annotate"]["command"] == annotate_path
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        assert settings["hooks"]["Stop"] == [{"hooks": [hook(shlex.quote(annotate_path))]}]
    assert agent_setup.server_command() == annotate_path  # pytest runs from the same environment


def test_run_in_a_subfolder_writes_into_the_project(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd docs && annotate setup`: the project is found upwards (annotate/project.py), so the
    files go beside mkdocs.yml and nothing is written into docs_dir."""
    monkeypatch.chdir(project / "docs")
    done = CliRunner().invoke(cli, ["setup", "--agent", "claude", "--gate", "--command", "x"])
    assert done.exit_code == 0, done.output
    assert [line.split(":")[0] for line in done.output.splitlines()] == [
        f"wrote {project}/.gitignore",
        f"wrote {project}/.mcp.json",
        f"wrote {project}/.claude/skills/mkdocs-annotate/SKILL.md",
        f"wrote {project}/.claude/settings.json",
    ]
    assert [p.name for p in (project / "docs").iterdir()] == ["index.md"]
    assert (project / ".annotate" / "config.json").is_file()


# -- issue #27 item 1: hosts that start servers in their own folder, and render the view ---------


def test_a_host_started_elsewhere_finds_the_project(project: Path, home: Path) -> None:
    """MCPJam and Claude Desktop start a server in their own folder: the entry setup writes must
    still reach the project's notes (no "No documentation project")."""
    import anyio
    from mcp import Client, StdioServerParameters

    import annotate

    store = annotate.open(project)
    store.add_page_note({"pageUrl": "/", "note": "Say hello."})
    store.close()
    annotate_path = str(Path(sys.executable).parent / "annotate")
    agent_setup.install(project, ["claude"], command=annotate_path)
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["mkdocs-annotate"]
    elsewhere = home / "host-folder"
    elsewhere.mkdir()

    async def notes() -> str:
        params = StdioServerParameters(
            command=entry["command"], args=entry["args"], cwd=str(elsewhere)
        )
        async with Client(params, read_timeout_seconds=30) as client:
            result = await client.call_tool("list_page_notes", {})
        assert not result.is_error, result
        return str(result.content[0].text)

    assert json.loads(anyio.run(notes))[0]["note"] == "Say hello."


def test_hosts_that_render_the_view(project: Path, home: Path) -> None:
    root = str(project.resolve())
    args = ["mcp", "--project", root]
    # A user's own server in each host's file, to be kept.
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps(USER_MCP, indent=2) + "\n")
    before = snapshot(home)

    actions = agent_setup.install(project, ["claude-desktop", "vscode", "cursor"], command="a")
    assert {(a.verb, str(a.path)) for a in actions} == {
        ("wrote", str(project / ".gitignore")),
        ("wrote", str(desktop)),
        ("wrote", str(project / ".vscode" / "mcp.json")),
        ("wrote", str(project / ".cursor" / "mcp.json")),
    }
    # Claude Desktop has the user's file only: one entry per project, named after its folder.
    data = json.loads(desktop.read_text())
    assert data["mcpServers"]["docs-search"] == USER_MCP["mcpServers"]["docs-search"]
    assert data["mcpServers"]["mkdocs-annotate-project"] == {"command": "a", "args": args}
    assert json.loads((project / ".vscode" / "mcp.json").read_text()) == {
        "servers": {"mkdocs-annotate": {"type": "stdio", "command": "a", "args": args}}
    }
    assert json.loads((project / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"mkdocs-annotate": {"command": "a", "args": args}}
    }
    # In the user's home: VS Code's profile and Cursor's folder.
    agent_setup.install(project, ["vscode", "cursor"], "user", command="a")
    user_vscode = json.loads((home / ".config" / "Code" / "User" / "mcp.json").read_text())
    assert user_vscode["servers"]["mkdocs-annotate-project"]["args"] == args
    user_cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    assert user_cursor["mcpServers"]["mkdocs-annotate-project"]["args"] == args
    # Goose's YAML is printed, not rewritten.
    [goose] = agent_setup.install(project, ["goose"], command="a")[1:]
    assert goose.verb == "print" and goose.path == home / ".config" / "goose" / "config.yaml"
    assert f'    cmd: "a"\n    args: ["mcp", "--project", "{root}"]\n' in goose.what
    assert not goose.path.exists()

    agent_setup.uninstall(project)
    assert snapshot(home) == before
    assert not (project / ".vscode").exists() and not (project / ".cursor").exists()
    assert not (project / ".gitignore").exists()


def test_a_terminal_agents_home_entry_names_no_project(project: Path, home: Path) -> None:
    """`--scope user` serves whichever project the agent is started in."""
    agent_setup.install(project, ["claude"], "user", command="a")
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["mkdocs-annotate"]
    assert entry == {"command": "a", "args": ["mcp"]}


def test_cli_hosts(project: Path, home: Path) -> None:
    runner = CliRunner()
    base = ["setup", "--project", str(project), "--command", "a"]
    done = runner.invoke(cli, [*base, "--agent", "goose"])
    assert done.exit_code == 0, done.output
    assert "add under `extensions:`" in done.output and "type: stdio" in done.output
    done = runner.invoke(cli, [*base, "--agent", "vscode"])
    assert done.exit_code == 0 and (project / ".vscode" / "mcp.json").is_file()
    done = runner.invoke(cli, [*base, "--uninstall"])
    assert done.exit_code == 0 and not (project / ".vscode").exists()
