"""Git, as the registry needs it: the commit a branch or tag is at, and a checkout of some
paths of a repository at one commit.

A checkout fetches that one commit (``--depth 1``, without blobs outside the paths where
the server allows it) and checks out only the paths asked for (a sparse checkout), so a
dataset that is a few directories of a large repository costs those directories. Git
never prompts: a repository that needs credentials it does not have fails at once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from gem_eval.errors import RegistryError

FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A commit id in full (SHA-1 or SHA-256): fetched as it is, no lookup needed."""


def resolve_commit(git_url: str, ref: str | None) -> str:
    """The commit ``ref`` (a branch or tag; ``None``: the default branch) is at now.

    Raises:
        RegistryError: The repository cannot be reached, or has no such branch or tag.
    """
    if ref is not None and FULL_COMMIT.fullmatch(ref.lower()):
        return ref.lower()
    out = _git("ls-remote", git_url, ref or "HEAD", doing=f"look up {ref or 'HEAD'} in {git_url}")
    lines = [line.split("\t") for line in out.splitlines() if "\t" in line]
    peeled = [sha for sha, name in lines if name.endswith("^{}")]  # an annotated tag's commit
    found = peeled or [sha for sha, _ in lines]
    if not found:
        raise RegistryError(
            f"{git_url} has no branch or tag {ref!r} (a registry pins a commit by its full id)"
        )
    return found[0]


def checkout(git_url: str, commit: str, paths: Sequence[str], dest: Path) -> None:
    """Check ``paths`` of ``git_url`` out at ``commit`` into ``dest`` (a new directory),
    each at its place in the repository; ``dest`` keeps no ``.git``.

    Raises:
        RegistryError: The repository cannot be fetched, has no such commit, or lacks one
            of ``paths`` at it.
    """
    dest.mkdir(parents=True)
    _git("init", "--quiet", cwd=dest, doing="make a repository")
    _git("remote", "add", "origin", git_url, cwd=dest, doing="name the remote")
    patterns = [_pattern(path) for path in paths]
    if "/*" not in patterns:  # the whole repository needs no sparse checkout
        _git(
            "sparse-checkout", "set", "--no-cone", "--stdin",
            cwd=dest, stdin="\n".join(patterns) + "\n", doing="choose the paths",
        )  # fmt: skip
    fetch = ["fetch", "--quiet", "--depth", "1"]
    if "huggingface.co" not in git_url:  # its server cannot serve the blobs fetched lazily
        fetch.append("--filter=blob:none")
    try:
        _git(*fetch, "origin", commit, cwd=dest, doing=f"fetch {git_url}")
    except RegistryError as exc:
        _git("ls-remote", git_url, "HEAD", doing=f"fetch {git_url}")  # reachable at all?
        raise RegistryError(f"commit {commit} is not in {git_url} ({exc})") from None
    _git("checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=dest, doing=f"check out {commit}")
    head = _git("rev-parse", "HEAD", cwd=dest, doing="read the commit").strip()
    if not head.startswith(commit.lower()):
        raise RegistryError(f"fetching commit {commit} of {git_url} gave {head}")
    for path in paths:
        if not (dest / _relative(path)).exists():
            raise RegistryError(f"{git_url} has no {path!r} at commit {commit}")
    shutil.rmtree(dest / ".git")


def _pattern(path: str) -> str:
    """A sparse-checkout pattern for ``path``, anchored at the repository's root."""
    relative = _relative(path)
    return "/*" if relative == PurePosixPath(".") else f"/{relative}/"


def _relative(path: str) -> PurePosixPath:
    """``path`` inside the repository; one that leaves it is refused."""
    relative = PurePosixPath(path.strip().strip("/") or ".")
    if ".." in relative.parts:
        raise RegistryError(f"task path {path!r} leaves its repository")
    return relative


def _git(*args: str, cwd: Path | None = None, stdin: str | None = None, doing: str) -> str:
    """Run git; its output. A failure is a :class:`RegistryError` with git's last line."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env
        )
    except FileNotFoundError:
        raise RegistryError(
            "git is not installed: registry datasets are fetched with git"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit code {done.returncode}"
        raise RegistryError(f"cannot {doing}: {why}")
    return done.stdout
