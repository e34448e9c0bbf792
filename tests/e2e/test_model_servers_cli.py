"""Several models, each with its own server; a resume that has nothing to play; setup
errors that leave nothing behind; a rollout resumed with its own settings. The CLI in a
subprocess against two fixture servers, as a user comparing two checkpoints runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply, serve


def _guess(body: dict[str, Any]) -> Reply:
    # GuessTheNumber-easy seeds 0 and 1 hide 7 and 2 (see test_run_cli).
    return Reply("\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}")


@pytest.fixture
def two_servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with serve(_guess) as one, serve(_guess) as two:
        yield one, two


def _models(server: FakeOpenAIServer) -> set[str]:
    return {r.body["model"] for r in server.requests}


def test_two_models_each_reach_their_own_server(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    one, two = two_servers
    result = gem_eval(
        "run", "--suite", "smoke", "--model-backend", "openai", "-q",
        "-m", "openai/a", "--model-base-url", one.base_url,
        "-m", "openai/b", "--model-base-url", two.base_url,
        results=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert _models(one) == {"a"} and _models(two) == {"b"}
    [run] = run_dirs(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    urls = {m["name"]: (m["base_url"], m["backend"]) for m in manifest["models"]}
    assert urls == {"openai/a": (one.base_url, "openai"), "openai/b": (two.base_url, "openai")}
    assert f"model openai/a: {one.base_url}" in result.stdout

    # A resume may move one model: b's server moved, a's stays.
    first = len(one.requests)
    with serve(_guess) as moved:
        rows = records(run)
        lost = next(r["key"] for r in rows if r["model"] == "openai/b")
        (run / "episodes.jsonl").write_text(  # one of b's episodes lost: to play again
            "".join(json.dumps(r) + "\n" for r in rows if r["key"] != lost)
        )
        again = gem_eval(
            "run", "--resume", "latest", "-q", "-m", "openai/b", "--model-base-url",
            moved.base_url, results=tmp_path,
        )  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(moved.requests) > 0 and len(one.requests) == first
    manifest = json.loads((run / "manifest.json").read_text())
    assert {m["name"]: m["base_url"] for m in manifest["models"]} == {
        "openai/a": one.base_url,
        "openai/b": moved.base_url,
    }
    assert manifest["sessions"][-1]["changed"] == {"--model-base-url (openai/b)": moved.base_url}


def test_ambiguous_model_settings_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    url1, url2 = "http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"
    for args, said in [
        (["-m", "openai/a", "--model-base-url", url1, "--model-base-url", url2], "twice for model"),
        (["--model-base-url", url1, "--model-base-url", url2, "-m", "openai/a"], "twice for every"),
        (["-m", "openai/a", "--model-backend", "nope"], "unknown model backend 'nope'"),
        (["-m", "openai/a", "-m", "openai/a"], "given twice"),
        (["-m", "openai/a", "-M", "temperature=abc"], "-M temperature: expected a number"),
    ]:
        result = gem_eval("run", "--suite", "smoke", *args, results=tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("error:") and said in line, line
    assert not tmp_path.exists() or run_dirs(tmp_path) == []


def test_a_setting_after_the_last_of_several_models_is_that_models_and_said(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    one, _ = two_servers
    result = gem_eval(
        "run", "--suite", "smoke", "--limit", "1", "-q",
        "-m", "oracle", "-m", "openai/b", "--model-base-url", one.base_url,
        "--model-backend", "openai",
        results=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"--model-base-url {one.base_url} applies to model openai/b only" in result.stdout
    assert _models(one) == {"b"}


def test_models_listed_in_a_suite_and_in_a_models_file(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = two_servers
    smoke = (Path(__file__).resolve().parents[2] / "suites" / "smoke.yaml").read_text()
    suite = tmp_path / "pair.yaml"
    suite.write_text(
        smoke.replace("name: smoke", "name: pair")
        + "models:\n"
        + f"  - {{name: openai/a, base_url: {one.base_url}, backend: openai}}\n"
        + "  - {name: openai/b, base_url: '${SECOND_URL}', backend: openai}\n"
    )
    env = {"SECOND_URL": two.base_url}
    result = gem_eval(
        "run", "--suite", str(suite), "--limit", "1", "-q", results=tmp_path / "r", env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert _models(one) == {"a"} and _models(two) == {"b"}

    unset = gem_eval("run", "--suite", str(suite), "--limit", "1", results=tmp_path / "r2")
    assert unset.returncode == 2 and "$SECOND_URL is not set" in unset.stderr
    line = next(i for i, t in enumerate(suite.read_text().splitlines(), 1) if "SECOND" in t)
    assert f"{suite}:{line}: models[1].base_url" in unset.stderr  # file and line
    # A variable is read only when the list is used: not by validate, another --model,
    # or a resume (which plays the URLs the run played with).
    assert gem_eval("suites", "validate", str(suite), results=tmp_path).returncode == 0
    other = gem_eval(
        "run", "--suite", str(suite), "--limit", "1", "-q", "-m", "openai/e",
        "--model-base-url", one.base_url, "--model-backend", "openai", results=tmp_path / "r4",
    )  # fmt: skip
    assert other.returncode == 0, other.stdout + other.stderr
    again = gem_eval("run", "--resume", "latest", results=tmp_path / "r")
    assert again.returncode == 0 and "nothing to play" in again.stdout, again.stderr

    listed = tmp_path / "models.yaml"
    listed.write_text(
        "models:\n"
        f"  - {{name: openai/c, base_url: {two.base_url}, backend: openai}}\n"
        f"  - {{name: openai/d, base_url: {one.base_url}, backend: openai}}\n"
    )
    result = gem_eval(
        "run", "--suite", "smoke", "--limit", "1", "--models", str(listed), "-q",
        results=tmp_path / "r3",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert _models(two) == {"b", "c"} and _models(one) == {"a", "d", "e"}


def test_a_finished_run_resumed_stays_finished_and_gates(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    one, _ = two_servers
    args = ["--suite", "smoke", "-m", "openai/a", "--model-base-url", one.base_url, "-q"]
    assert gem_eval("run", *args, results=tmp_path).returncode == 0
    [run] = run_dirs(tmp_path)
    before = (run / "manifest.json").read_text()
    again = gem_eval(
        "run", "--resume", "latest", "--model-base-url", "http://127.0.0.1:1/v1",
        results=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing to play" in again.stdout and "finished" in again.stdout
    assert (run / "manifest.json").read_text() == before  # nothing written
    assert gem_eval("run", *args, results=tmp_path).returncode == 0
    gate = gem_eval("gate", "latest", "--baseline", run.name, results=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_setup_errors_leave_no_run_directory(tmp_path: Path) -> None:
    for args, said in [
        (["-m", "openai/a", "--model-base-url", "http://127.0.0.1:1/v1"],
         "cannot reach the server"),
        (["-m", "openai/a", "--model-base-url", "http://127.0.0.1:1/v1", "--api-key-env",
          "NO_SUCH_KEY_VAR"], "NO_SUCH_KEY_VAR is not set"),
        (["-m", "openai/a", "--model-backend", "litellm"], "OPENAI_API_KEY is not set"),
        (["-m", "openai/a"], "OPENAI_API_KEY is not set"),  # OpenAI's own API, direct
        (["-m", "hosted_vllm/b"], "'hosted_vllm/b' is served by a server of your own: give "
                                  "--model-base-url"),
    ]:  # fmt: skip
        result = gem_eval("run", "--suite", "smoke", *args, results=tmp_path, env={})
        assert result.returncode == 2, result.stdout + result.stderr
        assert said in result.stderr and "Traceback" not in result.stderr
        assert "episodes to play" not in result.stdout
    assert not tmp_path.exists() or run_dirs(tmp_path) == []
    no_key = gem_eval(
        "run", "--suite", "smoke", "-m", "openai/gpt-4o-mini", results=tmp_path,
        env={"OPENAI_API_KEY": ""},
    )  # fmt: skip
    assert no_key.returncode == 2 and "OPENAI_API_KEY is not set" in no_key.stderr
    assert not tmp_path.exists() or run_dirs(tmp_path) == []


def test_a_rollout_resumed_keeps_its_gamma_and_estimator(tmp_path: Path) -> None:
    with serve(_guess) as server:
        first = gem_eval(
            "rollout", "game:GuessTheNumber-v0-easy", "-m", "hosted_vllm/x",
            "--model-base-url", server.base_url, "--model-backend", "openai",
            "--episodes", "2", "--epochs", "2", "--gamma", "0.8", "--estimator", "grpo",
            "--out", str(tmp_path / "B1"), "-q", results=tmp_path / "r",
        )  # fmt: skip
        assert first.returncode == 0, first.stdout + first.stderr
        again = gem_eval(
            "rollout", "--resume", "latest", "--out", str(tmp_path / "B2"), "-q",
            results=tmp_path / "r",
        )  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
        for batch in ("B1", "B2"):
            about = json.loads((tmp_path / batch / "batch.json").read_text())
            assert (about["gamma"], about["estimator"]) == (0.8, "grpo"), batch
        other = gem_eval(
            "rollout", "--resume", "latest", "--out", str(tmp_path / "B3"), "--gamma", "0.9",
            results=tmp_path / "r",
        )  # fmt: skip
        assert other.returncode == 2 and "--gamma would change it" in other.stderr
        forced = gem_eval(
            "rollout", "--resume", "latest", "--out", str(tmp_path / "B3"), "--gamma", "0.9",
            "--force", "-q", results=tmp_path / "r",
        )  # fmt: skip
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert json.loads((tmp_path / "B3" / "batch.json").read_text())["gamma"] == 0.9


def test_generation_settings_belong_to_a_model_too(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    one, two = two_servers
    result = gem_eval(
        "run", "--suite", "smoke", "--limit", "1", "-q", "--model-backend", "openai",
        "-M", "max_tokens=32",
        "-m", "openai/a", "--model-base-url", one.base_url, "-M", "temperature=0.1",
        "-m", "openai/b", "--model-base-url", two.base_url, "-M", "temperature=0.9",
        results=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    [run] = run_dirs(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    args = {m["name"]: m["args"] for m in manifest["models"]}
    assert args == {
        "openai/a": {"max_tokens": 32, "temperature": 0.1},
        "openai/b": {"max_tokens": 32, "temperature": 0.9},
    }
    assert {r.body["temperature"] for r in one.requests} == {0.1}
    assert {r.body["temperature"] for r in two.requests} == {0.9}
    twice = gem_eval(
        "run", "--suite", "smoke", "-m", "openai/a", "-M", "temperature=0.1",
        "-M", "temperature=0.2", results=tmp_path / "r2",
    )  # fmt: skip
    assert twice.returncode == 2 and "-M temperature given twice for model openai/a" in (
        twice.stderr
    )


def test_a_server_that_lists_other_models_is_named_before_the_run(
    two_servers: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    one, _ = two_servers  # lists the model "fake"
    result = gem_eval(
        "run", "--suite", "smoke", "--limit", "1", "-q", "--model-backend", "openai",
        "-m", "hosted_vllm/ckpt-1200", "--model-base-url", one.base_url, results=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lists fake, not ckpt-1200" in " ".join(result.stdout.split())


def test_a_second_rollout_into_the_same_out_is_refused(tmp_path: Path) -> None:
    with serve(_guess) as server:
        args = ["--model-base-url", server.base_url, "--model-backend", "openai", "-q"]
        first = gem_eval(
            "rollout", "game:GuessTheNumber-v0-easy", "-m", "hosted_vllm/x", *args,
            "--episodes", "1", "--out", str(tmp_path / "B1"), results=tmp_path / "r",
        )  # fmt: skip
        assert first.returncode == 0, first.stdout + first.stderr
        other = gem_eval(
            "rollout", "game:Wordle-v0-easy", "-m", "hosted_vllm/x", *args,
            "--episodes", "1", "--out", str(tmp_path / "B1"), results=tmp_path / "r",
        )  # fmt: skip
        assert other.returncode == 2 and "holds another rollout's suite" in other.stderr
        again = gem_eval("rollout", "--resume", "latest", "--out", str(tmp_path / "B2"),
                         "-q", results=tmp_path / "r")  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
