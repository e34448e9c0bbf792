from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from gem_eval.bundled import bundled_root
from gem_eval.cli.suites import suites_app
from gem_eval.core import Env
from gem_eval.envs import GAME_VARIANTS
from gem_eval.errors import UserError
from gem_eval.records import ModelSpec
from gem_eval.registration import _REGISTRY, make, register
from gem_eval.suites import Suite, SuiteError, list_suites, load_suite
from tests.fakes import FakeEnv

REPO_ROOT = bundled_root()  # the checkout's top level here
MODELS = [ModelSpec(name="model-a"), ModelSpec(name="model-b")]


def qa_env(question: str = "", answer: str = "", max_turns: int = 1) -> Env:
    return FakeEnv(length=max_turns)


@pytest.fixture(autouse=True)
def qa_id() -> Iterator[None]:
    """``suitetest:QA-v0``: an env taking a question and an answer, for dataset tasks."""
    before = set(_REGISTRY)
    register("suitetest:QA-v0", qa_env, override=True)
    yield
    for key in set(_REGISTRY) - before:
        del _REGISTRY[key]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str, name: str = "suite.yaml") -> Suite:
    return load_suite(write(tmp_path / name, text))


def error_of(tmp_path: Path, text: str, name: str = "bad.yaml") -> str:
    """The one-line error loading ``text`` gives, run from ``tmp_path``."""
    with pytest.raises(SuiteError) as err:
        load_text(tmp_path, text, name)
    message = str(err.value)
    assert "\n" not in message
    assert isinstance(err.value, UserError)
    return message


# --- bundled suites -------------------------------------------------------------------------


def test_bundled_suites_load_and_count_episodes() -> None:
    smoke = load_suite("smoke")
    assert smoke.path == REPO_ROOT / "suites" / "smoke.yaml"
    assert len(smoke.tasks) == 2
    assert smoke.episode_count() == 4
    assert all(t.spec.limits.max_turns is not None for t in smoke.tasks)

    games = load_suite("games")
    families = {t.spec.env_id.split(":")[1].split("-")[0] for t in games.tasks}
    assert families == set(GAME_VARIANTS)
    assert all(t.spec.env_id.endswith("-easy") for t in games.tasks)
    assert games.episode_count() == 9 * 5
    assert len(games.episodes(MODELS)) == 2 * 9 * 5
    assert "wordle-easy" in {t.spec.id for t in games.tasks}  # from tasks/games/


def test_names_resolve_from_anywhere_and_unknown_names_get_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # suites/ and tasks/ are found relative to the repo root
    assert load_suite("smoke").name == "smoke"
    with pytest.raises(SuiteError, match=r"unknown suite 'smok'\. Did you mean: smoke"):
        load_suite("smok")
    write(tmp_path / "mine" / "extra.yaml", "tasks: [{env: game:Hangman-v0-easy}]")
    assert {"smoke", "games", "extra"} <= set(list_suites([tmp_path / "mine"]))
    assert load_suite("extra", search_dirs=[tmp_path / "mine"]).tasks[0].spec.id == (
        "game:Hangman-v0-easy"
    )


def test_a_lone_task_file_loads_as_a_one_task_suite() -> None:
    suite = load_suite(REPO_ROOT / "tasks" / "games" / "wordle-easy.yaml")
    assert [t.spec.id for t in suite.tasks] == ["wordle-easy"]


# --- expansion ------------------------------------------------------------------------------

EXPAND = """
    defaults: {samples: 3, seed: 100}
    tasks:
      - env: game:GuessTheNumber-v0-easy
      - env: game:Hangman-v0-easy
        id: hangman
        samples: 2
        epochs: 2
"""


def test_episodes_keys_seeds_and_epochs(tmp_path: Path) -> None:
    suite = load_text(tmp_path, EXPAND)
    episodes = suite.episodes(MODELS[:1])
    assert len(episodes) == 3 + 2 * 2 == suite.episode_count()
    assert len({e.key for e in episodes}) == len(episodes)
    assert episodes[0].key == "model-a|game:GuessTheNumber-v0-easy|0|0"
    assert [e.seed for e in episodes[:3]] == [100, 101, 102]
    hangman = [(e.sample, e.epoch, e.seed) for e in episodes if e.task.id == "hangman"]
    # epochs replay the same sample with the same seed (pass@k over attempts)
    assert hangman == [(0, 0, 100), (0, 1, 100), (1, 0, 101), (1, 1, 101)]


