"""The `ckks` dialect: RNS-CKKS programs on ARRAYS of ciphertexts (DESIGN.md §4).

A value is a whole ciphertext array, so the IR is the same size for N = 10 and N = 100,000
(principle 1). Its type records everything the scheme needs to stay correct:

- `!ckks.tensor<[N, M], packed, ct<level, scale, degree>>`: the logical shape (symbolic or
  literal dims, as in `stat`), the layout, and per ciphertext the level (index into the
  modulus chain Q_0 | Q_1 | ... | Q_L: a rescale goes from level l to l - 1; Q_0 is the output
  modulus and may hold several primes), log2 of the scale, and the degree (a fresh ciphertext
  has degree 1, i.e. two components; a tensor product adds degrees; relinearize returns to 1).
- `!ckks.ptensor<[M], packed, pt<level, scale>>`: an encoded public array (a plaintext).
- `!ckks.public`: a public real scalar known to every party (sizes, constants).

Layouts (the `layout` parameter):
- `packed`: the last logical axis lives in the slots: one ciphertext per row (every index of
  the leading axes) and per block of `slots` columns, zero padded. An array of shape [N, M]
  holds N x ceil(M / slots) ciphertexts.
- `replicated`: one ciphertext per element, that element's value in every slot.
- `complex`: the last axis in the complex slots, two blocks of `slots` columns per
  ciphertext: block 2j in the real parts, block 2j + 1 in the imaginary parts. An array of
  shape [N, M] holds N x ceil(M / (2 slots)) ciphertexts: half the ciphertexts of `packed`
  for the same data (the complex-packing pass chooses it). It survives only what acts on
  real and imaginary parts alike: add, sub, negate, mul_const, add_const (the constant
  goes to both parts), rescale, level_down, relinearize, reduce, and mul/dot by a broadcast
  of a replicated array (a real value in every slot). `unpack_complex` turns it back into
  `packed` with one conjugation.
- `coeff`: integer counts in the COEFFICIENTS of the plaintext polynomial, radix-packed
  (passes/packed_counts.py): coefficient g of a row holds sum_k W_k x_k for `group` columns
  (g * group ... g * group + group - 1) and every digit of the encode's `digits`, scaled by an
  exact power of two. Only additions act on it (add, sub, negate, reduce over rows); the
  coordinator reads digit k back exactly (decrypt `digit`). The decrypted error is the sum of
  fresh coefficient errors: no canonical embedding multiplies it, so a small modulus holds
  many exact counts (coefficient-parameters chooses the primes, the scale and `group`).

Ops. Elementwise ops take arrays of the same shape and layout (explicit `ckks.broadcast` makes
them so), the same level, and (for add/sub) the same scale. Invariants are in the result-type
rule of each op (`infer`), and the verifier checks the result type against it, so a pass that
breaks levels, scales or degrees produces IR that does not verify.

encode, encrypt (party: data owner), add, sub, negate, mul (tensor product, no
relinearization), mul_plain, add_plain, mul_const (integer constant: no level; real constant:
the scale grows by the constant's encoding scale), add_const, relinearize (key switch),
rescale (divides by the top prime of the current modulus), level_down, rotate (key switch;
`group` marks rotations of one source that share a hoisted decomposition), sum_slots (rotate
and add over the packed axis: log2(slots) rotations per ciphertext), reduce (binary-tree sum
over an array axis), dot (fused sum_i a_i * b_i over an array axis), broadcast, transpose
(replicated arrays only: relabelling), unpack_complex (complex -> packed: a conjugation key
switch, after a relinearization when the degree is above 1), decrypt (party: coordinator),
and the public-scalar ops size, constant, public_arith.
"""

from __future__ import annotations

import contextlib
import math
from abc import ABC
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    FloatData,
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
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from compiler.dialects.stat import IntervalAttr, SetAttr, domain_attr
from compiler.types import Dim, Domain, format_shape

PACKED = "packed"
REPLICATED = "replicated"
COMPLEX = "complex"
COEFF = "coeff"
LAYOUTS = (PACKED, REPLICATED, COMPLEX, COEFF)
SLOT_LAYOUTS = (PACKED, COMPLEX, COEFF)  # the last axis lives in the slots (or coefficients)
# Scales are compared in log2; two scales closer than this are the same scale (the exact
# values are products of the same primes taken in different orders).
SCALE_TOLERANCE = 1e-9


def _parse_dims(parser: AttrParser) -> list[IntAttr | StringAttr]:
    def parse_dim() -> IntAttr | StringAttr:
        value = parser.parse_optional_integer(allow_negative=False, allow_boolean=False)
        if value is not None:
            return IntAttr(value)
        return StringAttr(parser.parse_identifier(" for a dimension"))

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_dim)


def _shape_attr(dims: Sequence[Dim]) -> ArrayAttr[IntAttr | StringAttr]:
    return ArrayAttr([IntAttr(d) if isinstance(d, int) else StringAttr(d) for d in dims])


def _format_log_scale(value: float) -> str:
    text = repr(float(value))
    return text if "." in text or "e" in text else f"{text}.0"


