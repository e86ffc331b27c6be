"""Relational range analysis against the true extremes of every example (issue 19).

For each example the bound of every revealed value (compiler/analysis/ranges.py, from the
declared domains only) is compared with the largest magnitude the plaintext reference reaches
on adversarial data: every composition of row types at a small N (exhaustive: the outputs are
sums over rows, so they depend only on how many rows of each type there are, and each
column of a matrix input is a separate experiment), or the vertices of an interval domain
where an output is convex or multilinear in each input. The witnesses only ever find values
the program can produce, so "bound <= 2 x witness" implies "bound <= 2 x true extreme"; and
"bound >= witness" checks the bound is sound.

The compilation keeps every product on the server (no owner-side work, no packed counts):
packed counts have their own exact capacity analysis (compiler/analysis/packed.py).
lra.hec is left out: it does not compile yet (issue 19, fact 6, another part of the issue).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from compiler.analysis.ranges import evaluate_public, magnitude, value_ranges
from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.errors import UserError
from compiler.types import FiniteSet, Interval
from driver.pipeline import Compilation, Options, compile_file
from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import evaluate

Array = npt.NDArray[np.float64]
Data = dict[str, Array]

N_ROWS = 6


def compile_for(path: str, sizes: dict[str, int]) -> Compilation:
    """Compile with the sizes the program has (those of `sizes` it declares)."""
    checked = check(parse_file(path))
    mine = {k: v for k, v in sizes.items() if k in checked.params}
    # The ranges do not depend on the precision; a low target keeps the parameter search short
    # (and clear of the scale-alignment shortfall check-precision refuses, issue 19 fact 4).
    for bits in (12.0, 6.0, 3.0):
        opts = Options(
            sizes=Sizes.of(mine), owner_side=False, packed_counts=False, precision_bits=bits
        )
        try:
            return compile_file(path, opts)
        except UserError:
            if bits == 3.0:
                raise
    raise AssertionError("unreachable")


def bounds_of(comp: Compilation) -> dict[str, float]:
    """Largest magnitude of each revealed value the range analysis allows (the decrypted
    value times its public factor, as the reference reveals it)."""
    program = comp.program
    ranges = value_ranges(program, program.params())
    public = evaluate_public(program, comp.sizes)
    out: dict[str, float] = {}
    for d in program.decrypts():
        factor = abs(public[d.factor]) if d.factor is not None else 1.0
        out[d.sym_value] = magnitude(ranges[d.input]) * factor
    return out


def values_of(domain: FiniteSet | Interval | None) -> list[float]:
    """A finite domain's values, or an interval's two ends (its vertices)."""
    assert domain is not None
    return list(domain.values) if isinstance(domain, FiniteSet) else [domain.lo, domain.hi]


def multisets(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every way of putting n rows into k types (counts per type)."""
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        ends = (-1, *bars, n + k - 1)
        yield tuple(ends[i + 1] - ends[i] - 1 for i in range(k))


def row_type_witnesses(comp: Compilation, n: int) -> Iterator[tuple[dict[str, int], Data]]:
    """Every composition of N = n rows: the [N] inputs take each multiset of their joint
    values; within each group of rows sharing them, every multiset of the [N, M] inputs'
    joint values fills one column (M = number of columns)."""
    inputs = [op for op in comp.stat_program.server_ops() if isinstance(op, stat.InputOp)]
    vectors = [op for op in inputs if len(stat.tensor_type(op.result).dims) == 1]
    matrices = [op for op in inputs if len(stat.tensor_type(op.result).dims) == 2]
    assert len(vectors) + len(matrices) == len(inputs)
    vtypes = list(itertools.product(*(values_of(op.domain_value) for op in vectors)))
    mtypes = list(itertools.product(*(values_of(op.domain_value) for op in matrices)))
    for vcounts in multisets(n, len(vtypes)):
        rows = [t for t, c in zip(vtypes, vcounts, strict=True) for _ in range(c)]
        groups = [c for c in vcounts if c]
        columns = []
        for per_group in itertools.product(*(list(multisets(g, len(mtypes))) for g in groups)):
            col = [t for counts in per_group for t, c in zip(mtypes, counts, strict=True)
                   for _ in range(c)]  # fmt: skip
            columns.append(col)
        data: Data = {}
        for i, op in enumerate(vectors):
            data[op.sym_value] = np.array([r[i] for r in rows], dtype=np.float64)
        for j, op in enumerate(matrices):
            data[op.sym_value] = np.array([[c[r][j] for c in columns] for r in range(n)])
        yield {"N": n, "M": len(columns)}, data


def vertex_witnesses(comp: Compilation, sizes: dict[str, int]) -> Iterator[Data]:
    """Every input at its low or its high end, jointly (2^inputs data sets)."""
    inputs = [op for op in comp.stat_program.server_ops() if isinstance(op, stat.InputOp)]
    for ends in itertools.product((0, -1), repeat=len(inputs)):
        data: Data = {}
        for op, e in zip(inputs, ends, strict=True):
            shape = tuple(d if isinstance(d, int) else sizes[d]
                          for d in stat.tensor_type(op.result).dims)  # fmt: skip
            data[op.sym_value] = np.full(shape, values_of(op.domain_value)[e])
        yield data


