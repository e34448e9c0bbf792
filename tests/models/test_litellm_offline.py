"""litellm never reaches for the network by itself (its cost map), in the CLI or the library."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _without_the_variable() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_importing_litellm_through_gem_eval_fetches_nothing() -> None:
    code = (
        "import os; from gem_eval.models.litellm_model import import_litellm; import_litellm(); "
        "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    done = _python(code, _without_the_variable())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    assert "cost map" not in done.stderr, done.stderr


def test_a_users_own_setting_wins() -> None:
    code = (
        "import os; from gem_eval.models.litellm_model import import_litellm; import_litellm(); "
        "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    )
    env = {**_without_the_variable(), "LITELLM_LOCAL_MODEL_COST_MAP": "False"}
    # The user's "False" would fetch: make the fetch impossible rather than slow.
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"
    done = _python(code, env)
    assert done.stdout.strip() == "False", done.stderr


def test_the_cli_sets_it_before_any_import() -> None:
    code = (
        "import os, sys; from gem_eval.cli import main; sys.argv = ['gem-eval', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"
    )
    done = _python(code, _without_the_variable())
    assert done.stdout.strip().splitlines()[-1] == "True", done.stdout + done.stderr
