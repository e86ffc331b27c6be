"""Lowering of the HE layer to BFV: the same ops, on integers modulo the plaintext modulus.

BFV computes exactly on integers, so the lowering refuses what is not one: an input whose
declared domain is not a finite set of integers (`in {0, 1, 2}`; an interval is a range of
reals), an owner-side value over such an input, and a multiplication by or an addition of a
public scalar that is not always an integer (a mean's 1/N, a real constant). Each refusal
names the input or value and points to `--scheme ckks`. Nothing else changes: layouts,
levels and degrees carry over, and the bfv parameter pass chooses the plaintext modulus from
the ranges of the lowered program.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ranges import PROVEN_RANGE, public_values
from compiler.dialects import bfv, he
from compiler.errors import InternalError, UserError, op_location
from compiler.types import Domain, FiniteSet, format_domain

HINT = "use --scheme ckks (approximate arithmetic on reals), or declare integer domains"


def integral(domain: Domain | None) -> bool:
    return isinstance(domain, FiniteSet) and all(float(v).is_integer() for v in domain.values)


class _ToBfv:
    def __init__(self, program: he.ProgramOp):
        self.src = program
        self.out = bfv.ProgramOp(program.sym_name.data)
        self.map: dict[SSAValue, SSAValue] = {}
        self.public = public_values(program, program.params())
        self.sources = {
            op.sym_value: op.domain_value for op in program.block.ops if isinstance(op, he.SourceOp)
        }

    def v(self, value: SSAValue) -> SSAValue:
        return self.map[value]

    def check_encode(self, op: he.EncodeOp) -> None:
        derived = bool(op.digit_exprs or op.expr_value)
        for name in op.sources():
            domain = self.sources.get(name, None if derived else op.domain_value)
            if not integral(domain):
                shown = "no domain" if domain is None else f"domain {format_domain(domain)}"
                raise UserError(
                    f"--scheme bfv: input {name} has {shown}, which is not a finite set of "
                    "integers; BFV computes exactly on integers only",
                    op_location(op),
                    hint=HINT,
                )

    def check_integer(self, op: he.MulConstOp | he.AddConstOp) -> None:
        if op.is_integer:
            return
        value = op.results[0].name_hint or op.input.name_hint or "a value"
        what = "multiplies" if isinstance(op, he.MulConstOp) else "adds"
        interval = self.public[op.value].interval
        raise UserError(
            f"--scheme bfv: {value} {what} a public scalar that is not an integer "
            f"(in [{interval.lo:g}, {interval.hi:g}]: a mean's 1/N or a real constant)",
            op_location(op),
            hint="reveal the sum and divide in the client block, or " + HINT,
        )

    def convert(self, op: Operation) -> Operation:
        match op:
            case he.ParamOp():
                return bfv.ParamOp(op.sym_value, op.bound_value)
            case he.SourceOp():
                return bfv.SourceOp(op.sym_value, op.dims, op.domain_value)
            case he.SizeOp():
                return bfv.SizeOp(op.sym_value)
            case he.ConstantOp():
                return bfv.ConstantOp(op.float_value)
            case he.PublicArithOp():
                return bfv.PublicArithOp(op.kind.data, self.v(op.lhs), self.v(op.rhs))
            case he.EncodeOp():
                self.check_encode(op)
                ty = he.pt_type(op.result)
                if ty.layout_name == he.COEFF:
                    raise InternalError("lower-he-to-bfv: packed counts are a ckks layout")
                if he.grid_of(ty.layout_name) is not None:
                    raise UserError(
                        f"--scheme bfv: input {op.sym_value} is in the grid layout "
                        f"({ty.layout_name}), which only the CKKS lowering has yet",
                        op_location(op),
                        hint="compile with --grid-rows 1, or " + HINT,
                    )
                return bfv.EncodeOp(op.sym_value, ty, op.domain_value, expr=op.expr_value)
            case he.EncryptOp():
                return bfv.EncryptOp(self.v(op.input))
            case he.DecryptOp():
                return bfv.DecryptOp(op.sym_value, self.v(op.input))
            case he.SubOp():
                return bfv.SubOp(self.v(op.lhs), self.v(op.rhs))
            case he.AddOp():
                return bfv.AddOp(self.v(op.lhs), self.v(op.rhs))
            case he.MulOp():
                return bfv.MulOp(self.v(op.lhs), self.v(op.rhs))
            case he.DotOp():
                return bfv.DotOp(self.v(op.lhs), self.v(op.rhs), op.axis_value)
            case he.NegateOp():
                return bfv.NegateOp(self.v(op.input))
            case he.MulConstOp():
                self.check_integer(op)
                if op.is_masked:
                    raise UserError(
                        "--scheme bfv: a sum over a packed axis of values whose padding slots "
                        "are not zero needs a masking plaintext vector, which the BFV target "
                        "does not have yet",
                        op_location(op),
                        hint="compile for CKKS: --scheme ckks (or auto)",
                    )
                return bfv.MulConstOp(self.v(op.input), self.v(op.value), True)
            case he.AddConstOp():
                self.check_integer(op)
                return bfv.AddConstOp(self.v(op.input), self.v(op.value), True)
            case he.RelinearizeOp():
                return bfv.RelinearizeOp(self.v(op.input))
            case he.RotateOp():
                return bfv.RotateOp(self.v(op.input), op.offset_value)
            case he.SumSlotsOp():
                return bfv.SumSlotsOp(self.v(op.input))
            case he.ReduceOp():
                return bfv.ReduceOp(self.v(op.input), op.axis_value)
            case he.BroadcastOp():
                return bfv.BroadcastOp(
                    self.v(op.input), op.shape_tuple, op.dims_tuple, op.out_layout.data
                )
            case he.TransposeOp():
                return bfv.TransposeOp(self.v(op.input))
            case he.GatherOp():
                return bfv.GatherOp(
                    self.v(op.input), op.index_values, op.negate_flags, op.shape_tuple
                )
            case he.DiagMatvecOp() | he.ConvertOp():
                raise UserError(
                    "--scheme bfv: a matrix-vector product into a slot layout is computed by "
                    "the diagonal method (docs/layout.md), which the BFV target does not have "
                    "yet (its slots are two rows of n/2, rotated within each row)",
                    op_location(op),
                    hint="compile for CKKS: --scheme ckks (or auto)",
                )
            case _:
                raise InternalError(f"lower-he-to-bfv: no bfv form for {op.name}")

    def scaled_decrypt(self, op: he.DecryptOp) -> bfv.DecryptOp:
        """A revealed `c * x` (c a public integer the HE layer left to the coordinator): BFV
        multiplies by c on the server instead, so the decrypted value is the exact integer
        c*x (the plaintext modulus is then chosen for c*x's range; CRT when it needs more than
        one prime) and no factor travels with a result as a float."""
        assert op.factor is not None
        scaled = bfv.MulConstOp(self.v(op.input), self.v(op.factor), True)
        scaled.location = op.location
        self.out.block.add_op(scaled)
        scaled.results[0].name_hint = op.sym_value
        return bfv.DecryptOp(op.sym_value, scaled.results[0])

    def run(self) -> bfv.ProgramOp:
        for op in self.src.block.ops:
            if isinstance(op, he.DecryptOp) and op.factor is not None:
                new = self.scaled_decrypt(op)
            else:
                new = self.convert(op)
            new.location = op.location  # the source construct, for located errors
            if PROVEN_RANGE in op.attributes:  # a theorem about the value (analysis/ranges.py)
                new.attributes[PROVEN_RANGE] = op.attributes[PROVEN_RANGE]
            self.out.block.add_op(new)
            for old, result in zip(op.results, new.results, strict=True):
                result.name_hint = old.name_hint
                self.map[old] = result
        return self.out


@dataclass(frozen=True)
class LowerHeToBfvPass(ModulePass):
    """Lower every `he.program` of the module to a `bfv.program` (replacing it).

    Assumes: a verified he program (after lazy-relinearization with BFV's degree limit 2) with
    no coeff layout (packed counts are a ckks encoding). Establishes: a verified bfv program
    with the same ops; UserError naming the input or value when something is not an integer.
    """

    name = "lower-he-to-bfv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in list(op.body.block.ops):
            if isinstance(program, he.ProgramOp):
                lowered = _ToBfv(program).run()
                op.body.block.insert_op_before(lowered, program)
                program.detach()
                program.erase()
