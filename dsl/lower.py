"""Lowers a checked hec program to the `stat` dialect (`compiler/dialects/stat.py`).

One stat op per language operation; implicit broadcasts of the language become explicit
`stat.broadcast` ops (rules in `dsl/shapes.py`); compile-time scalar constants fold to one
`stat.constant`; let-bound names become SSA name hints (`%n11`). `inv_approx(A, steps)` is
unrolled into its Newton-Schulz steps (transpose, products, `2 * eye(k) - ...`), the ops
whose results the iteration provably bounds carrying a `proven_range`
(compiler/analysis/newton_schulz.py). The result is a
`builtin.module` holding one `stat.program`, verified before it is returned. `print_ir` and
`parse_ir` (from `compiler/ir_text.py`) are re-exported for the CLI and tests.
"""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from compiler.analysis.newton_schulz import COMPLEMENT_RANGE, PRODUCT_RANGE
from compiler.analysis.ranges import set_proven_range
from compiler.dialects import stat
from compiler.errors import UserError
from compiler.ir_text import ir_context, parse_ir, print_ir
from compiler.types import Shape
from dsl import ast
from dsl.checker import CheckedProgram, ValueType, inverse_parts, newton_schulz
from dsl.shapes import broadcast_plan

_BINARY: dict[str, type[stat.AddOp | stat.SubOp | stat.MulOp | stat.DivOp]] = {
    "+": stat.AddOp,
    "-": stat.SubOp,
    "*": stat.MulOp,
    "/": stat.DivOp,
}
_PUBLIC_UNARY: dict[str, type[stat._Unary]] = {
    "sqrt": stat.SqrtOp,
    "abs": stat.AbsOp,
    "exp": stat.ExpOp,
    "log": stat.LogOp,
    "norm_sf": stat.NormSfOp,
    "norm_cdf": stat.NormCdfOp,
}


def _ty(e: ast.Expr) -> ValueType:
    assert e.ty is not None, "lowering needs a checked program"
    return e.ty


