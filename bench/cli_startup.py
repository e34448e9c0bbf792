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


def median_ms(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    script = Path(sys.executable).with_name("gem-eval")
    python = median_ms([sys.executable, "-c", "pass"])
    cli = median_ms([str(script), "--help"])
    print(f"python -c pass : {python:6.0f} ms")
    print(f"gem-eval --help: {cli:6.0f} ms  ({cli / python:.1f}x bare Python; target < 300 ms)")


if __name__ == "__main__":
    main()
