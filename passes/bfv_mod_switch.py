"""BFV modulus switching before decryption: the coordinator downloads fewer primes.

Every value of a bfv program sits at the top of the chain (bfv-parameters sizes Q for the
deepest value). A revealed value that needs fewer primes is switched down before it leaves
the server: each `bfv.mod_switch` drops the last prime of Q (runtime/bfv: nearest-integer
division, the message modulo t kept), which divides the noise by that prime and adds the
rounding term of t times a small polynomial (`compiler.analysis.bfv_noise`). The pass goes
down while the noise model leaves the value its MARGIN_BITS budget at the lower level, so the
result decrypts exactly as before and its download shrinks by the primes dropped.
Only degree-1 values are switched (the runtime's modulus switching takes two components).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.bfv_noise import MARGIN_BITS, Ring, noise_bits, switched
from compiler.analysis.ckks_util import bfv_programs
from compiler.dialects import bfv, he


@dataclass(frozen=True)
class BfvModSwitchPass(ModulePass):
    """Insert `bfv.mod_switch` before each decrypt, down to the lowest level that keeps the
    budget. Assumes: bfv-parameters ran. Establishes: every decrypted degree-1 value at the
    lowest level the noise model allows; the module verifies."""

    name = "bfv-mod-switch"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in bfv_programs(op):
            self.run(program)

    def run(self, program: bfv.ProgramOp) -> None:
        params = program.parameters()
        if params is None:
            return
        ring = Ring(
            log_n=params.log_n,
            log_t=params.log_t,
            q_bits=tuple(math.log2(q) for q in params.moduli),
            p_bits=tuple(math.log2(p) for p in params.special_moduli),
            dnum=params.dnum,
        )
        noise = noise_bits(program, ring, program.params())
        lowered: dict[SSAValue, SSAValue] = {}
        for d in [op for op in program.block.ops if isinstance(op, bfv.DecryptOp)]:
            value = d.input
            ty = he.ct_type(value)
            if ty.degree_value != 1:
                continue
            if value not in lowered:
                e, level, target = noise[value], ty.level_value, ty.level_value
                while level > 0:
                    e = switched(ring, e, level)
                    if ring.budget(e, level - 1) < MARGIN_BITS:
                        break
                    level -= 1
                    target = level
                current = value
                for _ in range(ty.level_value - target):
                    switch = bfv.ModSwitchOp(current)
                    program.block.insert_op_before(switch, d)
                    current = switch.result
                lowered[value] = current
            d.operands[0] = lowered[value]