def _verify_shape(dims: tuple[Dim, ...], layout: str) -> None:
    if layout not in LAYOUTS:
        raise VerifyException(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if len(dims) > 3:
        raise VerifyException(f"ciphertext arrays have rank at most 3, got {len(dims)}")
    if layout in SLOT_LAYOUTS and not dims:
        raise VerifyException(f"a {layout} array needs at least one axis (the packed one)")


@irdl_attr_definition
class CtType(ParametrizedAttribute, TypeAttribute):
    """`!ckks.tensor<[N, M], packed, ct<level, log2 scale, degree>>`: a ciphertext array."""

    name = "ckks.tensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr
    log_scale: FloatData
    degree: IntAttr

    @staticmethod
    def get(dims: Sequence[Dim], layout: str, level: int, log_scale: float, degree: int) -> CtType:
        return CtType(
            _shape_attr(dims),
            StringAttr(layout),
            IntAttr(level),
            FloatData(float(log_scale)),
            IntAttr(degree),
        )

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
    def scale_bits(self) -> float:
        return self.log_scale.data

    @property
    def degree_value(self) -> int:
        return self.degree.data

    def with_(
        self,
        *,
        dims: Sequence[Dim] | None = None,
        layout: str | None = None,
        level: int | None = None,
        log_scale: float | None = None,
        degree: int | None = None,
    ) -> CtType:
        return CtType.get(
            self.dims if dims is None else dims,
            self.layout_name if layout is None else layout,
            self.level_value if level is None else level,
            self.scale_bits if log_scale is None else log_scale,
            self.degree_value if degree is None else degree,
        )

    def verify(self) -> None:
        _verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")
        if self.degree_value < 1:
            raise VerifyException(f"degree must be >= 1, got {self.degree_value}")
        if not math.isfinite(self.scale_bits):
            raise VerifyException("the scale must be finite")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(
            f"<[{dims}], {self.layout_name}, ct<{self.level_value}, "
            f"{_format_log_scale(self.scale_bits)}, {self.degree_value}>>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = _parse_dims(parser)
            parser.parse_punctuation(",")
            layout = parser.parse_keyword_in(LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("ct")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
                parser.parse_punctuation(",")
                scale = parser.parse_number()
                parser.parse_punctuation(",")
                degree = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [
            ArrayAttr(dims),
            StringAttr(layout),
            IntAttr(level),
            FloatData(float(scale)),
            IntAttr(degree),
        ]


@irdl_attr_definition
class PtType(ParametrizedAttribute, TypeAttribute):
    """`!ckks.ptensor<[M], packed, pt<level, log2 scale>>`: an encoded public array."""

    name = "ckks.ptensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr
    log_scale: FloatData

    @staticmethod
    def get(dims: Sequence[Dim], layout: str, level: int, log_scale: float) -> PtType:
        return PtType(
            _shape_attr(dims), StringAttr(layout), IntAttr(level), FloatData(float(log_scale))
        )

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
    def scale_bits(self) -> float:
        return self.log_scale.data

    def verify(self) -> None:
        _verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(
            f"<[{dims}], {self.layout_name}, pt<{self.level_value}, "
            f"{_format_log_scale(self.scale_bits)}>>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = _parse_dims(parser)
            parser.parse_punctuation(",")
            layout = parser.parse_keyword_in(LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("pt")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
                parser.parse_punctuation(",")
                scale = parser.parse_number()
        return [ArrayAttr(dims), StringAttr(layout), IntAttr(level), FloatData(float(scale))]


@irdl_attr_definition
class PublicType(ParametrizedAttribute, TypeAttribute):
    """`!ckks.public`: a public real scalar, known to every party."""

    name = "ckks.public"


def ct_type(value: SSAValue) -> CtType:
    ty = value.type
    if not isinstance(ty, CtType):
        raise VerifyException(f"expected a !ckks.tensor, got {ty}")
    return ty


def pt_type(value: SSAValue) -> PtType:
    ty = value.type
    if not isinstance(ty, PtType):
        raise VerifyException(f"expected a !ckks.ptensor, got {ty}")
    return ty


def same_scale(a: float, b: float) -> bool:
    return abs(a - b) <= SCALE_TOLERANCE * max(1.0, abs(a), abs(b))


def _check_same_array(what: str, a: CtType | PtType, b: CtType | PtType) -> None:
    if a.dims != b.dims or a.layout_name != b.layout_name:
        raise VerifyException(
            f"{what}: operands are {format_shape(a.dims)} {a.layout_name} and "
            f"{format_shape(b.dims)} {b.layout_name}; broadcast them to one shape and layout"
        )
    if a.level_value != b.level_value:
        raise VerifyException(
            f"{what}: operands are at levels {a.level_value} and {b.level_value}; "
            "insert ckks.level_down"
        )


def _check_same_scale(what: str, a: CtType | PtType, b: CtType | PtType) -> None:
    if not same_scale(a.scale_bits, b.scale_bits):
        raise VerifyException(
            f"{what}: operand scales 2^{a.scale_bits} and 2^{b.scale_bits} differ; "
            "the scales of added values must be equal"
        )


def is_real_broadcast(value: SSAValue) -> bool:
    """A broadcast of a replicated array: every slot holds one real value."""
    owner = value.owner
    return isinstance(owner, BroadcastOp) and ct_type(owner.input).layout_name == REPLICATED


def is_real_factor(value: SSAValue) -> bool:
    """A complex broadcast marked `real_factor`: a real value in every slot, imaginary 0."""
    owner = value.owner
    return isinstance(owner, BroadcastOp) and owner.real_factor is not None


def _check_not_coeff(what: str, *types: CtType | PtType) -> None:
    if any(t.layout_name == COEFF for t in types):
        raise VerifyException(f"{what}: coeff arrays only add (counts in the coefficients)")


def _check_complex_product(what: str, lhs: SSAValue, rhs: SSAValue) -> None:
    """A product of complex arrays is a product of complex slot values; it multiplies the real
    and imaginary parts alike only when one factor is real in every slot."""
    if ct_type(lhs).layout_name != COMPLEX:
        return
    if not (is_real_factor(lhs) or is_real_factor(rhs)):
        raise VerifyException(
            f"{what}: both operands are complex arrays; insert ckks.unpack_complex first "
            "(only a real_factor broadcast multiplies a complex array)"
        )


# --------------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------------


class CkksOp(IRDLOperation, ABC):
    """An op whose result type follows from its operands and properties (`infer`); the verifier
    checks the declared result type against that rule."""

    def infer(self) -> Attribute | None:
        """The result type the operands and properties imply (None: no result)."""
        return None

    def verify_(self) -> None:
        expected = self.infer()
        if expected is None:
            return
        got = self.results[0].type
        if isinstance(got, CtType) and isinstance(expected, CtType):
            ok = (
                got.dims == expected.dims
                and got.layout_name == expected.layout_name
                and got.level_value == expected.level_value
                and got.degree_value == expected.degree_value
                and same_scale(got.scale_bits, expected.scale_bits)
            )
        else:
            ok = got == expected
        if not ok:
            raise VerifyException(f"{self.name}: result type {got} does not match {expected}")


def retype(op: Operation) -> None:
    """Set the result type of `op` from its operands (after a pass changed an operand type)."""
    if isinstance(op, CkksOp):
        expected = op.infer()
        if expected is not None:
            op.results[0]._type = expected  # pyright: ignore[reportPrivateUsage]


def _initial_type(op: Operation) -> None:
    """At construction: the inferred result type when the operands allow one; otherwise the
    op keeps its provisional type and the verifier reports the broken rule."""
    with contextlib.suppress(VerifyException):
        retype(op)


class _CtBinary(CkksOp, ABC):
    lhs = operand_def(CtType)
    rhs = operand_def(CtType)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[ct_type(lhs)])
        _initial_type(self)


class _CtUnary(CkksOp, ABC):
    input = operand_def(CtType)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, properties: dict[str, Attribute] | None = None):
        super().__init__(
            operands=[operand], result_types=[ct_type(operand)], properties=properties or {}
        )
        _initial_type(self)


@irdl_op_definition
class AddOp(_CtBinary):
    name = "ckks.add"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _check_same_array(self.name, a, b)
        _check_same_scale(self.name, a, b)
        return a.with_(degree=max(a.degree_value, b.degree_value))


@irdl_op_definition
class SubOp(_CtBinary):
    name = "ckks.sub"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _check_same_array(self.name, a, b)
        _check_same_scale(self.name, a, b)
        return a.with_(degree=max(a.degree_value, b.degree_value))


@irdl_op_definition
class MulOp(_CtBinary):
    """Tensor product without relinearization: degrees add, scales multiply."""

    name = "ckks.mul"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _check_same_array(self.name, a, b)
        _check_not_coeff(self.name, a, b)
        _check_complex_product(self.name, self.lhs, self.rhs)
        return a.with_(
            log_scale=a.scale_bits + b.scale_bits, degree=a.degree_value + b.degree_value
        )


@irdl_op_definition
class NegateOp(_CtUnary):
    name = "ckks.negate"

    def infer(self) -> CtType:
        return ct_type(self.input)


@irdl_op_definition
class RelinearizeOp(_CtUnary):
    """Key switch of the degree >= 2 components back to a degree-1 ciphertext."""

    name = "ckks.relinearize"

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.degree_value < 2:
            raise VerifyException("relinearize needs a ciphertext of degree >= 2")
        return src.with_(degree=1)


@irdl_op_definition
class RescaleOp(_CtUnary):
    """Divide by the top prime q_l of the current modulus: level l -> l - 1, scale / q_l.
    `divisor` is log2(q_l): nominal until parameter selection fixes the primes, exact after."""

    name = "ckks.rescale"

    divisor = prop_def(FloatAttr)

    def __init__(self, operand: SSAValue, divisor_bits: float):
        super().__init__(operand, {"divisor": FloatAttr(float(divisor_bits), f64)})

    @property
    def divisor_bits(self) -> float:
        return float(self.divisor.value.data)

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.level_value < 1:
            raise VerifyException("rescale at level 0: the chain has no prime left to drop")
        return src.with_(level=src.level_value - 1, log_scale=src.scale_bits - self.divisor_bits)


@irdl_op_definition
class LevelDownOp(_CtUnary):
    """Drop primes without dividing (modulus switch to a lower level, scale unchanged)."""

    name = "ckks.level_down"

    to = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, level: int):
        super().__init__(operand, {"to": IntegerAttr(level, i64)})

    @property
    def to_level(self) -> int:
        return self.to.value.data

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if not 0 <= self.to_level < src.level_value:
            raise VerifyException(
                f"level_down from level {src.level_value} to {self.to_level} must go down"
            )
        return src.with_(level=self.to_level)


@irdl_op_definition
class RotateOp(_CtUnary):
    """Rotate the slots of every ciphertext by `offset` (a Galois key switch). Rotations with
    the same `group` and source share one hoisted digit decomposition."""

    name = "ckks.rotate"

    offset = prop_def(IntegerAttr)
    group = opt_prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, offset: int, group: int | None = None):
        props: dict[str, Attribute] = {"offset": IntegerAttr(offset, i64)}
        if group is not None:
            props["group"] = IntegerAttr(group, i64)
        super().__init__(operand, props)

    @property
    def offset_value(self) -> int:
        return self.offset.value.data

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.layout_name != PACKED:
            raise VerifyException("rotate acts on packed arrays (replicated slots are equal)")
        if src.degree_value != 1:
            raise VerifyException("rotate needs a relinearized (degree 1) ciphertext")
        return src


@irdl_op_definition
class SumSlotsOp(_CtUnary):
    """Sum over the packed axis: add the column blocks, then rotate-and-add log2(slots) times,
    which leaves the total in every slot (a replicated result). Needs degree 1 and zero
    padding slots."""

    name = "ckks.sum_slots"

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.layout_name != PACKED:
            raise VerifyException("sum_slots sums the packed axis of a packed array")
        if src.degree_value != 1:
            raise VerifyException("sum_slots rotates: it needs a degree-1 ciphertext")
        return src.with_(dims=src.dims[:-1], layout=REPLICATED)


def _check_array_axis(src: CtType, axis: int, what: str) -> None:
    if src.layout_name == COEFF and axis != 0:
        raise VerifyException(f"{what}: a coeff array is only summed over its rows (axis 0)")
    if not 0 <= axis < len(src.dims):
        raise VerifyException(f"{what}: axis {axis} out of range for {format_shape(src.dims)}")
    if src.layout_name in SLOT_LAYOUTS and axis == len(src.dims) - 1:
        raise VerifyException(f"{what}: axis {axis} is the packed axis; use ckks.sum_slots")


@irdl_op_definition
class ReduceOp(_CtUnary):
    """Binary-tree sum of the ciphertexts along an array axis (no level, no key switch)."""

    name = "ckks.reduce"

    axis = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, axis: int):
        super().__init__(operand, {"axis": IntegerAttr(axis, i64)})

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def infer(self) -> CtType:
        src = ct_type(self.input)
        _check_array_axis(src, self.axis_value, self.name)
        dims = tuple(d for i, d in enumerate(src.dims) if i != self.axis_value)
        layout = src.layout_name if dims or src.layout_name == REPLICATED else REPLICATED
        return src.with_(dims=dims, layout=layout)


