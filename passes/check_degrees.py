"""Checker `check-degrees`: no ciphertext exceeds the degree limit, and every rotation acts
on a relinearized ciphertext. Reads the IR only; raises `InternalError`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import bfv_programs, ckks_programs
from compiler.dialects import bfv, ckks, he
from compiler.errors import InternalError


@dataclass(frozen=True)
class CheckDegreesPass(ModulePass):
    """Raise if a ciphertext has degree > `max_degree` (default 4, as lazy-relinearization) or
        a rotation input has degree > 1; in a bfv program also if a product has an operand of degree
    > 1 (the HPS multiply takes two-component ciphertexts)."""

    name = "check-degrees"

    max_degree: int = 4

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            for o in program.block.ops:
                for r in o.results:
                    ty = r.type
                    if isinstance(ty, ckks.CtType) and ty.degree_value > self.max_degree:
                        raise InternalError(
                            f"check-degrees: {o.name} makes a degree-{ty.degree_value} "
                            f"ciphertext (limit {self.max_degree})"
                        )
                rotation = isinstance(o, ckks.RotateOp | ckks.SumSlotsOp)
                if rotation and ckks.ct_type(o.operands[0]).degree_value != 1:
                    raise InternalError(f"check-degrees: {o.name} on a degree > 1 input")

        for program in bfv_programs(op):
            for o in program.block.ops:
                for r in o.results:
                    ty = r.type
                    if isinstance(ty, he.CtType) and ty.degree_value > self.max_degree:
                        raise InternalError(
                            f"check-degrees: {o.name} makes a degree-{ty.degree_value} "
                            f"ciphertext (limit {self.max_degree})"
                        )
                key_switch = isinstance(o, bfv.RotateOp | bfv.SumSlotsOp)
                product = isinstance(o, bfv.MulOp | bfv.DotOp)
                if (key_switch or product) and any(
                    he.ct_type(x).degree_value != 1 for x in o.operands
                ):
                    raise InternalError(f"check-degrees: {o.name} on a degree > 1 input")
