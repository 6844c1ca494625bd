"""Docs that cannot rot: every command, option and public name is documented."""

from __future__ import annotations

import inspect
from pathlib import Path

import click
import pytest

import annotate
from annotate.cli import cli

DOCS = Path(__file__).parent.parent / "docs"
CLI_DOC = (DOCS / "cli.md").read_text()
LIBRARY_DOC = (DOCS / "library.md").read_text()


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_command_documented(name: str) -> None:
    assert f"\n## {name}\n" in CLI_DOC, f"docs/cli.md has no section for `annotate {name}`"


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (name, opt)
        for name, cmd in sorted(cli.commands.items())
        for param in cmd.params
        if isinstance(param, click.Option)
        for opt in param.opts + param.secondary_opts
        if opt not in ("-h", "--help")
    ],
)
def test_option_documented(command: str, option: str) -> None:
    assert f"`{option}" in CLI_DOC or f" {option}" in CLI_DOC, f"{command} {option} is undocumented"


@pytest.mark.parametrize("name", annotate.__all__)
def test_public_name_documented(name: str) -> None:
    assert f"`{name}" in LIBRARY_DOC or f"annotate.{name}" in LIBRARY_DOC, name


@pytest.mark.parametrize(
    "method",
    [n for n, _ in inspect.getmembers(annotate.Store, inspect.isfunction) if not n.startswith("_")
     and n not in ("close", "insert_raw")],
)  # fmt: skip
def test_store_method_documented(method: str) -> None:
    assert f"`{method}(" in LIBRARY_DOC, f"Store.{method} is undocumented"


def test_docs_site_lists_every_page() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert page.name in nav, page.name
