"""Checker `check-levels`: every value lies in the chain and every input is encrypted at the
level of its first use. Reads the IR only; raises `InternalError` (a broken invariant is a
bug of an earlier pass, never of the user's program)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.dialects import ckks
from compiler.errors import InternalError


@dataclass(frozen=True)
class CheckLevelsPass(ModulePass):
    """Raise unless: parameters are set; every ciphertext level is <= L (the number of rescale
    primes); every decrypted value is at level 0; and every encryption is at the highest level
    its uses need (level-assignment's invariant). Options: none."""

    name = "check-levels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            params = program.parameters()
            if params is None:
                raise InternalError("check-levels: the program has no parameters")
            top = len(params.moduli)
            for o in program.block.ops:
                for r in o.results:
                    ty = r.type
                    if isinstance(ty, ckks.CtType | ckks.PtType) and ty.level_value > top:
                        raise InternalError(
                            f"check-levels: {o.name} is at level {ty.level_value}, but the "
                            f"chain has only {top} rescale primes"
                        )
                if isinstance(o, ckks.DecryptOp) and ckks.ct_type(o.input).level_value != 0:
                    raise InternalError(
                        f"check-levels: output {o.sym_value} is decrypted at level "
                        f"{ckks.ct_type(o.input).level_value}, not 0 (a prime too many)"
                    )
                if isinstance(o, ckks.EncryptOp):
                    have = ckks.ct_type(o.result).level_value
                    need = 0
                    for use in o.result.uses:
                        user = use.operation
                        if isinstance(user, ckks.LevelDownOp):
                            need = max(need, user.to_level)
                        elif isinstance(user, ckks.RescaleOp):
                            need = max(need, have)
                        elif user.results:
                            ty = user.results[0].type
                            if isinstance(ty, ckks.CtType):
                                need = max(need, ty.level_value)
                    if have != need:
                        raise InternalError(
                            f"check-levels: input {o.source().sym_value} is encrypted at level "
                            f"{have} but first used at level {need}"
                        )
