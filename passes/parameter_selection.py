"""Parameter selection: ring dimension, primes, special primes and dnum, checked for security.

Turns the scale plan (log2 sizes, from scale-management) into concrete RNS-CKKS parameters:
- rescale primes q_1..q_L: NTT-friendly (q = 1 mod 2n), alternately just above and below
  2^r so that repeated rescales keep the scales near their nominal values; the exact log2
  of each prime then becomes the exact divisor of its rescales and every scale is recomputed
  (`compiler.analysis.scales.apply_plan`), so the IR carries exact scales;
- the output modulus Q_0: ceil(bits / 60) primes sharing its bits;
- key switching (only when the program relinearizes or rotates): hybrid key switching with
  dnum = number of primes of Q_L (one prime per digit) and one special prime P at least as
  large as every prime, so the key-switch error divided by P stays below the rescale error;
- security: the largest modulus of a published sample, max(log2 Q_L, log2 Q_key_level·P) (the
  public key is over Q_L, the evaluation keys are generated only up to the highest level a
  key is switched at), must be within the 128-bit bound of the HE Standard for n
  (`compiler.analysis.security`), or `insecure` must be set, in which case the program is
  stamped `insecure = true` and `security_bits = 0`, and every report says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.packed import is_coefficient_program
from compiler.analysis.ranges import value_ranges
from compiler.analysis.scales import ScalePlan, apply_plan, chain_needs, top_level
from compiler.analysis.security import (
    MAX_PRIME_BITS,
    composite_primes,
    log2_product,
    max_log_qp,
    ntt_primes,
    security_bits,
)
from compiler.dialects import ckks
from compiler.errors import InternalError, UserError
from passes.scale_management import key_level_of, needs_key_switch, plan_of


@dataclass(frozen=True)
class ParameterSelectionPass(ModulePass):
    """Choose the primes of the chain and the key-switching parameters; stamp security.

    What it does: module docstring. Assumes: scale-management has recorded its plan.
    Establishes: program attributes `log_n`, `output_moduli`, `moduli`, `special_moduli`,
    `dnum`, `security_bits`, `insecure`; every rescale divides by log2 of its actual prime and
    every scale is exact; the module verifies. Options: `insecure` (accept parameters above the
    128-bit bound; stamped on every output).
    Reference: HE Standard v1.1 Table 1; Han-Ki (hybrid key switching, CT-RSA 2020).
    """

    name = "parameter-selection"

    insecure: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            self.run(program)

    def run(self, program: ckks.ProgramOp) -> None:
        if is_coefficient_program(program):
            return  # coefficient-parameters chose everything
        plan = plan_of(program)
        if plan is None:
            raise InternalError("parameter-selection runs after scale-management")
        levels = top_level(program)
        log_n = plan.log_n
        group = program.primes_per_level_value()
        if not levels:
            rescale: list[int] = []
        elif group > 1:
            # composite scaling: each level's primes chosen to keep its exact scale nominal
            rescale = composite_primes(plan.rescale_bits, log_n, levels, group, plan.input_scale)
        else:
            rescale = ntt_primes(plan.rescale_bits, log_n, levels)
        # Exact scales: rescale q_l divides by log2(q_l) exactly. They differ from the plan's
        # whole bits by fractions of a bit, so Q_0 is checked against the exact needs and
        # grown by a bit when a prime just below 2^b leaves it short.
        divisors = tuple(ckks.ScaleAttr.of({q: 1}) for q in rescale)
        apply_plan(program, ScalePlan(plan.input_scale, divisors, group))
        ranges = value_ranges(program, program.params())
        need = chain_needs(program, divisors, ranges).output_bits
        out_bits = plan.output_bits
        while True:
            count = math.ceil(out_bits / MAX_PRIME_BITS)
            output = ntt_primes(math.ceil(out_bits / count), log_n, count, avoid=set(rescale))
            if log2_product(output) >= need:
                break
            out_bits += 1
        special: list[int] = []
        dnum = 0
        if needs_key_switch(program):
            dnum = len(output) + len(rescale)
            bits = max(math.log2(q) for q in output + rescale)
            special = ntt_primes(
                min(MAX_PRIME_BITS, math.ceil(bits)), log_n, 1, avoid=set(output + rescale)
            )
        params = ckks.Parameters(
            log_n=log_n,
            output_moduli=tuple(output),
            moduli=tuple(rescale),
            special_moduli=tuple(special),
            dnum=dnum,
            security_bits=0,
            insecure=False,
            key_level=key_level_of(program),
        )
        log_qp = params.log_qp
        secure = security_bits(log_n, log_qp)
        if not secure and not self.insecure:
            raise UserError(
                f"the parameters need log2(QP) = {log_qp:.1f} bits at n = 2^{log_n}, above the "
                f"128-bit bound {max_log_qp(log_n)} of the HE Standard",
                hint="raise the ring dimension, lower the precision, or pass --insecure to "
                "accept (and label) insecure parameters",
            )
        program.set_parameters(
            ckks.Parameters(
                log_n=log_n,
                output_moduli=tuple(output),
                moduli=tuple(rescale),
                special_moduli=tuple(special),
                dnum=dnum,
                security_bits=secure,
                insecure=self.insecure and not secure,
            )
        )
