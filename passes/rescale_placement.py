"""Rescale placement: rescale after aggregation, and never where it does not shorten the chain.

The scale of a CKKS value is a product of encoding scales; counting factors gives each value
an exponent e (an input has e = 1, a product adds exponents, an integer constant adds 0, a
real constant or a plaintext adds 1, sums keep the larger). A product of two e = 1 values has
e = 2; multiplying it again would need e = 3 and a modulus to match, so a value with e >= 2
is rescaled (e - 1) before it enters a product. The rescale goes right after the value is
computed, i.e. after the `dot`/`reduce` that aggregated it: one rescale per SNP block instead
of one per individual and SNP block (what Blatt et al. do by hand in their Algorithm 1).

Values that only reach a decryption are not rescaled: a final rescale divides the output by a
prime q but the output modulus must then still hold range·scale/q, so the chain is exactly as
long in bits as without it and one operation longer (PNAS spends a level on it). Likewise a
value that only feeds additions and decryption keeps e = 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs, insert_after_value
from compiler.analysis.levels import forward_levels
from compiler.analysis.scales import ScalePlan, apply_plan, remove_lifts
from compiler.dialects import ckks

# Nominal log2 of a rescale prime until scale-management sizes the chain.
NOMINAL_RESCALE_BITS = 40.0


def exponent_of(op: ckks.CkksOp, e: dict[SSAValue, int]) -> int:
    match op:
        case ckks.EncodeOp():
            return 1
        case ckks.MulOp() | ckks.DotOp() | ckks.DiagMatvecOp():
            return e[op.lhs] + e[op.rhs]
        case ckks.MulPlainOp():
            return e[op.input] + 1
        case ckks.MulConstOp():
            return e[op.input] + (0 if op.is_integer else 1)
        case ckks.AddOp() | ckks.SubOp():
            return max(e[op.lhs], e[op.rhs])
        case ckks.RescaleOp():
            return e[op.input] - 1
        case _:
            return max((e[v] for v in op.operands if v in e), default=1)


@dataclass(frozen=True)
class RescalePlacementPass(ModulePass):
    """Insert `ckks.rescale` before products, after aggregation; none at the outputs.

    What it does: computes the scale exponent of every value (module docstring); for each
    product (`mul`, `dot`, `mul_plain`, real `mul_const`) rescales each operand with
    exponent >= 2 right after its definition (shared by every product that uses it). Then
    places every value in the chain with inputs at the top (forward), inserting `level_down`
    where operands disagree; level-assignment then counts back from the outputs.
    Assumes: lazy-relinearization has run (degrees are final). Establishes: every product
    operand has exponent 1, so no value exceeds exponent 2; the module verifies. Rescale
    divisors are nominal (2^40) until scale-management sets them.
    Reference: EVA (Dathathri et al., PLDI 2020) waterline rescaling; HEIR
    `secret-insert-mgmt-ckks` (rescale after each multiplication) for the contrast.
    """

    name = "rescale-placement"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in ckks_programs(op):
            self.run(program)

    def run(self, program: ckks.ProgramOp) -> None:
        remove_lifts(program)  # alignment is recomputed once the rescales are in place
        e: dict[SSAValue, int] = {}
        rescaled: dict[SSAValue, SSAValue] = {}
        for op in list(program.block.ops):
            if not isinstance(op, ckks.CkksOp):
                continue
            is_product = isinstance(
                op, ckks.MulOp | ckks.DotOp | ckks.MulPlainOp | ckks.DiagMatvecOp
            ) or (isinstance(op, ckks.MulConstOp) and not op.is_integer)
            if is_product:
                for i, v in enumerate(op.operands):
                    if isinstance(v.type, ckks.CtType) and e[v] >= 2:
                        if v not in rescaled:
                            r = insert_after_value(v, ckks.RescaleOp(v, NOMINAL_RESCALE_BITS))
                            e[r] = e[v] - 1
                            rescaled[v] = r
                        op.operands[i] = rescaled[v]
            if op.results and isinstance(op.results[0].type, ckks.CtType | ckks.PtType):
                e[op.results[0]] = exponent_of(op, e)
        top = forward_levels(program)
        apply_plan(program, nominal_plan(top))


def nominal_plan(levels: int) -> ScalePlan:
    """Inputs at 2^40 and rescale primes of 40 bits: nominal values that scale-management
    replaces with the exact ones."""
    return ScalePlan(NOMINAL_RESCALE_BITS, tuple([NOMINAL_RESCALE_BITS] * levels))
