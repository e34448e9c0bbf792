"""Suites: YAML files naming tasks, validated, resolved and expanded into episodes.

::

    from gem_eval.suites import load_suite
    suite = load_suite("smoke")  # suites/smoke.yaml, or a path
    episodes = suite.episodes([ModelSpec(name="openai/gpt-5")], limit=3)

See :mod:`gem_eval.suites.schema` for the file format, :mod:`gem_eval.suites.resolve`
for how tasks resolve and :mod:`gem_eval.suites.suite` how they expand, and
:mod:`gem_eval.suites.problems` for how ``suites validate`` reports every mistake of a
file. Dataset rows are read by :mod:`gem_eval.datasets`, and
the bundled suites and tasks are found by :mod:`gem_eval.bundled`.
"""

from __future__ import annotations

from gem_eval.suites.loader import find_suite, list_suites, load_suite, suite_dirs
from gem_eval.suites.schema import SuiteError, SuiteFile, TaskFile
from gem_eval.suites.suite import Suite, SuiteTask

__all__ = [
    "Suite",
    "SuiteError",
    "SuiteFile",
    "SuiteTask",
    "TaskFile",
    "find_suite",
    "list_suites",
    "load_suite",
    "suite_dirs",
]
