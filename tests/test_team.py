"""Team mode in-process (docs/team.md): people instead of the project token, who wrote what, what
each role may do, the sign-in page and its cookie. Every refusal is checked with its exact JSON
and with nothing stored. The peer addresses that matter are played for real in
tests/test_team_server.py.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import annotate
from annotate.cli import cli
from annotate.errors import Forbidden, ValidationError
from annotate.identity import Person
from annotate.tokens import read_token
from annotate.web import create_app
from annotate.web.team import Settings
from annotate.web.team import app as team_factory

from .conftest import text_note, write_project

API = "/__annotate/api"
BASE = "http://127.0.0.1:8000"
HEADER = "X-Forwarded-Email"
PAGE = "<!doctype html><html><body><p>Run pip install mkdocs-annotate in a shell.</p></body></html>"
UNAUTHORIZED = {
    "error": "Sign in: send a personal token as 'Authorization: Bearer TOKEN', or sign in at "
    "/__annotate/signin",
    "code": "unauthorized",
}
REVOKED = {"error": "Unknown or revoked token", "code": "unauthorized"}


class Team:
    """A project with a built site, a store with four people's tokens, and the team app."""

    def __init__(self, root: Path, settings: Settings) -> None:
        (root / "project").mkdir()
        self.project = write_project(root / "project", "# Install\n\nRun pip install it.\n")
        self.site = root / "site"
        (self.site / "guide" / "install").mkdir(parents=True)
        (self.site / "guide" / "install" / "index.html").write_text(PAGE)
        self.store = annotate.open(self.project)
        self.tokens = {
            "ada": self.store.add_token("ada", "reviewer"),
            "bob": self.store.add_token("bob", "reviewer"),
            "max": self.store.add_token("max", "maintainer"),
            "bot": self.store.add_token("bot", "agent"),
        }
        self.app = create_app(self.store, site_dir=self.site, team=settings)

    def client(
        self, who: str | None = None, headers: dict[str, str] | None = None, base_url: str = BASE
    ) -> TestClient:
        sent = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return TestClient(self.app, base_url=base_url, headers=sent | (headers or {}))

    def counts(self) -> tuple[int, int, int]:
        """Notes, replies and change rows: what a refused request must not have added to."""
        conn = self.store.conn
        return tuple(  # type: ignore[return-value]
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("annotations", "replies", "changes")
        )


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    made = Team(tmp_path, Settings(identity_header=HEADER, maintainers=("lead@example.com",)))
    yield made
    made.store.close()


def _note(team: Team, who: str, **overrides: Any) -> dict[str, Any]:
    r = team.client(who).post(f"{API}/annotations", json=text_note(**overrides))
    assert r.status_code == 201, r.text
    return r.json()


# -- identity -----------------------------------------------------------------------------------


def test_no_identity_is_401_and_nothing_is_stored(team: Team) -> None:
    before = team.counts()
    with team.client() as c:
        for method, path, body in (
            ("GET", f"{API}/annotations", None),
            ("POST", f"{API}/annotations", text_note()),
            ("GET", f"{API}/changes?since=0", None),
            ("GET", f"{API}/no-such-route", None),  # who asks comes before what exists
        ):
            r = c.request(method, path, json=body)
            assert (r.status_code, r.json()) == (401, UNAUTHORIZED), path
    assert team.counts() == before


def test_the_project_token_is_not_used(team: Team) -> None:
    token = read_token(team.project)
    with team.client(headers={"X-Annotate-Token": token}) as c:
        r = c.post(f"{API}/annotations", json=text_note())
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_a_bearer_token_names_the_author_whatever_the_body_says(team: Team) -> None:
    note = _note(team, "ada", author="someone else")
    assert note["author"] == "ada"
    with team.client("bot") as c:
        r = c.post(f"{API}/annotations/{note['id']}/replies", json={"message": "On it.", "role": "reviewer", "author": "ada"})  # fmt: skip
    assert r.status_code == 201
    assert r.json()["replies"][-1] | {"id": "", "createdAt": ""} == {
        "id": "",
        "role": "agent",
        "author": "bot",
        "message": "On it.",
        "createdAt": "",
    }


