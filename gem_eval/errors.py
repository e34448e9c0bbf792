"""The exceptions gem-eval raises.

Two branches matter to callers:

* :class:`UserError` -- the user asked for something that cannot be done as asked
  (an unknown env id, a bad option). The CLI prints its message on one line, with no
  traceback, and exits with code 2.
* everything else under :class:`GemEvalError` -- a fault in gem-eval or in a resource it
  drives. These keep their tracebacks.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GemEvalError(Exception):
    """Base class of every exception gem-eval raises on purpose."""


class UserError(GemEvalError):
    """Bad input from the user; shown as one line without a traceback."""


class UnknownEnvError(UserError, KeyError):
    """An env id that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TaskFormatError(UserError):
    """A task directory (terminal, MCP) that cannot be read; ``str`` is
    ``path:line: message`` (the line when known)."""

    def __init__(self, path: object, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {' '.join(message.split())}")


class RegistryError(UserError):
    """A registry dataset (``NAME@VERSION``) that cannot be looked up or fetched: the
    registry is unreadable, the name or version unknown, its git repository or commit
    out of reach (see :mod:`gem_eval.registry`)."""


class RegistrationError(GemEvalError):
    """An env was registered twice, or with a malformed id or entry point."""


class EnvArgumentError(UserError, TypeError):
    """`make(id, **kwargs)` got a keyword the env does not take, or a bad value."""


class VectorEnvError(GemEvalError):
    """A sub-env of a vector env raised; ``index`` says which one.

    The original exception is chained as ``__cause__``.
    """

    def __init__(self, index: int, exc: BaseException, others: int = 0) -> None:
        self.index = index
        self.original = exc
        more = f" ({others} other sub-env(s) also failed)" if others else ""
        super().__init__(f"sub-env {index} raised {type(exc).__name__}: {exc}{more}")


class VectorEnvStateError(GemEvalError):
    """A vector env call came in the wrong state (e.g. step_wait before step_async)."""


def closest(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` candidates closest to ``word``, ignoring case."""
    pool = list(candidates)
    lowered = {c.lower(): c for c in pool}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


def did_you_mean(word: str, candidates: Iterable[str], n: int = 3) -> str:
    """A ``" Did you mean: a, b?"`` suffix, or ``""`` when nothing is close."""
    hits = closest(word, candidates, n)
    return f" Did you mean: {', '.join(hits)}?" if hits else ""


class ModelCallError(GemEvalError):
    """A model call failed for good (after any retries).

    Attributes:
        status: The HTTP status, when there was one.
        transient: True when the failure was of a kind that is retried (rate limit,
            5xx, timeout, connection, malformed reply) and the retries ran out: an
            infrastructure failure, not the model's answer.
        retries: How many retries were made before giving up.
    """

    def __init__(
        self, message: str, *, status: int | None = None, transient: bool, retries: int = 0
    ) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient
        self.retries = retries


class MissingAPIKeyError(UserError):
    """The provider of a model needs an API key that is not set."""


class ModelConfigError(UserError):
    """A model cannot be used as configured: its server cannot be reached, or refuses
    the key. Found before the first episode; exit code 2."""


class SandboxError(GemEvalError):
    """The sandbox failed (a container died, the daemon went away): an infrastructure
    failure, reported as ``infra_error`` and never scored as the model's."""


class SandboxLostError(SandboxError):
    """The episode's sandbox cannot serve it any more while the engine still answers:
    its container stopped or is gone, or its disk quota is full. (A plain
    :class:`SandboxError` means the engine itself failed or could not be reached.)

    Once the agent has run a command, the loss is most likely the agent's doing (the
    container's PID 1 cannot be killed from inside; see
    :mod:`gem_eval.sandbox.container_init`). A daemon restart also stops containers and
    then answers again: :meth:`~gem_eval.sandbox.base.Sandbox.engine_alive` says
    ``False`` after one, so check it before charging the agent.

    Attributes:
        reason: ``"gone"``, ``"stopped"`` or ``"disk_full"``.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class TamperError(GemEvalError):
    """The verifier's toolchain changed during the episode (found by the integrity audit
    before grading): the episode is scored 0 as ``tampered``.

    Attributes:
        paths: The changed, added or removed paths.
    """

    def __init__(self, paths: list[str]) -> None:
        self.paths = list(paths)
        shown = ", ".join(self.paths[:10]) + (" ..." if len(self.paths) > 10 else "")
        super().__init__(f"the verifier's toolchain was changed: {shown}")


class SandboxUnavailableError(SandboxError, UserError):
    """The sandbox cannot be used as configured: Docker not installed or not running,
    the image missing, bubblewrap missing. Raised before a run, as one line."""


class StoreWriteError(GemEvalError):
    """The results store could not write a file (disk full, I/O error, read-only file system).

    The run stops: a run that cannot record is not a run. Nothing already written is damaged
    (a failed append is cut back off, the manifest is replaced atomically), so the run can be
    resumed once there is room. ``str`` is ``cannot write <path>: <reason>``.

    Attributes:
        path: The file that could not be written.
        errno: The OS error number (``errno.ENOSPC``...), when there was one.
    """

    def __init__(self, path: object, exc: OSError) -> None:
        self.path = path
        self.errno = exc.errno
        super().__init__(f"cannot write {path}: {exc.strerror or exc}")
