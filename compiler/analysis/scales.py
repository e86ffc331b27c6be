"""Exact scales of a ckks program under a scale plan, and the chain a plan needs.

A plan fixes the encoding scale Delta of inputs at the top level L and the divisor (the
rescale prime q_l: nominally 2^r, the prime itself once chosen) of every level. Scales are
exact (`ckks.ScaleAttr`: products of powers of 2 and of the primes). An exponent-1 value at
level l has the scale S_l: S_L = 2^Delta and S_(l-1) = S_l^2 / q_l (a product of two
exponent-1 values rescaled by q_l). Inputs first used at level l are encoded at S_l, real
constants at S_l, and where an addition still meets two different scales one side is
adjusted so they are exactly equal (`apply_plan`: a constant multiply takes the ratio, or an
input's encoding scale, or a multiply by the constant 1 encoded at the ratio, a "lift",
exact for 2^k). `apply_plan` rewrites the program so every type carries its exact scale;
`chain_needs` then reads off the
modulus each level must have: every value x at level l needs log2|x|max + scale + 1 bits
(the sign) in Q_l, and Q_0 = the output modulus is sized from that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from compiler.analysis.ckks_util import is_lift, make_lift
from compiler.analysis.ranges import magnitude, range_of
from compiler.dialects import ckks
from compiler.errors import InternalError
from compiler.types import Interval


@dataclass(frozen=True)
class ScalePlan:
    input_scale: float  # log2 Delta, a whole number of bits
    divisors: tuple[ckks.ScaleAttr | float, ...]  # q_l for l = 1..L (nominal: log2 q_l bits)
    # Primes per multiplicative level (composite scaling, `make_composite`): a product at
    # level g·m is rescaled g times, by q_(g·m), ..., q_(g·m-g+1), so S_(g·(m-1)) =
    # S_(g·m)^2 / (q_(g·m) ··· q_(g·m-g+1)); the levels in between hold only the product on
    # its way down. 1: one prime per level.
    group: int = 1

    @property
    def primes(self) -> tuple[ckks.ScaleAttr, ...]:
        return tuple(ckks.ScaleAttr.coerce(d) for d in self.divisors)

    def level_scales(self) -> list[ckks.ScaleAttr]:
        """S_0..S_L, exact. Under composite scaling (group g > 1) the scale of a level between
        two multiplicative levels is that of a product partly rescaled (no value is encoded
        there)."""
        top = len(self.divisors)
        g = self.group
        if top % g:
            raise InternalError(f"{top} levels are not whole groups of {g} primes")
        primes = self.primes
        scales = [ckks.ScaleAttr.one()] * (top + 1)
        scales[top] = ckks.ScaleAttr.pow2(self.input_scale)
        for level in range(top, 0, -g):
            scale = scales[level].power(2)
            for j in range(1, g + 1):
                scale = scale.over(primes[level - j])
                scales[level - j] = scale
        return scales


def is_adjust(op: Operation) -> bool:
    """A scale-exact level drop's multiply (make_drops_exact): mul_const by 1, marked."""
    return isinstance(op, ckks.MulConstOp) and "adjust" in op.attributes


def make_drops_exact(program: ckks.ProgramOp, group: int) -> None:
    """Under composite scaling, every `level_down` from level a to b becomes a drop to b + g
    (when a > b + g), a multiply by the constant 1 encoded at S_b·q_(b+1)···q_(b+g) / S
    (S the operand's scale), and g rescales: the value arrives at level b with exactly the
    level's scale S_b. A plain level_down keeps the scale of the level it came from, and the
    ratio to S_b, a product of prime ratios, is 1 + 2^-15 or so for the 30-bit primes of a
    composite chain: an addition meeting it would be aligned by an integer lift accurate to
    that ratio only (15 bits). The constant here is encoded at about 2^(2r) and rounds by
    2^-(2r) of the value. Costs one plaintext-constant multiply and g rescales per drop."""
    from xdsl.dialects.builtin import UnitAttr

    one: SSAValue | None = None
    for op in list(program.block.ops):
        if not isinstance(op, ckks.LevelDownOp):
            continue
        src = op.input
        have = ckks.ct_type(src).level_value
        to = op.to_level
        if one is None:
            one = _one(program)
        block = op.parent_block()
        assert block is not None
        x = src
        if have > to + group:
            drop = ckks.LevelDownOp(src, to + group)
            block.insert_op_before(drop, op)
            x = drop.result
        mul = ckks.MulConstOp(x, one, ckks.ScaleAttr.one())
        mul.attributes["adjust"] = UnitAttr()
        block.insert_op_before(mul, op)
        last = mul.results[0]
        for _ in range(group):
            resc = ckks.RescaleOp(last, ckks.ScaleAttr.one())
            block.insert_op_before(resc, op)
            last = resc.result
        op.result.replace_all_uses_with(last)
        op.detach()
        op.erase()


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


