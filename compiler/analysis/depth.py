"""Multiplicative depth: the number of levels a value costs, on `stat` and on `ckks` IR.

A level is consumed by a product of two secret values, by a product with a real (non-integer)
public constant, and by nothing else: additions are free and so is multiplication by an
integer, which CKKS performs exactly without touching the scale. On ckks IR, depth counts
the same products (`mul`, `dot`, `mul_plain`, real `mul_const`), except scale-alignment
multiplies by 1.
"""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue

from compiler.analysis.polynomial import plan_polynomial
from compiler.dialects import ckks, he, stat


def public_integer(v: SSAValue) -> bool:
    """Whether a public stat value is an integer for every size binding."""
    op = v.owner
    match op:
        case stat.ConstantOp():
            return op.float_value.is_integer()
        case stat.SizeOp():
            return True
        case stat.AddOp() | stat.SubOp() | stat.MulOp():
            return public_integer(op.lhs) and public_integer(op.rhs)
        case stat.NegOp() | stat.BroadcastOp():
            return public_integer(op.input)
        case _:
            return False


def stat_depths(program: stat.ProgramOp) -> dict[SSAValue, int]:
    depth: dict[SSAValue, int] = {}

    def d(v: SSAValue) -> int:
        return depth.get(v, 0)

    def secret(v: SSAValue) -> bool:
        return stat.tensor_type(v).is_secret

    for op in program.server_ops():
        if not op.results:
            continue
        out = op.results[0]
        if not secret(out):
            depth[out] = 0
            continue
        match op:
            case stat.MulOp() | stat.MatmulOp():
                if secret(op.lhs) and secret(op.rhs):
                    depth[out] = max(d(op.lhs), d(op.rhs)) + 1
                else:
                    pub = op.rhs if secret(op.lhs) else op.lhs
                    sec = op.lhs if secret(op.lhs) else op.rhs
                    depth[out] = d(sec) + (0 if public_integer(pub) else 1)
            case stat.PowOp():
                depth[out] = d(op.input) + math.ceil(math.log2(op.exponent_value))
            case stat.PolyOp():
                depth[out] = d(op.input) + plan_polynomial(op.coefficient_values).depth
            case stat.MeanOp():
                depth[out] = d(op.input) + 1
            case stat.OwnerComputeOp():
                depth[out] = 0  # computed by the data owner in plaintext
            case stat.PackedSumOp():
                for r in op.results:
                    depth[r] = 0  # additions only
            case _:
                depth[out] = max((d(v) for v in op.operands), default=0)
    return depth


def stat_depth(program: stat.ProgramOp) -> dict[str, int]:
    """Depth of every revealed value, by reveal name."""
    depth = stat_depths(program)
    return {r.sym_value: depth.get(r.input, 0) for r in program.reveals()}


def ckks_depth(program: ckks.ProgramOp) -> dict[str, int]:
    """Multiplicative depth of every decrypted value, by name."""
    depth: dict[SSAValue, int] = {}
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, ckks.CtType | ckks.PtType):
            continue
        base = max(
            (depth.get(v, 0) for v in op.operands if isinstance(v.type, ckks.CtType)), default=0
        )
        product = isinstance(op, ckks.MulOp | ckks.DotOp | ckks.MulPlainOp | ckks.DiagMatvecOp) or (
            isinstance(op, ckks.MulConstOp) and not op.is_integer and "align" not in op.attributes
        )
        depth[op.results[0]] = base + int(product)
    return {d.sym_value: depth.get(d.input, 0) for d in program.decrypts()}


def product_depth(program: he.ProgramRule) -> dict[str, int]:
    """Ciphertext-ciphertext multiplicative depth (`mul`, `dot`) of every decrypted value, by
    name (he or bfv: products by plaintexts and constants are not counted, as BFV's noise
    barely grows by them)."""
    depth: dict[SSAValue, int] = {}
    for op in program.block.ops:
        if not op.results:
            continue
        base = max((depth.get(v, 0) for v in op.operands), default=0)
        cts = [v for v in op.operands if isinstance(v.type, he.CiphertextType)]
        product = isinstance(op, he.MulRule | he.DotRule) and len(cts) == 2
        depth[op.results[0]] = base + int(product)
    return {
        d.sym_value: depth.get(d.input, 0)
        for d in program.block.ops
        if isinstance(d, he.DecryptRule)
    }


def ciphertext_products(program: he.ProgramRule) -> dict[str, int]:
    """Ciphertext-ciphertext products (`mul`, `dot`) each decrypted value is computed with:
    the non-scalar multiplications of Paterson and Stockmeyer, by name (ckks, he or bfv)."""
    out: dict[str, int] = {}
    for d in program.block.ops:
        if not isinstance(d, he.DecryptRule):
            continue
        seen: set[Operation] = set()
        stack = [d.input]
        count = 0
        while stack:
            owner = stack.pop().owner
            if not isinstance(owner, Operation) or owner in seen:
                continue
            seen.add(owner)
            if isinstance(owner, he.MulRule | he.DotRule | he.DiagMatvecRule):
                count += 1
            stack.extend(v for v in owner.operands if isinstance(v.type, he.CiphertextType))
        out[d.sym_value] = count
    return out
