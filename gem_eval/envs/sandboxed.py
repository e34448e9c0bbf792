"""``SandboxedEnv``: an env whose grading runs code in a sandbox (code tests).

Under ``gem-eval run`` the executor gives such an env the episode's sandbox (the task's
``sandbox:`` setting, Docker by default) with :meth:`SandboxedEnv.attach_sandbox` before
``reset``. Used on its own (``make(...)`` in a notebook, ``gem-eval play``) the env starts
a bubblewrap :class:`~gem_eval.sandbox.local.LocalSandbox` on first use and removes it in
``close``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import ClassVar

from gem_eval.core import Env
from gem_eval.sandbox.base import Sandbox


class SandboxedEnv(Env):
    """Mixin base for envs that need a sandbox (see the module docstring)."""

    needs_sandbox: ClassVar[bool] = True
    _sandbox: Sandbox | None = None
    _owns_sandbox: bool = False

    def attach_sandbox(self, sandbox: Sandbox) -> None:
        """Use ``sandbox`` (started and closed by the caller) from now on."""
        self._sandbox, self._owns_sandbox = sandbox, False

    async def sandbox(self) -> Sandbox:
        """The attached sandbox, or a local one started now and owned by the env."""
        if self._sandbox is None:
            from gem_eval.sandbox.local import LocalSandbox

            sandbox = LocalSandbox()
            await sandbox.start()
            self._sandbox, self._owns_sandbox = sandbox, True
        return self._sandbox

    def close(self) -> None:
        sandbox, owned = self._sandbox, self._owns_sandbox
        self._sandbox, self._owns_sandbox = None, False
        if sandbox is not None and owned:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(sandbox.close())
            else:  # closed from inside a loop: finish in the background
                task = loop.create_task(sandbox.close())
                task.add_done_callback(lambda t: t.cancelled() or t.exception())
        with contextlib.suppress(Exception):
            super().close()
