"""BFV bit slices: an integer or Boolean program lowered to a `stat` program on 0/1 arrays,
which the BFV pipeline compiles like any other (issue 23, docs/circuits.md "BFV bit slices").

Each integer input `a: secret[N] u8` becomes eight inputs `a__b0` .. `a__b7` (bit i of every
element, domain {0, 1}): one bit of N independent values per slot vector. Each operation is
the arithmetic circuit compiler/circuits/arith.py chooses for it; a product of two affine forms
is a `stat.mul`, additions and constant factors are `stat.add`/`sub`/`mul` by constants (free
under BFV: no relinearization, no noise worth a prime). Every value carries the range the
construction proves (bits [0, 1], counts [0, m]) as a `proven_range` for every slot, so the
plaintext modulus is the smallest batching prime, whatever the interval bound of a deep sum.

A revealed word is revealed as integers, each up to 16 bits wide, formed on the server from its
bits (sum 2^i b_i, the sign bit weighing -2^(w-1) for a signed word that fits one): `c` itself
for widths up to 16, `c__w0`, `c__w1`, ... (least significant first) above, which
`assemble_outputs` puts together exactly. `split_inputs` makes the planes of integer arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.analysis.ranges import set_proven_range
from compiler.circuits import arith
from compiler.circuits.arith import Affine, ArithCircuit
from compiler.dialects import stat
from compiler.types import FiniteSet, Interval, Shape
from dsl import ast
from dsl.checker import CheckedProgram, IntType
from dsl.circuit import IntegerLowering

# The widest integer revealed as one value: the plaintext modulus must exceed twice it, and
# a modulus of about 2^17 keeps the noise of every product small.
CHUNK_BITS = 16
BIT_DOMAIN = FiniteSet((0.0, 1.0))


def plane_name(name: str, bit: int) -> str:
    return f"{name}__b{bit}"


def plane_source(name: str) -> str:
    """The input a plane name belongs to (`a__b3` -> `a`; any other name is itself)."""
    base, sep, bit = name.rpartition("__b")
    return base if sep and bit.isdigit() else name


def chunk_name(name: str, chunk: int) -> str:
    return f"{name}__w{chunk}"


def is_integer_program(checked: CheckedProgram) -> bool:
    return any(b.ty.int_type is not None for b in checked.bindings.values())


@dataclass
class BitSlices:
    """What the lowering decided, for the driver and the report."""

    inputs: dict[str, tuple[IntType, Shape]] = field(default_factory=dict)
    outputs: dict[str, tuple[IntType, Shape]] = field(default_factory=dict)
    choices: list[Any] = field(default_factory=list)
    depth: int = 0
    products: int = 0
    circuit: ArithCircuit = field(default_factory=ArithCircuit)
    # Revealed words (or chunks) that are constants, by name: not revealed (nothing to decrypt).
    constants: dict[str, int] = field(default_factory=dict)


class _SliceLowering(IntegerLowering[Affine]):
    target = "bfv"

    def __init__(self, checked: CheckedProgram):
        super().__init__(checked)
        self.c = ArithCircuit()
        self.secret: dict[str, bool] = {}

    # ---- words ------------------------------------------------------------------------------
    def input(self, name: str, t: IntType, shape: Shape, secret: bool) -> list[Affine]:
        self.secret[name] = secret
        return self.c.input(name, t.width, signed=t.signed)

    def output(self, name: str, word: list[Affine], t: IntType, shape: Shape) -> None:
        arrays = [s for _, s in self.inputs.values() if s]
        if arrays and tuple(shape) != tuple(arrays[0]):
            assert self.span is not None
            raise self.error(
                self.span,
                f"'{name}' is a scalar computed from scalars only; BFV bit slices reveal one "
                "value per element of the program's arrays",
                "compute it from an array input, or use --scheme fhew",
            )
        self.c.output(name, word)

    def const_word(self, value: int, width: int) -> list[Affine]:
        return [self.c.const((value >> i) & 1) for i in range(width)]

    def zero(self) -> Affine:
        return self.c.const(0)

    def not_(self, x: Affine) -> Affine:
        return self.c.not_(x)

    def and_(self, x: Affine, y: Affine) -> Affine:
        return self.c.and_(x, y)

    def or_(self, x: Affine, y: Affine) -> Affine:
        return self.c.or_(x, y)

    def xor(self, x: Affine, y: Affine) -> Affine:
        return self.c.xor(x, y)

    def or_all(self, x: list[Affine]) -> Affine:
        return self.c.not_(arith.product_tree(self.c, [self.c.not_(b) for b in x]))

    # ---- operations -------------------------------------------------------------------------
    def chosen(self, e: ast.Expr, op: str, width: int) -> arith.ArithChoice:
        choice = arith.choose(op, width)
        self.record(e, op, width, choice.variant, choice.reason)
        return choice

    def add(self, e: ast.Expr, a: list[Affine], b: list[Affine]) -> list[Affine]:
        self.chosen(e, "add", len(a))
        return arith.add(self.c, a, b)[0]

    def subtract(self, e: ast.Expr, a: list[Affine], b: list[Affine]) -> list[Affine]:
        self.chosen(e, "add", len(a))
        return arith.subtract(self.c, a, b)

    def multiply(self, e: ast.Expr, a: list[Affine], b: list[Affine]) -> list[Affine]:
        choice = self.chosen(e, "mul", len(a))
        return arith.multiply(self.c, a, b, int(choice.variant.split("/")[1]))

    def divide(self, e: ast.Binary, a: list[Affine], b: list[Affine]) -> dict[str, list[Affine]]:
        raise self.error(
            e.span,
            f"'{e.op}' on integers is not built for BFV bit slices",
            "hec ... --scheme fhew runs integer division (a restoring divider)",
        )

    def less_word(self, e: ast.Expr, a: list[Affine], b: list[Affine], signed: bool) -> Affine:
        self.chosen(e, "lt", len(a))
        return arith.less_than(self.c, a, b, signed)

    def equal(self, a: list[Affine], b: list[Affine]) -> Affine:
        return arith.equal(self.c, a, b)

    def select(self, s: Affine, a: list[Affine], b: list[Affine]) -> list[Affine]:
        return arith.select(self.c, s, a, b)

    def popcount(self, x: list[Affine]) -> list[Affine]:
        return arith.popcount(self.c, x)


class _Emitter:
    """Writes the arithmetic circuit as stat ops (module docstring)."""

    def __init__(self, lowering: _SliceLowering, name: str):
        self.lw = lowering
        self.c = lowering.c
        self.program = stat.ProgramOp(name)
        self.block = self.program.block
        self.values: dict[int, SSAValue] = {}
        self.affines: dict[object, SSAValue] = {}
        self.constants_ssa: dict[int, SSAValue] = {}
        # Revealed words (or 16-bit chunks) that are constants: not revealed, filled in by
        # assemble_outputs.
        self.constants: dict[str, int] = {}
        shapes = [s for _, s in lowering.inputs.values() if s]
        self.shape: Shape = shapes[0] if shapes else ()

    def emit(self, op: Operation, proven: tuple[int, int] | None = None) -> SSAValue:
        if proven is not None:
            set_proven_range(op, Interval(float(proven[0]), float(proven[1])), every_slot=True)
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: int) -> SSAValue:
        if value not in self.constants_ssa:
            v = self.emit(stat.ConstantOp(float(value)))
            if self.shape:
                v = self.emit(stat.BroadcastOp(v, self.shape, ()))
            self.constants_ssa[value] = v
        return self.constants_ssa[value]

    def affine(self, x: Affine) -> SSAValue:
        if x.key in self.affines:
            return self.affines[x.key]
        if len(x.terms) == 1 and x.terms[0][1] == 1 and x.const == 0:
            return self.values[x.terms[0][0]]
        # Positive terms first, so the chain starts with an add of values, not a negation.
        terms = sorted(x.terms, key=lambda nk: nk[1] < 0)
        acc: SSAValue | None = None
        for n, k in terms:
            v = self.values[n]
            if abs(k) != 1:
                v = self.emit(stat.MulOp(v, self.const(abs(k))))
            if acc is None:
                acc = v if k > 0 else self.emit(stat.NegOp(v))
            else:
                acc = self.emit(stat.AddOp(acc, v) if k > 0 else stat.SubOp(acc, v))
        assert acc is not None
        if x.const:
            acc = self.emit(stat.AddOp(acc, self.const(x.const)))
        owner = acc.owner
        assert isinstance(owner, Operation)
        set_proven_range(owner, Interval(float(x.lo), float(x.hi)), every_slot=True)
        self.affines[x.key] = acc
        return acc

    def bit(self, x: Affine) -> SSAValue:
        return self.const(x.const) if x.is_const() else self.affine(x)

    def revealed(self, name: str, word: list[Affine], t: IntType) -> dict[str, SSAValue]:
        """The integers a revealed word is revealed as (module docstring), each a weighted sum
        of its bits' values (whose partial sums stay within the word's range)."""
        signed = t.signed and 1 < len(word) <= CHUNK_BITS
        out = {}
        for k in range(0, len(word), CHUNK_BITS):
            part = word[k : k + CHUNK_BITS]
            name_k = name if len(word) <= CHUNK_BITS else chunk_name(name, k // CHUNK_BITS)
            if all(x.is_const() for x in part):  # no ciphertext: assemble_outputs fills it
                value = sum(x.const << i for i, x in enumerate(part))
                if signed and value >= 1 << (len(part) - 1):
                    value -= 1 << len(part)
                self.constants[name_k] = value
                continue
            acc: SSAValue | None = None
            for i, x in enumerate(part):
                if x.is_zero():
                    continue
                v = self.bit(x)
                if i:
                    v = self.emit(stat.MulOp(v, self.const(1 << i)))
                if acc is None:
                    acc = v if not (signed and i == len(part) - 1) else self.emit(stat.NegOp(v))
                elif signed and i == len(part) - 1:
                    acc = self.emit(stat.SubOp(acc, v))
                else:
                    acc = self.emit(stat.AddOp(acc, v))
            assert acc is not None
            if not stat.tensor_type(acc).is_secret:
                assert self.lw.span is not None
                raise self.lw.error(
                    self.lw.span,
                    f"'{name}' depends on no secret input: there is nothing to decrypt",
                    "reveal values computed from secret inputs",
                )
            top = len(part) - 1
            lo, hi = (-(1 << top), (1 << top) - 1) if signed else (0, (1 << len(part)) - 1)
            owner = acc.owner
            if isinstance(owner, Operation) and not isinstance(owner, stat.InputOp):
                set_proven_range(owner, Interval(float(lo), float(hi)), every_slot=True)
            out[name_k] = acc
        return out

    def run(self) -> ModuleOp:
        lw, c = self.lw, self.c
        for pname, bound in lw.checked.params.items():
            self.block.add_op(stat.ParamOp(pname, bound))
        for name, (_, shape) in lw.inputs.items():
            ty = stat.TensorType.get(shape, lw.secret[name])
            for i, bit in enumerate(c.inputs[name]):
                op = stat.InputOp(plane_name(name, i), ty, BIT_DOMAIN)
                op.result.name_hint = plane_name(name, i)
                v = self.emit(op)
                if self.shape and not shape:
                    v = self.emit(stat.BroadcastOp(v, self.shape, ()))
                self.values[bit.terms[0][0]] = v
        live = c.live()
        for n, node in enumerate(c.nodes):
            if n in live:
                assert node.lhs is not None and node.rhs is not None
                lhs, rhs = self.affine(node.lhs), self.affine(node.rhs)
                self.values[n] = self.emit(stat.MulOp(lhs, rhs), (node.lo, node.hi))
        for name, (t, _) in lw.outputs.items():
            for out, v in self.revealed(name, c.outputs[name], t).items():
                reveal = stat.RevealOp(out, v)
                reveal.result.name_hint = f"{out}_revealed"
                self.block.add_op(reveal)
        module = ModuleOp([self.program])
        module.verify()
        return module


def lower_bitslice(checked: CheckedProgram, name: str) -> tuple[ModuleOp, BitSlices]:
    """The stat program of the bit slices of `checked` and what the lowering decided."""
    lw = _SliceLowering(checked)
    with ast.recursion_room():
        lw.walk()
    emitter = _Emitter(lw, name)
    module = emitter.run()
    info = BitSlices(lw.inputs, lw.outputs, lw.choices, lw.c.depth(), lw.c.products(), lw.c)
    info.constants = emitter.constants
    return module, info


# ---- data ----------------------------------------------------------------------------------


def split_inputs(
    checked: CheckedProgram, arrays: Mapping[str, npt.ArrayLike]
) -> dict[str, npt.NDArray[np.int64]]:
    """The bit planes of every integer input array (two's complement for signed types); a
    value that is not a whole number within the input's type is refused, naming the input, the
    value and its index."""
    from dsl.reference import int_input

    out: dict[str, npt.NDArray[np.int64]] = {}
    for name, value in arrays.items():
        t = checked.bindings[name].ty.int_type if name in checked.bindings else None
        if t is None:
            out[name] = np.asarray(value)
            continue
        a = np.asarray(value)
        ints = int_input(name, a, a.shape, t)
        mask = (1 << t.width) - 1
        raw = np.array([int(v) & mask for v in ints.flat], dtype=np.uint64).reshape(a.shape)
        for i in range(t.width):
            out[plane_name(name, i)] = ((raw >> np.uint64(i)) & np.uint64(1)).astype(np.int64)
    return out


def join_inputs(
    checked: CheckedProgram, planes: Mapping[str, npt.ArrayLike]
) -> dict[str, npt.NDArray[np.int64]]:
    """The integer inputs whose planes `planes` holds (the inverse of `split_inputs`; signed
    types in two's complement); other inputs as they are."""
    out: dict[str, npt.NDArray[np.int64]] = {}
    for name, value in planes.items():
        base = plane_source(name)
        t = checked.bindings[base].ty.int_type if base in checked.bindings else None
        if t is None or base == name:
            out[name] = np.asarray(value)
            continue
        if base in out:
            continue
        bits = [np.asarray(planes[plane_name(base, i)]).astype(np.int64) for i in range(t.width)]
        acc = np.zeros_like(bits[0], dtype=np.uint64)
        for i, b in enumerate(bits):
            acc |= b.astype(np.uint64) << np.uint64(i)
        if t.signed and t.width < 64:
            signed = acc.astype(np.int64)
            out[base] = np.where(signed >= 1 << (t.width - 1), signed - (1 << t.width), signed)
        else:
            out[base] = acc.view(np.int64) if t.signed else acc.astype(np.int64)
    return out


def assemble_outputs(
    checked: CheckedProgram, revealed: Mapping[str, npt.ArrayLike]
) -> dict[str, npt.NDArray[Any]]:
    """Revealed integers as the program's outputs: chunks put together (a constant word or
    chunk, which the program does not reveal, filled in), each output in its type's numpy
    dtype (uint8 .. int64, bool)."""
    out: dict[str, npt.NDArray[Any]] = {}
    done: set[str] = set()
    constants = lower_bitslice(checked, "constants")[1].constants
    if constants:
        shape = np.asarray(next(iter(revealed.values()))).shape if revealed else ()
        revealed = {**{k: np.full(shape, v) for k, v in constants.items()}, **revealed}
    for name, binding in checked.bindings.items():
        t = binding.ty.int_type
        if t is None:
            continue
        dtype = (
            np.dtype(np.bool_)
            if t.width == 1
            else np.dtype(f"{'' if t.signed else 'u'}int{t.width}")
        )
        if name in revealed:
            value = np.asarray(revealed[name])
            out[name] = np.rint(value.astype(np.float64)).astype(np.int64).astype(dtype)
            done.add(name)
        elif chunk_name(name, 0) in revealed:
            acc: npt.NDArray[np.uint64] | None = None
            for k in range(0, t.width, CHUNK_BITS):
                part = np.asarray(revealed[chunk_name(name, k // CHUNK_BITS)])
                bits = np.rint(part.astype(np.float64)).astype(np.uint64) << np.uint64(k)
                acc = bits if acc is None else acc | bits
                done.add(chunk_name(name, k // CHUNK_BITS))
            assert acc is not None
            out[name] = acc.view(dtype) if t.width == 64 else acc.astype(dtype)
    out.update({k: np.asarray(v) for k, v in revealed.items() if k not in done and k not in out})
    return out


__all__ = [
    "BitSlices",
    "assemble_outputs",
    "is_integer_program",
    "join_inputs",
    "lower_bitslice",
    "plane_name",
    "plane_source",
    "split_inputs",
]
