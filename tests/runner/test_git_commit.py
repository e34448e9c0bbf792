"""The manifest's ``git_commit`` is gem-eval's own commit, wherever the run starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gem_eval.runner.plan import git_commit

CHECKOUT = Path(__file__).resolve().parents[2]


def test_the_commit_is_gem_evals_not_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def git(*args: str, cwd: Path) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    # A user's own project, with a commit of its own, as the working directory.
    git("init", "-q", cwd=tmp_path)
    git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "x",
        cwd=tmp_path)  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert git_commit() == git("rev-parse", "HEAD", cwd=CHECKOUT)
    assert git_commit() != git("rev-parse", "HEAD", cwd=tmp_path)
