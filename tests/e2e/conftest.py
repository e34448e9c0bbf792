"""Every end-to-end test also checks that gem-eval itself did not fail: no episode of
any run it wrote ended as a ``harness_error`` (a bug in gem-eval, hidden from scores)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest


def harness_errors(root: Path) -> list[str]:
    """``key: error`` of every ``harness_error`` record under ``root``."""
    found = []
    for path in root.rglob("episodes.jsonl"):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("outcome") == "harness_error":
                error = (record.get("trajectory") or {}).get("error")
                found.append(f"{path.parent.name} {record.get('key')}: {error}")
    return found


@pytest.fixture(autouse=True)
def _no_harness_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    if "tmp_path" not in request.fixturenames:
        yield
        return
    root: Path = request.getfixturevalue("tmp_path")  # taken before it is torn down
    yield
    found = harness_errors(root)
    assert not found, "gem-eval failed (harness_error) in: " + "; ".join(found)


def as_from_a_terminal() -> None:
    """``preexec_fn`` for a run the test will stop with SIGINT: Ctrl-C's default action,
    as in a terminal. A shell without job control starts background commands with SIGINT
    ignored (POSIX), and a process started so (a CI script run with ``&``) rightly keeps
    ignoring it, as Python does; the tests play a user at a terminal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
