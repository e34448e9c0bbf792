"""``Toolchain``: what a terminal task's test run relies on, found in the pristine container.

Before the agent's first command, :func:`probe` asks the container which files the test
run will use: the commands the test scripts and the grader run (as resolved on
``PATH``, with every ``PATH`` directory that could gain one first, every symlink on the
way, a script's interpreter, the shared libraries they load), every Python on
``PATH`` (its interpreter, standard library, ``site-packages``, and what would change
its ``sys.path``: ``pyvenv.cfg``, ``._pth``, landmark directories), files the scripts
``source``, the shell start-up files, pytest's configuration above ``/tests``,
``/etc/ld.so.preload`` and what makes libc, PAM and OpenSSL load modules by name
(``nsswitch.conf``, ``gconv-modules``, ``pam.d``, ``openssl.cnf``). It lists every path
under them and under the loader's cache and configuration (changes there are noted, not
tampering), the
names of the commands on ``PATH`` and of the libraries the loader can find (a new file of
such a name takes the image's place: :mod:`~gem_eval.envs.terminal.loads`), and it
records the image's GNU ``find`` (with its loader and libraries, by hash) for the audit
to run later.

Nothing stays in the container; the result is kept host-side, once per image and task
(a container's files are its image's until the agent acts), in the process and on disk
(:mod:`~gem_eval.envs.terminal.toolchain_cache`).
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gem_eval.envs.terminal import toolchain_cache
from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.errors import SandboxError
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
    # what makes libc, su and Python's ssl load modules by name (NSS, PAM, OpenSSL; the
    # probe adds iconv's gconv-modules)
    "/etc/nsswitch.conf",
    "/etc/pam.conf",
    "/etc/pam.d",
    "/etc/security",
    "/etc/ssl/openssl.cnf",
    "/usr/lib/ssl/openssl.cnf",
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
LISTING_FORMAT = r"%y %C@ %p\0%l\0"
"""``find -printf``: type, change time (ctime, which no process can set back), path,
link target; NUL-separated, so no file name can forge a line."""
# Words before a command that are not the command (`exec python3 ...`, `if pytest ...`).
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case"}
    | {"esac", "in", "function", "select", "time", "!", "{", "}", "[[", "]]", "exec"}
    | {"command", "builtin", "nohup", "sudo", "env", "xargs"}
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_SOURCED = re.compile(r"(?:^|[;&|(]|\s)(?:source|\.)\s+([^\s;&|)]+)")
_PROBE_OUT = "/tmp/.gem-eval-probe"
_LISTING_OUT = "/tmp/.gem-eval-listing"
_CACHE: dict[tuple[str, str], Toolchain] = {}
_BLOBS: dict[str, bytes] = {}  # sha256 -> bytes of the audit's programs
_IMAGE_IDS: dict[str, str] = {}  # image name -> ID, for the on-disk cache

_PROBE = Path(__file__).with_name("probe.sh")
"""The probe (a POSIX shell script with a Python part), run in the pristine container."""


@dataclass
class Checker:
    """The image's GNU ``find`` and ``timeout`` as the audit runs them: copies of the
    bytes read (through Docker) from the pristine container, started through a copy of
    their loader, whatever the agent later did to the originals.

    Attributes:
        find: The path of ``find``; ``timeout`` likewise.
        loader: The dynamic loader they name (``None``: static programs).
        libraries: Library name -> path (``libc.so.6`` -> ``/lib/x86_64-linux-gnu/...``).
        sha256: Path -> content hash, for each of the files above.
        preload: The hash of ``/etc/ld.so.preload`` (``None``: the image has none).
    """

    find: str
    timeout: str
    loader: str | None = None
    libraries: dict[str, str] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    preload: str | None = None

    def _wanted(self) -> dict[str, str]:
        wanted = {"find": self.find, "timeout": self.timeout, **self.libraries}
        if self.loader is not None:
            wanted["ld.so"] = self.loader
        return wanted

    async def read(self, sandbox: Sandbox) -> None:
        """Read the files from the pristine container, each checked against the hash
        the probe printed (kept once per content: images share their base's)."""
        for path in self._wanted().values():
            digest = self.sha256.get(path, "")
            if digest not in _BLOBS:
                data = await sandbox.read_file(path)
                if hashlib.sha256(data).hexdigest() != digest:
                    raise SandboxError(f"reading {path} for the audit: its bytes changed")
                _BLOBS[digest] = data

    @property
    def files(self) -> dict[str, bytes]:
        """Name in the audit's directory (``find``, ``ld.so``, ``libc.so.6``) -> bytes
        (after :meth:`read`)."""
        return {name: _BLOBS[self.sha256[path]] for name, path in self._wanted().items()}


@dataclass
class Toolchain:
    """What :func:`probe` found in the pristine container.

    Attributes:
        environ: The container's own environment (the verifier's starts from it).
        sealed: Paths under which any change voids the grade.
        sites: Site directories (new packages allowed, see :mod:`.audit`).
        modules: Top-level module names importable before the agent began.
        tools: Where each command name resolved (``bash`` -> ``/usr/bin/bash``).
        caches: Tool caches the image ships (``UV_CACHE_DIR`` -> path); others are
            fresh for the verifier, so none of the agent's entries can be reused.
        listing: Every path under ``sealed``, ``sites`` and ``noted`` (no byte-code
            caches).
        checker: The audit's ``find`` (``None``: the image has no GNU ``find``).
        noted: Paths whose changes are reported, not tampering (the loader's cache and
            configuration: what the tests then load is traced).
        programs: Names of the commands on ``PATH``.
        libraries: Names of the shared libraries in the loader's directories and cache.
        links: What the loader finds for each program above (``/usr/bin/dash libc.so.6
            /lib/x86_64-linux-gnu/libc.so.6``).
    """

    environ: dict[str, str] = field(default_factory=dict)
    sealed: set[str] = field(default_factory=set)
    sites: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    tools: dict[str, str] = field(default_factory=dict)
    caches: dict[str, str] = field(default_factory=dict)
    listing: set[str] = field(default_factory=set)
    checker: Checker | None = None
    noted: set[str] = field(default_factory=set)
    programs: set[str] = field(default_factory=set)
    libraries: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)

    @property
    def roots(self) -> list[str]:
        return sorted(self.sealed | self.sites | self.noted)


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
        "OUT": _PROBE_OUT,
    }
    assign = "".join(f"{k}={shlex.quote(v)}\n" for k, v in quoted.items())
    return assign + _PROBE.read_text()


