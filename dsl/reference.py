"""Plaintext reference evaluator: runs a checked hec program on numpy arrays.

The first leg of the three-way oracle (DESIGN.md §9: plaintext / simulator / encrypted). It
follows the source program, not the IR, so that it checks the lowering and the passes rather
than repeating them. Given concrete sizes and input arrays it returns the revealed values and
the client-block results, in float64. `det`/`adj` use numpy's LU factorization;
`chi2_sf`, `norm_sf` and `norm_cdf` come from scipy. Integer and Boolean values are arrays of
Python integers (dtype object) holding each value in its type's range, computed by integer
arithmetic and wrapped to the type's width after every operation: an oracle independent of the
Boolean circuits they compile to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from compiler.errors import UserError
from compiler.stat_numpy import adj_cofactor
from compiler.types import FiniteSet, Interval, Shape
from dsl import ast
from dsl.checker import BOOL, CheckedProgram, IntType, inverse_parts, newton_schulz
from dsl.shapes import broadcast_plan

Array = npt.NDArray[np.float64]
# Integer values: Python integers (dtype object), each in its type's range.
Ints = npt.NDArray[Any]


@dataclass
class ReferenceResult:
    revealed: dict[str, Array]
    client: dict[str, Array]


def _place(value: Array, shape: Shape, dims: tuple[int, ...] | None) -> Array:
    """Reshape `value` so that numpy broadcasting realizes the language's broadcast `dims`."""
    if dims is None:
        return value
    target = [1] * len(shape)
    for axis, result_axis in enumerate(dims):
        target[result_axis] = value.shape[axis]
    return value.reshape(target)


def _det(a: Array) -> Array:
    return np.asarray(np.linalg.det(a), dtype=np.float64)


def _adj(a: Array) -> Array:
    """adj(A) = det(A) inverse(A) by LU when A is well conditioned: a different algorithm from
    the cofactor expansion of `compiler.stat_numpy`, so that each checks the other."""
    if np.linalg.cond(a) < 1e8:
        return np.linalg.det(a) * np.linalg.inv(a)
    return adj_cofactor(a)