class _Lowering:
    def __init__(self, checked: CheckedProgram):
        self.checked = checked
        self.block: Block = Block()
        self.values: dict[str, SSAValue] = {}
        self.sizes: dict[str, SSAValue] = {}
        self.revealed: dict[str, SSAValue] = {}
        self.in_client = False
        # Identical constants and broadcasts are emitted once per region, so the IR shows
        # each replicated value once (the layout pass decides how to materialize it).
        self.constants: dict[float, SSAValue] = {}
        self.broadcasts: dict[tuple[SSAValue, tuple[object, ...], tuple[int, ...]], SSAValue] = {}
        # The source span of the construct being lowered: every op emitted for it carries it
        # as its MLIR location, so a pass that refuses the op can name file:line:column.
        self.span: ast.Span | None = None
        # `reveal B = inv(A)` of a secret A: (B, its revealed adjugate, its revealed
        # determinant), divided at the start of the client region.
        self.inverses: list[tuple[str, SSAValue, SSAValue]] = []

    def located(self, op: Operation) -> Operation:
        if self.span is not None:
            op.location = FileLineColLoc(
                StringAttr(self.checked.source.filename),
                IntAttr(self.span.line),
                IntAttr(self.span.column),
            )
        return op

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(self.located(op))
        return op.results[0] if op.results else SSAValue.get(op)  # type: ignore[arg-type]

    def add(self, op: Operation) -> None:
        self.block.add_op(self.located(op))

    def run(self, name: str) -> ModuleOp:
        program = stat.ProgramOp(name)
        self.block = program.block
        for stmt in self.checked.program.statements:
            self.span = stmt.span
            match stmt:
                case ast.ParamDecl():
                    self.add(stat.ParamOp(stmt.name, self.checked.params[stmt.name]))
                case ast.InputDecl():
                    binding = self.checked.bindings[stmt.name]
                    ty = stat.TensorType.get(binding.ty.shape, stmt.secret)
                    op = stat.InputOp(stmt.name, ty, binding.domain)
                    op.result.name_hint = stmt.name
                    self.add(op)
                    self.values[stmt.name] = op.result
                case ast.Let():
                    self.let(stmt.name, stmt.expr)
                case ast.Reveal() if stmt.name in self.checked.inverses:
                    self.reveal_inverse(stmt)
                case ast.Reveal():
                    if stmt.expr is not None:
                        self.let(stmt.name, stmt.expr)
                    reveal = stat.RevealOp(stmt.name, self.values[stmt.name])
                    reveal.result.name_hint = f"{stmt.name}_revealed"
                    self.add(reveal)
                    self.revealed[stmt.name] = reveal.result
                case ast.ClientBlock():
                    self.client(stmt)
        if self.checked.client is None and self.inverses:
            self.client(ast.ClientBlock(self.checked.program.statements[-1].span, []))
        module = ModuleOp([program])
        module.verify()
        return module

    def let(self, name: str, expr: ast.Expr) -> None:
        value = self.expr(expr)
        if value.name_hint is None:
            value.name_hint = name
        self.values[name] = value

    def reveal_inverse(self, stmt: ast.Reveal) -> None:
        """`reveal B = inv(A)`, A secret: reveal adj(A) and det(A) as B_adj and B_det."""
        assert isinstance(stmt.expr, ast.Call)
        self.span = stmt.expr.span
        a = self.expr(stmt.expr.args[0])
        parts = []
        for name, op in zip(inverse_parts(stmt.name), (stat.AdjOp(a), stat.DetOp(a)), strict=True):
            value = self.emit(op)
            value.name_hint = name
            self.values[name] = value
            reveal = stat.RevealOp(name, value)
            reveal.result.name_hint = f"{name}_revealed"
            self.add(reveal)
            self.revealed[name] = reveal.result
            parts.append(reveal.result)
        self.inverses.append((stmt.name, parts[0], parts[1]))

    def client(self, block: ast.ClientBlock) -> None:
        if not block.lets and not self.inverses:
            return  # an empty client block computes nothing
        client = stat.ClientOp()
        self.add(client)
        server_block = self.block
        self.block = client.block
        self.in_client = True
        self.constants, self.broadcasts = {}, {}
        for name, adj, det in self.inverses:
            shape = stat.tensor_type(adj).dims
            inverse = self.emit(stat.DivOp(adj, self.broadcast(det, shape, ())))
            inverse.name_hint = name
            self.revealed[name] = inverse
            self.add(stat.OutputOp(name, inverse))
        for let in block.lets:
            self.let(let.name, let.expr)
            self.add(stat.OutputOp(let.name, self.values[let.name]))
        self.in_client = False
        self.block = server_block

    # --------------------------------------------------------------------------- values
    def broadcast(self, value: SSAValue, shape: Shape, dims: tuple[int, ...] | None) -> SSAValue:
        if dims is None:
            return value
        key = (value, tuple(shape), dims)
        if key not in self.broadcasts:
            self.broadcasts[key] = self.emit(stat.BroadcastOp(value, shape, dims))
        return self.broadcasts[key]

    def name(self, e: ast.Name) -> SSAValue:
        if e.name in self.checked.params:
            if e.name not in self.sizes or self.in_client:
                # Client-block values live in the client region; sizes used there are
                # re-materialized so the region reads no server op but revealed and public ones.
                size = self.emit(stat.SizeOp(e.name))
                if not self.in_client:
                    self.sizes[e.name] = size
                return size
            return self.sizes[e.name]
        if self.in_client and e.name in self.revealed:
            return self.revealed[e.name]
        return self.values[e.name]

    def expr(self, e: ast.Expr) -> SSAValue:
        outer, self.span = self.span, e.span
        try:
            return self.expr_here(e)
        finally:
            self.span = outer

    def expr_here(self, e: ast.Expr) -> SSAValue:
        ty = _ty(e)
        if ty.const is not None and not isinstance(e, ast.Name):
            if ty.const not in self.constants:
                self.constants[ty.const] = self.emit(stat.ConstantOp(ty.const))
            return self.constants[ty.const]
        match e:
            case ast.Name():
                return self.name(e)
            case ast.Binary():
                lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
                if e.op == "@":
                    return self.emit(stat.MatmulOp(lhs, rhs))
                plan = broadcast_plan(_ty(e.lhs).shape, _ty(e.rhs).shape)
                lhs = self.broadcast(lhs, plan.shape, plan.lhs_dims)
                rhs = self.broadcast(rhs, plan.shape, plan.rhs_dims)
                return self.emit(_BINARY[e.op](lhs, rhs))
            case ast.Neg():
                return self.emit(stat.NegOp(self.expr(e.operand)))
            case ast.Pow():
                return self.emit(stat.PowOp(self.expr(e.base), int(e.exponent)))
            case ast.Transpose():
                return self.emit(stat.TransposeOp(self.expr(e.operand)))
            case ast.Index():
                starts, stops, drops = ast.subscript_ranges(e)
                return self.emit(
                    stat.IndexOp(self.expr(e.operand), starts, stops, drops, _ty(e).shape)
                )
            case ast.Call():
                return self.call(e)
            case _:
                raise AssertionError(f"cannot lower {e!r}")

    def constant(self, value: float) -> SSAValue:
        if value not in self.constants:
            self.constants[value] = self.emit(stat.ConstantOp(value))
        return self.constants[value]

    def inv_approx(self, e: ast.Call) -> SSAValue:
        """X_0 = A^T * (1/c), X_{i+1} = X_i @ (2 eye(k) - A @ X_i): stat ops that exist, each
        product and complement carrying the range the iteration proves for it."""
        iteration = newton_schulz(e, self.checked.params)
        a = self.expr(e.args[0])
        shape = _ty(e).shape
        k = shape[0]
        scaled = self.broadcast(self.constant(1.0 / iteration.scale), shape, ())
        first = stat.MulOp(self.emit(stat.TransposeOp(a)), scaled)
        set_proven_range(first, iteration.x_range(0))
        x = self.emit(first)
        two = stat.MulOp(self.broadcast(self.constant(2.0), shape, ()), self.emit(stat.EyeOp(k)))
        two_eye = self.emit(two)
        for i in range(iteration.steps):
            product = stat.MatmulOp(a, x)
            set_proven_range(product, PRODUCT_RANGE)
            complement = stat.SubOp(two_eye, self.emit(product))
            set_proven_range(complement, COMPLEMENT_RANGE)
            step = stat.MatmulOp(x, self.emit(complement))
            set_proven_range(step, iteration.x_range(i + 1))
            x = self.emit(step)
        return x

    def call(self, e: ast.Call) -> SSAValue:
        if e.func == "eye":
            return self.emit(stat.EyeOp(_ty(e).shape[0]))
        if e.func == "inv_approx":
            return self.inv_approx(e)
        x = self.expr(e.args[0])
        arg_shape = _ty(e.args[0]).shape
        match e.func:
            case "sum" | "mean":
                axes = tuple(range(len(arg_shape)))
                for kw in e.kwargs:
                    axes = (int(_ty(kw.value).const or 0),)
                op_type = stat.SumOp if e.func == "sum" else stat.MeanOp
                return self.emit(op_type(x, axes))
            case "poly":
                coeffs = e.args[1]
                assert isinstance(coeffs, ast.ListLit)
                values = [_ty(item).const for item in coeffs.items]
                return self.emit(stat.PolyOp(x, [v for v in values if v is not None]))
            case "det":
                return self.emit(stat.DetOp(x))
            case "adj":
                return self.emit(stat.AdjOp(x))
            case "inv":  # of a public matrix (checker.py): adj(A) / det(A)
                det = self.broadcast(self.emit(stat.DetOp(x)), arg_shape, ())
                return self.emit(stat.DivOp(self.emit(stat.AdjOp(x)), det))
            case "row":
                return self.emit(stat.BroadcastOp(x, (1, arg_shape[0]), (1,)))
            case "col":
                return self.emit(stat.BroadcastOp(x, (arg_shape[0], 1), (0,)))
            case "chi2_sf":
                df = int(_ty(e.kwargs[0].value).const or 1)
                return self.emit(stat.Chi2SfOp(x, df))
            case func:
                return self.emit(_PUBLIC_UNARY[func](x))


