"""Team mode under attack (issue #32), on both backends: a proxy that appends the identity header,
non-ASCII names, a token revoked while its calls are open, the plain cookie beside `__Host-`, an
open redirect through the sign-in page, a NUL in any filter. Each refusal is checked with its
answer and with nothing stored."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.datastructures import Headers
from starlette.testclient import TestClient

import annotate
from annotate.errors import Unauthorized
from annotate.web import create_app
from annotate.web.security import Identify
from annotate.web.team import FORWARDED_WARNING, Settings
from annotate.web.team import app as team_factory

from .conftest import text_note, write_project

BACKENDS = ("sqlite", "postgresql")
API = "/__annotate/api"
BASE = "http://127.0.0.1:8000"
HEADER = "X-Forwarded-Email"
PROXY = ("127.0.0.1", 40000)  # a trusted peer (the default --trusted-proxy)


class Team:
    def __init__(self, root: Path, db_url: str | None, settings: Settings) -> None:
        (root / "project").mkdir()
        self.project = write_project(root / "project", "# Install\n\nRun pip install it.\n")
        self.site = root / "site"
        self.site.mkdir()
        (self.site / "index.html").write_text("<p>Run pip install it.</p>")
        self.store = annotate.open(self.project, db=db_url)
        self.tokens = {
            "ada": self.store.add_token("ada", "reviewer"),
            "bot": self.store.add_token("bot", "agent"),
            "max": self.store.add_token("max", "maintainer"),
        }
        self.app = create_app(
            self.store, site_dir=self.site, team=settings, changes_timeout=10, poll_interval=0.05
        )

    def client(self, who: str | None = None, **kwargs: Any) -> TestClient:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        kwargs.setdefault("base_url", BASE)
        return TestClient(self.app, headers=headers, **kwargs)

    def counts(self) -> tuple[int, ...]:
        conn = self.store.conn
        return tuple(
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("annotations", "page_notes", "replies", "changes")
        )


@pytest.fixture
def team(tmp_path: Path, db_url: str | None) -> Iterator[Team]:
    settings = Settings(identity_header=HEADER, maintainers=("jörg@example.com",))
    made = Team(tmp_path, db_url, settings)
    yield made
    made.store.close()


# -- item 5: the identity header ----------------------------------------------------------------


@pytest.mark.parametrize(
    "sent",
    [
        # HAProxy `add-header`, Apache `RequestHeader add`, Caddy `header_up +`: the client's
        # own value travels beside the proxy's, in either order.
        [(HEADER, "max@example.com"), (HEADER, "eve@example.com")],
        [(HEADER, "eve@example.com"), (HEADER, "jörg@example.com")],
        [(HEADER, "eve@example.com, jörg@example.com")],  # one line, values joined
    ],
)
def test_more_than_one_identity_is_refused_never_chosen(
    team: Team, sent: list[tuple[str, str]]
) -> None:
    note = team.store.add_annotation(text_note(), by=None)
    before = team.counts()
    headers = [(k, v.encode()) for k, v in sent]
    with team.client(client=PROXY) as c:
        for method, path, body in (
            ("POST", f"{API}/annotations", text_note()),
            ("DELETE", f"{API}/annotations/{note.id}", None),
            ("GET", f"{API}/annotations", None),
        ):
            r = c.request(method, path, json=body, headers=headers)
            # Before the fix: the first value named the caller (a maintainer deleted the note).
            assert (r.status_code, r.json()) == (
                401,
                {
                    "error": f"The {HEADER} header holds more than one value: the proxy must "
                    "replace it, not add to it",
                    "code": "unauthorized",
                },
            )
    assert team.counts() == before


def test_identity_names_are_utf8_and_match_maintainers(team: Team) -> None:
    with team.client(client=PROXY) as c:
        sent = {HEADER: "jörg@example.com".encode()}
        r = c.post(f"{API}/annotations", json=text_note(), headers=sent)
        # Before the fix: stored as 'jÃ¶rg@example.com', a reviewer.
        assert r.status_code == 201 and r.json()["author"] == "jörg@example.com"
        other = team.store.add_annotation(text_note(note="Someone else's."), by=None)
        r = c.delete(f"{API}/annotations/{other.id}", headers=sent)  # a maintainer may
        assert r.status_code == 204


def test_an_identity_header_that_is_not_utf8_is_refused() -> None:
    # The test client re-encodes header values: the raw bytes go to `Identify` itself.
    identify = Identify(lambda token: None, header=HEADER)
    raw = Headers(raw=[(HEADER.lower().encode(), b"j\xf6rg@example.com")])  # latin-1
    found = anyio.run(identify, {"type": "http", "client": PROXY}, raw)
    assert found == (401, "unauthorized", f"The {HEADER} header is not UTF-8")


# -- item 4: revocation reaches open calls ------------------------------------------------------


def test_a_revoked_agent_claims_no_review(team: Team) -> None:
    team.store.add_annotation(text_note(), by=None)
    review = team.store.create_review()
    team.store.revoke_token("bot")
    with pytest.raises(Unauthorized):
        team.store.claim_review(token=team.tokens["bot"])
    assert team.store.get_review(review.id).picked_up_at is None


def test_revoking_ends_an_open_wait_for_review(team: Team) -> None:
    # The agent waits; its token is revoked, then the reviewer sends a review.
    caught: list[BaseException] = []

    def wait() -> None:
        try:
            team.store.wait_for_review(30, poll_s=0.05, token=team.tokens["bot"])
        except BaseException as e:
            caught.append(e)

    waiting = threading.Thread(target=wait)
    waiting.start()
    team.store.revoke_token("bot")
    team.store.add_annotation(text_note(), by=None)
    review = team.store.create_review()
    waiting.join(timeout=30)
    # Before the fix: the revoked agent took the review and its notes.
    assert not waiting.is_alive() and [type(e) for e in caught] == [Unauthorized]
    assert team.store.get_review(review.id).picked_up_at is None
    assert team.store.claim_review(token=team.tokens["max"]) is not None  # a live one still can


def test_an_open_change_feed_poll_is_not_answered_after_revocation(team: Team) -> None:
    with team.client("ada") as c:
        cursor = c.get(f"{API}/changes").json()["cursor"]

        def revoke_then_write() -> None:
            team.store.revoke_token("ada")
            team.store.add_page_note({"pageUrl": "/", "note": "Written after the revocation."})

        # Answered more than a second after it was let in (RECHECK_AFTER_S).
        timer = threading.Timer(1.3, revoke_then_write)
        timer.start()
        r = c.get(f"{API}/changes", params={"since": cursor, "timeout": 10})
        timer.join()
        # Before the fix: 200 with the new note's event.
        assert (r.status_code, r.json()) == (
            401,
            {"error": "Unknown or revoked token", "code": "unauthorized"},
        )


# -- item 11: the cookie over https, item 10: the sign-in redirect ------------------------------


def test_over_https_only_the_host_cookie_counts(tmp_path: Path, db_url: str | None) -> None:
    team = Team(tmp_path, db_url, Settings(public_url="https://review.example.com"))
    origin = "https://review.example.com"
    with team.client(base_url=origin) as c:
        plain = {"Cookie": f"annotate={team.tokens['ada']}"}
        # Before the fix: 200, signed in by a cookie a sibling subdomain can set.
        r = c.get(f"{API}/annotations", headers=plain)
        assert (r.status_code, r.json()["code"]) == (401, "unauthorized")
        r = c.post(f"{API}/annotations", json=text_note(), headers={**plain, "Origin": origin})
        assert r.status_code == 401 and team.counts()[0] == 0
        host = {"Cookie": f"__Host-annotate={team.tokens['ada']}"}
        assert c.get(f"{API}/annotations", headers=host).status_code == 200
    team.store.close()


@pytest.mark.parametrize(
    "target",
    ["/\t/evil.example/", "/\n/evil.example/", "/\r/evil.example/", "/\x7f/evil.example/", "/\x00"],
)
def test_sign_in_never_leads_elsewhere(team: Team, target: str) -> None:
    with team.client("ada") as c:
        page = c.get("/__annotate/signin", params={"next": target})
        # Before the fix: <a href="/\t/evil.example/">, which a browser follows to evil.example.
        assert page.status_code == 200 and '<a href="/">Continue</a>' in page.text
    with team.client() as c:
        r = c.post(
            "/__annotate/signin",
            data={"token": team.tokens["ada"], "next": target},
            headers={"Origin": BASE},
            follow_redirects=False,
        )
        assert (r.status_code, r.headers["location"]) == (303, "/")


def test_sign_in_percent_encodes_where_it_goes_back_to(team: Team) -> None:
    with team.client("ada") as c:
        page = c.get("/__annotate/signin", params={"next": "/guide/ä b/?q=1"})
        assert '<a href="/guide/%C3%A4%20b/?q=1">Continue</a>' in page.text


# -- item 11: a NUL in any filter ---------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "annotations?branch=%00",
        "annotations?page=%2F%00",
        "page-notes?branch=x%00",
        "summary?branch=%00",
        "reviews?pendingOnly=%00",
        "changes?since=%00",
    ],
)
def test_a_nul_in_any_filter_is_400(team: Team, query: str) -> None:
    with team.client("max") as c:
        r = c.get(f"{API}/{query}")
        # Before the fix, on PostgreSQL: 500 with the database's URL in the message.
        name = query.partition("?")[2].partition("=")[0]
        assert (r.status_code, r.json()) == (
            400,
            {"error": f"{name} must not contain NUL characters", "code": "invalid"},
        )


# -- item 11: the factory behind --forwarded-allow-ips '*' ----------------------------------------


@pytest.mark.parametrize(
    ("argv", "environ", "warned"),
    [
        (["uvicorn", "--factory", "annotate.web.team:app", "--forwarded-allow-ips", "*"], {}, True),
        (["uvicorn", "--forwarded-allow-ips=10.0.0.1,*"], {}, True),
        (["gunicorn", "-k", "uvicorn.workers.UvicornWorker"], {"FORWARDED_ALLOW_IPS": "*"}, True),
        (["uvicorn", "--forwarded-allow-ips", "*", "--no-proxy-headers"], {}, False),
        (["uvicorn", "--forwarded-allow-ips", "10.0.0.1"], {}, False),
        (["uvicorn", "--factory", "annotate.web.team:app"], {}, False),
    ],
)
def test_the_factory_warns_when_anyone_may_claim_to_be_the_proxy(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    environ: dict[str, str],
    warned: bool,
) -> None:
    (tmp_path / "p").mkdir()
    project = write_project(tmp_path / "p", "# Install\n")
    (tmp_path / "site").mkdir()
    env = {
        "ANNOTATE_SITE_DIR": str(tmp_path / "site"),
        "ANNOTATE_PROJECT": str(project),
        "ANNOTATE_IDENTITY_HEADER": HEADER,
        **environ,
    }
    team_factory(env, argv=argv)
    # Before the fix: nothing said; X-Forwarded-For from any client became the peer's address,
    # the address the identity header is trusted by.
    assert (FORWARDED_WARNING in capsys.readouterr().err) is warned
