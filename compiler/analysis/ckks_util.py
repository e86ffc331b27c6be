"""Small helpers the ckks passes share: finding programs, inserting ops next to a value,
retyping a program forward after a change, and recognising scale-alignment multiplies."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.dialects import bfv, ckks


def ckks_programs(module: ModuleOp) -> Iterator[ckks.ProgramOp]:
    for op in list(module.body.block.ops):
        if isinstance(op, ckks.ProgramOp):
            yield op


def bfv_programs(module: ModuleOp) -> Iterator[bfv.ProgramOp]:
    for op in list(module.body.block.ops):
        if isinstance(op, bfv.ProgramOp):
            yield op


def insert_after_value(value: SSAValue, op: Operation) -> SSAValue:
    """Insert `op` right after the definition of `value` (which `op` presumably uses)."""
    owner = value.owner
    assert isinstance(owner, Operation)
    block = owner.parent_block()
    assert block is not None
    block.insert_op_after(op, owner)
    return op.results[0]


def retype_all(program: ckks.ProgramOp) -> None:
    for op in program.block.ops:
        ckks.retype(op)


def is_lift(op: Operation) -> bool:
    """A scale-alignment multiply: mul_const by the public constant 1 (marked `align`)."""
    return isinstance(op, ckks.MulConstOp) and "align" in op.attributes


def ct_uses(value: SSAValue) -> list[tuple[Operation, int]]:
    return [(use.operation, use.index) for use in value.uses]


MUL_OPS: tuple[type[Operation], ...] = (
    ckks.MulOp,
    ckks.DotOp,
    ckks.MulPlainOp,
    ckks.DiagMatvecOp,
)


def make_lift(x: SSAValue, one: SSAValue, ratio: ckks.ScaleAttr) -> ckks.MulConstOp:
    """A multiply by the constant 1 encoded at the exact scale `ratio` (> 1): raises x's scale
    by that factor so it can be added to a value of that scale (no level; exact when `ratio`
    is an integer, else the constant round(ratio)/ratio counts in the noise analysis)."""
    from xdsl.dialects.builtin import UnitAttr

    op = ckks.MulConstOp(x, one, ratio)
    op.attributes["align"] = UnitAttr()
    return op


def sum_slots_offsets(slots: int) -> list[int]:
    """Offsets of the rotate-and-add tree of `ckks.sum_slots`: 1, 2, ..., slots/2. All
    log2(slots) steps are needed for the total to land in every slot (a replicated result);
    the zero padding of the packed axis keeps the extra slots out of the sum."""
    return [1 << k for k in range(slots.bit_length() - 1)]


def needs_relin_key(program: ckks.ProgramOp) -> bool:
    """A relinearization, an unpack of a degree > 1 value (relinearized first), or a
    diagonal matrix-vector product (it relinearizes each giant group)."""
    return any(
        isinstance(op, ckks.RelinearizeOp | ckks.DiagMatvecOp)
        or (isinstance(op, ckks.UnpackComplexOp) and ckks.ct_type(op.input).degree_value > 1)
        for op in program.block.ops
    )


def needs_conjugation_key(program: ckks.ProgramOp) -> bool:
    return any(isinstance(op, ckks.UnpackComplexOp) for op in program.block.ops)