@irdl_op_definition
class DotOp(CkksOp):
    """Fused sum_i a_i * b_i along an array axis: tensor products summed before any rescale."""

    name = "ckks.dot"

    lhs = operand_def(CtType)
    rhs = operand_def(CtType)
    axis = prop_def(IntegerAttr)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, axis: int):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[ct_type(lhs)],
            properties={"axis": IntegerAttr(axis, i64)},
        )
        _initial_type(self)

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _check_same_array(self.name, a, b)
        _check_not_coeff(self.name, a, b)
        _check_complex_product(self.name, self.lhs, self.rhs)
        _check_array_axis(a, self.axis_value, self.name)
        dims = tuple(d for i, d in enumerate(a.dims) if i != self.axis_value)
        return a.with_(
            dims=dims, log_scale=a.scale_bits + b.scale_bits, degree=a.degree_value + b.degree_value
        )


@irdl_op_definition
class BroadcastOp(_CtUnary):
    """Array-level broadcast (no HE work: ciphertexts are reused). Operand axis i becomes result
    axis dims[i]. A replicated array may become packed when the packed (last) result axis is
    new or stretched: a ciphertext holding one value in every slot is a valid packed row. It
    may become complex the same way: then each ciphertext is multiplied by 1 + i (a monomial,
    no level) so both parts hold the value, unless `real_factor` marks it as only a factor of a
    product with a complex array (the ciphertexts as they are: the value, imaginary 0)."""

    name = "ckks.broadcast"

    dims = prop_def(DenseArrayBase[IntegerType])
    shape = prop_def(ArrayAttr[IntAttr | StringAttr])
    out_layout = prop_def(StringAttr)
    real_factor = opt_prop_def(UnitAttr)

    def __init__(
        self,
        operand: SSAValue,
        shape: Sequence[Dim],
        dims: Sequence[int],
        layout: str,
        real_factor: bool = False,
    ):
        props: dict[str, Attribute] = {
            "dims": DenseArrayBase.from_list(i64, list(dims)),
            "shape": _shape_attr(shape),
            "out_layout": StringAttr(layout),
        }
        if real_factor:
            props["real_factor"] = UnitAttr()
        super().__init__(operand, props)

    @property
    def dims_tuple(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.dims.get_values())

    @property
    def shape_tuple(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    def infer(self) -> CtType:
        src = ct_type(self.input)
        dims, shape, layout = self.dims_tuple, self.shape_tuple, self.out_layout.data
        if len(dims) != len(src.dims) or list(dims) != sorted(set(dims)):
            raise VerifyException("broadcast dims must map every operand axis, increasing")
        if any(d >= len(shape) for d in dims):
            raise VerifyException("broadcast dims out of range")
        for i, d in enumerate(dims):
            if src.dims[i] != shape[d] and src.dims[i] != 1:
                raise VerifyException(f"operand axis {i} cannot broadcast to result axis {d}")
        last = len(shape) - 1
        if src.layout_name in SLOT_LAYOUTS:
            if (
                layout != src.layout_name
                or not dims
                or dims[-1] != last
                or src.dims[-1] != shape[last]
            ):
                raise VerifyException(
                    f"a {src.layout_name} array broadcasts only along its leading axes"
                )
        elif layout in SLOT_LAYOUTS:
            fed = last in dims and src.dims[dims.index(last)] == shape[last]
            if fed:
                raise VerifyException(
                    "a replicated array becomes packed only along a new or stretched last axis"
                )
            # real_factor: the replicated ciphertexts as they are (v + 0i in every slot), only
            # a factor of a product; otherwise v in both parts (times 1 + i, no level).
            for use in self.result.uses if self.real_factor is not None else ():
                if not isinstance(use.operation, MulOp | DotOp):
                    raise VerifyException("a real_factor broadcast is only a factor of mul/dot")
        if self.real_factor is not None and (layout != COMPLEX or src.layout_name != REPLICATED):
            raise VerifyException("real_factor: a replicated array broadcast to complex")
        return src.with_(dims=shape, layout=layout)


@irdl_op_definition
class UnpackComplexOp(_CtUnary):
    """Complex layout -> packed: with z the slots of a ciphertext and z* their conjugates (a
    Galois key switch), z + z* holds 2 Re z and -i (z - z*) holds 2 Im z (-i is a monomial
    multiply, no level); read at twice the scale they are Re z and Im z, the column blocks
    2j and 2j + 1. A degree > 1 operand is relinearized first. No level; scale + 1 bit."""

    name = "ckks.unpack_complex"

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.layout_name != COMPLEX:
            raise VerifyException("unpack_complex needs a complex array")
        return src.with_(layout=PACKED, log_scale=src.scale_bits + 1.0, degree=1)


@irdl_op_definition
class TransposeOp(_CtUnary):
    """Swap the axes of a rank-2 replicated array (relabelling ciphertexts, no HE work)."""

    name = "ckks.transpose"

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.layout_name != REPLICATED or len(src.dims) != 2:
            raise VerifyException("transpose needs a rank-2 replicated array")
        return src.with_(dims=tuple(reversed(src.dims)))


class _WithPublic(CkksOp, ABC):
    input = operand_def(CtType)
    value = operand_def(PublicType)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $value attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())


