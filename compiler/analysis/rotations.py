"""Rotation sums in stages: the plan of each `ckks.sum_slots` and the rotation keys it needs.

A slot sum over s = 2^L slots adds the rotations of x by every offset 0 .. s - 1. Written as
stages with radices r_1 .. r_k (product s) and strides m_1 = 1, m_{i+1} = m_i r_i, stage i
replaces x by sum_{t < r_i} rot(x, t m_i) (baby steps, then giant steps: the baby-step
giant-step sum when k = 2). Each stage is doubly hoisted (Bossuat et al., Eurocrypt 2021,
section 4.2; runtime: `Evaluator::rotate_sum_hoisted`): one ModUp of x, then per rotation only
the key product (and the NTT-domain permutations), the products added over Q P, one ModDown.
Radix 2 throughout is the rotate-and-add tree (log2 s key switches, log2 s keys); a larger
radix trades keys (sum of r_i - 1, all offsets distinct) for time (fewer ModUp / ModDown NTTs).

The time of a plan comes from the cost model's key-switch parts (compiler/analysis/cost.py,
`hoisted_stage_seconds`). The plan chosen is the one with the FEWEST KEYS among those within
`TIME_TOLERANCE` of the fastest, and within a key-memory budget when one is given; the
rotate-and-add tree, which has the fewest keys of all, is what is left when the budget allows
nothing else, and a budget below even that is the user's error (`UserError` with the key size).
The noise model needs no change: every plan sums s - 1 key-switch errors (a stage's error is
multiplied by the later radices: sum_i (r_i - 1) prod_{j>i} r_j = s - 1), with fewer roundings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from compiler.analysis.cost import Units, hoisted_stage_seconds

# A plan within this fraction of the fastest plan's time counts as meeting the cost.
TIME_TOLERANCE = 0.10


@dataclass(frozen=True)
class SumPlan:
    radices: tuple[int, ...]
    seconds: float  # one slot sum of one ciphertext, at the level it was costed at

    @property
    def key_switches(self) -> int:
        """Rotations (key products): sum of r_i - 1."""
        return sum(r - 1 for r in self.radices)

    @property
    def decompositions(self) -> int:
        """ModUp/ModDown pairs: one per stage."""
        return len(self.radices)

    def offsets(self) -> list[int]:
        out: list[int] = []
        stride = 1
        for r in self.radices:
            out.extend(t * stride for t in range(1, r))
            stride *= r
        return out

    @property
    def keys(self) -> int:
        return len(self.offsets())

    def text(self) -> str:
        return " x ".join(str(r) for r in self.radices)


def plan_seconds(u: Units, limbs: int, special: int, dnum: int, radices: Sequence[int]) -> float:
    return sum(hoisted_stage_seconds(u, limbs, special, dnum, r) for r in radices)


def _partitions(total: int, smallest: int = 1) -> Iterator[tuple[int, ...]]:
    """Partitions of `total` into parts >= smallest, in non-decreasing order."""
    if total == 0:
        yield ()
        return
    for part in range(smallest, total + 1):
        for rest in _partitions(total - part, part):
            yield (part, *rest)


def candidate_radices(slots: int) -> list[tuple[int, ...]]:
    """Every staging of a power-of-two slot count into power-of-two radices (small radices
    first), the rotate-and-add tree first."""
    log = slots.bit_length() - 1
    if slots != 1 << log:
        raise ValueError(f"slot count {slots} is not a power of two")
    if log == 0:
        return [()]
    return [tuple(1 << e for e in p) for p in sorted(_partitions(log), key=len, reverse=True)]


def tree(slots: int) -> tuple[int, ...]:
    """The rotate-and-add tree: radix 2 throughout."""
    return (2,) * (slots.bit_length() - 1)


def choose(
    slots: int,
    seconds: dict[tuple[int, ...], float],
    allowed_keys: int | None = None,
) -> tuple[int, ...]:
    """The fewest-keys plan within TIME_TOLERANCE of the fastest (of those with at most
    `allowed_keys` rotation keys; ties: the faster). `seconds`: each candidate's time."""
    candidates = [
        r
        for r in candidate_radices(slots)
        if allowed_keys is None or sum(x - 1 for x in r) <= allowed_keys
    ]
    if not candidates:
        return tree(slots)
    fastest = min(seconds[r] for r in candidates)
    meeting = [r for r in candidates if seconds[r] <= (1 + TIME_TOLERANCE) * fastest]
    return min(meeting, key=lambda r: (sum(x - 1 for x in r), seconds[r]))


def log2_slots(slots: int) -> int:
    return int(math.log2(slots))
