"""The per-project token: created 0600, printed and rotated by `annotate token`, re-read live."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate import tokens
from annotate.cli import cli
from annotate.store import Store
from annotate.web import create_app


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_created_once_with_0600(tmp_path: Path) -> None:
    token = tokens.read_token(tmp_path)
    path = tmp_path / ".annotate" / "token"
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert (path.parent / ".gitignore").read_text().endswith("*\n")
    assert len(token) >= 40 and token.isascii()
    assert tokens.read_token(tmp_path) == token


def test_umask_cannot_widen_it(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        tokens.read_token(tmp_path)
    finally:
        os.umask(old)
    assert mode(tmp_path / ".annotate" / "token") == 0o600


def test_loose_permissions_are_tightened(tmp_path: Path) -> None:
    token = tokens.read_token(tmp_path)
    path = tokens.token_path(tmp_path)
    path.chmod(0o644)
    assert tokens.read_token(tmp_path) == token
    assert mode(path) == 0o600


def test_rotate(tmp_path: Path) -> None:
    old = tokens.read_token(tmp_path)
    new = tokens.rotate_token(tmp_path)
    assert new != old
    assert tokens.read_token(tmp_path) == new
    assert mode(tokens.token_path(tmp_path)) == 0o600
    assert [p.name for p in (tmp_path / ".annotate").iterdir() if p.name.endswith(".tmp")] == []


def test_bad_token_file(tmp_path: Path) -> None:
    tokens.read_token(tmp_path)
    tokens.token_path(tmp_path).write_text("short\n")
    with pytest.raises(annotate.ValidationError, match="annotate token --rotate"):
        tokens.read_token(tmp_path)


def test_running_server_follows_rotation(store: Store) -> None:
    source = tokens.TokenFile(store.project_dir)
    client = TestClient(create_app(store, token=source), base_url="http://127.0.0.1:8000")
    old = source()
    assert (
        client.get("/__annotate/api/summary", headers={"X-Annotate-Token": old}).status_code == 200
    )
    new = tokens.rotate_token(store.project_dir)
    assert (
        client.get("/__annotate/api/summary", headers={"X-Annotate-Token": old}).status_code == 401
    )
    assert (
        client.get("/__annotate/api/summary", headers={"X-Annotate-Token": new}).status_code == 200
    )


def test_cli_token(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["token", "--project", str(tmp_path)])
    assert first.exit_code == 0
    assert first.output == tokens.read_token(tmp_path) + "\n"
    again = runner.invoke(cli, ["token", "--project", str(tmp_path)])
    assert again.output == first.output
    rotated = runner.invoke(cli, ["token", "--rotate", "--project", str(tmp_path)])
    assert rotated.exit_code == 0
    assert rotated.output != first.output
    assert rotated.output == tokens.read_token(tmp_path) + "\n"


def test_cli_token_missing_project(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["token", "--project", str(tmp_path / "nope")])
    assert r.exit_code == 1
    assert r.output == f"Error: Project folder {str(tmp_path / 'nope')!r} does not exist\n"


def test_a_token_written_while_it_is_read_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    current = tokens.TokenFile(tmp_path)
    old = current()
    path = tokens.token_path(tmp_path)
    new = "n" * 50  # another size than the file read: a change the next stat sees for sure
    read = tokens._read

    def read_mid_write(p: Path) -> str:
        # Another process rewrites the file in place: this read sees it empty, and the write
        # ends before the reader looks at the file again.
        path.write_text("")
        try:
            return read(p)
        finally:
            path.write_text(new + "\n")

    monkeypatch.setattr(tokens, "_read", read_mid_write)
    path.write_text("x" * 43 + "\n")  # the rotation begins
    assert current() == old  # nothing valid read yet: the old token stays
    monkeypatch.setattr(tokens, "_read", read)
    assert current() == new