@irdl_op_definition
class MulConstOp(_WithPublic):
    """Multiply by a public scalar. `const_scale` is log2 of the scale the constant is encoded
    at: 0 for an integer constant (multiplied exactly, no level), > 0 for a real constant
    (rounded to const * 2^const_scale, so the scale grows and a rescale follows)."""

    name = "ckks.mul_const"

    const_scale = prop_def(FloatAttr)

    def __init__(self, operand: SSAValue, value: SSAValue, const_scale_bits: float):
        super().__init__(
            operands=[operand, value],
            result_types=[ct_type(operand)],
            properties={"const_scale": FloatAttr(float(const_scale_bits), f64)},
        )
        _initial_type(self)

    @property
    def const_scale_bits(self) -> float:
        return float(self.const_scale.value.data)

    @property
    def is_integer(self) -> bool:
        return self.const_scale_bits == 0.0

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if self.const_scale_bits < 0:
            raise VerifyException("const_scale must be >= 0")
        return src.with_(log_scale=src.scale_bits + self.const_scale_bits)


@irdl_op_definition
class AddConstOp(_WithPublic):
    """Add a public scalar (encoded at the ciphertext's scale; no level)."""

    name = "ckks.add_const"

    def __init__(self, operand: SSAValue, value: SSAValue):
        super().__init__(operands=[operand, value], result_types=[ct_type(operand)])

    def infer(self) -> CtType:
        return ct_type(self.input)


