"""GitHub's pull-request review API, as `annotate pr` uses it (docs/pull-requests.md; the
request and answer shapes of GitHub's REST description, /work/shared/notes/FACTS.md).

REST: the pull request, its files (each with its diff `patch`), its review comments and reviews,
`POST …/reviews` (one review, all or nothing), `POST …/comments` (file-level comments), the
contents of a file at a commit. GraphQL: `reviewThreads { isResolved }`, which REST lacks.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import urllib.parse
from typing import Any

from .errors import HostRefused, NoPullRequest, NoToken, PullRequestNotFound
from .http import Client
from .hunks import Hunks, parse_patch
from .links import Target

__all__ = ["DEFAULT_API", "GitHub", "api_url_for", "token_for"]

DEFAULT_API = "https://api.github.com"
_THREADS = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}
"""


def api_url_for(host: str | None) -> str:
    """The REST root of a remote's host: api.github.com for github.com, `https://HOST/api/v3`
    for GitHub Enterprise Server."""
    if host in (None, "github.com", "www.github.com"):
        return DEFAULT_API
    return f"https://{host}/api/v3"


def token_for(host: str | None) -> str:
    """`GH_TOKEN`, else `GITHUB_TOKEN`, else what `gh auth token` prints (when gh is on PATH)."""
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    gh = shutil.which("gh")
    if gh is not None:
        args = [gh, "auth", "token"]
        if host and host not in ("github.com", "api.github.com"):
            args += ["--hostname", host]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    raise NoToken("No GitHub token: set GH_TOKEN or GITHUB_TOKEN, or sign in with `gh auth login`")


class GitHub:
    """One repository's pull requests on one GitHub API (`api_url`)."""

    name = "GitHub"

    def __init__(self, api_url: str, repo: str, token: str | None) -> None:
        self.api_url = api_url.rstrip("/")
        self.repo = repo
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.client = Client(self.api_url, headers, host_name="GitHub", what=f"repository {repo}")
        self._base = f"/repos/{repo}"

    def target(self, number: int) -> Target:
        return Target(self.api_url, self.repo, number)

    def _about(self, number: int) -> None:
        self.client.what = f"pull request #{number} in {self.repo}"

    def find(self, owner: str, branch: str) -> int:
        """The open pull request whose head is `owner:branch` (`NoPullRequest` when none)."""
        found = self.client.request(
            "GET", f"{self._base}/pulls", params={"head": f"{owner}:{branch}", "state": "open"}
        ).data
        if not found:
            raise NoPullRequest(
                f"No open pull request in {self.repo} has branch {branch!r} as its head: "
                "name it with --pr N"
            )
        return int(found[0]["number"])

    def pull_request(self, number: int) -> dict[str, Any]:
        self._about(number)
        data: dict[str, Any] = self.client.request("GET", f"{self._base}/pulls/{number}").data
        return data

    def files(self, number: int) -> dict[str, Hunks]:
        """Each file the pull request changes, with the new-side ranges of its hunks (none for
        a removed file, or one whose diff GitHub does not show)."""
        out: dict[str, Hunks] = {}
        for f in self.client.pages(f"{self._base}/pulls/{number}/files"):
            out[f["filename"]] = [] if f.get("status") == "removed" else parse_patch(f.get("patch"))
        return out

    def comments(self, number: int) -> list[dict[str, Any]]:
        """Every review comment of the pull request (threads' first comments and replies)."""
        return list(self.client.pages(f"{self._base}/pulls/{number}/comments"))

    def review_bodies(self, number: int) -> list[tuple[str, str]]:
        """(review id, body) of the pull request's reviews."""
        return [
            (str(r["id"]), r.get("body") or "")
            for r in self.client.pages(f"{self._base}/pulls/{number}/reviews")
        ]

    def review_comments(self, number: int, review: str) -> list[dict[str, Any]]:
        return list(self.client.pages(f"{self._base}/pulls/{number}/reviews/{review}/comments"))

    def reviews_url(self, number: int) -> str:
        return self.client.url(f"{self._base}/pulls/{number}/reviews")

    def comments_url(self, number: int) -> str:
        return self.client.url(f"{self._base}/pulls/{number}/comments")

    def post_review(self, number: int, payload: dict[str, Any]) -> str:
        answer = self.client.request("POST", f"{self._base}/pulls/{number}/reviews", payload)
        return str(answer.data["id"])

    def post_comment(self, number: int, payload: dict[str, Any]) -> str:
        answer = self.client.request("POST", f"{self._base}/pulls/{number}/comments", payload)
        return str(answer.data["id"])

    def resolved_threads(self, number: int) -> dict[str, bool]:
        """Whether each review thread is resolved, by the id of its first comment."""
        owner, _, name = self.repo.partition("/")
        url = (
            self.api_url[: -len("/v3")] + "/graphql"
            if self.api_url.endswith("/api/v3")
            else self.api_url + "/graphql"
        )
        out: dict[str, bool] = {}
        cursor: str | None = None
        for _ in range(100):
            variables = {"owner": owner, "name": name, "number": number, "cursor": cursor}
            answer = self.client.request("POST", url, {"query": _THREADS, "variables": variables})
            data = answer.data or {}
            if data.get("errors"):
                raise HostRefused(f"GitHub refused the query: {data['errors'][0].get('message')}")
            threads = data["data"]["repository"]["pullRequest"]["reviewThreads"]
            for node in threads["nodes"]:
                first = node["comments"]["nodes"]
                if first:
                    out[str(first[0]["databaseId"])] = bool(node["isResolved"])
            if not threads["pageInfo"]["hasNextPage"]:
                break
            cursor = threads["pageInfo"]["endCursor"]
        return out

    def file_text(self, path: str, ref: str) -> str | None:
        """The file at commit `ref`, or None when it is not there."""
        try:
            data = self.client.request(
                "GET", f"{self._base}/contents/{urllib.parse.quote(path)}", params={"ref": ref}
            ).data
        except PullRequestNotFound:
            return None
        if not isinstance(data, dict) or data.get("encoding") != "base64":
            return None
        return base64.b64decode(data.get("content") or "").decode("utf-8", "replace")
