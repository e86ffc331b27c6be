"""Checker `check-scales`: every value fits the modulus of its level with its exact scale, and
no scale falls below the rounding floor. Reads the IR only; raises `InternalError`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.ranges import magnitude, range_of, value_ranges
from compiler.analysis.scales import FIT_MARGIN_BITS
from compiler.dialects import ckks
from compiler.errors import InternalError

MIN_SCALE_BITS = 8.0


@dataclass(frozen=True)
class CheckScalesPass(ModulePass):
    """Raise unless, for every ciphertext value x at level l: log2(max|x|) + log2(scale) + 1
    <= log2(Q_l) (the value and its sign fit: decryption is correct), and log2(scale) >= 8.
    Addition operands having equal scales is already an op invariant (verifier)."""

    name = "check-scales"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            params = program.parameters()
            if params is None:
                raise InternalError("check-scales: the program has no parameters")
            ranges = value_ranges(program, program.params())
            for o in program.block.ops:
                for r in o.results:
                    ty = r.type
                    if not isinstance(ty, ckks.CtType):
                        continue
                    bits = math.log2(max(magnitude(range_of(ranges, r)), 1.0)) + ty.scale_bits
                    have = params.modulus_bits(ty.level_value)
                    if bits + FIT_MARGIN_BITS > have:
                        need = bits + FIT_MARGIN_BITS
                        raise InternalError(
                            f"check-scales: {o.name} needs {need:.1f} bits at level "
                            f"{ty.level_value}, but Q_{ty.level_value} has {have:.1f}"
                        )
                    if ty.scale_bits < MIN_SCALE_BITS:
                        raise InternalError(
                            f"check-scales: {o.name} has scale 2^{ty.scale_bits:.1f} < 2^8"
                        )
