"""The broadcasting rules (`dsl/shapes.py`) and the interval arithmetic of `compiler/types.py`,
case by case."""

from __future__ import annotations

import math

import pytest

from compiler.types import FiniteSet, Interval, format_shape
from dsl.shapes import BroadcastError, Plan, broadcast_plan

PLANS = [
    # equal shapes: nothing to broadcast
    (("N", "M"), ("N", "M"), Plan(("N", "M"), None, None)),
    # scalars go everywhere
    ((), ("N", "M"), Plan(("N", "M"), (), None)),
    (("N",), (), Plan(("N",), None, ())),
    # a vector matching the columns is a row, matching the rows is a column
    (("M",), ("N", "M"), Plan(("N", "M"), (1,), None)),
    (("N", "M"), ("N",), Plan(("N", "M"), None, (0,))),
    # literal 1 stretches (row(v) and col(v))
    (("N", 1), (1, "M"), Plan(("N", "M"), (0, 1), (0, 1))),
    ((1, "M"), ("N", "M"), Plan(("N", "M"), (0, 1), None)),
    ((1,), ("N",), Plan(("N",), (0,), None)),
    # a vector of length 1 against a square matrix is not ambiguous: it is a scalar in effect
    ((1,), ("K", "K"), Plan(("K", "K"), (1,), None)),
]


@pytest.mark.parametrize(("lhs", "rhs", "plan"), PLANS)
def test_broadcast_plan(lhs: tuple, rhs: tuple, plan: Plan) -> None:
    assert broadcast_plan(lhs, rhs) == plan


@pytest.mark.parametrize(
    ("lhs", "rhs", "ambiguous"),
    [
        (("N",), ("M",), False),
        (("K",), ("N", "M"), False),
        (("N", "M"), ("M", "N"), False),
        (("N", 2), ("N", 3), False),
        (("K",), ("K", "K"), True),
        (("N", "N"), ("N",), True),
    ],
)
def test_broadcast_errors(lhs: tuple, rhs: tuple, ambiguous: bool) -> None:
    with pytest.raises(BroadcastError) as info:
        broadcast_plan(lhs, rhs)
    assert info.value.ambiguous == ambiguous


def test_interval_arithmetic() -> None:
    a, b = Interval(-2.0, 3.0), Interval(1.0, 4.0)
    assert a + b == Interval(-1.0, 7.0)
    assert a - b == Interval(-6.0, 2.0)
    assert a * b == Interval(-8.0, 12.0)
    assert -a == Interval(-3.0, 2.0)
    assert a.power(2) == Interval(0.0, 9.0)
    assert a.power(3) == Interval(-8.0, 27.0)
    assert Interval(-3.0, -1.0).power(2) == Interval(1.0, 9.0)
    assert a.reciprocal() is None
    assert b.reciprocal() == Interval(0.25, 1.0)
    assert Interval(0.0, 2.0).scaled_sum(10) == Interval(0.0, 20.0)
    assert Interval(-1.0, 2.0).scaled_sum(10) == Interval(-10.0, 20.0)
    assert Interval(1.0, 2.0).scaled_sum(10) == Interval(1.0, 20.0)
    assert Interval(0.0, 0.0) * Interval(-math.inf, math.inf) == Interval(0.0, 0.0)
    assert not Interval(-math.inf, 1.0).is_finite
    with pytest.raises(ValueError, match="invalid interval"):
        Interval(2.0, 1.0)
    assert Interval(1e200, 1e200).power(2) == Interval(math.inf, math.inf)


def test_finite_set_and_shape_formatting() -> None:
    assert FiniteSet((0.0, 1.0, 2.0)).interval == Interval(0.0, 2.0)
    with pytest.raises(ValueError, match="sorted and distinct"):
        FiniteSet((1.0, 0.0))
    with pytest.raises(ValueError, match="at least one value"):
        FiniteSet(())
    assert format_shape(()) == "scalar"
    assert format_shape(("N", 3)) == "[N, 3]"
