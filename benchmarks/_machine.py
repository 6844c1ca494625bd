"""One line describing the machine a benchmark ran on, printed above every results table."""

from __future__ import annotations

import os
import platform
import sqlite3
from pathlib import Path

__all__ = ["describe"]


def _cpu_model() -> str:
    # /proc/cpuinfo exists on Linux only; elsewhere platform.processor() is the best guess.
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model"):
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def describe() -> str:
    """E.g. `Linux 6.1.0 x86_64 | Intel(R) Xeon(R) … | 2 cores | CPython 3.11.7 | SQLite 3.40.1`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return " | ".join(
        [
            f"{platform.system()} {platform.release()} {platform.machine()}",
            _cpu_model(),
            f"{cores} cores",
            f"{platform.python_implementation()} {platform.python_version()}",
            f"SQLite {sqlite3.sqlite_version}",
        ]
    )


if __name__ == "__main__":
    print(describe())
