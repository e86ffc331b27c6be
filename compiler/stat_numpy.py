"""Numpy semantics of the `stat` dialect: evaluates a `stat.program` on concrete arrays.

Two users: the driver runs the `stat.client` region with it on decrypted values
(`run_client`), and tests compare it with the source-level reference evaluator
(`dsl/reference.py`) to show that the lowering keeps the meaning of a program. Each op's
meaning is the one stated in `compiler/dialects/stat.py`; det/adj use cofactor expansion so
they are defined for singular matrices too.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats
from xdsl.ir import Operation, SSAValue

from compiler import owner_expr
from compiler.dialects import stat
from compiler.errors import InternalError, UserError, op_location

Array = npt.NDArray[np.float64]


@dataclass
class StatResult:
    revealed: dict[str, Array]
    client: dict[str, Array]


def det_cofactor(a: Array) -> float:
    """Determinant by Laplace expansion along the first row."""
    if a.shape[0] == 1:
        return float(a[0, 0])
    return sum(
        (-1) ** j * float(a[0, j]) * det_cofactor(np.delete(a[1:], j, axis=1))
        for j in range(a.shape[0])
    )


def adj_cofactor(a: Array) -> Array:
    """Adjugate: adj(A)[j, i] = (-1)^(i+j) det(A without row i and column j)."""
    k = a.shape[0]
    if k == 1:
        return np.ones((1, 1))
    out = np.empty((k, k))
    for i, j in itertools.product(range(k), repeat=2):
        out[j, i] = (-1) ** (i + j) * det_cofactor(np.delete(np.delete(a, i, 0), j, 1))
    return out


class _Machine:
    def __init__(self, sizes: Mapping[str, int]):
        self.sizes = dict(sizes)
        self.values: dict[SSAValue, Array] = {}

    def shape(self, value: SSAValue) -> tuple[int, ...]:
        dims = stat.tensor_type(value).dims
        return tuple(d if isinstance(d, int) else self.sizes[d] for d in dims)

    def get(self, value: SSAValue) -> Array:
        return self.values[value]

    def run(self, op: Operation) -> None:
        if isinstance(op, stat.PackedSumOp):
            for arg, res in zip(op.args, op.sums, strict=True):
                self.values[res] = np.sum(self.get(arg), axis=0).reshape(self.shape(res))
            return
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = self._eval(op)
        if result is not None:
            out = op.results[0]
            self.values[out] = np.broadcast_to(
                np.asarray(result, dtype=np.float64), self.shape(out)
            ).copy()

    def _eval(self, op: Operation) -> npt.ArrayLike | None:
        g = self.get
        match op:
            case stat.SizeOp():
                return float(self.sizes[op.sym_value])
            case stat.ConstantOp():
                return op.float_value
            case stat.IndexOp():
                x = g(op.input)
                picks: list[int | slice] = []
                for axis, (start, stop, drop) in enumerate(op.axis_ranges(self.sizes)):
                    if stop > x.shape[axis]:
                        raise UserError(
                            f"index {stop - 1} is out of range for axis {axis}, of size "
                            f"{x.shape[axis]} in this run",
                            op_location(op),
                        )
                    picks.append(start if drop else slice(start, stop))
                return x[tuple(picks)]
            case stat.EyeOp():
                return np.eye(self.shape(op.result)[0])
            case stat.AddOp():
                return g(op.lhs) + g(op.rhs)
            case stat.SubOp():
                return g(op.lhs) - g(op.rhs)
            case stat.MulOp():
                return g(op.lhs) * g(op.rhs)
            case stat.DivOp():
                return g(op.lhs) / g(op.rhs)
            case stat.NegOp():
                return -g(op.input)
            case stat.PowOp():
                return g(op.input) ** op.exponent_value
            case stat.PolyOp():
                x = g(op.input)
                acc = np.zeros_like(x)
                for c in reversed(op.coefficient_values):
                    acc = acc * x + c
                return acc
            case stat.BroadcastOp():
                x = g(op.input)
                target = [1] * stat.tensor_type(op.result).rank
                for axis, result_axis in enumerate(op.dims_tuple):
                    target[result_axis] = x.shape[axis]
                return x.reshape(target)
            case stat.MatmulOp():
                return g(op.lhs) @ g(op.rhs)
            case stat.SumOp():
                return np.sum(g(op.input), axis=op.axes_tuple)
            case stat.MeanOp():
                return np.mean(g(op.input), axis=op.axes_tuple)
            case stat.TransposeOp():
                return g(op.input).T
            case stat.DetOp():
                return det_cofactor(g(op.input))
            case stat.AdjOp():
                return adj_cofactor(g(op.input))
            case stat.RevealOp():
                return g(op.input)
            case stat.OwnerComputeOp():
                env = {src.sym_value: g(src.result) for src in op.sources()}
                rank = stat.tensor_type(op.result).rank
                return owner_expr.parse(op.expr_value).evaluate(env, rank)
            case stat.SqrtOp():
                return np.sqrt(g(op.input))
            case stat.AbsOp():
                return np.abs(g(op.input))
            case stat.ExpOp():
                return np.exp(g(op.input))
            case stat.LogOp():
                return np.log(g(op.input))
            case stat.NormSfOp():
                return stats.norm.sf(g(op.input))
            case stat.NormCdfOp():
                return stats.norm.cdf(g(op.input))
            case stat.Chi2SfOp():
                return stats.chi2.sf(g(op.input), df=op.df_value)
            case stat.ParamOp() | stat.OutputOp() | stat.ClientOp():
                return None
            case _:
                raise InternalError(f"no numpy semantics for {op.name} (every stat op needs one)")


def run_program(
    program: stat.ProgramOp, sizes: Mapping[str, int], inputs: Mapping[str, npt.ArrayLike]
) -> StatResult:
    """Evaluate every op of `program` (server part and client region) in plaintext."""
    machine = _Machine(sizes)
    revealed: dict[str, Array] = {}
    for op in program.server_ops():
        if isinstance(op, stat.InputOp):
            value = np.asarray(inputs[op.sym_value], dtype=np.float64)
            machine.values[op.result] = value.reshape(machine.shape(op.result))
            continue
        machine.run(op)
        if isinstance(op, stat.RevealOp):
            revealed[op.sym_value] = machine.get(op.result)
    client = program.client()
    outputs = _run_region(machine, client) if client else {}
    return StatResult(revealed, outputs)


def run_client(
    program: stat.ProgramOp,
    sizes: Mapping[str, int],
    revealed: Mapping[str, npt.ArrayLike],
    public_inputs: Mapping[str, npt.ArrayLike] | None = None,
) -> dict[str, Array]:
    """Run only the client region, on decrypted values keyed by reveal name. The public server
    values it reads (sizes, constants, public inputs and what is computed from them alone) are
    recomputed here; no secret value is needed."""
    machine = _Machine(sizes)
    public_inputs = public_inputs or {}
    for op in program.server_ops():
        if isinstance(op, stat.RevealOp):
            machine.values[op.result] = np.asarray(revealed[op.sym_value], dtype=np.float64)
        elif isinstance(op, stat.InputOp):
            if op.sym_value in public_inputs:
                value = np.asarray(public_inputs[op.sym_value], dtype=np.float64)
                machine.values[op.result] = value.reshape(machine.shape(op.result))
        elif all(o in machine.values for o in op.operands) and not any(
            stat.tensor_type(r).is_secret for r in op.results
        ):
            machine.run(op)
    client = program.client()
    return _run_region(machine, client) if client else {}


def _run_region(machine: _Machine, client: stat.ClientOp) -> dict[str, Array]:
    outputs: dict[str, Array] = {}
    for op in client.block.ops:
        machine.run(op)
        if isinstance(op, stat.OutputOp):
            outputs[op.sym_value] = machine.get(op.input)
    return outputs
