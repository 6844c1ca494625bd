"""An emulated GitLab REST API (v4) for `annotate pr --gitlab` (issue #30 item 3): the merge
request endpoints it uses, with GitLab's documented request and answer shapes, over a real git
repository, served by uvicorn on a real port (tests/github_api.py's `serve`).

It reproduces: `PRIVATE-TOKEN` sign-in (401 "401 Unauthorized"), 404 for an unknown project or
merge request, `diff_refs`, the diffs (computed by git), draft notes whose `position` must name
a line of the diff (an unchanged line by `old_line` and `new_line`; otherwise 400, "must be a
valid line code"), `position_type: "file"`, `bulk_publish` turning the drafts into discussions,
`Link: rel="next"` pagination, the raw file at a commit (base64), approvals, and the rate limit
(429 with `Retry-After`).
"""

from __future__ import annotations

import base64
import secrets
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .github_api import GitHubState, PullRequest, git

TOKEN = "glpat-emulated0123456789abcd"


@dataclass
class GitLabState:
    """The emulated GitLab's data: one project (`path`) over the git repository at `repo`."""

    repo: Path
    path: str = "acme/docs"
    merge_requests: dict[int, PullRequest] = field(default_factory=dict)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    discussions: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[int] = field(default_factory=list)
    log: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    fault: tuple[int, dict[str, str]] | None = None
    per_page_max: int = 100
    next_id: int = 5000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


def line_codes(patch: str) -> dict[int, int | None]:
    """GitLab's view of a diff: new line -> old line (None: added), for the lines it shows."""
    out: dict[int, int | None] = {}
    old = new = 0
    for text in patch.splitlines():
        if text.startswith("@@"):
            ranges = text.split(" ")
            old, new = int(ranges[1][1:].split(",")[0]), int(ranges[2][1:].split(",")[0])
        elif text.startswith("+"):
            out[new], new = None, new + 1
        elif text.startswith("-"):
            old += 1
        elif text.startswith(" "):
            out[new], new, old = old, new + 1, old + 1
    return out


