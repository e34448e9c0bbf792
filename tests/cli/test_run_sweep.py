"""A property-based sweep of ``gem-eval run``'s bad input (issue 24): every option of
the command, and every key a suite file (and a models list) can hold, given valid and
invalid values: wrong types, negative, zero, huge, empty, unicode.

Whatever is given, ``run`` either runs (a tiny suite: one game, one sample, played by
the reference agents; or ``--dry-run``) or says what is wrong in exactly one line on
stderr that starts ``error:``, exits 2, and leaves every file as it was: no run
directory, no results directory, no index. Never a traceback.

The commands run in this process through the real entry point
(:func:`gem_eval.cli.main`), with no API key in the environment, no reachable server
(a base URL is ``127.0.0.1:1``, refused at once, or not a URL), no registry or
dataset hub, and program agents, Ray and local weights left out: nothing can reach
the network or start for long. Each example takes 0.02-0.3 s.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cli.invoke import Result, gem_eval
from tests.conftest import IN_CI

EXAMPLES = 200
"""Examples per sweep: each of the two sweeps takes ~30 s."""

SWEEP = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # the examples run in directories of their own: nothing kept there
    derandomize=IN_CI,  # CI sweeps the same inputs every time; a local run finds new ones
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

TINY = {
    "name": "tiny",
    "defaults": {"samples": 1, "limits": {"max_turns": 3}, "seed": 0},
    "tasks": [{"env": "game:GuessTheNumber-v0-easy"}],
}
"""One game, one sample: an example that runs is over in a tenth of a second."""

PROGRAM_AGENTS = {"terminus-2", "mini-swe-agent", "qwen-code"}
"""Agent programs: they install into containers (Docker, the network): not swept."""

# Values: what a user may type by mistake, and what is right.
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=12,
)  # what argv can hold: no NUL, no lone surrogate
JUNK = st.one_of(
    _TEXT,
    st.sampled_from(["", " ", "-", "=", ",", "null", "true", "[1]", "{a: 1}", "é", "🙂", "１"]),
    st.just("a" * 300),
)
INTS = st.one_of(
    st.integers(-3, 5),
    st.sampled_from([10**7, 2**31, 2**32, 2**63, 10**30, -(10**30)]),
).map(str)
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "0.5", "-0.0", "1e-300", "1e309", "nan", "inf", "-inf", "1_000"]),
    INTS,
)
SAFE_TEXT = JUNK.filter(lambda v: "://" not in v and "@" not in v)
"""Text that names no URL or registry dataset (which could reach the network)."""
PATH_TEXT = SAFE_TEXT.filter(lambda v: not v.startswith(("/", "~")) and ".." not in v)
"""Text that, as a path, stays in the example's own directory."""


def _values(*right: str, junk: st.SearchStrategy[str] = JUNK) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(right), junk) if right else junk


def _model_arg() -> st.SearchStrategy[str]:
    keys = st.sampled_from(
        ["temperature", "top_p", "max_tokens", "seed", "stop", "reasoning_effort", "extra", "x"]
    )
    value = st.one_of(FLOATS, JUNK)
    return st.one_of(st.builds(lambda k, v: f"{k}={v}", keys | JUNK, value), JUNK)