def test_a_revoked_token_is_refused_at_once(team: Team) -> None:
    with team.client("ada") as c:
        assert c.get(f"{API}/annotations").status_code == 200
        team.store.revoke_token("ada")
        before = team.counts()
        r = c.post(f"{API}/annotations", json=text_note())
    assert (r.status_code, r.json()) == (401, REVOKED)
    assert team.counts() == before


def test_a_malformed_authorization_is_refused(team: Team) -> None:
    with team.client(headers={"Authorization": f"Basic {team.tokens['ada']}"}) as c:
        r = c.get(f"{API}/annotations")
    assert (r.status_code, r.json()) == (
        401,
        {"error": "Authorization must be 'Bearer' and a personal token", "code": "unauthorized"},
    )


def test_a_spoofed_identity_header_is_403_even_beside_a_token(team: Team) -> None:
    # The test client's peer is no IP address: never a trusted proxy.
    before = team.counts()
    with team.client("ada", headers={HEADER: "lead@example.com"}) as c:
        r = c.post(f"{API}/annotations", json=text_note())
        page = c.get("/guide/install/", follow_redirects=False)
    expected = {
        "error": f"The {HEADER} header is only accepted from a trusted proxy (--trusted-proxy); "
        "this request came from testclient",
        "code": "forbidden",
    }
    assert (r.status_code, r.json()) == (403, expected)
    assert (page.status_code, page.json()) == (403, expected)
    assert team.counts() == before


def test_the_header_from_a_trusted_peer_names_the_person(team: Team) -> None:
    with TestClient(team.app, base_url=BASE, client=("127.0.0.1", 40000)) as c:
        r = c.post(f"{API}/annotations", json=text_note(), headers={HEADER: "lin@example.com"})
        assert r.status_code == 201 and r.json()["author"] == "lin@example.com"
        id = r.json()["id"]
        # A header identity is a reviewer unless named by --maintainer.
        r = c.patch(f"{API}/annotations/{id}", json={"note": "x"}, headers={HEADER: "eve@x.org"})
        assert r.status_code == 403
        r = c.patch(
            f"{API}/annotations/{id}", json={"note": "Lead's word."}, headers={HEADER: "lead@example.com"}
        )  # fmt: skip
        assert r.status_code == 200 and r.json()["note"] == "Lead's word."


# -- roles --------------------------------------------------------------------------------------


def test_a_reviewer_edits_and_deletes_only_their_own_notes(team: Team) -> None:
    note = _note(team, "ada")
    id = note["id"]
    before = team.counts()
    with team.client("bob") as c:
        edit = c.patch(f"{API}/annotations/{id}", json={"note": "Bob was here."})
        delete = c.delete(f"{API}/annotations/{id}")
    message = f'Cannot edit annotation "{id}": it was written by ada; only its author or a maintainer can'  # fmt: skip
    assert (edit.status_code, edit.json()) == (403, {"error": message, "code": "forbidden"})
    assert (delete.status_code, delete.json()) == (
        403,
        {"error": message.replace("edit", "delete"), "code": "forbidden"},
    )
    assert team.counts() == before
    assert team.store.get_annotation(id).note == note["note"]
    with team.client("ada") as c:
        assert c.patch(f"{API}/annotations/{id}", json={"note": "Mine."}).status_code == 200


def test_a_maintainer_edits_and_deletes_any_note(team: Team) -> None:
    id = _note(team, "ada")["id"]
    with team.client("max") as c:
        assert c.patch(f"{API}/annotations/{id}", json={"note": "Tidied."}).json()["note"] == "Tidied."  # fmt: skip
        assert c.delete(f"{API}/annotations/{id}").status_code == 204


def test_page_notes_follow_the_same_rule(team: Team) -> None:
    with team.client("ada") as c:
        note = c.post(f"{API}/page-notes", json={"pageUrl": "/guide/install/", "note": "Long."})
    id = note.json()["id"]
    assert note.json()["author"] == "ada"
    with team.client("bob") as c:
        r = c.patch(f"{API}/page-notes/{id}", json={"note": "Short."})
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert team.store.get_page_note(id).note == "Long."


