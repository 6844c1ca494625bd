"""Who is asking, in team mode (docs/team.md): a person, their role, and what the role allows.

A `Person` comes from a trusted proxy's identity header or from a personal token (`Store.add_token`);
in single-user mode there is none (`by=None` in the store's verbs) and nothing here is checked. The
store calls `check` inside each write transaction, against the row it is about to change, so the
REST routes and the MCP tools are refused by the same rule.

Personal tokens are high-entropy random strings; only their SHA-256 is stored. A salted slow hash
buys nothing for 256 random bits, and SHA-256 lets a request find its token with one indexed
lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from .errors import Forbidden, ValidationError

__all__ = [
    "ROLES",
    "TOKEN_PREFIX",
    "Person",
    "Role",
    "check",
    "hash_token",
    "new_token",
    "parse_role",
    "person_name",
    "same_hash",
]

Role = Literal["reviewer", "agent", "maintainer"]
ROLES: tuple[Role, ...] = ("reviewer", "agent", "maintainer")
# A recognisable prefix lets secret scanners (GitHub's, gitleaks) spot a token pasted by mistake.
TOKEN_PREFIX = "ann_"
TOKEN_BYTES = 32
MAX_NAME = 200  # the `author` field's limit (annotate/fields.py)


@dataclass(frozen=True)
class Person:
    """Someone the team server knows: `name` is what notes record as their author."""

    name: str
    role: Role = "reviewer"

    @property
    def reply_role(self) -> str:
        """The role of their replies in a thread: an agent's, or a reviewer's."""
        return "agent" if self.role == "agent" else "reviewer"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "role": self.role}


def person_name(value: object, field: str = "name") -> str:
    """A person's name as given (an email, a login): 1 to 200 characters, no control characters."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} must not be empty", field)
    name = value.strip()
    if len(name) > MAX_NAME:
        raise ValidationError(f"{field} is longer than {MAX_NAME} characters", field)
    if any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in name):
        raise ValidationError(f"{field} must not hold control characters", field)
    return name


def parse_role(value: object) -> Role:
    for r in ROLES:
        if value == r:
            return r
    raise ValidationError(f"role must be one of {', '.join(ROLES)}, got {value!r}", "role")


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def same_hash(a: str, b: str) -> bool:
    """Constant-time comparison of two token hashes."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


# What each action needs: "own" (the item's author, or a maintainer), "not_agent".
Action = Literal["edit", "delete", "accept"]


def check(person: Person | None, action: Action, label: str, author: str | None = None) -> None:
    """Refuse with `Forbidden` what `person` may not do to the item `label` names (written by
    `author`); nothing is checked without a person (single-user mode).

    A reviewer (or an agent) edits and deletes only their own notes, a maintainer any; an agent
    never accepts: the reviewer judges the agent's work.
    """
    if person is None:
        return
    if action == "accept":
        if person.role == "agent":
            raise Forbidden(
                f"Agents cannot accept {label}: a reviewer or a maintainer accepts the work"
            )
        return
    if person.role != "maintainer" and author != person.name:
        who = f"by {author}" if author else "without an author"
        raise Forbidden(
            f"Cannot {action} {label}: it was written {who}; only its author or a maintainer can"
        )