class _WithPlain(CkksOp, ABC):
    input = operand_def(CtType)
    plain = operand_def(PtType)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $plain attr-dict `:` type($input) `,` type($plain) `->` type($result)"
    )
    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, plain: SSAValue):
        super().__init__(operands=[operand, plain], result_types=[ct_type(operand)])
        _initial_type(self)


@irdl_op_definition
class MulPlainOp(_WithPlain):
    name = "ckks.mul_plain"

    def infer(self) -> CtType:
        a, p = ct_type(self.input), pt_type(self.plain)
        _check_same_array(self.name, a, p)
        return a.with_(log_scale=a.scale_bits + p.scale_bits)


@irdl_op_definition
class AddPlainOp(_WithPlain):
    name = "ckks.add_plain"

    def infer(self) -> CtType:
        a, p = ct_type(self.input), pt_type(self.plain)
        _check_same_array(self.name, a, p)
        _check_same_scale(self.name, a, p)
        return a


class _Named(CkksOp, ABC):
    sym = prop_def(StringAttr)

    @property
    def sym_value(self) -> str:
        return self.sym.data


@irdl_op_definition
class EncodeOp(_Named):
    """Encode input `sym` (from its owner's data) into a plaintext array of the given layout,
    level and scale. `domain` is the input's declared value domain (drives range analysis).

    Owner-side values (passes/owner_side.py) carry `expr`, the owner expression
    (compiler/owner_expr.py) over the owner's source inputs that the encrypting owner
    evaluates per element. A `coeff` encode carries `digits` (one owner expression or source
    name per packed count), `scalar_digits` (1 for a count with one value per row, held in
    coefficient 0 only), `radices` (R_k) and `group` (columns per coefficient)."""

    name = "ckks.encode"

    domain = opt_prop_def(IntervalAttr | SetAttr)
    expr = opt_prop_def(StringAttr)
    digits = opt_prop_def(ArrayAttr[StringAttr])
    scalar_digits = opt_prop_def(DenseArrayBase)
    radices = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)
    result = result_def(PtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict `:` type($result)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), Pure()))

    def __init__(self, sym: str, ty: PtType, domain: Domain | None, expr: str | None = None):
        props: dict[str, Attribute] = {"sym": StringAttr(sym)}
        if domain is not None:
            props["domain"] = domain_attr(domain)
        if expr is not None:
            props["expr"] = StringAttr(expr)
        super().__init__(result_types=[ty], properties=props)

    @staticmethod
    def packed(
        sym: str, ty: PtType, digits: Sequence[str], scalar: Sequence[bool], radices: Sequence[int]
    ) -> EncodeOp:
        op = EncodeOp(sym, ty, None)
        op.properties["digits"] = ArrayAttr([StringAttr(d) for d in digits])
        op.properties["scalar_digits"] = _int_array([int(x) for x in scalar])
        op.properties["radices"] = _int_array(radices)
        op.properties["group"] = IntegerAttr(1, i64)
        return op

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
            () if self.scalar_digits is None else tuple(bool(x) for x in _ints(self.scalar_digits))
        )

    @property
    def radix_values(self) -> tuple[int, ...]:
        return () if self.radices is None else _ints(self.radices)

    @property
    def group_value(self) -> int:
        return 1 if self.group is None else self.group.value.data

    def set_group(self, group: int) -> None:
        self.properties["group"] = IntegerAttr(group, i64)

    def sources(self) -> list[str]:
        """The owner's inputs this encode reads (the `--input NAME` the encrypt role needs)."""
        from compiler.owner_expr import parse

        texts = self.digit_exprs or ((self.expr_value,) if self.expr_value else ())
        if not texts:
            return [self.sym_value]
        out: list[str] = []
        for t in texts:
            for name in parse(t).sources():
                if name not in out:
                    out.append(name)
        return out

    def verify_(self) -> None:
        ty = pt_type(self.result)
        if ty.layout_name == COEFF:
            n = len(self.digit_exprs)
            if not n or len(self.scalar_digit_flags) != n or len(self.radix_values) != n:
                raise VerifyException(
                    "a coeff encode needs digits, scalar_digits and radices of one length"
                )
            if any(r < 2 for r in self.radix_values) or self.group_value < 1:
                raise VerifyException("coeff radices must be >= 2 and group >= 1")
            if len(ty.dims) != 2:
                raise VerifyException("a coeff array has shape [rows, columns]")
        elif self.digits is not None:
            raise VerifyException("digits are only for coeff encodes")


