"""People: the personal tokens of team mode (annotate/identity.py, docs/team.md), as
`store.people`."""

from __future__ import annotations

from typing import Any

from .backends import Backend, Connection, now
from .errors import Unauthorized, ValidationError
from .identity import Person, hash_token, new_token, parse_role, person_name, same_hash

__all__ = ["People"]


class People:
    """Who may write in team mode: a name, a role and the SHA-256 of a personal token."""

    def __init__(self, backend: Backend) -> None:
        self._file = backend

    def add_token(self, name: str, role: str = "reviewer") -> str:
        """A new personal token for `name` with `role` (reviewer, agent or maintainer): returned
        once, stored as its SHA-256 only. A name with a live token is refused (revoke it first);
        a revoked one gets a new token."""
        name = person_name(name)
        role = parse_role(role)
        token = new_token()
        with self._file.transaction(write=True) as conn:
            cur = conn.execute(
                "INSERT INTO tokens (name, role, token_hash, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET role = excluded.role, token_hash = "
                "excluded.token_hash, created_at = excluded.created_at, revoked_at = NULL "
                "WHERE tokens.revoked_at IS NOT NULL",
                (name, role, hash_token(token), now()),
            )
            if not cur.rowcount:
                raise ValidationError(
                    f"{name!r} already has a token; revoke it first (annotate token revoke)",
                    "name",
                )
        return token

    def list_tokens(self) -> list[dict[str, Any]]:
        """Every personal token by name: `{name, role, createdAt, revokedAt}` (never the token)."""
        with self._file.transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT name, role, created_at, revoked_at FROM tokens ORDER BY name"
            ).fetchall()
        return [{"name": r[0], "role": r[1], "createdAt": r[2], "revokedAt": r[3]} for r in rows]

    def revoke_token(self, name: str) -> None:
        """Revoke `name`'s token: every request carrying it is refused from now on."""
        name = person_name(name)
        with self._file.transaction(write=True) as conn:
            cur = conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                (now(), name),
            )
            if not cur.rowcount:
                raise ValidationError(f"{name!r} has no live token", "name")

    def person_for_token(self, token: str) -> Person | None:
        """The person whose live token this is, else None."""
        if not isinstance(token, str) or not token:
            return None
        digest = hash_token(token)
        # One statement, so no transaction around it: team mode asks on every request, and on
        # PostgreSQL BEGIN and COMMIT would be two more round trips (`Backend.connection`).
        row = (
            self._file.connection()
            .execute(
                "SELECT name, role, token_hash FROM tokens WHERE token_hash = ? "
                "AND revoked_at IS NULL",
                (digest,),
            )
            .fetchone()
        )
        if row is None or not same_hash(row[2], digest):
            return None
        return Person(row[0], parse_role(row[1]))

    def live(self, digest: str) -> bool:
        """Whether a live token has this SHA-256 (`hash_token`): a request's check of a token
        whose person is known already (annotate/tokencheck.py)."""
        row = (
            self._file.connection()
            .execute("SELECT 1 FROM tokens WHERE token_hash = ? AND revoked_at IS NULL", (digest,))
            .fetchone()
        )
        return row is not None

    def check_live(self, conn: Connection, token: str | None) -> None:
        """`Unauthorized` unless `token` (when given) is a live personal token, read in `conn`'s
        transaction (a revoked agent takes no review, issue #32)."""
        if token is None:
            return
        row = conn.execute(
            "SELECT 1 FROM tokens WHERE token_hash = ? AND revoked_at IS NULL",
            (hash_token(token),),
        ).fetchone()
        if row is None:
            raise Unauthorized("Unknown or revoked token")
