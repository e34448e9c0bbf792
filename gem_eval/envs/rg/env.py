"""``ReasoningGymEnv``: one question from a ``reasoning-gym`` generator, scored by the
generator's own ``score_answer``::

    env = make("rg:basic_arithmetic-v0", size=100, config={"max_terms": 3})
    obs, info = env.reset(seed=7)          # entry 7 of the dataset
    obs, reward, terminated, truncated, info = env.step("... <answer>42</answer>")

Which question a seed gives: each env builds (once per process, shared by all envs with
the same settings) the dataset ``create_dataset(name, seed=dataset_seed, size=size,
**config)``; ``reset(seed)`` takes its entry ``seed % size`` (a random entry, drawn from
``env.rng``, when ``seed`` is ``None``). reasoning-gym generates entry ``i`` from
``Random(dataset_seed + i)``, so the question depends only on (name, ``dataset_seed``,
``size``, ``config``, ``seed % size``) -- not on the order of resets. Two upstream caveats
(reasoning-gym 0.1.25): ``isomorphic_strings``, ``knight_swap``,
``polynomial_multiplication``, ``ransom_note`` and ``word_ladder`` iterate over sets of
strings, so their questions are the same across processes only under a fixed
``PYTHONHASHSEED``; one task family of ``list_functions`` draws from the global
``random`` and is not reproducible at all.

Answers: the last ``<answer>...</answer>`` (reasoning-gym's convention; a lone
``\\boxed{}`` inside it is unwrapped), else the last ``\\boxed{...}``; neither is a format
error. The reward is the score in [0, 1]; the episode is a success when the score reaches
``success_threshold`` (default 1.0). A scorer that raises on a malformed answer scores 0.

``reasoning_gym`` is imported on the first reset (it takes seconds), never at import.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import threading
import traceback
from typing import Any, ClassVar

from gem_eval.boxed import last_boxed
from gem_eval.core import ResetResult
from gem_eval.envs.question import Grade, QuestionEnv
from gem_eval.envs.rg.names import NAMES
from gem_eval.errors import UserError, did_you_mean

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_LONE_BOX = re.compile(r"\\boxed\s*\{(.*)\}", re.DOTALL)

CacheKey = tuple[str, int, int, str]
"""``(name, dataset_seed, size, config as sorted JSON)``."""


class ReasoningGymEnv(QuestionEnv):
    """A ``reasoning-gym`` generator as an env (see the module docstring).

    Args:
        dataset: The generator's name, e.g. ``"gsm_symbolic"`` (one of
            :data:`~gem_eval.envs.rg.names.NAMES`).
        size: Entries in the dataset; ``reset(seed)`` takes entry ``seed % size``.
        dataset_seed: The dataset's seed (entry ``i`` comes from ``dataset_seed + i``).
        config: Overrides of the generator's config dataclass (difficulty ranges and the
            like). ``composite`` needs ``{"datasets": [{"name": ..., "weight": ...,
            "config": {...}}, ...]}``.
        success_threshold: The score at which an answer counts as correct.
        max_turns: Answers allowed.
        format_reward: Reward for an action with no extractable answer.
        prompt: Template of the first observation; ``{question}`` is replaced.
    """

    blocking: ClassVar[bool] = True  # the first reset imports and builds (seconds)
    answer_instruction: ClassVar[str] = (
        "Give only your final answer between <answer> and </answer> tags."
    )
    format_hint: ClassVar[str] = (
        "No final answer found: put it between <answer> and </answer> tags."
    )

    def __init__(
        self,
        dataset: str,
        *,
        size: int = 500,
        dataset_seed: int = 0,
        config: dict[str, Any] | None = None,
        success_threshold: float = 1.0,
        max_turns: int = 1,
        format_reward: float = -0.1,
        prompt: str | None = None,
    ) -> None:
        # QuestionEnv's fixed-question path: reset() loads the generated entry into
        # question/answer before the base starts the episode, so the "" is never shown.
        super().__init__("", max_turns=max_turns, format_reward=format_reward, prompt=prompt)
        if dataset not in NAMES:
            raise ValueError(
                f"no reasoning-gym generator {dataset!r}.{did_you_mean(dataset, NAMES)}"
            )
        if size < 1:
            raise ValueError("size must be at least 1")
        if not 0.0 < success_threshold <= 1.0:
            raise ValueError("success_threshold must be in (0, 1]")
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"config must be a mapping of the generator's settings, not {config!r}")
        config = dict(config or {})
        for key in ("seed", "size"):
            if key in config:
                raise ValueError(f"give {key!r} as the env's {_OWN_NAME[key]!r}, not in config")
        self.name, self.size, self.dataset_seed = dataset, size, dataset_seed
        self.config, self.success_threshold = config, success_threshold
        self.key: CacheKey = (dataset, dataset_seed, size, _config_key(config))
        self.index: int | None = None
        self.entry: dict[str, Any] | None = None

    def load(self) -> Any:
        """The reasoning-gym dataset, built on first use (imports ``reasoning_gym``).

        Call it to check ``config`` before any episode.

        Raises:
            ValueError: The config names an unknown key or a value the generator rejects.
            UserError: ``reasoning-gym`` is not installed.
        """
        return _source(self.key, self.config).dataset

    def check_settings(self) -> None:
        """Build the dataset now, so a bad ``config`` fails before a run (the suite loader
        calls this)."""
        self.load()

    def reset(self, seed: int | None = None) -> ResetResult:
        index = seed % self.size if seed is not None else self.rng.randrange(self.size)
        self.index, self.entry = index, _source(self.key, self.config).entry(index)
        self.row = self.entry
        self.load_row(self.entry)
        obs, info = super().reset(seed)
        return obs, {**info, "index": index, **self._metadata()}

    def extract(self, action: str) -> str | None:
        """The last ``<answer>`` content (a lone box inside unwrapped), else the last box."""
        tags = _ANSWER_TAG.findall(action)
        if not tags:
            return last_boxed(action)
        answer = str(tags[-1]).strip()
        lone = _LONE_BOX.fullmatch(answer)
        if lone is not None and last_boxed(answer) == lone.group(1).strip():
            return lone.group(1).strip()
        return answer

    def grade(self, extracted: str) -> Grade:
        """Score with the generator's ``score_answer``; success at ``success_threshold``."""
        if self.entry is None:
            raise RuntimeError("call reset() before step()")
        detail: dict[str, Any] = {}
        try:
            scorer = _SCORER_FIXES.get(self.name)
            if scorer is not None:
                raw = scorer(extracted, self.entry)
            else:
                raw = self.load().score_answer(extracted, self.entry)
            score = float(raw) if raw is not None else 0.0
        except Exception as exc:  # e.g. prime_factorization calls int() on the answer
            score, detail["score_error"] = 0.0, f"{type(exc).__name__}: {exc}"[:200]
        score = min(max(score, 0.0), 1.0) if math.isfinite(score) else 0.0
        detail.update(score=score, **self._metadata())
        return Grade(score >= self.success_threshold - 1e-9, score, detail)

    def _metadata(self) -> dict[str, Any]:
        meta = (self.entry or {}).get("metadata") or {}
        facts = {"source_dataset": meta.get("source_dataset", self.name)}
        if "difficulty" in meta:
            facts["difficulty"] = meta["difficulty"]
        return facts


