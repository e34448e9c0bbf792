"""Base-image substitution: ``--image-map FROM=TO`` and a suite's ``sandbox.image_map``.

Published task images start ``FROM`` registry images (``python:3.13-slim``,
``ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624``). Where no registry is
reachable (air-gapped machines, CI here) the build substitutes a local image instead::

    --image-map 'python:3*=gem-eval/tb:bookworm' --image-map '*=gem-eval/tb:bookworm'

A key is an image reference or a glob over it (``*`` matches anything); the first key
that matches a ``FROM`` wins, exact keys before globs. ``FROM`` lines naming an earlier
build stage (``FROM builder``) are left alone.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from gem_eval.errors import UserError

_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
_STAGE = re.compile(r"\s+AS\s+(\S+)", re.IGNORECASE)
_HEREDOC = re.compile(r"<<-?([\"']?)([A-Za-z_][A-Za-z0-9_]*)\1")


def parse_image_map(items: list[str]) -> dict[str, str]:
    """``["FROM=TO", ...]`` (the command line's form) as a mapping.

    Raises:
        UserError: An item without ``=`` or with an empty side.
    """
    mapping: dict[str, str] = {}
    for item in items:
        source, sep, target = item.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise UserError(
                f"--image-map takes FROM=TO (e.g. 'python:3*=gem-eval/tb'), not {item!r}"
            )
        target = target.strip()
        if Path(target).is_dir():  # a build directory: absolute, so --resume works anywhere
            target = str(Path(target).resolve())
        mapping[source.strip()] = target
    return mapping


def map_image(image: str, mapping: dict[str, str]) -> str:
    """The image to use for ``image`` under ``mapping`` (``image`` itself if no key matches)."""
    key = matching_key(image, mapping)
    return image if key is None else mapping[key]


def matching_key(image: str, mapping: dict[str, str]) -> str | None:
    """The key of ``mapping`` that ``image`` maps under (exact before globs), if any."""
    if image in mapping:
        return image
    for pattern in mapping:
        if any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(image, pattern):
            return pattern
    return None


def _instruction_starts(lines: list[str]) -> list[bool]:
    """For each line, whether it starts an instruction: not the continuation of a line
    ending in a backslash, nor the body of a heredoc (``RUN <<EOF`` ... ``EOF``), where a
    Python ``from x import y`` is not a ``FROM``."""
    starts: list[bool] = []
    ends: list[str] = []
    continued = False
    for line in lines:
        body = line.rstrip("\r\n")
        if ends:  # inside a heredoc: only its terminator ends it
            starts.append(False)
            if body.strip() == ends[0]:
                ends.pop(0)
            continue
        starts.append(not continued)
        if not body.lstrip().startswith("#"):
            ends.extend(m.group(2) for m in _HEREDOC.finditer(body))
            continued = body.endswith("\\")
    return starts


def rewrite_dockerfile(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every ``FROM`` image substituted under ``mapping``."""
    if not mapping:
        return text
    stages: set[str] = set()
    lines = text.splitlines(keepends=True)
    for n, start in enumerate(_instruction_starts(lines)):
        match = _FROM.match(lines[n]) if start else None
        if match:
            head, flags, image, rest = match.groups()
            if image.lower() not in stages:
                image = map_image(image, mapping)
            stage = _STAGE.match(rest)
            if stage:
                stages.add(stage.group(1).lower())
            ending = lines[n][len(lines[n].rstrip("\r\n")) :]
            lines[n] = f"{head}{flags}{image}{rest.rstrip(chr(13) + chr(10))}{ending}"
    return "".join(lines)


def base_images(text: str) -> list[str]:
    """The images a Dockerfile's ``FROM`` lines name (build stages left out)."""
    stages: set[str] = set()
    images = []
    lines = text.splitlines()
    for n, start in enumerate(_instruction_starts(lines)):
        match = _FROM.match(lines[n]) if start else None
        if match:
            image, rest = match.group(3), match.group(4)
            if image.lower() not in stages:
                images.append(image)
            stage = _STAGE.match(rest)
            if stage:
                stages.add(stage.group(1).lower())
    return images
