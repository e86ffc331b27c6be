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
  every class is sub-Gaussian; the key's slot value is bounded with probability 1 - p/3:
  |s(ζ)|² <= T, T / E|s|² = r with e·r·exp(-r) = p/3 (`key_slot_ratio`: r = 27.6 at 2^-32).
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
T^j), t_W = sigma_W·`product_tail(p/3, K)` (26.1 at 2^-32 for one product, the Gaussian 6.9
for K = 5000 independent ones). `precision_bits` of an output is log2(range bound / error
bound): the correct bits relative to the largest value the output can take;
`flooded_precision_bits` what is left after the decrypt role's noise flooding (flooding.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import SSAValue

from compiler.analysis.flooding import DEFAULT_STATISTICAL_BITS, flooding_cost_bits
from compiler.analysis.ranges import magnitude, public_values, range_of, value_ranges
from compiler.analysis.security import ERROR_SIGMA
from compiler.dialects import ckks, he
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
    w_max: float = 0.0  # the variance of class W's largest independent term

    @property
    def variance(self) -> float:
        """The total variance (the deterministic part as its square)."""
        return sum(self.classes) + self.w + self.d * self.d

    def __add__(self, other: Error) -> Error:
        n = max(len(self.classes), len(other.classes))
        a = self.classes + (0.0,) * (n - len(self.classes))
        b = other.classes + (0.0,) * (n - len(other.classes))
        return Error(tuple(x + y for x, y in zip(a, b, strict=True)), self.w + other.w,
                     self.d + other.d, max(self.w_max, other.w_max))  # fmt: skip

    def scaled(self, factor: float) -> Error:
        """The error of factor·x (variances times factor², D times |factor|)."""
        f2 = factor * factor
        return Error(tuple(_times(f2, v) for v in self.classes), _times(f2, self.w),
                     _times(abs(factor), self.d), _times(f2, self.w_max))  # fmt: skip

    def summed(self, count: float) -> Error:
        """The error of a sum of `count` values with independent random errors."""
        return Error(tuple(count * v for v in self.classes), count * self.w, count * self.d,
                     self.w_max)  # fmt: skip

    def times_error(self, other: Error) -> Error:
        """The second-order error e_x·e_y of a product: classes add (s^i·s^j), W and D carry
        over as the larger class (a second-order term; docs/precision.md)."""
        # A Newton-Schulz step squares the class of its second-order terms: at 12 steps the
        # tuples hold thousands of classes (hundreds not yet underflowed to 0, or all of them
        # overflowed to inf under a plan whose errors grow), and this convolution, a Python
        # loop, ran 4·10^8 multiplications per compile. numpy's makes the same products and
        # sums (their order may differ in the last bit), with 0·inf = 0 as `_times`: an
        # infinite class spreads inf only to where it meets a class that is not 0.
        a, b = np.asarray(self.classes, dtype=float), np.asarray(other.classes, dtype=float)
        if a.size and b.size and not (np.isnan(a).any() or np.isnan(b).any()):
            inf_a, inf_b = np.isinf(a), np.isinf(b)
            with np.errstate(over="ignore", under="ignore"):
                conv = np.convolve(np.where(inf_a, 0.0, a), np.where(inf_b, 0.0, b))
            if inf_a.any() or inf_b.any():
                spread = np.convolve(inf_a.astype(float), (b != 0).astype(float))
                spread += np.convolve((a != 0).astype(float), inf_b.astype(float))
                conv[spread > 0] = math.inf
            out = [float(v) for v in conv]
        else:
            out = [0.0] * max(len(self.classes) + len(other.classes) - 1, 0)
            for i, x in enumerate(self.classes):
                for j, y in enumerate(other.classes):
                    out[i + j] += _times(x, y)
        # Trailing zero classes (underflowed) carry nothing: without them the tuples stop
        # doubling in length with every step.
        while out and out[-1] == 0.0:
            out.pop()
        sa, sb = self.variance, other.variance
        w = max(_times(self.w, sb) + _times(other.w, sa) - _times(self.w, other.w), 0.0)
        return Error(tuple(out), w, _times(self.d, other.d), w)

    def per_scale(self, scale_bits: float) -> Error:
        """A source's slot variances (before division by the scale) in value units."""
        unit = 2.0 ** (-2.0 * scale_bits)
        return Error(tuple(v * unit for v in self.classes), self.w * unit, self.d,
                     self.w_max * unit)  # fmt: skip

    def bound(self, n: float, failure: float) -> float:
        """|error| <= this with probability >= 1 - failure (module docstring): a third of
        the failure each to the key's slot value, the sub-Gaussian classes given the key, and
        class W."""
        log_ratio = math.log(key_slot_ratio(failure / 3.0))
        # Var_j · ratio^j in logarithms: deep products (Newton-Schulz steps square the class
        # of their second-order terms) reach classes j in the hundreds, whose ratio^j alone
        # overflows a double while Var_j has long underflowed.
        proxy = sum(math.exp(math.log(v) + j * log_ratio) for j, v in enumerate(self.classes) if v)
        t_g = math.sqrt(2.0 * proxy * math.log(6.0 / failure)) if proxy else 0.0
        terms = max(1, math.floor(self.w / self.w_max)) if self.w_max else 1
        t_w = (
            math.sqrt(self.w) * product_tail(failure / 3.0, min(terms, 1 << 20)) if self.w else 0.0
        )
        return t_g + t_w + self.d