def test_limit_epochs_and_seed_from_the_run(tmp_path: Path) -> None:
    suite = load_text(tmp_path, EXPAND)
    episodes = suite.episodes(MODELS[:1], limit=1, epochs=3, seed=7)
    assert [(e.task.id, e.sample, e.epoch, e.seed) for e in episodes] == [
        ("game:GuessTheNumber-v0-easy", 0, 0, 7),
        ("game:GuessTheNumber-v0-easy", 0, 1, 7),
        ("game:GuessTheNumber-v0-easy", 0, 2, 7),
        ("hangman", 0, 0, 7),
        ("hangman", 0, 1, 7),
        ("hangman", 0, 2, 7),
    ]
    assert suite.episode_count(models=2, limit=1, epochs=3) == 12
    assert load_text(tmp_path, "tasks: [{env: game:Hangman-v0-easy}]").episodes(MODELS)[0].seed == 0
    with pytest.raises(SuiteError, match="at least 1"):
        suite.episodes(MODELS, limit=0)
    with pytest.raises(SuiteError, match="given twice"):
        suite.episodes([MODELS[0], MODELS[0]])


def test_every_model_plays_the_same_samples(tmp_path: Path) -> None:
    suite = load_text(tmp_path, EXPAND)
    episodes = suite.episodes(MODELS)
    by_model: dict[str, list[tuple[Any, ...]]] = {}
    for e in episodes:
        by_model.setdefault(e.model.name, []).append(
            (e.task.model_dump_json(), e.sample, e.epoch, e.seed, e.sample_kwargs)
        )
    assert by_model["model-a"] == by_model["model-b"]
    assert len({e.key for e in episodes}) == len(episodes)


# --- defaults, task files and overrides ----------------------------------------------------


def test_defaults_task_files_items_and_overrides_layer(tmp_path: Path) -> None:
    write(
        tmp_path / "tasks" / "hangman.yaml",
        """
        env: game:Hangman-v0-easy
        args: {word_length: 4, max_turns: 12}
        category: words
        tags: [file-tag]
        limits: {max_tokens: 500}
        """,
    )
    suite = load_text(
        tmp_path / "suites",
        """
        defaults:
          limits: {max_turns: 20, max_time_s: 30}
          generation: {temperature: 0.5, max_tokens: 100}
          tags: [games]
          category: default-cat
          scorer: return
        tasks:
          - env: game:Wordle-v0-easy
          - file: ../tasks/hangman.yaml
            args: {max_turns: 8}
            limits: {max_turns: 5}
            generation: {temperature: 0.0}
            tags: [item-tag]
            scorer: discounted_return
            gamma: 0.9
        """,
    )
    plain, layered = (t.spec for t in suite.tasks)
    assert plain.limits.max_turns == 20 and plain.limits.max_time_s == 30
    assert plain.scorer == "return" and plain.category == "default-cat"
    assert plain.tags == ["games"] and plain.generation == {"temperature": 0.5, "max_tokens": 100}
    assert layered.id == "hangman"  # the task file's stem
    assert layered.env_kwargs == {"word_length": 4, "max_turns": 8}  # merged key by key
    assert layered.limits.model_dump() == {
        "max_turns": 5,
        "max_tokens": 500,
        "max_time_s": 30.0,
        "max_cost_usd": None,
    }
    assert layered.generation == {"temperature": 0.0, "max_tokens": 100}
    assert layered.tags == ["games", "file-tag", "item-tag"]
    assert layered.category == "words"
    assert (layered.scorer, layered.gamma) == ("discounted_return", 0.9)

    over = suite.episodes(MODELS[:1], overrides={"limits": {"max_turns": 3}, "samples": 2})
    assert len(over) == 4
    assert {(e.task.limits.max_turns, e.task.limits.max_time_s) for e in over} == {(3, 30.0)}
    with pytest.raises(SuiteError) as err:
        suite.episodes(MODELS, overrides={"limits": {"max_turn": 3}})
    assert str(err.value).startswith(
        "overrides.limits.max_turn: unknown key. Did you mean: max_turns"
    )


def test_null_removes_a_default_limit(tmp_path: Path) -> None:
    suite = load_text(
        tmp_path,
        """
        defaults: {limits: {max_turns: 20}}
        tasks:
          - {env: game:Hangman-v0-easy, limits: {max_turns: null}}
        """,
    )
    assert suite.tasks[0].spec.limits.max_turns is None


