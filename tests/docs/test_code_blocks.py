"""Every code block of README.md and docs/ runs, or says in the page why it cannot.

Each page plays in a temporary directory of its own, its blocks in order (a later block
may use what an earlier one made, as a reader following the page would): ``bash`` blocks
under ``bash -euo pipefail`` with the checkout's ``gem-eval`` on ``PATH``, ``python``
blocks in the venv's Python (consecutive blocks in one process, each in a fresh
namespace), ``yaml`` and ``json`` blocks parsed (a whole suite also validated). ``text``
blocks are output and listings. Two fixture servers stand in for the model servers the
examples name (``http://127.0.0.1:8000/v1`` and ``:8001``). See docs/development.md,
"The documentation".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.docs.fences import ROOT, Block, blocks, pages
from tests.fixtures.openai_server import FakeOpenAIServer, serve

RUN = {"bash", "python"}
PARSE = {"yaml", "json"}
SHOW = {"text"}
STAND_INS = ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1")
BIN = Path(sys.executable).parent

# Runs consecutive python blocks in one process, each in a fresh namespace.
PYTHON_RUNNER = """\
import json, sys
for block in json.load(sys.stdin):
    print(f"--- {block['where']}", flush=True)
    exec(compile(block["code"], block["where"], "exec"), {"__name__": "__main__"})
"""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with serve() as one, serve() as two:
        yield one, two


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One gem-eval cache for every page (search indexes are built once)."""
    return tmp_path_factory.mktemp("cache")


def _env(cache: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("GEM_EVAL_RESULTS", "PYTEST_ADDOPTS")
    }
    env.update(
        PATH=os.pathsep.join([str(BIN), env.get("PATH", "")]),
        GEM_EVAL_CACHE=str(cache),
        COLUMNS="120",
    )
    return env


def _stand_in(code: str, servers: tuple[FakeOpenAIServer, FakeOpenAIServer]) -> str:
    for url, server in zip(STAND_INS, servers):
        code = code.replace(url, server.base_url)
    return code


def _runs(page_blocks: list[Block]) -> Iterator[list[Block]]:
    """The blocks to run, in order, consecutive python blocks together."""
    group: list[Block] = []
    for block in page_blocks:
        if block.skip is not None or block.lang not in RUN:
            continue
        if group and (block.lang != "python" or group[-1].lang != "python"):
            yield group
            group = []
        group.append(block)
    if group:
        yield group


def _check_parsed(block: Block, cwd: Path, env: dict[str, str]) -> None:
    if block.lang == "json":
        json.loads(block.code)
        return
    data = yaml.safe_load(block.code)
    if isinstance(data, dict) and {"name", "tasks"} <= data.keys():
        suite = cwd / f"suite-{block.line}.yaml"
        suite.write_text(block.code)
        done = subprocess.run(
            ["gem-eval", "suites", "validate", str(suite)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{block.where}\n{done.stdout}{done.stderr}"


PAGES = pages()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_code_blocks_run(
    page: Path,
    tmp_path: Path,
    servers: tuple[FakeOpenAIServer, FakeOpenAIServer],
    cache: Path,
) -> None:
    env = _env(cache)
    page_blocks = blocks(page)
    for block in page_blocks:
        if block.skip is None and block.lang in PARSE:
            _check_parsed(block, tmp_path, env)
    for group in _runs(page_blocks):
        if group[0].lang == "bash":
            [block] = group
            argv = ["bash", "-euo", "pipefail", "-c", _stand_in(block.code, servers)]
            stdin = None
        else:
            argv = [sys.executable, "-c", PYTHON_RUNNER]
            stdin = json.dumps(
                [{"where": b.where, "code": _stand_in(b.code, servers)} for b in group]
            )
        done = subprocess.run(
            argv,
            input=stdin,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        where = ", ".join(b.where for b in group)
        assert done.returncode == 0, f"{where} exited {done.returncode}\n{done.stdout}{done.stderr}"


def test_every_block_is_run_shown_or_marked() -> None:
    """A block's language says what the test does with it; a skipped block gives a reason."""
    unknown = [
        f"{b.where}: {b.lang or 'no language'}"
        for page in PAGES
        for b in blocks(page)
        if b.lang not in RUN | PARSE | SHOW
    ]
    assert not unknown, "fences must name bash, python, yaml, json or text:\n" + "\n".join(unknown)
    reasons = Counter(b.skip for page in PAGES for b in blocks(page) if b.skip is not None)
    ran = sum(1 for page in PAGES for b in blocks(page) if b.skip is None and b.lang in RUN)
    assert ran > 0 and reasons  # both kinds exist; the reasons are listed with -rP
    print(f"{ran} blocks run; skipped, by reason:")
    for reason, count in reasons.most_common():
        print(f"  {count:3d}  {reason}")
