"""Generated text points at the directive that produced it (issue #13, class 6).

A real `mkdocs build` with mkdocstrings and the plugin renders a package written here; notes on
its docstrings get the lines of their `:::` directive and the documented object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import annotate
from annotate.context import get_context
from annotate.generated import directives, locate_generated

PACKAGE = '''\
"""Gadget helpers: everything a widget needs to spin."""


class Widget:
    """A widget that frobnicates gadgets on demand."""

    def spin(self, times: int) -> int:
        """Spin the widget a number of times and return the revolutions counted."""
        return times


def helper() -> None:
    """Helper that nobody calls but everybody documents."""
'''

OTHER = '''\
"""The other module keeps the registry of every gadget ever made."""
'''

API = """\
# API

The classes first, then the helpers.

::: pkg.mod.Widget

## Helpers

::: pkg.mod.helper
    options:
      show_root_heading: true

## Registry

::: pkg.other

```markdown
::: pkg.example.NotADirective
```
"""

MKDOCS_YML = """\
site_name: Generated
plugins:
  - annotate:
      build: true
  - mkdocstrings:
      handlers:
        python:
          paths: [src]
"""


def line_of(source: str, needle: str) -> int:
    found = [n for n, line in enumerate(source.split("\n"), 1) if needle in line]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("generated")
    (root / "mkdocs.yml").write_text(MKDOCS_YML)
    (root / "docs").mkdir()
    (root / "docs" / "api.md").write_text(API)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text('"""Gadgets."""\n')
    (root / "src" / "pkg" / "mod.py").write_text(PACKAGE)
    (root / "src" / "pkg" / "other.py").write_text(OTHER)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(root / "site")],
        cwd=root,
        check=True,
        env=env,
    )
    return root


def note(exact: str, prefix: str = "", suffix: str = "") -> dict[str, object]:
    return {
        "pageUrl": "/api/",
        "note": "Reword this.",
        "selectedText": exact,
        "quote": {"exact": exact, "prefix": prefix, "suffix": suffix},
    }


@pytest.mark.parametrize(
    ("quote", "directive", "obj"),
    [
        ("Spin the widget a number of times", "::: pkg.mod.Widget", "pkg.mod.Widget.spin"),
        ("frobnicates gadgets on demand", "::: pkg.mod.Widget", "pkg.mod.Widget"),
        ("nobody calls but everybody documents", "::: pkg.mod.helper", "pkg.mod.helper"),
        # mkdocstrings hides a module's own heading by default: only an anchor names it.
        ("keeps the registry of every gadget", "::: pkg.other", "pkg.other"),
    ],
)
def test_docstring_text_points_at_its_directive_and_object(
    project: Path, quote: str, directive: str, obj: str
) -> None:
    store = annotate.open(project)
    a = store.add_annotation(note(quote))
    assert a.source is not None
    line = line_of(API, directive)
    assert (a.source.path, a.source.line_start) == ("docs/api.md", line)
    assert a.source.kind == "generated" and a.source.object == obj
    assert a.anchor_state == "anchored"
    source = a.to_dict()["source"]
    assert (source["kind"], source["object"]) == ("generated", obj)
    # The listing SQLite writes (annotate/sqljson.py) says the same.
    listed = {x["id"]: x for x in json.loads(store.list_annotations(as_json=True))}
    assert listed[a.id]["source"] == source
    assert directive in source["excerpt"]
    context = get_context(store, a.id, lines=0)
    assert f"the docstring of {obj}" in (context.warning or "")


def test_a_directive_keeps_its_options_lines(project: Path) -> None:
    store = annotate.open(project)
    a = store.add_annotation(note("nobody calls but everybody documents"))
    first = line_of(API, "::: pkg.mod.helper")
    assert (a.source.line_start, a.source.line_end) == (first, first + 2)


def test_markdown_text_on_the_same_page_is_not_generated(project: Path) -> None:
    store = annotate.open(project)
    a = store.add_annotation(note("The classes first, then the helpers."))
    assert a.source.line_start == 3 and a.source.kind is None
    assert "kind" not in a.to_dict()["source"]


def test_lines_follow_edits_above_the_directive(tmp_path: Path, project: Path) -> None:
    store = annotate.open(project)
    a = store.add_annotation(note("Spin the widget a number of times"))
    page = project / "docs" / "api.md"
    before = page.stat().st_mtime
    page.write_text("Two new lines.\n\n" + API)
    os.utime(page, (before + 5, before + 5))
    try:
        got = store.get_annotation(a.id)
        assert got.source.line_start == line_of(API, "::: pkg.mod.Widget") + 2
        assert got.source.object == "pkg.mod.Widget.spin"
    finally:
        page.write_text(API)
        os.utime(page, (before + 10, before + 10))


def test_directives_in_fences_are_examples() -> None:
    found = [d.identifier for d in directives(API)]
    assert found == ["pkg.mod.Widget", "pkg.mod.helper", "pkg.other"]


CLI_PAGE = """\
# Command line

Every command takes these options.

::: mkdocs-click
    :module: tool.cli
    :command: cli

## Configuration

Set `TOOL_HOME` to change where settings live, as {{ config.site_name }} does.
"""


def test_text_from_other_generators_is_placed_by_its_context() -> None:
    # mkdocs-click output: the text shown before it comes from the Markdown above the directive.
    got = locate_generated(
        CLI_PAGE,
        "Show this message and exit.",
        prefix="Every command takes these options.\ncli [OPTIONS] COMMAND",
        suffix="\nConfiguration",
    )
    assert got is not None and (got.line_start, got.line_end) == (5, 7) and got.object is None
    # A macro: the text shown after it is in the Markdown just after.
    got = locate_generated(CLI_PAGE, "Generated", prefix="live, as ", suffix=" does.")
    assert got is not None and got.line_start == line_of(CLI_PAGE, "{{ config.site_name }}")


def test_no_directive_or_no_way_to_tell_gives_no_source() -> None:
    assert locate_generated("# Title\n\nPlain page.\n", "Made with Material for MkDocs") is None
    two = "# Two\n\n::: pkg.a\n\n::: pkg.b\n"
    assert locate_generated(two, "Some docstring text") is None


def test_a_deleted_paragraph_before_a_directive_goes_stale_not_generated(tmp_path: Path) -> None:
    page = "# Plugins\n\nThere is no sandbox.\n\nOnce a plugin is installed, it is ready to use.\n\n::: pkg.mod.Widget\n"
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    (tmp_path / "docs").mkdir()
    md = tmp_path / "docs" / "index.md"
    md.write_text(page)
    store = annotate.open(tmp_path)
    a = store.add_annotation(
        {
            "pageUrl": "/",
            "note": "Say where.",
            "selectedText": "Once a plugin is installed, it is ready to use.",
            "quote": {
                "exact": "Once a plugin is installed, it is ready to use.",
                "prefix": "There is no sandbox.\n",
                "suffix": "\nWidget",
            },
        }
    )
    assert a.source.line_start == 5 and a.source.kind is None
    before = md.stat().st_mtime
    md.write_text(page.replace("Once a plugin is installed, it is ready to use.\n\n", ""))
    os.utime(md, (before + 5, before + 5))
    got = store.get_annotation(a.id)
    assert got.anchor_state == "stale" and got.source.kind is None and got.source.last_known
