"""`annotate serve` in a subprocess, for the tests that need a real server on a real port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

ANNOTATE = str(Path(sys.executable).parent / "annotate")


def start(
    project: Path, site: Path, *flags: str, env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[str], str, int]:
    """`annotate serve SITE --port 0 --project PROJECT FLAGS…`: the process, and the host and
    port its first line names. AssertionError (the process killed) when it names none in 20 s."""
    proc = subprocess.Popen(
        [ANNOTATE, "serve", str(site), "--port", "0", "--project", str(project), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    _, host, port = listening(proc, 20)
    return proc, host, port


def listening(proc: subprocess.Popen[str], wait: float) -> tuple[str, str, int]:
    """The first line a starting `annotate serve` prints, and the host and port it names.
    AssertionError (the process stopped, its stderr quoted) when it names none in `wait` s."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(wait)
    match = re.search(r"http://([^:/]+):(\d+)/", line[0] if line else "")
    if match is None:
        raise AssertionError(f"annotate serve did not start: {line}: {stop(proc)}")
    return line[0], match[1], int(match[2])


def stop(proc: subprocess.Popen[str]) -> str:
    """Ctrl+C, then SIGKILL after 10 s; what it wrote to stderr (which should hold no traceback)."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read() if proc.stderr else ""
    for pipe in (proc.stdout, proc.stderr):
        if pipe:
            pipe.close()
    return err
