"""`annotate pr push` and `pr pull` (issue #30) against the emulated GitHub API of the tests, over
a real git repository: requests sent and wall time for N notes, half on lines of the diff, half
outside it, against a baseline measured in the same run: each note posted as its own comment
(what a tool without reviews does: one notification per note).

    .venv/bin/python benchmarks/pullrequests.py [--notes 10,100,400] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import annotate
from annotate import pullrequests
from annotate.pullrequests.http import Client
from tests.github_api import TOKEN, GitHubState, PullRequest, git, serve


def make_repo(root: Path, n: int) -> list[str]:
    """A docs repository with n paragraphs; branch `docs-fix` rewords every other group of
    paragraphs. The phrases to note, one per paragraph."""
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: bench\n")
    phrases = [f"paragraph number {i} of the page" for i in range(n)]
    main = "\n\n".join(f"This is {p}." for p in phrases) + "\n"
    (root / "docs" / "index.md").write_text(main)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "b@example.com")
    git(root, "config", "user.name", "B")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "docs")
    git(root, "checkout", "-q", "-b", "docs-fix")
    # Every paragraph in blocks of 8: the first 2 of each block reworded, so hunks (3 lines of
    # context) cover about half the notes.
    lines = [f"Now {p}." if (i % 8) < 2 else f"This is {p}." for i, p in enumerate(phrases)]
    (root / "docs" / "index.md").write_text("\n\n".join(lines) + "\n")
    git(root, "commit", "-q", "-am", "reword")
    git(root, "remote", "add", "origin", "git@github.com:acme/docs.git")
    return phrases


def run(n: int, runs: int) -> dict[str, float]:
    push_s, pull_s, base_s, requests, base_requests, writes, lines = [], [], [], 0, 0, 0, 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            phrases = make_repo(root, n)
            state = GitHubState(root, pulls={1: PullRequest(1, "docs-fix", "main")})
            with serve(state) as url, annotate.open(root) as store:
                for p in phrases:
                    store.add_annotation(
                        {
                            "type": "text",
                            "pageUrl": "/",
                            "note": "Reword.",
                            "selectedText": p,
                            "quote": {"exact": p, "prefix": "is ", "suffix": "."},
                        }
                    )
                start = time.perf_counter()
                pullrequests.push(store, api_url=url, token=TOKEN)
                push_s.append(time.perf_counter() - start)
                requests = len(state.log)
                writes = sum(method == "POST" for method, *_ in state.log)
                lines = sum(1 for c in state.comments if c["subject_type"] == "line")
                start = time.perf_counter()
                pullrequests.pull(store, api_url=url, token=TOKEN)
                pull_s.append(time.perf_counter() - start)
                # Baseline: each note its own file-level comment, one request each.
                client = Client(
                    url, {"Authorization": f"Bearer {TOKEN}"}, host_name="GitHub", what="x"
                )
                head = git(root, "rev-parse", "docs-fix")
                before = len(state.log)
                start = time.perf_counter()
                for item in store.list_annotations():
                    client.request(
                        "POST",
                        "/repos/acme/docs/pulls/1/comments",
                        {
                            "body": item.note,
                            "commit_id": head,
                            "path": "docs/index.md",
                            "subject_type": "file",
                        },
                    )
                base_s.append(time.perf_counter() - start)
                base_requests = len(state.log) - before
    return {
        "push": statistics.median(push_s),
        "pull": statistics.median(pull_s),
        "base": statistics.median(base_s),
        "requests": requests,
        "base_requests": base_requests,
        "writes": writes,
        "lines": lines,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", default="10,100,400")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(
        "| notes | line comments | push requests (POST) | push median s | pull median s "
        "| one comment per note: requests | s | push/baseline time |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (int(x) for x in args.notes.split(",")):
        r = run(n, args.runs)
        print(
            f"| {n} | {r['lines']} | {r['requests']} ({r['writes']}) | {r['push']:.3f} | "
            f"{r['pull']:.3f} | "
            f"{r['base_requests']} | {r['base']:.3f} | {r['push'] / r['base']:.2f} |"
        )


if __name__ == "__main__":
    main()
