"""Depth minimization on `stat`: balanced product trees and polynomials in power-tree form.

Two rewrites, both exact in real arithmetic (so the plaintext meaning is unchanged):

1. Product chains. A chain of elementwise products a·b·c·d written left to right has depth 3;
   as (a·b)·(c·d) it has depth 2. The factors of a maximal chain (products whose
   intermediate results have no other use) are recombined Huffman-style: always the two
   shallowest factors first, scalars before arrays (a product of scalars costs one
   ciphertext, and its result is broadcast once). Public integer factors cost no level.
   For the chi-square denominator c1·(d - c1)·r1·(d - r1) this is the difference between
   depth 3 and depth 2.
2. Univariate polynomials. An expression in one secret value x built from +, -, ·, x^k and
   constants (Horner's c0 + x·(c1 + x·(c2 + ...)), depth = degree; the power form
   c0 + c1·x + c2·x^2 + ..., one power chain per term; products of factors) is expanded to
   its coefficients and replaced by `stat.poly`, which the lowering evaluates by the
   depth-optimal baby-step giant-step plan of compiler/analysis/polynomial.py (depth
   ceil(log2(d + 1)) with real coefficients, about 2 sqrt(d) + log2 d ciphertext products):
   a degree-8 Horner polynomial goes from depth 8 to depth 4. Applied when it lowers the depth,
   or keeps it and needs fewer ciphertext products; not when the expanded coefficients would
   cancel (their bound sum |c_k| R^k exceeds the expression's range by more than 2^10, as
   expanding (x - 1)(x - 2)...(x - 20) would), since that loses precision.

Reference: Paterson-Stockmeyer / baby-step giant-step evaluation (Bossuat et al., Eurocrypt
2021, for the depth-optimal split at powers of two); HEIR keeps Horner depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.depth import public_integer, stat_depths
from compiler.analysis.polynomial import MAX_DEGREE, plan_polynomial, power_products
from compiler.dialects import stat

# Polynomials above this degree are left alone (the planner's and the checker's limit).
MAX_POLY_DEGREE = MAX_DEGREE
# An expansion whose coefficient bound exceeds the expression's range by more than this
# factor is not applied (cancellation between large terms would cost the difference in bits).
MAX_EXPANSION_GROWTH = 2.0**10

Poly = dict[int, float]


def _secret(v: SSAValue) -> bool:
    return stat.tensor_type(v).is_secret


def _nuses(v: SSAValue) -> int:
    return sum(1 for _ in v.uses)


def _poly_add(a: Poly, b: Poly, sign: float = 1.0) -> Poly:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0.0) + sign * c
    return out


def _poly_mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for i, ca in a.items():
        for j, cb in b.items():
            out[i + j] = out.get(i + j, 0.0) + ca * cb
    return out


class _UnsupportedError(Exception):
    pass


def _as_poly(v: SSAValue, root: SSAValue, leaf: list[SSAValue]) -> Poly:
    """v as a polynomial in a single secret leaf (recorded in `leaf`); intermediate results
    must be used only inside the expression (so replacing the root removes them)."""
    op = v.owner
    if v is not root and _nuses(v) != 1 and _secret(v):
        # A shared subexpression: treat as the leaf if it is the leaf, else give up.
        if leaf and leaf[0] is v:
            return {1: 1.0}
        if not leaf:
            leaf.append(v)
            return {1: 1.0}
        raise _UnsupportedError
    match op:
        case stat.ConstantOp():
            return {0: op.float_value}
        case stat.BroadcastOp() if not _secret(op.input) and not stat.tensor_type(op.input).dims:
            return _as_poly(op.input, root, leaf)
        case stat.AddOp() | stat.SubOp():
            sign = -1.0 if isinstance(op, stat.SubOp) else 1.0
            return _poly_add(_as_poly(op.lhs, root, leaf), _as_poly(op.rhs, root, leaf), sign)
        case stat.MulOp():
            return _poly_mul(_as_poly(op.lhs, root, leaf), _as_poly(op.rhs, root, leaf))
        case stat.NegOp():
            return {k: -c for k, c in _as_poly(op.input, root, leaf).items()}
        case stat.PowOp():
            base = _as_poly(op.input, root, leaf)
            out: Poly = {0: 1.0}
            for _ in range(op.exponent_value):
                out = _poly_mul(out, base)
            return out
        case _:
            if not _secret(v):
                raise _UnsupportedError
            if leaf and leaf[0] is not v:
                raise _UnsupportedError
            if not leaf:
                leaf.append(v)
            return {1: 1.0}


def _products(v: SSAValue, leaf: SSAValue, seen: set[SSAValue]) -> int:
    """Ciphertext-ciphertext products the expression v (in the leaf) computes as written."""
    if v is leaf or v in seen or not _secret(v):
        return 0
    seen.add(v)
    op = v.owner
    if not isinstance(op, Operation):
        return 0
    own = 0
    if isinstance(op, stat.MulOp) and _secret(op.lhs) and _secret(op.rhs):
        own = 1
    elif isinstance(op, stat.PowOp):
        own = power_products(op.exponent_value)
    return own + sum(_products(x, leaf, seen) for x in op.operands)


def _magnitude(v: SSAValue) -> float | None:
    """max |v| from the range-analysis attribute, when the op carries one."""
    op = v.owner
    attr = op.attributes.get("range") if isinstance(op, Operation) else None
    if not isinstance(attr, DenseArrayBase):
        return None
    values = [float(x) for x in attr.get_values()]
    return max(abs(x) for x in values) if values else None


def _erase_dead(program: stat.ProgramOp) -> None:
    keep = (stat.InputOp, stat.ParamOp, stat.RevealOp, stat.ClientOp, stat.OutputOp)
    changed = True
    while changed:
        changed = False
        for op in reversed(list(program.server_ops())):
            if isinstance(op, keep) or not op.results:
                continue
            if all(_nuses(r) == 0 for r in op.results):
                op.detach()
                op.erase()
                changed = True


@dataclass(frozen=True)
class DepthMinimizationPass(ModulePass):
    """Rebalance product chains and turn univariate polynomials into `stat.poly`.

    What it does: see the module docstring. Assumes: a verified stat program. Establishes:
    the module verifies; every revealed value has the same meaning and a depth no larger than
    before (`compiler.analysis.depth.stat_depth`). Options: none.
    """

    name = "depth-minimization"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in list(op.body.block.ops):
            if isinstance(program, stat.ProgramOp):
                self.polynomials(program)
                _erase_dead(program)
                self.products(program)
                _erase_dead(program)

    # ----------------------------------------------------------------------- polynomials
    def polynomials(self, program: stat.ProgramOp) -> None:
        for op in reversed(list(program.server_ops())):
            if op.parent is None or not op.results:
                continue
            v = op.results[0]
            if not _secret(v) or not isinstance(op, stat.AddOp | stat.SubOp | stat.MulOp):
                continue
            if any(isinstance(u.operation, stat.AddOp | stat.SubOp | stat.MulOp) for u in v.uses):
                continue  # not a root: the enclosing expression is tried instead
            leaf: list[SSAValue] = []
            try:
                poly = _as_poly(v, v, leaf)
            except _UnsupportedError:
                continue
            if not leaf:
                continue
            degree = max((k for k, c in poly.items() if c != 0.0), default=0)
            if degree < 2 or degree > MAX_POLY_DEGREE:
                continue
            x = leaf[0]
            if stat.tensor_type(x).dims != stat.tensor_type(v).dims:
                continue
            coeffs = [poly.get(k, 0.0) for k in range(degree + 1)]
            if not all(math.isfinite(c) for c in coeffs):
                continue
            depths = stat_depths(program)
            found = plan_polynomial(coeffs)
            new_depth = depths.get(x, 0) + found.depth
            old_depth = depths.get(v, 0)
            if new_depth > old_depth or (
                new_depth == old_depth and found.products >= _products(v, x, set())
            ):
                continue
            span, value = _magnitude(x), _magnitude(v)
            if span is not None and value is not None:
                bound = sum(abs(c) * span**k for k, c in enumerate(coeffs))
                if bound > MAX_EXPANSION_GROWTH * max(value, 1e-300):
                    continue
            new = stat.PolyOp(x, coeffs)
            new.location = op.location
            block = op.parent_block()
            assert block is not None
            block.insert_op_before(new, op)
            new.result.name_hint = v.name_hint
            v.replace_all_uses_with(new.result)

    # ----------------------------------------------------------------------- products
    def products(self, program: stat.ProgramOp) -> None:
        for op in reversed(list(program.server_ops())):
            if op.parent is None or not isinstance(op, stat.MulOp) or not _secret(op.result):
                continue
            if any(isinstance(u.operation, stat.MulOp) for u in op.result.uses):
                continue  # not the root of its chain
            factors: list[SSAValue] = []
            self._collect(op, factors, root=True)
            if len(factors) < 3:
                continue
            self._rebuild(program, op, factors)

    def _collect(self, op: stat.MulOp, out: list[SSAValue], root: bool = False) -> None:
        for v in (op.lhs, op.rhs):
            inner = v.owner
            if isinstance(inner, stat.MulOp) and _nuses(v) == 1 and _secret(v):
                self._collect(inner, out)
            elif isinstance(inner, stat.BroadcastOp) and _nuses(v) == 1 and not inner.dims_tuple:
                # A broadcast scalar: keep the scalar, broadcast once at the end.
                src = inner.input
                if isinstance(src.owner, stat.MulOp) and _nuses(src) == 1 and _secret(src):
                    self._collect(src.owner, out)
                else:
                    out.append(src)
            else:
                out.append(v)

    def _rebuild(self, program: stat.ProgramOp, root: stat.MulOp, factors: list[SSAValue]) -> None:
        depths = stat_depths(program)
        block = root.parent_block()
        assert block is not None
        shape = stat.tensor_type(root.result).dims

        def cost(v: SSAValue) -> tuple[int, int, int]:
            t = stat.tensor_type(v)
            free = 0 if (not t.is_secret and public_integer(v)) else 1
            return (depths.get(v, 0), len(t.dims), free)

        def emit(new: Operation) -> SSAValue:
            block.insert_op_before(new, root)
            return new.results[0]

        def fit(v: SSAValue, dims: tuple) -> SSAValue:
            t = stat.tensor_type(v)
            if t.dims == dims:
                return v
            if t.dims:
                raise _UnsupportedError
            return emit(stat.BroadcastOp(v, dims, ()))

        pool = sorted(factors, key=cost)
        if sum(1 for f in pool if stat.tensor_type(f).dims not in ((), shape)):
            return  # factors of other shapes (broadcast vectors): leave the chain as written
        while len(pool) > 1:
            a, b = pool.pop(0), pool.pop(0)
            da, db = stat.tensor_type(a).dims, stat.tensor_type(b).dims
            dims = da if len(da) >= len(db) else db
            prod = emit(stat.MulOp(fit(a, dims), fit(b, dims)))
            depths[prod] = max(depths.get(a, 0), depths.get(b, 0)) + (
                1 if _secret(a) and _secret(b) else 0
            )
            pool.append(prod)
            pool.sort(key=cost)
        result = fit(pool[0], shape)
        result.name_hint = root.result.name_hint
        root.result.replace_all_uses_with(result)
