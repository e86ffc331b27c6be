"""Noise and precision: a bound on the error of every revealed value that holds with a stated
failure probability (docs/precision.md derives it).

A CKKS ciphertext decrypts to scale·x + e. This analysis tracks the error / scale forward
through the program from each error source (Cheon-Kim-Kim-Song, ASIACRYPT 2017, Lemmas 1-3;
the canonical-embedding variances of Costache-Curtis-Hales-Murphy-Ogilvie-Player 2022), split
by its distribution, because the tails differ:

- class j (j = 0, 1, 2, ...): a sub-Gaussian error times the j-th power of the secret key's
  slot value s(ζ): encoding and rescale rounding (uniform: strictly sub-Gaussian), the
  Gaussian e0 and e1·s of a fresh encryption, the rounding r_j·s^j of a rescale of a
  degree-k ciphertext (j <= k), key-switch rounding and digit-times-key errors. Given the key,
  every class is sub-Gaussian; the key's slot values are bounded once, with probability
  1 - p/3: |s(ζ)|² <= T = (4n/3)·ln(12/p) (Hoeffding on its real and imaginary parts).
- class W: v·e of a fresh public-key encryption, the product of two independent
  sub-Gaussians (the encryption's ternary v and the key's error e): sub-exponential, bounded
  through its moment generating function, summed over independent encryptions.
- D: deterministic errors (a real constant rounded to its encoding scale), added linearly.

Slot variances (before division by the scale), as `NoiseModel` gives them (the simulator's
noisy mode draws Gaussian errors of the same total variance):
- encoding rounding: n/12 (class 0)
- fresh encryption (pk): n·sigma² (e0, class 0) + n·sigma²·2n/3 (e1·s, class 1) +
  n·sigma²·2n/3 (v·e, class W)
- rescale rounding of a degree-k ciphertext: n/12·(2n/3)^j in class j, j = 0..k
- key switch (hybrid): rounding n/12 (class 0) + n/12·2n/3 (class 1), digit times key error
  dnum·n·sigma²·n/12 (class 0: Gaussian given the digits)
Propagation: a sum adds the variances of each class; a product x·y adds |y|²Var(x) +
|x|²Var(y) (|x| the range bound, worst case) and the second-order Var(x)Var(y) (classes add:
s^i·s^j = s^(i+j)); sums of K terms multiply the variances by K.

The bound at failure probability p per value: t_G + t_W + D with t_G = sqrt(2·P·ln(6/p)), P
the sum over classes of Var_j·(T / (2n/3))^j (the class variances with E|s|^2j replaced by
T^j), t_W = 2·sigma_W·ln(6.93/p). `precision_bits` of an output is log2(range bound / error
bound): the correct bits relative to the largest value the output can take.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from compiler.analysis.ranges import magnitude, public_values, range_of, value_ranges
from compiler.analysis.security import ERROR_SIGMA
from compiler.dialects import ckks
from compiler.types import Interval, dim_bound

# The default failure probability of each revealed value's error bound (`--error-confidence`).
DEFAULT_FAILURE_LOG2 = -32.0


@dataclass(frozen=True)
class Error:
    """The error of a value in value units: variances per class j (sub-Gaussian times s^j),
    the variance of class W (products of two independent sub-Gaussians) and a deterministic
    bound D (module docstring)."""

    classes: tuple[float, ...] = ()
    w: float = 0.0
    d: float = 0.0

    @property
    def variance(self) -> float:
        """The total variance (the deterministic part as its square)."""
        return sum(self.classes) + self.w + self.d * self.d

    def __add__(self, other: Error) -> Error:
        n = max(len(self.classes), len(other.classes))
        a = self.classes + (0.0,) * (n - len(self.classes))
        b = other.classes + (0.0,) * (n - len(other.classes))
        return Error(tuple(x + y for x, y in zip(a, b, strict=True)), self.w + other.w,
                     self.d + other.d)  # fmt: skip

    def scaled(self, factor: float) -> Error:
        """The error of factor·x (variances times factor², D times |factor|)."""
        f2 = factor * factor
        return Error(tuple(_times(f2, v) for v in self.classes), _times(f2, self.w),
                     _times(abs(factor), self.d))  # fmt: skip

    def summed(self, count: float) -> Error:
        """The error of a sum of `count` values with independent random errors."""
        return Error(tuple(count * v for v in self.classes), count * self.w, count * self.d)

    def times_error(self, other: Error) -> Error:
        """The second-order error e_x·e_y of a product: classes add (s^i·s^j), W and D carry
        over as the larger class (a second-order term; docs/precision.md)."""
        n = len(self.classes) + len(other.classes)
        out = [0.0] * max(n - 1, 0)
        for i, a in enumerate(self.classes):
            for j, b in enumerate(other.classes):
                out[i + j] += _times(a, b)
        sa, sb = self.variance, other.variance
        w = _times(self.w, sb) + _times(other.w, sa) - _times(self.w, other.w)
        return Error(tuple(out), max(w, 0.0), _times(self.d, other.d))

    def per_scale(self, scale_bits: float) -> Error:
        """A source's slot variances (before division by the scale) in value units."""
        return Error(tuple(v * 2.0 ** (-2.0 * scale_bits) for v in self.classes),
                     self.w * 2.0 ** (-2.0 * scale_bits), self.d)  # fmt: skip

    def bound(self, n: float, failure: float) -> float:
        """|error| <= this with probability >= 1 - failure (module docstring)."""
        t_key = (4.0 * n / 3.0) * math.log(12.0 / failure)
        key_ratio = t_key / (2.0 * n / 3.0)
        proxy = sum(_times(v, key_ratio**j) for j, v in enumerate(self.classes))
        t_g = math.sqrt(2.0 * proxy * math.log(6.0 / failure)) if proxy else 0.0
        t_w = 2.0 * math.sqrt(self.w) * math.log(6.93 / failure) if self.w else 0.0
        return t_g + t_w + self.d


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
        return self.fresh_terms().variance

    def rescale(self, degree: int) -> float:
        return self.rescale_terms(degree).variance

    def key_switch(self) -> float:
        return self.key_switch_terms().variance

    # The sources split by class (module docstring).

    def encoding_terms(self) -> Error:
        return Error((self.encoding(),))

    def fresh_terms(self) -> Error:
        n = self.n
        gauss = n * ERROR_SIGMA**2
        return Error((gauss + self.encoding(), gauss * 2.0 * n / 3.0), gauss * 2.0 * n / 3.0)

    def rescale_terms(self, degree: int) -> Error:
        n = self.n
        return Error(tuple(n / 12.0 * (2.0 * n / 3.0) ** j for j in range(degree + 1)))

    def key_switch_terms(self) -> Error:
        n = self.n
        digits = self.dnum * n * ERROR_SIGMA**2 * n / 12.0
        return Error((n / 12.0 + digits, n / 12.0 * 2.0 * n / 3.0))


