"""Level assignment: count levels back from the outputs (DESIGN.md §5).

Each output is decrypted at level 0 (the bottom of the chain); every other value sits at the
highest level any of its consumers needs (one more than a rescale's result, the same as any
other op's result), so each input is encrypted at the level where it is first used: an input
that enters the computation after two rescales of other values is encrypted two primes
shorter, which shrinks its upload and the work on it. `level_down` ops are inserted where a
value feeds consumers at different levels. Reference: EVA's modulus-switch insertion;
Blatt et al. encrypt the phenotype at a lower level by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.levels import backward_levels, record_key_level
from compiler.analysis.scales import apply_plan
from passes.rescale_placement import nominal_plan


@dataclass(frozen=True)
class LevelAssignmentPass(ModulePass):
    """Assign every value its level, counting back from the outputs.

    What it does: removes existing `level_down` ops, recomputes levels backwards (outputs at
    level 0), re-encodes each input at the level of its first use, inserts `level_down` where a
    value feeds consumers at lower levels, and records `key_level`, the highest level at which
    a key switch happens (evaluation keys need no limbs above it: trimmed keys).
    Assumes: rescales are placed. Establishes: the operands of every op agree in level, each
    input's encryption level equals the highest level of its uses; the module verifies.
    """

    name = "level-assignment"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            top = backward_levels(program)
            apply_plan(program, nominal_plan(top))
            record_key_level(program)
