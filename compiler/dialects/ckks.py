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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    FloatData,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
)
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_attr_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, Pure
from xdsl.utils.exceptions import VerifyException

from compiler.dialects import he
from compiler.types import Dim

PACKED = "packed"
REPLICATED = "replicated"
COMPLEX = "complex"
COEFF = "coeff"
LAYOUTS = (PACKED, REPLICATED, COMPLEX, COEFF)
SLOT_LAYOUTS = (PACKED, COMPLEX, COEFF)  # the last axis lives in the slots (or coefficients)


def _format_log_scale(value: float) -> str:
    text = repr(float(value))
    return text if "." in text or "e" in text else f"{text}.0"


def _verify_shape(dims: tuple[Dim, ...], layout: str) -> None:
    grid = he.grid_of(layout)
    if grid is not None:
        grid.check(len(dims))
    elif he.diagonal_of(layout) is not None or he.cyclic_of(layout) is not None:
        he.verify_shape(dims, layout)
    elif layout not in LAYOUTS:
        raise VerifyException(f"layout must be one of {LAYOUTS} or a grid, got {layout!r}")
    if len(dims) > 3:
        raise VerifyException(f"ciphertext arrays have rank at most 3, got {len(dims)}")
    if layout in SLOT_LAYOUTS and not dims:
        raise VerifyException(f"a {layout} array needs at least one axis (the packed one)")


