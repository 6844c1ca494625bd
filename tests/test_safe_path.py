"""`pages.safe_path` (issue #31 made it cheaper): the same answer as resolving `project / path`
with every symlink followed and refusing what leaves the project, for paths through plain
folders, symlinks in and out, loops, missing parts and files taken for folders; and the project
folder's remembered real path follows the folder when another takes its name.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from annotate.pages import safe_path


def resolved(project: Path, relative: str) -> Path | None:
    """What `safe_path` answers, by its definition: `Path.resolve()` of the whole path."""
    if not relative or "\0" in relative or "\\" in relative:
        return None
    parts = PurePosixPath(relative)
    if parts.is_absolute() or PureWindowsPath(relative).anchor or ".." in parts.parts:
        return None
    try:
        root = project.resolve()
        full = (root / parts).resolve()
    except (OSError, RuntimeError):
        return None
    if full == root or not full.is_relative_to(root):
        return None
    return full


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project reached through a symlinked folder, with links of every kind inside."""
    real = tmp_path / "real" / "project"
    (real / "docs" / "guide").mkdir(parents=True)
    (real / "docs" / "guide" / "install.md").write_text("# Install\n")
    (real / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("secret\n")
    docs = real / "docs"
    (docs / "in.md").symlink_to("guide/install.md")
    (docs / "in-dir").symlink_to("guide")
    (docs / "out.md").symlink_to(tmp_path / "outside" / "secret.md")
    (docs / "out-dir").symlink_to(tmp_path / "outside")
    (docs / "up").symlink_to("..")
    (docs / "loop").symlink_to("loop")
    (docs / "dangling.md").symlink_to("nowhere.md")
    (real / "self").symlink_to(".")
    (tmp_path / "via").symlink_to(tmp_path / "real")
    return tmp_path / "via" / "project"


PATHS = [
    "docs/index.md", "docs/guide/install.md", "./docs//guide/./install.md", "docs/guide/",
    "docs/missing.md", "docs/missing/deeper.md", "docs/index.md/under-a-file.md",
    "docs/in.md", "docs/in-dir/install.md", "docs/out.md", "docs/out-dir/secret.md",
    "docs/up/docs/index.md", "docs/up/../outside/secret.md", "docs/loop", "docs/loop/x.md",
    "docs/dangling.md", "self/docs/index.md", "self", ".", "./", "", "/etc/passwd",
    "../outside/secret.md", "docs/../../outside/secret.md", "C:docs/index.md", "c:/x.md",
    "a:b.md", ":colon.md", "docs\\index.md", "docs/\0.md",
]  # fmt: skip


@pytest.mark.parametrize("relative", PATHS)
def test_the_answer_is_resolves(tree: Path, relative: str) -> None:
    assert safe_path(tree, relative) == resolved(tree, relative)


def test_links_out_and_loops_are_refused(tree: Path) -> None:
    for relative in ("docs/out.md", "docs/out-dir/secret.md", "docs/loop/x.md", "self"):
        assert safe_path(tree, relative) is None, relative
    assert safe_path(tree, "docs/in.md") == tree.resolve() / "docs" / "guide" / "install.md"


def test_a_link_made_after_the_first_call_is_followed(tree: Path) -> None:
    page = tree / "docs" / "index.md"
    assert safe_path(tree, "docs/index.md") == page.resolve()
    page.unlink()
    page.symlink_to(tree.parent.parent / "outside" / "secret.md")
    assert safe_path(tree, "docs/index.md") is None


def test_another_folder_under_the_projects_name_is_resolved_again(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name / "docs").mkdir(parents=True)
        (tmp_path / name / "docs" / "index.md").write_text(f"# {name}\n")
    project = tmp_path / "project"
    project.symlink_to(tmp_path / "one")
    assert safe_path(project, "docs/index.md") == tmp_path / "one" / "docs" / "index.md"
    project.unlink()
    project.symlink_to(tmp_path / "two")
    assert safe_path(project, "docs/index.md") == tmp_path / "two" / "docs" / "index.md"
    os.rename(tmp_path / "two", tmp_path / "moved")
    assert safe_path(project, "docs/index.md") is None  # the link now leads nowhere