def create_app(state: GitLabState) -> Starlette:
    def guard(request: Request) -> Response | None:
        token = request.headers.get("private-token")
        state.log.append((request.method, request.url.path, request.url.query, token))
        if state.fault is not None:
            status, headers = state.fault
            return JSONResponse({"message": "Retry later"}, status, headers=headers)
        if token != TOKEN:
            return JSONResponse({"message": "401 Unauthorized"}, 401)
        if request.path_params.get("project") != state.path:
            return JSONResponse({"message": "404 Project Not Found"}, 404)
        return None

    def the_mr(request: Request) -> PullRequest | None:
        return state.merge_requests.get(int(request.path_params["iid"]))

    def paginate(request: Request, items: list[Any]) -> Response:
        per_page = min(int(request.query_params.get("per_page", 20)), state.per_page_max)
        page = int(request.query_params.get("page", 1))
        headers = {}
        if page * per_page < len(items):
            nxt = request.url.include_query_params(page=str(page + 1))
            headers = {"link": f'<{nxt}>; rel="next"', "x-next-page": str(page + 1)}
        return JSONResponse(items[(page - 1) * per_page : page * per_page], headers=headers)

    def patches(mr: PullRequest) -> dict[str, tuple[str, str]]:
        return GitHubState(state.repo).patches(mr)

    def refs(mr: PullRequest) -> dict[str, str]:
        base = git(state.repo, "merge-base", mr.base_ref, mr.head_ref)
        return {
            "base_sha": base,
            "start_sha": base,
            "head_sha": git(state.repo, "rev-parse", mr.head_ref),
        }

    def mr_json(mr: PullRequest) -> dict[str, Any]:
        r = refs(mr)
        return {
            "iid": mr.number,
            "state": "opened",
            "source_branch": mr.head_ref,
            "target_branch": mr.base_ref,
            "sha": r["head_sha"],
            "diff_refs": r,
        }

    async def merge_requests(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        branch = request.query_params.get("source_branch")
        found = [
            mr_json(mr)
            for mr in state.merge_requests.values()
            if branch is None or mr.head_ref == branch
        ]
        return paginate(request, found)

    async def merge_request(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        mr = the_mr(request)
        if mr is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        return JSONResponse(mr_json(mr))

    async def diffs(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        mr = the_mr(request)
        if mr is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        out = [
            {
                "old_path": name,
                "new_path": name,
                "diff": patch,
                "new_file": status == "added",
                "renamed_file": False,
                "deleted_file": status == "removed",
            }
            for name, (status, patch) in sorted(patches(mr).items())
        ]
        return paginate(request, out)

    def bad_position(mr: PullRequest, position: dict[str, Any]) -> str | None:
        if {position.get(k) for k in ("base_sha", "start_sha", "head_sha")} - set(
            refs(mr).values()
        ):
            return "position's shas are not the merge request's diff_refs"
        files = patches(mr)
        path = position.get("new_path")
        if path not in files:
            return "new_path is not in the diff"
        if position.get("position_type") == "file":
            return None
        line = position.get("new_line")
        olds = line_codes(files[path][1])
        if line not in olds or position.get("old_line") != olds[line]:
            return 'Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
        return None

    async def draft_notes(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        mr = the_mr(request)
        if mr is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        if request.method == "GET":
            return paginate(
                request, [d for d in state.drafts if d["merge_request_id"] == mr.number]
            )
        body = await request.json()
        if not body.get("note"):
            return JSONResponse({"message": "400 Bad request - note is missing"}, 400)
        position = body.get("position")
        if position is not None and (why := bad_position(mr, position)) is not None:
            return JSONResponse({"message": f"400 Bad request - {why}"}, 400)
        draft = {
            "id": state.new_id(),
            "merge_request_id": mr.number,
            "note": body["note"],
            "position": position,
            "author_id": 1,
        }
        state.drafts.append(draft)
        return JSONResponse(draft, 201)

    async def bulk_publish(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        mr = the_mr(request)
        if mr is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        mine = [d for d in state.drafts if d["merge_request_id"] == mr.number]
        for d in mine:
            note = {
                "id": state.new_id(),
                "type": "DiffNote" if d["position"] else "DiscussionNote",
                "body": d["note"],
                "author": {"username": "ada"},
                "system": False,
                "resolvable": True,
                "resolved": False,
                "position": d["position"],
            }
            state.discussions.append(
                {
                    "id": secrets.token_hex(20),
                    "_mr": mr.number,
                    "individual_note": False,
                    "notes": [note],
                }
            )
        state.drafts = [d for d in state.drafts if d not in mine]
        return Response(status_code=204)

    async def discussions(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        mr = the_mr(request)
        if mr is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        found = [
            {k: v for k, v in d.items() if not k.startswith("_")}
            for d in state.discussions
            if d["_mr"] == mr.number
        ]
        return paginate(request, found)

    async def discussion_notes(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        d = next((d for d in state.discussions if d["id"] == request.path_params["id"]), None)
        if d is None:
            return JSONResponse({"message": "404 Not found"}, 404)
        body = await request.json()
        note = {
            "id": state.new_id(),
            "type": "DiscussionNote",
            "body": body["body"],
            "author": {"username": "ada"},
            "system": False,
        }
        d["notes"].append(note)
        return JSONResponse(note, 201)

    async def approve(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        state.approvals.append(int(request.path_params["iid"]))
        return JSONResponse({"approved": True}, 201)

    async def files(request: Request) -> Response:
        if (refused := guard(request)) is not None:
            return refused
        ref = request.query_params.get("ref", "HEAD")
        try:
            text = git(state.repo, "show", f"{ref}:{request.path_params['file']}") + "\n"
        except subprocess.CalledProcessError:
            return JSONResponse({"message": "404 File Not Found"}, 404)
        return JSONResponse(
            {"encoding": "base64", "ref": ref, "content": base64.b64encode(text.encode()).decode()}
        )

    base = "/api/v4/projects/{project:path}/merge_requests"
    return Starlette(
        routes=[
            Route(base, merge_requests),
            Route(base + "/{iid:int}", merge_request),
            Route(base + "/{iid:int}/diffs", diffs),
            Route(base + "/{iid:int}/draft_notes", draft_notes, methods=["GET", "POST"]),
            Route(base + "/{iid:int}/draft_notes/bulk_publish", bulk_publish, methods=["POST"]),
            Route(base + "/{iid:int}/discussions", discussions),
            Route(base + "/{iid:int}/discussions/{id}/notes", discussion_notes, methods=["POST"]),
            Route(base + "/{iid:int}/approve", approve, methods=["POST"]),
            Route("/api/v4/projects/{project:path}/repository/files/{file:path}", files),
        ]
    )


def reply(state: GitLabState, note: str, body: str, login: str = "bob") -> None:
    """Someone answers the discussion opened by note `note`'s marker."""
    d = next(d for d in state.discussions if f"annotate:{note} " in d["notes"][0]["body"])
    d["notes"].append(
        {
            "id": state.new_id(),
            "type": "DiscussionNote",
            "body": body,
            "author": {"username": login},
            "system": False,
        }
    )


def resolve(state: GitLabState, note: str) -> None:
    d = next(d for d in state.discussions if f"annotate:{note} " in d["notes"][0]["body"])
    d["notes"][0]["resolved"] = True
