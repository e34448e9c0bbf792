"""Wall time of ``gem-eval --help`` against a bare Python start-up.

Run: ``.venv/bin/python bench/cli_startup.py``. Median of 15 runs each.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 15


def median_ms(cmd: list[str], expect: str) -> float:
    """Median wall milliseconds of ``cmd``, each run checked to print ``expect``."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        times.append((time.perf_counter() - start) * 1000)
        if expect not in done.stdout:
            sys.exit(f"bench: no figures: {cmd} printed {done.stdout[:200]!r}")
    return statistics.median(times)


def main() -> None:
    script = Path(sys.executable).with_name("gem-eval")
    python = median_ms([sys.executable, "-c", "print('ok')"], "ok")
    cli = median_ms([str(script), "--help"], "run")
    print(f"python -c print: {python:6.0f} ms")
    print(f"gem-eval --help: {cli:6.0f} ms  ({cli / python:.1f}x bare Python; target < 300 ms)")


if __name__ == "__main__":
    main()