def is_exact_lift(ratio: ckks.ScaleAttr) -> bool:
    """A lift by 2^k (k >= 0) multiplies by an integer: no rounding."""
    k = ratio.pow2_bits
    return k is not None and k >= 0


def apply_plan(program: ckks.ProgramOp, plan: ScalePlan) -> None:
    """Give every value its exact scale under `plan` (see the module docstring).

    With exact primes the level scales S_l are not powers of two, and the two operands of an
    addition can differ by a ratio of primes (a value brought down by `level_down` keeps the
    scale of the level it came from). Where they differ the compiler adjusts one side so the
    scales are EXACTLY equal (the runtime refuses anything else), in this order of preference:
    1. a real-constant multiply feeding only that operand takes the ratio into its encoding
       scale (`const_scale` = S_l times the ratio: folded into an existing multiplication, no
       new op, and the constant keeps ~S_l bits);
    2. an input used only on one side is encoded at its scale times the ratio;
    3. a lift (the constant 1 encoded at the ratio: exact for 2^k, else rounded to an integer,
       whose error the noise analysis counts)."""
    offsets: dict[Operation, ckks.ScaleAttr] = {}
    for _ in range(32):
        _apply_once(program, plan, offsets)
        mismatch = _first_inexact_mismatch(program)
        if mismatch is None:
            return
        op, ratio = mismatch
        # Only the part of the ratio that is not a power of two needs moving (a lift by 2^k
        # is exact): the encoding changes by less than a bit. Moving the whole ratio took an
        # input's scale from 2^51 to 2^0 when the operands sat 51 bits apart.
        ratio = ratio.over(ckks.ScaleAttr.pow2(float(round(ratio.bits))))
        fixed = False
        for index, inverse in ((1, False), (0, True)):
            for encode in _private_inputs(op.operands[index], op):
                trial = dict(offsets)
                shift = ratio.inverse() if inverse else ratio
                trial[encode] = trial.get(encode, ckks.ScaleAttr.one()).times(shift)
                _apply_once(program, plan, trial)
                a, b = (_scale_of(_unlift(v)) for v in op.operands[:2])
                if is_exact_lift(a.over(b)) or is_exact_lift(b.over(a)):
                    offsets = trial
                    fixed = True
                    break
            if fixed:
                break
        if not fixed:
            _apply_once(program, plan, offsets)
            return  # the inexact lift stays; the noise analysis counts its rounding


def _first_inexact_mismatch(program: ckks.ProgramOp) -> tuple[Operation, ckks.ScaleAttr] | None:
    """The first addition aligned by an inexact lift, and the ratio lhs / rhs of its scales."""
    for op in program.block.ops:
        if isinstance(op, ckks.MulConstOp) and is_lift(op) and not is_exact_lift(op.const_scale):
            for use in op.results[0].uses:
                user = use.operation
                if isinstance(user, ckks.AddOp | ckks.SubOp):
                    sa = _scale_of(_unlift(user.operands[0]))
                    sb = _scale_of(_unlift(user.operands[1]))
                    return user, sa.over(sb)
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


