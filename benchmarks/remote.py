"""Remote agents (issue #20): the same MCP calls direct over stdio, over Streamable HTTP, and through
`annotate mcp --remote`.

    .venv/bin/python benchmarks/remote.py [--annotations 500] [--runs 30]

A temp project gets Markdown pages with 20 text annotations each, made through the library. An
`annotate serve` subprocess (uvicorn on a free loopback port) serves it; three clients call the same
tools one at a time, each timed from request to result:

- `stdio`: `annotate mcp` on the project (the baseline: what an agent on the author's laptop uses);
- `http`: the SDK's Streamable HTTP client on `/__annotate/mcp`, one session for the whole run;
- `--remote`: `annotate mcp --remote URL --token-file F` over stdio, on a copy of the project as the
  agent's checkout (one kept Streamable HTTP connection to the server; each note's lines checked
  against the local Markdown);
- `--remote, edited`: the same on a checkout where every page got a line on top, so every note's
  lines differ from the server's and its answer is written again here.

The table gives medians and p99 in ms, the ratio of medians to stdio, and the answer's size in bytes
(the first text block, what the agent reads).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

import annotate  # noqa: E402

sys.path.append(str(HERE))

from _common import p, selection, sentence  # noqa: E402
from _machine import describe  # noqa: E402

SEED = 7
PER_PAGE = 20
WARMUP = 3
TOP = "A line added on top by the agent.\n\n"
ANNOTATE = str(Path(sys.executable).parent / "annotate")


def make_project(root: Path, notes: int) -> list[str]:
    rng = random.Random(SEED)
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: bench\n")
    ids: list[str] = []
    with annotate.open(root) as store:
        for page in range(notes // PER_PAGE):
            lines = [sentence(rng) for _ in range(PER_PAGE * 2)]
            text = "# Page\n\n" + "\n\n".join(lines) + "\n"
            (root / "docs" / f"p{page}.md").write_text(text)
            for i in range(PER_PAGE):
                line = lines[i * 2]
                start = text.index(line) + 5
                data = {
                    "type": "text",
                    "pageUrl": f"/p{page}/",
                    "note": f"Note {i}",
                    **selection(text, start, start + 20),
                }
                ids.append(store.add_annotation(data).id)
    return ids


def serve(project: Path, site: Path) -> tuple[subprocess.Popen[str], str]:
    site.mkdir()
    (site / "index.html").write_text("<html><body>bench</body></html>")
    proc = subprocess.Popen(
        [ANNOTATE, "serve", str(site), "--port", "0", "--project", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"http://[^/]+/", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"annotate serve did not start: {line!r}")
    return proc, match[0]


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(url + "__annotate/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=60) as client:
            yield client


def stdio_client(args: list[str], cwd: Path) -> Client:
    params = StdioServerParameters(command=ANNOTATE, args=args, cwd=str(cwd))
    return Client(params, read_timeout_seconds=60)


async def measure(
    client: Client, name: str, args: dict[str, Any], runs: int
) -> tuple[list[float], int]:
    size = 0
    times: list[float] = []
    for n in range(WARMUP + runs):
        start = time.perf_counter()
        result = await client.call_tool(name, args)
        took = (time.perf_counter() - start) * 1000
        assert not result.is_error, result.content
        size = len(result.content[0].text.encode())  # type: ignore[union-attr]
        if n >= WARMUP:
            times.append(took)
    return times, size


async def run(notes: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / "project"
        ids = make_project(project, notes)
        checkout = root / "checkout"
        shutil.copytree(project / "docs", checkout / "docs")
        shutil.copy(project / "mkdocs.yml", checkout / "mkdocs.yml")
        # The agent's edits: a line on top of every page, so every note's lines differ here.
        edited = root / "edited"
        shutil.copytree(checkout, edited)
        for page in (edited / "docs").glob("*.md"):
            page.write_text(TOP + page.read_text())
        proc, url = serve(project, root / "site")
        token = (project / ".annotate" / "token").read_text().strip()
        tokens = root / "agent-token"
        tokens.write_text(token + "\n")
        tokens.chmod(0o600)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_annotations", {}),
            ("list_annotations", {"pageUrl": "/p1/"}),
            ("get_annotation", {"id": ids[5]}),
            ("get_context", {"id": ids[5]}),
            ("get_export", {}),
            ("summary", {}),
        ]
        clients: dict[str, Callable[[], Any]] = {
            "stdio": lambda: stdio_client(["mcp", "--project", str(project)], project),
            "http": lambda: http_client(url, token),
            "--remote": lambda: stdio_client(
                ["mcp", "--remote", url, "--token-file", str(tokens), "--project", str(checkout)],
                checkout,
            ),
            "--remote, edited": lambda: stdio_client(
                ["mcp", "--remote", url, "--token-file", str(tokens), "--project", str(edited)],
                edited,
            ),
        }
        rows: list[tuple[str, str, float, float, int]] = []
        try:
            for label, make in clients.items():
                async with make() as client:
                    for name, args in calls:
                        times, size = await measure(client, name, args, runs)
                        shown = f"{name}({', '.join(args)})"
                        rows.append((shown, label, p(times, 50), p(times, 99), size))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(10)
    base = {call: p50 for call, label, p50, _, _ in rows if label == "stdio"}
    print(describe())
    print(f"\n{notes} notes on {notes // PER_PAGE} pages, {runs} timed calls each\n")
    print("| call | client | p50 ms | p99 ms | × stdio | answer bytes |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for call, label, p50, p99, size in rows:
        print(f"| {call} | {label} | {p50:.1f} | {p99:.1f} | {p50 / base[call]:.1f} | {size} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--annotations", type=int, default=500)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    anyio.run(run, args.annotations, args.runs)


if __name__ == "__main__":
    main()
