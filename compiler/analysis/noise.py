"""Noise and precision: the variance of the error of every ciphertext value, in value units.

A CKKS ciphertext decrypts to scale·x + e; this analysis tracks Var(e / scale) forward
through the program from the analytic magnitudes of each error source (Cheon-Kim-Kim-Song,
"Homomorphic encryption for arithmetic of approximate numbers", ASIACRYPT 2017, Lemmas 1-3,
and the average-case canonical-embedding heuristic of Costache-Curtis-Hales-Murphy-Ogilvie-
Player, "On the precision loss in approximate homomorphic encryption", 2022): a polynomial
with independent coefficients of variance v has slots of variance n·v; a ternary secret has
coefficients of variance 2/3, so s^j has coefficients of variance about (2n/3)^j / n.

Sources (slot variances before division by the scale):
- encoding rounding:      n/12
- fresh encryption (pk):  n·sigma²·(1 + 4n/3)   (v·e + e0 + e1·s)
- rescale rounding of a degree-k ciphertext: n/12 · sum_{j=0..k} (2n/3)^j
- key switch (hybrid, special primes P >= each digit): rounding n/12·(1 + 2n/3) plus
  dnum·n·sigma²·n/12 (the digit-times-key error divided by P)
Propagation: add sums variances; a product x·y adds |y|²Var(x) + |x|²Var(y) + Var(x)Var(y)
with |x| the range bound (worst case); sums of K terms multiply the variance by K.

`precision_bits` of an output is log2(range bound / (6·sigma)): the number of correct bits
relative to the largest value the output can take, with a 6-sigma margin;
`flooded_precision_bits` what is left after the decrypt role's noise flooding (flooding.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.ir import SSAValue

from compiler.analysis.flooding import DEFAULT_STATISTICAL_BITS, flooding_cost_bits
from compiler.analysis.ranges import magnitude, public_values, range_of, value_ranges
from compiler.analysis.security import ERROR_SIGMA
from compiler.dialects import ckks
from compiler.types import Interval, dim_bound

SIGMAS = 6.0


@dataclass(frozen=True)
class NoiseModel:
    """Slot variances (before division by the scale) of each error source for ring size n."""

    log_n: int
    dnum: int = 1

    @property
    def n(self) -> float:
        return float(1 << self.log_n)

    def encoding(self) -> float:
        return self.n / 12.0

    def fresh(self) -> float:
        n = self.n
        return n * ERROR_SIGMA**2 * (1.0 + 4.0 * n / 3.0) + self.encoding()

    def rescale(self, degree: int) -> float:
        n = self.n
        return n / 12.0 * sum((2.0 * n / 3.0) ** j for j in range(degree + 1))

    def key_switch(self) -> float:
        n = self.n
        return n / 12.0 * (1.0 + 2.0 * n / 3.0) + self.dnum * n * ERROR_SIGMA**2 * n / 12.0


def error_variances(
    program: ckks.ProgramOp,
    bounds: Mapping[str, int],
    model: NoiseModel,
    ranges: Mapping[SSAValue, Interval] | None = None,
) -> dict[SSAValue, float]:
    """Var(error / scale) of every ciphertext value (plaintexts: encoding error only)."""
    rng = ranges if ranges is not None else value_ranges(program, bounds)
    pub = public_values(program, bounds)
    var: dict[SSAValue, float] = {}

    def per_scale_sq(v: SSAValue) -> float:
        """1 / scale(v)^2, as a negative power of two: a scale plan the search rejects may
        have scales beyond 2^1023, where 1/scale^2 underflows to 0 but scale^2 overflows."""
        ty = v.type
        assert isinstance(ty, ckks.CtType | ckks.PtType)
        return 2.0 ** (-2.0 * ty.scale_bits)

    def prod(a: SSAValue, b: SSAValue) -> float:
        ma, mb = magnitude(range_of(rng, a)), magnitude(range_of(rng, b))
        return _times(mb * mb, var[a]) + _times(ma * ma, var[b]) + var[a] * var[b]

    for op in program.block.ops:
        if not op.results or isinstance(op.results[0].type, ckks.PublicType):
            continue
        out = op.results[0]
        match op:
            case ckks.EncodeOp():
                v = model.encoding() * per_scale_sq(out)
            case ckks.EncryptOp():
                v = var[op.input] + model.fresh() * per_scale_sq(out)
            case ckks.AddOp() | ckks.SubOp():
                v = var[op.lhs] + var[op.rhs]
            case ckks.AddPlainOp():
                v = var[op.input] + var[op.plain]
            case ckks.MulOp():
                v = prod(op.lhs, op.rhs)
            case ckks.MulPlainOp():
                v = prod(op.input, op.plain)
            case ckks.DotOp():
                k = dim_bound(ckks.ct_type(op.lhs).dims[op.axis_value], dict(bounds))
                v = k * prod(op.lhs, op.rhs)
            case ckks.ReduceOp():
                k = dim_bound(ckks.ct_type(op.input).dims[op.axis_value], dict(bounds))
                v = k * var[op.input]
            case ckks.SumSlotsOp():
                src = ckks.ct_type(op.input)
                k = dim_bound(src.dims[-1], dict(bounds))
                steps = max(1, math.ceil(math.log2(max(2, k))))
                v = k * var[op.input] + k * model.key_switch() * per_scale_sq(out) * steps
            case ckks.RotateOp() | ckks.RelinearizeOp():
                v = var[op.input] + model.key_switch() * per_scale_sq(out)
            case ckks.UnpackComplexOp():
                # Re z = (z + z*)/2: the slot error's real part, plus the conjugation's
                # key-switch error (and a relinearization's first, above degree 1), both
                # at the input's scale, i.e. halved at the result's (twice the) scale.
                switches = 1 + (ckks.ct_type(op.input).degree_value > 1)
                v = var[op.input] + switches * model.key_switch() * per_scale_sq(op.input)
            case ckks.RescaleOp():
                degree = ckks.ct_type(op.input).degree_value
                v = var[op.input] + model.rescale(degree) * per_scale_sq(out)
            case ckks.MulConstOp():
                c = magnitude(pub[op.value].interval)
                v = _times(c * c, var[op.input])
                if not op.is_integer:
                    # The constant is rounded to an integer multiple of 1/const_scale: by
                    # exactly that much when it is known (a scale-alignment lift, 1 at 2^k, is
                    # exact; computed on the exact scale, which may be far beyond 2^1023),
                    # else by a uniform error of variance 4^-const_scale / 12.
                    m = magnitude(range_of(rng, op.input))
                    interval = pub[op.value].interval
                    if interval.lo == interval.hi and math.isfinite(interval.lo):
                        err = op.const_scale.rounding_error(interval.lo)
                        v += _times(m * m, err * err)
                    else:
                        v += _times(m * m / 12.0, 4.0 ** (-op.const_scale_bits))
            case ckks.NegateOp() | ckks.AddConstOp() | ckks.LevelDownOp():
                v = var[op.operands[0]]
            case ckks.BroadcastOp() | ckks.TransposeOp():
                v = var[op.input]
            case _:
                raise AssertionError(f"noise analysis does not handle {op.name}")
        var[out] = v
    return var


def _times(a: float, b: float) -> float:
    """a·b with 0·inf = 0: an unbounded range times an exact (error-free) value adds no error."""
    return 0.0 if a == 0.0 or b == 0.0 else a * b


@dataclass(frozen=True)
class OutputPrecision:
    name: str
    bound: float
    sigma: float

    @property
    def precision_bits(self) -> float:
        if self.sigma == 0.0:
            return math.inf
        if not math.isfinite(self.sigma):
            return -math.inf  # an unbounded error: no precision (the plan is rejected)
        return math.log2(max(self.bound, 1e-300) / (SIGMAS * self.sigma))

    def flooded_precision_bits(self, statistical_bits: float = DEFAULT_STATISTICAL_BITS) -> float:
        """The precision left after the decrypt role's noise flooding (flooding.py)."""
        return self.precision_bits - flooding_cost_bits(statistical_bits)


def output_precision(
    program: ckks.ProgramOp,
    bounds: Mapping[str, int],
    model: NoiseModel,
    ranges: Mapping[SSAValue, Interval] | None = None,
) -> list[OutputPrecision]:
    rng = ranges if ranges is not None else value_ranges(program, bounds)
    var = error_variances(program, bounds, model, rng)
    return [
        OutputPrecision(d.sym_value, magnitude(range_of(rng, d.input)), math.sqrt(var[d.input]))
        for d in program.decrypts()
    ]
