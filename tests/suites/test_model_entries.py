"""A models list's entries (a suite's ``models:``, a ``--models`` file): ``price:``, and
a mistake inside an entry told at its key, not as "not a string"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gem_eval.records import TokenPrice
from gem_eval.suites.models import load_models_file
from gem_eval.suites.schema import SuiteError

ENTRY = "models:\n  - openai/gpt-5\n  - name: hosted_vllm/ckpt\n    backend: openai\n"


def test_a_price_is_kept_with_its_model(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(ENTRY + "    price: {input: 0.2, output: 1}\n")
    plain, priced = load_models_file(path)
    assert plain.price is None and priced.price == TokenPrice(input=0.2, output=1.0)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "    price: {input: 0.2, output: -1}",
            ":5: models[1].price.output: Input should be greater",
        ),
        (
            "    price: {input: .nan, output: 1}",
            ":5: models[1].price.input: Input should be a finite",
        ),
        ("    price: {input: 1}", ":5: models[1].price.output: required key is missing"),
        ("    price: 3", ":5: models[1].price: expected a mapping of keys (got 3)"),
        (
            "    prise: {input: 1, output: 1}",
            ":5: models[1].prise: unknown key. Did you mean: price?",
        ),
        ("    timeout_s: .inf", ":5: models[1].timeout_s: Input should be a finite number"),
    ],
)
def test_a_mistake_inside_an_entry_is_told_at_its_key(line: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(ENTRY + line + "\n")
    with pytest.raises(SuiteError) as caught:
        load_models_file(path)
    assert str(caught.value).startswith(f"{path}{said}"), str(caught.value)
