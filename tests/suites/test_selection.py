"""``--task`` / ``--sample`` / ``--category``: which part of a suite a run plays."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gem_eval.errors import UserError
from gem_eval.records import ModelSpec
from gem_eval.runner.session import RunOptions, plan_run, preview_run
from gem_eval.suites import load_suite
from gem_eval.suites.selection import Selection, parse_sample_ids

SUITE = """
name: sel
defaults: {samples: 4, seed: 10}
tasks:
  - {id: tb/hello-a, env: game:GuessTheNumber-v0-easy, category: shell}
  - {id: tb/hello-b, env: game:GuessTheNumber-v0-easy, category: shell}
  - {id: tb/other, env: game:GuessTheNumber-v0-easy, category: files}
  - {id: wordle, env: game:Wordle-v0-easy, samples: 2}
"""
MODELS = [ModelSpec(name="m1"), ModelSpec(name="m2")]


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    path = tmp_path / "sel.yaml"
    path.write_text(textwrap.dedent(SUITE))
    return path


def keys(suite_path: Path, **select: object) -> list[str]:
    suite = load_suite(suite_path)
    selection = Selection.parse(**select)  # type: ignore[arg-type]
    return [s.key for s in suite.episodes(MODELS, select=selection)]


def test_parse_sample_ids_takes_indices_and_ranges() -> None:
    assert parse_sample_ids("0,3,10-12") == (0, 3, 10, 11, 12)
    for bad in ("a", "3-1", "-1", "1,,2", "1-", "", " "):
        with pytest.raises(UserError):
            parse_sample_ids(bad)
    with pytest.raises(UserError, match="more than 1,000,000 samples"):
        parse_sample_ids("0-999999999999")  # refused at once, nothing built


def test_a_task_glob_keeps_matching_tasks_for_every_model(suite_path: Path) -> None:
    got = keys(suite_path, tasks=["tb/hello-*"])
    assert {k.split("|")[1] for k in got} == {"tb/hello-a", "tb/hello-b"}
    assert len(got) == 2 * 2 * 4  # models x tasks x samples


def test_several_globs_and_a_category_combine(suite_path: Path) -> None:
    assert {k.split("|")[1] for k in keys(suite_path, tasks=["tb/other", "wordle"])} == {
        "tb/other",
        "wordle",
    }
    got = keys(suite_path, tasks=["tb/*"], categories=["files"])
    assert {k.split("|")[1] for k in got} == {"tb/other"}


def test_selected_samples_keep_their_index_seed_and_key(suite_path: Path) -> None:
    suite = load_suite(suite_path)
    every = {s.key: s for s in suite.episodes(MODELS)}
    chosen = suite.episodes(MODELS, select=Selection.parse(samples="1,3"))
    assert {s.sample for s in chosen} == {1, 3}
    for spec in chosen:  # the same episode as in a run of the whole suite
        assert every[spec.key].seed == spec.seed == 10 + spec.sample
    # wordle has samples 0-1 only: sample 3 is simply not there for it
    assert sorted(s.sample for s in chosen if s.task.id == "wordle") == [1, 1]


def test_a_selection_that_matches_nothing_is_one_line(suite_path: Path) -> None:
    suite = load_suite(suite_path)
    cases = {
        "tb/helo-a": ("--task 'tb/helo-a' matches no task", "Did you mean: tb/hello-a"),
        "zzz*": ("matches no task", "tb/hello-a, tb/hello-b, tb/other, wordle"),
    }
    for glob, parts in cases.items():
        with pytest.raises(UserError) as err:
            suite.episodes(MODELS, select=Selection.parse(tasks=[glob]))
        assert all(p in str(err.value) for p in parts), str(err.value)
    with pytest.raises(UserError, match=r"'shel' is no category.*Did you mean: shell"):
        suite.episodes(MODELS, select=Selection.parse(categories=["shel"]))
    with pytest.raises(UserError, match="select no task"):
        suite.episodes(MODELS, select=Selection.parse(tasks=["wordle"], categories=["shell"]))
    with pytest.raises(UserError, match="samples 0-1 only"):
        suite.episodes(MODELS, select=Selection.parse(tasks=["wordle"], samples="5"))


def test_a_run_plans_and_records_only_the_selection(suite_path: Path, tmp_path: Path) -> None:
    options = RunOptions(tasks=["tb/hello-*"], samples=[0, 2])
    plan = plan_run(str(suite_path), MODELS[:1], options, tmp_path / "results")
    assert sorted(s.key for s in plan.todo) == [
        f"m1|tb/hello-{t}|{i}|0" for t in "ab" for i in (0, 2)
    ]
    assert [t.id for t in plan.manifest.tasks] == ["tb/hello-a", "tb/hello-b"]
    assert plan.manifest.episodes_planned == 4
    # The suite hash is the whole suite's: the part compares with a run of all of it.
    whole = plan_run(str(suite_path), MODELS[:1], RunOptions(), tmp_path / "results")
    assert plan.manifest.suite_hash == whole.manifest.suite_hash
    # Planning creates nothing (a run's directory is made when it starts), nor does
    # --dry-run's, which plans the same episodes.
    assert not (tmp_path / "results").exists()
    dry = preview_run(str(suite_path), MODELS[:1], options, tmp_path / "results")
    assert sorted(s.key for s in dry.episodes) == sorted(s.key for s in plan.todo)
    assert (dry.suite, dry.suite_hash) == ("sel", plan.manifest.suite_hash)
    assert not (tmp_path / "results").exists()
