"""README.md's links into the repository lead somewhere: the file exists and, for a
Markdown page, the anchor is one of its headings (as MkDocs and GitHub name them).

Links between the pages of docs/ are checked by ``mkdocs build --strict`` (``make docs``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.fences import ROOT

LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


def _anchors(page: Path) -> set[str]:
    from markdown.extensions.toc import slugify  # type: ignore[import-untyped]

    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading:
            anchors.add(slugify(heading["title"].replace("`", ""), "-"))
    return anchors


def test_readme_links_into_the_repository_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    links = [m["target"] for m in LINK.finditer(text)]
    local = [t for t in links if not re.match(r"[a-z]+:", t)]
    assert any(t.startswith("docs/") for t in local)
    broken = []
    for target in local:
        path, _, anchor = target.partition("#")
        page = ROOT / path if path else ROOT / "README.md"
        if not page.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in _anchors(page):
            broken.append(f"{target}: no heading #{anchor} in {path or 'README.md'}")
    assert not broken, "\n".join(broken)
