"""GEM's published package in a venv of its own, and a client for the driver running there.

The venv is made once (``python -m venv``, then ``pip install gem-llm``) and kept in the
cache, ``$GEM_EVAL_CACHE/bench/gem-venv`` (or ``~/.cache/gem-eval/bench/gem-venv``),
as a :class:`~gem_eval.cache.CacheEntry`: built beside its final place, checked (GEM's
GuessTheNumber env must import and play), then renamed into place.

What importing GEM's game envs needs (gem-llm 0.1.0): ``import gem`` imports numpy (its
seeding and vector envs), and ``gem/envs/__init__.py`` imports ``reasoning_gym`` (with all
of its own dependencies) to register those envs. Its other requirements (nltk,
math-verify, msgspec) serve other envs. So when the full install fails, the venv gets the
package alone (``--no-deps``) plus numpy and reasoning-gym.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from _gem_driver import GEM_ENV_ID, Measurement

from gem_eval.cache import CacheEntry, CacheError, cache_dir

GEM_PACKAGE = "gem-llm==0.1.0"  # the only release; pinned so a new one cannot change the API
GEM_NEEDS = ["numpy", "reasoning-gym==0.1.23"]  # gem-llm 0.1.0's pin
DRIVER = Path(__file__).with_name("_gem_driver.py")
PIP_TIMEOUT = 900


class GemUnavailable(Exception):
    """GEM's package could not be installed or started: the bench goes on without it."""


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _plays(venv: Path) -> bool:
    """Whether the venv's GEM makes GuessTheNumber-easy and answers a guess."""
    probe = (
        "import gem\n"
        f"env = gem.make({GEM_ENV_ID!r})\n"
        "env.reset()\n"
        "assert 'higher' in env.step('\\\\boxed{1}')[0] or env.game_number == 1\n"
    )
    try:
        done = subprocess.run(
            [str(_python(venv)), "-I", "-c", probe], capture_output=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False
    )


def _build(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    full = _pip(venv, GEM_PACKAGE)
    if full.returncode == 0 and _plays(venv):
        return
    alone = _pip(venv, "--no-deps", GEM_PACKAGE)
    needs = _pip(venv, *GEM_NEEDS) if alone.returncode == 0 else alone
    if needs.returncode != 0:
        lines = (full.stderr.strip() or full.stdout.strip() or "no output").splitlines()
        raise GemUnavailable(f"pip install {GEM_PACKAGE} failed: {lines[-1]}")


def gem_venv() -> Path:
    """The venv holding GEM's package, built on first use (about a minute).

    Raises:
        GemUnavailable: It could not be built, or GEM's env does not play in it.
    """
    entry = CacheEntry(cache_dir("bench") / "gem-venv", check=_plays)
    if not entry.ready():
        print(f"bench: installing {GEM_PACKAGE} into {entry.path} (once)", file=sys.stderr)
    try:
        entry.ensure(_build)
    except CacheError:
        raise GemUnavailable(
            f"{GEM_PACKAGE} installed, but its {GEM_ENV_ID} does not play"
        ) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise GemUnavailable(f"could not make a venv for {GEM_PACKAGE}: {exc}") from exc
    return entry.path


class GemDriver:
    """``_gem_driver.py`` running in GEM's venv: one measurement per :meth:`measure`."""

    def __init__(self, venv: Path) -> None:
        # GEM's prints, shown when a measurement fails; closed by close().
        self._log: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self._proc = subprocess.Popen(
            [str(_python(venv)), "-I", str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )

    def measure(self, case: str, n: int, steps: int) -> Measurement:
        """Run one measurement in GEM's venv; its tally (work done and CPU time).

        Raises:
            GemUnavailable: The driver failed (its error and GEM's output say why).
        """
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps({"case": case, "n": n, "steps": steps}) + "\n")
            self._proc.stdin.flush()
            reply: dict[str, Any] = json.loads(self._proc.stdout.readline() or "{}")
        except (OSError, ValueError) as exc:
            reply = {"error": f"the driver stopped answering: {exc}"}
        if "error" in reply or not reply:
            self._log.seek(0)
            tail = self._log.read().strip().splitlines()[-3:]
            detail = reply.get("error", "the driver exited")
            raise GemUnavailable(f"GEM's driver failed on {case}: {detail} {tail}")
        return Measurement(**reply)

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()
