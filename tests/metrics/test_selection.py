"""Which runs a leaderboard shows: each model's latest finished run per suite with the
tasks' own scorers by default, every run with ``--all-runs``, the runs named otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from gem_eval.metrics.selection import is_own_scored, select_runs
from tests.metrics.test_summary import episode, frame


def run(
    run_id: str,
    started_at: float,
    *,
    models: tuple[str, ...] = ("m",),
    suite: str = "smoke",
    status: str = "finished",
    scorer: str = "success",
    rescored_from: str | None = None,
    rescore_scorer: str | None = None,
    variant: str | None = None,
    played_at: float | None = None,
    suite_hash: str = "h1",
) -> dict[str, Any]:
    """An index row (:meth:`gem_eval.store.Index.runs`) of a run of tasks t0 and t1."""
    return {
        "run_id": run_id, "suite": suite, "models": list(models), "status": status,
        "started_at": started_at, "scorers": {"t0": scorer, "t1": scorer},
        "rescored_from": rescored_from, "rescore_scorer": rescore_scorer,
        "variant": variant, "played_at": started_at if played_at is None else played_at,
        "suite_hash": suite_hash,
    }  # fmt: skip


def shown(runs: list[dict[str, Any]], **options: Any) -> dict[str, set[str]]:
    return select_runs(runs, **options).models


def test_each_model_shows_its_latest_finished_run_per_suite() -> None:
    runs = [
        run("a1", 1, models=("a", "b")),
        run("a2", 2, models=("a",)),  # a's re-run: supersedes a1 for a, not for b
        run("a3", 3, models=("a",), status="interrupted"),  # not finished: skipped
        run("g1", 4, models=("a",), suite="games"),
    ]
    assert shown(runs) == {"a1": {"b"}, "a2": {"a"}, "g1": {"a"}}
    chosen = select_runs(runs)
    assert chosen.run_ids == ["a1", "a2", "g1"]
    assert chosen.hint() == "1 other run not shown: --all-runs shows every run"
    assert shown(runs, suite="games") == {"g1": {"a"}}


def test_a_model_without_a_finished_run_shows_its_latest_and_says_so() -> None:
    runs = [run("r1", 1, status="failed"), run("r2", 2, status="interrupted")]
    chosen = select_runs(runs)
    assert chosen.models == {"r2": {"m"}}
    assert chosen.warnings() == ["m has no finished run of smoke: its latest, r2, is interrupted"]


def test_an_exploratory_rescore_never_displaces_the_own_scorer() -> None:
    runs = [
        run("orig", 1),
        run("ret", 2, scorer="return", rescored_from="orig", rescore_scorer="return"),
    ]
    chosen = select_runs(runs)
    assert chosen.models == {"orig": {"m"}}
    assert chosen.title("model").endswith("run orig, the tasks' own scorers, by model")
    hint = chosen.hint()
    assert hint is not None and "--scorer return" in hint
    assert shown(runs, scorer="return") == {"ret": {"m"}}
    assert shown(runs, all_runs=True) == {"orig": {"m"}, "ret": {"m"}}


def test_a_rescore_with_the_own_scorer_stands_in_for_its_original() -> None:
    runs = [
        run("orig", 1),
        run("fixed", 2, rescored_from="orig"),  # a fixed grader, the same scorer
        run("asked", 3, rescored_from="orig", rescore_scorer="success"),  # asked, but own
    ]
    assert shown(runs) == {"asked": {"m"}}
    chain = [
        run("orig", 1),
        run("ret", 2, scorer="return", rescored_from="orig", rescore_scorer="return"),
        run("again", 3, scorer="return", rescored_from="ret"),  # keeps ret's: not own
    ]
    assert shown(chain) == {"orig": {"m"}}


def test_own_scorer_when_the_original_is_gone() -> None:
    by_id: dict[str, dict[str, Any]] = {}
    assert is_own_scored(run("r", 2, rescored_from="gone"), by_id)
    asked = run("r", 2, scorer="return", rescored_from="gone", rescore_scorer="return")
    assert not is_own_scored(asked, by_id)


def test_named_runs_and_all_runs_show_exactly_those() -> None:
    runs = [run("a", 1), run("b", 2), run("c", 3, suite="games")]
    assert select_runs(runs, named=[runs[0], runs[0]]).models == {"a": {"m"}}
    assert select_runs(runs, named=[runs[2], runs[0]]).run_ids == ["a", "c"]
    every = select_runs(runs, all_runs=True)
    assert every.run_ids == ["a", "b", "c"] and every.hint() is None
    assert every.title("model") == "every run (3), by model"
    with pytest.raises(ValueError):
        select_runs(runs, named=runs, all_runs=True)


def test_titles_say_the_rule_and_name_a_lone_run_and_suite() -> None:
    runs = [run("a", 1), run("b", 2, status="failed")]
    assert select_runs(runs).title("task") == (
        "suite smoke, each model's latest finished run of the whole suite, run a, the tasks' "
        "own scorers, by task"
    )
    named = select_runs(runs, named=runs, scorer="success")
    assert named.title("model") == "suite smoke, 2 runs named, scored by success, by model"


def test_keep_takes_the_chosen_models_of_each_run_and_the_scorer() -> None:
    runs = [run("a1", 1, models=("a", "b")), run("a2", 2, models=("a",))]
    rows = [
        episode(model=m, run_id=r, sample=s)
        for r, models in (("a1", ("a", "b")), ("a2", ("a",)))
        for m in models
        for s in range(2)
    ]
    kept = select_runs(runs).keep(frame(rows).assign(scorer="success"))
    assert sorted(set(zip(kept["run_id"], kept["model"]))) == [("a1", "b"), ("a2", "a")]
    judged = frame(rows).assign(scorer=["judge:openai/j", "success"] * 3)
    for r in runs:
        r["scorers"] = {"t0": "judge:openai/j", "t1": "success"}
    by_judge = select_runs(runs, all_runs=True, scorer="judge").keep(judged)
    assert len(by_judge) == 3 and set(by_judge["scorer"]) == {"judge:openai/j"}


def test_a_part_of_the_suite_stands_only_for_a_model_without_a_whole_run() -> None:
    """A's Wordle-only run is newer than its whole run, B has only a part: A's whole run
    stands, and B's part is shown, marked, and named in a note."""
    wordle = "--task 'game:Wordle*'"
    runs = [
        run("a-whole", 1, models=("a",)),
        run("a-part", 2, models=("a",), variant=wordle),
        run("b-part", 3, models=("b",), variant="--sample 0-4"),
        run("b-cut", 4, models=("b",), status="interrupted"),  # whole, but not finished
    ]
    chosen = select_runs(runs)
    assert chosen.models == {"a-whole": {"a"}, "b-part": {"b"}}
    assert chosen.warnings() == [
        "b has no finished run of the whole suite smoke as written: its row is run "
        "b-part's, played with --sample 0-4",
        "b's latest run of the whole suite smoke, b-cut, is interrupted: its row is the "
        "earlier finished run b-part's",
    ]
    assert chosen.variants() == {"b-part": "--sample 0-4"}
    every = select_runs(runs, all_runs=True)
    assert every.variants() == {"a-part": wordle, "b-part": "--sample 0-4"}
    assert every.warnings() == []  # the column says it