@irdl_attr_definition
class ScaleAttr(ParametrizedAttribute):
    """`#ckks.scale<2:102, 2251799814045697:-1>`: an EXACT scale, the product of powers of
    distinct primes (2 and the chain's primes; a nominal prime of r bits is 2^r until
    parameter-selection fixes it). Every scale the compiler and the runtime track is such a
    product: encodings at 2^Delta, products multiply, a rescale divides by its prime, a constant
    is encoded at a ratio of them. By unique factorization two scales are equal exactly when
    their factors are, so equality is decided on the factors, never on rounded logarithms (the
    runtime compares its doubles to 1e-9 relative: products of the same factors in another
    order agree to ~1e-15, different factors differ by far more). `#ckks.scale<>` is 1 (an
    integer constant, multiplied exactly)."""

    name = "ckks.scale"

    bases: ArrayAttr[IntAttr]
    exponents: ArrayAttr[IntAttr]

    @staticmethod
    def of(factors: Mapping[int, int]) -> ScaleAttr:
        items = sorted((b, e) for b, e in factors.items() if e != 0)
        return ScaleAttr(
            ArrayAttr([IntAttr(b) for b, _ in items]), ArrayAttr([IntAttr(e) for _, e in items])
        )

    @staticmethod
    def one() -> ScaleAttr:
        return ScaleAttr.of({})

    @staticmethod
    def pow2(bits: float) -> ScaleAttr:
        """2^bits for a whole number of bits (nominal scales are whole bits)."""
        if bits != math.floor(bits):
            raise VerifyException(f"a nominal scale is a whole number of bits, got 2^{bits}")
        return ScaleAttr.of({2: int(bits)})

    @staticmethod
    def coerce(scale: ScaleAttr | float) -> ScaleAttr:
        return scale if isinstance(scale, ScaleAttr) else ScaleAttr.pow2(scale)

    @property
    def factors(self) -> dict[int, int]:
        return {b.data: e.data for b, e in zip(self.bases.data, self.exponents.data, strict=True)}

    def times(self, other: ScaleAttr) -> ScaleAttr:
        out = self.factors
        for b, e in other.factors.items():
            out[b] = out.get(b, 0) + e
        return ScaleAttr.of(out)

    def over(self, other: ScaleAttr) -> ScaleAttr:
        return self.times(other.inverse())

    def inverse(self) -> ScaleAttr:
        return ScaleAttr.of({b: -e for b, e in self.factors.items()})

    def power(self, k: int) -> ScaleAttr:
        return ScaleAttr.of({b: k * e for b, e in self.factors.items()})

    @property
    def bits(self) -> float:
        """log2 of the scale (for display and for estimates; never for equality)."""
        return float(sum(e * math.log2(b) for b, e in self.factors.items()))

    @property
    def fraction(self) -> Fraction:
        """The exact value (a rational: integers can be thousands of bits, never a float)."""
        num, den = 1, 1
        for b, e in self.factors.items():
            if e > 0:
                num *= b**e
            else:
                den *= b ** (-e)
        return Fraction(num, den)

    @property
    def pow2_bits(self) -> int | None:
        """k when the scale is 2^k, else None."""
        factors = self.factors
        if not factors:
            return 0
        if set(factors) == {2}:
            return factors[2]
        return None

    @property
    def is_one(self) -> bool:
        return not self.bases.data

    @property
    def size_bits(self) -> int:
        """About the bits of the integers `fraction` forms (numerator and denominator): an
        exponent doubles at every level (S_(l-1) = S_l^2 / q_l), so a scale near 2^76 at
        depth 17 under composite scaling is 2^2490368 over primes to powers near 2^16."""
        return sum(abs(e) * b.bit_length() for b, e in self.factors.items())

    def bracket(self, precision: int) -> tuple[Fraction, Fraction]:
        """lo <= s <= hi, rationals of about `precision`-bit integers (times a power of two),
        hi / lo - 1 below about 2·(sum of |exponents|)·2^-precision: each power is formed by
        squaring with its mantissa truncated down (lo) or up (hi) to `precision` bits, so the
        bracket holds however large the exponents are, at a cost that grows with their log."""
        num = ((1, 0), (1, 0))  # (mantissa, exponent of 2) of the lower and the upper bound
        den = ((1, 0), (1, 0))
        for b, e in self.factors.items():
            lo, hi = _pow_bracket(b, abs(e), precision)
            if e > 0:
                num = (_mul(num[0], lo, precision, up=False), _mul(num[1], hi, precision, up=True))
            else:
                den = (_mul(den[0], lo, precision, up=False), _mul(den[1], hi, precision, up=True))
        return _ratio(num[0], den[1]), _ratio(num[1], den[0])

    def _encoded(self, c: float) -> tuple[int, Fraction, Fraction, Fraction] | None:
        """(round(c·s), lo, hi, c) with lo <= s <= hi when round(c·s) is the same integer over
        the whole bracket; None when it is not even at the highest precision tried."""
        exact_c = Fraction(c)
        magnitude = max(0, math.ceil(self.bits + math.log2(abs(c)))) if c else 0
        exponents = sum(abs(e) for e in self.factors.values())
        precision = magnitude + exponents.bit_length() + _GUARD_BITS
        for _ in range(_BRACKET_TRIES):
            lo, hi = self.bracket(precision)
            a, b = sorted((exact_c * lo, exact_c * hi))
            n = round(a)
            if round(b) == n:  # round is monotone: every c·s in [a, b] rounds to n
                return n, lo, hi, exact_c
            precision *= 2
        return None

    def rounding_error(self, c: float) -> float:
        """|round(c·s)/s - c|: the error of the constant c encoded as an integer at this scale
        (0 when c·s is an integer), computed exactly (no float overflow at any depth) when
        the exact integers are small (`EXACT_SCALE_BITS`), else bounded above on a bracket of s
        within ~2^-96 of c·s's units: the bound exceeds the exact error by about that."""
        if self.size_bits <= EXACT_SCALE_BITS:
            exact = Fraction(c) * self.fraction
            return float(abs(Fraction(round(exact)) - exact) / self.fraction)
        if c == 0.0:
            return 0.0
        encoded = self._encoded(c)
        if encoded is None:
            return float(Fraction(1, 2) / self.bracket(_GUARD_BITS)[0])  # |round(x) - x| <= 1/2
        n, lo, hi, exact_c = encoded
        # |n - c·s| is convex in s, so its largest value on [lo, hi] is at an end; 1/s <= 1/lo.
        worst = max(abs(n - exact_c * lo), abs(n - exact_c * hi))
        return float(min(worst, Fraction(1, 2)) / lo)

    def rounded(self, c: float) -> float:
        """round(c·s)/s: the constant c as the runtime encodes it (exact integers when small,
        else the rounding decided on a bracket of s, as `rounding_error`)."""
        if self.size_bits <= EXACT_SCALE_BITS:
            exact = Fraction(c) * self.fraction
            return float(Fraction(round(exact)) / self.fraction)
        encoded = self._encoded(c) if c != 0.0 else None
        if encoded is None:
            return c
        n, lo, hi, _ = encoded
        return float(n / ((lo + hi) / 2))

    def verify(self) -> None:
        bases = [b.data for b in self.bases.data]
        if len(bases) != len(self.exponents.data):
            raise VerifyException("a scale has one exponent per base")
        if any(b < 2 for b in bases) or bases != sorted(set(bases)):
            raise VerifyException(f"scale bases must be distinct primes in order, got {bases}")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{_factors_text(self)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            factors = _parse_factors(parser)
        scale = ScaleAttr.of(factors)
        return [scale.bases, scale.exponents]


# Scales whose exact integers (`ScaleAttr.size_bits`) stay below this are computed on with
# Fractions; larger ones (Fraction's gcd on million-bit integers took 14 s per constant at
# depth 17 and did not finish at depth 25) on a bracket (`ScaleAttr.bracket`).
EXACT_SCALE_BITS = 1 << 14
# Bits of a bracket beyond c·s's units and the truncations' growth; doubled when a rounding
# is still undecided (c·s within the bracket's width of a half-integer), up to 4 times.
_GUARD_BITS = 96
_BRACKET_TRIES = 4


def _truncate(m: int, k: int, precision: int, up: bool) -> tuple[int, int]:
    """m·2^k with m cut to `precision` bits, rounded down or up (m > 0)."""
    shift = m.bit_length() - precision
    if shift <= 0:
        return m, k
    return (-((-m) >> shift) if up else m >> shift), k + shift


def _mul(a: tuple[int, int], b: tuple[int, int], precision: int, up: bool) -> tuple[int, int]:
    return _truncate(a[0] * b[0], a[1] + b[1], precision, up)


def _pow_bracket(b: int, e: int, precision: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Lower and upper bounds of b^e (e >= 0), each as (mantissa, exponent of 2)."""
    lo = hi = (1, 0)
    base_lo, base_hi = _truncate(b, 0, precision, up=False), _truncate(b, 0, precision, up=True)
    while e:
        if e & 1:
            lo, hi = _mul(lo, base_lo, precision, False), _mul(hi, base_hi, precision, True)
        e >>= 1
        if e:
            base_lo = _mul(base_lo, base_lo, precision, False)
            base_hi = _mul(base_hi, base_hi, precision, True)
    return lo, hi


def _ratio(num: tuple[int, int], den: tuple[int, int]) -> Fraction:
    k = num[1] - den[1]
    return Fraction(num[0] << max(k, 0), den[0] << max(-k, 0))


def _factors_text(scale: ScaleAttr) -> str:
    return ", ".join(f"{b}:{e}" for b, e in scale.factors.items())


def _parse_factors(parser: AttrParser) -> dict[int, int]:
    factors: dict[int, int] = {}
    while True:
        base = parser.parse_optional_integer(allow_negative=False, allow_boolean=False)
        if base is None:
            break
        parser.parse_punctuation(":")
        factors[base] = factors.get(base, 0) + parser.parse_integer(
            allow_negative=True, allow_boolean=False
        )
        if parser.parse_optional_punctuation(",") is None:
            break
    return factors


def _print_scale(scale: ScaleAttr) -> str:
    """In a type: `51.0` for 2^51 (log2, as scales always read), else log2 and the exact
    factors: `50.9999999992862 exact<2:102, 2251799814045697:-1>`."""
    k = scale.pow2_bits
    if k is not None:
        return f"{float(k)!r}"
    return f"{_format_log_scale(scale.bits)} exact<{_factors_text(scale)}>"


def _parse_scale(parser: AttrParser) -> ScaleAttr:
    bits = parser.parse_number()
    if parser.parse_optional_keyword("exact") is not None:
        with parser.in_angle_brackets():
            exact = ScaleAttr.of(_parse_factors(parser))
        if abs(exact.bits - float(bits)) > 1e-6 * max(1.0, abs(float(bits))):
            parser.raise_error(f"scale 2^{bits} does not match its exact factors (2^{exact.bits})")
        return exact
    if float(bits) != math.floor(float(bits)):
        parser.raise_error(
            f"a scale is 2^k for a whole k or `log2 exact<base:exponent, ...>`, got 2^{bits}"
        )
    return ScaleAttr.pow2(float(bits))


@irdl_attr_definition
class CtType(he.CiphertextType):
    """`!ckks.tensor<[N, M], packed, ct<level, scale, degree>>`: a ciphertext array. The
    scale is exact (`ScaleAttr`), printed as log2 (`51.0` for 2^51) with its factors when it is
    not a power of two."""

    name = "ckks.tensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr
    scale: ScaleAttr
    degree: IntAttr

    @staticmethod
    def get(
        dims: Sequence[Dim], layout: str, level: int, scale: ScaleAttr | float, degree: int
    ) -> CtType:
        return CtType(
            he.shape_attr(dims),
            StringAttr(layout),
            IntAttr(level),
            ScaleAttr.coerce(scale),
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
        return self.scale.bits

    @property
    def degree_value(self) -> int:
        return self.degree.data

    def with_(
        self,
        *,
        dims: Sequence[Dim] | None = None,
        layout: str | None = None,
        level: int | None = None,
        scale: ScaleAttr | float | None = None,
        degree: int | None = None,
    ) -> CtType:
        return CtType.get(
            self.dims if dims is None else dims,
            self.layout_name if layout is None else layout,
            self.level_value if level is None else level,
            self.scale if scale is None else scale,
            self.degree_value if degree is None else degree,
        )

    def verify(self) -> None:
        _verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")
        if self.degree_value < 1:
            raise VerifyException(f"degree must be >= 1, got {self.degree_value}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(
            f"<[{dims}], {self.layout_name}, ct<{self.level_value}, "
            f"{_print_scale(self.scale)}, {self.degree_value}>>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = he.parse_dims(parser)
            parser.parse_punctuation(",")
            layout = he.parse_layout(parser, LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("ct")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
                parser.parse_punctuation(",")
                scale = _parse_scale(parser)
                parser.parse_punctuation(",")
                degree = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [ArrayAttr(dims), StringAttr(layout), IntAttr(level), scale, IntAttr(degree)]


@irdl_attr_definition
class PtType(he.PlaintextType):
    """`!ckks.ptensor<[M], packed, pt<level, scale>>`: an encoded public array (exact scale,
    printed as in `CtType`)."""

    name = "ckks.ptensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    layout: StringAttr
    level: IntAttr
    scale: ScaleAttr

    @staticmethod
    def get(dims: Sequence[Dim], layout: str, level: int, scale: ScaleAttr | float) -> PtType:
        return PtType(
            he.shape_attr(dims), StringAttr(layout), IntAttr(level), ScaleAttr.coerce(scale)
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
        return self.scale.bits

    def verify(self) -> None:
        _verify_shape(self.dims, self.layout_name)
        if self.level_value < 0:
            raise VerifyException(f"level must be >= 0, got {self.level_value}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(
            f"<[{dims}], {self.layout_name}, pt<{self.level_value}, {_print_scale(self.scale)}>>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            dims = he.parse_dims(parser)
            parser.parse_punctuation(",")
            layout = he.parse_layout(parser, LAYOUTS)
            parser.parse_punctuation(",")
            parser.parse_keyword("pt")
            with parser.in_angle_brackets():
                level = parser.parse_integer(allow_negative=False, allow_boolean=False)
                parser.parse_punctuation(",")
                scale = _parse_scale(parser)
        return [ArrayAttr(dims), StringAttr(layout), IntAttr(level), scale]


# Public scalars are the HE layer's `!he.public` (nothing about them is CKKS's).
PublicType = he.PublicType


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


def same_scale(a: ScaleAttr, b: ScaleAttr) -> bool:
    """Exact equality (the runtime's check, which this guarantees: module ScaleAttr)."""
    return a == b


def _check_same_scale(what: str, a: CtType | PtType, b: CtType | PtType) -> None:
    if not same_scale(a.scale, b.scale):
        raise VerifyException(
            f"{what}: operand scales {_print_scale(a.scale)} and {_print_scale(b.scale)} "
            "differ; the scales of added values must be equal (exactly: the runtime checks)"
        )


def is_real_broadcast(value: SSAValue) -> bool:
    """A broadcast of a replicated array: every slot holds one real value."""
    owner = value.owner
    return isinstance(owner, BroadcastOp) and ct_type(owner.input).layout_name == REPLICATED


def is_real_factor(value: SSAValue) -> bool:
    """A complex broadcast marked `real_factor`: a real value in every slot, imaginary 0."""
    owner = value.owner
    return isinstance(owner, BroadcastOp) and owner.real_factor is not None


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
# Ops: the HE layer's rules (compiler/dialects/he.py) under CKKS's names, plus the scale: each
# op's infer takes the rule's result type and sets its scale; rescale, level_down,
# unpack_complex and the plaintext operands are CKKS's own.
# --------------------------------------------------------------------------------------------


class CkksOp(he.HeOp, ABC):
    """A ckks op: its types are ckks types, and result scales compare with a tolerance."""

    def same_type(self, got: Attribute, expected: Attribute) -> bool:
        if isinstance(got, CtType) and isinstance(expected, CtType):
            return (
                got.dims == expected.dims
                and got.layout_name == expected.layout_name
                and got.level_value == expected.level_value
                and got.degree_value == expected.degree_value
                and same_scale(got.scale, expected.scale)
            )
        return got == expected


def retype(op: Operation) -> None:
    """Set the result type of `op` from its operands (after a pass changed an operand type)."""
    he.retype(op)


def _initial_type(op: Operation) -> None:
    """At construction: the inferred result type when the operands allow one; otherwise the
    op keeps its provisional type and the verifier reports the broken rule."""
    with contextlib.suppress(VerifyException):
        retype(op)


def _scaled(t: he.CiphertextType, scale: ScaleAttr) -> CtType:
    assert isinstance(t, CtType)
    return t.with_(scale=scale)


def _named_level_down(what: str, a: CtType | PtType, b: CtType | PtType) -> None:
    if a.level_value != b.level_value:
        raise VerifyException(
            f"{what}: operands are at levels {a.level_value} and {b.level_value}; "
            "insert ckks.level_down"
        )


@irdl_op_definition
class AddOp(he.AddRule, CkksOp):
    name = "ckks.add"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _named_level_down(self.name, a, b)
        t = he.AddRule.infer(self)
        _check_same_scale(self.name, a, b)
        return _scaled(t, a.scale)


@irdl_op_definition
class SubOp(he.SubRule, CkksOp):
    name = "ckks.sub"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _named_level_down(self.name, a, b)
        t = he.SubRule.infer(self)
        _check_same_scale(self.name, a, b)
        return _scaled(t, a.scale)


@irdl_op_definition
class MulOp(he.MulRule, CkksOp):
    """Tensor product without relinearization: degrees add, scales multiply."""

    name = "ckks.mul"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _named_level_down(self.name, a, b)
        t = he.MulRule.infer(self)
        _check_complex_product(self.name, self.lhs, self.rhs)
        return _scaled(t, a.scale.times(b.scale))


@irdl_op_definition
class NegateOp(he.NegateRule, CkksOp):
    name = "ckks.negate"


@irdl_op_definition
class RelinearizeOp(he.RelinearizeRule, CkksOp):
    """Key switch of the degree >= 2 components back to a degree-1 ciphertext."""

    name = "ckks.relinearize"


@irdl_op_definition
class RescaleOp(he.LevelDownRule, CkksOp):
    """Divide by the top prime q_l of the current modulus: level l -> l - 1, scale / q_l.
    `divisor` is q_l as an exact scale: nominal (2^r) until parameter selection fixes the
    primes, the prime itself after."""

    name = "ckks.rescale"

    divisor = prop_def(ScaleAttr)

    def __init__(self, operand: SSAValue, divisor: ScaleAttr | float):
        super().__init__(operand, {"divisor": ScaleAttr.coerce(divisor)})

    @property
    def divisor_bits(self) -> float:
        return self.divisor.bits

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.level_value < 1:
            raise VerifyException("rescale at level 0: the chain has no prime left to drop")
        return _scaled(he.LevelDownRule.infer(self), src.scale.over(self.divisor))


@irdl_op_definition
class LevelDownOp(he.Unary, CkksOp):
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
class RotateOp(he.RotateRule, CkksOp):
    """Rotate the slots of every ciphertext by `offset` (a Galois key switch). Rotations with
    the same `group` and source share one hoisted digit decomposition."""

    name = "ckks.rotate"

    group = opt_prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, offset: int, group: int | None = None):
        props: dict[str, Attribute] = {"offset": IntegerAttr(offset, i64)}
        if group is not None:
            props["group"] = IntegerAttr(group, i64)
        he.Unary.__init__(self, operand, props)


@irdl_op_definition
class SumSlotsOp(he.SumSlotsRule, CkksOp):
    """Sum over the packed axis: add the column blocks, then rotate-and-add log2(slots) times,
    which leaves the total in every slot (a replicated result). Needs degree 1 and zero
    padding slots. `radices` (set by passes/rotation_keys.py): the sum in stages instead,
    radices r_1 .. r_k whose product is the slot count; stage i adds the rotations by
    0, m_i, ..., (r_i - 1) m_i (m_1 = 1, m_{i+1} = m_i r_i) with one hoisted decomposition
    (compiler/analysis/rotations.py). Absent: radix 2 throughout (the rotate-and-add tree)."""

    name = "ckks.sum_slots"

    radices = opt_prop_def(DenseArrayBase[IntegerType])

    @property
    def radix_values(self) -> tuple[int, ...] | None:
        if self.radices is None:
            return None
        return tuple(int(v) for v in self.radices.get_values())

    def set_radices(self, radices: Sequence[int]) -> None:
        self.radices = DenseArrayBase.from_list(i64, list(radices))

    def verify_(self) -> None:
        super().verify_()
        radices = self.radix_values
        if radices is not None and (not radices or any(r < 2 for r in radices)):
            raise VerifyException(f"{self.name}: radices {list(radices)} must each be >= 2")


@irdl_op_definition
class ReduceOp(he.ReduceRule, CkksOp):
    """Binary-tree sum of the ciphertexts along an array axis (no level, no key switch)."""

    name = "ckks.reduce"


@irdl_op_definition
class DotOp(he.DotRule, CkksOp):
    """Fused sum_i a_i * b_i along an array axis: tensor products summed before any rescale."""

    name = "ckks.dot"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _named_level_down(self.name, a, b)
        t = he.DotRule.infer(self)
        _check_complex_product(self.name, self.lhs, self.rhs)
        return _scaled(t, a.scale.times(b.scale))


@irdl_op_definition
class DiagMatvecOp(he.DiagMatvecRule, CkksOp):
    """The diagonal (Halevi-Shoup, baby-step giant-step) matrix-vector product: the products
    are summed before any rescale, so the scale is the product of the operands' scales."""

    name = "ckks.diag_matvec"

    def infer(self) -> CtType:
        a, b = ct_type(self.lhs), ct_type(self.rhs)
        _named_level_down(self.name, a, b)
        t = he.DiagMatvecRule.infer(self)
        return _scaled(t, a.scale.times(b.scale))


@irdl_op_definition
class ConvertOp(he.ConvertRule, CkksOp):
    """A vector's layout conversion (he.ConvertRule): cyclic -> packed relabels a masked
    vector; packed -> cyclic rotates and adds log2(slots / Q) times (scale and level kept)."""

    name = "ckks.convert"

    def replications(self, slots: int) -> tuple[int, ...]:
        """packed -> cyclic<Q>: the rotation offsets (slots - Q 2^t: a rotation by -Q 2^t)."""
        period = he.cyclic_of(self.to_layout)
        if period is None:
            return ()
        out: list[int] = []
        step = period
        while step < slots:
            out.append(slots - step)
            step *= 2
        return tuple(out)


@irdl_op_definition
class BroadcastOp(he.BroadcastRule, CkksOp):
    """Array-level broadcast (no HE work: ciphertexts are reused). Operand axis i becomes result
    axis dims[i]. A replicated array may become packed when the packed (last) result axis is
    new or stretched: a ciphertext holding one value in every slot is a valid packed row. It
    may become complex the same way: then each ciphertext is multiplied by 1 + i (a monomial,
    no level) so both parts hold the value, unless `real_factor` marks it as only a factor of a
    product with a complex array (the ciphertexts as they are: the value, imaginary 0)."""

    name = "ckks.broadcast"

    real_factor = opt_prop_def(UnitAttr)

    def __init__(
        self,
        operand: SSAValue,
        shape: Sequence[Dim],
        dims: Sequence[int],
        layout: str,
        real_factor: bool = False,
    ):
        super().__init__(operand, shape, dims, layout)
        if real_factor:
            self.properties["real_factor"] = UnitAttr()
            _initial_type(self)

    def infer(self) -> CtType:
        t = he.BroadcastRule.infer(self)
        src = ct_type(self.input)
        layout = self.out_layout.data
        if src.layout_name == REPLICATED and layout in SLOT_LAYOUTS:
            # real_factor: the replicated ciphertexts as they are (v + 0i in every slot), only
            # a factor of a product; otherwise v in both parts (times 1 + i, no level).
            for use in self.result.uses if self.real_factor is not None else ():
                if not isinstance(use.operation, MulOp | DotOp):
                    raise VerifyException("a real_factor broadcast is only a factor of mul/dot")
        if self.real_factor is not None and (layout != COMPLEX or src.layout_name != REPLICATED):
            raise VerifyException("real_factor: a replicated array broadcast to complex")
        return _scaled(t, src.scale)


@irdl_op_definition
class UnpackComplexOp(he.Unary, CkksOp):
    """Complex layout -> packed: with z the slots of a ciphertext and z* their conjugates (a
    Galois key switch), z + z* holds 2 Re z and -i (z - z*) holds 2 Im z (-i is a monomial
    multiply, no level); read at twice the scale they are Re z and Im z, the column blocks
    2j and 2j + 1. A degree > 1 operand is relinearized first. No level; scale + 1 bit."""

    name = "ckks.unpack_complex"

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if src.layout_name != COMPLEX:
            raise VerifyException("unpack_complex needs a complex array")
        return src.with_(layout=PACKED, scale=src.scale.times(ScaleAttr.pow2(1)), degree=1)


@irdl_op_definition
class TransposeOp(he.TransposeRule, CkksOp):
    """Swap the axes of a rank-2 replicated array (relabelling ciphertexts, no HE work)."""

    name = "ckks.transpose"


@irdl_op_definition
class GatherOp(he.GatherRule, CkksOp):
    """Pick (and negate where asked) ciphertexts of a replicated array (he.GatherRule)."""

    name = "ckks.gather"


@irdl_op_definition
class MulConstOp(he.WithPublic, CkksOp):
    """Multiply by a public scalar. `const_scale` is the exact scale the constant is encoded
    at: 1 (`#ckks.scale<>`) for an integer constant (multiplied exactly, no level), otherwise
    the constant is rounded to the integer round(const · const_scale), so the scale grows by
    const_scale and a rescale follows. A scale-alignment adjustment chooses const_scale so the
    product's scale equals another operand's exactly (compiler/analysis/scales.py).

    `masked`: the constant multiplies the valid slots of a packed array and its padding slots
    become zero. The plaintext is then the vector const · (1 on the valid slots, 0 on the
    padding), encoded at const_scale (> 1) and rounded per coefficient, so its error is a fresh
    encoding's (compiler/analysis/noise.py)."""

    name = "ckks.mul_const"

    const_scale = prop_def(ScaleAttr)
    masked = opt_prop_def(UnitAttr)

    def __init__(
        self,
        operand: SSAValue,
        value: SSAValue,
        const_scale: ScaleAttr | float,
        masked: bool = False,
    ):
        props: dict[str, Attribute] = {"const_scale": ScaleAttr.coerce(const_scale)}
        if masked:
            props["masked"] = UnitAttr()
        super().__init__(
            operands=[operand, value], result_types=[ct_type(operand)], properties=props
        )
        _initial_type(self)

    @property
    def is_masked(self) -> bool:
        return self.masked is not None

    @property
    def const_scale_bits(self) -> float:
        return self.const_scale.bits

    @property
    def is_integer(self) -> bool:
        return self.const_scale.is_one

    def infer(self) -> CtType:
        src = ct_type(self.input)
        if self.const_scale_bits < 0:
            raise VerifyException("const_scale must be >= 1")
        slot_array = (
            src.layout_name == PACKED
            or he.grid_of(src.layout_name) is not None
            or he.cyclic_of(src.layout_name) is not None
        )
        if self.is_masked and (self.const_scale.is_one or not slot_array):
            raise VerifyException(
                "a masked constant is a plaintext vector: const_scale > 1 and a packed or grid "
                "array"
            )
        return src.with_(scale=src.scale.times(self.const_scale))


@irdl_op_definition
class AddConstOp(he.WithPublic, CkksOp):
    """Add a public scalar (encoded at the ciphertext's scale; no level)."""

    name = "ckks.add_const"

    def __init__(self, operand: SSAValue, value: SSAValue):
        super().__init__(operands=[operand, value], result_types=[ct_type(operand)])


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
        he.check_same_array(self.name, a, p)
        return a.with_(scale=a.scale.times(p.scale))


@irdl_op_definition
class AddPlainOp(_WithPlain):
    name = "ckks.add_plain"

    def infer(self) -> CtType:
        a, p = ct_type(self.input), pt_type(self.plain)
        he.check_same_array(self.name, a, p)
        _check_same_scale(self.name, a, p)
        return a


@irdl_op_definition
class EncodeOp(he.EncodeRule, CkksOp):
    """Encode input `sym` (from its owner's data) into a plaintext array of the given layout,
    level and scale. `domain` is the input's declared value domain (drives range analysis).

    Owner-side values (passes/owner_side.py) carry `expr`, the owner expression
    (compiler/owner_expr.py) over the owner's source inputs that the encrypting owner
    evaluates per element. A `coeff` encode carries `digits` (one owner expression or source
    name per packed count), `scalar_digits` (1 for a count with one value per row, held in
    coefficient 0 only), `radices` (R_k) and `group` (columns per coefficient)."""

    name = "ckks.encode"

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), Pure()))

    @staticmethod
    def packed(
        sym: str, ty: PtType, digits: Sequence[str], scalar: Sequence[bool], radices: Sequence[int]
    ) -> EncodeOp:
        op = EncodeOp(sym, ty, None)
        op.set_digits(digits, scalar, radices)
        op.properties["group"] = IntegerAttr(1, i64)
        return op


