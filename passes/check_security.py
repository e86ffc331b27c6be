"""Checker `check-security`: the parameters of ckks and bfv programs are within the 128-bit
bound of the HE Standard, or explicitly stamped insecure. Reads the IR only; raises
`UserError` (the user can fix it by changing parameters or passing --insecure)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import bfv_programs, ckks_programs
from compiler.analysis.security import HE_STANDARD_128, security_bits
from compiler.errors import UserError


@dataclass(frozen=True)
class CheckSecurityPass(ModulePass):
    """Raise unless log2(Q_L·P) <= the 128-bit bound for n and `security_bits` says 128, or the
    program is stamped `insecure` with `security_bits` 0."""

    name = "check-security"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        programs = [*ckks_programs(op), *bfv_programs(op)]
        for program in programs:
            p = program.parameters()
            if p is None:
                raise UserError("check-security: the program has no parameters")
            actual = security_bits(p.log_n, p.log_qp)
            if p.insecure:
                if p.security_bits != 0:
                    raise UserError("check-security: an insecure program claims security bits")
                continue
            if actual < 128 or p.security_bits != actual:
                bound = HE_STANDARD_128.get(p.log_n, 0)
                raise UserError(
                    f"check-security: log2(QP) = {p.log_qp:.1f} at n = 2^{p.log_n} exceeds "
                    f"the 128-bit bound {bound}, and the program is not marked insecure",
                    hint="recompile without forcing the ring dimension, or pass --insecure",
                )