def test_a_run_with_its_own_seed_or_turn_limit_is_a_variant_of_the_suite() -> None:
    runs = [
        run("plain", 1),
        run("seeded", 2, variant="--seed 7", suite_hash="h2"),
        run("short", 3, variant="--max-turns 2", suite_hash="h3"),
    ]
    assert shown(runs) == {"plain": {"m"}}
    assert shown(runs[1:]) == {"short": {"m"}}  # no plain run: the latest variant


def test_runs_of_different_suite_hashes_on_one_board_are_named() -> None:
    runs = [run("a", 1, models=("a",)), run("b", 2, models=("b",), suite_hash="h2")]
    assert select_runs(runs).warnings() == [
        "the runs shown of smoke evaluated different versions of it (suite hashes "
        "h1: a; h2: b): their samples or tasks differ"
    ]
    assert select_runs(runs[:1]).warnings() == []


def test_a_rescore_counts_as_played_when_its_original_was() -> None:
    """Re-scoring the 17:15 run does not bring it back over the 17:16 run; re-scoring
    the 17:16 run replaces it."""
    runs = [
        run("r1715", 1715),
        run("r1716", 1716),
        run("again", 1800, rescored_from="r1715"),
    ]
    assert shown(runs) == {"r1716": {"m"}}
    runs.append(run("latest", 1900, rescored_from="r1716"))
    assert shown(runs) == {"latest": {"m"}}
    chain = [*runs[:2], run("once", 1800, rescored_from="r1715")]
    chain.append(run("twice", 2000, rescored_from="once"))  # a chain ends at r1715
    assert shown(chain) == {"r1716": {"m"}}
    # the original no longer indexed: the play time its re-scoring recorded
    gone = [runs[1], run("orphan", 2000, rescored_from="deleted", played_at=1715)]
    assert shown(gone) == {"r1716": {"m"}}


