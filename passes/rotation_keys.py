"""Rotation keys: the exact set of Galois keys a program needs, and its hoisting groups.

`ckks.sum_slots` rotates by 1, 2, 4, ..., slots/2 (rotate-and-add doubling, which leaves
the sum of all slots in every slot; Halevi-Shoup); an
explicit `ckks.rotate` needs its own offset. Rotations of one source ciphertext by several
offsets share one digit decomposition (hoisting, Halevi-Shoup 2018): they get one `group`.
The key set is recorded as the program attribute `rotation_keys`; key bytes follow from it
in the report. A program with no rotation needs no Galois key at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs, sum_slots_offsets
from compiler.dialects import ckks
from compiler.errors import InternalError


@dataclass(frozen=True)
class RotationKeysPass(ModulePass):
    """Record the exact rotation-key set and assign hoisting groups.

    What it does: module docstring. Assumes: parameters are selected (`log_n`). Establishes:
    the program attribute `rotation_keys` (sorted offsets), a `group` on every `ckks.rotate`
    (rotations of the same source share it); the module verifies. Options: none.
    """

    name = "rotation-keys"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            params = program.parameters()
            if params is None:
                raise InternalError("rotation-keys runs after parameter-selection")
            offsets: set[int] = set()
            groups: dict[SSAValue, int] = {}
            for o in program.block.ops:
                if isinstance(o, ckks.SumSlotsOp):
                    offsets.update(sum_slots_offsets(params.slots))
                elif isinstance(o, ckks.RotateOp):
                    offsets.add(o.offset_value % params.slots)
                    group = groups.setdefault(o.input, len(groups))
                    o.group = IntegerAttr(group, i64)
            program.set_rotation_keys(sorted(offsets - {0}))
