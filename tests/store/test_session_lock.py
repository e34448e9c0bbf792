"""The session lock: one process plays a run at a time; a killed one leaves it free."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gem_eval.store import session_lock

HOLD = """
import sys, time
from pathlib import Path
from gem_eval.store import session_lock
with session_lock.playing(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_run_played_here_is_busy_until_its_session_ends(tmp_path: Path) -> None:
    assert not session_lock.is_played(tmp_path)  # never played: no lock file
    with session_lock.playing(tmp_path):
        assert session_lock.is_played(tmp_path)
        with pytest.raises(session_lock.RunBusyError, match="another process"):
            session_lock.check_free(tmp_path)
    assert not session_lock.is_played(tmp_path)
    session_lock.check_free(tmp_path)


def test_another_process_holding_it_refuses_this_one_until_it_is_killed(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert session_lock.is_played(tmp_path)
        with pytest.raises(session_lock.RunBusyError), session_lock.playing(tmp_path):
            pass
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not session_lock.is_played(tmp_path)  # the lock went with the process
    with session_lock.playing(tmp_path):
        pass