_OWN_NAME = {"seed": "dataset_seed", "size": "size"}


class _Source:
    """One built dataset and the entries generated from it so far (thread-safe)."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        self.entries: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()  # a generator may keep state between entries

    def entry(self, index: int) -> dict[str, Any]:
        """A private copy of entry ``index`` (generated once)."""
        with self.lock:
            if index not in self.entries:
                self.entries[index] = self.dataset[index]
            return copy.deepcopy(self.entries[index])


_SOURCES: dict[CacheKey, _Source] = {}
_BUILDING: dict[CacheKey, threading.Lock] = {}
_GUARD = threading.Lock()


def _source(key: CacheKey, config: dict[str, Any]) -> _Source:
    """The cached dataset for ``key``, built by the first caller (others wait)."""
    with _GUARD:
        if key in _SOURCES:
            return _SOURCES[key]
        building = _BUILDING.setdefault(key, threading.Lock())
    with building:
        with _GUARD:
            if key in _SOURCES:
                return _SOURCES[key]
        source = _Source(_build(key[0], key[1], key[2], config))
        with _GUARD:
            _SOURCES[key] = source
        return source


def clear_cache() -> None:
    """Forget every built dataset and generated entry (frees memory; used by tests)."""
    with _GUARD:
        _SOURCES.clear()
        _BUILDING.clear()


def _build(name: str, seed: int, size: int, config: dict[str, Any]) -> Any:
    """``reasoning_gym.create_dataset``, its config errors turned into one-line ValueErrors."""
    try:
        import reasoning_gym  # type: ignore[import-untyped]
        from reasoning_gym.factory import DATASETS  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UserError(
            f"rg:{name} needs reasoning-gym: pip install 'gem-eval[rg]' ({exc})"
        ) from exc
    valid = [f.name for f in dataclasses.fields(DATASETS[name][1]) if f.name not in _OWN_NAME]
    unknown = [key for key in config if key not in valid]
    if unknown:
        hint = did_you_mean(unknown[0], valid)
        raise ValueError(
            f"rg:{name} config has no key {unknown[0]!r}.{hint} Valid keys: {', '.join(valid)}"
        )
    try:
        if name == "composite":
            config = {**config, "datasets": _composite_specs(config.get("datasets"))}
        return reasoning_gym.create_dataset(name, seed=seed, size=size, **config)
    except (AssertionError, ValueError, TypeError, KeyError) as exc:
        message = " ".join((str(exc) or _failed_line(exc)).split())
        raise ValueError(f"rg:{name} config rejected: {message}") from exc


def _composite_specs(datasets: Any) -> Any:
    """``composite``'s ``datasets`` as ``DatasetSpec`` objects (YAML gives dicts)."""
    if not isinstance(datasets, list):
        return datasets  # left to the generator's own check
    from reasoning_gym.composite import DatasetSpec  # type: ignore[import-untyped]

    specs = []
    for item in datasets:
        if isinstance(item, dict) and "name" not in item:
            raise ValueError(f"each of composite's datasets needs a 'name': {item!r}")
        specs.append(
            DatasetSpec(item["name"], item.get("weight", 1.0), item.get("config", {}))
            if isinstance(item, dict)
            else item
        )
    return specs


def _failed_line(exc: BaseException) -> str:
    """The source line that raised (a bare ``assert`` in a config's ``validate``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    line = frames[-1].line if frames else None
    return f"{type(exc).__name__} at `{line}`" if line else type(exc).__name__


def _config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=repr)


def _bool_answer(answer: str, entry: dict[str, Any]) -> float:
    """``game_of_life_halting``'s answer is "True"/"False"; its own scorer compares
    ``bool(answer)`` of the strings, which gives full marks to any non-empty answer
    (reasoning-gym 0.1.25)."""
    return float(answer.strip().lower() == str(entry["answer"]).strip().lower())


_SCORER_FIXES: dict[str, Any] = {"game_of_life_halting": _bool_answer}
"""Generators whose upstream ``score_answer`` is wrong, and the scorer used instead."""
