"""The local sandbox's child, between fork and exec, allocates nothing once its
address-space limit is set: the child is a copy of gem-eval's process (often larger than
the limit once litellm is loaded), so an allocation after it could fail, and a command
then failed at random with "Exception occurred in preexec_fn" (a harness_error)."""

from __future__ import annotations

import resource
import signal
from typing import Any

import pytest

from gem_eval.sandbox.local import LocalSandbox


def test_the_address_space_limit_is_set_last(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    monkeypatch.setattr(resource, "setrlimit", lambda which, pair: calls.append(("limit", which)))
    monkeypatch.setattr(signal, "signal", lambda signum, handler: calls.append(("signal", signum)))
    LocalSandbox(memory_mb=256, cpu_seconds=10, max_file_mb=1)._preexec()
    assert calls[0] == ("signal", signal.SIGINT)
    assert calls[-1] == ("limit", resource.RLIMIT_AS)
    assert {c for c in calls if c[0] == "limit"} == {
        ("limit", resource.RLIMIT_CPU),
        ("limit", resource.RLIMIT_FSIZE),
        ("limit", resource.RLIMIT_AS),
    }
