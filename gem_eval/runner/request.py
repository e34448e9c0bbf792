"""What a user asks a run for, in one object: :class:`RunRequest`.

``gem-eval run`` and ``gem-eval rollout`` parse their options into a request; the library
plans and plays it (:mod:`gem_eval.runner.session`). A request holds only what was given:
``None`` or an absent key means "the suite's, the run's or the default".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gem_eval.errors import UserError
from gem_eval.records import ModelSpec, TokenPrice

CONNECTION_FIELDS = (
    "base_url",
    "backend",
    "api_key_env",
    "timeout_s",
    "max_retries",
    "max_connections",
)
"""ModelSpec fields that say how a model is reached, not what it is asked."""


@dataclass(frozen=True)
class ModelChoice:
    """A ``--model`` as given, with the connection settings given for it alone.

    Attributes:
        name: The model string (``openai/gpt-5``, ``hosted_vllm/ckpt-1200`` ...).
        settings: :data:`CONNECTION_FIELDS` given for this model (``base_url`` ...), and
            ``args``: its own ``-M`` generation settings.
    """

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRequest:
    """One run as asked for: a new one (``suite`` and models) or ``resume`` of one.

    Attributes:
        suite: A suite name or path (a new run), or the run's own (resume, optional).
        models: Each ``--model`` with its own connection settings; empty: the models the
            suite or ``models_file`` lists (a new run) or every model of the run (resume).
        shared: Connection settings for every model (given before the first ``--model``,
            or without one).
        model_args: ``-M`` generation settings, for every model (``None``: not given).
        models_file: A YAML file listing models with their settings (see
            :mod:`gem_eval.suites.models`).
        options: :class:`~gem_eval.runner.session.RunOptions` fields given.
        resume: A run id or ``latest``.
        force: With ``resume``: accept changes to what the run measures.
        results_dir: Where runs are kept.
        executor: ``local`` or ``ray``; ``ray_address`` its cluster.
        extra: Settings of the command kept in ``manifest.extra`` (``rollout``'s gamma
            and estimator): a resume uses the stored ones; another value needs ``force``.
        command: The command the hints name (``run``, ``rollout``).
        registry: Where a ``suite`` named ``NAME@VERSION`` is looked up (a new run; a
            resumed one reads the registry its manifest names).
        prices: ``--price``: what the tokens of a model (by name) cost, over litellm's
            price and a models list's ``price:``.
    """

    suite: str | None = None
    models: Sequence[ModelChoice] = ()
    shared: Mapping[str, Any] = field(default_factory=dict)
    model_args: Mapping[str, Any] | None = None
    models_file: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    resume: str | None = None
    force: bool = False
    results_dir: Path = Path("results")
    executor: str = "local"
    ray_address: str | None = None
    extra: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    command: str = "run"
    registry: str | None = None
    prices: Mapping[str, TokenPrice] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """One-line errors for settings no run can take, before anything is read."""
        sandbox = self.options.get("sandbox")
        if sandbox not in (None, "docker", "local", "local-unsafe"):
            raise UserError(f"unknown sandbox {sandbox!r}: choose docker, local or local-unsafe")
        if self.executor not in ("local", "ray"):
            raise UserError(f"unknown executor {self.executor!r}: choose local or ray")
        if self.ray_address is not None and self.executor != "ray":
            raise UserError("--ray-address goes with --executor ray")
        from gem_eval.models.backends import BACKENDS
        from gem_eval.models.generation import ensure_generation

        for settings in [self.shared, *(m.settings for m in self.models)]:
            backend = settings.get("backend")
            if backend is not None and backend not in BACKENDS:
                raise UserError(
                    f"unknown model backend {backend!r}: choose {' or '.join(BACKENDS)}"
                )
        for args in [self.model_args or {}, *(m.settings.get("args", {}) for m in self.models)]:
            ensure_generation(args, "-M")
        if self.force and self.resume is None:
            raise UserError("--force goes with --resume")
        if self.resume is not None and self.models_file is not None:
            raise UserError("--resume plays the run's own models: drop --models")
        if self.models and self.models_file is not None:
            raise UserError("give the models with --model or with --models, not both")

    def model_specs(self, listed: Sequence[ModelSpec] = ()) -> list[ModelSpec]:
        """A new run's models: each ``--model`` with the shared settings under its own;
        without ``--model``, the models ``listed`` by the suite or models file with the
        shared settings (the command line) over theirs.

        Raises:
            UserError: No model at all, or a ``--price`` for a model the run does not play.
        """
        args = dict(self.model_args or {})
        if self.models:
            specs = []
            for m in self.models:
                own = {k: v for k, v in m.settings.items() if k != "args"}
                mine = {**args, **m.settings.get("args", {})}
                specs.append(ModelSpec(name=m.name, args=mine, **_given({**self.shared, **own})))
            return self.priced(specs)
        if not listed:
            raise UserError("give at least one --model (or list models in the suite or --models)")
        shared = _given(self.shared)
        return self.priced(
            [
                m.model_copy(update={**shared, **({"args": {**m.args, **args}} if args else {})})
                for m in listed
            ]
        )

    def priced(self, specs: list[ModelSpec]) -> list[ModelSpec]:
        """``specs`` with the ``--price`` given for each.

        Raises:
            UserError: A ``--price`` names a model that is not among ``specs``.
        """
        names = [s.name for s in specs]
        for name in self.prices:
            if name not in names:
                raise UserError(
                    f"--price {name}: the run plays no model {name!r} (its models: "
                    f"{', '.join(names)})"
                )
        return [
            s.model_copy(update={"price": self.prices[s.name]}) if s.name in self.prices else s
            for s in specs
        ]


def _given(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if v is not None}
