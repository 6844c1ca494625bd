"""A personal token's check that it is still live, made once per request of team mode and
carried by the request's own first database round trip (issue #31).

The server knows whom a token it has let in before belongs to (a live token's hash always names
the same person and role, annotate/people.py), but not whether it was revoked meanwhile, maybe
through another worker or server: that needs the `tokens` table on every request. `Guard`
(annotate/web/security.py) puts a `Check` on the request's context; on PostgreSQL the backend
sends its query in the pipeline of the request's first statement (`carry`), where the server
itself aborts the statements after it when the token is not live, so nothing the request sent can
commit. Where no round trip carried it (SQLite, where a query is no round trip, or a request that
read nothing), `Check.run` makes it on its own. Either way, a token revoked by any process is
refused by every worker from its next request on (tests/test_workers.py).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass

from .errors import Unauthorized

__all__ = ["CARRY_SQL", "PENDING", "REVOKED", "Check", "due", "refused"]

REVOKED = "Unknown or revoked token"
# One row, 1, when the token is live; else a division by zero, which aborts the transaction (and
# skips the rest of the pipeline) on the server, before anything of the request can commit.
CARRY_SQL = "SELECT 1 / count(*) FROM tokens WHERE token_hash = %s AND revoked_at IS NULL"
DIVISION_BY_ZERO = "22012"


@dataclass
class Check:
    """The check of one request's token, by its SHA-256 `digest`."""

    digest: str
    # The check on its own (one query): whether a live token has this digest.
    live: Callable[[str], bool]
    # Called when the token is refused (the Guard forgets whom it names).
    forget: Callable[[str], None]
    # The backend carries the check with its first round trip (PostgreSQL): a route runs it on
    # its own only when no round trip did.
    carried: bool = False
    done: bool = False

    def run(self) -> None:
        """Make the check now, unless done: `Unauthorized` when the token is not live."""
        if self.done:
            return
        self.done = True  # first: `live`'s own query must not carry it again
        if not self.live(self.digest):
            raise self.refuse()

    def refuse(self) -> Unauthorized:
        self.forget(self.digest)
        return Unauthorized(REVOKED)


PENDING: contextvars.ContextVar[Check | None] = contextvars.ContextVar(
    "annotate_token_check", default=None
)


def due() -> Check | None:
    """This request's check, when no round trip has carried it yet."""
    check = PENDING.get()
    return check if check is not None and not check.done else None


def refused(check: Check | None, sqlstate: str | None) -> Unauthorized | None:
    """`Unauthorized` when a round trip carrying `check` failed on the check itself."""
    if check is None or sqlstate != DIVISION_BY_ZERO:
        return None
    return check.refuse()