@irdl_op_definition
class EncryptOp(CkksOp):
    """Public-key encryption by the data owner: a fresh degree-1 ciphertext array."""

    name = "ckks.encrypt"

    input = operand_def(PtType)
    party = prop_def(StringAttr)
    result = result_def(CtType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), Pure()))

    def __init__(self, plain: SSAValue):
        p = pt_type(plain)
        super().__init__(
            operands=[plain],
            result_types=[CtType.get(p.dims, p.layout_name, p.level_value, p.scale_bits, 1)],
            properties={"party": StringAttr("data_owner")},
        )

    def infer(self) -> CtType:
        if self.party.data != "data_owner":
            raise VerifyException("ckks.encrypt is done by the data owner (party = data_owner)")
        p = pt_type(self.input)
        return CtType.get(p.dims, p.layout_name, p.level_value, p.scale_bits, 1)

    def source(self) -> EncodeOp:
        owner = self.input.owner
        if not isinstance(owner, EncodeOp):
            raise VerifyException("ckks.encrypt encrypts the result of a ckks.encode")
        return owner


@irdl_op_definition
class DecryptOp(_Named):
    """Decryption of a revealed value by the coordinator (the only holder of the secret key).
    With `factor`, the coordinator multiplies the decoded value by that public scalar: a last
    multiplication by a public constant reveals nothing new, and done in the clear it does not
    make the value (and so the output modulus) any larger. On a `coeff` array, `digit` names
    the packed count to read (exactly: the decoded integer's mixed-radix digit); a scalar
    digit (`scalar_digit`) is read from coefficient 0 and revealed as a scalar."""

    name = "ckks.decrypt"

    input = operand_def(CtType)
    factor = opt_operand_def(PublicType)
    party = prop_def(StringAttr)
    digit = opt_prop_def(IntegerAttr)
    scalar_digit = opt_prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym $input (`times` $factor^)? attr-dict `:` type($input)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(
        self,
        sym: str,
        operand: SSAValue,
        factor: SSAValue | None = None,
        digit: int | None = None,
        scalar: bool = False,
    ):
        props: dict[str, Attribute] = {
            "sym": StringAttr(sym),
            "party": StringAttr("coordinator"),
        }
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
            raise VerifyException("ckks.decrypt is done by the coordinator (party = coordinator)")
        coeff = ct_type(self.input).layout_name == COEFF
        if coeff != (self.digit is not None):
            raise VerifyException("ckks.decrypt reads a digit exactly when its input is coeff")


