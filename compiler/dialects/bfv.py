"""The `bfv` dialect: exact integer programs under BFV (runtime/bfv: Halevi-Polyakov-Shoup).

The ops are the HE layer's rules (compiler/dialects/he.py) under BFV's names, on the HE
layer's types: a value is an array of ciphertexts of integers modulo the plaintext modulus t,
so every add, product and integer constant is exact as long as no true value leaves
(-t/2, t/2) (the bfv parameter pass chooses t from the range analysis so none does). There
are no scales and no real constants; `bfv.mod_switch` drops the last prime of Q (level l ->
l - 1: smaller ciphertexts, the noise scaled down with them).

Slots: a BFV ciphertext holds N slots (both rows of the 2 x N/2 batching matrix); element j
of a packed block is row j div (N/2), column j mod (N/2). `bfv.sum_slots` sums all N slots
into every slot (row rotations by 1, 2, ..., N/4, then the row swap).

`bfv.program` carries the parameters once chosen as `#bfv.parameters` (`Parameters` in
Python): log_n, plain_moduli, moduli (the primes of Q), special_moduli (key switching), dnum,
security_bits, insecure; and the rotation keys. `plain_moduli` lists one batching prime t
or, when a revealed value's range needs more bits than one prime below 2^60 holds, k primes
t_1 .. t_k: the program then runs k times, once modulo each t_i (residue computations with
the same ring and Q), and decryption reconstructs each integer from its k residues by the
Chinese remainder theorem (`reconstruct`), exactly in (-T/2, T/2) for T = t_1 ... t_k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntAttr, i64
from xdsl.ir import Dialect
from xdsl.irdl import irdl_attr_definition, irdl_op_definition, opt_attr_def
from xdsl.utils.exceptions import VerifyException

from compiler.dialects import he
from compiler.dialects.he import CtType, PtType, PublicType, ct_type, ints


@dataclass(frozen=True)
class Parameters:
    """BFV parameters: ring 2^log_n, plaintext moduli t_1 .. t_k (primes = 1 mod 2N:
    batching; k > 1 is a CRT over k residue computations), ciphertext primes Q = q_0 ... q_L
    (level l uses q_0 .. q_l), key-switching primes P."""

    log_n: int
    plain_moduli: tuple[int, ...]
    moduli: tuple[int, ...]
    special_moduli: tuple[int, ...]
    dnum: int
    security_bits: int
    insecure: bool

    @property
    def slots(self) -> int:
        return 1 << self.log_n

    @property
    def residues(self) -> int:
        """How many residue computations the program runs (one per plaintext modulus)."""
        return len(self.plain_moduli)

    @property
    def plain_product(self) -> int:
        """T = t_1 ... t_k: decryption yields every integer in (-T/2, T/2) exactly."""
        return math.prod(self.plain_moduli)

    @property
    def log_t(self) -> float:
        """log2 of the largest t_i: the one that bounds the noise of every residue."""
        return math.log2(max(self.plain_moduli))

    @property
    def top_level(self) -> int:
        return len(self.moduli) - 1

    def modulus_bits(self, level: int) -> float:
        return sum(math.log2(q) for q in self.moduli[: level + 1])

    @property
    def log_qp(self) -> float:
        return self.modulus_bits(self.top_level) + sum(math.log2(p) for p in self.special_moduli)


def reconstruct(residues: Sequence[npt.ArrayLike], moduli: Sequence[int]) -> npt.NDArray[Any]:
    """The integers x in (-T/2, T/2), T = prod(moduli), with x = residues[i] (mod moduli[i]):
    the Chinese remainder theorem on Python integers (exact at any size). One modulus: the
    residues unchanged (int64). Several: an object array of Python ints (int64 when every
    value fits)."""
    if len(residues) != len(moduli) or not moduli:
        raise ValueError(f"{len(residues)} residue arrays for {len(moduli)} moduli")
    if len(moduli) == 1:
        return np.asarray(residues[0], dtype=np.int64)
    total = math.prod(moduli)
    # x = sum_i r_i (T/t_i) [(T/t_i)^-1 mod t_i] mod T, then centred.
    weights = [(total // t) * pow(total // t, -1, t) % total for t in moduli]
    arrays = [np.asarray(r).astype(object) for r in residues]
    acc = np.zeros(arrays[0].shape, dtype=object)
    for r, w in zip(arrays, weights, strict=True):
        acc = (acc + r * w) % total
    out = np.where(acc > total // 2, acc - total, acc)
    fits = all(-(2**63) <= int(v) < 2**63 for v in out.flat)
    return out.astype(np.int64) if fits else out.astype(object)


def _dense(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


@irdl_attr_definition
class ParametersAttr(he.IntFields):
    """`#bfv.parameters<log_n = 13, plain_moduli = [...], moduli = [...], special_moduli =
    [...], dnum = 2, security_bits = 128, insecure = false>`: the parameters a BFV program runs
    under (bfv-parameters; `Parameters` is its Python form)."""

    name = "bfv.parameters"

    log_n: IntAttr
    plain_moduli: ArrayAttr[IntAttr]
    moduli: ArrayAttr[IntAttr]
    special_moduli: ArrayAttr[IntAttr]
    dnum: IntAttr
    security_bits: IntAttr
    insecure: IntAttr

    @staticmethod
    def get(p: Parameters) -> ParametersAttr:
        return ParametersAttr(
            IntAttr(p.log_n),
            he.ints_attr(p.plain_moduli),
            he.ints_attr(p.moduli),
            he.ints_attr(p.special_moduli),
            IntAttr(p.dnum),
            IntAttr(p.security_bits),
            IntAttr(int(p.insecure)),
        )

    def value(self) -> Parameters:
        def ints(a: ArrayAttr[IntAttr]) -> tuple[int, ...]:
            return tuple(q.data for q in a.data)

        return Parameters(
            log_n=self.log_n.data,
            plain_moduli=ints(self.plain_moduli),
            moduli=ints(self.moduli),
            special_moduli=ints(self.special_moduli),
            dnum=self.dnum.data,
            security_bits=self.security_bits.data,
            insecure=self.insecure.data != 0,
        )

    def verify(self) -> None:
        if self.insecure.data not in (0, 1):
            raise VerifyException("insecure is a flag")
        if not self.plain_moduli.data or not self.moduli.data:
            raise VerifyException("a BFV program needs a plaintext modulus and a ciphertext prime")
        for array in (self.plain_moduli, self.moduli, self.special_moduli):
            if any(q.data < 2 for q in array.data):
                raise VerifyException("moduli are primes")


@irdl_op_definition
class ProgramOp(he.ProgramRule):
    """A whole BFV program. What the passes decide about it are typed attributes:
    `parameters` (`#bfv.parameters`, bfv-parameters) and `rotation_keys` (rotation-keys);
    the emitter and the report read them from here."""

    name = "bfv.program"

    chain = opt_attr_def(ParametersAttr, attr_name="parameters")
    rotations = opt_attr_def(DenseArrayBase, attr_name="rotation_keys")

    def parameters(self) -> Parameters | None:
        return None if self.chain is None else self.chain.value()

    def set_parameters(self, p: Parameters) -> None:
        self.attributes["parameters"] = ParametersAttr.get(p)

    def rotation_keys(self) -> tuple[int, ...] | None:
        return None if self.rotations is None else ints(self.rotations)

    def set_rotation_keys(self, offsets: Sequence[int]) -> None:
        self.attributes["rotation_keys"] = _dense(sorted(set(offsets)))


@irdl_op_definition
class ParamOp(he.ParamRule):
    name = "bfv.param"


@irdl_op_definition
class SourceOp(he.SourceRule):
    name = "bfv.source"


@irdl_op_definition
class SizeOp(he.SizeRule):
    name = "bfv.size"


@irdl_op_definition
class ConstantOp(he.ConstantRule):
    name = "bfv.constant"


@irdl_op_definition
class PublicArithOp(he.PublicArithRule):
    name = "bfv.public_arith"


@irdl_op_definition
class EncodeOp(he.EncodeRule):
    name = "bfv.encode"


@irdl_op_definition
class EncryptOp(he.EncryptRule):
    name = "bfv.encrypt"


@irdl_op_definition
class DecryptOp(he.DecryptRule):
    name = "bfv.decrypt"


@irdl_op_definition
class AddOp(he.AddRule):
    name = "bfv.add"


@irdl_op_definition
class SubOp(he.SubRule):
    name = "bfv.sub"


@irdl_op_definition
class NegateOp(he.NegateRule):
    name = "bfv.negate"


@irdl_op_definition
class MulOp(he.MulRule):
    name = "bfv.mul"


@irdl_op_definition
class MulConstOp(he.MulConstRule):
    """Multiply by a public integer (BFV has no real constants)."""

    name = "bfv.mul_const"

    def infer(self) -> CtType:
        if not self.is_integer:
            raise VerifyException("bfv.mul_const multiplies by integers only")
        return ct_type(self.input)


@irdl_op_definition
class AddConstOp(he.AddConstRule):
    name = "bfv.add_const"

    def infer(self) -> CtType:
        if not self.is_integer:
            raise VerifyException("bfv.add_const adds integers only")
        return ct_type(self.input)


@irdl_op_definition
class RelinearizeOp(he.RelinearizeRule):
    name = "bfv.relinearize"


@irdl_op_definition
class ModSwitchOp(he.LevelDownRule):
    """Drop the last prime of Q (level l -> l - 1), rounding so the message mod t is kept."""

    name = "bfv.mod_switch"


@irdl_op_definition
class RotateOp(he.RotateRule):
    name = "bfv.rotate"


@irdl_op_definition
class SumSlotsOp(he.SumSlotsRule):
    name = "bfv.sum_slots"


@irdl_op_definition
class ReduceOp(he.ReduceRule):
    name = "bfv.reduce"


@irdl_op_definition
class DotOp(he.DotRule):
    name = "bfv.dot"


@irdl_op_definition
class BroadcastOp(he.BroadcastRule):
    name = "bfv.broadcast"


@irdl_op_definition
class TransposeOp(he.TransposeRule):
    name = "bfv.transpose"


@irdl_op_definition
class GatherOp(he.GatherRule):
    name = "bfv.gather"


Bfv = Dialect(
    "bfv",
    [
        ProgramOp,
        ParamOp,
        SourceOp,
        SizeOp,
        ConstantOp,
        PublicArithOp,
        EncodeOp,
        EncryptOp,
        DecryptOp,
        AddOp,
        SubOp,
        NegateOp,
        MulOp,
        MulConstOp,
        AddConstOp,
        RelinearizeOp,
        ModSwitchOp,
        RotateOp,
        SumSlotsOp,
        ReduceOp,
        DotOp,
        BroadcastOp,
        TransposeOp,
        GatherOp,
    ],
    [ParametersAttr],
)
for _op in Bfv.operations:
    if issubclass(_op, he.HeOp):
        _op.TYPES = he.HE_TYPES

# The ops that need a key switch (evaluation keys) when executed.
KEY_SWITCH_OPS = (RelinearizeOp, RotateOp, SumSlotsOp)
PUBLIC_OPS = (ParamOp, SourceOp, SizeOp, ConstantOp, PublicArithOp)

__all__ = ["Bfv", "CtType", "Parameters", "ParametersAttr", "ProgramOp", "PtType", "PublicType"]
