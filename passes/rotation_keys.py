"""Rotation keys: the plan of every slot sum, the exact set of Galois keys, hoisting groups.

`ckks.sum_slots` adds the rotations of a ciphertext by every offset; it is computed in stages
(compiler/analysis/rotations.py): radices r_1 .. r_k, each stage doubly hoisted (one
decomposition and one ModDown shared by its r_i - 1 rotations). Radix 2 throughout is the
rotate-and-add tree (Halevi-Shoup): keys 1, 2, 4, ..., slots/2. The pass costs every staging
with the cost model at the levels the sums run at, and keeps the one with the fewest keys
among those within 10% of the fastest (and within the key-memory budget, when one is given);
the choice is the `radices` attribute of each `ckks.sum_slots`. An explicit `ckks.rotate`
needs its own offset; rotations of one source ciphertext by several offsets share one digit
decomposition (hoisting, Halevi-Shoup 2018): they get one `group`. The key set is recorded as
the program attribute `rotation_keys`; key bytes follow from it in the report. A program with
no rotation needs no Galois key at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs, needs_conjugation_key, needs_relin_key
from compiler.analysis.cost import Units
from compiler.analysis.counts import key_bytes
from compiler.analysis.rotations import SumPlan, candidate_radices, choose, plan_seconds, tree
from compiler.dialects import ckks, he
from compiler.errors import InternalError, UserError, op_location


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


@dataclass(frozen=True)
class RotationKeysPass(ModulePass):
    """Choose the plan of every slot sum, record the exact rotation-key set, assign hoisting
    groups.

    What it does: module docstring. Assumes: parameters are selected (`log_n`, the primes,
    dnum) and levels assigned. Establishes: `radices` on every `ckks.sum_slots` (one plan for
    the program, so the sums share their keys), the program attribute `rotation_keys` (sorted
    offsets), a `group` on every `ckks.rotate` (rotations of the same source share it); the
    module verifies. Options: `key_memory_mib` (0: no budget): the evaluation keys
    (relinearization, conjugation, rotations) must fit in it; the fastest plan that fits is
    taken, and a budget below the rotate-and-add tree's keys is a `UserError` naming the key
    size. `staged` (default on): off keeps the rotate-and-add tree (for comparisons).
    """

    name = "rotation-keys"

    key_memory_mib: float = 0.0
    staged: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            params = program.parameters()
            if params is None:
                raise InternalError("rotation-keys runs after parameter-selection")
            sums = [
                o
                for o in program.block.ops
                if isinstance(o, ckks.SumSlotsOp) and o.axis_value is None
            ]
            one_key = key_bytes(params, program.key_level_value() or 0)
            fixed = int(needs_relin_key(program)) + int(needs_conjugation_key(program))
            offsets: set[int] = set()
            groups: dict[SSAValue, int] = {}
            for o in program.block.ops:
                if isinstance(o, ckks.SumSlotsOp) and o.axis_value is not None:
                    # A grid row sum: the strides C, 2C, ..., (R/2) C (docs/layout.md).
                    offsets.update(row_sum_offsets(o, params.slots))
                if isinstance(o, ckks.DiagMatvecOp):
                    # The baby steps, giant steps and fold of the diagonal method.
                    babies, giants = o.diagonal.rotations()
                    offsets.update(babies + giants)
                if isinstance(o, ckks.ConvertOp):  # packed -> cyclic: x += rot(x, -Q 2^t)
                    offsets.update(o.replications(params.slots))
                if isinstance(o, ckks.RotateOp):
                    offsets.add(o.offset_value % params.slots)
                    group = groups.setdefault(o.input, len(groups))
                    o.group = IntegerAttr(group, i64)
            if sums:
                plan = self.plan(program, sums, params, one_key, fixed + len(offsets - {0}))
                offsets.update(plan.offsets())
                if self.staged:  # else the rotate-and-add tree: no radices
                    for s in sums:
                        s.set_radices(plan.radices)
            program.set_rotation_keys(sorted(offsets - {0}))
            if self.key_memory_mib > 0:
                total = (fixed + len(offsets - {0})) * one_key
                if total > self.key_memory_mib * 2**20:
                    raise UserError(
                        f"the evaluation keys need {_mib(total)} ({fixed + len(offsets - {0})} "
                        f"keys of {_mib(one_key)} each over Q_{program.key_level_value() or 0}"
                        f"·P), above the key-memory budget of {self.key_memory_mib:g} MiB",
                        op_location(sums[0]) if sums else None,
                        hint=f"raise --key-memory to at least {total / 2**20:.2f} MiB",
                    )

    def plan(
        self,
        program: ckks.ProgramOp,
        sums: list[ckks.SumSlotsOp],
        params: ckks.Parameters,
        one_key: int,
        other_keys: int,
    ) -> SumPlan:
        """One plan for every slot sum of the program, costed at each sum's level."""
        u = Units(params.log_n)
        base = len(params.output_moduli)
        special = len(params.special_moduli)
        seconds: dict[tuple[int, ...], float] = {}
        for radices in candidate_radices(params.slots):
            seconds[radices] = sum(
                plan_seconds(
                    u, base + ckks.ct_type(s.input).level_value, special, params.dnum, radices
                )
                for s in sums
            )
        if not self.staged:
            radices = tree(params.slots)
            return SumPlan(radices, seconds[radices])
        allowed: int | None = None
        if self.key_memory_mib > 0:
            allowed = int(self.key_memory_mib * 2**20 // one_key) - other_keys
            least = len(tree(params.slots))
            if allowed < least:
                need = (other_keys + least) * one_key
                raise UserError(
                    f"the rotation keys of the slot sums need at least {least} keys of "
                    f"{_mib(one_key)} each over Q_{program.key_level_value() or 0}·P "
                    f"({_mib(need)} with the other {other_keys} evaluation keys), above the "
                    f"key-memory budget of {self.key_memory_mib:g} MiB",
                    op_location(sums[0]),
                    hint=f"raise --key-memory to at least {need / 2**20:.2f} MiB",
                )
        radices = choose(params.slots, seconds, allowed)
        return SumPlan(radices, seconds[radices])


def row_sum_offsets(op: ckks.SumSlotsOp, slots: int) -> list[int]:
    """The rotations of a row sum of a grid array: C, 2C, ..., (R/2) C with C = slots / R."""
    grid = he.grid_of(ckks.ct_type(op.input).layout_name)
    assert grid is not None
    columns = grid.columns(slots)
    return [columns << k for k in range(grid.rows.bit_length() - 1)]
