"""Plaintext reference evaluator: runs a checked hec program on numpy arrays.

The first leg of the three-way oracle (DESIGN.md §9: plaintext / simulator / encrypted). It
follows the source program, not the IR, so that it checks the lowering and the passes rather
than repeating them. Given concrete sizes and input arrays it returns the revealed values and
the client-block results, in float64. `det`/`adj` use numpy's LU factorization;
`chi2_sf`, `norm_sf` and `norm_cdf` come from scipy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from compiler.errors import UserError
from compiler.stat_numpy import adj_cofactor
from compiler.types import FiniteSet, Interval, Shape
from dsl import ast
from dsl.checker import CheckedProgram, inverse_parts
from dsl.shapes import broadcast_plan

Array = npt.NDArray[np.float64]


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
                value = np.asarray(inputs[stmt.name], dtype=np.float64)
                _check_input(stmt.name, value, ev.concrete(binding.ty.shape), binding.domain)
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