@functools.cache
def key_slot_ratio(failure: float) -> float:
    """T / E|s(ζ)|² with P(|s(ζ)|² > T) <= failure, s ternary (P(±1) = 1/3 per coefficient).

    Every direction of s(ζ) in the plane is sub-Gaussian with proxy sigma² = n/3 (the
    coefficients are strictly sub-Gaussian with proxy 2/3, and sum_k Re(u·ζ^k)² = n/2), so
    E exp(λ|s|²) <= (1 - 2λsigma²)^-1 (average exp(sqrt(2λ)<g, s>) over a standard Gaussian g
    in the plane) and P(|s|² > T) <= e·r·exp(-r) with r = T / (2 sigma²) = T / E|s|²."""
    r = 1.0
    for _ in range(60):  # r = ln(e·r / failure), a contraction for r > 1
        r = 1.0 + math.log(r / failure)
    return r


@functools.cache
def product_tail(failure: float, terms: int = 1) -> float:
    """t with P(|Z| > t·sigma) <= failure for Z a sum of independent products X·Y of
    independent sub-Gaussians, of total variance sigma², no term's variance above
    sigma² / `terms`: E exp(λ X·Y) <= (1 - λ²Var)^-1/2 for each term, so
    E exp(λZ) <= (1 - λ²sigma²/K)^-K/2 with K = terms (docs/precision.md), and
    P(|Z| > t·sigma) <= 2 min over 0 < λ < sqrt(K) of exp(-λt) (1 - λ²/K)^-K/2.
    K = 1 is one product (26.1 at 2^-32 / 3); K large tends to the Gaussian sqrt(2 ln(2/p))."""
    k = float(terms)
    lams = [math.sqrt(k) * j / 400.0 for j in range(1, 400)]

    def tail(t: float) -> float:
        return min(math.log(2.0) - lam * t - k / 2.0 * math.log1p(-lam * lam / k) for lam in lams)

    lo, hi, target = 0.0, 200.0, math.log(failure)
    for _ in range(60):
        t = (lo + hi) / 2
        lo, hi = (t, hi) if tail(t) > target else (lo, t)
    return hi


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
        w = gauss * 2.0 * n / 3.0
        return Error((gauss + self.encoding(), gauss * 2.0 * n / 3.0), w, 0.0, w)

    def rescale_terms(self, degree: int) -> Error:
        n = self.n
        return Error(tuple(n / 12.0 * (2.0 * n / 3.0) ** j for j in range(degree + 1)))

    def key_switch_terms(self) -> Error:
        n = self.n
        digits = self.dnum * n * ERROR_SIGMA**2 * n / 12.0
        return Error((n / 12.0 + digits, n / 12.0 * 2.0 * n / 3.0))


