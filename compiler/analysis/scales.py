"""Exact scales of a ckks program under a scale plan, and the chain a plan needs.

A plan fixes the encoding scale Delta of inputs at the top level L and the divisor (log2 of
the rescale prime) of every level. An exponent-1 value at level l then has the scale
S_l: S_L = Delta and S_(l-1) = 2·S_l - log2(q_l) (a product of two exponent-1 values
rescaled by q_l). Inputs first used at level l are encoded at S_l, real constants at S_l, and
where an addition still meets two different scales the smaller operand is multiplied by the
constant 1 encoded at 2^(difference) ("lift", exact for an integer difference). `apply_plan`
rewrites the program so every type carries its exact scale; `chain_needs` then reads off the
modulus each level must have: every value x at level l needs log2|x|max + scale + 1 bits
(the sign) in Q_l, and Q_0 = the output modulus is sized from that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import FloatAttr, f64
from xdsl.ir import Operation, SSAValue

from compiler.analysis.ckks_util import is_lift, make_lift
from compiler.analysis.ranges import magnitude, range_of
from compiler.dialects import ckks
from compiler.errors import InternalError
from compiler.types import Interval


@dataclass(frozen=True)
class ScalePlan:
    input_scale: float
    divisors: tuple[float, ...]  # divisors[l - 1] = log2 q_l for l = 1..L

    def level_scales(self) -> list[float]:
        """S_0..S_L."""
        top = len(self.divisors)
        scales = [0.0] * (top + 1)
        scales[top] = self.input_scale
        for level in range(top, 0, -1):
            scales[level - 1] = 2.0 * scales[level] - self.divisors[level - 1]
        return scales


def top_level(program: ckks.ProgramOp) -> int:
    levels = [
        ty.level_value
        for op in program.block.ops
        for r in op.results
        if isinstance(ty := r.type, ckks.CtType | ckks.PtType)
    ]
    return max(levels, default=0)


def _one(program: ckks.ProgramOp) -> SSAValue:
    for op in program.block.ops:
        if isinstance(op, ckks.ConstantOp) and op.float_value == 1.0:
            return op.result
    const = ckks.ConstantOp(1.0)
    params = [op for op in program.block.ops if isinstance(op, ckks.ParamOp)]
    if params:
        program.block.insert_op_after(const, params[-1])
    else:
        first = program.block.first_op
        assert first is not None
        program.block.insert_op_before(const, first)
    return const.result


def remove_lifts(program: ckks.ProgramOp) -> None:
    for op in list(program.block.ops):
        if is_lift(op):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.detach()
            op.erase()


def apply_plan(program: ckks.ProgramOp, plan: ScalePlan) -> None:
    """Give every value its exact scale under `plan` (see the module docstring).

    With exact primes the level scales S_l are not whole bits, and two operands of an addition
    can differ by a fraction of a bit (a value brought down by `level_down` keeps the scale of
    the level it came from). Multiplying by an integer cannot fix a fractional difference, so
    the encoding scale of an input used only on one side of that addition is shifted by the
    difference instead (the input is encoded at exactly the scale that makes the sum line up);
    what remains is a whole number of bits, fixed exactly by a lift."""
    offsets: dict[Operation, float] = {}
    for _ in range(32):
        _apply_once(program, plan, offsets)
        mismatch = _first_fractional_mismatch(program)
        if mismatch is None:
            return
        op, diff = mismatch
        fixed = False
        for index, sign in ((1, 1.0), (0, -1.0)):
            for encode in _private_inputs(op.operands[index], op):
                trial = dict(offsets)
                trial[encode] = trial.get(encode, 0.0) + sign * diff
                _apply_once(program, plan, trial)
                after = _fraction(_mismatch_of(op))
                if abs(after) < abs(diff) * 1e-6 + 1e-12:
                    offsets = trial
                    fixed = True
                    break
            if fixed:
                break
        if not fixed:
            _apply_once(program, plan, offsets)
            return  # the fractional lift stays; the noise analysis counts its rounding


def _fraction(diff: float) -> float:
    return diff - round(diff)


def _mismatch_of(op: Operation) -> float:
    return _scale_of(op.operands[0]) - _scale_of(op.operands[1])


def _first_fractional_mismatch(program: ckks.ProgramOp) -> tuple[Operation, float] | None:
    for op in program.block.ops:
        if (
            isinstance(op, ckks.MulConstOp)
            and is_lift(op)
            and abs(_fraction(op.const_scale_bits)) > 1e-9
        ):
            for use in op.results[0].uses:
                user = use.operation
                if isinstance(user, ckks.AddOp | ckks.SubOp):
                    # The scales the addition saw before alignment.
                    a = user.operands[0]
                    b = user.operands[1]
                    sa = _scale_of(_unlift(a))
                    sb = _scale_of(_unlift(b))
                    return user, _fraction(sa - sb)
    return None


def _unlift(v: SSAValue) -> SSAValue:
    owner = v.owner
    return owner.operands[0] if isinstance(owner, Operation) and is_lift(owner) else v


def _private_inputs(value: SSAValue, consumer: Operation) -> list[Operation]:
    """Encode ops in the backward cone of `value` all of whose uses stay inside that cone
    (or feed `consumer`): shifting their scale shifts only this operand of `consumer`."""
    cone: set[Operation] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        owner = v.owner
        if not isinstance(owner, Operation) or owner in cone:
            continue
        cone.add(owner)
        stack.extend(owner.operands)
    private: list[Operation] = []
    for op in cone:
        if not isinstance(op, ckks.EncodeOp):
            continue
        ok = True
        seen: set[Operation] = set()
        frontier: list[Operation] = [op]
        while frontier and ok:
            cur = frontier.pop()
            for r in cur.results:
                for use in r.uses:
                    user = use.operation
                    if user is consumer or user in seen:
                        continue
                    if user not in cone:
                        ok = False
                        break
                    seen.add(user)
                    frontier.append(user)
        if ok:
            private.append(op)
    return private


def _apply_once(program: ckks.ProgramOp, plan: ScalePlan, offsets: dict[Operation, float]) -> None:
    remove_lifts(program)
    scales = plan.level_scales()
    one: list[SSAValue] = []  # the constant 1, created on first need
    for op in list(program.block.ops):
        if isinstance(op, ckks.EncodeOp):
            ty = op.result.type
            assert isinstance(ty, ckks.PtType)
            op.result._type = ckks.PtType.get(  # pyright: ignore[reportPrivateUsage]
                ty.dims,
                ty.layout_name,
                ty.level_value,
                scales[ty.level_value] + offsets.get(op, 0.0),
            )
            continue
        if isinstance(op, ckks.RescaleOp):
            level = ckks.ct_type(op.input).level_value
            op.divisor = FloatAttr(plan.divisors[level - 1], f64)
        elif isinstance(op, ckks.MulConstOp) and not op.is_integer:
            level = ckks.ct_type(op.input).level_value
            op.const_scale = FloatAttr(scales[level], f64)
        elif isinstance(op, ckks.AddOp | ckks.SubOp | ckks.AddPlainOp):
            _align(op, 0, 1, one)
        ckks.retype(op)


def _scale_of(v: SSAValue) -> float:
    ty = v.type
    assert isinstance(ty, ckks.CtType | ckks.PtType)
    return ty.scale_bits


def _align(op: Operation, i: int, j: int, one: list[SSAValue]) -> None:
    a, b = op.operands[i], op.operands[j]
    sa, sb = _scale_of(a), _scale_of(b)
    if ckks.same_scale(sa, sb):
        return
    program = op.parent_op()
    assert isinstance(program, ckks.ProgramOp)
    if not one:
        one.append(_one(program))
    low, diff = (i, sb - sa) if sa < sb else (j, sa - sb)
    if not isinstance(op.operands[low].type, ckks.CtType):
        raise InternalError("a plaintext operand cannot be lifted; encode it at the scale")
    lift = make_lift(op.operands[low], one[0], diff)
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(lift, op)
    op.operands[low] = lift.result


@dataclass(frozen=True)
class ChainNeeds:
    """What a scaled program asks of the chain: Q_0 bits, and the smallest scale."""

    output_bits: float
    min_scale: float


def chain_needs(
    program: ckks.ProgramOp, divisors: tuple[float, ...], ranges: Mapping[SSAValue, Interval]
) -> ChainNeeds:
    """The bits Q_0 must have so that every value fits its level's modulus."""
    above = [0.0]
    for d in divisors:
        above.append(above[-1] + d)
    need = 0.0
    min_scale = math.inf
    for op in program.block.ops:
        for r in op.results:
            ty = r.type
            if not isinstance(ty, ckks.CtType):
                continue
            bound = max(magnitude(range_of(ranges, r)), 1.0)
            if ty.layout_name == ckks.COMPLEX:
                bound *= math.sqrt(2.0)  # a slot holds a + bi, |a|, |b| <= bound
            bits = math.log2(bound) + ty.scale_bits + 1.0
            need = max(need, bits - above[ty.level_value])
            min_scale = min(min_scale, ty.scale_bits)
    return ChainNeeds(need, min_scale)
