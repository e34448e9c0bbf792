"""The fenced code blocks of a Markdown page, with the skip marks that go with them.

A block is skipped, visibly in the page, by an HTML comment next to it:
``<!-- skip: REASON -->`` on the line before its opening fence, or
``<!-- skip above: REASON -->`` on the line after its closing fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_SKIP = re.compile(r"^\s*<!--\s*skip:\s*(?P<reason>\S.*?)\s*-->\s*$")
_SKIP_ABOVE = re.compile(r"^\s*<!--\s*skip above:\s*(?P<reason>\S.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block.

    Attributes:
        page: The Markdown file.
        line: The line of its opening fence (1-based).
        lang: The fence's language (``""`` when it names none).
        code: Its text, the fence's indentation removed.
        skip: Why it is not run, as the page says; ``None`` for a block to run.
    """

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None

    @property
    def where(self) -> str:
        """``docs/ci.md:16``: the page (relative to the checkout) and line."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        before = _SKIP.match(lines[start - 1]) if start > 0 else None
        after = _SKIP_ABOVE.match(lines[i + 1]) if i + 1 < len(lines) else None
        skip = before or after
        found.append(
            Block(
                page=page,
                line=start + 1,
                lang=opening["info"].strip().split(" ")[0],
                code="\n".join(body) + "\n",
                skip=skip["reason"] if skip else None,
            )
        )
        i += 1
    return found


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and stripped.strip(fence[0]) == ""
