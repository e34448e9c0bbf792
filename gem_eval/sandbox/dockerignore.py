"""``.dockerignore``: which files of a build context Docker would send.

gem-eval sends build contexts itself (a tar it writes) and names each image by a hash of
its context, so both must leave out what the context's ``.dockerignore`` excludes, by
Docker's own rules (those of moby's ``patternmatcher`` and the CLI's context walk):

* One pattern a line; a line starting with ``#`` is a comment; lines are trimmed; a
  leading ``!`` makes an exception (a bare ``!`` is an error). Each pattern is cleaned
  as Go's ``filepath.Clean`` cleans it and a leading ``/`` is dropped: ``/foo``,
  ``./foo`` and ``foo/`` all mean ``foo``, relative to the context's root.
* The glob is Go's ``filepath.Match`` plus ``**``: ``*`` and ``?`` stop at ``/``,
  ``[...]`` is a class negated by ``^``, ``\\`` escapes, ``**/`` matches any number of
  directories (none too), a trailing ``**`` anything below, and a leading ``**``
  followed by no other wildcard is a suffix (``**.go`` matches ``a/b.go``).
* A pattern excludes a path when it matches the path or one of its parent directories;
  the last pattern that matches decides, so a later ``!`` line takes a path back.
* An excluded directory is not entered at all unless an exception names a path under
  it (``!dir/keep.txt``): as in ``docker build``, ``*`` then ``!**/*.py`` keeps only
  the ``.py`` files at the top.
* ``.dockerignore`` and the Dockerfile are sent even when excluded (the builder needs
  them; ``COPY`` does not see an excluded one).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FILENAME = ".dockerignore"
Kind = Literal["exact", "prefix", "suffix", "regexp"]


@dataclass(frozen=True)
class Pattern:
    """One cleaned pattern and how it matches (``exact``, ``prefix``, ``suffix`` or a
    regular expression, as moby's ``patternmatcher`` decides)."""

    text: str
    exception: bool
    kind: Kind
    regexp: re.Pattern[str]

    def matches(self, path: str) -> bool:
        if self.kind == "exact":
            return path == self.text
        if self.kind == "prefix":
            return path.startswith(self.text[:-2])
        if self.kind == "suffix":
            suffix = self.text[2:]
            return path.endswith(suffix) or (suffix[:1] == "/" and path == suffix[1:])
        return self.regexp.fullmatch(path) is not None


class DockerIgnore:
    """The patterns of one ``.dockerignore`` file.

    Raises:
        ValueError: A line Docker refuses (a bare ``!``, a malformed ``[...]``).
    """

    def __init__(self, text: str) -> None:
        self.patterns = [_compile(line) for line in _lines(text)]
        self.has_exceptions = any(p.exception for p in self.patterns)

    @classmethod
    def of(cls, context: Path) -> DockerIgnore | None:
        """The context's ``.dockerignore``, or ``None`` when it has none."""
        path = context / FILENAME
        return cls(path.read_text(errors="replace")) if path.is_file() else None

    def excludes(self, path: str) -> bool:
        """Whether ``path`` (relative to the context, ``/``-separated) is left out, by
        itself or by a parent directory (moby's ``MatchesOrParentMatches``)."""
        parents = posixpath.dirname(path).split("/") if "/" in path else []
        matched = False
        for pattern in self.patterns:
            if pattern.exception != matched:
                continue  # it could not change the verdict
            hit = pattern.matches(path) or any(
                pattern.matches("/".join(parents[: i + 1])) for i in range(len(parents))
            )
            if hit:
                matched = not pattern.exception
        return matched

    def enters(self, directory: str) -> bool:
        """Whether the context walk goes into an excluded ``directory``: only when an
        exception names a path under it."""
        prefix = directory + "/"
        return any(p.exception and (p.text + "/").startswith(prefix) for p in self.patterns)


def context_entries(context: Path, keep: Callable[[Path], bool] = lambda _: True) -> list[Path]:
    """The files and directories of ``context`` a build sends, sorted; ``keep`` may
    leave out more (it is asked about each path relative to the context, and a
    directory it refuses is not entered)."""
    ignore = DockerIgnore.of(context)
    entries: list[Path] = []
    for top, dirs, files in os.walk(context):  # a link to a directory is not entered
        base = Path(top)
        entered = []
        for name in sorted(dirs):
            relative = (base / name).relative_to(context)
            if not keep(relative):
                continue
            if ignore is not None and ignore.excludes(relative.as_posix()):
                if ignore.has_exceptions and ignore.enters(relative.as_posix()):
                    entered.append(name)  # for an exception below; not sent itself
                continue
            entries.append(base / name)
            entered.append(name)
        dirs[:] = entered
        for name in files:
            relative = (base / name).relative_to(context)
            if keep(relative) and _sent(ignore, relative):
                entries.append(base / name)
    return sorted(entries)


def _sent(ignore: DockerIgnore | None, relative: Path) -> bool:
    name = relative.as_posix()
    return ignore is None or name == FILENAME or not ignore.excludes(name)


def _lines(text: str) -> list[str]:
    """The patterns of a file's text, cleaned (``!`` kept in front)."""
    out = []
    for n, raw in enumerate(text.splitlines()):
        line = raw.removeprefix("\ufeff") if n == 0 else raw
        if line.startswith("#"):
            continue
        line = line.strip()
        if not line:
            continue
        exception = line.startswith("!")
        if exception:
            line = line[1:].strip()
        if line:
            line = _clean(line)
            if len(line) > 1 and line.startswith("/"):
                line = line[1:]
        out.append("!" + line if exception else line)
    return out


def _clean(path: str) -> str:
    """Go's ``filepath.Clean`` (which, unlike ``posixpath.normpath``, folds ``//a``)."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _compile(line: str) -> Pattern:
    """One pattern as moby's ``patternmatcher`` compiles it (its match kinds kept: they
    differ from the regular expression for a leading ``**``)."""
    exception = line.startswith("!")
    if exception and len(line) == 1:
        raise ValueError('illegal exclusion pattern: "!"')
    text = _clean(line[1:] if exception else line)
    regexp: str = ""
    kind: Kind = "exact"
    i = token = 0
    while i < len(text):
        ch = text[i]
        if ch == "*" and text[i + 1 : i + 2] == "*":
            i += 3 if text[i + 2 : i + 3] == "/" else 2  # **/ is **
            if i < len(text):
                regexp, kind = regexp + "(.*/)?", "regexp"
            elif kind == "exact":
                kind = "prefix"
            else:
                regexp, kind = regexp + ".*", "regexp"
            if token == 0:
                kind = "suffix"
        elif ch in "*?":
            regexp, kind = regexp + ("[^/]*" if ch == "*" else "[^/]"), "regexp"
            i += 1
        elif ch == "[":
            klass, i = _class(text, i)
            regexp, kind = regexp + klass, "regexp"
        elif ch == "\\":
            if i + 1 >= len(text):
                raise ValueError(f"syntax error in pattern {text!r}: trailing \\")
            regexp, i = regexp + re.escape(text[i + 1]), i + 2
        else:
            regexp, i = regexp + re.escape(ch), i + 1
        token += 1
    return Pattern(text, exception, kind, re.compile(regexp, re.DOTALL))


def _class(text: str, start: int) -> tuple[str, int]:
    """The ``[...]`` at ``start`` as a Python class, and the index after it; checked as
    Go's ``filepath.Match`` checks it (a class must close, ranges must run upwards)."""
    i, out = start + 1, "["
    if text[i : i + 1] == "^":
        out, i = "[^", i + 1
    members = 0
    while True:
        if i >= len(text):
            raise ValueError(f"syntax error in pattern {text!r}: unterminated [")
        if text[i] == "]" and members:
            return out + "]", i + 1
        lo, i = _class_char(text, i)
        if text[i : i + 1] == "-":
            hi, i = _class_char(text, i + 1)
            if hi < lo:
                raise ValueError(f"syntax error in pattern {text!r}: range {lo}-{hi}")
            out += f"{re.escape(lo)}-{re.escape(hi)}"
        else:
            out += re.escape(lo)
        members += 1


def _class_char(text: str, i: int) -> tuple[str, int]:
    if i >= len(text) or text[i] in "-]":
        raise ValueError(f"syntax error in pattern {text!r}")
    if text[i] == "\\":
        i += 1
        if i >= len(text):
            raise ValueError(f"syntax error in pattern {text!r}: trailing \\")
    return text[i], i + 1
