"""Built-in policies that play an env without a model: oracle, random and human.

A policy maps the latest observation (and the env, for policies that read its state)
to the next action.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Protocol

from gem_eval.core import Env
from gem_eval.errors import UserError


class Policy(Protocol):
    """Anything that picks the next action from an observation."""

    def __call__(self, observation: str, env: Env) -> str: ...


class OraclePolicy:
    """Plays the env's own solver (``env.unwrapped.oracle_action()``)."""

    def __call__(self, observation: str, env: Env) -> str:
        oracle = getattr(env.unwrapped, "oracle_action", None)
        if oracle is None:
            raise UserError(f"{env} has no oracle policy")
        action: str = oracle()
        return action


class RandomPolicy:
    """Plays well-formed random moves (``env.unwrapped.sample_random_action``).

    Args:
        seed: Makes the policy's moves reproducible. Its generator is seeded with a hash
            of it (:func:`policy_seed`), never with it as it is: an env reset with the
            same number (``play --seed 1``) would draw the same stream, and a policy
            replaying the env's secret draws guesses the secret. The env's generator is
            never touched.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(policy_seed(seed, "random"))

    def __call__(self, observation: str, env: Env) -> str:
        sample = getattr(env.unwrapped, "sample_random_action", None)
        if sample is None:
            raise UserError(f"{env} has no random policy")
        action: str = sample(self.rng)
        return action


class HumanPolicy:
    """Asks a person for each action.

    Args:
        ask: Reads one line from the person (default :func:`input`).
    """

    def __init__(self, ask: Callable[[str], str] = input) -> None:
        self.ask = ask

    def __call__(self, observation: str, env: Env) -> str:
        try:
            return self.ask("your move> ")
        except EOFError:
            raise UserError("input ended before the episode did") from None


POLICY_NAMES = ("oracle", "random", "human")


def policy_seed(seed: int | None, name: str) -> int | None:
    """The seed of policy ``name``'s generator, derived from a run's ``seed``.

    Reproducible for a given ``seed``, yet statistically independent of every generator
    seeded with ``seed`` itself (the env's): a SHA-256 of the seed and the policy's name,
    so each policy has a stream of its own. ``None`` stays ``None`` (fresh entropy).
    """
    if seed is None:
        return None
    digest = hashlib.sha256(f"gem-eval policy {name}: {seed}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


def make_policy(name: str, seed: int | None = None) -> Policy:
    """Build a built-in policy by name (one of :data:`POLICY_NAMES`)."""
    if name == "oracle":
        return OraclePolicy()
    if name == "random":
        return RandomPolicy(seed)
    if name == "human":
        return HumanPolicy()
    raise UserError(f"unknown policy {name!r}: choose one of {', '.join(POLICY_NAMES)}")
