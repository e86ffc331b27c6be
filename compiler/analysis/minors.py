"""Division-free, depth-minimal determinant and adjugate of a small matrix on ciphertexts.

Both are computed by the generalized Laplace expansion along a balanced split of the rows
(Laplace 1772; e.g. Muir, "A Treatise on the Theory of Determinants", §§ 130-135): for an
r x r minor with rows R = T u B (T the first ceil(r/2) rows, B the rest) and columns C,

    det A[R, C] = sum over S subset of C, |S| = |T| of
                  (-1)^(sum of the positions of T and S in R and C) det A[T, S] det A[B, C \\ S].

Each minor is one sum of products of two smaller minors, so a minor of size r is reached in
ceil(log2 r) multiplicative levels: depth(1) = 0 and depth(r) = 1 + depth(ceil(r / 2)). The
degree of det(A) is k, and a product of depth d has degree at most 2^d, so

    depth(det, k x k) = ceil(log2 k)          (k >= 1)
    depth(adj, k x k) = ceil(log2 (k - 1))    (k >= 2; adj of a 2 x 2 is a signed permutation)

are the least any circuit can reach: the expansion is depth-minimal for every k. Only the
integer signs +-1 appear (no division, no other constant), so it is exact in BFV and costs no
level for constants in CKKS. Minors are shared between the expansions that need them (one
table per size), which keeps the products few for k <= 8 (`MinorPlan.products`).

The plan is arrays, not scalars: stage r holds every needed r x r minor as one replicated
array [count]; it is `dot(gather(top), gather(bottom), axis 1)` over arrays [count, terms]
gathered (with the signs as negations) from the stage of size ceil(r/2) and floor(r/2)
(size 1: the matrix itself, flattened in C order). Faddeev-LeVerrier and Berkowitz reach
depth ~k and need the constants 1/j (or k!), which is why they are not used here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

Minor = tuple[tuple[int, ...], tuple[int, ...]]  # (rows, columns), each increasing


@dataclass(frozen=True)
class Stage:
    """All needed minors of one size r: minor m is sum_t sign * top[m, t] * bottom[m, t]."""

    size: int
    top_size: int
    bottom_size: int
    count: int
    terms: int
    top_indices: tuple[int, ...]  # [count * terms], into the top_size stage (C order)
    top_negate: tuple[bool, ...]
    bottom_indices: tuple[int, ...]  # [count * terms], into the bottom_size stage


@dataclass(frozen=True)
class MinorPlan:
    """The stages (increasing size) and the gather that forms the result from the stage
    `result_size` (the matrix itself when it is 1)."""

    k: int
    stages: tuple[Stage, ...]
    result_size: int
    result_indices: tuple[int, ...]
    result_negate: tuple[bool, ...]

    @property
    def depth(self) -> int:
        return depth_of(self.result_size)

    @property
    def products(self) -> int:
        return sum(s.count * s.terms for s in self.stages)


def depth_of(size: int) -> int:
    """Multiplicative depth of an r x r minor by the balanced expansion: ceil(log2 r)."""
    return 0 if size <= 1 else math.ceil(math.log2(size))


def det_depth(k: int) -> int:
    return depth_of(k)


def adj_depth(k: int) -> int:
    return depth_of(k - 1)


class _Builder:
    def __init__(self, k: int):
        self.k = k
        self.index: dict[int, dict[Minor, int]] = {}

    def need(self, rows: tuple[int, ...], cols: tuple[int, ...]) -> None:
        r = len(rows)
        if r == 1:
            return
        table = self.index.setdefault(r, {})
        if (rows, cols) in table:
            return
        table[(rows, cols)] = len(table)
        half = (r + 1) // 2
        top, bottom = rows[:half], rows[half:]
        for chosen in combinations(cols, half):
            rest = tuple(c for c in cols if c not in chosen)
            self.need(top, chosen)
            self.need(bottom, rest)

    def where(self, rows: tuple[int, ...], cols: tuple[int, ...]) -> int:
        """The position of a minor in its stage's array (size 1: the matrix, C order)."""
        if len(rows) == 1:
            return rows[0] * self.k + cols[0]
        return self.index[len(rows)][(rows, cols)]

    def stages(self) -> tuple[Stage, ...]:
        out: list[Stage] = []
        for r in sorted(self.index):
            half = (r + 1) // 2
            table = self.index[r]
            top_i: list[int] = []
            top_n: list[bool] = []
            bot_i: list[int] = []
            terms = math.comb(r, half)
            # The row positions of T in R are 0..half-1.
            row_parity = half * (half - 1) // 2
            for rows, cols in sorted(table, key=table.__getitem__):
                top, bottom = rows[:half], rows[half:]
                for positions in combinations(range(r), half):
                    chosen = tuple(cols[p] for p in positions)
                    rest = tuple(c for c in cols if c not in chosen)
                    top_i.append(self.where(top, chosen))
                    top_n.append((row_parity + sum(positions)) % 2 == 1)
                    bot_i.append(self.where(bottom, rest))
            out.append(
                Stage(
                    r, half, r - half, len(table), terms, tuple(top_i), tuple(top_n), tuple(bot_i)
                )
            )
        return tuple(out)


def det_plan(k: int) -> MinorPlan:
    """det(A) for a k x k matrix: the one k x k minor."""
    b = _Builder(k)
    every = tuple(range(k))
    b.need(every, every)
    return MinorPlan(k, b.stages(), k, (b.where(every, every),), (False,))


def adj_plan(k: int) -> MinorPlan:
    """adj(A)[j, i] = (-1)^(i + j) det(A without row i and column j), k >= 2."""
    if k < 2:
        raise ValueError("the adjugate of a 1 x 1 matrix is the constant 1")
    b = _Builder(k)

    def cofactor(i: int, j: int) -> Minor:
        return tuple(x for x in range(k) if x != i), tuple(x for x in range(k) if x != j)

    for i in range(k):
        for j in range(k):
            b.need(*cofactor(i, j))
    indices: list[int] = []
    negate: list[bool] = []
    for row in range(k):  # result element (row, col) = cofactor (col, row)
        for col in range(k):
            indices.append(b.where(*cofactor(col, row)))
            negate.append((row + col) % 2 == 1)
    return MinorPlan(k, b.stages(), k - 1, tuple(indices), tuple(negate))


def evaluate(plan: MinorPlan, a: list[list[float]]) -> list[float]:
    """The plan run on plain numbers (flat, C order): the reference its tests compare with."""
    flat = [float(x) for row in a for x in row]
    tables: dict[int, list[float]] = {1: flat}
    for s in plan.stages:
        top, bottom = tables[s.top_size], tables[s.bottom_size]
        values: list[float] = []
        for m in range(s.count):
            total = 0.0
            for t in range(s.terms):
                e = m * s.terms + t
                x = top[s.top_indices[e]] * bottom[s.bottom_indices[e]]
                total += -x if s.top_negate[e] else x
            values.append(total)
        tables[s.size] = values
    src = tables[plan.result_size]
    return [
        -src[i] if n else src[i]
        for i, n in zip(plan.result_indices, plan.result_negate, strict=True)
    ]
