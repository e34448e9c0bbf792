"""The integrity audit: the verifier's toolchain is as the image made it, or the episode
is ``tampered``.

Before the agent's first command, :func:`probe` asks the pristine container which
files the test run will rely on: the commands the test scripts and the grader run (as
resolved on the verifier's ``PATH``, every symlink on the way, a script's interpreter,
the shared libraries they load), every Python on ``PATH`` (its interpreter, standard
library, ``site-packages``, and the places that would change its ``sys.path``:
``pyvenv.cfg``, ``._pth``, landmark directories), files the scripts ``source``, the
shell start-up files (``/etc/profile``, ``/root/.bashrc``, ``/etc/environment`` ...),
pytest configuration above ``/tests`` (``/conftest.py``, ``/pytest.ini`` ...) and
``/etc/ld.so.preload``. Only paths are kept, host-side; nothing is left in the container.

Before grading, :func:`check` asks Docker which paths differ from the image (the
container's change list, kept by the engine outside the container: the agent, root
inside, can neither forge nor hide an entry) and raises :class:`TamperError` naming
any change, addition or removal under those paths. Site directories are treated
apart, since installing a package is ordinary work: a new top-level package there is
allowed unless it is a start-up hook (``*.pth``, ``sitecustomize``, ``usercustomize``),
takes the name of a module that was importable before (shadowing it), or registers a
pytest plugin (a ``pytest11`` entry point). Byte-code caches are ignored; the verifier
never reads them (``PYTHONPYCACHEPREFIX``, see :mod:`~gem_eval.envs.terminal.verifier`).

A task whose work is to change the toolchain (install into the system Python, edit
``/root/.bashrc``) declares it: ``audit = false`` or ``audit_exclude = [paths]``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.errors import SandboxError, TamperError
from gem_eval.sandbox.base import Sandbox

GRADER_TOOLS = ("sh", "bash", "timeout", "mv", "rm", "mkdir", "python3", "python")
"""Commands the grader's own steps and the verifier's launch use, always audited."""
STARTUP_FILES = (
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/bash.bash_logout",
    "/etc/environment",
    "/etc/security/pam_env.conf",
    "/root/.profile",
    "/root/.bash_profile",
    "/root/.bash_login",
    "/root/.bashrc",
    "/root/.bash_logout",
    "/etc/ld.so.preload",
    # pytest reads these above /tests when it is not confined to /tests
    "/conftest.py",
    "/pytest.ini",
    "/.pytest.ini",
    "/pyproject.toml",
    "/setup.cfg",
    "/tox.ini",
    "/setup.py",
    # a test script that installs its tools reads their configuration
    "/etc/pip.conf",
    "/etc/xdg/pip",
    "/root/.pip",
    "/root/.config/pip",
    "/etc/uv",
    "/root/.config/uv",
)
# Words before a command that are not the command (`exec python3 ...`, `if pytest ...`).
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case"}
    | {"esac", "in", "function", "select", "time", "!", "{", "}", "[[", "]]", "exec"}
    | {"command", "builtin", "nohup", "sudo", "env", "xargs"}
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_SOURCED = re.compile(r"(?:^|[;&|(]|\s)(?:source|\.)\s+([^\s;&|)]+)")
_HOOKS = frozenset({"sitecustomize", "usercustomize"})
_KINDS = {0: "changed", 1: "added", 2: "removed"}

# Runs in the pristine container, as root: prints `<kind> <path>` lines (see `probe`).
_PROBE = r"""
say() { printf '%s %s\n' "$1" "$2"; }
printf '@environ\n'; tr '\000' '\n' < /proc/$$/environ; printf '\n@end\n'
seen=" "
hops() {  # a path, every symlink on the way to its target, and the target
  local p n t
  p=$1; n=0
  while [ -L "$p" ] && [ $n -lt 40 ]; do
    say sealed "$p"; t=$(readlink "$p")
    case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
    n=$((n + 1))
  done
  say sealed "$p"
  t=$(readlink -f "$1" 2>/dev/null) && say sealed "$t"
}
examine() {  # an executable: its links, its interpreter if a script, its libraries
  local real interp lib
  case $seen in *" $1 "*) return 0 ;; esac
  seen="$seen$1 "
  hops "$1"
  real=$(readlink -f "$1" 2>/dev/null) || real=$1
  case ${real##*/} in python*) pythons="$pythons $real" ;; esac
  if [ "$(head -c 2 "$real" 2>/dev/null)" = "#!" ]; then
    set -- $(head -n 1 "$real" | cut -c 3-)
    interp=${1:-}
    if [ "${interp##*/}" = env ] && [ -n "${2:-}" ]; then
      interp=$(command -v "$2" 2>/dev/null) || interp=""
    fi
    case $interp in /*) examine "$interp" ;; esac
  fi
  if command -v ldd >/dev/null 2>&1; then
    for lib in $(ldd "$real" 2>/dev/null \
                 | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}'); do
      hops "$lib"
    done
  fi
}
resolve() {  # a command name: where it would appear on PATH, and where it is
  local d r found ifs
  ifs=$IFS; IFS=:
  for d in $PATH; do
    [ -n "$d" ] || continue
    say sealed "$d/$1"
    r=$(readlink -f "$d" 2>/dev/null) && say sealed "$r/$1"
  done
  IFS=$ifs
  found=$(command -v "$1" 2>/dev/null) || return 0
  case $found in /*) ;; *) return 0 ;; esac
  say tool "$1=$found"
  examine "$found"
}
pythons=""
for name in $NAMES; do resolve "$name"; done
for p in $PROGRAMS; do [ -f "$p" ] && [ -x "$p" ] && examine "$p"; done
for p in $FILES; do hops "$p"; done
uv_cache=${UV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/uv}
uv_python=${UV_PYTHON_INSTALL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/uv/python}
[ -e "$uv_cache" ] && say cache "UV_CACHE_DIR=$uv_cache" && say sealed "$uv_cache"
[ -e "$uv_python" ] && say cache "UV_PYTHON_INSTALL_DIR=$uv_python" && say sealed "$uv_python"
for py in $pythons; do "$py" -I - 2>/dev/null <<'PY'
import os, site, sys

def say(kind, path):
    if path:
        print(kind, os.path.normpath(path))

version = "%d%d" % sys.version_info[:2]
for exe in (sys.executable, os.path.realpath(sys.executable)):
    here = os.path.dirname(exe)
    say("sealed", exe)
    # what would make this interpreter find another prefix, stdlib or path list
    for name in ("pyvenv.cfg", "pybuilddir.txt", "Modules", "Lib", "lib", "lib64",
                 os.path.basename(exe) + "._pth", "python" + version + "._pth"):
        say("sealed", os.path.join(here, name))
    say("sealed", os.path.join(os.path.dirname(here), "pyvenv.cfg"))
sites = set(getattr(site, "getsitepackages", lambda: [])())
sites.update(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages")))
trees = [p for p in sys.path if p] + sorted(sites)
for p in sorted(sites):
    say("site", p)
for p in sys.path:
    if p and p not in sites:
        say("sealed", p)
inside = lambda q: any(q == t or q.startswith(t.rstrip("/") + "/") for t in trees)
for tree in trees:
    if not os.path.isdir(tree):
        continue
    for name in os.listdir(tree):
        module = name.split(".")[0] if name.endswith((".py", ".so", ".pyc", ".pyd")) else name
        if module.isidentifier():
            print("module", module)
    for base, dirs, files in os.walk(tree):
        if "__pycache__" in dirs:
            dirs.remove("__pycache__")
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.islink(path) and not inside(os.path.realpath(path)):
                say("sealed", os.path.realpath(path))
PY
done
true
"""


@dataclass
class Toolchain:
    """What :func:`probe` found in the pristine container.

    Attributes:
        environ: The container's own environment (the verifier's starts from it).
        sealed: Paths under which any change voids the grade.
        sites: Site directories (new packages allowed, with the exceptions above).
        modules: Top-level module names importable before the agent began.
        tools: Where each command name resolved (``bash`` -> ``/usr/bin/bash``).
        caches: Tool caches the image ships (``UV_CACHE_DIR`` -> path); others are
            fresh for the verifier, so none of the agent's entries can be reused.
    """

    environ: dict[str, str] = field(default_factory=dict)
    sealed: set[str] = field(default_factory=set)
    sites: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    tools: dict[str, str] = field(default_factory=dict)
    caches: dict[str, str] = field(default_factory=dict)


def script_words(texts: Iterable[str]) -> tuple[set[str], set[str], set[str]]:
    """What shell scripts run: command names, absolute programs, and sourced files.

    A rough reading (no full shell grammar): the first word of each simple command,
    after assignments and wrappers such as ``exec`` or ``env``; the file after
    ``source`` or ``.`` (``$HOME`` and ``~`` are ``/root``).
    """
    names: set[str] = set()
    programs: set[str] = set()
    sourced: set[str] = set()
    for text in texts:
        for line in text.splitlines():
            line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
            for match in _SOURCED.finditer(line):
                path = re.sub(r"^(\$\{?HOME\}?|~)(?=/)", "/root", match.group(1).strip("'\""))
                if path.startswith("/") and not path.startswith("/tests/"):
                    sourced.add(posixpath.normpath(path))
            for part in re.split(r"[;&|()`]|\$\(|\bthen\b|\bdo\b|\belse\b", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    words = part.split()
                while words and (
                    words[0] in _KEYWORDS
                    or _ASSIGNMENT.match(words[0])
                    or words[0].startswith("-")  # `env -i X=1 cmd`
                ):
                    words = words[1:]
                if not words or words[0] in ("source", "."):  # read above
                    continue
                word = words[0]
                if word.startswith("/") and not word.startswith("/tests/"):
                    programs.add(posixpath.normpath(word))
                elif _NAME.match(word):
                    names.add(word)
    return names, programs, sourced


def _scripts(task: TerminalTask) -> list[str]:
    """The text of the task's test script and every shell script beside its tests."""
    paths = [task.path / "run-tests.sh"] if task.layout == "tb1" else []
    if task.tests is not None and task.tests.is_dir():
        paths += sorted(task.tests.rglob("*.sh"))
    return [p.read_text(errors="replace") for p in paths if p.is_file()]


def probe_script(task: TerminalTask) -> str:
    """The probe for ``task`` (its scripts' commands, programs and sourced files)."""
    names, programs, sourced = script_words(_scripts(task))
    workdir = task.workdir.rstrip("/") + "/"
    # The agent's own programs (in its work directory) are what the tests examine.
    programs = {p for p in programs if not p.startswith(workdir)}
    quoted = {
        "NAMES": " ".join(sorted(set(GRADER_TOOLS) | names)),
        "PROGRAMS": " ".join(sorted(programs)),
        "FILES": " ".join(sorted(set(STARTUP_FILES) | sourced)),
    }
    assign = "".join(f"{k}={shlex.quote(v)}\n" for k, v in quoted.items())
    return assign + _PROBE


def parse_probe(output: str) -> Toolchain:
    """Read the probe's output."""
    found = Toolchain()
    lines = iter(output.splitlines())
    for line in lines:
        if line == "@environ":
            key = ""
            for entry in lines:
                if entry == "@end":
                    break
                if not entry:
                    continue
                name, eq, value = entry.partition("=")
                if eq and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    key = name
                    found.environ[key] = value
                elif key:  # a value that held a newline
                    found.environ[key] += "\n" + entry
            continue
        kind, _, rest = line.partition(" ")
        if kind in ("sealed", "site") and rest.startswith("/"):
            (found.sealed if kind == "sealed" else found.sites).add(posixpath.normpath(rest))
        elif kind == "module":
            found.modules.add(rest)
        elif kind == "tool":
            name, _, path = rest.partition("=")
            found.tools.setdefault(name, path)
        elif kind == "cache":
            name, _, path = rest.partition("=")
            found.caches[name] = path
    found.sealed -= found.sites
    return found


async def probe(sandbox: Sandbox, task: TerminalTask) -> Toolchain:
    """Find the verifier's toolchain in the pristine container (see the module docstring)."""
    output = await sandbox.run_root(probe_script(task), "probing the verifier's toolchain", 120)
    return parse_probe(output)


def _ancestry(path: str) -> list[str]:
    """``path`` and each directory above it, nearest first (``/a/b``: ``/a/b``, ``/a``)."""
    chain = [path]
    while path not in ("/", ""):
        path = posixpath.dirname(path)
        if path != "/":
            chain.append(path)
    return chain


def _module(name: str) -> str:
    return name.split(".")[0] if name.endswith((".py", ".so", ".pyc", ".pyd", ".pth")) else name


def findings(
    entries: list[dict[str, Any]], toolchain: Toolchain, exclude: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """The audit's verdict on Docker's change list (``[{"Path": ..., "Kind": 0|1|2}]``,
    changed, added, removed): the tampered paths (``changed /x``, ``added /y``,
    ``removed /z``), and the new metadata directories in site directories whose entry
    points must still be read (a pytest plugin is not allowed).

    Linear in the number of changes (an agent may have written a million files)."""
    kinds = {posixpath.normpath(str(e["Path"])): int(e["Kind"]) for e in entries}
    parents = {a for path in kinds for a in _ancestry(path)[1:]}
    excluded = {posixpath.normpath(p) for p in exclude}
    roots = toolchain.sealed | toolchain.sites
    above_roots = {a for root in roots for a in _ancestry(root)[1:]}
    tampered: set[str] = set()
    metadata: set[str] = set()
    for path, kind in kinds.items():
        chain = _ancestry(path)
        if "__pycache__" in path.split("/") or excluded.intersection(chain):
            continue
        if path in parents:
            continue  # a directory: the entries below it say what changed
        root = next((r for r in chain if r in roots), None)
        if root is None:
            if kind == 2 and path in above_roots:  # removing a directory removes its roots
                tampered.add(f"removed {path}")
            continue
        if root in toolchain.sites:
            if path == root:
                if kind == 2:
                    tampered.add(f"removed {path}")
                continue
            top = chain[chain.index(root) - 1]
            if kinds.get(top) == 1:  # a new top-level entry: a package being installed
                name = posixpath.basename(top)
                module = _module(name)
                if name.endswith(".pth") or module in _HOOKS or module in toolchain.modules:
                    tampered.add(f"added {top}")
                elif name.endswith((".dist-info", ".egg-info")):
                    metadata.add(top)
                continue
        tampered.add(f"{_KINDS.get(kind, 'changed')} {path}")
    return sorted(tampered), sorted(metadata)


async def check(sandbox: Sandbox, toolchain: Toolchain, exclude: Iterable[str] = ()) -> None:
    """Compare the container with its image; raise :class:`TamperError` on any finding.

    Raises:
        TamperError: The toolchain changed (the paths, each with what happened to it).
        SandboxError: The sandbox keeps no change list (only Docker's does).
    """
    from gem_eval.sandbox import docker_client

    container = getattr(sandbox, "container", None)
    if container is None or not hasattr(container, "diff"):
        raise SandboxError("the integrity audit needs a Docker container's change list")
    entries = await docker_client.call("listing the container's changes", container.diff)
    tampered, metadata = findings(entries or [], toolchain, exclude)
    for directory in metadata:
        try:
            text = (await sandbox.read_file(f"{directory}/entry_points.txt")).decode(
                errors="replace"
            )
        except (FileNotFoundError, IsADirectoryError):
            continue
        if re.search(r"^\s*\[pytest11\]", text, re.MULTILINE):
            tampered.append(f"added {directory} (a pytest plugin)")
    if tampered:
        raise TamperError(sorted(tampered))
