"""The container's PID 1: a keep-alive an agent cannot kill from inside, that reaps zombies.

Why PID 1 matters: when a container's PID 1 exits, the container stops, the next exec
fails, and the episode would look like an infrastructure failure. Terminal tasks give the
agent a root shell in the graded container, so before this module ``kill -9 -1`` or
``kill 1`` (as root) stopped the container (it ran ``sleep infinity`` under Docker's
tini): the failed episode became ``infra_error``, left out of the score and replayed.

What the kernel gives: for a PID namespace's init, a signal sent from inside the namespace
is dropped when init has no handler for it (SIGKILL and SIGSTOP included); from outside
(``docker kill``, ``docker rm -f``) SIGKILL still works. So PID 1 must itself be the
keep-alive (not a child of tini: that child dies to ``kill -9 -1``, and tini exits with
it), handle or ignore every catchable signal, never exit, and reap every child (orphans
are reparented to it; unreaped zombies hold PIDs against the pids limit).

Two keep-alives, the first preferred (see :func:`binary`):

* ``gem-eval-init``, a static C program (:data:`SOURCE`, ~670 KB with glibc) compiled
  once per machine with the host's C compiler and cached (``$GEM_EVAL_CACHE/init``),
  copied into the container (``/.gem-eval-init``) before it starts. It ignores every
  signal, lets the kernel reap its children at once (SIGCHLD ignored with
  ``SA_NOCLDWAIT``), sleeps in ``pause()``, never forks, and makes itself non-dumpable:
  without ``CAP_SYS_PTRACE`` (Docker does not grant it) no process in the container can
  ``ptrace`` it or write its memory. A SIGTERM from outside the namespace (``docker
  stop``, a daemon shutting down: the sender's PID reads 0 there, and an insider cannot
  forge a ``SI_USER`` signal) ends it with status 143, so stops stay prompt.
* a POSIX ``sh`` loop (:data:`SHELL_SCRIPT`) when no binary can be made (no compiler or
  static libc, a host that is not Linux, or an engine of another architecture). It
  ignores the catchable signals, blocks in the ``read`` builtin on a FIFO it holds open
  (it never forks after start: a ``sleep &`` loop dies with dash's "Cannot fork" when
  the agent holds every PID, which stops the container), and reaps through its SIGCHLD
  handling (measured with dash and bash: 100 orphans exiting, 0 zombies). Its weakness:
  a root agent can ``ptrace`` a shell (measured: attach succeeds) and make it exit.

Measured (Docker 20.10, cgroups v1): with either keep-alive, as root and as the agent
user, ``kill -9 -1``, ``kill 1``, ``kill -9 1``, ``kill -STOP 1`` and repeated kill-all
rounds leave the container running (tests/sandbox/test_unkillable.py). The sandbox also
mounts ``/proc/1`` read-only (see :mod:`gem_eval.sandbox.docker`): otherwise root raises
PID 1's ``oom_score_adj`` to 1000, and the out-of-memory killer, which may kill a
namespace's init, picks it (measured: the container stopped, ``OOMKilled``).
"""

from __future__ import annotations

import io
import tarfile
import time

from gem_eval.sandbox.static_program import StaticProgram

PATH = "/.gem-eval-init"
"""Where the binary lives in the container (copied in before each start)."""

SOURCE = r"""
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

/* SIGTERM from outside the PID namespace (docker stop, a daemon shutting down) ends
   init; the sender's PID is 0 here. From inside, nothing does. */
static void on_term(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    if (info->si_code == SI_USER && info->si_pid == 0)
        _exit(143);
}

int main(void) {
    struct sigaction action = {0};
    action.sa_handler = SIG_IGN;
    for (int sig = 1; sig <= 64; sig++)
        sigaction(sig, &action, 0); /* SIGKILL, SIGSTOP: refused; the kernel drops them */
    action.sa_flags = SA_NOCLDWAIT; /* the kernel reaps every child, orphans included */
    sigaction(SIGCHLD, &action, 0);
    struct sigaction term = {0};
    term.sa_sigaction = on_term;
    term.sa_flags = SA_SIGINFO;
    sigaction(SIGTERM, &term, 0);
    prctl(PR_SET_DUMPABLE, 0); /* no ptrace, no /proc/1/mem without CAP_SYS_PTRACE */
    for (;;)
        pause();
}
"""

SHELL_SCRIPT = (
    "trap '' HUP INT QUIT USR1 USR2 PIPE ALRM TERM CHLD; "
    'f=/.gem-eval-keepalive.$$; mkfifo "$f" 2>/dev/null && exec 3<>"$f"; rm -f "$f"; '
    "while :; do read -r _ <&3 || sleep 1; done"
)
"""The fallback keep-alive, run as ``/bin/sh -c``: blocks in ``read`` on a FIFO it holds
open for writing too (so never at end of file), without forking."""

_PROGRAM = StaticProgram("gem-eval-init", SOURCE)


def binary(engine_os: str, engine_arch: str) -> bytes | None:
    """The compiled ``gem-eval-init`` for an engine of that OS and architecture, or
    ``None`` when this machine cannot make one (then use :data:`SHELL_SCRIPT`).

    Compiled once per machine (cached, see :mod:`gem_eval.cache`) and once read per
    process. Blocking: call it in a thread.
    """
    return _PROGRAM.binary(engine_os, engine_arch)


def archive(data: bytes) -> bytes:
    """A tar holding the binary at :data:`PATH` (root's, mode 0755), for ``put_archive``
    at ``/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(PATH.lstrip("/"))
        info.size, info.mode, info.mtime = len(data), 0o755, int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
