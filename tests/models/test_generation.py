"""Generation settings checked before a run (``-M`` and a task's ``generation:``)."""

from __future__ import annotations

import pytest

from gem_eval.errors import UserError
from gem_eval.models.base import GenerateConfig
from gem_eval.models.generation import check_generation, ensure_generation, generation_problems


def test_known_settings_are_typed_and_every_mistake_is_named() -> None:
    settings = {
        "temperature": "abc",
        "top_p": 1.5,
        "max_tokens": 0,
        "seed": 1.5,
        "stop": [1],
        "return_tokens": "yes",
        "extra": [],
    }
    assert check_generation(settings, "-M") == [
        "-M temperature: expected a number >= 0 (got 'abc')",
        "-M top_p: expected a number above 0, at most 1 (got 1.5)",
        "-M max_tokens: expected a whole number >= 1 (got 0)",
        "-M seed: expected a whole number (got 1.5)",
        "-M stop: expected a string or a list of strings (got a list)",
        "-M return_tokens: expected true or false (got 'yes')",
        "-M extra: expected a mapping of provider settings (got a list)",
    ]


@pytest.mark.parametrize(
    "settings",
    [
        {"temperature": 0, "top_p": 1, "max_tokens": 1, "seed": -3},
        {"temperature": 0.7, "stop": "###", "reasoning_effort": "low"},
        {"stop": ["a", "b"], "return_tokens": True, "extra": {"x": 1}},
        {"temperature": None},  # unset
        {"top_k": "anything", "min_p": [1]},  # a provider's own settings pass through
    ],
)
def test_good_and_unknown_settings_pass(settings: dict[str, object]) -> None:
    assert generation_problems(settings) == []
    ensure_generation(settings)
    GenerateConfig(**{k: v for k, v in settings.items() if k in GenerateConfig.model_fields})


def test_booleans_are_no_numbers() -> None:
    assert [k for k, _ in generation_problems({"temperature": True, "seed": False})] == [
        "temperature",
        "seed",
    ]


def test_ensure_raises_one_line_naming_every_mistake() -> None:
    with pytest.raises(UserError) as err:
        ensure_generation({"temperature": "abc", "max_tokens": -1}, "-M")
    assert str(err.value) == (
        "-M temperature: expected a number >= 0 (got 'abc'); "
        "-M max_tokens: expected a whole number >= 1 (got -1)"
    )


def test_one_stop_string_becomes_a_list() -> None:
    from gem_eval.runner.executor import generate_config

    assert GenerateConfig(stop="###").stop == ["###"]
    assert generate_config({}, {"stop": "</answer>"}).stop == ["</answer>"]
    with pytest.raises(UserError, match="generation temperature"):
        generate_config({"temperature": "hot"}, {})