@irdl_op_definition
class EncryptOp(he.EncryptRule, CkksOp):
    """Public-key encryption by the data owner: a fresh degree-1 ciphertext array."""

    name = "ckks.encrypt"

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), Pure()))

    def fresh(self, p: he.PlaintextType) -> CtType:
        assert isinstance(p, PtType)
        return CtType.get(p.dims, p.layout_name, p.level_value, p.scale, 1)

    def source(self) -> EncodeOp:
        owner = self.input.owner
        if not isinstance(owner, EncodeOp):
            raise VerifyException("ckks.encrypt encrypts the result of a ckks.encode")
        return owner


@irdl_op_definition
class DecryptOp(he.DecryptRule, CkksOp):
    """Decryption of a revealed value by the coordinator (the only holder of the secret key).
    With `factor`, the coordinator multiplies the decoded value by that public scalar: a last
    multiplication by a public constant reveals nothing new, and done in the clear it does not
    make the value (and so the output modulus) any larger. On a `coeff` array, `digit` names
    the packed count to read (exactly: the decoded integer's mixed-radix digit); a scalar
    digit (`scalar_digit`) is read from coefficient 0 and revealed as a scalar."""

    name = "ckks.decrypt"

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))


@irdl_op_definition
class SizeOp(he.SizeRule, CkksOp):
    name = "ckks.size"


