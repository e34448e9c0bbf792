"""``gem-eval gate --junit FILE --summary FILE`` end to end: the reports CI systems read,
for each verdict, and the files refused before the gate runs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from tests.e2e import test_gate_cli
from tests.e2e.test_gate_cli import bernoulli, write_run
from tests.e2e.test_run_cli import gem_eval

results = test_gate_cli.results  # the fixture: a base run, and a run with its outcomes


def regressed(base: np.ndarray) -> np.ndarray:
    """``base`` with tasks t0 (every sample fails) and t1 (most fail) regressed, t2 and t3
    as they were (sample ``i`` is task ``t{i % 4}``)."""
    new = base.copy()
    new[0::4] = False
    new[1::4] = bernoulli(0.2, len(new[1::4]), seed=5)
    return new


def cases(path: Path) -> dict[str, ET.Element]:
    """The testcases of a JUnit file by name, after checking the suite's counts add up."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    found = suite.findall("testcase")
    for kind, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        number = sum(case.find(kind) is not None for case in found)
        assert suite.get(attr) == root.get(attr) == str(number), kind
    assert suite.get("tests") == str(len(found))
    total = sum(float(case.get("time", "nan")) for case in found)
    assert float(suite.get("time", "nan")) == pytest.approx(total, abs=0.01)
    return {case.get("name", ""): case for case in found}


def outcome(case: ET.Element) -> str:
    kinds = [kind for kind in ("failure", "error", "skipped") if case.find(kind) is not None]
    assert len(kinds) <= 1
    return kinds[0] if kinds else "pass"


def test_failures_on_exactly_the_regressing_tasks(results: Path, tmp_path: Path) -> None:
    write_run(results, "worse", regressed(bernoulli(0.8, 200, seed=1)), started_at=3000.0)
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    plain = gem_eval("gate", "worse", "--baseline", "base", results=results)
    done = gem_eval(
        "gate", "worse", "--baseline", "base", "--junit", str(junit), "--summary", str(summary),
        results=results,
    )  # fmt: skip
    assert done.returncode == plain.returncode == 1, done.stdout + done.stderr
    assert done.stdout == plain.stdout and done.stderr == plain.stderr == ""
    found = cases(junit)
    assert {name: outcome(case) for name, case in found.items()} == {
        "gate": "failure", "t0": "failure", "t1": "failure", "t2": "pass", "t3": "pass",
    }  # fmt: skip
    assert {case.get("classname") for case in found.values()} == {"fixed"}
    suite_element = ET.parse(junit).getroot().find("testsuite")
    assert suite_element is not None
    assert suite_element.get("name") == "gem-eval gate worse against baseline base"
    failure = found["t0"].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert failure.get("message", "").startswith("significant drop beyond 0.02 at alpha 0.05")
    assert "mean score 0.780 -> 0.000" in failure.get("message", "")
    # A JUnit reader, as CI plug-ins use, reads the same counts.
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 3, 0, 0)
    read = {case.name: [type(r) for r in case.result] for case in suite}
    assert read == {"gate": [Failure], "t0": [Failure], "t1": [Failure], "t2": [], "t3": []}
    text = summary.read_text()
    assert text.startswith("### gem-eval gate FAIL: exit 1, a significant regression\n")
    assert "Run `worse` against baseline `base`, suite `fixed`." in text
    assert "Paired difference (new - base): **" in text and "90% CI [" in text
    rows = [line for line in text.splitlines() if re.match(r"\| t\d ", line)]
    assert [row.split(" | ")[0] for row in rows] == ["| t0", "| t1", "| t2", "| t3"]
    assert [row.split(" | ")[-1] for row in rows] == ["**yes** |", "**yes** |", "no |", "no |"]
    assert "| t0 | 0.780 | 0.000 | -0.780 |" in text
    assert plain.stdout in text  # the gate's own lines


def test_a_pass_and_a_second_summary_appended(results: Path, tmp_path: Path) -> None:
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    args = ("gate", "same", "--baseline", "base", "--junit", str(junit), "--summary", str(summary))
    first = gem_eval(*args, results=results)
    assert first.returncode == 0, first.stdout + first.stderr
    assert {name: outcome(case) for name, case in cases(junit).items()} == dict.fromkeys(
        ("gate", "t0", "t1", "t2", "t3"), "pass"
    )
    once = summary.read_text()
    assert once.startswith("# earlier step\n\n### gem-eval gate PASS: exit 0, no significant")
    second = gem_eval(*args, results=results)
    assert second.returncode == 0 and second.stdout == first.stdout
    twice = summary.read_text()
    assert twice.startswith(once) and twice.count("### gem-eval gate PASS") == 2
    assert twice.count("| task | base | new | diff | significant drop |") == 2
    assert len(cases(junit)) == 5  # the JUnit file is replaced, not appended to