def parse(output: str) -> Toolchain:
    """Read the probe's output (the listing is read apart, see :func:`parse_listing`)."""
    found = Toolchain()
    checker: dict[str, tuple[str, str]] = {}
    libraries: dict[str, str] = {}
    preload: str | None = None
    lines = iter(output.splitlines())
    for line in lines:
        if line == "@environ":
            key = ""
            for entry in lines:
                if entry == "@end":
                    break
                name, eq, value = entry.partition("=")
                if eq and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    key = name
                    found.environ[key] = value
                elif key and entry:  # a value that held a newline
                    found.environ[key] += "\n" + entry
            continue
        kind, _, rest = line.partition(" ")
        if kind in ("sealed", "site", "noted") and rest.startswith("/"):
            roots = {"sealed": found.sealed, "site": found.sites, "noted": found.noted}[kind]
            roots.add(posixpath.normpath(rest))
        elif kind == "program":
            found.programs.add(rest)
        elif kind == "library":
            found.libraries.add(rest)
        elif kind == "links" and rest.count(" ") >= 2:
            found.links.add(rest)
        elif kind == "module":
            found.modules.add(rest)
        elif kind == "tool":
            name, _, path = rest.partition("=")
            found.tools.setdefault(name, path)
        elif kind == "cache":
            name, _, path = rest.partition("=")
            found.caches[name] = path
        elif kind == "checker":
            role, digest, path = [*rest.split(" ", 2), "", ""][:3]
            if role in ("find", "timeout", "loader"):
                checker[role] = (path, digest)
            elif role:
                libraries[role] = path
                checker[f"lib:{role}"] = (path, digest)
        elif kind == "preload":
            preload = rest
    found.sealed -= found.sites
    found.noted -= found.sealed
    if "find" in checker and "timeout" in checker:
        found.checker = Checker(
            find=checker["find"][0],
            timeout=checker["timeout"][0],
            loader=checker["loader"][0] if "loader" in checker else None,
            libraries=libraries,
            sha256={path: digest for path, digest in checker.values()},
            preload=preload,
        )
    return found


