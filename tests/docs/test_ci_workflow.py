"""The CI gating page's workflow works: its steps, run as GitHub Actions runs them.

The fixture OpenAI-compatible server (``tests/fixtures/openai_server.py``) stands in for
``vllm serve``; everything else is the page's text: the baseline block, then each ``run:``
step of the workflow in order, each in its own ``bash -e`` with the workflow's ``env:``
and ``GITHUB_STEP_SUMMARY``, in one workspace. The install step and the ``uses:`` steps
(checkout, artifact upload) are not run: the checkout's own gem-eval is on ``PATH``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from tests.docs.fences import DOCS, ROOT, blocks

PAGE = DOCS / "ci.md"
INPUTS = {"checkpoint": "/checkpoints/step-1200", "suite": "games"}
NOT_RUN = {"install"}  # pip install gem-eval vllm: the test runs the checkout's own
SERVE = re.compile(r'vllm serve "\$CKPT" --port 8000 --served-model-name (?P<name>\S+)')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _expand(value: object) -> str:
    """A workflow ``env:`` value with its ``${{ inputs.NAME }}`` filled in."""
    return re.sub(r"\$\{\{\s*inputs\.(\w+)\s*\}\}", lambda m: INPUTS[m[1]], str(value))


def _stand_in(script: str, port: int) -> str:
    """The step with the fixture server for vLLM, on a free port."""
    server = f"{sys.executable} -m tests.fixtures.openai_server --port {port} --model \\g<name>"
    script = SERVE.sub(server, script)
    return script.replace("127.0.0.1:8000", f"127.0.0.1:{port}")


def _workflow() -> tuple[str, dict[str, Any]]:
    page_blocks = blocks(PAGE)
    [baseline] = [b for b in page_blocks if b.lang == "bash"]
    [workflow] = [b for b in page_blocks if b.lang == "yaml"]
    return baseline.code, yaml.safe_load(workflow.code)


def test_the_ci_page_serves_runs_and_gates_a_checkpoint(tmp_path: Path) -> None:
    baseline, workflow = _workflow()
    [job] = workflow["jobs"].values()
    steps = job["steps"]
    serve = next(s for s in steps if "vllm serve" in s.get("run", ""))
    assert SERVE.search(serve["run"]), "the serve step's command changed: update SERVE"
    run_steps = [s for s in steps if "run" in s and s["name"] not in NOT_RUN]
    assert [s for s in steps if "run" in s and s["name"] in NOT_RUN], "no install step left"

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    summary = tmp_path / "step-summary.md"
    env = {
        **{k: v for k, v in os.environ.items() if k != "GEM_EVAL_RESULTS"},
        **{k: _expand(v) for k, v in {**workflow.get("env", {}), **job.get("env", {})}.items()},
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONPATH": str(ROOT),  # the fixture server's module
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(workspace),
        "GEM_EVAL_CACHE": str(tmp_path / "cache"),
    }
    port = _free_port()
    served: list[int] = []  # the serve step's process group, where the server lives on

    def bash(name: str, script: str) -> subprocess.CompletedProcess[str]:
        process = subprocess.Popen(
            ["bash", "-e", "-c", _stand_in(script, port)],
            cwd=workspace,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        if script is serve["run"]:
            served.append(process.pid)  # its own group (a new session): the server's too
        stdout, stderr = process.communicate(timeout=600)
        done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        assert done.returncode == 0, f"step {name!r} exited {done.returncode}\n{stdout}{stderr}"
        return done

    try:
        bash(serve["name"], serve["run"])
        # The baseline block, with the same checkpoint served: its run becomes BASELINE_RUN.
        bash("the baseline", baseline)
        [baseline_run] = os.listdir(workspace / "ci" / "baselines")
        env["BASELINE_RUN"] = baseline_run
        outputs = {s["name"]: bash(s["name"], s["run"]) for s in run_steps if s is not serve}
    finally:
        for group in served:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)

    gate = next(out for name, out in outputs.items() if name.startswith("gate"))
    assert "PASS" in gate.stdout, gate.stdout
    report = ET.parse(workspace / "report.xml").getroot()
    cases = {case.get("name") for case in report.iter("testcase")}
    assert "gate" in cases, cases
    assert baseline_run in summary.read_text()
    runs = [p for p in (workspace / "results").iterdir() if (p / "manifest.json").exists()]
    assert len(runs) == 2  # the baseline, copied in, and the checkpoint's run