def test_hash_is_stable_and_tracks_what_samples_are(tmp_path: Path) -> None:
    a = load_text(tmp_path, EXPAND, "a.yaml")
    b = load_text(tmp_path, "# same content\n" + textwrap.dedent(EXPAND), "b.yaml")
    assert a.hash == b.hash == load_suite(tmp_path / "a.yaml").hash
    assert len(a.hash) == 64
    fewer = load_text(tmp_path, EXPAND.replace("samples: 3", "samples: 1"), "c.yaml")
    assert fewer.hash == a.hash  # how many samples run is not what they are
    shorter = load_text(tmp_path, EXPAND.replace("seed: 100", "seed: 1"), "d.yaml")
    assert shorter.hash != a.hash
    assert a.digest(overrides={"limits": {"max_turns": 2}}) != a.hash


# --- datasets -------------------------------------------------------------------------------


def test_jsonl_dataset_rows_become_samples(tmp_path: Path) -> None:
    suite = load_text(
        tmp_path,
        f"""
        tasks:
          - env: suitetest:QA-v0
            dataset:
              path: {REPO_ROOT / "tasks" / "data" / "arith.jsonl"}
              fields: {{question: problem, answer: solution}}
          - env: suitetest:QA-v0
            id: arith-2
            samples: 2
            dataset: {{path: tasks/data/arith.jsonl, fields: {{question: problem}}}}
        """,
    )
    full, capped = suite.tasks
    assert full.spec.id == "arith" and full.samples == 3 and capped.samples == 2
    episodes = suite.episodes(MODELS[:1])
    assert [e.sample_kwargs for e in episodes[:3]] == [
        {"question": "2 + 3", "answer": "5"},
        {"question": "7 * 6", "answer": "42"},
        {"question": "12 - 20", "answer": "-8"},
    ]
    assert [e.seed for e in episodes[:3]] == [0, 1, 2]
    assert len(suite.episodes(MODELS[:1], limit=1)) == 2


def test_csv_dataset_relative_to_the_suite(tmp_path: Path) -> None:
    write(tmp_path / "data" / "qa.csv", "q,a,extra\nwho?,me,x\nwhy?,because,y\n")
    suite = load_text(
        tmp_path,
        """
        tasks:
          - env: suitetest:QA-v0
            dataset: {path: data/qa.csv, fields: {question: q, answer: a}}
        """,
    )
    assert suite.tasks[0].rows == [
        {"question": "who?", "answer": "me"},
        {"question": "why?", "answer": "because"},
    ]
    assert suite.tasks[0].spec.id == "qa"


def test_dataset_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "rows.jsonl", '{"q": "a"}\n\n{"q": oops}\n')
    write(tmp_path / "ok.jsonl", '{"q": "a", "a": "b"}\n')
    head = "tasks:\n  - env: suitetest:QA-v0\n    dataset:\n"
    assert error_of(tmp_path, head + "      path: rows.jsonl\n") == (
        "rows.jsonl:3: invalid JSON: Expecting value"
    )
    assert error_of(tmp_path, head + "      path: ok.jsonl\n      fields: {question: qq}\n") == (
        "bad.yaml:5: tasks[0].dataset.fields.question: no column 'qq'. Did you mean: q?"
    )
    assert error_of(tmp_path, head + "      path: ok.jsonl\n      fields: {qestion: q}\n") == (
        "bad.yaml:5: tasks[0].dataset.fields.qestion: suitetest:QA-v0 takes no parameter "
        "'qestion' (fields: {parameter: column}). Did you mean: question?"
    )
    assert error_of(tmp_path, head + "      path: nope.jsonl\n") == (
        "bad.yaml:4: tasks[0].dataset.path: dataset file 'nope.jsonl' not found"
    )


