"""The verifier's ``sitecustomize``: copied into the directory that heads the test run's
``PYTHONPATH`` (see :mod:`gem_eval.envs.terminal.verifier`), so every Python the test
script starts runs it before its own code. It never runs on the host.

In a pytest process (``python -m pytest ...``, or a ``pytest`` script) it

1. imports pytest before the working directory joins ``sys.path`` (``python -m`` puts
   it first; a ``pytest.py`` the agent left in ``/app`` would otherwise run instead), and
   without the task's ``PYTHONPATH`` directories, which the agent may also write;
2. confines pytest to ``/tests`` (``--rootdir``, ``-c``, ``--confcutdir``, no cache):
   put in front of the arguments, so the script's own options still win, and only when
   every test path it names lies in ``/tests`` (a run of the agent's own test suite
   keeps its own configuration, as it would without gem-eval);
3. gives the environment back as the task declared it, for the processes the tests
   start (the agent's programs see what they saw while the agent worked).

In every Python (3.8 or later) it first lets imports read the image's own byte code
again. The run's ``PYTHONPYCACHEPREFIX`` (a fresh directory) makes Python ignore every
``__pycache__``, so that byte code the agent planted there is never loaded, at the price
of compiling the standard library and pytest in every run (~1.5 s). Byte code whose
ctime is before the agent's first command (``bytecode_since``, the baseline's clock)
came with the image: writing, renaming or linking a file sets its ctime to the present,
and no process in a container can set the clock back. So when the source loader looks
for a module's byte code in the prefix, it reads the ``.pyc`` in ``__pycache__`` beside
the source instead if that one is that old; otherwise it goes on as before (the prefix,
empty at first: the module is compiled from its source, which the integrity audit
checked). Whatever else reads byte code (pytest's assertion rewriting, a process
without this file) still uses the prefix only.

In every Python it then runs the image's own ``sitecustomize``, if any (one in the
interpreter's standard or site directories, which the integrity audit checked).

It must run on any Python 3 an image holds, so it keeps to old syntax, and it never
raises: a broken guard must not fail a task (Python would only print a warning).
"""

import contextlib
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = "gem_eval_verifier.json"
_PYTEST_NAMES = ("pytest", "py.test", "pytest-3")
# Interpreter options that take a value (``-W error``): the value is not the script.
_VALUED = ("-W", "-X", "--check-hash-based-pycs")


def _command_line():  # type: () -> list[str]
    """This interpreter's whole command line (``sys.argv`` lacks ``-m``'s module yet)."""
    orig = getattr(sys, "orig_argv", None)
    if orig:
        return list(orig)
    try:
        with open("/proc/self/cmdline", "rb") as f:
            raw = f.read().split(b"\0")[:-1]
    except OSError:
        return []
    return [a.decode("utf-8", "surrogateescape") for a in raw]


def pytest_arguments(argv):  # type: (list[str]) -> list[str] | None
    """The arguments pytest will parse, or ``None`` when ``argv`` is not a pytest run."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            module = argv[i + 1] if i + 1 < len(argv) else ""
            return argv[i + 2 :] if module in _PYTEST_NAMES else None
        if arg.startswith("-m"):
            return argv[i + 1 :] if arg[2:] in _PYTEST_NAMES else None
        if arg.startswith("-c") or arg == "-":
            return None
        if arg in _VALUED:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return argv[i + 1 :] if os.path.basename(arg) in _PYTEST_NAMES else None
    return None


def _inside(path, directory):  # type: (str, str) -> bool
    path = os.path.realpath(path)
    directory = os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def confined(args, tests_dir):  # type: (list[str], str) -> bool
    """Whether a pytest run with ``args`` tests only ``tests_dir``: every argument that
    names an existing file or directory lies in it (no such argument: the working
    directory does)."""
    paths = []
    for arg in args:
        if arg.startswith("-"):
            continue
        path = arg.split("::", 1)[0]
        if path and os.path.exists(path):
            paths.append(path)
    if not paths:
        return _inside(os.getcwd(), tests_dir)
    return all(_inside(p, tests_dir) for p in paths)


def _import_pytest(untrusted):  # type: (set[str]) -> None
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if p and os.path.abspath(p) not in untrusted]
    try:
        import pytest  # noqa: F401
    except Exception:
        pass
    finally:
        sys.path[:] = saved


def _guard_pytest(args):  # type: (list[str]) -> None
    with open(os.path.join(_HERE, SETTINGS)) as f:
        settings = json.load(f)
    untrusted = {_HERE} | {
        os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    }
    _import_pytest(untrusted)
    if confined(args, settings["tests_dir"]):
        sys.argv[1:1] = settings["confine"]
    for key, value in settings["restore"].items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _chain():  # type: () -> None
    """Run the image's own ``sitecustomize`` (the first one after this directory and the
    task's ``PYTHONPATH``, which the agent may write)."""
    import importlib.machinery
    import importlib.util

    untrusted = {_HERE} | {
        os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    }
    path = [p for p in sys.path if p and os.path.abspath(p) not in untrusted]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _pristine_bytecode(since):  # type: (float) -> None
    """Let the source loader read the image's ``__pycache__`` (see the module docstring):
    a ``.pyc`` it looks for in the fresh prefix is read from ``__pycache__`` beside the
    source instead when that one's ctime is before ``since``."""
    from importlib import machinery

    if not sys.pycache_prefix:
        return
    prefix = sys.pycache_prefix.rstrip("/")  # type: str

    class PristineSourceLoader(machinery.SourceFileLoader):
        def get_data(self, path):  # type: (str) -> bytes
            if path.startswith(prefix + "/") and path.endswith(".pyc"):
                head, name = os.path.split(path[len(prefix) :])
                image = os.path.join(head, "__pycache__", name)
                try:
                    if os.stat(image).st_ctime < since:
                        return super().get_data(image)
                except OSError:
                    pass
            return super().get_data(path)

    hook = machinery.FileFinder.path_hook(
        (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
        (PristineSourceLoader, machinery.SOURCE_SUFFIXES),
        (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES),
    )
    hooks = [h for h in sys.path_hooks if "FileFinder" in getattr(h, "__qualname__", "")]
    if len(hooks) == 1:  # else an unusual interpreter: everything is compiled afresh
        sys.path_hooks[sys.path_hooks.index(hooks[0])] = hook
        sys.path_importer_cache.clear()


def main():  # type: () -> None
    if hasattr(sys, "pycache_prefix"):  # Python 3.8 or later
        with contextlib.suppress(Exception):
            with open(os.path.join(_HERE, SETTINGS)) as f:
                since = json.load(f).get("bytecode_since")
            if since is not None:
                _pristine_bytecode(float(since))
    with contextlib.suppress(Exception):
        _chain()
    try:
        args = pytest_arguments(_command_line())
        if args is not None:
            _guard_pytest(args)
    except Exception:
        pass


if __name__ != "__main__" and os.path.basename(__file__).startswith("sitecustomize"):
    main()
