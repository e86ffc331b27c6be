"""Symbolic shapes and value domains shared by the `stat` dialect, the checker and the passes.

A dimension is either a literal size (`3`) or the name of a size parameter (`"N"`), so a
tensor type says `[N, M]` whatever N and M are at run time: IR size never depends on data
size (DESIGN.md §2, principle 1). A value domain is what the program promises about the
values of an input: a finite set (`in {0, 1, 2}`) or a closed interval (`in [-4.0, 4.0]`).
`Interval` also carries the elementary interval arithmetic that the checker (to decide
whether a divisor can be zero) and range analysis build on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A dimension: a literal size or the name of a size parameter.
Dim = int | str
Shape = tuple[Dim, ...]


def format_shape(shape: Sequence[Dim]) -> str:
    """`[N, M]` for a matrix, `[N]` for a vector, `scalar` for rank 0."""
    if not shape:
        return "scalar"
    return "[" + ", ".join(str(d) for d in shape) + "]"


def dim_bound(dim: Dim, bounds: dict[str, int]) -> int:
    """The largest value `dim` can take, given the upper bounds of the size parameters."""
    return dim if isinstance(dim, int) else bounds[dim]


@dataclass(frozen=True)
class Interval:
    """A closed interval [lo, hi] of reals; lo may be -inf and hi +inf (unbounded)."""

    lo: float
    hi: float

    def __post_init__(self) -> None:
        if math.isnan(self.lo) or math.isnan(self.hi) or self.lo > self.hi:
            raise ValueError(f"invalid interval [{self.lo}, {self.hi}]")

    @staticmethod
    def point(value: float) -> Interval:
        return Interval(value, value)

    @staticmethod
    def hull(values: Iterable[float]) -> Interval:
        vals = list(values)
        return Interval(min(vals), max(vals))

    @property
    def is_finite(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def contains(self, value: float) -> bool:
        return self.lo <= value <= self.hi

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> Interval:
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other: Interval) -> Interval:
        return self + (-other)

    def __mul__(self, other: Interval) -> Interval:
        return Interval.hull(_mul(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi))

    def union(self, other: Interval) -> Interval:
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def power(self, exponent: int) -> Interval:
        """x^k for a positive integer k (even powers are non-negative)."""
        ends = [_pow(self.lo, exponent), _pow(self.hi, exponent)]
        if exponent % 2 == 0 and self.contains(0.0):
            return Interval(0.0, max(ends))
        return Interval.hull(ends)

    def scaled_sum(self, count_max: int) -> Interval:
        """The range of a sum of between 1 and `count_max` values each in this interval."""
        lo = self.lo * count_max if self.lo < 0 else self.lo
        hi = self.hi * count_max if self.hi > 0 else self.hi
        return Interval(lo, hi)

    def reciprocal(self) -> Interval | None:
        """1/x, or None when the interval contains 0 (then 1/x is unbounded)."""
        if self.contains(0.0):
            return None
        return Interval.hull([1.0 / self.lo, 1.0 / self.hi])


def _mul(a: float, b: float) -> float:
    # 0 * inf is 0 here: a factor that is exactly zero keeps the product at zero.
    if a == 0.0 or b == 0.0:
        return 0.0
    return a * b


def _pow(a: float, k: int) -> float:
    try:
        return a**k
    except OverflowError:
        return math.copysign(math.inf, a) if k % 2 else math.inf


@dataclass(frozen=True)
class FiniteSet:
    """A finite set of reals, kept sorted and without duplicates."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("a finite set domain needs at least one value")
        if list(self.values) != sorted(set(self.values)):
            raise ValueError("finite set values must be sorted and distinct")

    @property
    def interval(self) -> Interval:
        return Interval(self.values[0], self.values[-1])


Domain = Interval | FiniteSet


def domain_interval(domain: Domain) -> Interval:
    return domain if isinstance(domain, Interval) else domain.interval


def format_domain(domain: Domain) -> str:
    """The domain as the source writes it: `{0, 1, 2}` or `[-4.0, 4.0]`."""
    if isinstance(domain, FiniteSet):
        return "{" + ", ".join(f"{v:g}" for v in domain.values) + "}"
    return f"[{domain.lo:g}, {domain.hi:g}]"