class _Evaluator:
    def __init__(self, checked: CheckedProgram, sizes: Mapping[str, int]):
        self.checked = checked
        self.sizes = dict(sizes)
        self.env: dict[str, Array] = {}

    def concrete(self, shape: Shape) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else self.sizes[d] for d in shape)

    def expr(self, e: ast.Expr) -> Array:
        assert e.ty is not None
        if e.ty.int_type is not None:
            return self.int_expr(e, e.ty.int_type)
        if isinstance(e, ast.Call) and e.func == "real":
            return np.asarray(self.expr(e.args[0]), dtype=np.float64)
        if e.ty.const is not None and not isinstance(e, ast.Name):
            return np.asarray(e.ty.const, dtype=np.float64)
        match e:
            case ast.Name():
                return self.env[e.name]
            case ast.Binary():
                a, b = self.expr(e.lhs), self.expr(e.rhs)
                if e.op == "@":
                    return np.asarray(a @ b, dtype=np.float64)
                assert e.lhs.ty is not None and e.rhs.ty is not None
                plan = broadcast_plan(e.lhs.ty.shape, e.rhs.ty.shape)
                a = _place(a, plan.shape, plan.lhs_dims)
                b = _place(b, plan.shape, plan.rhs_dims)
                with np.errstate(divide="ignore", invalid="ignore"):
                    result = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[
                        e.op
                    ](a, b)
                return np.broadcast_to(result, self.concrete(plan.shape)).astype(np.float64)
            case ast.Neg():
                return -self.expr(e.operand)
            case ast.Pow():
                return self.expr(e.base) ** int(e.exponent)
            case ast.Transpose():
                return self.expr(e.operand).T.copy()
            case ast.Index():
                return self.index(e)
            case ast.Call():
                return self.call(e)
            case _:
                raise AssertionError(f"cannot evaluate {e!r}")

    # ---- integers -------------------------------------------------------------------------
    def int_operand(self, e: ast.Expr, t: IntType) -> Ints:
        """An operand of an operation on `t`: an integer expression, or a constant."""
        assert e.ty is not None
        if e.ty.int_type is None:
            assert e.ty.const is not None
            return np.asarray(int(e.ty.const), dtype=object)
        return self.int_expr(e, e.ty.int_type)

    def int_expr(self, e: ast.Expr, t: IntType) -> Ints:
        match e:
            case ast.Name():
                return self.env[e.name]
            case ast.Neg():
                return wrap(-self.int_operand(e.operand, t), t)
            case ast.BitNot():
                return wrap(~self.int_operand(e.operand, t), t)
            case ast.Pow():  # XOR with a constant
                return wrap(self.int_operand(e.base, t) ^ int(e.exponent), t)
            case ast.Binary():
                return self.int_binary(e, t)
            case ast.Call():
                return self.int_call(e, t)
            case _:
                raise AssertionError(f"cannot evaluate {e!r} on integers")

    def int_binary(self, e: ast.Binary, t: IntType) -> Ints:
        assert e.lhs.ty is not None and e.rhs.ty is not None
        of = e.lhs.ty.int_type or e.rhs.ty.int_type
        assert of is not None
        a, b = self.int_operand(e.lhs, of), self.int_operand(e.rhs, of)
        match e.op:
            case "+":
                return wrap(a + b, t)
            case "-":
                return wrap(a - b, t)
            case "*":
                return wrap(a * b, t)
            case "/" | "%":
                a, b = np.broadcast_arrays(a, b)
                zero = b == 0
                safe = np.where(zero, 1, b)
                if e.op == "/":
                    return wrap(np.where(zero, t.hi, a // safe), t)
                return wrap(np.where(zero, a, a % safe), t)
            case "&":
                return wrap(a & b, t)
            case "|":
                return wrap(a | b, t)
            case "^":
                return wrap(a ^ b, t)
            case "<<":
                return wrap(a << b, t)
            case ">>":
                return wrap(a >> b, t)  # arithmetic on signed values, as Python's >>
            case op:
                fn = {
                    "<": np.less,
                    "<=": np.less_equal,
                    ">": np.greater,
                    ">=": np.greater_equal,
                    "==": np.equal,
                    "!=": np.not_equal,
                }[op]
                return to_int(fn(a, b))

    def int_call(self, e: ast.Call, t: IntType) -> Ints:
        match e.func:
            case "popcount":
                x = self.int_expr(e.args[0], t)
                unsigned = np.vectorize(lambda v: v % (1 << t.width), otypes=[object])(x)
                return wrap(np.vectorize(lambda v: bin(v).count("1"), otypes=[object])(unsigned), t)
            case "rotl" | "rotr":
                x = self.int_expr(e.args[0], t)
                assert e.args[1].ty is not None and e.args[1].ty.const is not None
                k = int(e.args[1].ty.const) % t.width
                if e.func == "rotr":
                    k = (t.width - k) % t.width
                u = np.vectorize(lambda v: v % (1 << t.width), otypes=[object])(x)
                return wrap((u << k) | (u >> (t.width - k)), t)
            case "min" | "max":
                a = self.int_operand(e.args[0], t)
                b = self.int_operand(e.args[1], t)
                fn = np.minimum if e.func == "min" else np.maximum
                return to_int(fn(a, b))
            case "select":
                cond = self.int_operand(e.args[0], BOOL)
                a = self.int_operand(e.args[1], t)
                b = self.int_operand(e.args[2], t)
                return to_int(np.where(cond == 1, a, b))
            case _:  # conversion to t
                arg = e.args[0]
                assert arg.ty is not None
                if arg.ty.int_type is None:
                    assert arg.ty.const is not None
                    return np.asarray(int(arg.ty.const), dtype=object)
                x = self.int_expr(arg, arg.ty.int_type)
                if t == BOOL:
                    return to_int(x != 0)
                return wrap(x, t)

    def index(self, e: ast.Index) -> Array:
        x = self.expr(e.operand)
        picks: list[int | slice] = []
        for axis, (start, stop, drop) in enumerate(zip(*ast.subscript_ranges(e), strict=True)):
            stop = x.shape[axis] if stop < 0 else stop
            if stop > x.shape[axis]:
                raise UserError(
                    f"index {stop - 1} is out of range for axis {axis}, of size "
                    f"{x.shape[axis]} in this run",
                    self.checked.source.location(e.span),
                )
            picks.append(start if drop else slice(start, stop))
        return np.asarray(x[tuple(picks)], dtype=np.float64)

    def call(self, e: ast.Call) -> Array:
        if e.func == "eye":
            assert e.ty is not None
            return np.eye(self.concrete(e.ty.shape)[0])
        x = self.expr(e.args[0])
        match e.func:
            case "sum" | "mean":
                axis = None
                for kw in e.kwargs:
                    assert kw.value.ty is not None and kw.value.ty.const is not None
                    axis = int(kw.value.ty.const)
                reduce = np.sum if e.func == "sum" else np.mean
                return np.asarray(reduce(x, axis=axis), dtype=np.float64)
            case "poly":
                coeffs = e.args[1]
                assert isinstance(coeffs, ast.ListLit)
                result = np.zeros_like(x)
                for item in reversed(coeffs.items):  # Horner
                    assert item.ty is not None and item.ty.const is not None
                    result = result * x + item.ty.const
                return result
            case "det":
                return _det(x)
            case "adj":
                return _adj(x)
            case "inv":
                return np.asarray(np.linalg.inv(x), dtype=np.float64)
            case "inv_approx":  # the Newton-Schulz steps the compiled program computes
                return newton_schulz(e, self.checked.params).evaluate(x)
            case "row":
                return x.reshape(1, -1)
            case "col":
                return x.reshape(-1, 1)
            case "chi2_sf":
                kw = e.kwargs[0].value
                assert kw.ty is not None and kw.ty.const is not None
                return np.asarray(stats.chi2.sf(x, df=int(kw.ty.const)), dtype=np.float64)
            case "norm_sf":
                return np.asarray(stats.norm.sf(x), dtype=np.float64)
            case "norm_cdf":
                return np.asarray(stats.norm.cdf(x), dtype=np.float64)
            case func:
                with np.errstate(divide="ignore", invalid="ignore"):
                    fn = {"sqrt": np.sqrt, "abs": np.abs, "exp": np.exp, "log": np.log}[func]
                    return np.asarray(fn(x), dtype=np.float64)


def to_int(x: npt.ArrayLike) -> Ints:
    """An array of Python integers (dtype object)."""
    a = np.asarray(x)
    out = np.empty(a.shape, dtype=object)
    out[...] = [int(v) for v in a.flat] if a.shape else int(a)
    return out if a.shape else np.asarray(int(a), dtype=object)


def wrap(x: npt.ArrayLike, t: IntType) -> Ints:
    """`x` (integers) wrapped to `t`: modulo 2^width, into t's range."""
    a = to_int(x)
    modulus = 1 << t.width
    f = np.vectorize(
        lambda v: (v - t.lo) % modulus + t.lo,
        otypes=[object],
    )
    return np.asarray(f(a), dtype=object)


def int_input(name: str, value: npt.ArrayLike, shape: tuple[int, ...], t: IntType) -> Ints:
    """An integer input: whole numbers within t's range, as Python integers."""
    a = np.asarray(value)
    if a.shape != shape:
        raise UserError(f"input '{name}' has shape {a.shape}, the program expects {shape}")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise UserError(f"input '{name}' is {t.name} but has values that are not whole numbers")
    elif a.dtype.kind not in "biuO":
        raise UserError(f"input '{name}' must hold integers")
    ints = to_int(a)
    if ints.size:
        flat = list(ints.flat)
        bad = [i for i, v in enumerate(flat) if not t.lo <= v <= t.hi]
        if bad:
            first = tuple(int(i) for i in np.unravel_index(bad[0], a.shape)) if a.shape else ()
            raise UserError(
                f"input '{name}' has value {flat[bad[0]]} at {first}, outside {t.describe()}"
            )
    return ints


def _check_input(name: str, value: Array, shape: tuple[int, ...], domain: object) -> None:
    if value.shape != shape:
        raise UserError(f"input '{name}' has shape {value.shape}, the program expects {shape}")
    if not np.all(np.isfinite(value)):
        raise UserError(f"input '{name}' has non-finite values")
    if isinstance(domain, FiniteSet) and value.size:
        bad = ~np.isin(value, np.asarray(domain.values))
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            raise UserError(
                f"input '{name}' has value {value[first]:g} at {first}, outside its domain "
                f"{{{', '.join(f'{v:g}' for v in domain.values)}}}"
            )
    if isinstance(domain, Interval) and value.size:
        bad = (value < domain.lo) | (value > domain.hi)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            raise UserError(
                f"input '{name}' has value {value[first]:g} at {first}, outside its domain "
                f"[{domain.lo:g}, {domain.hi:g}]"
            )


def evaluate(
    checked: CheckedProgram,
    sizes: Mapping[str, int],
    inputs: Mapping[str, npt.ArrayLike],
) -> ReferenceResult:
    """Run `checked` in plaintext for concrete `sizes` (one per size parameter, within its
    bound) and `inputs` (one array per input, within its declared domain)."""
    for name, bound in checked.params.items():
        if name not in sizes:
            raise UserError(f"no value given for size parameter '{name}'")
        if not 1 <= sizes[name] <= bound:
            raise UserError(f"size parameter {name} = {sizes[name]} is outside [1, {bound}]")
    with ast.recursion_room():
        return _evaluate(checked, sizes, inputs)


def _evaluate(
    checked: CheckedProgram,
    sizes: Mapping[str, int],
    inputs: Mapping[str, npt.ArrayLike],
) -> ReferenceResult:
    ev = _Evaluator(checked, sizes)
    for name in checked.params:
        ev.env[name] = np.asarray(float(sizes[name]))
    revealed: dict[str, Array] = {}
    client: dict[str, Array] = {}
    for stmt in checked.program.statements:
        match stmt:
            case ast.InputDecl():
                if stmt.name not in inputs:
                    raise UserError(f"no value given for input '{stmt.name}'")
                binding = checked.bindings[stmt.name]
                shape = ev.concrete(binding.ty.shape)
                if binding.ty.int_type is not None:
                    t = binding.ty.int_type
                    ev.env[stmt.name] = int_input(stmt.name, inputs[stmt.name], shape, t)
                    continue
                value = np.asarray(inputs[stmt.name], dtype=np.float64)
                _check_input(stmt.name, value, shape, binding.domain)
                ev.env[stmt.name] = value
            case ast.Let():
                ev.env[stmt.name] = ev.expr(stmt.expr)
            case ast.Reveal() if stmt.name in checked.inverses:
                # The server reveals adj(A) and det(A); the client divides (checker.py).
                assert isinstance(stmt.expr, ast.Call)
                a = ev.expr(stmt.expr.args[0])
                adj, det = inverse_parts(stmt.name)
                revealed[adj], revealed[det] = _adj(a), _det(a)
                ev.env[stmt.name] = np.asarray(np.linalg.inv(a), dtype=np.float64)
                client[stmt.name] = ev.env[stmt.name]
            case ast.Reveal():
                if stmt.expr is not None:
                    ev.env[stmt.name] = ev.expr(stmt.expr)
                revealed[stmt.name] = ev.env[stmt.name]
            case ast.ClientBlock():
                for let in stmt.lets:
                    ev.env[let.name] = ev.expr(let.expr)
                    client[let.name] = ev.env[let.name]
            case ast.ParamDecl():
                pass
    return ReferenceResult(revealed, client)


def run_client_block(
    checked: CheckedProgram,
    sizes: Mapping[str, int],
    revealed: Mapping[str, npt.ArrayLike],
    public_inputs: Mapping[str, npt.ArrayLike] | None = None,
) -> dict[str, Array]:
    """The client block of `checked` on decrypted values only: the revealed values (integers
    as Python integers) and the public inputs; {} when the program has none."""
    if checked.client is None:
        return {}
    ev = _Evaluator(checked, sizes)
    for name in checked.params:
        ev.env[name] = np.asarray(float(sizes[name]))
    for name, value in {**(public_inputs or {}), **revealed}.items():
        t = checked.bindings[name].ty.int_type
        ev.env[name] = to_int(value) if t is not None else np.asarray(value, dtype=np.float64)
    client: dict[str, Array] = {}
    with ast.recursion_room():
        for let in checked.client.lets:
            ev.env[let.name] = ev.expr(let.expr)
            client[let.name] = ev.env[let.name]
    return client
