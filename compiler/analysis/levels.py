"""Levels of a ckks program: placing every value in the modulus chain Q_0 | Q_1 | ... | Q_L.

Two placements: `forward_levels` puts every input at the top of the chain and lets each
rescale move down one level (what a program without level management does), `backward_levels`
counts from the outputs (decrypted at level 0) back to the inputs, so each value, and each
input's encryption, sits at the lowest level its consumers allow. Both insert the
`ckks.level_down` ops that make the operands of every op agree, and retype the program's
levels; the caller then re-aligns scales (`compiler.analysis.scales.apply_plan`).
"""

from __future__ import annotations

import contextlib

from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from compiler.analysis.ckks_util import insert_after_value
from compiler.dialects import ckks


def _remove_level_downs(program: ckks.ProgramOp) -> None:
    for op in list(program.block.ops):
        if isinstance(op, ckks.LevelDownOp):
            op.result.replace_all_uses_with(op.input)
            op.detach()
            op.erase()


def _is_ct(v: SSAValue) -> bool:
    return isinstance(v.type, ckks.CtType | ckks.PtType)


def _apply(program: ckks.ProgramOp, level: dict[SSAValue, int]) -> None:
    """Set encode levels from `level`, insert level_downs where an operand sits higher than its
    consumer needs, and retype forward."""
    drops: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in list(program.block.ops):
        if isinstance(op, ckks.EncodeOp):
            ty = op.result.type
            assert isinstance(ty, ckks.PtType)
            op.result._type = ckks.PtType.get(  # pyright: ignore[reportPrivateUsage]
                ty.dims, ty.layout_name, level[op.result], ty.scale
            )
            continue
        want = _operand_level(op, level)
        for i, v in enumerate(op.operands):
            if not isinstance(v.type, ckks.CtType) or want is None:
                continue
            if level[v] > want:
                key = (v, want)
                if key not in drops:
                    drops[key] = insert_after_value(v, ckks.LevelDownOp(v, want))
                op.operands[i] = drops[key]
        # Scales may disagree until the caller re-aligns them (apply_plan): levels first.
        with contextlib.suppress(VerifyException):
            ckks.retype(op)


def _operand_level(op: Operation, level: dict[SSAValue, int]) -> int | None:
    """The level the ciphertext operands of `op` must have."""
    if isinstance(op, ckks.DecryptOp):
        return 0  # outputs are decrypted from the bottom of the chain (smallest download)
    if not op.results or not _is_ct(op.results[0]):
        return None
    out = level[op.results[0]]
    return out + 1 if isinstance(op, ckks.RescaleOp) else out


def forward_levels(program: ckks.ProgramOp) -> int:
    """Inputs at the top level L (= the most rescales on any path); returns L."""
    _remove_level_downs(program)
    depth: dict[SSAValue, int] = {}
    for op in program.block.ops:
        if not op.results or not _is_ct(op.results[0]):
            continue
        ins = [depth[v] for v in op.operands if _is_ct(v)]
        d = max(ins, default=0)
        depth[op.results[0]] = d + 1 if isinstance(op, ckks.RescaleOp) else d
    top = max(depth.values(), default=0)
    level = {v: top - d for v, d in depth.items()}
    _apply(program, level)
    return top


def backward_levels(program: ckks.ProgramOp) -> int:
    """Outputs at level 0; every value at the highest level any consumer needs (so each input
    is encrypted at the level of its first use). Returns the top level L."""
    _remove_level_downs(program)
    level: dict[SSAValue, int] = {}
    for op in reversed(list(program.block.ops)):
        if isinstance(op, ckks.DecryptOp):
            level[op.input] = max(level.get(op.input, 0), 0)
            continue
        if not op.results or not _is_ct(op.results[0]):
            continue
        out = op.results[0]
        if out not in level:
            level[out] = 0  # an unused value (dead code) sits at the bottom
        want = level[out] + 1 if isinstance(op, ckks.RescaleOp) else level[out]
        for v in op.operands:
            if _is_ct(v):
                level[v] = max(level.get(v, 0), want)
    _apply(program, level)
    return max(level.values(), default=0)


def record_key_level(program: ckks.ProgramOp) -> None:
    """Record the highest level at which `program` switches keys (None when it does not): the
    evaluation keys are generated only up to it."""
    levels = [
        ckks.ct_type(o.operands[0]).level_value
        for o in program.block.ops
        if isinstance(o, ckks.KEY_SWITCH_OPS)
    ]
    program.set_key_level(max(levels) if levels else None)


# Nominal prime size for retyping a composite program before the scale search.
NOMINAL_BITS = 40.0


def make_composite(program: ckks.ProgramOp, group: int) -> int:
    """Composite scaling: every rescale becomes `group` rescales in a row (each drops one
    prime), so a multiplicative level spans `group` primes and its scale may be as large as
    their product, beyond the 60 bits one prime holds (the precision that noise flooding asks
    for at depth: docs/precision.md, "Composite scaling"). Levels are counted again from the
    outputs, the key level is recorded, and the program is marked (`primes_per_level`); scales
    are left for `compiler.analysis.scales.apply_plan` with a plan of the same group. Returns
    the top level L (a multiple of `group`)."""
    if group < 1 or program.primes_per_level_value() != 1:
        raise ValueError(
            f"make_composite: group {group} on a program of group "
            f"{program.primes_per_level_value()}"
        )
    for op in list(program.block.ops):
        if not isinstance(op, ckks.RescaleOp):
            continue
        last: SSAValue = op.result
        users = list(op.result.uses)
        for _ in range(group - 1):
            extra = ckks.RescaleOp(last, op.divisor)
            last = insert_after_value(last, extra)
        for use in users:
            use.operation.operands[use.index] = last
    from compiler.analysis.scales import ScalePlan, apply_plan

    top = backward_levels(program)
    # Retype at nominal scales (a level-assignment's types stay stale where scales disagreed).
    apply_plan(program, ScalePlan(NOMINAL_BITS * group, (NOMINAL_BITS,) * top, group))
    record_key_level(program)
    program.set_primes_per_level(group)
    return top
