"""Notes to and from a pull request (issue #30, docs/pull-requests.md): `push` posts the open
notes as one review, `pull` brings the replies and resolutions back; the store remembers which
comment each note became (`Store.pull_requests`, annotate/pullrequests/links.py)."""

from __future__ import annotations

from .errors import (
    BadToken,
    HostError,
    HostRefused,
    HostUnreachable,
    NoPullRequest,
    NoToken,
    PullRequestNotFound,
    RateLimited,
)
from .links import Link, PullRequestLinks, Target
from .sync import EVENTS, PullResult, PushResult, Sent, event_for, pull, push

__all__ = [
    "EVENTS",
    "BadToken",
    "HostError",
    "HostRefused",
    "HostUnreachable",
    "Link",
    "NoPullRequest",
    "NoToken",
    "PullRequestLinks",
    "PullRequestNotFound",
    "PullResult",
    "PushResult",
    "RateLimited",
    "Sent",
    "Target",
    "event_for",
    "pull",
    "push",
]