def program_name(filename: str) -> str:
    stem = Path(filename).stem
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in stem)
    return cleaned or "program"


def refuse_integers(checked: CheckedProgram) -> None:
    """The stat dialect holds real values: an integer or Boolean value (an input declared
    `u8`, a binding computed from one) is refused where it is defined; such programs compile
    to Boolean circuits (`--scheme fhew`, dsl/circuit.py)."""
    for name, binding in checked.bindings.items():
        t = binding.ty.int_type
        if t is not None:
            raise UserError(
                f"'{name}' is a {t.name} value: integer and Boolean programs compile to Boolean "
                "circuits for --scheme fhew or to bit slices for --scheme bfv (the ckks and "
                "labhe targets compute on real values and integer domains)",
                checked.source.location(binding.span),
                hint="hec report FILE --scheme fhew (or bfv), hec run FILE --scheme fhew ...; "
                "docs/language.md, 'Integers and Booleans'",
            )


def lower(checked: CheckedProgram, name: str | None = None, scheme: str = "") -> ModuleOp:
    """Lower a checked program to a verified module holding one `stat.program`: real values,
    or for `scheme` "bfv" an integer program's bit slices (dsl/bitslice.py); other schemes
    refuse integers (`refuse_integers`)."""
    if scheme == "bfv":
        from dsl.bitslice import is_integer_program, lower_bitslice

        if is_integer_program(checked):
            with ast.recursion_room():
                return lower_bitslice(checked, name or program_name(checked.source.filename))[0]
    refuse_integers(checked)
    with ast.recursion_room():
        return _Lowering(checked).run(name or program_name(checked.source.filename))


def stat_context() -> Context:
    """An xDSL context that parses builtin + stat MLIR text."""
    return ir_context()


__all__ = ["lower", "parse_ir", "print_ir", "program_name", "stat_context"]
