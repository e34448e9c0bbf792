"""Keep API keys and other secrets out of trajectories and logs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gem_eval.trajectory import Trajectory

REDACTED = "[REDACTED]"

# Well-known key shapes (OpenAI, Anthropic, Google, Hugging Face, GitHub, AWS, Slack).
KEY_PATTERNS = [
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"hf_[A-Za-z0-9]{30,}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"AKIA[0-9A-Z]{16}",
    r"xox[abpr]-[A-Za-z0-9-]{10,}",
    r"(?<=Bearer )[A-Za-z0-9._\-]{16,}",
]
SECRET_VARIABLE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
MIN_SECRET_LENGTH = 8  # shorter values would redact ordinary words


class Redactor:
    """Replaces secrets in text with ``[REDACTED]``.

    Args:
        values: Literal secret values (e.g. the API key the run was given).
        environ: Environment to take the values of ``*KEY*``/``*TOKEN*``/``*SECRET*``
            variables from (default: ``os.environ``).
    """

    def __init__(
        self, values: Iterable[str] = (), environ: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        secrets = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
        secrets |= {
            v for k, v in env.items() if SECRET_VARIABLE.search(k) and len(v) >= MIN_SECRET_LENGTH
        }
        literal = [re.escape(s) for s in sorted(secrets, key=len, reverse=True)]
        self._pattern = re.compile("|".join(literal + KEY_PATTERNS))

    def __call__(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text)

    def trajectory(self, traj: Trajectory) -> Trajectory:
        """``traj`` with every secret removed (itself when it holds none)."""
        from gem_eval.trajectory import Trajectory

        text = traj.model_dump_json()
        clean = self(text)
        return traj if clean == text else Trajectory.model_validate_json(clean)
