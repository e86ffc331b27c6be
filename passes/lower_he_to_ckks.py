"""Lowering of the HE layer to CKKS: the same ops, now with scales.

Every `he` op has one `ckks` counterpart; what CKKS adds is the scale of each value. Encoded
inputs and real constants get a nominal scale (2^40) that scale-management later sets
exactly; integer constants are multiplied exactly (`const_scale` 0); a product's scale is the
product of its operands' scales. Values added together must have one scale, so where an add's
operands differ the smaller is lifted by a multiply with the constant 1 encoded at the
difference (`align`: no level, the product is exact). The rest of the CKKS decisions (rescale
placement, levels, complex packing, primes) are the CKKS passes that follow.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import make_lift
from compiler.analysis.ranges import PROVEN_RANGE
from compiler.dialects import ckks, he
from compiler.errors import InternalError

# Nominal log2 scale of real constants until scale-management chooses it.
NOMINAL_CONST_SCALE = 40.0
# Nominal log2 scale of encoded inputs until scale-management chooses it.
NOMINAL_INPUT_SCALE = 40.0


class _ToCkks:
    def __init__(self, program: he.ProgramOp):
        self.src = program
        self.out = ckks.ProgramOp(program.sym_name.data)
        self.map: dict[SSAValue, SSAValue] = {}

    def v(self, value: SSAValue) -> SSAValue:
        return self.map[value]

    def emit(self, op: Operation) -> Operation:
        self.out.block.add_op(op)
        return op

    def align(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """Make two ciphertexts addable: lift the lower scale by a constant-1 multiply."""
        sa, sb = ckks.ct_type(a).scale, ckks.ct_type(b).scale
        if ckks.same_scale(sa, sb):
            return a, b
        one = self.emit(ckks.ConstantOp(1.0)).results[0]
        if sa.bits < sb.bits:
            return self.emit(make_lift(a, one, sb.over(sa))).results[0], b
        return a, self.emit(make_lift(b, one, sa.over(sb))).results[0]

    def convert(self, op: Operation) -> Operation | None:
        match op:
            case he.ParamOp():
                return ckks.ParamOp(op.sym_value, op.bound_value)
            case he.SourceOp():
                return ckks.SourceOp(op.sym_value, op.dims, op.domain_value)
            case he.SizeOp():
                return ckks.SizeOp(op.sym_value)
            case he.ConstantOp():
                return ckks.ConstantOp(op.float_value)
            case he.PublicArithOp():
                return ckks.PublicArithOp(op.kind.data, self.v(op.lhs), self.v(op.rhs))
            case he.EncodeOp():
                ty = he.pt_type(op.result)
                pt = ckks.PtType.get(ty.dims, ty.layout_name, ty.level_value, NOMINAL_INPUT_SCALE)
                if ty.layout_name == he.COEFF:
                    return ckks.EncodeOp.packed(
                        op.sym_value, pt, op.digit_exprs, op.scalar_digit_flags, op.radix_values
                    )
                return ckks.EncodeOp(op.sym_value, pt, op.domain_value, expr=op.expr_value)
            case he.EncryptOp():
                return ckks.EncryptOp(self.v(op.input))
            case he.DecryptOp():
                factor = None if op.factor is None else self.v(op.factor)
                return ckks.DecryptOp(
                    op.sym_value, self.v(op.input), factor, op.digit_value, op.is_scalar_digit
                )
            case he.AddOp() | he.SubOp():
                a, b = self.align(self.v(op.lhs), self.v(op.rhs))
                return ckks.SubOp(a, b) if isinstance(op, he.SubOp) else ckks.AddOp(a, b)
            case he.MulOp():
                return ckks.MulOp(self.v(op.lhs), self.v(op.rhs))
            case he.DotOp():
                return ckks.DotOp(self.v(op.lhs), self.v(op.rhs), op.axis_value)
            case he.DiagMatvecOp():
                return ckks.DiagMatvecOp(self.v(op.lhs), self.v(op.rhs))
            case he.ConvertOp():
                return ckks.ConvertOp(self.v(op.input), op.to_layout)
            case he.NegateOp():
                return ckks.NegateOp(self.v(op.input))
            case he.MulConstOp():
                exact = op.is_integer and not op.is_masked
                scale = ckks.ScaleAttr.one() if exact else NOMINAL_CONST_SCALE
                return ckks.MulConstOp(self.v(op.input), self.v(op.value), scale, op.is_masked)
            case he.AddConstOp():
                return ckks.AddConstOp(self.v(op.input), self.v(op.value))
            case he.RelinearizeOp():
                return ckks.RelinearizeOp(self.v(op.input))
            case he.RotateOp():
                return ckks.RotateOp(self.v(op.input), op.offset_value)
            case he.SumSlotsOp():
                return ckks.SumSlotsOp(self.v(op.input), op.axis_value)
            case he.ReduceOp():
                return ckks.ReduceOp(self.v(op.input), op.axis_value)
            case he.BroadcastOp():
                return ckks.BroadcastOp(
                    self.v(op.input), op.shape_tuple, op.dims_tuple, op.out_layout.data
                )
            case he.TransposeOp():
                return ckks.TransposeOp(self.v(op.input))
            case he.GatherOp():
                return ckks.GatherOp(
                    self.v(op.input), op.index_values, op.negate_flags, op.shape_tuple
                )
            case _:
                raise InternalError(f"lower-he-to-ckks: no ckks form for {op.name}")

    def run(self) -> ckks.ProgramOp:
        for op in self.src.block.ops:
            new = self.convert(op)
            assert new is not None
            new.location = op.location  # the source construct, for located errors
            if PROVEN_RANGE in op.attributes:  # a theorem about the value (analysis/ranges.py)
                new.attributes[PROVEN_RANGE] = op.attributes[PROVEN_RANGE]
            self.emit(new)
            for old, result in zip(op.results, new.results, strict=True):
                result.name_hint = old.name_hint
                self.map[old] = result
        return self.out


@dataclass(frozen=True)
class LowerHeToCkksPass(ModulePass):
    """Lower every `he.program` of the module to a `ckks.program` (replacing it).

    Assumes: a verified he program (after lazy-relinearization). Establishes: a verified ckks
    program with the same ops at level 0, nominal scales (2^40 for inputs and real
    constants, exact products), add operands aligned to one scale."""

    name = "lower-he-to-ckks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in list(op.body.block.ops):
            if isinstance(program, he.ProgramOp):
                lowered = _ToCkks(program).run()
                op.body.block.insert_op_before(lowered, program)
                program.detach()
                program.erase()
