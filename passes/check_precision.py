"""Checker `check-precision`: the precision promised is the precision delivered. Each revealed
value's error bound (compiler/analysis/noise.py, at the failure probability scale-management
used) under the FINAL parameters (the primes parameter-selection found, the exact scales and
the scale-alignment constants they imply) must meet its target; otherwise compilation fails
naming the output, the bits it reaches and the target, instead of reporting fewer bits than
asked (issue 19, fact 4). Reads the IR only; raises `UserError`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.noise import NoiseModel, error_failure_log2, output_precision
from compiler.analysis.packed import is_coefficient_program
from compiler.analysis.sizes import parse_sizes
from compiler.errors import InternalError, UserError

# Rounding in the plan's bookkeeping (bits are printed to two decimals).
SLACK_BITS = 0.01


class PrecisionShortfall(UserError):  # noqa: N818 (a UserError, named for what it holds)
    """The compiled program keeps fewer bits than promised: `short` maps each such output to
    (bits reached, bits promised). The driver recompiles with those targets raised."""

    def __init__(self, message: str, short: dict[str, tuple[float, float]], hint: str):
        super().__init__(message, hint=hint)
        self.short = short


@dataclass(frozen=True)
class CheckPrecisionPass(ModulePass):
    """Raise a `UserError` naming every revealed value whose error bound under the final
    parameters gives fewer than its target bits (`precision_bits`, or its entry of
    `precision`, "name=bits,...") relative to its range bound."""

    name = "check-precision"

    precision_bits: float = 19.0
    precision: str = ""
    # Bits the decrypt role's noise flooding costs every output (compiler/analysis/flooding.py):
    # the targets hold after it; 0 when compiled for single-party use (--no-flooding).
    flooding_bits: float = 0.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        targets = {k: float(v) for k, v in parse_sizes(self.precision).items()}
        for program in ckks_programs(op):
            if is_coefficient_program(program):
                continue  # exact integer counts: compiler/analysis/packed.py bounds them
            params = program.parameters()
            if params is None:
                raise InternalError("check-precision: the program has no parameters")
            failure = error_failure_log2(program)
            model = NoiseModel(params.log_n, max(params.dnum, 1))
            cost = self.flooding_bits
            short = [
                (p, targets.get(p.name, self.precision_bits))
                for p in output_precision(program, program.params(), model, None, failure)
                if p.precision_bits - cost < targets.get(p.name, self.precision_bits) - SLACK_BITS
            ]
            if short:
                worst = ", ".join(
                    f"{p.name} reaches {_bits(p.precision_bits - cost)} of {t:g} bits"
                    for p, t in short
                )
                if cost > 0:
                    worst += f" after noise flooding, which costs {cost:.1f} bits"
                planned = program.plan.precision.data if program.plan is not None else -math.inf
                limit = (
                    f"the plan on whole-bit scales reached {planned:.2f} bits; the primes found "
                    "are not powers of two, and the constants that align their scales round"
                    if planned - cost >= min(t for _, t in short)
                    else "the largest scales the 128-bit modulus bound allows"
                )
                raise PrecisionShortfall(
                    f"the compiled program does not keep its precision promise: {worst} "
                    f"(error bounds failing with probability 2^{failure:g} per value, "
                    f"n = 2^{params.log_n}); what limits it: {limit}",
                    {p.name: (p.precision_bits - cost, t) for p, t in short},
                    "lower --precision-bits (or that output's --precision), or widen "
                    "--error-confidence",
                )


def _bits(b: float) -> str:
    return f"{b:.2f}" if math.isfinite(b) else str(b)
