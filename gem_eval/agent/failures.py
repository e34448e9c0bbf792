"""Which outcome a failure is: the model's doing, the configuration's, or someone else's.

The agent loop never lets an exception out; it ends the episode with the outcome this
module names (see :mod:`gem_eval.outcomes` for what each means):

* a model call refused for what the model wrote, a refusal or content filter, or a
  context overflow (the conversation outgrew the model's window): ``model_error``,
  scored, since the model produced it;
* any other refused call (401/403 key, 404 model or URL, 400/422 bad request: the run
  is set up wrong, and every episode would fail the same way): ``config_error``;
* a transient failure that outlasted the retries, or a sandbox failure:
  ``infra_error``;
* an exception from the env: ``env_error``;
* anything else is a bug in gem-eval: ``harness_error``, with the traceback kept.
"""

from __future__ import annotations

import re
import traceback
from typing import Literal

from gem_eval.errors import ModelCallError, SandboxError, TamperError

Stage = Literal["model", "env", "loop"]
"""Where the exception came from: a model call, the env's reset/step/grading, or the
loop itself (tool dispatch, bookkeeping)."""

_CONTEXT_OVERFLOW = re.compile(
    r"context.?length|context.?window|maximum context|context size|prompt is too long"
    r"|too many tokens|ContextWindowExceeded|reduce the length",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"content.?policy|content.?filter|ContentPolicyViolation|safety system|flagged",
    re.IGNORECASE,
)


def model_call_outcome(exc: ModelCallError) -> str:
    """The outcome of a model call that failed for good."""
    if exc.transient:
        return "infra_error"
    text = str(exc)
    if exc.status in (400, 413, 422) and (_CONTEXT_OVERFLOW.search(text) or _REFUSAL.search(text)):
        return "model_error"
    return "config_error"


_CONFIG_HINTS = {
    401: "the server refused the API key: name the variable holding it with --api-key-env",
    403: "the server refused the API key: name the variable holding it with --api-key-env",
    404: "unknown model or URL: check --model and --model-base-url",
}


def config_hint(exc: ModelCallError) -> str:
    """What to check when a call was refused for the configuration's sake."""
    return _CONFIG_HINTS.get(
        exc.status or 0, "the server rejected the request: check the generation settings (-M)"
    )


def outcome_of(exc: BaseException, stage: Stage) -> str:
    """The outcome an exception raised at ``stage`` ends an episode with."""
    if isinstance(exc, ModelCallError):
        return model_call_outcome(exc)
    if isinstance(exc, TamperError):  # the agent changed what grades it
        return "tampered"
    if isinstance(exc, SandboxError):  # the sandbox or its service failed: not the model's
        return "infra_error"
    if stage == "env":
        return "env_error"
    return "harness_error"


def describe(exc: BaseException) -> str:
    """One line: the exception's type and message (a refused model call: its status,
    message and what to check)."""
    if isinstance(exc, ModelCallError):
        text = " ".join(str(exc).split())
        if model_call_outcome(exc) == "config_error":
            return f"{exc.status} {text} ({config_hint(exc)})"
        return f"{exc.status} {text}" if exc.status else text
    return f"{type(exc).__name__}: {exc}"


def formatted_traceback(exc: BaseException) -> str:
    """The exception's traceback, as kept in a ``harness_error`` record."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
