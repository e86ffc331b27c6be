"""Reference simulator for `bfv` programs: the IR run on integer arrays modulo t.

BFV is exact while the noise budget lasts, so the simulator computes what decryption returns:
every ciphertext value as its logical integer array, reduced to the centred residues modulo
the plaintext modulus t after every op (a value that leaves (-t/2, t/2) wraps here exactly as
it would under encryption, so a wrong plaintext modulus shows as a wrong result), and the
noise budget of every decrypted value from the analytic model (`compiler.analysis.bfv_noise`)
must be positive. Layouts are not simulated slot by slot: BFV's ops act on each slot alike and
the lowering refuses slot sums over non-zero padding, so the logical arrays are what the slots
hold. Integers are int64 while t < 2^31 (products fit), Python integers beyond.

A program with several plaintext moduli t_1 .. t_k (a CRT, passes/bfv_parameters.py) is
simulated as it runs: once modulo each t_i, the revealed residues then reconstructed exactly
(`bfv.reconstruct`); a revealed value is an int64 array, or an object array of Python ints
when it leaves int64, or float64 when it carries a public factor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.ir import SSAValue

from compiler.analysis.bfv_noise import Ring, decrypt_budgets
from compiler.analysis.ranges import evaluate_public
from compiler.dialects import bfv, he
from compiler.errors import InternalError, UserError
from compiler.owner_expr import parse
from compiler.types import Dim
from targets.sim.simulator import gather

Array = npt.NDArray[Any]


@dataclass
class BfvSimulation:
    outputs: dict[str, Array]  # exact integers (int64 or Python ints), or float64 with a factor
    budgets: dict[str, float]  # predicted noise budget (bits) of every decrypted value


class _Sim:
    def __init__(self, t: int, program: bfv.ProgramOp, sizes: Mapping[str, int]):
        self.t = t
        self.dtype = np.int64 if self.t < (1 << 31) else object
        self.sizes = dict(sizes)
        self.public = evaluate_public(program, self.sizes)
        self.values: dict[SSAValue, Array] = {}

    def dim(self, d: Dim) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def centred(self, x: npt.ArrayLike) -> Array:
        a = np.asarray(x, dtype=self.dtype) % self.t
        return np.where(a > self.t // 2, a - self.t, a)

    def integer(self, value: float, what: str) -> int:
        if not float(value).is_integer():
            raise UserError(f"bfv: {what} is {value}, not an integer")
        return int(value)

    def load(self, name: str, inputs: Mapping[str, npt.ArrayLike]) -> npt.NDArray[np.float64]:
        if name not in inputs:
            raise UserError(f"no data for input {name}")
        x = np.asarray(inputs[name], dtype=np.float64)
        if not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
            raise UserError(f"input {name}: bfv encrypts integers; a value is not one")
        return x

    def step(self, op: object, inputs: Mapping[str, npt.ArrayLike]) -> Array | None:
        g = self.values.__getitem__
        match op:
            case bfv.EncodeOp():
                ty = he.pt_type(op.result)
                dims = tuple(self.dim(d) for d in ty.dims)
                if op.expr_value is not None:
                    env = {n: self.load(n, inputs) for n in parse(op.expr_value).sources()}
                    value = parse(op.expr_value).evaluate(env, len(dims))
                else:
                    value = self.load(op.sym_value, inputs)
                value = np.broadcast_to(np.asarray(value), dims)
                if not np.all(value == np.round(value)):
                    raise UserError(f"bfv: the encoded value {op.sym_value} is not integral")
                return self.centred(np.round(value).astype(np.int64))
            case bfv.EncryptOp() | bfv.RelinearizeOp() | bfv.ModSwitchOp():
                return g(op.operands[0])
            case bfv.AddOp():
                return self.centred(g(op.lhs) + g(op.rhs))
            case bfv.SubOp():
                return self.centred(g(op.lhs) - g(op.rhs))
            case bfv.NegateOp():
                return self.centred(-g(op.input))
            case bfv.MulOp():
                return self.centred(g(op.lhs) * g(op.rhs))
            case bfv.MulConstOp():
                c = self.integer(self.public[op.value], "a multiplied constant")
                return self.centred(g(op.input) * c)
            case bfv.AddConstOp():
                c = self.integer(self.public[op.value], "an added constant")
                return self.centred(g(op.input) + c)
            case bfv.DotOp():
                return self.centred(np.sum(g(op.lhs) * g(op.rhs), axis=op.axis_value))
            case bfv.ReduceOp():
                return self.centred(np.sum(g(op.input), axis=op.axis_value))
            case bfv.SumSlotsOp():
                return self.centred(np.sum(g(op.input), axis=-1))
            case bfv.TransposeOp():
                return np.transpose(g(op.input))
            case bfv.GatherOp():
                shape = tuple(self.dim(d) for d in op.shape_tuple)
                return self.centred(gather(g(op.input), op, shape))
            case bfv.BroadcastOp():
                x = g(op.input)
                shape = tuple(self.dim(d) for d in op.shape_tuple)
                target = [1] * len(shape)
                for i, d in enumerate(op.dims_tuple):
                    target[d] = x.shape[i]
                return np.broadcast_to(x.reshape(target), shape)
            case bfv.RotateOp():
                return np.roll(g(op.input), -op.offset_value, axis=-1)
            case _:
                return None

    def run(self, program: bfv.ProgramOp, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Array]:
        """The centred residues mod t of every revealed value."""
        outputs: dict[str, Array] = {}
        for op in program.block.ops:
            if isinstance(op, bfv.DecryptOp):
                outputs[op.sym_value] = self.values[op.input]
                continue
            result = self.step(op, inputs)
            if result is not None:
                self.values[op.results[0]] = result
        return outputs


def simulate_bfv(
    program: bfv.ProgramOp, sizes: Mapping[str, int], inputs: Mapping[str, npt.ArrayLike]
) -> BfvSimulation:
    """Run `program` on `inputs` (logical arrays by input name) for concrete `sizes`."""
    params = program.parameters()
    if params is None:
        raise InternalError("bfv simulator: the program has no parameters")
    ring = Ring(
        log_n=params.log_n,
        log_t=params.log_t,
        q_bits=tuple(float(np.log2(q)) for q in params.moduli),
        p_bits=tuple(float(np.log2(p)) for p in params.special_moduli),
        dnum=params.dnum,
    )
    budgets = decrypt_budgets(program, ring, sizes)
    for name, bits in budgets.items():
        if bits <= 0:
            raise UserError(f"bfv: {name} has no noise budget left ({bits:.1f} bits)")
    runs = [_Sim(t, program, sizes).run(program, inputs) for t in params.plain_moduli]
    public = evaluate_public(program, dict(sizes))
    outputs: dict[str, Array] = {}
    for d in program.decrypts():
        exact = bfv.reconstruct([r[d.sym_value] for r in runs], params.plain_moduli)
        if d.factor is None:
            outputs[d.sym_value] = exact
        else:
            outputs[d.sym_value] = np.asarray(exact, dtype=np.float64) * public[d.factor]
    return BfvSimulation(outputs, budgets)