def error_failure_log2(program: ckks.ProgramOp) -> float:
    """The failure probability (log2) scale-management bounded the program's errors at."""
    attr = program.failure_log2
    return DEFAULT_FAILURE_LOG2 if attr is None else float(attr.value.data)


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
            case ckks.DiagMatvecOp():
                # Each output slot sums Q terms d_i[j] * rot(v, i)[j] (P < Q: D terms, then
                # the fold adds Q / P partial sums), padding included. The vector's rotations
                # add a key switch at its scale to its error; the G relinearizations and
                # G - 1 giant rotations add key switches at the product's scale, which the
                # fold sums again, and each fold step adds its own.
                d = op.diagonal
                ea, ma = err[op.lhs], magnitude(range_of(rng, op.lhs))
                mb = magnitude(range_of(rng, op.rhs))
                eb = err[op.rhs] + model.key_switch_terms().per_scale(scale_bits(op.rhs))
                term = ea.scaled(mb + eb.d) + eb.scaled(ma + ea.d) + ea.times_error(eb)
                spread = max(1, d.cols // d.rows)
                switches = (2 * d.giants - 1) * spread + len(d.fold)
                ks = model.key_switch_terms().per_scale(scale_bits(out))
                e = term.summed(d.cols) + ks.summed(switches)
            case ckks.ConvertOp():
                # packed -> cyclic<Q>: every slot sums the slots / Q positions j + t Q (one
                # element, the rest zero padding: their random errors only), and the key
                # switches add (slots / Q - 1) of their errors; cyclic -> packed relabels.
                period = he.cyclic_of(op.to_layout)
                src = err[op.input]
                if period is None:
                    e = src
                else:
                    copies = max(1, (int(model.n) // 2) // period)
                    spread = Error(
                        tuple(copies * v for v in src.classes), copies * src.w, src.d,
                        src.w_max,
                    )  # fmt: skip
                    ks = model.key_switch_terms().per_scale(scale_bits(out))
                    e = spread + ks.summed(copies - 1)
            case ckks.ReduceOp():
                k = dim_bound(ckks.ct_type(op.input).dims[op.axis_value], dict(bounds))
                e = err[op.input].summed(k)
            case ckks.SumSlotsOp() if op.axis_value is not None:
                # A row sum of a grid array (docs/layout.md): the row blocks added, then the
                # rotation tree with strides C, 2C, ..., (R/2) C: the random errors of all
                # ceil(k / R) x R row positions of a column enter its output slot, and the
                # key switches add (R - 1) of their errors, as for the slot sum below.
                src_ty = ckks.ct_type(op.input)
                grid = he.grid_of(src_ty.layout_name)
                assert grid is not None
                k = dim_bound(src_ty.dims[op.axis_value], dict(bounds))
                positions = math.ceil(k / grid.rows) * grid.rows
                src = err[op.input]
                spread = Error(
                    tuple(positions * v for v in src.classes), positions * src.w, k * src.d,
                    src.w_max,
                )  # fmt: skip
                switch = model.key_switch_terms().per_scale(scale_bits(out)).summed(grid.rows - 1)
                e = spread + switch
            case ckks.SumSlotsOp():
                # The runtime adds the row's ciphertexts, then sums every slot by a rotation
                # tree (offsets 1, 2, ..., slots/2): the random errors of all blocks x slots
                # positions enter each output slot, the padding's too (its deterministic
                # error is zero: it holds no value); the key switch at offset 2^i is summed
                # again by each later step, so the switches add (slots - 1) of their errors.
                k = dim_bound(ckks.ct_type(op.input).dims[-1], dict(bounds))
                slots = int(model.n) // 2
                positions = math.ceil(k / slots) * slots
                src = err[op.input]
                spread = Error(
                    tuple(positions * v for v in src.classes), positions * src.w, k * src.d,
                    src.w_max,
                )  # fmt: skip
                switch = model.key_switch_terms().per_scale(scale_bits(out)).summed(slots - 1)
                e = spread + switch
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
                    # The constant is rounded to an integer multiple of 1/const_scale: by
                    # exactly that much when it is known (a scale-alignment lift, 1 at 2^k, is
                    # exact; computed on the exact scale, which may be far beyond 2^1023),
                    # else by at most half a unit: a deterministic error times |x|.
                    m = magnitude(range_of(rng, op.input)) + err[op.input].d
                    interval = pub[op.value].interval
                    if interval.lo == interval.hi and math.isfinite(interval.lo):
                        rounded = op.const_scale.rounding_error(interval.lo)
                    else:
                        rounded = 0.5 * 2.0 ** (-op.const_scale_bits)
                    e = e + Error(d=_times(m, rounded))
                if op.is_masked:
                    # The mask (c on the valid slots, 0 on the padding) is rounded per
                    # coefficient: a fresh encoding's error, N/12 at const_scale, times |x|.
                    m = magnitude(range_of(rng, op.input)) + err[op.input].d
                    e = e + model.encoding_terms().per_scale(op.const_scale_bits).scaled(m)
            case ckks.NegateOp() | ckks.AddConstOp() | ckks.LevelDownOp():
                e = err[op.operands[0]]
            case ckks.BroadcastOp() | ckks.TransposeOp() | ckks.GatherOp():
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
        # as a difference of logs: a tiny bound over a large error underflows to 0 as a ratio
        return math.log2(max(self.bound, 1e-300)) - math.log2(err)

    def flooded_precision_bits(self, statistical_bits: float = DEFAULT_STATISTICAL_BITS) -> float:
        """The precision left after the decrypt role's noise flooding (flooding.py)."""
        return self.precision_bits - flooding_cost_bits(statistical_bits)


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