def listing_command(find: list[str], roots: Iterable[str], out: str) -> list[str]:
    """``find`` (its argv prefix) listing every path under ``roots`` into ``out``."""
    prune = ["(", "-name", "__pycache__", "-prune", ")", "-o"]
    return [*find, *roots, *prune, "-fprintf", out, LISTING_FORMAT]


def parse_listing(data: bytes) -> dict[str, tuple[str, float, str]]:
    """``path -> (type, ctime, link target)`` from a listing :data:`LISTING_FORMAT` made."""
    fields = data.split(b"\0")
    found: dict[str, tuple[str, float, str]] = {}
    for head, link in zip(fields[0::2], fields[1::2], strict=False):
        kind, ctime, path = head.decode(errors="surrogateescape").split(" ", 2)
        found[posixpath.normpath(path)] = (kind, float(ctime), link.decode(errors="replace"))
    return found


async def probe(sandbox: Sandbox, task: TerminalTask) -> Toolchain:
    """Find the verifier's toolchain in the pristine container (see the module
    docstring). Kept for the next container of the same image and task, in this process
    and on disk (:mod:`~gem_eval.envs.terminal.toolchain_cache`)."""
    script = probe_script(task)
    key = (str(getattr(sandbox, "image", "")), script)
    if key[0] and key in _CACHE:
        return _CACHE[key]
    kept = await _kept_key(sandbox, script)
    record = toolchain_cache.load(kept) if kept else None
    if record is not None:
        found = _read(*record)
        if found.checker is not None:
            for digest in found.checker.sha256.values():
                data = _BLOBS.get(digest) or toolchain_cache.blob(digest)
                if data is not None:
                    _BLOBS[digest] = data
            await found.checker.read(sandbox)  # any the disk lacked
        _CACHE[key] = found
        return found
    # Both outputs can be long: to files, read whole (not through a capped stream).
    output, listing = "", b""
    try:
        await sandbox.run_root(script, "probing the verifier's toolchain", 120)
        output = (await sandbox.read_file(_PROBE_OUT)).decode(errors="replace")
        found = parse(output)
        if found.checker is not None:
            command = listing_command(["find"], found.roots, _LISTING_OUT)
            await sandbox.run_root(
                f"{shlex.join(command)} 2>/dev/null; true", "listing the toolchain", 120
            )
            listing = await sandbox.read_file(_LISTING_OUT)
            found.listing = set(parse_listing(listing))
            await found.checker.read(sandbox)
    finally:
        await sandbox.run_root(f"rm -f {_PROBE_OUT} {_LISTING_OUT}", "removing the probe's files")
    if key[0]:
        _CACHE[key] = found
    if kept:
        digests = found.checker.sha256.values() if found.checker is not None else ()
        blobs = {d: _BLOBS[d] for d in digests if d in _BLOBS}
        await asyncio.to_thread(toolchain_cache.store, kept, output, listing, blobs)
    return found


def _read(output: str, listing: bytes) -> Toolchain:
    found = parse(output)
    if found.checker is not None:
        found.listing = set(parse_listing(listing))
    return found


async def _kept_key(sandbox: Sandbox, script: str) -> str | None:
    """The on-disk entry for this container's image (its ID), the probe and the
    container's environment; ``None`` for a sandbox that is not a Docker container."""
    from gem_eval.sandbox import docker_client

    image = getattr(sandbox, "image", None)
    if getattr(sandbox, "container", None) is None or not image:
        return None
    if image not in _IMAGE_IDS:
        get = docker_client.client().images.get
        _IMAGE_IDS[image] = str((await docker_client.call(f"inspecting {image}", get, image)).id)
    env = dict(getattr(sandbox, "env", None) or {})
    # The listing's command too: what it lists, and how, is part of what is kept.
    how = script + "\n" + shlex.join(listing_command(["find"], ["ROOTS"], _LISTING_OUT))
    return toolchain_cache.entry_key(_IMAGE_IDS[image], how, env)
