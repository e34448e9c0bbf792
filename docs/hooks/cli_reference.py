"""The CLI reference page (``docs/cli.md``), rendered from the Typer app.

Every command's ``--help``, as ``gem-eval ... --help`` prints it, in the order the app
lists them. Used three ways:

- as an MkDocs hook (``hooks:`` in ``mkdocs.yml``): each build renders the page afresh,
  so the site never shows a stale reference;
- as a script, ``python docs/hooks/cli_reference.py``, which writes ``docs/cli.md`` (run
  by ``make docs``; the file is committed so that the reference reads on GitHub too;
  under ``CI=true`` it fails on a stale page instead of writing it);
- from ``tests/docs/test_cli_reference.py``, which fails when the committed page is not
  what :func:`render` gives.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = "cli.md"
WIDTH = 100  # help text is wrapped here, whatever the terminal (a stable page)

HEADER = """\
# CLI reference

Every command's `--help`, generated from the Typer app (`gem_eval/cli/app.py`) by
`docs/hooks/cli_reference.py`: do not edit this page, run `make docs` to write it
again. [The command line](command-line.md) gives the overview: the commands at a
glance, errors and exit codes.
"""


def render() -> str:
    """The reference page: one section per command, its help as ``--help`` shows it."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typer.main

    from gem_eval.cli.app import app

    root = typer.main.get_command(app)
    sections = [HEADER]
    _walk(root, "gem-eval", None, sections)
    return "\n".join(sections)


def _walk(command: Any, path: str, parent: Any, out: list[str]) -> None:
    """Append ``command``'s section, then its sub-commands', depth first: ``gem-eval``
    and its commands are level-2 headings, a group's commands (``gem-eval envs list``)
    level 3."""
    ctx = command.context_class(  # the Click that Typer runs on (>= 0.29 vendors its own)
        command,
        info_name=path.rsplit(" ", 1)[-1],
        parent=parent,
        terminal_width=WIDTH,
        max_content_width=WIDTH,
    )
    help_text = command.get_help(ctx).rstrip()
    depth = 2 if path.count(" ") < 2 else 3
    out.append(f"{'#' * depth} {path}\n\n```text\n{help_text}\n```\n")
    names = command.list_commands(ctx) if hasattr(command, "list_commands") else []
    for name in names:
        sub = command.get_command(ctx, name)
        if sub is not None and not getattr(sub, "hidden", False):
            _walk(sub, f"{path} {name}", ctx, out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: the reference page's text is rendered now, not read from disk."""
    if page.file.src_uri == PAGE:
        return render()
    return markdown


def main() -> None:
    """Write ``docs/cli.md``; under ``CI=true``, fail instead when it is not current (CI
    checks what was committed, it does not mend it)."""
    target = ROOT / "docs" / PAGE
    text = render()
    if target.exists() and target.read_text() == text:
        return
    name = target.relative_to(ROOT)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        sys.exit(f"error: {name} is not what the CLI's help says: run `make docs` and commit it")
    target.write_text(text)
    print(f"wrote {name}")


if __name__ == "__main__":
    main()
