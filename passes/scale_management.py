"""Scale management: exact scales, input and constant encoding scales, and the chain they need.

This is the computed form of the PNAS authors' hand-chosen scaling factor gamma. The choice is
a small search over two numbers, the encoding scale Delta of the inputs and the size r of the
rescale primes, for the smallest ring dimension that is 128-bit secure:

- every output must keep `precision_bits` correct bits relative to its largest possible value
  (range analysis), with the error predicted by `compiler.analysis.noise` (fresh encryption,
  rescale and key-switch errors propagated through the program, bounded at a failure
  probability of 2^-32 per value unless `failure_log2` says otherwise);
- every value must fit its level's modulus (log2|x|max + scale + 1 <= log2 Q_l); Q_0, the
  output modulus, is as large as the largest output needs (so it may hold several primes);
- among feasible plans, the fewest primes, then the fewest modulus bits.

The search takes a coarse grid (every third Delta and r), then the neighbourhood of its best
point; when the coarse grid finds nothing at a ring dimension, every (Delta, r) between the
smallest Delta that was precise enough and the largest that fit the bound is tried before a
larger ring (feasible windows can be a few bits wide).

Worked out for the chi-square kernel at N = 5000 (d = 2N = 10^4, n = 2^13):
1. Depth. n11 = y·S summed over N (one `dot`), c1·r1: both exponent 2 at the top level;
   diff = n11·d - c1·r1 needs no level for d (integer); diff is rescaled once and squared:
   depth 2, one rescale. chi2_num = d·diff^2 leaves d to the coordinator (a public factor
   after decryption), so the output range is diff^2 <= (4N^2)^2 = 2^53.2, not 2^66.4.
2. Input scale. A fresh public-key ciphertext has slot error sigma ~ 3.2·n·1.15 = 2^14.9.
   Summed over N and multiplied by d and by the other factor's range, diff has an error of
   about 2^(36.5 - Delta) (1 sigma, worst-case ranges). For chi2 >= 0.01 the smallest |diff|
   of interest is ~ 725 (c1 ~ 3000 of 10^4 alleles, balanced cases), and a 1e-5 relative
   error on chi2 = d·diff^2/den needs err(diff) <~ 2^-10: Delta ~ 46.
3. Rescale prime. diff·Delta^2 needs 26.6 + 92 + 1 bits at the top; rescaling by a 60-bit
   prime (the largest the runtime takes) leaves scale 2^32 for diff, whose rescale error
   (degree 2: n/12·(2n/3)^2, sigma 2^17.1) is then 2^-15: below the fresh error.
4. Output modulus. diff^2 at scale 2^64 needs 53.2 + 64 + 1 = 119 bits: two 60-bit primes.
   Chain: Q_0 = 2 primes, q_1 = 1 prime: three primes, 180 bits, two levels, no special prime
   (no key switch). A final rescale would only move bits from Q_0 to another prime.
The precision requirement of step 2 is stated per output (`precision chi2_num=33`: 33 bits of
diff^2's range of 2^53.2 is err(diff) <= 2^-10); the default target of 19 bits
on every output keeps the odds-ratio outputs (range 2^27.6, dominated by the rescale error of
n11 · 4N) within 2 primes of output modulus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f64
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.diagonal import slots_needed
from compiler.analysis.flooding import DEFAULT_STATISTICAL_BITS
from compiler.analysis.levels import make_composite
from compiler.analysis.noise import NoiseModel, output_precision
from compiler.analysis.packed import is_coefficient_program
from compiler.analysis.ranges import value_ranges
from compiler.analysis.scales import (
    ChainNeeds,
    ScalePlan,
    apply_plan,
    chain_needs,
    make_drops_exact,
    top_level,
)
from compiler.analysis.security import (
    HE_STANDARD_128,
    MAX_LOG_N,
    MAX_PRIME_BITS,
    MIN_LOG_N,
    MIN_PRIME_BITS,
    MIN_SECURE_LOG_N,
)
from compiler.analysis.sizes import parse_sizes
from compiler.dialects import ckks
from compiler.errors import UserError, op_location

# The smallest scale any value may have (below it, rounding swamps the value).
MIN_SCALE_BITS = 8.0
# The plan is searched with nominal primes 2^r; the exact primes parameter-selection picks
# differ from 2^r by a small fraction of a bit, and a scale S_(l-1) = S_l^2 / q_l doubles the
# deviation at every level. The nominal floor keeps this margin so the exact scales stay above
# MIN_SCALE_BITS (check-scales checks them; c^8 * 0.5 at a nominal 2^8 ended at 2^7.99999).
PRIME_MARGIN_BITS = 1.0
# The largest scale a plan may give any value: the runtime keeps scales as doubles (up to
# 2^1023), and the exact-scale products of the primes must stay finite there.
MAX_SCALE_BITS = 1000.0
# The largest input encoding scale searched: beyond a prime's 60 bits the encoder works in long
# double (runtime/ckks/encoder.h) and the top level holds the scale across several primes.
MAX_INPUT_SCALE_BITS = 100


@dataclass(frozen=True)
class Candidate:
    log_n: int
    input_scale: float
    rescale_bits: float
    output_bits: int
    special_bits: int
    levels: int
    precision: float
    key_level: int | None = None  # highest level of a key switch (None: every level)

    @property
    def output_primes(self) -> int:
        return math.ceil(self.output_bits / MAX_PRIME_BITS)

    @property
    def primes(self) -> int:
        return self.output_primes + self.levels + (1 if self.special_bits else 0)

    @property
    def total_bits(self) -> float:
        """log2 of the largest modulus the coordinator publishes a sample under (as
        `ckks.Parameters.log_qp`): the public key's Q_L, or the evaluation keys'
        Q_key_level·P, for the primes parameter-selection will pick: Q_0 split into equal
        whole-bit primes, and a small margin because a prime near 2^b may lie just above it."""
        count = self.output_primes
        q0 = count * math.ceil(self.output_bits / count)
        margin = 1e-3 * self.primes
        q_top = q0 + self.levels * self.rescale_bits
        if not self.special_bits:
            return q_top + margin
        key_levels = self.levels if self.key_level is None else min(self.key_level, self.levels)
        keys = q0 + key_levels * self.rescale_bits + self.special_bits
        return max(q_top, keys) + margin

    def cost(self) -> tuple[float, float, float]:
        return (self.primes, self.total_bits, -self.precision)


def plan_of(program: ckks.ProgramOp) -> Candidate | None:
    """The plan scale-management recorded on `program` (its typed `plan` attribute)."""
    plan = program.plan
    if plan is None:
        return None
    return Candidate(
        log_n=plan.log_n.data,
        input_scale=plan.input_scale.data,
        rescale_bits=plan.rescale_bits.data,
        output_bits=plan.output_bits.data,
        special_bits=plan.special_bits.data,
        levels=top_level(program),
        precision=plan.precision.data,
        key_level=key_level_of(program),
    )


def key_level_of(program: ckks.ProgramOp) -> int | None:
    return program.key_level_value()


def needs_key_switch(program: ckks.ProgramOp) -> bool:
    return any(isinstance(op, ckks.KEY_SWITCH_OPS) for op in program.block.ops)


@dataclass(frozen=True)
class ScaleManagementPass(ModulePass):
    """Choose input/constant encoding scales and rescale-prime sizes; set every exact scale.

    What it does: searches (Delta, r) on a grid of whole bits (module docstring), for each ring
    dimension from the smallest up (or only `log_n` when given); applies the best plan: exact
    scales on every type, real constants encoded at their level's scale, scale-alignment
    multiplies by 1 where additions meet different scales; records the plan as the program's
    typed attribute `plan` (`#ckks.plan`) for parameter-selection.
    Assumes: levels are assigned. Establishes: every addition has equal operand scales, every
    value fits its level's modulus under the plan, every output meets `precision_bits`; the
    module verifies. Options: `precision_bits` (default 19: bits relative to the output's
    range bound, of an error bound that fails with probability 2^failure_log2),
    `precision` ("chi2_num=33": per-output targets overriding `precision_bits`; a difference
    of large terms that is later squared, as in the chi-square numerator, needs more bits
    than its range suggests), `log_n` (0: search), `insecure` (allow ring dimensions below
    the 128-bit table), `failure_log2` (default -32: compiler/analysis/noise.py).
    Reference: EVA's scale/waterline analysis; Blatt et al. PNAS 2020 (gamma).
    """

    name = "scale-management"

    precision_bits: float = 19.0
    precision: str = ""
    log_n: int = 0
    insecure: bool = False
    failure_log2: float = -32.0  # the error bounds' failure probability per value, log2
    # Bits the decrypt role's noise flooding costs every output (compiler/analysis/flooding.py):
    # each target must hold after flooding; 0 for single-party use (decrypt --no-flooding).
    flooding_bits: float = 0.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            self.run(program)

    def run(self, program: ckks.ProgramOp) -> None:
        if is_coefficient_program(program):
            return  # coefficient-parameters chose everything
        bounds = program.params()
        ranges = value_ranges(program, bounds)
        levels = top_level(program)
        key_switch = needs_key_switch(program)
        targets = {k: float(v) for k, v in parse_sizes(self.precision).items()}

        # Deltas at which some r met the precision target, resp. the security bound.
        precise: set[tuple[int, float]] = set()
        secure: set[tuple[int, float]] = set()
        # The most bits (before flooding) each output reached under any secure plan tried.
        reach: dict[str, float] = {}

        # What a plan asks of the chain does not depend on the ring dimension: each (Delta, r)
        # is applied to the program once per group (apply_plan rewrites every type, the bulk of
        # an evaluation), not once per ring size tried. `applied` is the plan the IR carries.
        scaled: dict[tuple[int, float, float], ChainNeeds | None] = {}
        applied: list[tuple[int, float, float]] = []

        def scale(delta: float, r: float) -> ChainNeeds | None:
            key = (group, delta, r)
            if key in scaled:
                if scaled[key] is not None and applied[-1:] != [key]:
                    apply_plan(program, ScalePlan(delta, tuple([r] * levels), group))
                    applied[:] = [key]
                return scaled[key]
            scaled[key] = None
            plan = ScalePlan(delta, tuple([r] * levels), group)
            if min(s.bits for s in plan.level_scales()) < MIN_SCALE_BITS + PRIME_MARGIN_BITS:
                return None
            apply_plan(program, plan)
            applied[:] = [key]
            needs = chain_needs(program, plan.divisors, ranges)
            if (
                needs.min_scale < MIN_SCALE_BITS + PRIME_MARGIN_BITS
                or needs.max_scale > MAX_SCALE_BITS
                or not math.isfinite(needs.output_bits)
            ):
                # Rounding swamps a value, a scale beyond what the runtime's double holds (the
                # slow property tier found 2^1076: tiny values raised to high powers), or an
                # unbounded range.
                return None
            scaled[key] = needs
            return needs

        def evaluate(log_n: int, delta: float, r: float) -> Candidate | None:
            needs = scale(delta, r)
            if needs is None:
                return None
            out_bits = max(MIN_PRIME_BITS, math.ceil(needs.output_bits))
            dnum = math.ceil(out_bits / MAX_PRIME_BITS) + levels
            model = NoiseModel(log_n, dnum)
            outputs = output_precision(program, bounds, model, ranges, self.failure_log2)
            margins = [
                (
                    p.precision_bits,
                    p.precision_bits
                    - self.flooding_bits
                    - targets.get(p.name, self.precision_bits),
                )
                for p in outputs
            ]
            precision = min((bits for bits, _ in margins), default=math.inf)
            q0_prime_bits = math.ceil(out_bits / math.ceil(out_bits / MAX_PRIME_BITS))
            special = min(MAX_PRIME_BITS, max(math.ceil(r), q0_prime_bits)) if key_switch else 0
            cand = Candidate(
                log_n, delta, r, out_bits, special, levels, precision, key_level_of(program)
            )
            fits = self.insecure or cand.total_bits <= HE_STANDARD_128[log_n]
            if fits:
                secure.add((log_n, delta))
                for p in outputs:
                    reach[p.name] = max(reach.get(p.name, -math.inf), p.precision_bits)
            if any(margin < 0 for _, margin in margins):
                return None
            precise.add((log_n, delta))
            return cand if fits else None

        smallest = MIN_LOG_N if self.insecure else MIN_SECURE_LOG_N
        # A diagonal or cyclic array keeps one period in a ciphertext (docs/layout.md).
        need = slots_needed(program)
        smallest = max(smallest, need.bit_length())
        if self.log_n and self.log_n < need.bit_length():
            where = next(
                (
                    op
                    for op in program.block.ops
                    if isinstance(op, ckks.DiagMatvecOp | ckks.ConvertOp | ckks.EncodeOp)
                    and slots_needed(op) == need  # the op whose period is the largest
                ),
                None,
            )
            raise UserError(
                f"--log-n {self.log_n} gives {1 << (self.log_n - 1)} slots, but a diagonal "
                f"or cyclic array (the diagonal matrix-vector product) needs {need} slots "
                "for one period of its values",
                op_location(where) if where is not None else None,
                hint=f"use --log-n {need.bit_length()} or more, or leave --log-n out",
            )
        ring_sizes = [self.log_n] if self.log_n else list(range(smallest, MAX_LOG_N + 1))

        def search() -> Candidate | None:
            rs = [float(r) for r in range(MIN_PRIME_BITS, MAX_PRIME_BITS + 1)] if levels else [0.0]
            # Input scales up to a prime's size first; larger ones (the inputs' level then spans
            # more than a prime's bits of scale) only when those reach no target at a ring size:
            # noise flooding asks ~31.5 more bits than a 60-bit scale can give (issue 25).
            narrow = [float(d) for d in range(MIN_PRIME_BITS, MAX_PRIME_BITS + 1)]
            wide = [float(d) for d in range(MIN_PRIME_BITS, MAX_INPUT_SCALE_BITS + 1)]
            best: Candidate | None = None
            seen: dict[tuple[int, float, float], Candidate | None] = {}

            def consider(log_n: int, delta: float, r: float) -> None:
                nonlocal best
                key = (log_n, delta, r)
                if key not in seen:
                    seen[key] = evaluate(log_n, delta, r)
                cand = seen[key]
                if cand and (best is None or cand.cost() < best.cost()):
                    best = cand

            if group > 1:
                # Composite scaling: a scale is stable only where Delta = g·r (S^2 / 2^(g·r) =
                # S); elsewhere it doubles its distance from that every level. So Delta
                # follows r: every other r first, then the neighbourhood of the best.
                def near(r: float, spread: int) -> list[float]:
                    lo, hi = group * r - spread, group * r + spread
                    return [d for d in wide if lo <= d <= hi]

                for log_n in ring_sizes:
                    for r in rs[::2]:
                        for delta in near(r, 1):
                            consider(log_n, delta, r)
                    if best is not None:
                        centre = best
                        for r in rs:
                            if abs(r - centre.rescale_bits) <= 2:
                                for delta in near(r, 2):
                                    consider(log_n, delta, r)
                        break
                return best

            for log_n in ring_sizes:
                for deltas in (narrow, wide):
                    # Coarse grid, then the neighbourhood of the best coarse point.
                    for delta in deltas[::3]:
                        for r in rs[::3]:
                            consider(log_n, delta, r)
                    if best is None:
                        # The coarse grid can step over a narrow feasible window (at N = 2000 the
                        # complex-packed chi-square meets 40 bits within the bound only at Delta
                        # 54-56 with some r). Precision grows with Delta and so do the modulus
                        # bits: scan every (Delta, r) between the smallest coarse Delta that was
                        # precise enough and the largest that fit the bound, give or take a
                        # coarse step.
                        lo = min((d for n, d in precise if n == log_n), default=None)
                        hi = max((d for n, d in secure if n == log_n), default=None)
                        if lo is not None and hi is not None and lo - 3 <= hi + 3:
                            for delta in (d for d in deltas if lo - 3 <= d <= hi + 3):
                                for r in rs:
                                    consider(log_n, delta, r)
                    if best is not None:
                        centre = best
                        for delta in deltas:
                            if abs(delta - centre.input_scale) > 3:
                                continue
                            for r in rs:
                                if levels and abs(r - centre.rescale_bits) > 3:
                                    continue
                                consider(log_n, delta, r)
                        break
                if best is not None:
                    break
            return best

        group = 1
        best = search()
        if best is None and levels:
            # Composite scaling: no plan with one prime per level (every scale stays near
            # one prime, <= 2^60, and flooding or a high target asks for more): let each
            # multiplicative level span two primes (compiler/analysis/levels.py).
            group = 2
            levels = make_composite(program, group)
            make_drops_exact(program, group)
            ranges = value_ranges(program, bounds)
            precise.clear()
            secure.clear()
            best = search()
        if best is None and self.flooding_bits > 0:
            short = [
                (name, bits - self.flooding_bits, targets.get(name, self.precision_bits))
                for name, bits in reach.items()
                if bits - self.flooding_bits < targets.get(name, self.precision_bits)
            ]
            if short:
                worst = ", ".join(
                    f"{name} reaches at most {_bits(got)} of {want:g} bits"
                    for name, got, want in short
                )
                raise UserError(
                    f"no CKKS parameters keep the precision promise after noise flooding: "
                    f"{worst}; flooding (decrypt's defence against key recovery from shared "
                    f"results, {DEFAULT_STATISTICAL_BITS}-bit statistical security) costs "
                    f"{self.flooding_bits:.1f} bits (within 128-bit security, ring dimensions "
                    f"2^{ring_sizes[0]}..2^{ring_sizes[-1]}, input scales up to "
                    f"2^{MAX_INPUT_SCALE_BITS}, one or two primes per level)",
                    hint="lower --precision-bits (or that output's --precision), or, when one "
                    "party holds the key and every ciphertext, compile with --no-flooding and "
                    "decrypt with --no-flooding",
                )
        if best is None:
            raise UserError(
                f"no CKKS parameters give {self.precision_bits} bits of precision (per-output "
                f"targets: {self.precision or 'none'}) on every output within 128-bit "
                f"security (ring dimensions 2^{ring_sizes[0]}..2^{ring_sizes[-1]}, primes of "
                f"{MIN_PRIME_BITS}-{MAX_PRIME_BITS} bits)",
                hint="lower --precision-bits, tighten the input domains or size bounds, "
                "or split the computation",
            )
        apply_plan(program, ScalePlan(best.input_scale, tuple([best.rescale_bits] * levels), group))
        program.set_plan(
            ckks.PlanAttr.get(
                best.log_n,
                best.input_scale,
                best.rescale_bits,
                best.output_bits,
                best.special_bits,
                best.precision,
            )
        )
        program.attributes["error_failure_log2"] = FloatAttr(self.failure_log2, f64)


def _bits(b: float) -> str:
    return f"{b:.2f}" if math.isfinite(b) else str(b)