def meancov_witnesses(n: int) -> Iterator[Data]:
    """meancov: each entry of the scatter matrix is bilinear (off the diagonal) or convex (on
    it) in every X_id, so its extremes are at X in {-10, 10}: every composition of the four
    row types of two columns."""
    types = [(-10.0, -10.0), (-10.0, 10.0), (10.0, -10.0), (10.0, 10.0)]
    for counts in multisets(n, len(types)):
        rows = [t for t, c in zip(types, counts, strict=True) for _ in range(c)]
        yield {"X": np.array(rows)}


def grs_witnesses() -> Iterator[Data]:
    """grs: the score is linear in a, b and c, so every vertex of the weights, with every
    genotype row (0, 1, 2)^2 of two variants at once."""
    rows = np.array(list(itertools.product((0.0, 1.0, 2.0), repeat=2)))
    for a, b in itertools.product(itertools.product((-1.0, 1.0), repeat=2), repeat=2):
        for c in (-10.0, 10.0):
            yield {"G": rows, "a": np.array(a), "b": np.array(b), "c": np.array(c)}


def true_extremes(
    comp: Compilation, witnesses: Iterator[tuple[dict[str, int], Data]]
) -> dict[str, float]:
    best: dict[str, float] = {}
    for sizes, data in witnesses:
        result = evaluate(comp.checked, sizes, data)
        for name, value in result.revealed.items():
            best[name] = max(best.get(name, 0.0), float(np.max(np.abs(value))))
    return best


def _fixed(sizes: dict[str, int], data: Iterator[Data]) -> Iterator[tuple[dict[str, int], Data]]:
    for d in data:
        yield sizes, d


# Programs whose outputs are products of sums over the rows (the row-type compositions find
# their extremes) and programs of plain sums (every row at a vertex is extreme).
ROW_TYPE_EXAMPLES = [
    "examples/gwas/chisq_numerators.hec",
    "examples/gwas/chisq_missing_numerators.hec",
    "examples/stats/chisq_numerators.hec",
    "examples/gwas/chisq.hec",
    "examples/gwas/chisq_alleles.hec",
    "examples/gwas/chisq_missing.hec",
]
VERTEX_EXAMPLES = [
    "examples/gwas/qc.hec",
    "examples/gwas/linear.hec",
    "examples/stats/meancov_int.hec",
]


# Outputs whose bound stays looser than 2x (products of three or four correlated sums whose
# factors the branch and bound does not all split), with the ratio measured at N = 6: a
# ceiling, so that a regression shows. TODO(#19): tighten (split the per-SNP totals too).
LOOSE = {
    ("chisq_missing_numerators", "chi2_num"): 2.4,
    ("chisq_missing_numerators", "chi2_den"): 3.3,
}


def _check(bounds: dict[str, float], extremes: dict[str, float], program: str = "") -> None:
    assert set(bounds) == set(extremes)
    for name, bound in bounds.items():
        true = extremes[name]
        ceiling = LOOSE.get((program, name), 2.0)
        assert bound >= true * (1 - 1e-9), f"{name}: bound {bound:g} below a value {true:g}"
        assert bound <= ceiling * true, (
            f"{name}: bound {bound:g} > {ceiling} x true extreme {true:g}"
        )


@pytest.mark.parametrize("path", ROW_TYPE_EXAMPLES)
def test_bounds_within_twice_the_true_extreme_of_products_of_sums(path: str) -> None:
    comp = compile_for(path, {"N": N_ROWS, "M": 64})
    name = comp.program.sym_name.data
    _check(bounds_of(comp), true_extremes(comp, row_type_witnesses(comp, N_ROWS)), name)


@pytest.mark.parametrize("path", VERTEX_EXAMPLES)
def test_bounds_within_twice_the_true_extreme_of_sums(path: str) -> None:
    comp = compile_for(path, {"N": N_ROWS, "M": 4, "D": 3})
    sizes = dict(comp.sizes)
    _check(bounds_of(comp), true_extremes(comp, _fixed(sizes, vertex_witnesses(comp, sizes))))


def test_bounds_within_twice_the_true_extreme_of_meancov() -> None:
    comp = compile_for("examples/stats/meancov.hec", {"N": N_ROWS, "D": 2})
    extremes = true_extremes(comp, _fixed({"N": N_ROWS, "D": 2}, meancov_witnesses(N_ROWS)))
    _check(bounds_of(comp), extremes)


def test_bounds_within_twice_the_true_extreme_of_grs() -> None:
    comp = compile_for("examples/stats/grs.hec", {"N": 9, "M": 2})
    extremes = true_extremes(comp, _fixed({"N": 9, "M": 2}, grs_witnesses()))
    _check(bounds_of(comp), extremes)
