"""``gem-eval run`` when the model server is misconfigured or failing: one line, the right
exit code, nothing scored that the model did not answer, and a resume that can follow a
server to a new port."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Fault, Reply, serve


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_refused_key_exits_2_with_one_line_and_scores_nothing(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.api_key = "the-servers-key"
    args = ["run", "--suite", "smoke", "--model", "openai/fake", "-q"]
    args += ["--model-base-url", openai_server.base_url]
    done = gem_eval(*args, results=tmp_path, env={"OPENAI_API_KEY": "not-the-key"})
    assert done.returncode == 2, done.stderr
    [line] = error_lines(done.stderr)
    assert "openai/fake" in line and "refused the API key" in line and "--api-key-env" in line
    assert "Traceback" not in done.stderr
    assert openai_server.requests == []  # stopped before any episode asked anything
    assert run_dirs(tmp_path) == []  # and before anything was written

    # The key, named by variable: the same run works, and the key is nowhere on disk.
    done = gem_eval(
        *args, "--api-key-env", "VLLM_CREDENTIAL",
        results=tmp_path / "ok", env={"VLLM_CREDENTIAL": "the-servers-key"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [run_dir] = run_dirs(tmp_path / "ok")
    on_disk = (run_dir / "episodes.jsonl").read_text() + (run_dir / "manifest.json").read_text()
    assert "the-servers-key" not in on_disk


def test_an_unreachable_server_exits_2_before_any_episode(tmp_path: Path) -> None:
    with serve() as server:
        url = server.base_url  # a port that was just freed: nothing listens there now
    done = gem_eval(
        "run", "--suite", "smoke", "--model", "openai/fake", "--model-base-url", url, "-q",
        results=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    [line] = error_lines(done.stderr)
    assert "cannot reach the server" in line and url in line
    assert "episodes to play" not in done.stdout  # checked before the plan is shown
    assert not tmp_path.exists() or run_dirs(tmp_path) == []


def test_exit_3_says_why_and_resume_follows_the_server_to_a_new_port(tmp_path: Path) -> None:
    """Every call fails with 503: the run records infra errors (never scored), says so
    line by line, exits 3; the server comes back elsewhere and --resume finishes it."""
    with serve() as down:
        down.handler = lambda body: Fault.status(503)
        done = gem_eval(
            "run", "--suite", "smoke", "--model", "openai/fake", "-q",
            "--model-base-url", down.base_url, "--max-retries", "1",
            results=tmp_path,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr
    out = " ".join(done.stdout.split())
    assert "4 infra_error: not scored; --resume plays them again; first: 503" in out
    assert "to play them again: gem-eval run --resume" in out
    [run_dir] = run_dirs(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    assert all(r["score"] is None for r in records(run_dir))

    refused = gem_eval("run", "--resume", "latest", "--seed", "0", results=tmp_path)
    assert refused.returncode == 2
    [line] = error_lines(refused.stderr)
    assert "--seed would change it" in line and "--force" in line

    with serve() as up:
        up.handler = lambda body: Reply("\\boxed{7}")
        resumed = gem_eval(
            "run", "--resume", "latest", "--model-base-url", up.base_url, "-q",
            results=tmp_path,
        )  # fmt: skip
        assert len(up.requests) >= 4
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "finished"
    assert manifest["models"][0]["base_url"] == up.base_url
    assert manifest["sessions"][-1]["changed"] == {"--model-base-url": up.base_url}
    last = {r["key"]: r for r in records(run_dir)}
    assert len(last) == 4 and all(r["score"] is not None for r in last.values())


def test_the_harness_error_guard_of_every_e2e_test_finds_one(tmp_path: Path) -> None:
    """tests/e2e/conftest.py fails any e2e test whose runs hold a ``harness_error``."""
    from tests.e2e.conftest import harness_errors

    run = tmp_path / "results" / "run-1"
    run.mkdir(parents=True)
    good = {"key": "m|t|0|0", "outcome": "completed"}
    bad = {"key": "m|t|1|0", "outcome": "harness_error", "trajectory": {"error": "KeyError: x"}}
    (run / "episodes.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert harness_errors(tmp_path) == ["run-1 m|t|1|0: KeyError: x"]
    (run / "episodes.jsonl").write_text(json.dumps(good) + "\n")
    assert harness_errors(tmp_path) == []