@irdl_op_definition
class SizeOp(_Named):
    name = "ckks.size"

    result = result_def(PublicType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"
    traits = traits_def(Pure())

    def __init__(self, sym: str):
        super().__init__(result_types=[PublicType()], properties={"sym": StringAttr(sym)})


@irdl_op_definition
class ConstantOp(CkksOp):
    name = "ckks.constant"

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


@irdl_op_definition
class PublicArithOp(CkksOp):
    """Arithmetic on public scalars (every party can compute it in the clear)."""

    name = "ckks.public_arith"

    lhs = operand_def(PublicType)
    rhs = operand_def(PublicType)
    kind = prop_def(StringAttr)
    result = result_def(PublicType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind $lhs `,` $rhs attr-dict"
    traits = traits_def(Pure())

    def __init__(self, kind: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            operands=[lhs, rhs], result_types=[PublicType()], properties={"kind": StringAttr(kind)}
        )

    def infer(self) -> None:
        if self.kind.data not in PUBLIC_KINDS:
            raise VerifyException(f"public_arith kind must be one of {PUBLIC_KINDS}")


@irdl_op_definition
class ParamOp(_Named):
    name = "ckks.param"

    bound = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, bound: int):
        super().__init__(properties={"sym": StringAttr(sym), "bound": IntegerAttr(bound, i64)})

    @property
    def bound_value(self) -> int:
        return self.bound.value.data


@irdl_op_definition
class SourceOp(_Named):
    """Declares a data owner's input that owner-side values read (`y` in `(mul y S)`): its
    shape and declared domain, which the encrypting owner's files are checked against."""

    name = "ckks.source"

    shape = prop_def(ArrayAttr[IntAttr | StringAttr])
    domain = prop_def(IntervalAttr | SetAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, dims: Sequence[Dim], domain: Domain):
        super().__init__(
            properties={
                "sym": StringAttr(sym),
                "shape": _shape_attr(dims),
                "domain": domain_attr(domain),
            }
        )

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def domain_value(self) -> Domain:
        return self.domain.to_domain()


@dataclass(frozen=True)
class Parameters:
    """The scheme parameters a program runs under (set by parameter-selection).

    `moduli` are the rescale primes q_1..q_L (q_l is dropped by a rescale at level l);
    `output_moduli` the primes of Q_0; `special_moduli` the key-switching primes P;
    `key_level` the highest level at which a key is switched (level-assignment), None for all
    levels: the evaluation keys are generated over Q_key_level·P only."""

    log_n: int
    output_moduli: tuple[int, ...]
    moduli: tuple[int, ...]
    special_moduli: tuple[int, ...]
    dnum: int
    security_bits: int
    insecure: bool
    key_level: int | None = None

    @property
    def slots(self) -> int:
        return 1 << (self.log_n - 1)

    def modulus_bits(self, level: int) -> float:
        """log2 Q_level."""
        primes = self.output_moduli + self.moduli[:level]
        return sum(math.log2(q) for q in primes)

    @property
    def log_qp(self) -> float:
        """log2 of the largest modulus of any RLWE sample under the secret the coordinator
        publishes: the public key (Q_L) and the evaluation keys (Q_key_level·P). The HE
        Standard bounds the modulus of each sample; the largest decides."""
        top = len(self.moduli)
        if not self.special_moduli:
            return self.modulus_bits(top)
        level = top if self.key_level is None else min(self.key_level, top)
        keys = self.modulus_bits(level) + sum(math.log2(p) for p in self.special_moduli)
        return max(self.modulus_bits(top), keys)


def _int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _ints(value: Attribute) -> tuple[int, ...]:
    assert isinstance(value, DenseArrayBase)
    return tuple(int(v) for v in value.get_values())


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A whole CKKS program: params, encodes/encryptions, the server computation, decrypts.
    Parameters (once chosen) are attributes: `log_n`, `output_moduli`, `moduli`,
    `special_moduli`, `dnum`, `security_bits`, `insecure`, `rotation_keys`."""

    name = "ckks.program"

    sym_name = prop_def(StringAttr)
    body = region_def()

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name $body attr-dict"
    traits = traits_def(NoTerminator())

    def __init__(self, sym_name: str, body: Region | None = None):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name)}, regions=[body or Region(Block())]
        )

    @property
    def block(self) -> Block:
        if not self.body.blocks:
            self.body.add_block(Block())
        return self.body.blocks[0]

    def ops(self) -> Iterator[Operation]:
        return iter(list(self.block.ops))

    def params(self) -> dict[str, int]:
        return {op.sym_value: op.bound_value for op in self.block.ops if isinstance(op, ParamOp)}

    def decrypts(self) -> list[DecryptOp]:
        return [op for op in self.block.ops if isinstance(op, DecryptOp)]

    def encrypts(self) -> list[EncryptOp]:
        return [op for op in self.block.ops if isinstance(op, EncryptOp)]

    def parameters(self) -> Parameters | None:
        attrs = self.attributes
        if "log_n" not in attrs:
            return None

        def ints(key: str) -> tuple[int, ...]:
            return _ints(attrs[key])

        def one(key: str) -> int:
            value = attrs[key]
            assert isinstance(value, IntegerAttr)
            return value.value.data

        insecure = attrs.get("insecure")
        key_level = attrs.get("key_level")
        return Parameters(
            log_n=one("log_n"),
            output_moduli=ints("output_moduli"),
            moduli=ints("moduli"),
            special_moduli=ints("special_moduli"),
            dnum=one("dnum"),
            security_bits=one("security_bits"),
            insecure=isinstance(insecure, IntegerAttr) and insecure.value.data != 0,
            key_level=key_level.value.data if isinstance(key_level, IntegerAttr) else None,
        )

    def set_parameters(self, p: Parameters) -> None:
        self.attributes["log_n"] = IntegerAttr(p.log_n, i64)
        self.attributes["output_moduli"] = _int_array(p.output_moduli)
        self.attributes["moduli"] = _int_array(p.moduli)
        self.attributes["special_moduli"] = _int_array(p.special_moduli)
        self.attributes["dnum"] = IntegerAttr(p.dnum, i64)
        self.attributes["security_bits"] = IntegerAttr(p.security_bits, i64)
        self.attributes["insecure"] = BoolAttr.from_bool(p.insecure)

    def rotation_keys(self) -> tuple[int, ...] | None:
        value = self.attributes.get("rotation_keys")
        return None if value is None else _ints(value)

    def set_rotation_keys(self, offsets: Sequence[int]) -> None:
        self.attributes["rotation_keys"] = _int_array(sorted(set(offsets)))

    def verify_(self) -> None:
        params = self.params()
        for op in self.block.ops:
            for value in [*op.operands, *op.results]:
                ty = value.type
                if isinstance(ty, CtType | PtType):
                    for d in ty.dims:
                        if isinstance(d, str) and d not in params:
                            raise VerifyException(f"dimension {d} is not a declared ckks.param")
            if isinstance(op, SizeOp) and op.sym_value not in params:
                raise VerifyException(f"ckks.size of undeclared parameter {op.sym_value}")


Ckks = Dialect(
    "ckks",
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
        MulPlainOp,
        AddPlainOp,
        MulConstOp,
        AddConstOp,
        RelinearizeOp,
        RescaleOp,
        LevelDownOp,
        RotateOp,
        SumSlotsOp,
        ReduceOp,
        DotOp,
        BroadcastOp,
        UnpackComplexOp,
        TransposeOp,
    ],
    [CtType, PtType, PublicType],
)

# The ops that need a key switch (evaluation keys) when executed.
KEY_SWITCH_OPS: tuple[type[Operation], ...] = (
    RelinearizeOp,
    RotateOp,
    SumSlotsOp,
    UnpackComplexOp,
)
# Everything that is not a ciphertext computation: public scalars and declarations.
PUBLIC_OPS: tuple[type[Operation], ...] = (ParamOp, SourceOp, SizeOp, ConstantOp, PublicArithOp)