def test_optional_readers_name_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("pyarrow.parquet", "pandas", "datasets"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails even if installed
    (tmp_path / "rows.parquet").write_bytes(b"PAR1")
    head = "tasks:\n  - env: suitetest:QA-v0\n    dataset: "
    assert "pip install 'gem-eval[rl]'" in error_of(tmp_path, head + "{path: rows.parquet}\n")
    message = error_of(tmp_path, head + "{path: someone/qa-set, split: test}\n")
    assert message.startswith("bad.yaml:3: tasks[0].dataset.path: 'someone/qa-set' is read as")
    assert "pip install datasets" in message


# --- one-line errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            """
            name: bad
            tasks:
              - env: game:Wordle-v0-easy
              - env: game:Hangman-v0-easy
                limits:
                  max_turns: ten
            """,
            "bad.yaml:6: tasks[1].limits.max_turns: Input should be a valid integer (got 'ten')",
            id="wrong-type",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                limits: {max_turn: 3}
            """,
            "bad.yaml:3: tasks[0].limits.max_turn: unknown key. Did you mean: max_turns",
            id="unknown-key",
        ),
        pytest.param(
            """
            defaults: {sample: 3}
            tasks: [{env: game:Wordle-v0-easy}]
            """,
            "bad.yaml:1: defaults.sample: unknown key. Did you mean: samples",
            id="unknown-key-in-defaults",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
              - env: game:Wordel-v0-easy
            """,
            "bad.yaml:3: tasks[1].env: unknown env id 'game:Wordel-v0-easy'. "
            "Did you mean: game:Wordle-v0-easy",
            id="unknown-env",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy

              - file: tasks/games/wordle-esay.yaml
            """,
            "bad.yaml:4: tasks[1].file: task file 'tasks/games/wordle-esay.yaml' not found. "
            "Did you mean: wordle-easy.yaml?",
            id="missing-task-file",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                args: {max_turns: 3
              - env: game:Hangman-v0-easy
            """,
            "bad.yaml:4: YAML syntax error: expected ',' or '}', but got ':' "
            "(while parsing a flow mapping on line 3)",
            id="yaml-syntax",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
              - env: game:wordle-v0-easy
            """,
            "bad.yaml:3: tasks[1].env: duplicate task id 'game:Wordle-v0-easy' "
            "(also tasks[0] on line 2); give one of them a distinct `id`",
            id="duplicate-task-id",
        ),
        pytest.param(
            """
            tasks:
              - {env: game:Wordle-v0-easy, id: w}
              - {env: game:Hangman-v0-easy, id: w}
            """,
            "bad.yaml:3: tasks[1].id: duplicate task id 'w'",
            id="duplicate-explicit-id",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                args:
                  word_lenght: 3
            """,
            "bad.yaml:4: tasks[0].args.word_lenght: game:Wordle-v0-easy takes no parameter "
            "'word_lenght'. Did you mean: word_length?",
            id="unknown-env-parameter",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                samples: 2
                samples: 3
            """,
            "bad.yaml:4: tasks[0].samples: duplicate key (first on line 3)",
            id="duplicate-key",
        ),
        pytest.param(
            """
            tasks:
              - samples: 2
            """,
            "bad.yaml:2: tasks[0]: a task needs `env`",
            id="no-env",
        ),
        pytest.param(
            """
            task:
              - env: game:Wordle-v0-easy
            """,
            "bad.yaml:1: task: unknown key. Did you mean: tasks?",
            id="misspelt-tasks",
        ),
        pytest.param("", "bad.yaml:1: a suite file is a mapping", id="empty"),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                tools: [python, pyhton]
            """,
            "bad.yaml:3: tasks[0].tools[1]: unknown tool 'pyhton'",
            id="unknown-tool",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                tools:
                  - {name: python, timeout_s: -1}
            """,
            "bad.yaml:4: tasks[0].tools[0]: tool 'python': timeout_s must be positive",
            id="bad-tool-setting",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                tools:
                  - {name: search, corpus: nowhere.jsonl}
            """,
            "bad.yaml:4: tasks[0].tools[0]:",
            id="missing-corpus",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                sandbox: {type: docker, memroy: 1g}
            """,
            "bad.yaml:3: tasks[0].sandbox.memroy: unknown key. Did you mean: memory?",
            id="sandbox-typo",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                sandbox: {type: podman}
            """,
            "bad.yaml:3: tasks[0].sandbox.type: Input should be 'docker', 'local' or 'none'",
            id="sandbox-type",
        ),
        pytest.param(
            """
            tasks:
              - env: game:Wordle-v0-easy
                sandbox: {build: no-such-dir}
            """,
            "bad.yaml:3: tasks[0].sandbox.build: no Dockerfile in 'no-such-dir'",
            id="sandbox-build-dir",
        ),
    ],
)
def test_bad_suite_files_give_one_line_with_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert error_of(tmp_path, text).startswith(expected)


def test_an_error_inside_a_task_file_names_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "tasks" / "t.yaml", "env: game:Wordle-v0-easy\nepochs: 0\n")
    message = error_of(tmp_path, "tasks:\n  - file: tasks/t.yaml\n")
    assert message == ("tasks/t.yaml:2: epochs: Input should be greater than or equal to 1 (got 0)")


# --- the CLI ----------------------------------------------------------------------------------

app = typer.Typer()
app.add_typer(suites_app, name="suites")


@app.callback()
def _root() -> None:
    """The suites sub-app alone, as the root app mounts it."""


def test_cli_list_show_and_validate(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    listed = runner.invoke(app, ["suites", "list"], env=env)
    assert listed.exit_code == 0 and "smoke" in listed.output and "games" in listed.output

    shown = runner.invoke(app, ["suites", "show", "smoke"], env=env)
    assert shown.exit_code == 0
    assert "wordle-easy" in shown.output and "4 per model" in shown.output

    ok = runner.invoke(app, ["suites", "validate", str(REPO_ROOT / "suites" / "games.yaml")])
    assert ok.exit_code == 0
    assert re.match(r"ok: 9 tasks, 45 episodes", ok.output)

    bad = write(tmp_path / "bad.yaml", "tasks:\n  - env: game:Wordel-v0-easy\n")
    result = runner.invoke(app, ["suites", "validate", "smoke", str(bad)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("ok: 2 tasks, 4 episodes")
    assert lines[1].startswith("error: ") and "bad.yaml:2: tasks[0].env: unknown" in lines[1]
    assert len(lines) == 2


def test_a_task_that_is_not_a_mapping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert error_of(tmp_path, "tasks:\n  - game:Wordle-v0-easy\n") == (
        "bad.yaml:2: tasks[0]: expected a mapping of keys (got 'game:Wordle-v0-easy')"
    )


@pytest.mark.parametrize("name", ["smoke", "games"])
def test_every_bundled_task_makes_and_resets_its_env(name: str) -> None:
    for task in load_suite(name).tasks:
        env = make(task.spec.env_id, **task.spec.env_kwargs)
        obs, _ = env.reset(seed=0)
        assert obs
        env.close()


def test_bad_env_argument_values_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "values.yaml"
    bad.write_text("name: x\ntasks:\n  - env: game:GuessTheNumber-v0\n    args: {max_turns: 0}\n")
    with pytest.raises(SuiteError) as err:
        load_suite(bad)
    assert str(err.value).endswith(
        "values.yaml:4: tasks[0].args.max_turns: game:GuessTheNumber-v0: max_turns must be at "
        "least 1"
    )


def test_a_recursive_alias_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "alias.yaml"
    bad.write_text("name: x\ntasks: &a [*a]\n")
    with pytest.raises(SuiteError, match="recursive alias"):
        load_suite(bad)


def test_tools_and_sandbox_settings_load_and_merge(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "corpus.jsonl", '{"title": "T", "text": "some text"}\n')
    suite = load_text(
        tmp_path,
        """
        defaults:
          sandbox: {type: docker, memory: 512m}
        tasks:
          - env: game:Wordle-v0-easy
            tools: [python, {name: search, corpus: docs/corpus.jsonl, k: 2}]
            sandbox: {pids: 64}
        """,
    )
    spec = suite.tasks[0].spec
    assert [t.name for t in spec.tools] == ["python", "search"]
    assert spec.tools[0].settings == {}
    # a relative path is made absolute against the suite file
    assert spec.tools[1].settings == {"corpus": str(tmp_path / "docs" / "corpus.jsonl"), "k": 2}
    assert spec.sandbox is not None
    assert (spec.sandbox.type, spec.sandbox.memory, spec.sandbox.pids) == ("docker", "512m", 64)


def test_an_env_settings_check_reports_a_bad_reasoning_gym_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("reasoning_gym")
    monkeypatch.chdir(tmp_path)
    message = error_of(
        tmp_path,
        """
        tasks:
          - env: rg:basic_arithmetic-v0
            args: {config: {max_term: 3}}
        """,
    )
    assert message.startswith("bad.yaml:3: tasks[0].args.config: rg:basic_arithmetic-v0:")
    assert "no key 'max_term'. Did you mean: max_terms" in message
