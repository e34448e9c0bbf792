"""The ReasoningGym family: every ``rg:*`` env makes, asks, and scores its generator's own
oracle answer as a success; extraction, seeding, caching, config overrides and errors.

Exceptions from reasoning-gym 0.1.25 itself are listed below with their reasons, so that a
new release that fixes (or breaks) one shows up here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from gem_eval import make
from gem_eval.core import Env
from gem_eval.envs.rg.env import ReasoningGymEnv, clear_cache
from gem_eval.envs.rg.names import NAMES
from gem_eval.errors import EnvArgumentError

SIZE = 5

COMPOSITE = {
    "datasets": [
        {"name": "chain_sum", "weight": 1},
        {"name": "word_sorting", "weight": 1, "config": {"max_words": 5}},
    ]
}
"""``composite`` has no default sub-datasets: it cannot be built without a config."""

METADATA_ORACLE = {
    "graph_color": ("possible_answer", "many colourings are right; answer is None"),
    "propositional_logic": ("example_answer", "many conclusions follow; answer is None"),
    "rubiks_cube": ("example_correct_answer", "many move sequences solve; answer is None"),
}
"""entry["answer"] is None; a valid answer is kept in the metadata under this key."""

NO_ORACLE = {
    "boxnet": "a multi-step box-moving plan; answer is None and no solution is stored",
    "rush_hour": "a move sequence; answer is None and only min_moves is stored",
}
"""entry["answer"] is None and no valid answer is stored anywhere: not oracle-tested."""

SCORES_ANY_ANSWER: dict[str, str] = {}
"""Upstream scoring bugs where garbage scores 1.0 (none left: see the fix below)."""

GARBAGE = ("garbage zzz", "", "[[1, 2], [3", "None", "{}")
"""Wrong answers of many shapes (no astronomically large numbers: sympy-based scorers take
about a minute on ``1e999999``)."""

HASH_DEPENDENT = (
    "isomorphic_strings",
    "knight_swap",
    "polynomial_multiplication",
    "ransom_note",
    "word_ladder",
)
"""These iterate over sets of strings: their questions differ across PYTHONHASHSEEDs."""

NOT_REPRODUCIBLE = {"list_functions": "one task family draws from the global random module"}


def _make(name: str, **kwargs: Any) -> Env:
    if name == "composite":
        kwargs.setdefault("config", COMPOSITE)
    return make(f"rg:{name}-v0", size=kwargs.pop("size", SIZE), **kwargs)


def _rg(env: Env) -> ReasoningGymEnv:
    inner = env.unwrapped
    assert isinstance(inner, ReasoningGymEnv)
    return inner


# -- the list of generators ------------------------------------------------------------


def test_names_match_the_installed_reasoning_gym() -> None:
    from reasoning_gym.factory import DATASETS  # type: ignore[import-untyped]

    assert len(NAMES) == len(set(NAMES))
    assert sorted(NAMES) == sorted(DATASETS)


def test_importing_and_making_does_not_import_reasoning_gym() -> None:
    code = (
        "import sys\n"
        "import gem_eval.envs.rg.env\n"
        "from gem_eval import list_envs, make\n"
        "assert len(list_envs('rg')) == 106\n"
        "make('rg:gsm_symbolic-v0', size=3, config={'difficulty': 1.0})\n"
        "print('reasoning_gym' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


# -- every generator --------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:loadtxt")  # pool_matrix's scorer on garbage
@pytest.mark.parametrize("name", NAMES)
def test_every_generator_asks_and_scores_its_oracle(name: str) -> None:
    env = _make(name)
    obs, info = env.reset(seed=0)
    rg = _rg(env)
    assert rg.question.strip() and rg.question in obs
    assert "<answer>" in obs
    assert info["index"] == 0 and info["source_dataset"]
    entry = rg.entry
    assert entry is not None

    if name in NO_ORACLE:
        assert entry["answer"] is None
        _, reward, terminated, _, info = env.step("<answer>garbage zzz</answer>")
        assert terminated and reward < 1.0 and not info["success"]
        return
    if name in METADATA_ORACLE:
        assert entry["answer"] is None
        value = entry["metadata"][METADATA_ORACLE[name][0]]
        oracle = value if isinstance(value, str) else json.dumps(value)
    else:
        oracle = entry["answer"]
        assert isinstance(oracle, str)

    _, reward, terminated, _, info = env.step(f"Thinking...\n<answer>{oracle}</answer>")
    assert info["success"] and reward == 1.0 and terminated, info
    assert info["score"] == 1.0 and not info["format_error"]
    assert info["source_dataset"] == entry["metadata"]["source_dataset"]
    assert ("difficulty" in info) == ("difficulty" in entry["metadata"])

    for garbage in GARBAGE:
        if garbage == oracle:
            continue
        env.reset(seed=0)
        _, reward, _, _, info = env.step(f"<answer>{garbage}</answer>")  # never raises
        assert 0.0 <= info["score"] <= 1.0 and reward == info["score"]
        if name not in SCORES_ANY_ANSWER:
            assert reward < 1.0 and not info["success"], (garbage, info)


def test_game_of_life_halting_is_scored_by_its_answer_not_by_bool() -> None:
    """Upstream compares bool(answer) == bool(entry['answer']) on strings (bool('False')
    is True), so every non-empty answer would score 1.0; the env scores the answer."""
    from reasoning_gym import create_dataset

    entry = create_dataset("game_of_life_halting", seed=0, size=1)[0]
    assert create_dataset("game_of_life_halting", seed=0, size=1).score_answer("zzz", entry) == 1
    env = _make("game_of_life_halting")
    env.reset(seed=0)
    wrong = "True" if str(env.entry["answer"]) == "False" else "False"
    assert env.step(f"<answer>{wrong}</answer>")[1] == 0.0
    env.reset(seed=0)
    assert env.step(f"<answer>{env.entry['answer']}</answer>")[1] == 1.0


# -- answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("<answer>42</answer>", "42"),
        ("<answer> 1 </answer> then <ANSWER>\n2\n</ANSWER>", "2"),
        ("<answer>\\boxed{\\frac{1}{2}}</answer>", "\\frac{1}{2}"),
        ("<answer>\\boxed{1} or \\boxed{2}</answer>", "\\boxed{1} or \\boxed{2}"),
        ("so \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{1} and \\boxed{2}", "2"),
        ("<answer></answer>", ""),
        ("the answer is 42", None),
        ("<answer>42", None),
    ],
)
def test_extract(action: str, expected: str | None) -> None:
    env = _rg(_make("basic_arithmetic"))
    assert env.extract(action) == expected


def test_no_answer_is_a_format_error() -> None:
    env = _make("basic_arithmetic", max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("I think it is 42.")
    assert info["format_error"] and reward == -0.1 and not terminated
    assert "<answer>" in obs
    answer = _rg(env).answer
    _, reward, terminated, _, info = env.step(f"\\boxed{{{answer}}}")
    assert info["success"] and reward == 1.0 and terminated


def test_a_scorer_that_raises_scores_zero() -> None:
    env = _make("prime_factorization")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<answer>garbage zzz</answer>")
    assert reward == 0.0 and terminated and not info["success"]
    assert info["score_error"].startswith("ValueError")


def test_success_threshold_accepts_partial_scores() -> None:
    strict, lenient = _make("gsm_symbolic"), _make("gsm_symbolic", success_threshold=0.01)
    for env in (strict, lenient):
        env.reset(seed=0)
    strict_info, lenient_info = (env.step("<answer>-1</answer>")[4] for env in (strict, lenient))
    assert strict_info["score"] == lenient_info["score"] == 0.01  # a number, but wrong
    assert not strict_info["success"] and lenient_info["success"]


# -- seeds and the cache ------------------------------------------------------------------

SAMPLE = ("basic_arithmetic", "gsm_symbolic", "sudoku", "countdown", "knights_knaves", "acre")


@pytest.mark.parametrize("name", SAMPLE)
def test_same_seed_same_question_after_a_rebuild(name: str) -> None:
    questions = {seed: _make(name).reset(seed=seed)[0] for seed in (0, 1, 2, SIZE + 1)}
    clear_cache()
    assert _make(name).reset(seed=2)[0] == questions[2]  # rebuilt, other order
    assert _make(name).reset(seed=0)[0] == questions[0]
    assert questions[SIZE + 1] == questions[1]  # index = seed % size
    assert len(set(questions.values())) == 3


def test_a_seedless_reset_draws_from_the_env_rng() -> None:
    first, second = _make("chain_sum", size=1000), _make("chain_sum", size=1000)
    first.reset(seed=5)
    second.reset(seed=5)
    draws = [first.reset()[1]["index"] for _ in range(3)]
    assert draws == [second.reset()[1]["index"] for _ in range(3)]
    assert len(set(draws)) > 1


@pytest.mark.slow
def test_questions_are_the_same_in_another_process() -> None:
    stable = [n for n in SAMPLE if n not in HASH_DEPENDENT]
    code = (
        "import json, sys\n"
        "from gem_eval import make\n"
        "print(json.dumps({n: make(f'rg:{n}-v0', size=5).reset(seed=3)[0] "
        "for n in sys.argv[1:]}))\n"
    )
    runs = [  # two processes under one PYTHONHASHSEED, in parallel
        subprocess.Popen(
            [sys.executable, "-c", code, *stable, *HASH_DEPENDENT],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "2"},
        )
        for _ in range(2)
    ]
    first, second = (json.loads(run.communicate(timeout=120)[0].splitlines()[-1]) for run in runs)
    assert all(run.returncode == 0 for run in runs)
    assert first == second
    assert {n: first[n] for n in stable} == {n: _make(n).reset(seed=3)[0] for n in stable}


def test_envs_share_one_dataset() -> None:
    first, second = _make("word_ladder"), _make("word_ladder")
    assert _rg(first).load() is _rg(second).load()
    assert _rg(first).load() is not _rg(_make("word_ladder", dataset_seed=1)).load()


def test_async_reset_and_step() -> None:
    async def episode() -> float:
        env = _make("chain_sum")
        await env.areset(seed=1)
        return (await env.astep(f"<answer>{_rg(env).answer}</answer>"))[1]

    assert asyncio.run(episode()) == 1.0


# -- config ---------------------------------------------------------------------------------


def test_config_overrides_apply() -> None:
    env = _make("basic_arithmetic", config={"min_terms": 5, "max_terms": 5, "operators": ["+"]})
    for seed in range(3):
        env.reset(seed=seed)
        entry = _rg(env).entry
        assert entry is not None and entry["metadata"]["num_terms"] == 5
        assert set("*/") & set(entry["metadata"]["expression"]) == set()
    default = _make("basic_arithmetic")
    assert default.reset(seed=0)[0] != env.reset(seed=0)[0]


def test_composite_mixes_its_datasets() -> None:
    env = _make("composite", size=20)
    sources = {env.reset(seed=seed)[1]["source_dataset"] for seed in range(20)}
    assert sources == {"chain_sum", "word_sorting"}


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("basic_arithmetic", {"max_term": 3}, "no key 'max_term'. Did you mean: max_terms"),
        ("basic_arithmetic", {"min_terms": 9, "max_terms": 3}, "max_terms must be >= min"),
        ("gsm_symbolic", {"difficulty": 0.5}, "only difficulty 1.0 is supported"),
        ("composite", {}, "Must specify at least one dataset"),
        ("composite", {"datasets": [{"weight": 1}]}, "needs a 'name'"),
    ],
)
def test_a_bad_config_is_a_one_line_value_error(
    name: str, config: dict[str, Any], message: str
) -> None:
    env = make(f"rg:{name}-v0", config=config)  # checked when first built, not at make
    with pytest.raises(ValueError, match=f"^rg:{name} config") as caught:
        env.reset(seed=0)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError):
        _rg(env).load()


def test_an_unknown_key_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="Valid keys: min_terms, max_terms, min_digits"):
        make("rg:chain_sum-v0", config={"nope": 1}).reset(seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 0}, "size must be at least 1"),
        ({"success_threshold": 0.0}, "success_threshold"),
        ({"config": {"seed": 3}}, "dataset_seed"),
        ({"config": [1]}, "config must be a mapping"),
        ({"question": "2+2?"}, "takes no parameter 'question'"),
    ],
)
def test_bad_arguments_fail_at_make(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvArgumentError, match=message):
        make("rg:chain_sum-v0", **kwargs)


def test_an_unknown_generator_name_is_refused() -> None:
    with pytest.raises(ValueError, match="Did you mean: chain_sum"):
        ReasoningGymEnv("chain_sums")