OPTIONS: dict[str, st.SearchStrategy[str] | None] = {
    "--suite": _values("tiny.yaml", "smoke", "nope", "x@1.0", junk=SAFE_TEXT),
    "--model": _values(
        "oracle",
        "noop",
        "stub",
        "openai/x",
        "hosted_vllm/x",
        "gpt-4o",
        "local/",
        "local/no-such.gguf",
        "anthropic/claude-x",
        junk=SAFE_TEXT,
    ),
    "--models": _values("models.yaml", "missing.yaml", ".", junk=PATH_TEXT),
    "--resume": _values("latest", junk=SAFE_TEXT),
    "--limit": INTS,
    "--task": _values("*", "game*", "nope", "[", junk=SAFE_TEXT),
    "--sample": _values("0", "0-0", "0,0", "1", "5-2", "-1", "0-99999999999", junk=SAFE_TEXT),
    "--category": _values("games", "Games", junk=SAFE_TEXT),
    "--epochs": INTS,
    "--seed": INTS,
    "--max-turns": INTS,
    "--agent": _values(
        "gem-eval", "GEM-EVAL", junk=SAFE_TEXT.filter(lambda v: v.lower() not in PROGRAM_AGENTS)
    ),
    "--concurrency": INTS,
    "--max-attempts": INTS,
    "--max-cost": FLOATS,
    "--cache": None,
    "--dry-run": None,
    "--confirm-above": FLOATS,
    "--yes": None,
    "--price": _values("oracle=1,2", "noop=0,0", "oracle=1", "oracle=-1,1", junk=SAFE_TEXT),
    "--model-arg": _model_arg(),
    "--model-base-url": _values(
        "http://127.0.0.1:1/v1", "http://127.0.0.1:1", "ftp://x", "not a url", junk=SAFE_TEXT
    ),
    "--model-backend": _values("litellm", "openai", "LITELLM", junk=SAFE_TEXT),
    "--api-key-env": _values("GEM_EVAL_SWEEP_NO_KEY", junk=SAFE_TEXT),
    "--max-connections": INTS,
    "--max-retries": INTS,
    "--timeout": FLOATS,
    "--sandbox": _values("docker", "local", "local-unsafe", junk=SAFE_TEXT),
    "--image-map": _values("a=b", "python:3*=x", "=", "a", junk=SAFE_TEXT),
    "--no-network": None,
    "--force": None,
    "--no-force": None,
    "--results-dir": _values("res", "a-file", "a-file/sub", "deep/er/res", junk=PATH_TEXT),
    "--quiet": None,
    "--executor": _values("local", "ray", "LOCAL", junk=SAFE_TEXT),
    "--ray-address": _values("127.0.0.1:1", junk=SAFE_TEXT),
    "--registry": _values("no-registry.json", ".", junk=PATH_TEXT),
}
"""Every option of ``run`` (by its long name) and the values it is swept with; ``None``:
a flag. :func:`test_the_sweep_covers_every_option_of_run` keeps it complete."""

_SHORT = {"--suite": "-s", "--model": "-m", "--model-arg": "-M", "--yes": "-y", "--quiet": "-q"}


@pytest.fixture
def sandboxed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No key, cache, registry, results or dataset hub of this machine's: the sweep
    reaches nothing outside ``tmp_path``."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_API_BASE", "_BASE_URL")) or name.startswith("GEM_EVAL"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GEM_EVAL_REGISTRY", str(tmp_path / "no-registry.json"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_sweep_covers_every_option_of_run() -> None:
    import typer.main

    from gem_eval.cli.app import app

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    flags = {opt for param in run.params for opt in [*param.opts, *param.secondary_opts]}
    longs = {flag for flag in flags if flag.startswith("--")}
    assert longs == set(OPTIONS), "sweep the new option too"
    assert {f for f in flags if not f.startswith("--")} == set(_SHORT.values())


@st.composite
def run_arguments(draw: st.DrawFn) -> list[str]:
    """``run``'s arguments: a few options in any order, each with a swept value; the
    tiny suite and ``oracle`` unless a suite or model was drawn."""
    chosen = draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=6))
    argv: list[str] = []
    for flag in chosen:
        shown = _SHORT[flag] if flag in _SHORT and draw(st.booleans()) else flag
        values = OPTIONS[flag]
        argv += [shown] if values is None else [shown, draw(values)]
    if "--suite" not in chosen:
        argv += ["--suite", "tiny.yaml"]
    if "--model" not in chosen and "--models" not in chosen and "--resume" not in chosen:
        argv += ["--model", draw(st.sampled_from(["oracle", "noop"]))]
    if "--results-dir" not in chosen:
        argv += ["--results-dir", "res"]
    return argv