def test_several_models_and_a_model_of_one_run(tmp_path: Path) -> None:
    """Runs of several models pair on the model: a testcase per model's task, named
    ``model / task``; a model of one run only is skipped, its line in the summary."""
    root = tmp_path / "results"
    outcomes = bernoulli(0.8, 40, seed=3)
    write_run(root, "old", outcomes, models=("openai/a", "openai/b"))
    write_run(root, "new", outcomes, models=("openai/a", "openai/c"), started_at=2000.0)
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    done = gem_eval(
        "gate", "new", "--baseline", "old", "--allow-subset", "--junit", str(junit),
        "--summary", str(summary), results=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = cases(junit)
    tasks = ("t0", "t1", "t2", "t3")
    assert {name: outcome(case) for name, case in found.items()} == {
        "gate": "pass",
        **{f"openai/a / {t}": "pass" for t in tasks},
        **{f"openai/{m} / {t}": "skipped" for m in "bc" for t in tasks},
    }
    skipped = found["openai/c / t0"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "model openai/c is in the new run only: not compared"
    text = summary.read_text()
    assert "| openai/b / t1 | - | - | - | model openai/b is in the base run only" in text
    assert "  model openai/c is in the new run only: not compared" in text  # the gate's line


@pytest.mark.parametrize(
    ("new", "tasks"),
    [
        ({"suite_hash": "h2"}, 4),  # compared, not judged: each task skipped
        ({"status": "interrupted"}, 0),  # not compared: the verdict alone
        ({"scorer": "return"}, 0),
    ],
)
def test_3_an_error_testcase(
    results: Path,
    tmp_path: Path,
    new: dict[str, object],
    tasks: int,
) -> None:
    write_run(results, "new", bernoulli(0.8, 200, seed=1), started_at=3000.0, **new)  # type: ignore[arg-type]
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    args = ("gate", "new", "--baseline", "base")
    plain = gem_eval(*args, results=results)
    done = gem_eval(*args, "--junit", str(junit), "--summary", str(summary), results=results)
    assert done.returncode == plain.returncode == 3, done.stdout + done.stderr
    assert done.stdout == plain.stdout
    found = cases(junit)
    assert list(found) == ["gate", *[f"t{i}" for i in range(tasks)]]
    error = found["gate"].find("error")
    assert error is not None and error.get("type") == "incomparable"
    assert error.text == plain.stdout.rstrip("\n")
    assert error.get("message") == plain.stdout.splitlines()[1].strip()
    for name in list(found)[1:]:
        skipped = found[name].find("skipped")
        assert skipped is not None
        assert skipped.get("message") == "not judged: the runs are not comparable"
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    assert (suite.errors, suite.skipped) == (1, tasks)
    assert [type(r) for r in next(iter(suite)).result] == [Error]
    assert all(case.result and isinstance(case.result[0], Skipped) for case in list(suite)[1:])
    text = summary.read_text()
    assert text.startswith("### gem-eval gate INCOMPARABLE: exit 3, the runs are not comparable")
    assert plain.stdout in text


@pytest.mark.parametrize("option", ["--junit", "--summary"])
@pytest.mark.parametrize("where", ["missing/report", "a directory", "a file/report"])
def test_2_a_file_that_cannot_be_written(
    results: Path,
    tmp_path: Path,
    option: str,
    where: str,
) -> None:
    (tmp_path / "a directory").mkdir()
    (tmp_path / "a file").write_text("")
    path = tmp_path / where
    other = tmp_path / ("summary.md" if option == "--junit" else "gate.xml")
    done = gem_eval(
        "gate", "same", "--baseline", "base", option, str(path),
        "--junit" if option == "--summary" else "--summary", str(other), results=results,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert not done.stdout and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"error: {option} {path}: ")
    assert not other.exists() and not (tmp_path / "missing").exists()


def test_2_bad_input_writes_nothing(results: Path, tmp_path: Path) -> None:
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    done = gem_eval(
        "gate", "nope", "--baseline", "base", "--junit", str(junit), "--summary", str(summary),
        results=results,
    )  # fmt: skip
    assert done.returncode == 2 and "error: no run 'nope'" in done.stderr
    assert not junit.exists() and not summary.exists()
    same = gem_eval(
        "gate", "same", "--baseline", "base", "--junit", str(junit), "--summary", str(junit),
        results=results,
    )  # fmt: skip
    assert same.returncode == 2 and "--junit and --summary are one file" in same.stderr
    assert not junit.exists()
