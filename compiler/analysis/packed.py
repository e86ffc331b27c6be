"""Decoding bound of packed counts (the `coeff` layout): what a program of additions needs.

The coordinator decrypts m = Delta * V + e per coefficient, e the sum over the rows of fresh
public-key encryption errors. One owner's error per coefficient is e_0 + u e + e_1 s (u, s
ternary, e, e_0, e_1 discrete Gaussians, sigma = 3.2): variance sigma^2 (1 + 4n/3), a sum of
about 4n/3 independent products, so very nearly Gaussian (no canonical embedding multiplies it,
unlike a slot's error); summed over R rows, sigma_R = sigma sqrt((1 + 4n/3) R). Rounding
(m + Delta/2) / Delta recovers V exactly when |e| < Delta/2, which fails with probability below
2^FAILURE_LOG2 per coefficient when Delta/2 >= z sigma_R, z the two-sided Gaussian quantile.
"""

from __future__ import annotations

import math

from scipy import stats

from compiler.analysis.security import ERROR_SIGMA
from compiler.dialects import ckks

# Failure probability per decoded coefficient (the rounding that makes the counts exact).
FAILURE_LOG2 = -32.0


def is_coefficient_program(program: ckks.ProgramOp) -> bool:
    return any(
        ckks.pt_type(e.result).layout_name == ckks.COEFF
        for e in program.block.ops
        if isinstance(e, ckks.EncodeOp)
    )


def coeff_encodes(program: ckks.ProgramOp) -> list[ckks.EncodeOp]:
    return [
        e
        for e in program.block.ops
        if isinstance(e, ckks.EncodeOp) and ckks.pt_type(e.result).layout_name == ckks.COEFF
    ]


def fresh_coefficient_sigma(log_n: int) -> float:
    """Standard deviation of one fresh public-key encryption's error in one coefficient."""
    return ERROR_SIGMA * math.sqrt(1.0 + 4.0 * (1 << log_n) / 3.0)


def decode_bound_bits(log_n: int, rows: int) -> int:
    """log2 Delta: the smallest power of two with Delta / 2 >= z sigma_rows."""
    z = float(stats.norm.isf(2.0**FAILURE_LOG2 / 2.0))
    sigma = fresh_coefficient_sigma(log_n) * math.sqrt(max(rows, 1))
    return math.ceil(math.log2(2.0 * z * sigma))