def _tree(root: Path) -> dict[str, str]:
    """Every file and directory under ``root``, with a digest of each file."""
    out = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        out[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def check(result: Result, before: dict[str, str], after: dict[str, str], argv: list[str]) -> None:
    """Ran (0; 3: some episodes unscored; 4: stopped by --max-cost), or one line, exit 2,
    nothing written."""
    said = f"gem-eval {' '.join(map(repr, argv))}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr, said
    if result.code in (0, 3, 4):
        return
    assert result.code == 2, said
    assert len(result.lines) == 1 and result.lines[0].startswith("error: "), said
    assert "episodes to play" not in result.stdout, said
    assert after == before, f"{said}\nwritten: {set(after.items()) ^ set(before.items())}"


def play(root: Path, argv: list[str], files: dict[str, str], prior_run: bool) -> None:
    """``gem-eval ARGV`` in a directory of its own under ``root`` holding ``files`` (and
    a finished run of the tiny suite in ``res``, with ``prior_run``), then :func:`check`."""
    import shutil

    home = Path(tempfile.mkdtemp(dir=root))
    os.chdir(home)
    try:
        (home / "tiny.yaml").write_text(yaml.safe_dump(TINY))
        (home / "a-file").write_text("not a directory\n")
        for name, text in files.items():
            (home / name).write_text(text)
        if prior_run:
            first = gem_eval("run", "--suite", "tiny.yaml", "-m", "oracle", "--results-dir", "res")
            assert first.code == 0, first
        before = _tree(home)
        result = gem_eval(*argv)
        check(result, before, _tree(home), argv)
    finally:
        os.chdir(root)
        shutil.rmtree(home, ignore_errors=True)


def _values_of(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


# The keys of a suite file (and of a models list), from its schema, and YAML values.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    INTS.map(int),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 0.5, "", "oracle", "openai/x", "game:GuessTheNumber-v0-easy"]),
    SAFE_TEXT.filter(lambda v: not v.startswith(("/", "~")) and ".." not in v),
)
YAML_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(SAFE_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)


def _unions(annotation: Any) -> tuple[Any, ...]:
    """The branches of a union annotation (``X | None``: ``X`` and ``None``); else itself."""
    import types
    from typing import Union, get_args, get_origin

    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def _key_paths() -> dict[tuple[str | int, ...], Any]:
    """Every key a suite file can hold, as a path (``("tasks", 0, "limits", "max_turns")``)
    with its annotation: models entries and their ``price:`` included."""
    from typing import get_args, get_origin

    from pydantic import BaseModel

    from gem_eval.suites.schema import SuiteFile

    def model_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
        """The model an annotation holds (in a union or a list), and whether listed."""
        for branch in _unions(annotation):
            if get_origin(branch) is list:
                found, _ = model_in(get_args(branch)[0])
                if found is not None:
                    return found, True
            if isinstance(branch, type) and issubclass(branch, BaseModel):
                return branch, False
        return None, False

    paths: dict[tuple[str | int, ...], Any] = {}

    def walk(model: type[BaseModel], prefix: tuple[str | int, ...]) -> None:
        for name, field in model.model_fields.items():
            path = (*prefix, name)
            paths[path] = field.annotation
            inner, listed = model_in(field.annotation)
            if inner is not None and len(prefix) < 6:
                walk(inner, (*path, 0) if listed else path)

    walk(SuiteFile, ())
    return paths


KEY_PATHS = _key_paths()


def typed(annotation: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of the type a key is declared with (what a user means to write), among
    them negative, zero, huge and empty ones."""
    from typing import Literal, get_args, get_origin

    from pydantic import BaseModel

    branches = []
    for branch in _unions(annotation):
        origin = get_origin(branch)
        if branch is type(None):
            branches.append(st.none())
        elif origin is Literal:
            branches.append(st.sampled_from(get_args(branch)))
        elif branch is bool:
            branches.append(st.booleans())
        elif branch is int:
            branches.append(INTS.map(int))
        elif branch is float:
            branches.append(
                st.one_of(st.floats(allow_nan=True, allow_infinity=True), INTS.map(int))
            )
        elif branch is str:
            branches.append(SCALARS.filter(lambda v: isinstance(v, str)))
        elif origin is list and depth < 3:
            branches.append(st.lists(typed(get_args(branch)[0], depth + 1), max_size=2))
        elif origin is dict and depth < 3:
            branches.append(
                st.dictionaries(SAFE_TEXT, typed(get_args(branch)[-1], depth + 1), max_size=2)
            )
        elif isinstance(branch, type) and issubclass(branch, BaseModel) and depth < 3:
            fields = {
                name: typed(field.annotation, depth + 1)
                for name, field in branch.model_fields.items()
            }
            required = [n for n, f in branch.model_fields.items() if f.is_required()]
            branches.append(
                st.fixed_dictionaries(
                    {n: fields[n] for n in required},
                    optional={n: v for n, v in fields.items() if n not in required},
                )
            )
        else:
            branches.append(YAML_VALUES)
    return st.one_of(branches)


STARTS: dict[str, dict[str, Any]] = {
    "models": {"name": "noop"},
    "judge": {"model": "oracle"},
    "sidecars": {"name": "db", "image": "gem-eval-sweep/no-such-image"},
    "dataset": {"path": "rows.jsonl"},
    "price": {"input": 1, "output": 2},
    "healthcheck": {"test": ["CMD", "true"]},
}
"""What a mapping made on the way to a key starts with (its required keys), by the key
holding it: so that the key set, not a missing one, is what the example tries."""


def _set(document: Any, path: tuple[str | int, ...], value: Any, holder: str = "") -> Any:
    """``document`` with ``value`` at ``path``, making the mappings and lists on the way."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(document) if isinstance(document, list) and document else [{}]
        start = items[0] if isinstance(items[0], dict) else {}
        items[0] = _set(start or dict(STARTS.get(holder, {})), rest, value)
        return items
    mapping = dict(document) if isinstance(document, dict) else {}
    inner = mapping.get(head)
    if inner is None and rest and not isinstance(rest[0], int):
        inner = dict(STARTS.get(head, {}))
    mapping[head] = _set(inner, rest, value, head)
    return mapping


@st.composite
def suites(draw: st.DrawFn) -> dict[str, Any]:
    """The tiny suite with one to three keys set to swept values (an unknown key too)."""
    import copy

    suite: dict[str, Any] = copy.deepcopy(TINY)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(sorted(KEY_PATHS, key=str)))
        kind = draw(st.integers(0, 9))
        if kind == 0:  # a key the schema does not have
            path, value = (*path[:-1], draw(SAFE_TEXT)), draw(YAML_VALUES)
        elif kind == 1:  # a value of any type
            value = draw(YAML_VALUES)
        else:
            value = draw(typed(KEY_PATHS[path]))
        suite = _set(suite, path, value)
    return suite


def test_the_suite_sweep_reaches_every_key() -> None:
    assert ("models", 0, "price", "output") in KEY_PATHS
    assert ("tasks", 0, "limits", "max_turns") in KEY_PATHS
    assert ("defaults", "seed") in KEY_PATHS and ("tasks", 0, "dataset", "path") in KEY_PATHS


@SWEEP
@given(
    argv=run_arguments(),
    models=suites().map(lambda suite: {"models": suite.get("models", ["oracle"])}),
    prior_run=st.booleans(),
)
def test_any_option_of_run_runs_or_is_one_line(
    sandboxed: Path, argv: list[str], models: dict[str, Any], prior_run: bool
) -> None:
    # Ray starts a cluster for the run (seconds): swept with --dry-run only.
    assume("ray" not in _values_of(argv, "--executor") or "--dry-run" in argv)
    files = {"models.yaml": yaml.safe_dump(models, allow_unicode=True)}
    play(sandboxed, ["run", *argv], files, prior_run)


ROWS = '{"max_number": 5}\n{"max_number": 3}\n'
"""``rows.jsonl``, a dataset a suite may name: GuessTheNumber's settings per sample."""


@SWEEP
@given(suite=suites(), model=st.sampled_from(["oracle", "noop", None]), dry_run=st.booleans())
def test_any_suite_file_runs_or_is_one_line(
    sandboxed: Path, suite: dict[str, Any], model: str | None, dry_run: bool
) -> None:
    # Without -m, the suite's `models:` play: a suite without them runs with oracle.
    model = model or (None if "models" in suite else "oracle")
    argv = ["run", "--suite", "suite.yaml", "--results-dir", "res"]
    argv += (["-m", model] if model else []) + (["--dry-run"] if dry_run else [])
    files = {"suite.yaml": yaml.safe_dump(suite, allow_unicode=True), "rows.jsonl": ROWS}
    play(sandboxed, argv, files, prior_run=False)
