"""Lowers a checked integer program to one Boolean circuit (compiler/circuits/netlist.py) that
computes one element: every integer array of the program has one shape and the circuit runs
once per element (the IR stays independent of the data size, DESIGN.md §2).

Inputs become input words (`signed` for iN types), revealed values output words. Each
operation takes the generator the chooser (compiler/circuits/chooser.py) finds cheapest for the
target at its width, built once and copied into the program's circuit through its builders (so
constants fold and equal gates are shared): `+` the chosen adder; `a - b` as ~(~a + b) and `-a`
as 0 - a (NOT is free, so both cost one adder); `*` the chosen truncated multiplier; comparisons
the chosen comparator (a > b as b < a, a <= b as ~(b < a)); `/` and `%` the chosen unsigned
divider (a zero divisor gives the all-ones quotient and the dividend as remainder);
min, max and select a comparison and a MUX per bit; bitwise operators one gate per bit; shifts,
rotations and conversions are wires; popcount Wallace compression. Every choice is recorded
with its source position and the chooser's reason, for the report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cache
from typing import Generic, TypeVar

from compiler.circuits import generators as gen
from compiler.circuits.chooser import Choice, choose
from compiler.circuits.netlist import FALSE, Circuit, Lit, Word, negate, node_of
from compiler.errors import UserError
from compiler.types import Shape, format_shape
from dsl import ast
from dsl.checker import BOOL, CheckedProgram, IntType, ValueType

Bit = TypeVar("Bit")


@dataclass(frozen=True)
class OpChoice:
    """One operation of the program and the generator chosen for it."""

    op: str
    width: int
    line: int
    column: int
    generator: str
    reason: str


@dataclass
class CircuitProgram:
    """The per-element circuit of an integer program."""

    name: str
    circuit: Circuit
    target: str
    # Input and output words in circuit order: their element types and array shapes.
    inputs: dict[str, tuple[IntType, Shape]] = field(default_factory=dict)
    outputs: dict[str, tuple[IntType, Shape]] = field(default_factory=dict)
    choices: list[OpChoice] = field(default_factory=list)


@cache
def _chosen(op: str, width: int, target: str) -> Choice:
    return choose(op, width, target)


def _ty(e: ast.Expr) -> ValueType:
    assert e.ty is not None, "lowering needs a checked program"
    return e.ty


class IntegerLowering(ABC, Generic[Bit]):
    """The walk over a checked integer program shared by the Boolean circuit (FHEW, below) and
    the arithmetic bit slices (BFV, dsl/bitslice.py): what differs is how a word is made and
    how each operation is built on words, the methods a target defines."""

    target = ""

    def __init__(self, checked: CheckedProgram):
        self.checked = checked
        self.words: dict[str, list[Bit]] = {}
        self.choices: list[OpChoice] = []
        self.inputs: dict[str, tuple[IntType, Shape]] = {}
        self.outputs: dict[str, tuple[IntType, Shape]] = {}
        self.span: ast.Span | None = None  # the statement being lowered, where it matters

    def error(self, span: ast.Span, message: str, hint: str = "") -> UserError:
        return UserError(message, self.checked.source.location(span), hint)

    # ---- what a target defines ------------------------------------------------------------
    @abstractmethod
    def input(self, name: str, t: IntType, shape: Shape, secret: bool) -> list[Bit]: ...

    @abstractmethod
    def output(self, name: str, word: list[Bit], t: IntType, shape: Shape) -> None: ...

    @abstractmethod
    def const_word(self, value: int, width: int) -> list[Bit]: ...

    @abstractmethod
    def zero(self) -> Bit: ...

    @abstractmethod
    def not_(self, x: Bit) -> Bit: ...

    @abstractmethod
    def and_(self, x: Bit, y: Bit) -> Bit: ...

    @abstractmethod
    def or_(self, x: Bit, y: Bit) -> Bit: ...

    @abstractmethod
    def xor(self, x: Bit, y: Bit) -> Bit: ...

    @abstractmethod
    def or_all(self, x: list[Bit]) -> Bit: ...

    @abstractmethod
    def add(self, e: ast.Expr, a: list[Bit], b: list[Bit]) -> list[Bit]: ...

    @abstractmethod
    def subtract(self, e: ast.Expr, a: list[Bit], b: list[Bit]) -> list[Bit]: ...

    @abstractmethod
    def multiply(self, e: ast.Expr, a: list[Bit], b: list[Bit]) -> list[Bit]: ...

    @abstractmethod
    def divide(self, e: ast.Binary, a: list[Bit], b: list[Bit]) -> dict[str, list[Bit]]: ...

    @abstractmethod
    def less_word(self, e: ast.Expr, a: list[Bit], b: list[Bit], signed: bool) -> Bit: ...

    @abstractmethod
    def equal(self, a: list[Bit], b: list[Bit]) -> Bit: ...

    @abstractmethod
    def select(self, s: Bit, a: list[Bit], b: list[Bit]) -> list[Bit]: ...

    @abstractmethod
    def popcount(self, x: list[Bit]) -> list[Bit]: ...

    def record(self, e: ast.Expr, op: str, width: int, generator: str, reason: str) -> None:
        self.choices.append(OpChoice(op, width, e.span.line, e.span.column, generator, reason))

    # ---- the program ----------------------------------------------------------------------
    def walk(self) -> None:
        element_shape: tuple[Shape, str] | None = None
        for stmt in self.checked.program.statements:
            match stmt:
                case ast.InputDecl():
                    ty = self.checked.bindings[stmt.name].ty
                    if ty.int_type is None:
                        raise self.error(
                            stmt.span,
                            f"input '{stmt.name}' is real-valued; the {self.target} target runs "
                            "integer and Boolean programs",
                            f"declare it with an integer type: `input {stmt.name}: "
                            f"{'secret' if stmt.secret else 'public'}[...] u8` (or i16, bool, ...)",
                        )
                    if ty.shape:
                        if element_shape is not None and element_shape[0] != ty.shape:
                            raise self.error(
                                stmt.span,
                                f"input '{stmt.name}' has shape {format_shape(ty.shape)}, but "
                                f"'{element_shape[1]}' has {format_shape(element_shape[0])}: "
                                f"the {self.target} target runs one circuit per element, over "
                                "arrays of one shape",
                                "give every array input the same shape (scalars are used for "
                                "every element)",
                            )
                        element_shape = (ty.shape, stmt.name)
                    t = ty.int_type
                    self.words[stmt.name] = self.input(stmt.name, t, ty.shape, stmt.secret)
                    self.inputs[stmt.name] = (t, ty.shape)
                case ast.Let():
                    self.words[stmt.name] = self.value(stmt.expr)
                case ast.Reveal():
                    if stmt.expr is not None:
                        self.words[stmt.name] = self.value(stmt.expr)
                    ty = self.checked.bindings[stmt.name].ty
                    if ty.int_type is None:
                        raise self.error(
                            stmt.span,
                            f"'{stmt.name}' is a real value; the {self.target} target reveals "
                            "integer and Boolean values",
                            "compute it in the client block from revealed integers: real(x)",
                        )
                    self.span = stmt.span
                    self.output(stmt.name, self.words[stmt.name], ty.int_type, ty.shape)
                    self.outputs[stmt.name] = (ty.int_type, ty.shape)
                case ast.ParamDecl() | ast.ClientBlock():
                    pass
        if not self.outputs:
            raise UserError(
                f"{self.checked.source.filename}: the program reveals nothing",
                hint="reveal a value: `reveal c = a + b`",
            )

    # ---- expressions ----------------------------------------------------------------------
    def value(self, e: ast.Expr) -> list[Bit]:
        t = _ty(e).int_type
        assert t is not None, "an integer expression"
        return self.word(e, t)

    def word(self, e: ast.Expr, t: IntType) -> list[Bit]:
        """`e` as a word of `t`'s width: a constant (already checked to fit) or an integer
        expression of type `t`."""
        ty = _ty(e)
        if ty.int_type is None:
            assert ty.const is not None, "the checker admits only constants here"
            return self.const_word(int(ty.const) % (1 << t.width), t.width)
        match e:
            case ast.Name():
                return list(self.words[e.name])
            case ast.Binary():
                return self.binary(e)
            case ast.Neg():
                x = self.value(e.operand)
                return self.subtract(e, self.const_word(0, len(x)), x)
            case ast.BitNot():
                return [self.not_(x) for x in self.value(e.operand)]
            case ast.Pow():  # XOR with a constant on integers
                x = self.value(e.base)
                k = int(e.exponent) % (1 << t.width)
                return [self.not_(p) if (k >> i) & 1 else p for i, p in enumerate(x)]
            case ast.Call():
                return self.call(e, t)
            case _:
                raise AssertionError(f"cannot lower {e!r} to a circuit")

    def operands(self, lhs: ast.Expr, rhs: ast.Expr) -> tuple[list[Bit], list[Bit], IntType]:
        t = _ty(lhs).int_type or _ty(rhs).int_type
        assert t is not None
        return self.word(lhs, t), self.word(rhs, t), t

    def less(self, e: ast.Expr, a: list[Bit], b: list[Bit], t: IntType) -> Bit:
        if t.width == 1:  # bool: a < b is ~a & b
            return self.and_(self.not_(a[0]), b[0])
        return self.less_word(e, a, b, t.signed)

    def binary(self, e: ast.Binary) -> list[Bit]:
        if e.op in ("<<", ">>"):
            x = self.value(e.lhs)
            k = int(_ty(e.rhs).const or 0)
            t = _ty(e.lhs).int_type
            assert t is not None
            kind = "shl" if e.op == "<<" else "ashr" if t.signed else "lshr"
            return gen.shift(x, kind, k, self.zero()) if k else x
        a, b, t = self.operands(e.lhs, e.rhs)
        match e.op:
            case "+":
                return self.add(e, a, b)
            case "-":
                return self.subtract(e, a, b)
            case "*":
                return self.multiply(e, a, b)
            case "/" | "%":
                out = self.divide(e, a, b)
                return out["q"] if e.op == "/" else out["r"]
            case "&":
                return [self.and_(x, y) for x, y in zip(a, b, strict=True)]
            case "|":
                return [self.or_(x, y) for x, y in zip(a, b, strict=True)]
            case "^":
                return [self.xor(x, y) for x, y in zip(a, b, strict=True)]
            case "<":
                return [self.less(e, a, b, t)]
            case ">":
                return [self.less(e, b, a, t)]
            case "<=":
                return [self.not_(self.less(e, b, a, t))]
            case ">=":
                return [self.not_(self.less(e, a, b, t))]
            case "==" | "!=":
                eq = self.equal(a, b) if len(a) > 1 else self.not_(self.xor(a[0], b[0]))
                return [eq if e.op == "==" else self.not_(eq)]
            case op:
                raise AssertionError(f"operator {op} on integers")

    def call(self, e: ast.Call, t: IntType) -> list[Bit]:
        match e.func:
            case "popcount":
                x = self.value(e.args[0])
                return x if len(x) == 1 else self.popcount(x)
            case "rotl" | "rotr":
                x = self.value(e.args[0])
                k = int(_ty(e.args[1]).const or 0)
                return gen.shift(x, e.func, k, self.zero()) if k else x
            case "min" | "max":
                a, b, _ = self.operands(e.args[0], e.args[1])
                lt = self.less(e, a, b, t)
                return self.select(lt, a, b) if e.func == "min" else self.select(lt, b, a)
            case "select":
                s = self.value(e.args[0])[0]
                a, b, _ = self.operands(e.args[1], e.args[2])
                return self.select(s, a, b)
            case _:  # a conversion to the integer type `t`
                arg = e.args[0]
                src = _ty(arg).int_type
                if src is None:
                    return self.word(arg, t)
                x = self.value(arg)
                if t == BOOL:
                    return [self.or_all(x)]  # bool(x) is x != 0
                fill = x[-1] if src.signed else self.zero()
                return (x + [fill] * t.width)[: t.width]


class _CircuitLowering(IntegerLowering[Lit]):
    """The Boolean circuit for FHEW (or the GF(2) cost order of BFV): each operation the
    chooser's generator, copied in."""

    def __init__(self, checked: CheckedProgram, target: str):
        super().__init__(checked)
        self.target = target
        self.c = Circuit()

    def run(self, name: str) -> CircuitProgram:
        self.walk()
        return CircuitProgram(name, self.c, self.target, self.inputs, self.outputs, self.choices)

    def input(self, name: str, t: IntType, shape: Shape, secret: bool) -> Word:
        return self.c.input(name, t.width, signed=t.signed)

    def output(self, name: str, word: Word, t: IntType, shape: Shape) -> None:
        self.c.output(name, word)

    def const_word(self, value: int, width: int) -> Word:
        return self.c.const_word(value, width)

    def zero(self) -> Lit:
        return FALSE

    def not_(self, x: Lit) -> Lit:
        return negate(x)

    def and_(self, x: Lit, y: Lit) -> Lit:
        return self.c.and_(x, y)

    def or_(self, x: Lit, y: Lit) -> Lit:
        return self.c.or_(x, y)

    def xor(self, x: Lit, y: Lit) -> Lit:
        return self.c.xor(x, y)

    def or_all(self, x: Word) -> Lit:
        return self.c.or_all(x)

    def generated(self, e: ast.Expr, op: str, a: Word, b: Word) -> dict[str, Word]:
        """The chooser's circuit for `op` at the operands' width, copied in on `a` and `b`."""
        choice = _chosen(op, len(a), self.target)
        self.record(e, op, len(a), choice.name, choice.reason)
        src = choice.circuit
        mapping = {node_of(x): y for x, y in zip(src.inputs["a"], a, strict=True)}
        mapping.update({node_of(x): y for x, y in zip(src.inputs["b"], b, strict=True)})
        out = src.copy_into(self.c, mapping)
        return {
            name: [out[node_of(bit)] ^ (bit & 1) for bit in bits]
            for name, bits in src.outputs.items()
        }

    def add(self, e: ast.Expr, a: Word, b: Word) -> Word:
        return self.generated(e, "add", a, b)["c"]

    def subtract(self, e: ast.Expr, a: Word, b: Word) -> Word:
        # a - b = ~(~a + b) modulo 2^n: NOT is free, so subtraction costs one adder.
        return [negate(x) for x in self.add(e, [negate(x) for x in a], b)]

    def multiply(self, e: ast.Expr, a: Word, b: Word) -> Word:
        return self.generated(e, "mul", a, b)["c"]

    def divide(self, e: ast.Binary, a: Word, b: Word) -> dict[str, Word]:
        return self.generated(e, "div", a, b)

    def less_word(self, e: ast.Expr, a: Word, b: Word, signed: bool) -> Lit:
        return self.generated(e, "lt_signed" if signed else "lt", a, b)["c"][0]

    def equal(self, a: Word, b: Word) -> Lit:
        return gen.equal(self.c, a, b)

    def select(self, s: Lit, a: Word, b: Word) -> Word:
        return gen.select(self.c, s, a, b)

    def popcount(self, x: Word) -> Word:
        count = gen.popcount(self.c, x)
        return (count + [FALSE] * len(x))[: len(x)]


def lower_circuit(checked: CheckedProgram, name: str, target: str = "fhew") -> CircuitProgram:
    """The per-element circuit of `checked` (module docstring) for `target` ("fhew" or "bfv":
    the chooser's cost order)."""
    with ast.recursion_room():
        return _CircuitLowering(checked, target).run(name)
