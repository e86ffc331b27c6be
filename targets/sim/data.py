"""Random inputs within the declared domains, for simulation and tests.

Finite-set domains draw each value uniformly from the set; interval domains draw uniformly
from the interval. A genotype-like set {0, 1, 2} can instead follow Hardy-Weinberg
proportions with a per-column minor-allele frequency (`maf_range`), which gives data with the
column sums of real SNPs rather than uniform noise.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from compiler.dialects import ckks, he
from compiler.types import FiniteSet, Interval

Array = npt.NDArray[np.float64]


def random_inputs(
    program: ckks.ProgramOp | he.ProgramRule,
    sizes: Mapping[str, int],
    seed: int = 0,
    maf_range: tuple[float, float] | None = (0.05, 0.5),
) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    out: dict[str, Array] = {}
    for op in program.block.ops:
        # The owner inputs: declared sources and plain encodes (owner-side values are
        # computed from them).
        if isinstance(op, ckks.SourceOp | he.SourceRule):
            dims, dom = op.dims, op.domain_value
        elif isinstance(op, ckks.EncodeOp | he.EncodeRule) and op.expr_value is None:
            if op.digit_exprs:
                continue
            ty = op.result.type
            assert isinstance(ty, ckks.PtType | he.PtType)
            dims, dom = ty.dims, op.domain_value
        else:
            continue
        if op.sym_value in out:
            continue
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in dims)
        if isinstance(dom, FiniteSet):
            values = np.array(dom.values)
            if maf_range and tuple(dom.values) == (0.0, 1.0, 2.0) and len(shape) == 2:
                maf = rng.uniform(*maf_range, size=shape[1])
                out[op.sym_value] = rng.binomial(2, maf, size=shape).astype(np.float64)
            else:
                out[op.sym_value] = rng.choice(values, size=shape)
        elif isinstance(dom, Interval):
            out[op.sym_value] = rng.uniform(dom.lo, dom.hi, size=shape)
        else:
            out[op.sym_value] = rng.normal(size=shape)
    return out
