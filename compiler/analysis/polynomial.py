"""Depth-optimal evaluation of a univariate polynomial p(x) = sum c_k x^k on ciphertexts.

A baby-step giant-step (Paterson-Stockmeyer) scheme with a depth budget. p of degree d with
2^m <= d is split at the giant step x^(2^m): p = q + x^(2^m) r (deg q < 2^m, deg r = d - 2^m),
q kept within the budget A and r within A - 1. Parts of degree below the baby-step bound k
whose terms c_i x^i fit the budget are evaluated directly from the baby powers (a product by
a real c_i costs one level, an integer c_i none). The powers x^j come from a power chain
(x^(2^t) by squaring, x^j = x^(2^t) x^(j - 2^t) for the largest 2^t < j: depth ceil(log2 j)),
computing only the powers used. Every k = 2^l is tried with the smallest feasible budget
first, and the plan with the fewest ciphertext products is kept.

Depth: with A = ceil(log2(d + 1)) every split is feasible (deg q < 2^m needs at most m <= A
levels, deg r < 2^m at most m <= A - 1, and c x^(2^m) at most m + 1 <= A), so a polynomial
with real coefficients costs ceil(log2(d + 1)) levels, one fewer than the power tree followed
by the coefficient products whenever d + 1 is not above a power of two. Products: about
k + d / k + log2(d / k), near 2 sqrt(d) + log2 d at k ~ sqrt(d).

References: Paterson and Stockmeyer, "On the number of nonscalar multiplications necessary
to evaluate polynomials", SIAM J. Comput. 1973; Bossuat, Mouchet, Troncoso-Pastoriza and
Hubaux, "Efficient Bootstrapping for Approximate Homomorphic Encryption with Non-Sparse
Keys", Eurocrypt 2021 (the depth-optimal baby-step giant-step split at powers of two).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

# Largest degree planned (and accepted for a secret value by the checker).
MAX_DEGREE = 63


@dataclass(frozen=True)
class Leaf:
    """sum c_i x^i evaluated directly from the powers x^i (c_0 added, c_i x^i by a scalar)."""

    coeffs: tuple[float, ...]


@dataclass(frozen=True)
class Split:
    """low + x^power * high; `high` is a Leaf of one constant when it is c x^power."""

    low: Plan
    power: int
    high: Plan


Plan = Leaf | Split


@dataclass(frozen=True)
class PolynomialPlan:
    plan: Plan
    depth: int  # levels consumed above the input's depth
    products: int  # ciphertext-ciphertext products (powers and giant-step products)
    powers: tuple[int, ...]  # the powers x^j (j >= 2) the plan computes


def power_depth(j: int) -> int:
    return math.ceil(math.log2(j)) if j > 1 else 0


def power_chain(j: int) -> tuple[int, int] | None:
    """The two powers whose product is x^j (None for x^1)."""
    if j <= 1:
        return None
    high = 1 << (j.bit_length() - 1)
    if high == j:
        return (j // 2, j // 2)
    return (high, j - high)


def power_closure(wanted: set[int]) -> set[int]:
    """Every power j >= 2 the chain computes to obtain `wanted`."""
    out: set[int] = set()
    stack = [j for j in wanted if j >= 2]
    while stack:
        j = stack.pop()
        if j in out:
            continue
        out.add(j)
        chain = power_chain(j)
        assert chain is not None
        stack.extend(p for p in chain if p >= 2 and p not in out)
    return out


def _term_depth(i: int, c: float) -> int:
    if c == 0.0 or i == 0:
        return 0
    return power_depth(i) + (0 if float(c).is_integer() else 1)


def _degree(coeffs: Sequence[float]) -> int:
    return max((i for i, c in enumerate(coeffs) if c != 0.0), default=0)


def _build(coeffs: tuple[float, ...], budget: int, baby: int) -> tuple[Plan, int] | None:
    """A plan of depth <= budget and its number of giant-step products, or None."""
    d = _degree(coeffs)
    coeffs = coeffs[: d + 1]
    if d < baby or d <= 1:
        if max((_term_depth(i, c) for i, c in enumerate(coeffs)), default=0) <= budget:
            return Leaf(coeffs), 0
        if d <= 1:
            return None
    m = d.bit_length() - 1
    power = 1 << m
    low, high = coeffs[:power], coeffs[power:]
    if _degree(high) == 0:  # c x^(2^m): one scalar product of the giant power
        if _term_depth(power, high[0]) > budget:
            return None
        low_plan = _build(low, budget, baby)
        if low_plan is None:
            return None
        return Split(low_plan[0], power, Leaf(high[:1])), low_plan[1]
    if power_depth(power) > budget - 1:
        return None
    high_plan = _build(high, budget - 1, baby)
    low_plan = _build(low, budget, baby)
    if high_plan is None or low_plan is None:
        return None
    return Split(low_plan[0], power, high_plan[0]), low_plan[1] + high_plan[1] + 1


def _powers_of(plan: Plan) -> set[int]:
    match plan:
        case Leaf(coeffs):
            return {i for i, c in enumerate(coeffs) if c != 0.0 and i >= 2}
        case Split(low, power, high):
            return _powers_of(low) | _powers_of(high) | {power}


def plan_depth(plan: Plan) -> int:
    match plan:
        case Leaf(coeffs):
            return max((_term_depth(i, c) for i, c in enumerate(coeffs)), default=0)
        case Split(low, power, high):
            if isinstance(high, Leaf) and _degree(high.coeffs) == 0:
                top = _term_depth(power, high.coeffs[0])
            else:
                top = max(power_depth(power), plan_depth(high)) + 1
            return max(plan_depth(low), top)


@cache
def _plan(coeffs: tuple[float, ...]) -> PolynomialPlan:
    d = _degree(coeffs)
    if d <= 1:
        leaf = Leaf(coeffs[: d + 1])
        return PolynomialPlan(leaf, plan_depth(leaf), 0, ())
    best: PolynomialPlan | None = None
    for budget in range(power_depth(d), power_depth(d) + 3):
        for log_baby in range(1, d.bit_length() + 1):
            built = _build(coeffs, budget, 1 << log_baby)
            if built is None:
                continue
            plan, giant = built
            powers = power_closure(_powers_of(plan))
            cand = PolynomialPlan(
                plan, plan_depth(plan), len(powers) + giant, tuple(sorted(powers))
            )
            if best is None or (cand.depth, cand.products) < (best.depth, best.products):
                best = cand
        if best is not None:
            return best
    raise AssertionError(f"no plan for a polynomial of degree {d}")  # unreachable (module doc)


def plan_polynomial(coeffs: Sequence[float]) -> PolynomialPlan:
    """The evaluation plan of sum coeffs[k] x^k with the least depth, then fewest products."""
    return _plan(tuple(float(c) for c in coeffs))


def power_products(k: int) -> int:
    """Ciphertext products of x^k by the power chain."""
    return len(power_closure({k}))
