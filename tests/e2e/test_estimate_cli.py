"""``gem-eval run --dry-run`` and ``--confirm-above``: an estimate before any spending."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_run_cli import gem_eval, records, run_dirs
from tests.fixtures.openai_server import FakeOpenAIServer, Reply


def guesses(body: dict[str, object]) -> Reply:
    return Reply("\\boxed{7}" if len(body["messages"]) < 3 else "\\boxed{2}")  # type: ignore[arg-type]


def total_tokens(stdout: str) -> tuple[int, int]:
    """The input and output tokens of the estimate table's total row."""
    row = next(line for line in stdout.splitlines() if "total" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    numbers = [int(re.sub(r"[^0-9]", "", c)) for c in cells[1:5]]  # episodes, calls, in, out
    return numbers[2], numbers[3]


def test_dry_run_plays_nothing_and_estimates_from_the_last_run(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    base = ["--suite", "smoke", "--model", "openai/fake", "--model-base-url"]
    base += [openai_server.base_url]
    results = tmp_path / "r"

    dry = gem_eval("run", *base, "--dry-run", results=results)
    assert dry.returncode == 0, dry.stderr + dry.stdout
    assert not results.exists() and not openai_server.requests  # nothing played or created
    assert "bound" in dry.stdout and "≤" in dry.stdout  # no history: ceilings, labelled

    first = gem_eval("run", *base, "-q", results=results)
    assert first.returncode == 0, first.stderr
    calls = len(openai_server.requests)
    played = records(run_dirs(results)[0])
    real_in = sum(int(r["input_tokens"]) for r in played)  # type: ignore[call-overload]
    real_out = sum(int(r["output_tokens"]) for r in played)  # type: ignore[call-overload]

    dry = gem_eval("run", *base, "--dry-run", results=results)
    assert dry.returncode == 0, dry.stderr + dry.stdout
    assert len(openai_server.requests) == calls and len(run_dirs(results)) == 1
    assert "history" in dry.stdout
    est_in, est_out = total_tokens(dry.stdout)
    assert abs(est_in - real_in) <= 0.2 * real_in, (est_in, real_in)
    assert abs(est_out - real_out) <= 0.2 * real_out, (est_out, real_out)


def test_confirm_above_refuses_without_a_terminal_unless_yes(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.handler = guesses
    # A model litellm prices, served by the fixture server: the estimate has a cost.
    base = ["run", "--suite", "smoke", "--model", "openai/gpt-4o", "--limit", "1"]
    base += ["--model-base-url", openai_server.base_url, "--confirm-above", "0.000001", "-q"]
    results = tmp_path / "r"
    refused = gem_eval(*base, results=results)
    assert refused.returncode == 2, refused.stderr + refused.stdout
    assert "over $0.0000 (--confirm-above): pass --yes to run it anyway" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not results.exists() and not openai_server.requests

    cheap = gem_eval(*base[:-3], "--confirm-above", "100", "-q", results=results)
    assert cheap.returncode == 0, cheap.stderr
    agreed = gem_eval(*base, "--yes", results=results)
    assert agreed.returncode == 0, agreed.stderr
    assert len(run_dirs(results)) == 2