def value_errors(
    program: ckks.ProgramOp,
    bounds: Mapping[str, int],
    model: NoiseModel,
    ranges: Mapping[SSAValue, Interval] | None = None,
) -> dict[SSAValue, Error]:
    """The error (value units) of every ciphertext value (plaintexts: encoding error only)."""
    rng = ranges if ranges is not None else value_ranges(program, bounds)
    pub = public_values(program, bounds)
    err: dict[SSAValue, Error] = {}

    def scale_bits(v: SSAValue) -> float:
        ty = v.type
        assert isinstance(ty, ckks.CtType | ckks.PtType)
        return ty.scale_bits

    def prod(a: SSAValue, b: SSAValue) -> Error:
        ma, mb = magnitude(range_of(rng, a)), magnitude(range_of(rng, b))
        ea, eb = err[a], err[b]
        # |x + e_x| <= |x| + D_x: a deterministic error widens the factor it multiplies.
        return ea.scaled(mb + eb.d) + eb.scaled(ma + ea.d) + ea.times_error(eb)

    for op in program.block.ops:
        if not op.results or isinstance(op.results[0].type, ckks.PublicType):
            continue
        out = op.results[0]
        e: Error
        match op:
            case ckks.EncodeOp():
                e = model.encoding_terms().per_scale(scale_bits(out))
            case ckks.EncryptOp():
                e = err[op.input] + model.fresh_terms().per_scale(scale_bits(out))
            case ckks.AddOp() | ckks.SubOp():
                e = err[op.lhs] + err[op.rhs]
            case ckks.AddPlainOp():
                e = err[op.input] + err[op.plain]
            case ckks.MulOp():
                e = prod(op.lhs, op.rhs)
            case ckks.MulPlainOp():
                e = prod(op.input, op.plain)
            case ckks.DotOp():
                k = dim_bound(ckks.ct_type(op.lhs).dims[op.axis_value], dict(bounds))
                e = prod(op.lhs, op.rhs).summed(k)
            case ckks.ReduceOp():
                k = dim_bound(ckks.ct_type(op.input).dims[op.axis_value], dict(bounds))
                e = err[op.input].summed(k)
            case ckks.SumSlotsOp():
                src = ckks.ct_type(op.input)
                k = dim_bound(src.dims[-1], dict(bounds))
                steps = max(1, math.ceil(math.log2(max(2, k))))
                switch = model.key_switch_terms().per_scale(scale_bits(out)).summed(k * steps)
                e = err[op.input].summed(k) + switch
            case ckks.RotateOp() | ckks.RelinearizeOp():
                e = err[op.input] + model.key_switch_terms().per_scale(scale_bits(out))
            case ckks.UnpackComplexOp():
                # Re z = (z + z*)/2: the slot error's real part, plus the conjugation's
                # key-switch error (and a relinearization's first, above degree 1), both
                # at the input's scale, i.e. halved at the result's (twice the) scale.
                switches = 1 + (ckks.ct_type(op.input).degree_value > 1)
                switch = model.key_switch_terms().per_scale(scale_bits(op.input))
                e = err[op.input] + switch.summed(switches)
            case ckks.RescaleOp():
                degree = ckks.ct_type(op.input).degree_value
                e = err[op.input] + model.rescale_terms(degree).per_scale(scale_bits(out))
            case ckks.MulConstOp():
                c = magnitude(pub[op.value].interval)
                e = err[op.input].scaled(c)
                if not op.is_integer:
                    # The constant is rounded to an integer multiple of 2^-const_scale: by
                    # exactly that much when it is known (a scale-alignment lift, 1 at 2^k, is
                    # exact), else by at most half a unit: a deterministic error times |x|.
                    m = magnitude(range_of(rng, op.input)) + err[op.input].d
                    interval = pub[op.value].interval
                    if interval.lo == interval.hi and math.isfinite(interval.lo):
                        unit = 2.0**op.const_scale_bits
                        rounded = abs(round(interval.lo * unit) / unit - interval.lo)
                    else:
                        rounded = 0.5 * 2.0 ** (-op.const_scale_bits)
                    e = e + Error(d=_times(m, rounded))
            case ckks.NegateOp() | ckks.AddConstOp() | ckks.LevelDownOp():
                e = err[op.operands[0]]
            case ckks.BroadcastOp() | ckks.TransposeOp():
                e = err[op.input]
            case _:
                raise AssertionError(f"noise analysis does not handle {op.name}")
        err[out] = e
    return err


