"""What can go wrong between the store and a pull request's host (issue #30). Each is one line
for the CLI (exit 1); none leaves the store half-written: links are recorded per accepted
request (annotate/pullrequests/links.py)."""

from __future__ import annotations

from ..errors import AnnotateError

__all__ = [
    "BadToken",
    "HostError",
    "HostRefused",
    "HostUnreachable",
    "NoPullRequest",
    "NoToken",
    "PullRequestNotFound",
    "RateLimited",
]


class HostError(AnnotateError):
    """A pull request's host (GitHub, GitLab) could not be asked or refused the request."""

    code = "host_error"
    http_status = 502


class NoToken(HostError):
    """No token to sign in to the host with."""

    code = "no_token"
    http_status = 401


class BadToken(HostError):
    """The host refused the token (401)."""

    code = "bad_token"
    http_status = 401


class PullRequestNotFound(HostError):
    """The host has no such repository or pull request, or the token may not see it (404)."""

    code = "pull_request_not_found"
    http_status = 404


class NoPullRequest(HostError):
    """Which pull request is meant could not be told from the checkout (its remote and branch)."""

    code = "no_pull_request"
    http_status = 400


class RateLimited(HostError):
    """The host's rate limit (403 or 429); `retry_after`: seconds to wait, when it said."""

    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HostRefused(HostError):
    """The host refused the request for another reason (422 and the like), in its words."""

    code = "host_refused"
    http_status = 422

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        # The host's HTTP status (422: GitHub's "must be part of the diff" among others).
        self.status = status


class HostUnreachable(HostError):
    """The host could not be reached (network down, DNS, timeout)."""

    code = "host_unreachable"
    http_status = 502