def test_an_agent_cannot_accept(team: Team) -> None:
    id = _note(team, "ada")["id"]
    with team.client("bot") as c:
        assert c.post(f"{API}/annotations/{id}/status", json={"action": "address", "message": "Done."}).status_code == 200  # fmt: skip
        before = team.counts()
        r = c.post(f"{API}/annotations/{id}/status", json={"action": "accept"})
    assert (r.status_code, r.json()) == (
        403,
        {
            "error": f'Agents cannot accept annotation "{id}": a reviewer or a maintainer accepts '
            "the work",
            "code": "forbidden",
        },
    )
    assert team.counts() == before
    assert team.store.get_annotation(id).status == "addressed"
    # The library refuses it the same way, for the MCP tools.
    with pytest.raises(Forbidden):
        team.store.accept(id, by=Person("bot", "agent"))


def test_every_change_records_who_made_it(team: Team) -> None:
    id = _note(team, "ada")["id"]
    with team.client("bot") as c:
        c.post(f"{API}/annotations/{id}/status", json={"action": "start"})
        c.post(f"{API}/annotations/{id}/status", json={"action": "address", "message": "Done."})
    with team.client("bob") as c:
        c.post(f"{API}/annotations/{id}/status", json={"action": "reopen", "note": "Not quite."})
        c.post(f"{API}/reviews", json={"mode": "edit", "message": "Look.", "author": "nobody"})
    with team.client("max") as c:
        c.post(f"{API}/annotations/{id}/status", json={"action": "accept"})
    rows = team.store.conn.execute(
        "SELECT kind, action, author FROM changes WHERE item_id = ? OR kind = 'review' ORDER BY seq",
        (id,),
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("annotation", "created", "ada"),
        ("annotation", "in_progress", "bot"),
        ("annotation", "addressed", "bot"),
        ("review", "created", "bob"),  # the reopen's follow-up goes back to the agent
        ("annotation", "reopened", "bob"),
        ("review", "created", "bob"),
        ("annotation", "resolved", "max"),
        ("review", "done", None),  # follows from the last note's change: nobody's own act
    ]
    item = team.store.get_annotation(id)
    assert [(r.role, r.author) for r in item.replies] == [("agent", "bot"), ("reviewer", "bob")]
    assert {r.author for r in team.store.list_reviews()} == {"bob"}
    # The feed keeps its shape: no author in it.
    events, _ = team.store.changes(0)
    assert set(events[0]) == {"seq", "at", "kind", "id", "action", "pageUrl"}


# -- pages and the sign-in cookie ---------------------------------------------------------------


def test_a_page_without_identity_goes_to_the_sign_in_page(team: Team) -> None:
    with team.client() as c:
        r = c.get("/guide/install/?x=1", follow_redirects=False)
        assert r.status_code == 303
        assert r.headers["location"] == "/__annotate/signin?next=/guide/install/%3Fx%3D1"
        for public in ("/__annotate/health", "/__annotate/openapi.json", "/__annotate/signin"):
            assert c.get(public).status_code == 200, public
        assert c.get("/__annotate/overlay/annotate.js").status_code == 200


def test_a_page_carries_the_person_never_a_token(team: Team) -> None:
    with team.client("ada") as c:
        html = c.get("/guide/install/").text
    assert '"person":{"name":"ada","role":"reviewer"}' in html
    assert '"token":""' in html
    assert team.tokens["ada"] not in html


def _sign_in(c: TestClient, token: str, origin: str | None = BASE, **extra: str) -> Any:
    headers = {"Origin": origin} if origin else {}
    return c.post(
        "/__annotate/signin",
        data={"token": token, "next": "/guide/install/", **extra},
        headers=headers,
        follow_redirects=False,
    )


