"""Polynomial degree of every `stat` value in the secret inputs.

Public values have degree 0 and secret inputs degree 1; sums take the maximum, products and
matrix products the sum, `x^k` k times, a polynomial of degree d d times, a k x k determinant
k times (its adjugate k - 1 times); division by a secret value and every non-polynomial
function of one (sqrt, exp, log, ...) give infinity. The labeled target evaluates programs
whose revealed values have degree <= 2 (Barbosa-Catalano-Fiore: degree-2 polynomials).

Owner-side precomputation: `x^2`, `x * x` and a polynomial of a secret input `x` itself are
computed by x's provider before encryption and uploaded as a derived input, so they count as
degree 1 (`owner_side=True`, what the labeled target does).
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from compiler.dialects import stat

INFINITE = math.inf


def is_secret_input(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, stat.InputOp) and stat.tensor_type(value).is_secret


def owner_side(op: object) -> bool:
    """x^k, poly(x) or x * x of a secret input x: computable by x's provider alone."""
    match op:
        case stat.PowOp() | stat.PolyOp():
            return is_secret_input(op.input)
        case stat.MulOp():
            return op.lhs is op.rhs and is_secret_input(op.lhs)
        case _:
            return False


def value_degrees(program: stat.ProgramOp, owner_side_inputs: bool = True) -> dict[SSAValue, float]:
    deg: dict[SSAValue, float] = {}
    for op in program.server_ops():
        if owner_side_inputs and owner_side(op):
            deg[op.results[0]] = 1.0
            continue
        if not op.results:
            continue
        operands = [deg.get(o, 0.0) for o in op.operands]
        match op:
            case stat.InputOp():
                d = 1.0 if stat.tensor_type(op.result).is_secret else 0.0
            case stat.SizeOp() | stat.ConstantOp() | stat.EyeOp() | stat.ParamOp():
                d = 0.0
            case stat.AddOp() | stat.SubOp():
                d = max(operands)
            case stat.MulOp() | stat.MatmulOp():
                d = operands[0] + operands[1]
            case stat.DivOp():
                d = operands[0] if operands[1] == 0 else INFINITE
            case stat.PowOp():
                k = op.exponent_value
                d = operands[0] * k if float(k).is_integer() and k >= 0 else INFINITE
                d = 0.0 if operands[0] == 0 else d
            case stat.PolyOp():
                d = operands[0] * (len(op.coefficient_values) - 1)
            case stat.DetOp():
                d = operands[0] * stat.tensor_type(op.input).dims[0]  # type: ignore[operator]
            case stat.AdjOp():
                d = operands[0] * (stat.tensor_type(op.input).dims[0] - 1)  # type: ignore[operator]
            case (
                stat.NegOp()
                | stat.BroadcastOp()
                | stat.SumOp()
                | stat.MeanOp()
                | stat.TransposeOp()
                | stat.IndexOp()
                | stat.RevealOp()
            ):
                d = operands[0]
            case _:
                d = 0.0 if all(o == 0 for o in operands) else INFINITE
        for r in op.results:
            deg[r] = d
    return deg


def reveal_degrees(program: stat.ProgramOp, owner_side_inputs: bool = True) -> dict[str, float]:
    """Degree of each revealed value, by reveal name."""
    deg = value_degrees(program, owner_side_inputs)
    return {r.sym_value: deg[r.input] for r in program.reveals()}
