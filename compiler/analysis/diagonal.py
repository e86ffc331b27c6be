"""Which stat values the diagonal matrix-vector product can take (docs/layout.md, "Diagonal
layout"): the matrix must be encrypted by its owner in the diagonal layout (an input, or an
owner-side value), the vector must be computable in the cyclic layout (inputs, owner-side
values, elementwise functions of them with public scalars, and diagonal products). The
lowering (passes/lower_stat_to_he.py) and the matrix-chain model's factors
(passes/matrix_chain_ordering.py) read these same predicates, so an order the model prices
is an order the lowering produces."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from compiler.dialects import he, stat


def individual_dims(program: stat.ProgramOp) -> set[object]:
    """The dimensions whose rows belong to different data owners (the individuals): the
    leading axis of a secret input matrix that is no secret input matrix's column axis. Their
    rows are encrypted, streamed and split among owners row by row (`encrypt --rows`), which
    the diagonal layout (every ciphertext mixes all rows) cannot be."""
    lead: set[object] = set()
    cols: set[object] = set()
    for op in program.inputs():
        ty = stat.tensor_type(op.result)
        if ty.rank == 2 and ty.is_secret:
            lead.add(ty.dims[0])
            cols.add(ty.dims[1])
    return lead - cols


def diagonal_input(v: SSAValue) -> bool:
    """A rank-2 value one owner encrypts whole (an input or owner-side value, not a transpose,
    whose rows are not individuals)."""
    op = v.owner
    if stat.tensor_type(v).rank != 2 or not isinstance(op, stat.InputOp | stat.OwnerComputeOp):
        return False
    program = op.parent_op()
    while program is not None and not isinstance(program, stat.ProgramOp):
        program = program.parent_op()
    if program is None:
        return False
    return stat.tensor_type(v).dims[0] not in individual_dims(program)


def cyclic_value(v: SSAValue, memo: dict[SSAValue, bool] | None = None) -> bool:
    """A rank-1 value the lowering can produce in the cyclic layout (each value judged once:
    a chain of squarings shares its operands)."""
    memo = {} if memo is None else memo
    if v in memo:
        return memo[v]
    op = v.owner
    found = False
    if stat.tensor_type(v).rank == 1:
        match op:
            case stat.InputOp() | stat.OwnerComputeOp():
                found = True
            case stat.BroadcastOp():
                # A scalar in every slot (padding included: the cyclic padding is don't-care).
                found = stat.tensor_type(op.input).rank == 0
            case stat.AddOp() | stat.SubOp() | stat.MulOp():
                found = all(cyclic_value(x, memo) for x in (op.lhs, op.rhs))
            case stat.DivOp():
                found = stat.tensor_type(op.rhs).rank == 0 and cyclic_value(op.lhs, memo)
            case stat.NegOp() | stat.PowOp() | stat.PolyOp():
                found = cyclic_value(op.input, memo)
            case stat.MatmulOp():
                found = (
                    stat.tensor_type(op.lhs).rank == 2
                    and diagonal_input(op.lhs)
                    and cyclic_value(op.rhs, memo)
                )
            case _:
                found = False
    memo[v] = found
    return found


def slots_needed(program: Operation) -> int:
    """The fewest slots the diagonal and cyclic arrays of a he or ckks program need: every
    period (max(P, Q) of a diagonal matrix, Q of a cyclic vector) must fit in one ciphertext."""
    need = 1
    for op in program.walk():
        for r in op.results:
            if isinstance(r.type, he.CiphertextType | he.PlaintextType):
                layout = r.type.layout_name
                d = he.diagonal_of(layout)
                if d is not None:
                    need = max(need, d.period)
                q = he.cyclic_of(layout)
                if q is not None:
                    need = max(need, q)
    return need