def test_signing_in_sets_an_httponly_strict_cookie(team: Team) -> None:
    with team.client() as c:
        r = _sign_in(c, team.tokens["ada"])
        assert r.status_code == 303 and r.headers["location"] == "/guide/install/"
        assert team.tokens["ada"] not in r.headers["location"]
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"annotate={team.tokens['ada']};")
        flags = {f.strip().lower() for f in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= flags
        assert "secure" not in flags  # served over http: a Secure cookie would never come back
        # The browser now carries it: the API and the pages know who it is.
        assert c.post(f"{API}/annotations", json=text_note()).json()["author"] == "ada"
        assert c.get("/guide/install/", follow_redirects=False).status_code == 200
        # From another site, the cookie does not help (SameSite aside, the Origin is checked).
        r = c.post(
            f"{API}/annotations", json=text_note(), headers={"Origin": "https://evil.example"}
        )
        assert r.status_code == 403 and r.json()["code"] == "forbidden_origin"
        # Signing out forgets it.
        r = c.post("/__annotate/signout", headers={"Origin": BASE}, follow_redirects=False)
        assert r.status_code == 303 and "annotate=" in r.headers["set-cookie"]
        assert c.get(f"{API}/annotations").status_code == 401


def test_over_https_the_cookie_is_secure_and_host_bound(tmp_path: Path) -> None:
    team = Team(tmp_path, Settings(public_url="https://review.example.com"))
    origin = "https://review.example.com"
    with TestClient(team.app, base_url=origin) as c:
        r = _sign_in(c, team.tokens["ada"], origin)
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("__Host-annotate=")
        flags = {f.strip().lower() for f in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/", "secure"} <= flags
        assert "domain" not in cookie.lower()
    team.store.close()


def test_the_public_url_is_an_accepted_host_and_origin(tmp_path: Path) -> None:
    team = Team(tmp_path, Settings(public_url="https://review.example.com"))
    # TLS ends at the proxy: the app sees http, the browser's Origin says https.
    with team.client("ada", base_url="http://review.example.com") as c:
        r = c.post(f"{API}/annotations", json=text_note(), headers={"Origin": "https://review.example.com"})  # fmt: skip
        assert r.status_code == 201
        r = c.get(f"{API}/annotations", headers={"Host": "elsewhere.example.com"})
        assert r.status_code == 403 and r.json()["code"] == "forbidden_host"
    team.store.close()


def test_sign_in_refusals_set_no_cookie(team: Team) -> None:
    with team.client() as c:
        bad = _sign_in(c, "ann_not-a-token")
        assert bad.status_code == 401 and "set-cookie" not in bad.headers
        assert "unknown or was revoked" in bad.text and "ann_not-a-token" not in bad.text
        no_origin = _sign_in(c, team.tokens["ada"], origin=None)
        assert (no_origin.status_code, no_origin.json()) == (
            403,
            {
                "error": "Sign-in forms must carry an Origin header (send it from a page)",
                "code": "forbidden_origin",
            },
        )
        assert "set-cookie" not in no_origin.headers
        foreign = _sign_in(c, team.tokens["ada"], origin="https://evil.example")
        assert foreign.status_code == 403 and "set-cookie" not in foreign.headers
        team.store.revoke_token("bob")
        revoked = _sign_in(c, team.tokens["bob"])
        assert revoked.status_code == 401 and "set-cookie" not in revoked.headers


def test_sign_in_goes_back_only_to_this_server(team: Team) -> None:
    with team.client() as c:
        for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
            r = _sign_in(c, team.tokens["ada"], next=target)
            assert r.headers["location"] == "/", target


def test_names_are_text_on_the_sign_in_page(team: Team) -> None:
    token = team.store.add_token('<img src=x onerror="alert(1)">', "reviewer")
    with team.client() as c:
        page = c.get("/__annotate/signin", headers={"Authorization": f"Bearer {token}"}).text
        assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
        html = c.get("/guide/install/", headers={"Authorization": f"Bearer {token}"}).text
        assert "<img src" not in html  # the overlay's JSON block escapes every <


def test_tokens_never_reach_the_logs(team: Team, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with team.client() as c:
        _sign_in(c, team.tokens["ada"])
        c.post(f"{API}/annotations", json=text_note())
        c.get(f"{API}/annotations", headers={"Authorization": f"Bearer {team.tokens['bob']}x"})
    team.store.revoke_token("ada")
    assert caplog.records  # httpx logs every request it makes
    for token in team.tokens.values():
        assert token not in caplog.text


# -- the store's tokens, the CLI, starting ------------------------------------------------------


def test_tokens_are_stored_as_their_hash(team: Team) -> None:
    rows = team.store.conn.execute("SELECT name, token_hash FROM tokens").fetchall()
    hashes = {r[0]: r[1] for r in rows}
    for name, token in team.tokens.items():
        assert token.startswith("ann_") and len(token) >= 40
        assert hashes[name] == hashlib.sha256(token.encode()).hexdigest()
    dump = "\n".join(team.store.conn.iterdump())
    assert not any(token in dump for token in team.tokens.values())
    assert team.store.person_for_token(team.tokens["max"]) == Person("max", "maintainer")
    assert team.store.person_for_token("ann_" + "x" * 43) is None


def test_token_names_and_roles_are_checked(team: Team) -> None:
    with pytest.raises(ValidationError, match="'ada' already has a token; revoke it first"):
        team.store.add_token("ada")
    with pytest.raises(ValidationError, match="role must be one of reviewer, agent, maintainer"):
        team.store.add_token("zed", "admin")
    with pytest.raises(ValidationError, match="'zed' has no live token"):
        team.store.revoke_token("zed")
    with pytest.raises(ValidationError, match="name must not hold control characters"):
        team.store.add_token("a\x1b[2Jb")
    team.store.revoke_token("ada")
    fresh = team.store.add_token("ada", "maintainer")  # a revoked name gets a new token
    assert team.store.person_for_token(team.tokens["ada"]) is None
    assert team.store.person_for_token(fresh) == Person("ada", "maintainer")


def test_token_commands(tmp_path: Path) -> None:
    project = str(write_project(tmp_path, "# Install\n"))
    runner = CliRunner()
    added = runner.invoke(cli, ["token", "add", "ada@example.com", "--role", "agent", "--project", project])  # fmt: skip
    assert added.exit_code == 0, added.output
    secret, note = added.output.splitlines()
    assert secret.startswith("ann_")
    assert note == "(the token of ada@example.com, agent: shown once, keep it secret)"
    listed = runner.invoke(cli, ["token", "list", "--project", project])
    assert listed.output.startswith("ada@example.com  agent  since ")
    assert secret not in listed.output
    again = runner.invoke(cli, ["token", "add", "ada@example.com", "--project", project])
    assert (again.exit_code, again.output) == (
        1,
        "Error: 'ada@example.com' already has a token; revoke it first (annotate token revoke)\n",
    )
    revoked = runner.invoke(cli, ["token", "revoke", "ada@example.com", "--project", project])
    assert revoked.output == "Revoked the token of ada@example.com.\n"
    listed = runner.invoke(cli, ["token", "list", "--json", "--project", project])
    assert '"revokedAt": "' in listed.output
    # `annotate token` still prints the project token (single-user mode).
    plain = runner.invoke(cli, ["token", "--project", project])
    assert plain.exit_code == 0 and not plain.output.startswith("ann_")


def test_serve_refuses_an_exposed_team_server_without_identity(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    project = write_project(tmp_path / "p", "# Install\n")
    (tmp_path / "site").mkdir()
    argv = ["serve", str(tmp_path / "site"), "--team", "--host", "0.0.0.0", "--port", "0"]
    r = CliRunner().invoke(cli, [*argv, "--project", str(project)])
    assert (r.exit_code, r.output) == (
        1,
        "Error: Team mode needs an identity source before other machines can reach it: an SSO "
        "proxy's header (--identity-header / ANNOTATE_IDENTITY_HEADER) or a personal token "
        "(annotate token add NAME); or listen on 127.0.0.1\n",
    )
    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "site"), "--maintainer", "x"])
    assert r.exit_code == 1 and "apply in team mode" in r.output
    r = CliRunner().invoke(cli, [*argv, "--identity-header", HEADER, "--trusted-proxy", "nope"])
    assert r.exit_code == 1 and "--trusted-proxy 'nope' is not an IP address" in r.output


def test_the_factory_needs_a_site_and_an_identity_source(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    project = write_project(tmp_path / "p", "# Install\n")
    (tmp_path / "site").mkdir()
    env = {"ANNOTATE_SITE_DIR": str(tmp_path / "site"), "ANNOTATE_PROJECT": str(project)}
    with pytest.raises(SystemExit, match=r"^Error: Team mode needs an identity source"):
        team_factory(env)
    with pytest.raises(SystemExit, match=r"^Error: ANNOTATE_SITE_DIR must name"):
        team_factory({**env, "ANNOTATE_SITE_DIR": str(tmp_path / "none")})
    with annotate.open(project) as store:
        store.add_token("ada")
    app = team_factory(env)
    with TestClient(app, base_url=BASE) as c:
        assert c.get(f"{API}/annotations").status_code == 401
