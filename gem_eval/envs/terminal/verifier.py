"""How the test script is started: an environment and a shell the agent cannot shape.

The agent is root in the container the tests run in, so anything the test run reads
from a file could have been written by it. The run therefore reads only what the task
declares, and what the integrity audit (:mod:`~gem_eval.envs.terminal.audit`) vouches
for:

* **Environment**: the container's own (the image's ``ENV``, the compose file's
  ``environment:``: the agent cannot change either), the task's ``[verifier] env``
  (TB1: ``TEST_DIR``), ``HOME=/root``, ``PATH`` as the image sets it. ``BASH_ENV``,
  ``ENV``, ``PYTHONHOME``, ``PYTHONSTARTUP``, ``PYTHONUSERBASE`` and ``PYTHONINSPECT``
  are cleared; ``PYTHONNOUSERSITE=1`` (no user site, no ``usercustomize``);
  ``PYTHONPYCACHEPREFIX`` points at a fresh directory (no byte code the agent planted
  is loaded; gem-eval's ``sitecustomize`` then lets its Python read the image's own
  ``__pycache__`` again, each file only if its ctime is before the agent's first
  command); uv's cache and Python downloads go to fresh directories unless the image
  ships them (then the audit covers them).
* **Shell**: ``bash --noprofile --norc``, not interactive, not a login shell, so no
  start-up file is read.
* **pytest**: ``PYTEST_ADDOPTS`` confines it to ``/tests`` (``--rootdir=/tests``, ``-c``
  the task's own ini in ``/tests`` or an empty one, ``--confcutdir=/tests``, ``-p
  no:cacheprovider``): nothing above ``/tests`` (``/conftest.py``, ``/pytest.ini``,
  ``/pyproject.toml``, ...) is read.
* **Python**: ``PYTHONPATH`` starts with a directory holding gem-eval's
  ``sitecustomize`` (:mod:`~gem_eval.envs.terminal.verifier_site`): in a pytest process
  it imports pytest before the working directory joins ``sys.path``, moves the
  confinement onto pytest's command line, and hands the tests' own processes the
  environment the task declared.

What a test script does itself (``python -I``, ``bash -l``, ``source ~/.bashrc``, a
tool it downloads) it still does; the audit is what covers the files it would read.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from gem_eval.envs.terminal.layout import TerminalTask
from gem_eval.envs.terminal.toolchain import Toolchain
from gem_eval.envs.terminal.tracer import Trace
from gem_eval.sandbox.base import Sandbox

TESTS_DIR = "/tests"
HOME = "/logs/gem-eval"
"""The verifier's own files, made fresh before each run (the agent's copy is removed)."""
SITE_DIR = f"{HOME}/site"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLEARED = ("BASH_ENV", "ENV", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT")
# pytest's configuration files, in the order it prefers them, and the section that
# makes each one pytest's.
PYTEST_CONFIGS = (
    ("pytest.ini", ""),
    (".pytest.ini", ""),
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)


@dataclass
class Launch:
    """How one test run starts.

    Attributes:
        env: Variables set for the run (over the container's own; ``""`` clears one).
        confine: The pytest options that confine it to ``/tests``.
        restore: What the tests' own processes get back (``None``: unset).
        files: Files written before the run (path -> content).
        bash: The shell that runs the script (resolved before the agent began).
        trace: How the run is traced (``None``: untraced).
    """

    env: dict[str, str]
    confine: list[str]
    restore: dict[str, str | None]
    files: dict[str, bytes]
    bash: str
    trace: Trace | None = None


def pytest_config(tests: Path | None) -> str | None:
    """The task's own pytest configuration file in ``/tests``, if it ships one."""
    for name, section in PYTEST_CONFIGS:
        path = (tests or Path("/nonexistent")) / name
        if path.is_file() and section in path.read_text(errors="replace"):
            return f"{TESTS_DIR}/{name}"
    return None


def plan(task: TerminalTask, toolchain: Toolchain, since: float | None = None) -> Launch:
    """The launch of ``task``'s tests in a container the probe found ``toolchain`` in.

    ``since``: the container's clock before the agent's first command (the baseline's):
    byte code in the image's ``__pycache__`` directories changed no later than that is
    the image's, and gem-eval's ``sitecustomize`` lets the run load it (``None``: the
    run compiles everything afresh)."""
    declared = {**toolchain.environ, **task.verifier_env}
    ini = pytest_config(task.tests)
    files: dict[str, bytes] = {}
    if ini is None:
        ini = f"{HOME}/pytest.ini"
        files[ini] = b"# gem-eval: no configuration (the task ships none in /tests)\n"
    confine = [
        f"--rootdir={TESTS_DIR}",
        "-c",
        ini,
        f"--confcutdir={TESTS_DIR}",
        "-p",
        "no:cacheprovider",
    ]
    env: dict[str, str] = {key: "" for key in CLEARED}
    env["HOME"] = declared.get("HOME") or "/root"
    env["PATH"] = declared.get("PATH") or DEFAULT_PATH
    env.update(task.verifier_env)
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONPYCACHEPREFIX"] = f"{HOME}/pycache"
    env["PYTHONPATH"] = ":".join(p for p in (SITE_DIR, declared.get("PYTHONPATH")) if p)
    own_addopts = declared.get("PYTEST_ADDOPTS", "")
    env["PYTEST_ADDOPTS"] = " ".join(p for p in (own_addopts, shlex.join(confine)) if p)
    for name, fresh in (("UV_CACHE_DIR", "uv-cache"), ("UV_PYTHON_INSTALL_DIR", "uv-python")):
        if name not in toolchain.caches and name not in task.verifier_env:
            env[name] = f"{HOME}/{fresh}"
    restore = {key: declared.get(key) for key in env if env[key] != declared.get(key)}
    # The guard reads its settings from a file beside it (an environment variable would
    # reach the tests' processes too).
    settings: dict[str, object] = {"tests_dir": TESTS_DIR, "confine": confine}
    settings["restore"] = restore
    if since is not None:
        settings["bytecode_since"] = since
    files[f"{SITE_DIR}/gem_eval_verifier.json"] = json.dumps(settings, indent=1).encode()
    guard = Path(__file__).with_name("verifier_site.py").read_bytes()
    files[f"{SITE_DIR}/sitecustomize.py"] = guard
    bash = toolchain.tools.get("bash") or "bash"
    return Launch(env=env, confine=confine, restore=restore, files=files, bash=bash)


async def prepare(sandbox: Sandbox, launch: Launch) -> None:
    """Make the verifier's directory fresh and write its files (as root)."""
    await sandbox.run_root(
        f"rm -rf {HOME} && mkdir -p {SITE_DIR}", "preparing the verifier's directory"
    )
    for path, data in launch.files.items():
        await sandbox.write_file(path, data, owner="root")


def command(launch: Launch, script: str, log: str) -> list[str]:
    """The argv that runs ``script`` with its output in ``log``: a shell that reads no
    start-up file runs it (``exec``: the shell does not stay)."""
    bash = shlex.quote(launch.bash)
    inner = f"exec {bash} --noprofile --norc {shlex.quote(script)} > {shlex.quote(log)} 2>&1"
    return [launch.bash, "--noprofile", "--norc", "-c", inner]