@irdl_op_definition
class ConstantOp(he.ConstantRule, CkksOp):
    name = "ckks.constant"


PUBLIC_KINDS = he.PUBLIC_KINDS


@irdl_op_definition
class PublicArithOp(he.PublicArithRule, CkksOp):
    """Arithmetic on public scalars (every party can compute it in the clear)."""

    name = "ckks.public_arith"


@irdl_op_definition
class ParamOp(he.ParamRule, CkksOp):
    name = "ckks.param"

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))


@irdl_op_definition
class SourceOp(he.SourceRule, CkksOp):
    """Declares a data owner's input that owner-side values read (`y` in `(mul y S)`): its
    shape and declared domain, which the encrypting owner's files are checked against."""

    name = "ckks.source"

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))


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


@irdl_attr_definition
class PlanAttr(ParametrizedAttribute):
    """`#ckks.plan<log_n = 13, input_scale = 46.0, rescale_bits = 60.0, output_bits = 119,
    special_bits = 0, precision = 33.5>`: scale-management's plan (passes/scale_management.py:
    ring dimension, input scale Delta and rescale-prime size in bits, bits of the output
    modulus and of the special prime, the precision it predicts), which parameter-selection
    turns into primes."""

    name = "ckks.plan"

    log_n: IntAttr
    input_scale: FloatData
    rescale_bits: FloatData
    output_bits: IntAttr
    special_bits: IntAttr
    precision: FloatData

    FIELDS: ClassVar[tuple[str, ...]] = (
        "log_n",
        "input_scale",
        "rescale_bits",
        "output_bits",
        "special_bits",
        "precision",
    )

    @staticmethod
    def get(
        log_n: int,
        input_scale: float,
        rescale_bits: float,
        output_bits: int,
        special_bits: int,
        precision: float,
    ) -> PlanAttr:
        return PlanAttr(
            IntAttr(log_n),
            FloatData(float(input_scale)),
            FloatData(float(rescale_bits)),
            IntAttr(output_bits),
            IntAttr(special_bits),
            FloatData(float(precision)),
        )

    def print_parameters(self, printer: Printer) -> None:
        he.print_fields(
            printer,
            [
                ("log_n", str(self.log_n.data)),
                ("input_scale", _format_log_scale(self.input_scale.data)),
                ("rescale_bits", _format_log_scale(self.rescale_bits.data)),
                ("output_bits", str(self.output_bits.data)),
                ("special_bits", str(self.special_bits.data)),
                ("precision", _format_log_scale(self.precision.data)),
            ],
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        f = he.parse_fields(parser, cls.FIELDS)
        plan = PlanAttr.get(
            int(f["log_n"]),  # pyright: ignore[reportArgumentType]
            float(f["input_scale"]),  # pyright: ignore[reportArgumentType]
            float(f["rescale_bits"]),  # pyright: ignore[reportArgumentType]
            int(f["output_bits"]),  # pyright: ignore[reportArgumentType]
            int(f["special_bits"]),  # pyright: ignore[reportArgumentType]
            float(f["precision"]),  # pyright: ignore[reportArgumentType]
        )
        return list(plan.parameters)


@irdl_attr_definition
class ParametersAttr(he.IntFields):
    """`#ckks.parameters<log_n = 13, output_moduli = [...], moduli = [...], special_moduli =
    [...], dnum = 3, security_bits = 128, insecure = false>`: the scheme parameters a program
    runs under (parameter-selection; `Parameters` is its Python form)."""

    name = "ckks.parameters"

    log_n: IntAttr
    output_moduli: ArrayAttr[IntAttr]
    moduli: ArrayAttr[IntAttr]
    special_moduli: ArrayAttr[IntAttr]
    dnum: IntAttr
    security_bits: IntAttr
    insecure: IntAttr

    def verify(self) -> None:
        if self.insecure.data not in (0, 1):
            raise VerifyException("insecure is a flag")
        for array in (self.output_moduli, self.moduli, self.special_moduli):
            if any(q.data < 2 for q in array.data):
                raise VerifyException("moduli are primes")


def _int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _ints(value: Attribute) -> tuple[int, ...]:
    assert isinstance(value, DenseArrayBase)
    return tuple(int(v) for v in value.get_values())


@irdl_op_definition
class ProgramOp(he.ProgramRule):
    """A whole CKKS program: params, encodes/encryptions, the server computation, decrypts.
        What the passes decide about the whole program are typed attributes: `key_level` (the
        highest level of a key switch, level-assignment), `plan` (`#ckks.plan`,
        scale-management), `primes_per_level` (composite scaling, scale-management),
        `parameters` (`#ckks.parameters`, parameter-selection) and
        `rotation_keys` (rotation-keys), and `error_failure_log2` (the probability, as a power of
    two, with which each output's error bound may fail: scale-management, from
    `--error-confidence`); the emitter and the report read them from here."""

    name = "ckks.program"

    key_level = opt_attr_def(IntegerAttr)
    plan = opt_attr_def(PlanAttr)
    chain = opt_attr_def(ParametersAttr, attr_name="parameters")
    rotations = opt_attr_def(DenseArrayBase, attr_name="rotation_keys")
    failure_log2 = opt_attr_def(FloatAttr, attr_name="error_failure_log2")
    # Composite scaling (scale-management): every multiplicative level spans this many
    # primes, each product rescaled once per prime; absent: one prime per level.
    group = opt_attr_def(IntegerAttr, attr_name="primes_per_level")

    def key_level_value(self) -> int | None:
        return None if self.key_level is None else self.key_level.value.data

    def primes_per_level_value(self) -> int:
        return 1 if self.group is None else self.group.value.data

    def set_primes_per_level(self, group: int) -> None:
        if group == 1:
            self.attributes.pop("primes_per_level", None)
        else:
            self.attributes["primes_per_level"] = IntegerAttr(group, i64)

    def set_key_level(self, level: int | None) -> None:
        if level is None:
            self.attributes.pop("key_level", None)
        else:
            self.attributes["key_level"] = IntegerAttr(level, i64)

    def set_plan(self, plan: PlanAttr) -> None:
        self.attributes["plan"] = plan

    def decrypts(self) -> list[DecryptOp]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return [op for op in self.block.ops if isinstance(op, DecryptOp)]

    def encrypts(self) -> list[EncryptOp]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return [op for op in self.block.ops if isinstance(op, EncryptOp)]

    def parameters(self) -> Parameters | None:
        chain = self.chain
        if chain is None:
            return None

        def ints(a: ArrayAttr[IntAttr]) -> tuple[int, ...]:
            return tuple(q.data for q in a.data)

        return Parameters(
            log_n=chain.log_n.data,
            output_moduli=ints(chain.output_moduli),
            moduli=ints(chain.moduli),
            special_moduli=ints(chain.special_moduli),
            dnum=chain.dnum.data,
            security_bits=chain.security_bits.data,
            insecure=chain.insecure.data != 0,
            key_level=self.key_level_value(),
        )

    def set_parameters(self, p: Parameters) -> None:
        self.attributes["parameters"] = ParametersAttr(
            IntAttr(p.log_n),
            he.ints_attr(p.output_moduli),
            he.ints_attr(p.moduli),
            he.ints_attr(p.special_moduli),
            IntAttr(p.dnum),
            IntAttr(p.security_bits),
            IntAttr(int(p.insecure)),
        )

    def rotation_keys(self) -> tuple[int, ...] | None:
        return None if self.rotations is None else _ints(self.rotations)

    def set_rotation_keys(self, offsets: Sequence[int]) -> None:
        self.attributes["rotation_keys"] = _int_array(sorted(set(offsets)))


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
        DiagMatvecOp,
        ConvertOp,
        BroadcastOp,
        UnpackComplexOp,
        TransposeOp,
        GatherOp,
    ],
    [CtType, PtType, ScaleAttr, PlanAttr, ParametersAttr],
)
for _op in Ckks.operations:
    if issubclass(_op, he.HeOp):
        _op.TYPES = (CtType, PtType, PublicType)

# The ops that need a key switch (evaluation keys) when executed.
KEY_SWITCH_OPS: tuple[type[Operation], ...] = (
    RelinearizeOp,
    RotateOp,
    SumSlotsOp,
    UnpackComplexOp,
    DiagMatvecOp,
    ConvertOp,
)
# Everything that is not a ciphertext computation: public scalars and declarations.
PUBLIC_OPS: tuple[type[Operation], ...] = (ParamOp, SourceOp, SizeOp, ConstantOp, PublicArithOp)
