"""What several benchmarks share: made-up page text, the selection the overlay sends, percentiles,
`annotate serve` in a subprocess, and Debian's Chromium."""

from __future__ import annotations

import os
import random
import re
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from annotate.anchoring import build_selector

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "WORDS", "AnnotateServer", "p", "selection", "sentence"]

VOCABULARY = (
    "the a of to and in is for with on that this by be as can you it are or from config plugin "
    "theme page site build serve review note link markdown anchor server overlay reply agent "
    "status quote source line file folder token change feed export store read write"
)
WORDS = VOCABULARY.split()

CHROMIUM = "/usr/bin/chromium"
# What this machine's Chromium needs headless as root, without reaching for the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def sentence(rng: random.Random, low: int = 10, high: int = 22) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    words.append(f"n{rng.randrange(10**9)}")  # so that quotes rarely repeat
    return " ".join(words).capitalize() + "."


def selection(text: str, start: int, end: int) -> dict[str, Any]:
    """What the overlay sends for `text[start:end]`: the quote, 32 characters either side, where."""
    selector = build_selector(text, start, end)
    quote = selector["exact"]
    return {
        "selectedText": quote,
        "quote": {"exact": quote, "prefix": selector["prefix"], "suffix": selector["suffix"]},
        "position": {"start": start, "end": end},
    }


def p(values: list[float], q: float) -> float:
    """The `q`th percentile."""
    if len(values) == 1:
        return values[0]
    # "inclusive" keeps the percentile inside the measured range for few samples.
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


class AnnotateServer:
    """`annotate serve PROJECT/site` on a free loopback port, in a subprocess."""

    def __init__(self, project: Path, extra: Sequence[str] = ()) -> None:
        """`extra`: more arguments for `annotate serve` (`--db URL`, `--workers 2`, …)."""
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "annotate.cli", "serve", str(project / "site")),
                *("--port", "0", "--project", str(project), *extra),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            # Not the caller's folder: run from a checkout, `-m` would import that checkout's
            # annotate rather than the interpreter's (a before/after pair of trees).
            cwd=project,
        )
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        match = re.search(r"http://([\d.]+):(\d+)/", line)
        if not match:
            self.proc.kill()
            raise SystemExit(f"annotate serve did not start: {line!r}")
        self.host, self.port = match[1], int(match[2])
        self.url = f"http://{self.host}:{self.port}/"
        self.token = (project / ".annotate" / "token").read_text().strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()
