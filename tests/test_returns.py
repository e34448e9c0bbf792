from __future__ import annotations

import pytest

from gem_eval.returns import discounted_return, returns_to_go


def test_the_worked_example_of_the_docstring() -> None:
    assert returns_to_go([0.0, 0.0, 1.0], 0.9) == pytest.approx([0.81, 0.9, 1.0])
    assert discounted_return([0.0, 0.0, 1.0], 0.9) == pytest.approx(0.81)


def test_dense_rewards_by_hand() -> None:
    # G_2 = 3; G_1 = -1 + 0.5*3 = 0.5; G_0 = 2 + 0.5*0.5 = 2.25
    assert returns_to_go([2.0, -1.0, 3.0], 0.5) == pytest.approx([2.25, 0.5, 3.0])
    assert returns_to_go([2.0, -1.0, 3.0], 1.0) == pytest.approx([4.0, 2.0, 3.0])
    assert returns_to_go([], 0.9) == [] and discounted_return([], 0.9) == 0.0


@pytest.mark.parametrize("gamma", [-0.1, 1.5])
def test_gamma_outside_the_unit_interval_is_refused(gamma: float) -> None:
    with pytest.raises(ValueError, match="gamma must lie in"):
        returns_to_go([1.0], gamma)