def _apply_once(
    program: ckks.ProgramOp, plan: ScalePlan, offsets: dict[Operation, ckks.ScaleAttr]
) -> None:
    remove_lifts(program)
    scales = plan.level_scales()
    primes = plan.primes
    one: list[SSAValue] = []  # the constant 1, created on first need
    for op in list(program.block.ops):
        if isinstance(op, ckks.EncodeOp):
            ty = op.result.type
            assert isinstance(ty, ckks.PtType)
            scale = scales[ty.level_value].times(offsets.get(op, ckks.ScaleAttr.one()))
            op.result._type = ckks.PtType.get(  # pyright: ignore[reportPrivateUsage]
                ty.dims, ty.layout_name, ty.level_value, scale
            )
            continue
        if isinstance(op, ckks.RescaleOp):
            level = ckks.ct_type(op.input).level_value
            op.divisor = primes[level - 1]
        elif isinstance(op, ckks.MulConstOp) and is_adjust(op):
            # A level drop by rescales (make_drops_exact): the constant 1 at the scale that
            # brings the operand's scale, divided by the primes dropped, exactly to S_to.
            level = ckks.ct_type(op.input).level_value
            dropped = primes[level - plan.group : level]
            # The operand is S_a^e at its source level a (e = 2: a product awaiting its
            # rescale); it must arrive as S_b^e.
            src = op.input
            if isinstance(src.owner, ckks.LevelDownOp):
                src = src.owner.input
            have = scales[ckks.ct_type(src).level_value]
            e = max(1, round(_scale_of(op.input).bits / max(have.bits, 1.0)))
            target = scales[level - plan.group].power(e)
            for q in dropped:
                target = target.times(q)
            # A constant below 1 cannot be encoded: where the operand's scale is more than
            # the primes above S_b^e (a scale growing level by level, which the search
            # weighs and the precision check rejects), the drop keeps the rest, like a plain
            # level_down, and an addition it meets is aligned as before.
            ratio = target.over(_scale_of(op.input))
            op.const_scale = ratio if ratio.bits >= 0.0 else ckks.ScaleAttr.one()
        elif isinstance(op, ckks.MulConstOp) and not op.is_integer:
            level = ckks.ct_type(op.input).level_value
            op.const_scale = scales[level]
        elif isinstance(op, ckks.AddOp | ckks.SubOp):
            _align(op, one)
        elif isinstance(op, ckks.AddPlainOp):
            _align_plain(op, one)
        ckks.retype(op)


def _scale_of(v: SSAValue) -> ckks.ScaleAttr:
    ty = v.type
    assert isinstance(ty, ckks.CtType | ckks.PtType)
    return ty.scale


# Ops that keep their operand's scale: a constant multiply behind a chain of them (each the
# only use of the one before) can still take an alignment ratio.
_SCALE_KEEPING = (ckks.LevelDownOp, ckks.NegateOp, ckks.RelinearizeOp)


def _foldable_const(v: SSAValue, consumer: Operation) -> list[Operation] | None:
    """[mul_const, op, ..., op] from a real-constant multiply to `v` through scale-keeping ops,
    each result used only by the next (the last only by `consumer`); None when there is none."""
    chain: list[Operation] = []
    while True:
        owner = v.owner
        if not isinstance(owner, Operation):
            return None
        users = {use.operation for use in v.uses}
        if users != {chain[0] if chain else consumer}:
            return None
        chain.insert(0, owner)
        if is_adjust(owner):
            return None  # its scale is fixed by the level drop it makes exact
        if isinstance(owner, ckks.MulConstOp) and not owner.is_integer and not is_lift(owner):
            # A mask's const_scale stays its level's nominal scale: a smaller one would round
            # the 0/1 vector coarsely (its error is a fresh encoding's over const_scale).
            return None if owner.is_masked else chain
        if not isinstance(owner, _SCALE_KEEPING):
            return None
        v = owner.operands[0]


