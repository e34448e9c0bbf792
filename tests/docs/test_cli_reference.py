"""The committed CLI reference (docs/cli.md) is what the Typer app's help says now."""

from __future__ import annotations

import difflib
import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.docs.fences import DOCS, ROOT

GENERATOR = DOCS / "hooks" / "cli_reference.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_cli_reference_is_current() -> None:
    expected = _generator().render()
    committed = (DOCS / "cli.md").read_text()
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            "docs/cli.md (committed)",
            "docs/cli.md (from the app)",
        )
    )
    assert not diff, f"run `make docs` (or python {GENERATOR.relative_to(ROOT)}):\n{diff}"


def test_every_command_has_a_section() -> None:
    import typer.main

    from gem_eval.cli.app import app

    root = typer.main.get_command(app)
    text = (DOCS / "cli.md").read_text()
    for name in root.commands:  # type: ignore[attr-defined]
        assert f"\n## gem-eval {name}\n" in text, name


def test_rendering_the_reference_imports_no_litellm() -> None:
    """The reference is the CLI's help: it loads what `gem-eval --help` loads."""
    probe = (
        "import runpy, sys; runpy.run_path(sys.argv[1])['render'](); "
        "print('litellm' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(GENERATOR)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
