"""The `he` dialect: the scheme-agnostic HE layer between `stat` and the scheme dialects.

A value is a whole array of ciphertexts (as in `ckks`, DESIGN.md §4) whose type records what
every RLWE scheme shares and nothing a particular scheme adds:

- `!he.tensor<[N, M], packed, ct<level, degree>>`: the logical shape (symbolic or literal
  dims), the layout, and per ciphertext the level (an index into the scheme's modulus chain;
  0 at lowering) and the degree (1 fresh; a tensor product adds degrees; relinearize returns
  to 1). No scale: an approximate scheme adds it when it is lowered (`ckks`), an exact one
  encodes integers modulo its plaintext modulus (`bfv`).
- `!he.ptensor<[M], packed, pt<level>>`: an encoded array; `!he.public`: a public scalar.

Layouts (`packed`: the last axis in the slots, one ciphertext per row and block of slots;
`replicated`: one value in every slot; `coeff`: radix-packed integer counts in the
coefficients, added only) are the ones of the ckks dialect, which lists them in full.

The op RULES (the result type of each op given its operands: shapes, layouts, levels,
degrees) are written once here, as abstract classes; the concrete ops of this dialect and of
the `bfv` dialect (compiler/dialects/bfv.py) are those rules under their dialect's name. The
`bfv` dialect uses these types too (as MLIR scheme dialects share a type dialect).

Ops: param, source, size, constant, public_arith (public scalars); encode, encrypt (data
owner), decrypt (coordinator); add, sub, negate, mul (tensor product), mul_const (a public
scalar; `integer` when it is an integer, which every scheme multiplies exactly),
add_const, relinearize, rotate, sum_slots, reduce, dot (fused sum of products over an axis),
broadcast, transpose, gather (picks and negates ciphertexts of a replicated array). Level
changes are scheme ops (`ckks.rescale`, `bfv.mod_switch`): what
a level is depends on the scheme record (passes/schemes.py).
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from compiler.dialects.region_op import NamedRegionOp
from compiler.dialects.stat import IntervalAttr, SetAttr, domain_attr
from compiler.owner_expr import parse
from compiler.types import Dim, Domain, format_shape

PACKED = "packed"
REPLICATED = "replicated"
COEFF = "coeff"
LAYOUTS = (PACKED, REPLICATED, COEFF)
SLOT_LAYOUTS = (PACKED, COEFF)  # the last axis lives in the slots (or coefficients)

# Axis roles of the grid layout (docs/layout.md).
ROW, COL, UNROLLED = "row", "col", "unrolled"
ROLES = (ROW, COL, UNROLLED)


@dataclass(frozen=True)
class Grid:
    """The grid layout `grid<R, [role, ...]>` (docs/layout.md): a ciphertext's slots read as R
    rows x C columns, C = slots / R (so the columns follow the ring the parameter selection
    picks), slot r * C + c. Each axis of the array has one role: `row` (index i in grid row
    i mod R of ciphertext block i div R), `col` (index j in column j mod C of block j div C) or
    `unrolled` (one ciphertext per index); a direction no axis uses holds replicas. At most one
    row and one column axis, and at least one of them (with neither, the array is
    `replicated`). The layout text is the canonical spelling (`Grid.text`), so a layout stays
    one string through every type and pass."""

    rows: int
    roles: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"grid<{self.rows}, [{', '.join(self.roles)}]>"

    @property
    def row_axis(self) -> int | None:
        return self.roles.index(ROW) if ROW in self.roles else None

    @property
    def col_axis(self) -> int | None:
        return self.roles.index(COL) if COL in self.roles else None

    def columns(self, slots: int) -> int:
        return slots // self.rows

    def check(self, rank: int) -> None:
        if len(self.roles) != rank:
            raise VerifyException(f"{self.text}: {len(self.roles)} roles for {rank} axes")
        if any(r not in ROLES for r in self.roles):
            raise VerifyException(f"{self.text}: roles are {', '.join(ROLES)}")
        if self.roles.count(ROW) > 1 or self.roles.count(COL) > 1:
            raise VerifyException(f"{self.text}: at most one row and one column axis")
        if ROW not in self.roles and COL not in self.roles:
            raise VerifyException(f"{self.text}: no row or column axis (that is replicated)")
        if self.rows < 1 or self.rows & (self.rows - 1):
            raise VerifyException(f"{self.text}: the row count must be a power of two")

    def without(self, axis: int) -> str:
        """The layout after summing `axis` into every grid row (its direction becomes
        replicas): the remaining roles, or `replicated` when no row or column axis is left."""
        roles = self.roles[:axis] + self.roles[axis + 1 :]
        return layout_text(self.rows, roles)


def layout_text(rows: int, roles: Sequence[str]) -> str:
    """The layout of an array with these axis roles under `rows` grid rows (`replicated` when
    every axis is unrolled)."""
    if ROW not in roles and COL not in roles:
        return REPLICATED
    return Grid(rows, tuple(roles)).text


_GRID = re.compile(r"grid<(\d+), \[([a-z, ]*)\]>")


@dataclass(frozen=True)
class Diagonal:
    """The diagonal layout `diagonal<P, Q, b>` of a matrix [A, K] for the Halevi-Shoup
    matrix-vector product (docs/layout.md, "Diagonal layout"). P and Q are A and K rounded up
    to powers of two (the matrix zero-padded to P x Q); L = max(P, Q) is the period and
    D = min(P, Q) the number of ciphertexts (generalized diagonals); b (a power of two dividing
    D) the baby step. Ciphertext i, in giant group g = i div b, holds at slot s, with
    j = (s - g b) mod L, the entry M[j mod P, (j + i) mod Q] (0 in the padding): diagonal i
    pre-rotated by -g b (the data owner's side of baby-step giant-step), repeated every L
    slots. Needs L <= slots."""

    rows: int  # P
    cols: int  # Q
    baby: int  # b

    @property
    def text(self) -> str:
        return f"diagonal<{self.rows}, {self.cols}, {self.baby}>"

    @property
    def count(self) -> int:
        """D: the ciphertexts (generalized diagonals)."""
        return min(self.rows, self.cols)

    @property
    def period(self) -> int:
        """L: the slots one copy of the diagonals takes."""
        return max(self.rows, self.cols)

    @property
    def giants(self) -> int:
        return self.count // self.baby

    @property
    def fold(self) -> tuple[int, ...]:
        """The rotate-and-add strides after the products when the matrix is wide (P < Q): the
        partial sums of each row lie P slots apart."""
        out: list[int] = []
        stride = self.rows
        while stride < self.cols:
            out.append(stride)
            stride *= 2
        return tuple(out)

    def rotations(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(baby-step offsets 1..b-1 of the vector, hoisted; giant-step and fold offsets)."""
        babies = tuple(range(1, self.baby))
        giants = tuple(g * self.baby for g in range(1, self.giants)) + self.fold
        return babies, giants

    def key_switches(self) -> int:
        """Rotations plus one relinearization per giant group."""
        babies, giants = self.rotations()
        return len(babies) + len(giants) + self.giants

    def place(self, row: int, col: int) -> tuple[int, int]:
        """(ciphertext, first slot) of entry (row, col): the slot's copies follow every L
        slots."""
        p, q, b = self.rows, self.cols, self.baby
        for j in range(row, self.period, p):
            i = (col - j) % q
            if i < self.count:
                return i, (j + (i // b) * b) % self.period
        raise AssertionError("every entry has one place")

    def check(self, rank: int) -> None:
        def pow2(x: int) -> bool:
            return x >= 1 and not x & (x - 1)

        if rank != 2:
            raise VerifyException(f"{self.text}: the diagonal layout is for matrices (rank 2)")
        if not (pow2(self.rows) and pow2(self.cols) and pow2(self.baby)):
            raise VerifyException(f"{self.text}: P, Q and b must be powers of two")
        if self.count % self.baby:
            raise VerifyException(f"{self.text}: the baby step must divide min(P, Q)")


def best_baby(count: int) -> int:
    """The baby step b (a power of two dividing `count`) with the fewest key switches,
    (b - 1) + (count/b - 1) rotations and count/b relinearizations; the larger b on a tie
    (baby-step rotations share one hoisted decomposition)."""
    options = [1 << k for k in range(count.bit_length()) if count % (1 << k) == 0]
    return min(options, key=lambda b: ((b - 1) + 2 * (count // b) - 1, -b))


def pow2_at_least(n: int) -> int:
    """The least power of two >= n (1 for n <= 1): a diagonal's P and Q, a cyclic period."""
    return 1 << max(n - 1, 0).bit_length()


def diagonal_layout(rows: int, cols: int) -> Diagonal:
    """The diagonal layout of an A x K matrix (A, K its compile-time sizes)."""
    p, q = pow2_at_least(rows), pow2_at_least(cols)
    return Diagonal(p, q, best_baby(min(p, q)))


_DIAGONAL = re.compile(r"diagonal<(\d+), (\d+), (\d+)>")
_CYCLIC = re.compile(r"cyclic<(\d+)>")


def diagonal_of(layout: str) -> Diagonal | None:
    m = _DIAGONAL.fullmatch(layout)
    return None if m is None else Diagonal(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def cyclic_of(layout: str) -> int | None:
    """The period Q of `cyclic<Q>`: a vector [K] (K <= Q, Q a power of two) in one ciphertext,
    slot s holding element s mod Q (0 where s mod Q >= K): the operand and result layout of the
    diagonal matrix-vector product. Needs Q <= slots."""
    m = _CYCLIC.fullmatch(layout)
    return None if m is None else int(m.group(1))


def cyclic_text(period: int) -> str:
    return f"cyclic<{period}>"


def grid_of(layout: str) -> Grid | None:
    """The grid of a layout name, None for the corner layouts (packed, replicated, coeff)."""
    m = _GRID.fullmatch(layout)
    if m is None:
        return None
    roles = tuple(r.strip() for r in m.group(2).split(",")) if m.group(2) else ()
    return Grid(int(m.group(1)), roles)


def parse_layout(parser: AttrParser, corners: Sequence[str]) -> str:
    """A layout keyword of `corners`, `grid<R, [role, ...]>`, `diagonal<P, Q, b>` or
    `cyclic<Q>`."""

    def integer() -> int:
        return parser.parse_integer(allow_negative=False, allow_boolean=False)

    if parser.parse_optional_keyword("diagonal") is not None:
        with parser.in_angle_brackets():
            p = integer()
            parser.parse_punctuation(",")
            q = integer()
            parser.parse_punctuation(",")
            b = integer()
        return Diagonal(p, q, b).text
    if parser.parse_optional_keyword("cyclic") is not None:
        with parser.in_angle_brackets():
            return cyclic_text(integer())
    if parser.parse_optional_keyword("grid") is None:
        return parser.parse_keyword_in(corners)
    with parser.in_angle_brackets():
        rows = parser.parse_integer(allow_negative=False, allow_boolean=False)
        parser.parse_punctuation(",")
        roles = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_keyword_in(ROLES)
        )
    return Grid(rows, tuple(roles)).text


def parse_dims(parser: AttrParser) -> list[IntAttr | StringAttr]:
    def one() -> IntAttr | StringAttr:
        value = parser.parse_optional_integer(allow_negative=False, allow_boolean=False)
        return IntAttr(value) if value is not None else StringAttr(parser.parse_identifier())

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, one)


def shape_attr(dims: Sequence[Dim]) -> ArrayAttr[IntAttr | StringAttr]:
    return ArrayAttr([IntAttr(d) if isinstance(d, int) else StringAttr(d) for d in dims])


def verify_shape(dims: tuple[Dim, ...], layout: str) -> None:
    if layout != REPLICATED and not dims:
        raise VerifyException(f"a {layout} array needs at least one axis")
    grid = grid_of(layout)
    if grid is not None:
        grid.check(len(dims))
    diagonal = diagonal_of(layout)
    if diagonal is not None:
        diagonal.check(len(dims))
    period = cyclic_of(layout)
    if period is not None and (len(dims) != 1 or period < 1 or period & (period - 1)):
        raise VerifyException(f"{layout}: a cyclic array is a vector, Q a power of two")
    for d in dims:
        if isinstance(d, int) and d < 1:
            raise VerifyException(f"array dimensions must be >= 1, got {d}")


class CiphertextType(ParametrizedAttribute, TypeAttribute, ABC):
    """What every scheme's ciphertext-array type has (the op rules below read only this): a
    logical shape, a layout, a level and a degree. `with_` keeps whatever the scheme adds
    (the ckks scale)."""

    @property
    @abstractmethod
    def dims(self) -> tuple[Dim, ...]: ...

    @property
    @abstractmethod
    def layout_name(self) -> str: ...

    @property
    @abstractmethod
    def level_value(self) -> int: ...

    @property
    @abstractmethod
    def degree_value(self) -> int: ...

    @abstractmethod
    def with_(
        self,
        *,
        dims: Sequence[Dim] | None = None,
        layout: str | None = None,
        level: int | None = None,
        degree: int | None = None,
    ) -> Self: ...


class PlaintextType(ParametrizedAttribute, TypeAttribute, ABC):
    """What every scheme's encoded-array type has: a shape, a layout and a level."""

    @property
    @abstractmethod
    def dims(self) -> tuple[Dim, ...]: ...

    @property
    @abstractmethod
    def layout_name(self) -> str: ...

    @property
    @abstractmethod
    def level_value(self) -> int: ...


@irdl_attr_definition
class CtType(CiphertextType):
    """`!he.tensor<[N, M], packed, ct<level, degree>>`: a ciphertext array."""

    name = "he.tensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr
    degree: IntAttr

    @staticmethod
    def get(dims: Sequence[Dim], layout: str, level: int = 0, degree: int = 1) -> CtType:
        return CtType(shape_attr(dims), StringAttr(layout), IntAttr(level), IntAttr(degree))

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def layout_name(self) -> str:
        return self.layout.data

    @property
    def level_value(self) -> int:
        return self.level.data

    @property
    def degree_value(self) -> int:
        return self.degree.data

    def with_(
        self,
        *,
        dims: Sequence[Dim] | None = None,
        layout: str | None = None,
        level: int | None = None,
        degree: int | None = None,
    ) -> CtType:
        return CtType.get(
            self.dims if dims is None else dims,
            self.layout_name if layout is None else layout,
            self.level_value if level is None else level,
            self.degree_value if degree is None else degree,
        )

    def verify(self) -> None:
        verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")
        if self.degree_value < 1:
            raise VerifyException(f"degree must be >= 1, got {self.degree_value}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(
            f"<[{dims}], {self.layout_name}, ct<{self.level_value}, {self.degree_value}>>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = parse_dims(parser)
            parser.parse_punctuation(",")
            layout = parse_layout(parser, LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("ct")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
                parser.parse_punctuation(",")
                degree = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [ArrayAttr(dims), StringAttr(layout), IntAttr(level), IntAttr(degree)]


@irdl_attr_definition
class PtType(PlaintextType):
    """`!he.ptensor<[M], packed, pt<level>>`: an encoded array."""

    name = "he.ptensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr

    @staticmethod
    def get(dims: Sequence[Dim], layout: str, level: int = 0) -> PtType:
        return PtType(shape_attr(dims), StringAttr(layout), IntAttr(level))

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def layout_name(self) -> str:
        return self.layout.data

    @property
    def level_value(self) -> int:
        return self.level.data

    def verify(self) -> None:
        verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(f"<[{dims}], {self.layout_name}, pt<{self.level_value}>>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = parse_dims(parser)
            parser.parse_punctuation(",")
            layout = parse_layout(parser, LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("pt")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [ArrayAttr(dims), StringAttr(layout), IntAttr(level)]


@irdl_attr_definition
class PublicType(ParametrizedAttribute, TypeAttribute):
    """`!he.public`: a public real scalar, known to every party (the scalar type of every
    scheme dialect too: it carries nothing a scheme changes)."""

    name = "he.public"


def ct_type(value: SSAValue) -> CtType:
    ty = value.type
    if not isinstance(ty, CtType):
        raise VerifyException(f"expected a !he.tensor, got {ty}")
    return ty


def pt_type(value: SSAValue) -> PtType:
    ty = value.type
    if not isinstance(ty, PtType):
        raise VerifyException(f"expected a !he.ptensor, got {ty}")
    return ty


def any_ct(value: SSAValue) -> CiphertextType:
    """The ciphertext type of `value`, of whichever scheme (what the op rules read)."""
    ty = value.type
    if not isinstance(ty, CiphertextType):
        raise VerifyException(f"expected a ciphertext array, got {ty}")
    return ty


def any_pt(value: SSAValue) -> PlaintextType:
    ty = value.type
    if not isinstance(ty, PlaintextType):
        raise VerifyException(f"expected an encoded array, got {ty}")
    return ty


def check_same_array(
    what: str, a: CiphertextType | PlaintextType, b: CiphertextType | PlaintextType
) -> None:
    if a.dims != b.dims or a.layout_name != b.layout_name:
        raise VerifyException(
            f"{what}: operands are {format_shape(a.dims)} {a.layout_name} and "
            f"{format_shape(b.dims)} {b.layout_name}; broadcast them to one shape and layout"
        )
    if a.level_value != b.level_value:
        raise VerifyException(
            f"{what}: operands are at levels {a.level_value} and {b.level_value}; "
            "bring them to one level first"
        )


def _check_not_coeff(what: str, *types: CiphertextType | PlaintextType) -> None:
    if any(t.layout_name == COEFF for t in types):
        raise VerifyException(f"{what}: coeff arrays only add (counts in the coefficients)")


def _check_array_axis(src: CiphertextType, axis: int, what: str) -> None:
    if src.layout_name == COEFF and axis != 0:
        raise VerifyException(f"{what}: a coeff array is only summed over its rows (axis 0)")
    if not 0 <= axis < len(src.dims):
        raise VerifyException(f"{what}: axis {axis} out of range for {format_shape(src.dims)}")
    grid = grid_of(src.layout_name)
    if grid is not None:
        if grid.roles[axis] != UNROLLED:
            raise VerifyException(
                f"{what}: axis {axis} is the {grid.roles[axis]} axis of {grid.text}; use sum_slots"
            )
    elif src.layout_name != REPLICATED and axis == len(src.dims) - 1:
        raise VerifyException(f"{what}: axis {axis} is the packed axis; use sum_slots")


def _int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def ints(value: Attribute) -> tuple[int, ...]:
    assert isinstance(value, DenseArrayBase)
    return tuple(int(v) for v in value.get_values())


def print_fields(printer: Printer, fields: Sequence[tuple[str, str]]) -> None:
    """`<name = value, ...>`: the syntax of the scheme dialects' parameter attributes."""
    printer.print_string("<" + ", ".join(f"{k} = {v}" for k, v in fields) + ">")


def parse_fields(parser: AttrParser, names: Sequence[str]) -> dict[str, object]:
    """`<name = value, ...>` with the names in order; a value is a number, a bool or a
    bracketed list of integers."""
    out: dict[str, object] = {}
    with parser.in_angle_brackets():
        for i, name in enumerate(names):
            if i:
                parser.parse_punctuation(",")
            parser.parse_keyword(name)
            parser.parse_punctuation("=")
            if parser.parse_optional_punctuation("[") is not None:
                items: list[int] = []
                if parser.parse_optional_punctuation("]") is None:
                    while True:
                        items.append(parser.parse_integer(allow_boolean=False))
                        if parser.parse_optional_punctuation(",") is None:
                            break
                    parser.parse_punctuation("]")
                out[name] = items
            elif parser.parse_optional_keyword("true") is not None:
                out[name] = True
            elif parser.parse_optional_keyword("false") is not None:
                out[name] = False
            else:
                out[name] = parser.parse_number()
    return out


def ints_attr(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


class IntFields(ParametrizedAttribute):
    """The `<name = value, ...>` form of a parameter attribute whose parameters, in their
    declared order, are integers (IntAttr), lists of integers (ArrayAttr of IntAttr) or flags
    (the names in FLAGS, IntAttr 0/1 printed false/true): #ckks.parameters, #bfv.parameters."""

    FLAGS: ClassVar[frozenset[str]] = frozenset({"insecure"})

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in cls.get_irdl_definition().parameters)

    def print_parameters(self, printer: Printer) -> None:
        items: list[tuple[str, str]] = []
        for name, value in zip(self.field_names(), self.parameters, strict=True):
            if isinstance(value, ArrayAttr):
                text = "[" + ", ".join(str(q.data) for q in value.data) + "]"  # pyright: ignore
            else:
                assert isinstance(value, IntAttr)
                flag = "true" if value.data else "false"
                text = flag if name in self.FLAGS else str(value.data)
            items.append((name, text))
        print_fields(printer, items)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        names = cls.field_names()
        fields = parse_fields(parser, names)
        out: list[Attribute] = []
        for name in names:
            v = fields[name]
            if isinstance(v, list):
                out.append(ints_attr(v))  # pyright: ignore[reportUnknownArgumentType]
            elif name in cls.FLAGS:
                out.append(IntAttr(1 if v else 0))
            else:
                out.append(IntAttr(int(v)))  # pyright: ignore[reportArgumentType]
        return out


# --------------------------------------------------------------------------------------------
# Op rules (abstract; each dialect names them)
# --------------------------------------------------------------------------------------------


class HeOp(IRDLOperation, ABC):
    """An op whose result type follows from its operands and properties (`infer`); the verifier
    checks the declared result type against that rule, and that every ciphertext, encoded and
    scalar value is of its own dialect's types (`TYPES`: a ckks op takes ckks types)."""

    TYPES: ClassVar[tuple[type[Attribute], ...]] = ()

    def infer(self) -> Attribute | None:
        return None

    def same_type(self, got: Attribute, expected: Attribute) -> bool:
        return got == expected

    def verify_(self) -> None:
        if self.TYPES:
            for v in [*self.operands, *self.results]:
                if isinstance(v.type, CiphertextType | PlaintextType) and not (
                    isinstance(v.type, self.TYPES)
                ):
                    raise VerifyException(f"{self.name}: {v.type} is not a type of its dialect")
        expected = self.infer()
        if expected is None:
            return
        got = self.results[0].type
        if not self.same_type(got, expected):
            raise VerifyException(f"{self.name}: result type {got} does not match {expected}")


def retype(op: Operation) -> None:
    """Set the result type of `op` from its operands (after a pass changed an operand type)."""
    if isinstance(op, HeOp):
        expected = op.infer()
        if expected is not None:
            op.results[0]._type = expected  # pyright: ignore[reportPrivateUsage]


def _initial_type(op: Operation) -> None:
    with contextlib.suppress(VerifyException):
        retype(op)


class Binary(HeOp, ABC):
    lhs = operand_def(CiphertextType)
    rhs = operand_def(CiphertextType)
    result = result_def(CiphertextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[any_ct(lhs)])
        _initial_type(self)


class Unary(HeOp, ABC):
    input = operand_def(CiphertextType)
    result = result_def(CiphertextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, properties: dict[str, Attribute] | None = None):
        super().__init__(
            operands=[operand], result_types=[any_ct(operand)], properties=properties or {}
        )
        _initial_type(self)


class AddRule(Binary, ABC):
    def infer(self) -> CiphertextType:
        a, b = any_ct(self.lhs), any_ct(self.rhs)
        check_same_array(self.name, a, b)
        return a.with_(degree=max(a.degree_value, b.degree_value))


class SubRule(AddRule, ABC):
    """lhs - rhs (the same type rule as add)."""


class MulRule(Binary, ABC):
    """Tensor product without relinearization: degrees add."""

    def infer(self) -> CiphertextType:
        a, b = any_ct(self.lhs), any_ct(self.rhs)
        check_same_array(self.name, a, b)
        _check_not_coeff(self.name, a, b)
        return a.with_(degree=a.degree_value + b.degree_value)


class NegateRule(Unary, ABC):
    def infer(self) -> CiphertextType:
        return any_ct(self.input)


class RelinearizeRule(Unary, ABC):
    """Key switch of the degree >= 2 components back to a degree-1 ciphertext."""

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        if src.degree_value < 2:
            raise VerifyException("relinearize needs a ciphertext of degree >= 2")
        return src.with_(degree=1)


class LevelDownRule(Unary, ABC):
    """Level l -> l - 1: the scheme drops the last prime of the ciphertext modulus."""

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        if src.level_value < 1:
            raise VerifyException(f"{self.name} at level 0: no prime left to drop")
        return src.with_(level=src.level_value - 1)


class RotateRule(Unary, ABC):
    """Rotate the slots of every ciphertext by `offset` (a Galois key switch)."""

    offset = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, offset: int):
        super().__init__(operand, {"offset": IntegerAttr(offset, i64)})

    @property
    def offset_value(self) -> int:
        return self.offset.value.data

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        slotted = src.layout_name == PACKED or cyclic_of(src.layout_name) is not None
        if not slotted and grid_of(src.layout_name) is None:
            raise VerifyException("rotate acts on packed arrays (replicated slots are equal)")
        if src.degree_value != 1:
            raise VerifyException("rotate needs a relinearized (degree 1) ciphertext")
        return src


class SumSlotsRule(Unary, ABC):
    """Sum over the packed axis, the total in every slot (a replicated result). With `axis`,
    the sum over the row axis of a grid array (docs/layout.md): the ciphertext blocks along
    the rows are added, then a rotate-and-add tree with the strides C, 2C, ..., (R/2) C (log2 R
    rotations) leaves the sum in every grid row: the result has replicas on the rows."""

    axis = opt_prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, axis: int | None = None):
        props: dict[str, Attribute] = {} if axis is None else {"axis": IntegerAttr(axis, i64)}
        super().__init__(operand, props)

    @property
    def axis_value(self) -> int | None:
        return None if self.axis is None else self.axis.value.data

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        grid = grid_of(src.layout_name)
        if self.axis_value is not None:
            if grid is None or grid.row_axis != self.axis_value:
                raise VerifyException(
                    f"sum_slots over axis {self.axis_value} sums the row axis of a grid array, "
                    f"not of {src.layout_name}"
                )
            if src.degree_value != 1:
                raise VerifyException("sum_slots rotates: it needs a degree-1 ciphertext")
            dims = src.dims[: self.axis_value] + src.dims[self.axis_value + 1 :]
            return src.with_(dims=dims, layout=grid.without(self.axis_value))
        if src.layout_name != PACKED:
            raise VerifyException("sum_slots sums the packed axis of a packed array")
        if src.degree_value != 1:
            raise VerifyException("sum_slots rotates: it needs a degree-1 ciphertext")
        return src.with_(dims=src.dims[:-1], layout=REPLICATED)


class ReduceRule(Unary, ABC):
    """Binary-tree sum of the ciphertexts along an array axis (no key switch)."""

    axis = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, axis: int):
        super().__init__(operand, {"axis": IntegerAttr(axis, i64)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        _check_array_axis(src, self.axis_value, self.name)
        dims = tuple(d for i, d in enumerate(src.dims) if i != self.axis_value)
        layout = src.layout_name if dims or src.layout_name == REPLICATED else REPLICATED
        grid = grid_of(src.layout_name)
        if grid is not None:
            layout = grid.without(self.axis_value)
        return src.with_(dims=dims, layout=layout)


class DotRule(HeOp, ABC):
    """Fused sum_i a_i * b_i along an array axis."""

    lhs = operand_def(CiphertextType)
    rhs = operand_def(CiphertextType)
    axis = prop_def(IntegerAttr)
    result = result_def(CiphertextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, axis: int):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[any_ct(lhs)],
            properties={"axis": IntegerAttr(axis, i64)},
        )
        _initial_type(self)

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def infer(self) -> CiphertextType:
        a, b = any_ct(self.lhs), any_ct(self.rhs)
        check_same_array(self.name, a, b)
        _check_not_coeff(self.name, a, b)
        _check_array_axis(a, self.axis_value, self.name)
        dims = tuple(d for i, d in enumerate(a.dims) if i != self.axis_value)
        grid = grid_of(a.layout_name)
        layout = a.layout_name if grid is None else grid.without(self.axis_value)
        return a.with_(dims=dims, layout=layout, degree=a.degree_value + b.degree_value)


class DiagMatvecRule(Binary, ABC):
    """The Halevi-Shoup matrix-vector product with baby-step giant-step (docs/layout.md,
    "Diagonal layout"): `lhs` an [A, K] matrix in `diagonal<P, Q, b>`, `rhs` a [K] vector in
    `cyclic<Q>`, the result [A] in `cyclic<P>`, relinearized (degree 1). With D = min(P, Q)
    and G = D / b: the vector is rotated by 1 .. b-1 (one hoisted decomposition); each giant
    group g sums D_(g b + k) * rot(v, k) over k (b ciphertext products), is relinearized and
    rotated by g b; the groups are added; a wide matrix (P < Q) then folds its partial sums
    with the strides P, 2P, .., Q/2. Key switches: (b - 1) + G + (G - 1) + log2(Q / P);
    multiplicative depth 1."""

    @property
    def diagonal(self) -> Diagonal:
        d = diagonal_of(any_ct(self.lhs).layout_name)
        assert d is not None
        return d

    def infer(self) -> CiphertextType:
        a, v = any_ct(self.lhs), any_ct(self.rhs)
        d = diagonal_of(a.layout_name)
        if d is None or len(a.dims) != 2:
            raise VerifyException(f"{self.name}: the matrix must be in a diagonal layout")
        if cyclic_of(v.layout_name) != d.cols or len(v.dims) != 1:
            raise VerifyException(
                f"{self.name}: the vector must be cyclic<{d.cols}>, not {v.layout_name}"
            )
        if v.dims[0] != a.dims[1]:
            raise VerifyException(f"{self.name}: {format_shape(a.dims)} @ {format_shape(v.dims)}")
        if a.level_value != v.level_value:
            raise VerifyException(
                f"{self.name}: operands are at levels {a.level_value} and {v.level_value}; "
                "bring them to one level first"
            )
        if a.degree_value != 1 or v.degree_value != 1:
            raise VerifyException(f"{self.name} rotates: it needs degree-1 operands")
        return a.with_(dims=a.dims[:1], layout=cyclic_text(d.rows), degree=1)


_KEEPS_ZEROS = ("rescale", "level_down", "mod_switch", "relinearize", "negate")


class ConvertRule(Unary, ABC):
    """A layout conversion of a vector [K] (docs/layout.md, "Conversions"):

    - `cyclic<Q>` -> `packed`: a relabelling (no HE work) of a cyclic vector whose padding
      and later periods are zero, i.e. the result of a masked `mul_const` (its valid slots are
      0 .. K-1): that is a packed vector of one block. The mask is the conversion's cost
      (a plaintext product and, under CKKS, a level).
    - `packed` -> `cyclic<Q>`: one packed ciphertext (K <= slots) with zero padding, repeated
      every Q slots by log2(slots / Q) rotate-and-adds (x += rot(x, -Q 2^t)): key switches, no
      level."""

    to = prop_def(StringAttr)

    def __init__(self, operand: SSAValue, to: str):
        super().__init__(operand, {"to": StringAttr(to)})

    @property
    def to_layout(self) -> str:
        return self.to.data

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        to = self.to_layout
        if len(src.dims) != 1:
            raise VerifyException(f"{self.name} converts vectors")
        if cyclic_of(src.layout_name) is not None and to == PACKED:
            owner = self.input.owner
            # Rescales, level drops, relinearizations and negations between the mask and the
            # relabelling keep the zeros (in any scheme dialect: the op names say it).
            while isinstance(owner, Operation) and owner.name.split(".")[-1] in _KEEPS_ZEROS:
                owner = owner.operands[0].owner
            if not (isinstance(owner, WithPublic) and getattr(owner, "is_masked", False)):
                raise VerifyException(
                    f"{self.name}: a cyclic vector becomes packed only once masked "
                    "(a masked mul_const zeroes its padding and later periods)"
                )
            return src.with_(layout=PACKED)
        if src.layout_name == PACKED and cyclic_of(to) is not None:
            if src.degree_value != 1:
                raise VerifyException(f"{self.name} rotates: it needs a degree-1 ciphertext")
            return src.with_(layout=to)
        raise VerifyException(f"{self.name}: no conversion from {src.layout_name} to {to}")


class BroadcastRule(Unary, ABC):
    """Array-level broadcast (ciphertexts are reused): operand axis i becomes result axis
    dims[i]. A replicated array may become packed along a new or stretched last axis."""

    dims = prop_def(DenseArrayBase[IntegerType])
    shape = prop_def(ArrayAttr[IntAttr | StringAttr])
    out_layout = prop_def(StringAttr)

    def __init__(self, operand: SSAValue, shape: Sequence[Dim], dims: Sequence[int], layout: str):
        super().__init__(
            operand,
            {
                "dims": DenseArrayBase.from_list(i64, list(dims)),
                "shape": shape_attr(shape),
                "out_layout": StringAttr(layout),
            },
        )

    @property
    def dims_tuple(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.dims.get_values())

    @property
    def shape_tuple(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        dims, shape, layout = self.dims_tuple, self.shape_tuple, self.out_layout.data
        if len(dims) != len(src.dims) or list(dims) != sorted(set(dims)):
            raise VerifyException("broadcast dims must map every operand axis, increasing")
        if any(d >= len(shape) for d in dims):
            raise VerifyException("broadcast dims out of range")
        for i, d in enumerate(dims):
            if src.dims[i] != shape[d] and src.dims[i] != 1:
                raise VerifyException(f"operand axis {i} cannot broadcast to result axis {d}")
        last = len(shape) - 1
        out_grid = grid_of(layout)
        if cyclic_of(layout) is not None or cyclic_of(src.layout_name) is not None:
            same = src.layout_name == layout and src.dims == tuple(shape)
            if not same and (src.layout_name != REPLICATED or src.dims):
                raise VerifyException(
                    f"only a replicated scalar broadcasts to {layout} (from {src.layout_name})"
                )
        elif diagonal_of(layout) is not None or diagonal_of(src.layout_name) is not None:
            raise VerifyException("a diagonal array does not broadcast")
        elif out_grid is not None or grid_of(src.layout_name) is not None:
            _check_grid_broadcast(src, shape, dims, layout)
        elif src.layout_name in SLOT_LAYOUTS:
            if (
                layout != src.layout_name
                or not dims
                or dims[-1] != last
                or src.dims[-1] != shape[last]
            ):
                raise VerifyException(
                    f"a {src.layout_name} array broadcasts only along its leading axes"
                )
        elif layout in SLOT_LAYOUTS and last in dims and src.dims[dims.index(last)] == shape[last]:
            raise VerifyException(
                "a replicated array becomes packed only along a new or stretched last axis"
            )
        return src.with_(dims=shape, layout=layout)


def _check_grid_broadcast(
    src: CiphertextType, shape: Sequence[Dim], dims: Sequence[int], layout: str
) -> None:
    """A broadcast into or within the grid reuses ciphertexts: every operand axis keeps its role
    (a replicated operand's axes are unrolled), and a result row or column axis that no operand
    axis feeds (new, or stretched from 1) is read from the operand's replicas in that
    direction. Same grid rows on both sides."""
    out = grid_of(layout)
    if out is None:
        raise VerifyException(f"a grid array broadcasts only to a grid layout, not {layout}")
    src_grid = grid_of(src.layout_name)
    if src_grid is None and src.layout_name != REPLICATED:
        raise VerifyException(f"a {src.layout_name} array does not broadcast to {layout}")
    if src_grid is not None and src_grid.rows != out.rows:
        raise VerifyException(f"{src.layout_name} and {layout} have different grid rows")
    out.check(len(shape))
    src_roles = src_grid.roles if src_grid else (UNROLLED,) * len(src.dims)
    for i, d in enumerate(dims):
        stretched = src.dims[i] == 1 and shape[d] != 1
        if src_roles[i] != out.roles[d] and not (src_roles[i] == UNROLLED and stretched):
            raise VerifyException(
                f"broadcast from {src.layout_name} to {layout}: operand axis {i} is "
                f"{src_roles[i]} but result axis {d} is {out.roles[d]} (a layout conversion)"
            )


class TransposeRule(Unary, ABC):
    """Swap the axes of a rank-2 replicated array (relabelling ciphertexts, no HE work)."""

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        if src.layout_name != REPLICATED or len(src.dims) != 2:
            raise VerifyException("transpose needs a rank-2 replicated array")
        return src.with_(dims=tuple(reversed(src.dims)))


class GatherRule(Unary, ABC):
    """Pick ciphertexts of a replicated array into a new replicated array (relabelling, no HE
    work but a negation where asked): result element e (C order) is the operand's element
    `indices[e]` (C order), negated when `negate[e]` is 1. `shape` is the result's shape; its
    symbolic dimensions take their compile-time size, so `indices` has one entry per element
    at that size (checked where sizes are known: the lowering, the simulator, the runtime).
    Small-matrix algebra (det, adj: passes/lower_stat_to_he.py) is written with it."""

    indices = prop_def(DenseArrayBase[IntegerType])
    negate = prop_def(DenseArrayBase[IntegerType])
    shape = prop_def(ArrayAttr[IntAttr | StringAttr])

    def __init__(
        self,
        operand: SSAValue,
        indices: Sequence[int],
        negate: Sequence[bool],
        shape: Sequence[Dim],
    ):
        super().__init__(
            operand,
            {
                "indices": _int_array(indices),
                "negate": _int_array([int(bool(x)) for x in negate]),
                "shape": shape_attr(shape),
            },
        )

    @property
    def index_values(self) -> tuple[int, ...]:
        return ints(self.indices)

    @property
    def negate_flags(self) -> tuple[bool, ...]:
        return tuple(bool(x) for x in ints(self.negate))

    @property
    def shape_tuple(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        if src.layout_name != REPLICATED:
            raise VerifyException(f"{self.name} picks ciphertexts of a replicated array")
        if len(self.index_values) != len(self.negate_flags):
            raise VerifyException(f"{self.name}: one negate flag per index")
        if any(i < 0 for i in self.index_values) or any(x not in (0, 1) for x in ints(self.negate)):
            raise VerifyException(f"{self.name}: indices are >= 0 and negate flags 0 or 1")
        shape = self.shape_tuple
        if all(isinstance(d, int) for d in src.dims):
            total = 1
            for d in src.dims:
                assert isinstance(d, int)
                total *= d
            if any(i >= total for i in self.index_values):
                raise VerifyException(f"{self.name}: an index exceeds the operand's {total}")
        if all(isinstance(d, int) for d in shape):
            total = 1
            for d in shape:
                assert isinstance(d, int)
                total *= d
            if total != len(self.index_values):
                raise VerifyException(
                    f"{self.name}: {len(self.index_values)} indices for shape {format_shape(shape)}"
                )
        return src.with_(dims=shape)


class WithPublic(HeOp, ABC):
    input = operand_def(CiphertextType)
    value = operand_def(PublicType)
    result = result_def(CiphertextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $value attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def infer(self) -> CiphertextType:
        return any_ct(self.input)


class MulConstRule(WithPublic, ABC):
    """Multiply by a public scalar; `integer` when the scalar is an integer (exact in every
    scheme; a real one needs an approximate scheme). `masked`: the scalar multiplies only the
    valid slots of a packed array, its padding slots become zero (a plaintext vector, not a
    scalar: under CKKS it is rounded per coefficient and costs a level even for 1)."""

    integer = opt_prop_def(UnitAttr)
    masked = opt_prop_def(UnitAttr)

    def __init__(self, operand: SSAValue, value: SSAValue, integer: bool, masked: bool = False):
        props: dict[str, Attribute] = {"integer": UnitAttr()} if integer else {}
        if masked:
            props["masked"] = UnitAttr()
        super().__init__(
            operands=[operand, value], result_types=[any_ct(operand)], properties=props
        )

    @property
    def is_integer(self) -> bool:
        return self.integer is not None

    @property
    def is_masked(self) -> bool:
        return self.masked is not None

    def infer(self) -> CiphertextType:
        src = any_ct(self.input)
        slotted = src.layout_name == PACKED or cyclic_of(src.layout_name) is not None
        if self.is_masked and not slotted and grid_of(src.layout_name) is None:
            raise VerifyException(f"{self.name}: a masked constant needs a packed array")
        return src


class AddConstRule(WithPublic, ABC):
    """Add a public scalar (`integer` as for mul_const)."""

    integer = opt_prop_def(UnitAttr)

    def __init__(self, operand: SSAValue, value: SSAValue, integer: bool):
        props: dict[str, Attribute] = {"integer": UnitAttr()} if integer else {}
        super().__init__(
            operands=[operand, value], result_types=[any_ct(operand)], properties=props
        )

    @property
    def is_integer(self) -> bool:
        return self.integer is not None


class Named(HeOp, ABC):
    sym = prop_def(StringAttr)

    @property
    def sym_value(self) -> str:
        return self.sym.data


class EncodeRule(Named, ABC):
    """Encode input `sym` (from its owner's data) into an encoded array. `domain` is the
    input's declared value domain; `expr` an owner-side expression (compiler/owner_expr.py);
    a `coeff` encode carries `digits`, `scalar_digits`, `radices` and `group` (see
    ckks.encode)."""

    domain = opt_prop_def(IntervalAttr | SetAttr)
    expr = opt_prop_def(StringAttr)
    digits = opt_prop_def(ArrayAttr[StringAttr])
    scalar_digits = opt_prop_def(DenseArrayBase)
    radices = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)  # coeff: columns per coefficient
    result = result_def(PlaintextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, sym: str, ty: PlaintextType, domain: Domain | None, expr: str | None = None):
        props: dict[str, Attribute] = {"sym": StringAttr(sym)}
        if domain is not None:
            props["domain"] = domain_attr(domain)
        if expr is not None:
            props["expr"] = StringAttr(expr)
        super().__init__(result_types=[ty], properties=props)

    def set_digits(self, digits: Sequence[str], scalar: Sequence[bool], radices: Sequence[int]):
        self.properties["digits"] = ArrayAttr([StringAttr(d) for d in digits])
        self.properties["scalar_digits"] = _int_array([int(x) for x in scalar])
        self.properties["radices"] = _int_array(radices)

    @property
    def domain_value(self) -> Domain | None:
        return None if self.domain is None else self.domain.to_domain()

    @property
    def expr_value(self) -> str | None:
        return None if self.expr is None else self.expr.data

    @property
    def digit_exprs(self) -> tuple[str, ...]:
        return () if self.digits is None else tuple(d.data for d in self.digits.data)

    @property
    def scalar_digit_flags(self) -> tuple[bool, ...]:
        return (
            () if self.scalar_digits is None else tuple(bool(x) for x in ints(self.scalar_digits))
        )

    @property
    def radix_values(self) -> tuple[int, ...]:
        return () if self.radices is None else ints(self.radices)

    @property
    def group_value(self) -> int:
        return 1 if self.group is None else self.group.value.data

    def sources(self) -> list[str]:
        """The owner's inputs this encode reads (the `--input NAME` the encrypt role needs)."""
        texts = self.digit_exprs or ((self.expr_value,) if self.expr_value else ())
        if not texts:
            return [self.sym_value]
        out: list[str] = []
        for t in texts:
            for name in parse(t).sources():
                if name not in out:
                    out.append(name)
        return out

    def set_group(self, group: int) -> None:
        self.properties["group"] = IntegerAttr(group, i64)

    def verify_(self) -> None:
        if self.group_value < 1:
            raise VerifyException("coeff radices must be >= 2 and group >= 1")
        ty = any_pt(self.result)
        if ty.layout_name == COEFF:
            n = len(self.digit_exprs)
            if not n or len(self.scalar_digit_flags) != n or len(self.radix_values) != n:
                raise VerifyException(
                    "a coeff encode needs digits, scalar_digits and radices of one length"
                )
            if any(r < 2 for r in self.radix_values):
                raise VerifyException("coeff radices must be >= 2")
            if len(ty.dims) != 2:
                raise VerifyException("a coeff array has shape [rows, columns]")
        elif self.digits is not None:
            raise VerifyException("digits are only for coeff encodes")


class EncryptRule(HeOp, ABC):
    """Public-key encryption by the data owner: a fresh degree-1 ciphertext array."""

    input = operand_def(PlaintextType)
    party = prop_def(StringAttr)
    result = result_def(CiphertextType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, plain: SSAValue):
        super().__init__(
            operands=[plain],
            result_types=[self.fresh(any_pt(plain))],
            properties={"party": StringAttr("data_owner")},
        )

    def fresh(self, p: PlaintextType) -> CiphertextType:
        """The type of a fresh encryption of `p` (a scheme adds what it carries)."""
        return CtType.get(p.dims, p.layout_name, p.level_value, 1)

    def infer(self) -> CiphertextType:
        if self.party.data != "data_owner":
            raise VerifyException(f"{self.name} is done by the data owner (party = data_owner)")
        return self.fresh(any_pt(self.input))

    def source(self) -> EncodeRule:
        owner = self.input.owner
        if not isinstance(owner, EncodeRule):
            raise VerifyException(f"{self.name} encrypts the result of an encode")
        return owner


class DecryptRule(Named, ABC):
    """Decryption of a revealed value by the coordinator; `factor` a public scalar the
    coordinator multiplies the decoded value by; `digit` the packed count of a coeff array."""

    input = operand_def(CiphertextType)
    factor = opt_operand_def(PublicType)
    party = prop_def(StringAttr)
    digit = opt_prop_def(IntegerAttr)
    scalar_digit = opt_prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym $input (`times` $factor^)? attr-dict `:` type($input)"

    def __init__(
        self,
        sym: str,
        operand: SSAValue,
        factor: SSAValue | None = None,
        digit: int | None = None,
        scalar: bool = False,
    ):
        props: dict[str, Attribute] = {"sym": StringAttr(sym), "party": StringAttr("coordinator")}
        if digit is not None:
            props["digit"] = IntegerAttr(digit, i64)
            props["scalar_digit"] = IntegerAttr(int(scalar), i64)
        super().__init__(
            operands=[operand, [factor] if factor is not None else []], properties=props
        )

    @property
    def digit_value(self) -> int | None:
        return None if self.digit is None else self.digit.value.data

    @property
    def is_scalar_digit(self) -> bool:
        return self.scalar_digit is not None and self.scalar_digit.value.data != 0

    def infer(self) -> None:
        if self.party.data != "coordinator":
            raise VerifyException(f"{self.name} is done by the coordinator (party = coordinator)")
        coeff = any_ct(self.input).layout_name == COEFF
        if coeff != (self.digit is not None):
            raise VerifyException(f"{self.name} reads a digit exactly when its input is coeff")


class SizeRule(Named, ABC):
    result = result_def(PublicType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"
    traits = traits_def(Pure())

    def __init__(self, sym: str):
        super().__init__(result_types=[PublicType()], properties={"sym": StringAttr(sym)})


class ConstantRule(HeOp, ABC):
    value = prop_def(FloatAttr)
    result = result_def(PublicType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"
    traits = traits_def(Pure())

    def __init__(self, value: float):
        super().__init__(
            result_types=[PublicType()], properties={"value": FloatAttr(float(value), f64)}
        )

    @property
    def float_value(self) -> float:
        return float(self.value.value.data)


PUBLIC_KINDS = ("add", "sub", "mul", "div")


class PublicArithRule(HeOp, ABC):
    """Arithmetic on public scalars (every party can compute it in the clear)."""

    lhs = operand_def(PublicType)
    rhs = operand_def(PublicType)
    kind = prop_def(StringAttr)
    result = result_def(PublicType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind $lhs `,` $rhs attr-dict"
    traits = traits_def(Pure())

    def __init__(self, kind: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[PublicType()],
            properties={"kind": StringAttr(kind)},
        )

    def infer(self) -> None:
        if self.kind.data not in PUBLIC_KINDS:
            raise VerifyException(f"public_arith kind must be one of {PUBLIC_KINDS}")


class ParamRule(Named, ABC):
    bound = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"

    def __init__(self, sym: str, bound: int):
        super().__init__(properties={"sym": StringAttr(sym), "bound": IntegerAttr(bound, i64)})

    @property
    def bound_value(self) -> int:
        return self.bound.value.data


class SourceRule(Named, ABC):
    """Declares a data owner's input that owner-side values read: its shape and domain."""

    shape = prop_def(ArrayAttr[IntAttr | StringAttr])
    domain = prop_def(IntervalAttr | SetAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"

    def __init__(self, sym: str, dims: Sequence[Dim], domain: Domain):
        super().__init__(
            properties={
                "sym": StringAttr(sym),
                "shape": shape_attr(dims),
                "domain": domain_attr(domain),
            }
        )

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def domain_value(self) -> Domain:
        return self.domain.to_domain()


class ProgramRule(NamedRegionOp, ABC):
    """A whole program: params, encodes/encryptions, the server computation, decrypts."""

    def ops(self) -> Iterator[Operation]:
        return iter(list(self.block.ops))

    def params(self) -> dict[str, int]:
        return {op.sym_value: op.bound_value for op in self.block.ops if isinstance(op, ParamRule)}

    def encrypts(self) -> list[EncryptRule]:
        return [op for op in self.block.ops if isinstance(op, EncryptRule)]

    def decrypts(self) -> list[DecryptRule]:
        return [op for op in self.block.ops if isinstance(op, DecryptRule)]

    def verify_(self) -> None:
        params = self.params()
        for op in self.block.ops:
            if op.parent_op() is not self:
                continue
            for value in [*op.operands, *op.results]:
                ty = value.type
                if isinstance(ty, CiphertextType | PlaintextType):
                    for d in ty.dims:
                        if isinstance(d, str) and d not in params:
                            raise VerifyException(f"dimension {d} is not a declared param")
            if isinstance(op, SizeRule) and op.sym_value not in params:
                raise VerifyException(f"size of undeclared parameter {op.sym_value}")


# --------------------------------------------------------------------------------------------
# The he ops
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class ProgramOp(ProgramRule):
    name = "he.program"


@irdl_op_definition
class ParamOp(ParamRule):
    name = "he.param"


@irdl_op_definition
class SourceOp(SourceRule):
    name = "he.source"


@irdl_op_definition
class SizeOp(SizeRule):
    name = "he.size"


@irdl_op_definition
class ConstantOp(ConstantRule):
    name = "he.constant"


@irdl_op_definition
class PublicArithOp(PublicArithRule):
    name = "he.public_arith"


@irdl_op_definition
class EncodeOp(EncodeRule):
    name = "he.encode"


@irdl_op_definition
class EncryptOp(EncryptRule):
    name = "he.encrypt"


@irdl_op_definition
class DecryptOp(DecryptRule):
    name = "he.decrypt"


@irdl_op_definition
class AddOp(AddRule):
    name = "he.add"


@irdl_op_definition
class SubOp(SubRule):
    name = "he.sub"


@irdl_op_definition
class NegateOp(NegateRule):
    name = "he.negate"


@irdl_op_definition
class MulOp(MulRule):
    name = "he.mul"


@irdl_op_definition
class MulConstOp(MulConstRule):
    name = "he.mul_const"


@irdl_op_definition
class AddConstOp(AddConstRule):
    name = "he.add_const"


@irdl_op_definition
class RelinearizeOp(RelinearizeRule):
    name = "he.relinearize"


@irdl_op_definition
class RotateOp(RotateRule):
    name = "he.rotate"


@irdl_op_definition
class SumSlotsOp(SumSlotsRule):
    name = "he.sum_slots"


@irdl_op_definition
class ReduceOp(ReduceRule):
    name = "he.reduce"


@irdl_op_definition
class DotOp(DotRule):
    name = "he.dot"


@irdl_op_definition
class DiagMatvecOp(DiagMatvecRule):
    name = "he.diag_matvec"


@irdl_op_definition
class ConvertOp(ConvertRule):
    name = "he.convert"


@irdl_op_definition
class BroadcastOp(BroadcastRule):
    name = "he.broadcast"


@irdl_op_definition
class TransposeOp(TransposeRule):
    name = "he.transpose"


@irdl_op_definition
class GatherOp(GatherRule):
    name = "he.gather"


He = Dialect(
    "he",
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
        RotateOp,
        SumSlotsOp,
        ReduceOp,
        DotOp,
        DiagMatvecOp,
        ConvertOp,
        BroadcastOp,
        TransposeOp,
        GatherOp,
    ],
    [CtType, PtType, PublicType],
)
# The types an op of the he (and bfv) dialect takes and makes.
HE_TYPES: tuple[type[Attribute], ...] = (CtType, PtType, PublicType)
for _op in He.operations:
    if issubclass(_op, HeOp):
        _op.TYPES = HE_TYPES


@dataclass(frozen=True)
class Kind:
    """What a scheme-independent pass needs to know of an op, whatever its dialect."""

    key_switch: bool  # needs evaluation keys (relinearize, rotate, sum_slots)
    multiplies: bool  # a tensor product (mul, dot)


def kind_of(op: Operation) -> Kind:
    return Kind(
        key_switch=isinstance(
            op, RelinearizeRule | RotateRule | SumSlotsRule | DiagMatvecRule | ConvertRule
        ),
        multiplies=isinstance(op, MulRule | DotRule | DiagMatvecRule),
    )
