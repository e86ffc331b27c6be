"""BFV noise: the invariant-noise budget of every value of a bfv program, before running it.

The model is the runtime's (runtime/bfv/README.md §Bounds (B5), runtime/bfv/noise.cpp),
carried per value as log2 of the standard deviation of the absolute noise e (a ciphertext
decrypts to Delta m + e modulo Q, Delta = Q / t):

- fresh public-key encryption: sd(e) = sigma sqrt(1 + 4N/3), and the encoding error: the
  runtime adds Delta m with Delta = floor(Q/t) and m's coefficients in [0, t)
  (runtime/bfv/scheme.cpp add_delta_m), so t x = Q m - r m + t e (mod Q), r = Q mod t < t:
  an extra noise -(r/t) m of up to r in every coefficient, root mean square t sqrt(1/3) for
  r near t (uniform m: mean r/2, variance r^2/12). It dominates from t ~ 2^10 up and grows
  with t (measured at n = 2^13, Q = 2 x 60 bits: fresh budgets 72, 58, 41 bits at
  t = 2^30, 2^33, 2^40, i.e. log2 Q - 2 log2 t + ~12); an added public integer adds the same
  term. TODO(#18): encoding Delta m + round((Q mod t) m / t) in the runtime (SEAL's
  multiply_add_plain_with_scaling_variant) would remove it and give back about log2 t - 8 bits
  per fresh ciphertext;
- add, sub: the variances add; negate, broadcast, transpose: unchanged; reduce and dot over K
  terms: sqrt(K) times one term;
- a public integer c: |c| times; an added public integer: the encoding error above;
- a product (HPS multiply): e' = (m_a + t a_a) e_b + (m_b + t a_b) e_a + rounding, with
  (m + t a) of variance t^2 (N/18 + 1/6) per coefficient convolved over N terms, so
  sd(e') = sqrt(N) t sqrt(N/18 + 1/6) (sd(e_a) + sd(e_b)) (the sum, not the root of the sum
  of squares: a square's two terms are the same), plus the rounding of three components;
- relinearization and every rotation add the hybrid key-switching noise (B4);
- sum_slots: log2(N) rotate-and-add steps, sqrt(N) times the noise plus the key switches'.

A value decrypts correctly while t z sd(e) < Q_level / 2, z = sqrt(2 ln(N 2^40)) standard
deviations (every coefficient within z sigma except with probability about 2^-40): the
budget is log2 Q_level - 1 - log2(t z sd(e)) bits, and the parameter pass keeps it above
MARGIN_BITS for every decrypted value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.ir import SSAValue

from compiler.analysis.ranges import public_values
from compiler.dialects import he
from compiler.errors import UserError
from compiler.types import dim_bound

SIGMA = 3.2
MARGIN_BITS = 4.0
FAILURE_BITS = 40


def _hypot(a: float, b: float) -> float:
    """log2 sqrt(2^2a + 2^2b)."""
    hi, lo = max(a, b), min(a, b)
    return hi + 0.5 * math.log2(1.0 + 2.0 ** (2.0 * (lo - hi)))


def _sum(a: float, b: float) -> float:
    """log2 (2^a + 2^b)."""
    hi, lo = max(a, b), min(a, b)
    return hi + math.log2(1.0 + 2.0 ** (lo - hi))


@dataclass(frozen=True)
class Ring:
    """What the noise depends on: ring dimension, plaintext modulus, the bits of the primes of
    Q (q_0 first) and of the key-switching primes P, and the digits of hybrid key switching."""

    log_n: int
    log_t: float
    q_bits: tuple[float, ...]
    p_bits: tuple[float, ...]
    dnum: int

    @property
    def n(self) -> float:
        return float(1 << self.log_n)

    def log_q(self, level: int) -> float:
        return sum(self.q_bits[: level + 1])

    @property
    def z_bits(self) -> float:
        return math.log2(math.sqrt(2.0 * (math.log(self.n) + FAILURE_BITS * math.log(2.0))))

    def encoding(self) -> float:
        """log2 of the rms of the encoding error -(r/t) m, r = Q mod t taken as t (worst)."""
        return self.log_t + 0.5 * math.log2(1.0 / 3.0)

    def fresh(self) -> float:
        return _hypot(math.log2(SIGMA * math.sqrt(1.0 + 4.0 * self.n / 3.0)), self.encoding())

    def product_growth(self) -> float:
        return 0.5 * math.log2(self.n) + self.log_t + 0.5 * math.log2(self.n / 18.0 + 1.0 / 6.0)

    def rounding(self) -> float:
        n = self.n
        return 0.5 * math.log2((1.0 + 2.0 * n / 3.0 + n * n * 4.0 / 9.0) / 12.0)

    def key_switch(self) -> float:
        """Hybrid key switching with dnum digits of the top-level Q and special primes P."""
        if not self.p_bits:
            return -math.inf
        digits = max(self.dnum, 1)
        per = len(self.q_bits) / digits
        log_qd = max(self.q_bits) * per
        alpha = per
        term = (
            log_qd
            + 0.5 * math.log2(alpha / 12.0 + alpha * alpha / 4.0)
            + 0.5 * math.log2(self.n)
            + math.log2(SIGMA)
            + 0.5 * math.log2(digits)
        )
        relin = term - sum(self.p_bits)
        mod_down = math.log2(
            len(self.p_bits) / math.sqrt(3.0) * math.sqrt(1.0 + 2.0 * self.n / 3.0)
        )
        return _hypot(relin, mod_down)

    def budget(self, noise: float, level: int) -> float:
        return self.log_q(level) - 1.0 - (self.log_t + self.z_bits + noise)


def switched(ring: Ring, noise: float, level: int) -> float:
    """log2 sd(e) after a modulus switch from `level` to level - 1: the noise divided by the
    dropped prime, plus the rounding, t times r_0 + r_1 s with r uniform in [-1/2, 1/2]."""
    rounding = ring.log_t + 0.5 * math.log2((1.0 + 2.0 * ring.n / 3.0) / 12.0)
    return _hypot(noise - ring.q_bits[level], rounding)


def noise_bits(
    program: he.ProgramRule, ring: Ring, bounds: Mapping[str, int]
) -> dict[SSAValue, float]:
    """log2 sd(e) of every ciphertext value."""
    pub = public_values(program, bounds)
    out: dict[SSAValue, float] = {}
    ks = ring.key_switch()

    def g(v: SSAValue) -> float:
        return out[v]

    def count(dim: object) -> float:
        assert isinstance(dim, int | str)
        return math.log2(max(dim_bound(dim, dict(bounds)), 1))

    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, he.CtType):
            continue
        e: float
        match op:
            case he.EncryptRule():
                e = ring.fresh()
            case he.AddRule():
                e = _hypot(g(op.lhs), g(op.rhs))
            case he.MulRule():
                e = _hypot(ring.product_growth() + _sum(g(op.lhs), g(op.rhs)), ring.rounding())
            case he.DotRule():
                k = he.ct_type(op.lhs).dims[op.axis_value]
                one = _hypot(ring.product_growth() + _sum(g(op.lhs), g(op.rhs)), ring.rounding())
                e = one + 0.5 * count(k)
            case he.ReduceRule():
                k = he.ct_type(op.input).dims[op.axis_value]
                e = g(op.input) + 0.5 * count(k)
            case he.MulConstRule():
                c = max(abs(pub[op.value].interval.lo), abs(pub[op.value].interval.hi), 1.0)
                e = g(op.input) + math.log2(c)
            case he.RelinearizeRule() | he.RotateRule():
                e = _hypot(g(op.input), ks)
            case he.SumSlotsRule():
                steps = ring.log_n
                e = _hypot(g(op.input) + 0.5 * ring.log_n, ks + 0.5 * math.log2(steps))
            case he.LevelDownRule():
                e = switched(ring, g(op.input), he.ct_type(op.input).level_value)
            case he.AddConstRule():
                e = _hypot(g(op.operands[0]), ring.encoding())
            case he.NegateRule() | he.BroadcastRule() | he.TransposeRule() | he.GatherRule():
                e = g(op.operands[0])
            case _:
                raise UserError(f"the bfv noise model does not handle {op.name}")
        out[op.results[0]] = e
    return out


def decrypt_budgets(
    program: he.ProgramRule, ring: Ring, bounds: Mapping[str, int]
) -> dict[str, float]:
    """The noise budget (bits) left in every decrypted value."""
    noise = noise_bits(program, ring, bounds)
    return {
        op.sym_value: ring.budget(noise[op.input], he.ct_type(op.input).level_value)
        for op in program.decrypts()
    }
