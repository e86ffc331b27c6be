"""The precision promise at the sizes a run actually has (issue 19, "Precision as a contract").

A program is compiled for declared size bounds (`param N <= 10000`) and may run on smaller data.
Its error bound E (compiler/analysis/noise.py) holds for every size up to the bounds, but its
promise is relative to each output's range bound, and the range bound shrinks with the sizes:
`sum(x)` over 9 values of [10, 60] is at most 540, not 600,000, while E hardly changes, so an
output can keep far fewer bits relative to what it can be at the actual sizes than the report
promised at the declared ones. The generated program checks again when it decrypts (the sizes
are then known) and refuses to reveal an output below its promise unless the user overrides
it, which is stamped on the output (runtime/program/roles_impl.h, `decrypt`).

What the program gets, per revealed value that is not exact:
- the promised bits P (the user's target, `--precision-bits` or that output's `--precision`),
- the error bound E at the declared bounds (it bounds the error at every smaller size),
- a table of lower bounds of the range bound: rows (corner, R), where R is the range analysis
  at the sizes `corner`, with every size parameter the ranges do not depend on at 1. The range
  analysis at bounds b covers every size <= b, so it grows with b: at actual sizes s, every row
  whose corner is <= s gives a lower bound of the range bound at s, and the program takes the
  largest. Then bits(s) >= log2(R / E) - (flooding cost when decrypt floods), which is checked
  against P.
The corners are a grid of powers of two (with 1 and the bound) over the size parameters some
output's range depends on, coarsened to at most GRID_POINTS analyses. An output that keeps its
promise even at the smallest sizes (every parameter 1) gets no table: nothing to check.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from compiler.analysis.noise import NoiseModel, error_failure_log2, output_precision
from compiler.analysis.packed import is_coefficient_program
from compiler.analysis.ranges import magnitude, range_of, value_ranges
from compiler.dialects import ckks

# At most this many range analyses (each a pass over the program, a few ms) for the grid.
GRID_POINTS = 256
# Rounding in the bookkeeping (check-precision's slack).
SLACK_BITS = 0.01


@dataclass(frozen=True)
class Promise:
    """The precision a compilation promised: `targets` (output name -> bits, from
    `--precision`) and `default_bits` (`--precision-bits`) for the others, relative to each
    output's range bound."""

    targets: Mapping[str, float]
    default_bits: float

    def of(self, name: str) -> float:
        return self.targets.get(name, self.default_bits)


@dataclass(frozen=True)
class OutputCheck:
    """What decrypt needs to re-check one revealed value's promise at the actual sizes."""

    name: str
    promised_bits: float
    error_bound: float
    rows: tuple[tuple[tuple[tuple[str, int], ...], float], ...]  # ((param, at least), ...), R

    def range_at(self, sizes: Mapping[str, int]) -> float:
        """The largest range lower bound whose corner the sizes reach (0: none)."""
        return max(
            (r for corner, r in self.rows if all(sizes[p] >= v for p, v in corner)), default=0.0
        )

    def bits_at(self, sizes: Mapping[str, int], flooding_bits: float) -> float:
        """The bits relative to the range bound the program can stand behind at `sizes`."""
        r = self.range_at(sizes)
        if r <= 0.0:
            return -math.inf
        if self.error_bound <= 0.0:
            return math.inf
        return math.log2(r) - math.log2(self.error_bound) - flooding_bits


def _grid_values(bound: int) -> list[int]:
    values = {1, bound}
    k = 1
    while k < bound:
        values.add(k)
        k *= 2
    return sorted(values)


def _thin(values: list[int]) -> list[int]:
    """Every other value, keeping the first (1) and the last (the bound)."""
    kept = values[::2]
    return kept if kept[-1] == values[-1] else [*kept, values[-1]]


def output_checks(
    program: ckks.ProgramOp, promise: Promise, flooding_bits: float
) -> list[OutputCheck]:
    """The re-check data of every revealed value whose promise, after `flooding_bits` of
    noise flooding (decrypt's, whether or not the compilation budgeted it: decrypt may flood),
    fails at the smallest sizes."""
    if is_coefficient_program(program):
        return []  # exact integer counts: no error to promise about
    params = program.parameters()
    if params is None:
        return []
    bounds = {k: int(v) for k, v in program.params().items()}
    model = NoiseModel(params.log_n, max(params.dnum, 1))
    decs = {d.sym_value: d for d in program.decrypts()}
    at_bounds = output_precision(program, bounds, model, None, error_failure_log2(program))
    need = {p.name: promise.of(p.name) + flooding_bits for p in at_bounds}
    errors = {p.name: p.error_bound for p in at_bounds}

    analysed: dict[tuple[tuple[str, int], ...], dict[str, float]] = {}

    def ranges_at(sizes: Mapping[str, int]) -> dict[str, float]:
        """The revealed values' range bounds at `sizes` (each point analysed once: the
        smallest and the declared sizes are grid points too)."""
        key = tuple(sorted(sizes.items()))
        if key not in analysed:
            rng = value_ranges(program, sizes)
            analysed[key] = {n: magnitude(range_of(rng, d.input)) for n, d in decs.items()}
        return analysed[key]

    def holds(name: str, r: float) -> bool:
        e = errors[name]
        if e <= 0.0:
            return True
        if not (math.isfinite(e) and r > 0.0):
            return False
        return math.log2(r) - math.log2(e) >= need[name] - SLACK_BITS

    smallest = ranges_at(dict.fromkeys(bounds, 1))
    checked = [p.name for p in at_bounds if not holds(p.name, smallest[p.name])]
    if not checked:
        return []
    full = ranges_at(bounds)
    relevant = [
        p
        for p in bounds
        if bounds[p] > 1 and any(ranges_at({**bounds, p: 1})[n] != full[n] for n in checked)
    ]
    axes = {p: _grid_values(bounds[p]) for p in relevant}
    while math.prod(len(v) for v in axes.values()) > GRID_POINTS:
        widest = max(axes, key=lambda p: len(axes[p]))
        axes[widest] = _thin(axes[widest])
    rows: dict[str, list[tuple[tuple[tuple[str, int], ...], float]]] = {n: [] for n in checked}
    for point in itertools.product(*axes.values()):
        corner = tuple(zip(axes, point, strict=True))
        at = ranges_at({**dict.fromkeys(bounds, 1), **dict(corner)})
        for n in checked:
            rows[n].append((corner, at[n]))
    return [OutputCheck(n, promise.of(n), errors[n], tuple(_undominated(rows[n]))) for n in checked]


def _undominated(
    rows: list[tuple[tuple[tuple[str, int], ...], float]],
) -> list[tuple[tuple[tuple[str, int], ...], float]]:
    """Drop every row another row beats: a corner no larger with a range no smaller."""

    def le(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> bool:
        return all(x <= y for (_, x), (_, y) in zip(a, b, strict=True))

    return [
        (c, r)
        for c, r in rows
        if not any(le(c2, c) and r2 >= r and (c2, r2) != (c, r) for c2, r2 in rows)
    ]