def error_variances(
    program: ckks.ProgramOp,
    bounds: Mapping[str, int],
    model: NoiseModel,
    ranges: Mapping[SSAValue, Interval] | None = None,
) -> dict[SSAValue, float]:
    """Total Var(error / scale) of every ciphertext value."""
    return {v: e.variance for v, e in value_errors(program, bounds, model, ranges).items()}


def _times(a: float, b: float) -> float:
    """a·b with 0·inf = 0: an unbounded range times an exact (error-free) value adds no error."""
    return 0.0 if a == 0.0 or b == 0.0 else a * b


@dataclass(frozen=True)
class OutputPrecision:
    """A revealed value's range bound, error standard deviation and error bound (at the
    failure probability the analysis was asked for)."""

    name: str
    bound: float
    sigma: float
    error: float = field(default=math.nan)

    @property
    def error_bound(self) -> float:
        return self.error if not math.isnan(self.error) else self.sigma

    @property
    def precision_bits(self) -> float:
        err = self.error_bound
        if err == 0.0:
            return math.inf
        if not math.isfinite(err) or math.isnan(err):
            return -math.inf  # an unbounded error: no precision (the plan is rejected)
        return math.log2(max(self.bound, 1e-300) / err)


def output_precision(
    program: ckks.ProgramOp,
    bounds: Mapping[str, int],
    model: NoiseModel,
    ranges: Mapping[SSAValue, Interval] | None = None,
    failure_log2: float = DEFAULT_FAILURE_LOG2,
) -> list[OutputPrecision]:
    """Range bound, error sigma and error bound (failure probability 2^failure_log2 per
    value) of every revealed value."""
    rng = ranges if ranges is not None else value_ranges(program, bounds)
    errors = value_errors(program, bounds, model, rng)
    failure = 2.0**failure_log2
    out = []
    for d in program.decrypts():
        e = errors[d.input]
        bound = _safe_bound(e, model.n, failure)
        out.append(
            OutputPrecision(
                d.sym_value, magnitude(range_of(rng, d.input)), math.sqrt(e.variance), bound
            )
        )
    return out


def _safe_bound(e: Error, n: float, failure: float) -> float:
    try:
        return e.bound(n, failure)
    except (OverflowError, ValueError):
        return math.inf