def _align(op: Operation, one: list[SSAValue]) -> None:
    a, b = op.operands[0], op.operands[1]
    sa, sb = _scale_of(a), _scale_of(b)
    if ckks.same_scale(sa, sb):
        return
    low, high = (0, 1) if sa.bits < sb.bits else (1, 0)
    target = _scale_of(op.operands[high])
    ratio = target.over(_scale_of(op.operands[low]))
    if not is_exact_lift(ratio):
        # 1. Fold the ratio into a constant multiply on either side: the low side's constant
        # takes the whole ratio; the high side's only its part that is not a power of two
        # (within half a bit of 1), and an exact lift by 2^k then takes the rest. Lowering
        # the high side by the whole ratio took a later rescale below the floor (a degree-9
        # Horner form over [-1e6, 1e6] ended at scale 2^-2).
        pow2 = ckks.ScaleAttr.pow2(float(round(ratio.bits)))
        for index, factor in ((low, ratio), (high, pow2.over(ratio))):
            chain = _foldable_const(op.operands[index], op)
            if chain is None:
                continue
            mul = chain[0]
            assert isinstance(mul, ckks.MulConstOp)
            scale = mul.const_scale.times(factor)
            if scale.bits < 1.0:
                continue
            mul.const_scale = scale
            for link in chain:
                ckks.retype(link)
            if index == low or ckks.same_scale(
                _scale_of(op.operands[0]), _scale_of(op.operands[1])
            ):
                return
            ratio = pow2  # what is left: an exact lift of the low side
            break
    program = op.parent_op()
    assert isinstance(program, ckks.ProgramOp)
    if not one:
        one.append(_one(program))
    lift = make_lift(op.operands[low], one[0], ratio)
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(lift, op)
    op.operands[low] = lift.result


def _align_plain(op: ckks.AddPlainOp, one: list[SSAValue]) -> None:
    """A plaintext added to a ciphertext: encoded at the ciphertext's scale when only this
    addition uses it, else the ciphertext is lifted to the plaintext's."""
    sa, sp = _scale_of(op.input), _scale_of(op.plain)
    if ckks.same_scale(sa, sp):
        return
    enc = op.plain.owner
    if isinstance(enc, ckks.EncodeOp) and {u.operation for u in op.plain.uses} == {op}:
        ty = ckks.pt_type(op.plain)
        op.plain._type = ckks.PtType.get(  # pyright: ignore[reportPrivateUsage]
            ty.dims, ty.layout_name, ty.level_value, sa
        )
        return
    if sp.bits < sa.bits:
        raise InternalError("a plaintext operand cannot be lifted; encode it at the scale")
    program = op.parent_op()
    assert isinstance(program, ckks.ProgramOp)
    if not one:
        one.append(_one(program))
    lift = make_lift(op.input, one[0], sp.over(sa))
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(lift, op)
    op.operands[0] = lift.result


# Bits a level's modulus needs above log2(range bound * scale): centred coefficients stay below
# Q/2 (one bit), and one bit of margin for the noise encryption adds to a value at its range's
# edge. The runtime's encoder refuses anything closer (ckks/encoder.cpp), so the compiler plans,
# and check-scales checks, by the same rule (issue 19: a public input at the edge of its domain
# was refused by encrypt although the compiler had planned it).
# Radix-packed counts (the coeff layout) are integers in the coefficients themselves, whose
# fit and noise passes/coefficient_parameters.py plans exactly: one bit, the sign.
FIT_MARGIN_BITS = 2.0
COEFF_FIT_MARGIN_BITS = 1.0


def fit_margin_bits(layout: str) -> float:
    return COEFF_FIT_MARGIN_BITS if layout == ckks.COEFF else FIT_MARGIN_BITS


@dataclass(frozen=True)
class ChainNeeds:
    """What a scaled program asks of the chain: Q_0 bits, and the smallest scale."""

    output_bits: float
    min_scale: float
    max_scale: float = 0.0  # the largest scale (bits) of any value


def chain_needs(
    program: ckks.ProgramOp,
    divisors: Sequence[ckks.ScaleAttr | float],
    ranges: Mapping[SSAValue, Interval],
) -> ChainNeeds:
    """The bits Q_0 must have so that every value fits its level's modulus."""
    above = [0.0]
    for d in divisors:
        above.append(above[-1] + ckks.ScaleAttr.coerce(d).bits)
    need = 0.0
    min_scale = math.inf
    max_scale = 0.0
    for op in program.block.ops:
        for r in op.results:
            ty = r.type
            if not isinstance(ty, ckks.CtType):
                continue
            bound = max(magnitude(range_of(ranges, r)), 1.0)
            if ty.layout_name == ckks.COMPLEX:
                bound *= math.sqrt(2.0)  # a slot holds a + bi, |a|, |b| <= bound
            bits = math.log2(bound) + ty.scale_bits + fit_margin_bits(ty.layout_name)
            need = max(need, bits - above[ty.level_value])
            min_scale = min(min_scale, ty.scale_bits)
            max_scale = max(max_scale, ty.scale_bits)
    return ChainNeeds(need, min_scale, max_scale)