def test_a_rescore_inherits_its_originals_part() -> None:
    runs = [
        run("whole", 1),
        run("part", 2, variant="--task 't0'"),
        run("part-again", 3, rescored_from="part", variant="--task 't0'"),
    ]
    assert shown(runs) == {"whole": {"m"}}


def test_named_runs_are_counted_as_named_and_those_left_out_are_named() -> None:
    runs = [
        run("own", 1),
        run("ret", 2, scorer="return", rescored_from="own", rescore_scorer="return"),
        run("g", 3, suite="games"),
    ]
    chosen = select_runs(runs, named=runs[:2], scorer="success")
    assert chosen.run_ids == ["own"]
    assert chosen.title("model") == (
        "suite smoke, 2 runs named, run own, scored by success, by model"
    )
    assert chosen.warnings() == ["run ret holds no scores by success: not shown"]
    other = select_runs(runs, named=[runs[0], runs[2]], suite="games")
    assert other.title("model") == "suite games, 2 runs named, run g, by model"
    assert other.warnings() == ["run own is of suite smoke, not games: not shown"]
    every = select_runs(runs, all_runs=True, scorer="return")
    assert every.title("model") == "suite smoke, every run (1), run ret, scored by return, by model"
    assert every.hint() == "2 other runs hold no scores by return"


def test_a_newer_unfinished_run_passed_over_is_named() -> None:
    """The board shows a's finished run, and says that a newer one is interrupted; an
    older unfinished run, or one of part of the suite, is no news."""
    runs = [
        run("old-cut", 0, status="interrupted"),
        run("done", 1),
        run("part", 2, variant="--task 't0'"),
        run("cut", 3, status="interrupted"),
        run("cut-part", 4, status="failed", variant="--task 't0'"),
    ]
    chosen = select_runs(runs)
    assert chosen.models == {"done": {"m"}}
    assert chosen.warnings() == [
        "m's latest run of the whole suite smoke, cut, is interrupted: its row is the "
        "earlier finished run done's"
    ]


def test_a_row_is_an_agent_and_model_pair() -> None:
    """A model played by gem-eval's loop and by Terminus-2: a pair each, each named in
    lines as agent + model; ``agent`` keeps one agent's, and names a run it leaves out."""
    terminus = {"t0": "terminus-2", "t1": "terminus-2"}
    runs = [run("loop", 1), {**run("tb", 2, status="interrupted"), "agents": terminus}]
    chosen = select_runs(runs)
    assert chosen.players == {"loop": {("gem-eval", "m")}, "tb": {("terminus-2", "m")}}
    assert chosen.warnings() == [
        "terminus-2 + m has no finished run of smoke: its latest, tb, is interrupted"
    ]
    assert chosen.title("model").startswith("suite smoke, each agent + model's latest")
    only = select_runs(runs, agent="terminus-2")
    assert only.players == {"tb": {("terminus-2", "m")}} and only.considered == 1
    assert "played by terminus-2" in only.title("model")
    named = select_runs(runs, named=runs, agent="terminus-2")
    assert named.run_ids == ["tb"]
    assert named.left_out == ["run loop was played by gem-eval, not terminus-2: not shown"]


def test_keep_takes_each_runs_chosen_agents() -> None:
    """A run whose tasks two agents played, of which only one pair is shown."""
    rows = [
        episode(task_id="t0", run_id="mixed", agent="terminus-2"),
        episode(task_id="t1", run_id="mixed", agent="gem-eval"),
        episode(task_id="t1", run_id="loop", agent="gem-eval"),
    ]
    mixed = {**run("mixed", 1), "agents": {"t0": "terminus-2", "t1": "gem-eval"}}
    chosen = select_runs([mixed, run("loop", 2)])
    assert chosen.players == {"mixed": {("terminus-2", "m")}, "loop": {("gem-eval", "m")}}
    kept = chosen.keep(frame(rows).assign(agent=[r["agent"] for r in rows]))
    assert list(zip(kept["run_id"], kept["agent"])) == [
        ("mixed", "terminus-2"),
        ("loop", "gem-eval"),
    ]
