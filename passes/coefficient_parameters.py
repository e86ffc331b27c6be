"""Coefficient parameters: primes, scale and columns per coefficient for packed counts.

A program whose encrypted arrays are all `coeff` (passes/packed_counts.py) only adds: the
coordinator decrypts m = Delta * V + e per coefficient, with V the radix-packed integer and e
the sum over the rows of fresh public-key encryption errors. Each owner's error per
coefficient is e_0 + u e + e_1 s (u, s ternary, e, e_0, e_1 discrete Gaussians, sigma = 3.2):
variance sigma^2 (1 + 4n/3), a sum of about 4n/3 independent products, so very nearly
Gaussian; summed over R rows, sigma_R = sigma sqrt((1 + 4n/3) R). Rounding (m + Delta/2) / Delta
recovers V exactly when |e| < Delta/2, which fails with probability below 2^-32 per coefficient
when Delta/2 >= z sigma_R, z = the two-sided Gaussian quantile of 2^-32 (6.45).

V must stay below Q / (2 Delta) (Q the product of the primes), and V is the product of the radices
of the digits one coefficient holds: `group` columns of every per-element digit, plus the
per-row digits once. For each ring dimension n (128-bit: log2 Q within the HE Standard bound,
no key-switching prime, as nothing switches a key) and each number of primes w (the largest
NTT primes below 2^b, b = min(60, bound / w)), the pass takes the largest group that fits
and counts the bytes every individual uploads: ceil(ceil(M / group) / n) ciphertexts of
2 n w words. The plan with the fewest bytes wins (then the fewest words n w, the smaller n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.packed import (
    coeff_encodes,
    decode_bound_bits,
    is_coefficient_program,
)
from compiler.analysis.security import (
    HE_STANDARD_128,
    MAX_LOG_N,
    MAX_PRIME_BITS,
    MIN_LOG_N,
    MIN_SECURE_LOG_N,
    largest_ntt_primes,
    security_bits,
)
from compiler.dialects import ckks
from compiler.errors import UserError
from compiler.types import Dim


@dataclass(frozen=True)
class CoeffPlan:
    log_n: int
    primes: tuple[int, ...]
    scale_bits: int
    group: int
    bytes_per_row: int

    @property
    def cost(self) -> tuple[int, int, int]:
        return (self.bytes_per_row, len(self.primes) << self.log_n, self.log_n)


def plan_coefficients(
    radices: tuple[int, ...],
    scalar: tuple[bool, ...],
    rows: int,
    columns: int,
    log_n_fixed: int = 0,
    insecure: bool = False,
) -> CoeffPlan | None:
    per_column = math.prod(r for r, s in zip(radices, scalar, strict=True) if not s)
    per_row = math.prod(r for r, s in zip(radices, scalar, strict=True) if s)
    best: CoeffPlan | None = None
    low = MIN_LOG_N if insecure else MIN_SECURE_LOG_N
    for log_n in range(low, MAX_LOG_N + 1):
        if log_n_fixed and log_n != log_n_fixed:
            continue
        bound = HE_STANDARD_128[log_n]
        d = decode_bound_bits(log_n, rows)
        for w in range(1, 16):
            bits = min(MAX_PRIME_BITS, bound // w)
            if bits < 30:
                break
            primes = tuple(largest_ntt_primes(bits, log_n, w))
            if len(primes) < w:
                break
            capacity = math.prod(primes) >> (d + 1)  # V < Q / (2 Delta): check-scales' sign bit
            if capacity < per_row * (per_column if columns else 1):
                continue
            group = 1
            if per_column > 1:
                while per_row * per_column ** (group + 1) <= capacity and group < columns:
                    group += 1
            coefs = math.ceil(columns / group) if columns else 1
            cts = math.ceil(coefs / (1 << log_n))
            plan = CoeffPlan(log_n, primes, d, group, cts * 2 * (1 << log_n) * w * 8)
            if best is None or plan.cost < best.cost:
                best = plan
    return best


def _size(d: Dim, params: dict[str, int]) -> int:
    return d if isinstance(d, int) else params[d]


@dataclass(frozen=True)
class CoefficientParametersPass(ModulePass):
    """Choose primes, the exact power-of-two scale and `group` for coeff programs.

    Assumes: a ckks program whose encrypted values are all coeff arrays (from packed-counts),
    at level 0. Establishes: program parameters (one level: every prime in Q_0, no special
    prime, 128-bit unless `insecure`), every coeff type at scale 2^d, each coeff encode's
    `group`; other programs are untouched (scale-management and parameter-selection handle
    them and skip these). The module verifies. Options: `log_n` (force a ring), `insecure`.
    """

    name = "coefficient-parameters"

    log_n: int = 0
    insecure: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            if is_coefficient_program(program):
                self.run(program)

    def run(self, program: ckks.ProgramOp) -> None:
        params = program.params()
        encodes = coeff_encodes(program)
        if len(encodes) != len(program.encrypts()):
            raise UserError("a program mixing packed counts and other encrypted inputs")
        plans: list[CoeffPlan] = []
        for enc in encodes:
            ty = ckks.pt_type(enc.result)
            rows, cols = _size(ty.dims[0], params), _size(ty.dims[1], params)
            has_columns = not all(enc.scalar_digit_flags)
            plan = plan_coefficients(
                enc.radix_values,
                enc.scalar_digit_flags,
                rows,
                cols if has_columns else 0,
                self.log_n,
                self.insecure,
            )
            if plan is None:
                bits = sum(math.log2(r) for r in enc.radix_values)
                raise UserError(
                    f"the packed counts of {enc.sym_value} need {bits:.1f} bits per column "
                    f"plus the noise of {rows} rows, more than any 128-bit modulus holds",
                    hint="reveal fewer counts per program, or smaller sizes",
                )
            plans.append(plan)
        # One context per program: the plan of the most demanding encode.
        plan = max(plans, key=lambda p: (len(p.primes) << p.log_n, p.scale_bits))
        for enc, own in zip(encodes, plans, strict=True):
            if (own.log_n, own.primes) != (plan.log_n, plan.primes):
                raise UserError("packed counts of different sizes need one ring; split the program")
            enc.set_group(own.group)
        for o in program.block.ops:
            for r in o.results:
                t = r.type
                if isinstance(t, ckks.CtType):
                    r._type = t.with_(scale=float(plan.scale_bits))  # pyright: ignore[reportPrivateUsage]
                elif isinstance(t, ckks.PtType):
                    r._type = ckks.PtType.get(t.dims, t.layout_name, 0, float(plan.scale_bits))  # pyright: ignore[reportPrivateUsage]
        log_q = sum(math.log2(q) for q in plan.primes)
        secure = security_bits(plan.log_n, log_q)
        if not secure and not self.insecure:
            raise UserError(f"no 128-bit parameters hold the packed counts (log2 Q = {log_q:.1f})")
        program.set_parameters(
            ckks.Parameters(
                log_n=plan.log_n,
                output_moduli=plan.primes,
                moduli=(),
                special_moduli=(),
                dnum=0,
                security_bits=secure,
                insecure=self.insecure and not secure,
            )
        )
