"""GitLab merge requests, as `annotate pr` uses them (issue #30 item 3, docs/pull-requests.md):
REST v4, the project named by its URL-encoded path.

The merge request and its `diff_refs`, its diffs (`…/diffs`, paginated), discussions with a
`position` (`base_sha`, `start_sha`, `head_sha`, `new_path`, `new_line`, and `old_line` on an
unchanged line; `position_type: "file"` for a file-level one), draft notes published together
(`…/draft_notes`, then `…/draft_notes/bulk_publish`), `suggestion:-N+0` blocks, the raw file at a
commit.
"""

from __future__ import annotations

import base64
import os
import urllib.parse
from typing import Any

from .errors import NoPullRequest, NoToken, PullRequestNotFound
from .http import Client
from .hunks import Hunks, old_lines, parse_patch
from .links import Target

__all__ = ["GitLab", "token_for"]


def token_for() -> str:
    """`GITLAB_TOKEN`, else `GL_TOKEN` (glab's variable)."""
    for name in ("GITLAB_TOKEN", "GL_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise NoToken("No GitLab token: set GITLAB_TOKEN (or GL_TOKEN) to a token with the api scope")


class GitLab:
    """One project's merge requests on one GitLab instance (`api_url`: `https://HOST/api/v4`)."""

    name = "GitLab"

    def __init__(self, api_url: str, repo: str, token: str | None) -> None:
        self.api_url = api_url.rstrip("/")
        self.repo = repo
        headers = {"PRIVATE-TOKEN": token} if token else {}
        self.client = Client(self.api_url, headers, host_name="GitLab", what=f"project {repo}")
        self._base = f"/projects/{urllib.parse.quote(repo, safe='')}"
        # path -> (old path, new line -> old line) of the last diffs read.
        self.paths: dict[str, tuple[str, dict[int, int | None]]] = {}

    def target(self, number: int) -> Target:
        return Target(self.api_url, self.repo, number)

    def find(self, owner: str, branch: str) -> int:
        found = self.client.request(
            "GET",
            f"{self._base}/merge_requests",
            params={"source_branch": branch, "state": "opened"},
        ).data
        if not found:
            raise NoPullRequest(
                f"No open merge request in {self.repo} has branch {branch!r} as its source: "
                "name it with --pr N"
            )
        return int(found[0]["iid"])

    def refs(self, number: int) -> dict[str, str]:
        """The merge request's `diff_refs`: `base_sha`, `start_sha`, `head_sha`."""
        self.client.what = f"merge request !{number} in {self.repo}"
        data = self.client.request("GET", f"{self._base}/merge_requests/{number}").data
        refs = data.get("diff_refs") if isinstance(data, dict) else None
        if not refs:
            raise PullRequestNotFound(f"GitLab gave no diff for merge request !{number}")
        return {k: str(refs[k]) for k in ("base_sha", "start_sha", "head_sha")}

    def files(self, number: int) -> dict[str, Hunks]:
        out: dict[str, Hunks] = {}
        self.paths = {}
        for f in self.client.pages(f"{self._base}/merge_requests/{number}/diffs"):
            if f.get("deleted_file"):
                continue
            out[f["new_path"]] = parse_patch(f.get("diff"))
            self.paths[f["new_path"]] = (
                f.get("old_path") or f["new_path"],
                old_lines(f.get("diff")),
            )
        return out

    def discussions(self, number: int) -> list[dict[str, Any]]:
        return list(self.client.pages(f"{self._base}/merge_requests/{number}/discussions"))

    def drafts(self, number: int) -> list[dict[str, Any]]:
        return list(self.client.pages(f"{self._base}/merge_requests/{number}/draft_notes"))

    def drafts_url(self, number: int) -> str:
        return self.client.url(f"{self._base}/merge_requests/{number}/draft_notes")

    def post_draft(self, number: int, payload: dict[str, Any]) -> str:
        answer = self.client.request(
            "POST", f"{self._base}/merge_requests/{number}/draft_notes", payload
        )
        return str(answer.data["id"])

    def publish_url(self, number: int) -> str:
        return self.client.url(f"{self._base}/merge_requests/{number}/draft_notes/bulk_publish")

    def publish(self, number: int) -> None:
        self.client.request(
            "POST", f"{self._base}/merge_requests/{number}/draft_notes/bulk_publish", {}
        )

    def reply_url(self, number: int, discussion: str) -> str:
        return self.client.url(
            f"{self._base}/merge_requests/{number}/discussions/{discussion}/notes"
        )

    def post_reply(self, number: int, discussion: str, body: str) -> str:
        answer = self.client.request(
            "POST",
            f"{self._base}/merge_requests/{number}/discussions/{discussion}/notes",
            {"body": body},
        )
        return str(answer.data["id"])

    def approve_url(self, number: int) -> str:
        return self.client.url(f"{self._base}/merge_requests/{number}/approve")

    def approve(self, number: int) -> None:
        self.client.request("POST", f"{self._base}/merge_requests/{number}/approve", {})

    def position(self, refs: dict[str, str], path: str, line: int | None) -> dict[str, Any]:
        """A discussion's position on `path` (file-level when `line` is None)."""
        old_path, olds = self.paths.get(path, (path, {}))
        out: dict[str, Any] = {**refs, "old_path": old_path, "new_path": path}
        if line is None:
            out["position_type"] = "file"
            return out
        out.update(position_type="text", new_line=line)
        old = olds.get(line)
        if old is not None:
            out["old_line"] = old  # an unchanged line is placed by both its numbers
        return out

    def file_text(self, path: str, ref: str) -> str | None:
        quoted = urllib.parse.quote(path, safe="")
        try:
            answer = self.client.request(
                "GET", f"{self._base}/repository/files/{quoted}", params={"ref": ref}
            )
        except PullRequestNotFound:
            return None
        data = answer.data
        if not isinstance(data, dict) or data.get("encoding") != "base64":
            return None
        return base64.b64decode(data.get("content") or "").decode("utf-8", "replace")
