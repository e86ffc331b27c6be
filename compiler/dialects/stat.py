"""The `stat` dialect: array-level statistics programs, output of the hec language (DESIGN.md §4).

One op per language operation, on tensors whose dimensions are symbolic (size parameters such
as `N`, `M`) or small literals, so the IR is the same size for N = 10 and N = 100,000.

Types and attributes
--------------------
- `!stat.tensor<[N, M], secret>`: a real-valued tensor. `dims` is a tuple of `int | str`
  (a literal size or a size-parameter name; rank 0 to 2; `[]` is a scalar); `secrecy` is
  `secret` (encrypted, never seen by the server) or `public` (known to every party).
  Python: `TensorType.get(dims, secret)`, `.dims`, `.is_secret`, `.rank`.
- `#stat.interval<-4.0, 4.0>` and `#stat.set<0.0, 1.0, 2.0>`: the declared value domain of an
  input. Python: `.to_domain()` gives a `compiler.types.Interval` / `FiniteSet`.

Ops (elementwise ops take operands of the SAME shape: the front end inserts explicit
`stat.broadcast` ops, so no op below broadcasts implicitly; a result is secret when any
operand is secret). Source names are in a `sym` string property (`.sym_value`).
------------------------------------------------------------------------------------------
- `stat.program "name" { ... }`: the whole program, one block, no terminator. Holds, in
  source order, `stat.param`, `stat.input`, the computation and `stat.reveal` ops, and at
  most one `stat.client`, last. `.params()` -> {name: bound}, `.inputs()`, `.reveals()`,
  `.client()`, `.server_ops()`.
- `stat.param "N" {bound = 200000}`: a size parameter, 1 <= N <= bound (`.bound_value`).
- `%v = stat.size "N"`: the value of a size parameter, a public scalar.
- `%x = stat.input "S" {domain = #stat.set<...>}`: an input array (`.domain_value`); secret
  inputs always carry a domain (verified), public inputs may omit it.
- `%c = stat.constant {value = 2.0 : f64}`: a public scalar constant (`.float_value`).
- `stat.add`, `stat.sub`, `stat.mul`: elementwise binary (`.lhs`, `.rhs`, `.result`).
- `stat.div`: elementwise division; the divisor must be public (a secret numerator is fine:
  it is a product with the public reciprocal).
- `stat.neg`: elementwise negation (`.input`, `.result`, as for every one-operand op).
- `stat.pow {exponent = k}`: elementwise x^k, k >= 1 (`.exponent_value`).
- `stat.poly {coefficients = array<f64: c0, c1, ...>}`: elementwise c0 + c1 x + c2 x^2 + ...
  (`.coefficient_values`, lowest degree first).
- `stat.broadcast {dims = array<i64: ...>}`: operand axis i becomes result axis dims[i]
  (strictly increasing, `.dims_tuple`); the other result axes replicate the operand; an
  operand axis of literal size 1 may stretch to any size (this is how `row`/`col` work).
- `stat.matmul`: [K]x[K,M]->[M], [N,K]x[K]->[N], [N,K]x[K,M]->[N,M], [K]x[K]->scalar.
- `stat.sum {axes = array<i64: ...>}`: sum over the listed axes (`.axes_tuple`);
  `stat.mean` is the same divided by the product of the reduced sizes.
- `stat.transpose`: [A,B] -> [B,A].
- `%i = stat.eye : !stat.tensor<[K, K], public>`: the identity matrix of a small dimension
  (literal or a size parameter with bound <= 6), a public constant.
- `stat.index {starts, stops, drops}`: `x[i, a:b, :]`, per operand axis the entries
  [start, stop) (`stop` -1: the whole axis, start 0); an axis with `drops` 1 is a single index
  (stop = start + 1) and is removed from the result; a kept, cut axis has the literal size
  stop - start. Indexed axes are small (bound <= 6); `.axis_ranges(sizes)`.
- `stat.det`, `stat.adj`: determinant (scalar) and adjugate ([k,k], det(A) inverse(A)) of a
  k x k matrix with k <= 6: a literal, or a size parameter whose bound is at most 6.
- `%r = stat.reveal "name" %x`: the coordinator decrypts %x; %r is public and may be used only
  inside the `stat.client` region (the server never sees it).
- Public-only elementwise functions (operand and result public): `stat.sqrt`, `stat.abs`,
  `stat.exp`, `stat.log`, `stat.norm_sf` (1 - Phi), `stat.norm_cdf` (Phi),
  `stat.chi2_sf {df = k}` (`.df_value`).
- `stat.client { ... }`: the client block, run by the coordinator on decrypted values (numpy
  and scipy: `compiler/stat_numpy.py`, `run_client`). Every value inside is public; it reads
  reveal results and public server values from above; `stat.output "name" %v` names each
  client result (`.outputs()`).

`tensor_type(value)` returns the `TensorType` of any SSA value of the dialect.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Iterator, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    FloatData,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
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
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from compiler.dialects.region_op import NamedRegionOp, SingleBlock
from compiler.types import Dim, Domain, FiniteSet, Interval, format_shape

# det/adj are expanded at compile time for the size of k (compiler/analysis/minors.py: a
# balanced Laplace expansion whose minor tables grow like C(k, k/2)^2), so k stays small.
MAX_SMALL_MATRIX = 6


def format_float(value: float) -> str:
    """A float literal MLIR's lexer accepts (always has a '.' before any exponent)."""
    text = repr(float(value))
    if "inf" in text or "nan" in text:
        raise ValueError(f"non-finite value {text} cannot appear in a stat attribute")
    if "." not in text:
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0" + (f"e{exponent}" if exponent else "")
    return text


# --------------------------------------------------------------------------------------------
# Types and attributes
# --------------------------------------------------------------------------------------------


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """`!stat.tensor<[N, M], secret>`: symbolic-shaped real tensor with a secrecy marker."""

    name = "stat.tensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    secrecy: StringAttr

    @staticmethod
    def get(dims: Sequence[Dim], secret: bool) -> TensorType:
        shape = ArrayAttr([IntAttr(d) if isinstance(d, int) else StringAttr(d) for d in dims])
        return TensorType(shape, StringAttr("secret" if secret else "public"))

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def is_secret(self) -> bool:
        return self.secrecy.data == "secret"

    def with_secrecy(self, secret: bool) -> TensorType:
        return TensorType.get(self.dims, secret)

    def verify(self) -> None:
        if self.secrecy.data not in ("secret", "public"):
            raise VerifyException(f"secrecy must be secret or public, got {self.secrecy.data!r}")
        if self.rank > 2:
            raise VerifyException(f"stat tensors have rank at most 2, got {self.rank}")
        for d in self.dims:
            if isinstance(d, int) and d < 1:
                raise VerifyException(f"literal dimension must be >= 1, got {d}")
            if isinstance(d, str) and not d.isidentifier():
                raise VerifyException(f"symbolic dimension must be an identifier, got {d!r}")

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.dims)
        printer.print_string(f"<[{dims}], {self.secrecy.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def parse_dim() -> IntAttr | StringAttr:
            value = parser.parse_optional_integer(allow_negative=False, allow_boolean=False)
            if value is not None:
                return IntAttr(value)
            return StringAttr(parser.parse_identifier(" for a dimension"))

        with parser.in_angle_brackets():
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_dim)
            parser.parse_punctuation(",")
            secrecy = parser.parse_keyword_in(("secret", "public"))
        return [ArrayAttr(dims), StringAttr(secrecy)]


@irdl_attr_definition
class IntervalAttr(ParametrizedAttribute):
    """`#stat.interval<lo, hi>`: the closed interval domain [lo, hi]."""

    name = "stat.interval"

    lo: FloatData
    hi: FloatData

    @staticmethod
    def get(lo: float, hi: float) -> IntervalAttr:
        return IntervalAttr(FloatData(float(lo)), FloatData(float(hi)))

    def to_domain(self) -> Interval:
        return Interval(self.lo.data, self.hi.data)

    def verify(self) -> None:
        if not (math.isfinite(self.lo.data) and math.isfinite(self.hi.data)):
            raise VerifyException("interval bounds must be finite")
        if self.lo.data > self.hi.data:
            raise VerifyException(f"empty interval [{self.lo.data}, {self.hi.data}]")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{format_float(self.lo.data)}, {format_float(self.hi.data)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            lo = parser.parse_number()
            parser.parse_punctuation(",")
            hi = parser.parse_number()
        return [FloatData(float(lo)), FloatData(float(hi))]


@irdl_attr_definition
class SetAttr(ParametrizedAttribute):
    """`#stat.set<v0, v1, ...>`: a finite-set domain, sorted, no duplicates."""

    name = "stat.set"

    values: ArrayAttr[FloatData]

    @staticmethod
    def get(values: Sequence[float]) -> SetAttr:
        return SetAttr(ArrayAttr([FloatData(float(v)) for v in values]))

    def to_domain(self) -> FiniteSet:
        return FiniteSet(tuple(v.data for v in self.values.data))

    def verify(self) -> None:
        vals = [v.data for v in self.values.data]
        if not vals:
            raise VerifyException("a set domain needs at least one value")
        if vals != sorted(set(vals)) or not all(math.isfinite(v) for v in vals):
            raise VerifyException("set domain values must be finite, sorted and distinct")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join(format_float(v.data) for v in self.values.data) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        values = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parser.parse_number)
        return [ArrayAttr([FloatData(float(v)) for v in values])]


def domain_attr(domain: Domain) -> IntervalAttr | SetAttr:
    if isinstance(domain, Interval):
        return IntervalAttr.get(domain.lo, domain.hi)
    return SetAttr.get(domain.values)


# --------------------------------------------------------------------------------------------
# Helpers for verifiers
# --------------------------------------------------------------------------------------------


def tensor_type(value: SSAValue) -> TensorType:
    ty = value.type
    if not isinstance(ty, TensorType):
        raise VerifyException(f"expected a !stat.tensor, got {ty}")
    return ty


def _expect_shape(what: str, got: TensorType, dims: Sequence[Dim]) -> None:
    if got.dims != tuple(dims):
        raise VerifyException(
            f"{what} has shape {format_shape(got.dims)}, expected {format_shape(dims)}"
        )


def _expect_secrecy(what: str, got: TensorType, secret: bool) -> None:
    if got.is_secret != secret:
        want = "secret" if secret else "public"
        raise VerifyException(f"{what} must be {want}, got {got.secrecy.data}")


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _int_tuple(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


# --------------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------------


class _Unary(IRDLOperation, ABC):
    """An elementwise op of one operand: same shape in and out."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    PUBLIC_ONLY: ClassVar[bool] = False

    def __init__(self, operand: SSAValue, properties: dict[str, Attribute] | None = None):
        ty = tensor_type(operand)
        super().__init__(operands=[operand], result_types=[ty], properties=properties or {})

    def verify_(self) -> None:
        src, res = tensor_type(self.input), tensor_type(self.result)
        _expect_shape("result", res, src.dims)
        if self.PUBLIC_ONLY:
            _expect_secrecy(f"the operand of {self.name}", src, False)
        _expect_secrecy("result", res, src.is_secret)


class _Binary(IRDLOperation, ABC):
    """An elementwise op of two operands of one shape; secret if either operand is."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        lt, rt = tensor_type(lhs), tensor_type(rhs)
        result = lt.with_secrecy(lt.is_secret or rt.is_secret)
        super().__init__(operands=[lhs, rhs], result_types=[result])

    def verify_(self) -> None:
        lt, rt, res = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.result)
        _expect_shape("rhs", rt, lt.dims)
        _expect_shape("result", res, lt.dims)
        _expect_secrecy("result", res, lt.is_secret or rt.is_secret)


@irdl_op_definition
class AddOp(_Binary):
    name = "stat.add"


@irdl_op_definition
class SubOp(_Binary):
    name = "stat.sub"


@irdl_op_definition
class MulOp(_Binary):
    name = "stat.mul"


@irdl_op_definition
class DivOp(_Binary):
    """Elementwise division by a public divisor (secret divisors cannot be divided under HE)."""

    name = "stat.div"

    def verify_(self) -> None:
        super().verify_()
        _expect_secrecy("the divisor of stat.div", tensor_type(self.rhs), False)


@irdl_op_definition
class NegOp(_Unary):
    name = "stat.neg"


@irdl_op_definition
class PowOp(_Unary):
    name = "stat.pow"

    exponent = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, exponent: int):
        super().__init__(operand, {"exponent": IntegerAttr(exponent, i64)})

    @property
    def exponent_value(self) -> int:
        return self.exponent.value.data

    def verify_(self) -> None:
        super().verify_()
        if self.exponent_value < 1:
            raise VerifyException(f"exponent must be >= 1, got {self.exponent_value}")


@irdl_op_definition
class PolyOp(_Unary):
    """c0 + c1 x + ... + cd x^d elementwise; coefficients lowest degree first."""

    name = "stat.poly"

    coefficients = prop_def(DenseArrayBase[Float64Type])

    def __init__(self, operand: SSAValue, coefficients: Sequence[float]):
        coeffs = DenseArrayBase.from_list(f64, [float(c) for c in coefficients])
        super().__init__(operand, {"coefficients": coeffs})

    @property
    def coefficient_values(self) -> tuple[float, ...]:
        return tuple(float(c) for c in self.coefficients.get_values())

    def verify_(self) -> None:
        super().verify_()
        if self.coefficients.elt_type != f64:
            raise VerifyException("poly coefficients must be an f64 array")
        if not self.coefficient_values:
            raise VerifyException("poly needs at least one coefficient")


@irdl_op_definition
class SqrtOp(_Unary):
    name = "stat.sqrt"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class AbsOp(_Unary):
    name = "stat.abs"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class ExpOp(_Unary):
    name = "stat.exp"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class LogOp(_Unary):
    name = "stat.log"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class NormSfOp(_Unary):
    """Upper tail of the standard normal, 1 - Phi(x)."""

    name = "stat.norm_sf"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class NormCdfOp(_Unary):
    """The standard normal distribution function Phi(x)."""

    name = "stat.norm_cdf"
    PUBLIC_ONLY: ClassVar[bool] = True


@irdl_op_definition
class Chi2SfOp(_Unary):
    """Upper tail of the chi-square distribution with `df` degrees of freedom."""

    name = "stat.chi2_sf"
    PUBLIC_ONLY: ClassVar[bool] = True

    df = prop_def(IntegerAttr)

    def __init__(self, operand: SSAValue, df: int):
        super().__init__(operand, {"df": IntegerAttr(df, i64)})

    @property
    def df_value(self) -> int:
        return self.df.value.data

    def verify_(self) -> None:
        super().verify_()
        if self.df_value < 1:
            raise VerifyException(f"df must be >= 1, got {self.df_value}")


class _Reshaping(IRDLOperation, ABC):
    """An op whose result shape differs from its operand's; result type is given."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    traits = traits_def(Pure())

    def _check_secrecy(self) -> None:
        _expect_secrecy("result", tensor_type(self.result), tensor_type(self.input).is_secret)


@irdl_op_definition
class BroadcastOp(_Reshaping):
    """Operand axis i becomes result axis dims[i]; other result axes are new (replication)."""

    name = "stat.broadcast"

    dims = prop_def(DenseArrayBase[IntegerType])

    def __init__(self, operand: SSAValue, result_dims: Sequence[Dim], dims: Sequence[int]):
        res = TensorType.get(result_dims, tensor_type(operand).is_secret)
        super().__init__(
            operands=[operand], result_types=[res], properties={"dims": _i64_array(dims)}
        )

    @property
    def dims_tuple(self) -> tuple[int, ...]:
        return _int_tuple(self.dims)

    def verify_(self) -> None:
        self._check_secrecy()
        src, res = tensor_type(self.input), tensor_type(self.result)
        dims = self.dims_tuple
        if len(dims) != src.rank:
            raise VerifyException(f"dims has {len(dims)} entries, operand rank is {src.rank}")
        if list(dims) != sorted(set(dims)) or any(d < 0 or d >= res.rank for d in dims):
            raise VerifyException(f"dims {list(dims)} must increase and lie in [0, {res.rank})")
        for i, d in enumerate(dims):
            if src.dims[i] != res.dims[d] and src.dims[i] != 1:
                raise VerifyException(
                    f"operand axis {i} ({src.dims[i]}) cannot broadcast to result axis {d} "
                    f"({res.dims[d]})"
                )


class _Reduce(_Reshaping, ABC):
    axes = prop_def(DenseArrayBase[IntegerType])

    def __init__(self, operand: SSAValue, axes: Sequence[int]):
        src = tensor_type(operand)
        kept = [d for i, d in enumerate(src.dims) if i not in axes]
        res = TensorType.get(kept, src.is_secret)
        super().__init__(
            operands=[operand], result_types=[res], properties={"axes": _i64_array(axes)}
        )

    @property
    def axes_tuple(self) -> tuple[int, ...]:
        return _int_tuple(self.axes)

    def verify_(self) -> None:
        self._check_secrecy()
        src, res = tensor_type(self.input), tensor_type(self.result)
        axes = self.axes_tuple
        if not axes or list(axes) != sorted(set(axes)) or any(a >= src.rank for a in axes):
            raise VerifyException(f"axes {list(axes)} must be distinct, sorted, < {src.rank}")
        _expect_shape("result", res, [d for i, d in enumerate(src.dims) if i not in axes])


@irdl_op_definition
class SumOp(_Reduce):
    name = "stat.sum"


@irdl_op_definition
class MeanOp(_Reduce):
    name = "stat.mean"


@irdl_op_definition
class TransposeOp(_Reshaping):
    name = "stat.transpose"

    def __init__(self, operand: SSAValue):
        src = tensor_type(operand)
        res = TensorType.get(tuple(reversed(src.dims)), src.is_secret)
        super().__init__(operands=[operand], result_types=[res])

    def verify_(self) -> None:
        self._check_secrecy()
        src = tensor_type(self.input)
        if src.rank != 2:
            raise VerifyException(f"transpose needs a matrix, got {format_shape(src.dims)}")
        _expect_shape("result", tensor_type(self.result), tuple(reversed(src.dims)))


def _check_small_square(src: TensorType) -> Dim:
    if src.rank != 2 or src.dims[0] != src.dims[1]:
        raise VerifyException(f"needs a k x k matrix, got {format_shape(src.dims)}")
    k = src.dims[0]
    if isinstance(k, int) and k > MAX_SMALL_MATRIX:
        raise VerifyException(f"k = {k} exceeds the small-matrix limit {MAX_SMALL_MATRIX}")
    return k


@irdl_op_definition
class DetOp(_Reshaping):
    name = "stat.det"

    def __init__(self, operand: SSAValue):
        res = TensorType.get((), tensor_type(operand).is_secret)
        super().__init__(operands=[operand], result_types=[res])

    def verify_(self) -> None:
        self._check_secrecy()
        _check_small_square(tensor_type(self.input))
        _expect_shape("result", tensor_type(self.result), ())


@irdl_op_definition
class AdjOp(_Reshaping):
    """The adjugate adj(A) = det(A) * inverse(A), polynomial in the entries of A."""

    name = "stat.adj"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[tensor_type(operand)])

    def verify_(self) -> None:
        self._check_secrecy()
        src = tensor_type(self.input)
        _check_small_square(src)
        _expect_shape("result", tensor_type(self.result), src.dims)


@irdl_op_definition
class IndexOp(_Reshaping):
    name = "stat.index"

    starts = prop_def(DenseArrayBase[IntegerType])
    stops = prop_def(DenseArrayBase[IntegerType])
    drops = prop_def(DenseArrayBase[IntegerType])

    def __init__(
        self,
        operand: SSAValue,
        starts: Sequence[int],
        stops: Sequence[int],
        drops: Sequence[bool],
        result_dims: Sequence[Dim],
    ):
        res = TensorType.get(result_dims, tensor_type(operand).is_secret)
        super().__init__(
            operands=[operand],
            result_types=[res],
            properties={
                "starts": _i64_array(starts),
                "stops": _i64_array(stops),
                "drops": _i64_array([int(bool(d)) for d in drops]),
            },
        )

    def axis_ranges(self, sizes: dict[str, int]) -> list[tuple[int, int, bool]]:
        """(start, stop, dropped) per operand axis at concrete `sizes`."""
        src = tensor_type(self.input)
        out = []
        for d, start, stop, drop in zip(
            src.dims,
            _int_tuple(self.starts),
            _int_tuple(self.stops),
            _int_tuple(self.drops),
            strict=True,
        ):
            size = d if isinstance(d, int) else sizes[d]
            out.append((start, size if stop < 0 else stop, bool(drop)))
        return out

    def verify_(self) -> None:
        self._check_secrecy()
        src, res = tensor_type(self.input), tensor_type(self.result)
        starts, stops, drops = (_int_tuple(a) for a in (self.starts, self.stops, self.drops))
        if not len(starts) == len(stops) == len(drops) == src.rank:
            raise VerifyException(f"{self.name}: one start, stop and drop per operand axis")
        want: list[Dim] = []
        for d, start, stop, drop in zip(src.dims, starts, stops, drops, strict=True):
            if stop < 0:
                if start != 0 or drop:
                    raise VerifyException(f"{self.name}: a whole axis starts at 0, kept")
                want.append(d)
                continue
            if not 0 <= start < stop or (isinstance(d, int) and stop > d):
                raise VerifyException(f"{self.name}: [{start}, {stop}) is outside axis {d}")
            if drop and stop != start + 1:
                raise VerifyException(f"{self.name}: a dropped axis takes one index")
            if not drop:
                want.append(stop - start)
        _expect_shape("result", res, tuple(want))


@irdl_op_definition
class EyeOp(IRDLOperation):
    """The k x k identity matrix (`eye(K)`), a public constant of a small dimension."""

    name = "stat.eye"

    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, dim: Dim):
        super().__init__(result_types=[TensorType.get((dim, dim), False)])

    @property
    def dim(self) -> Dim:
        return tensor_type(self.result).dims[0]

    def verify_(self) -> None:
        res = tensor_type(self.result)
        _expect_secrecy("result", res, False)
        _check_small_square(res)


@irdl_op_definition
class MatmulOp(IRDLOperation):
    name = "stat.matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        lt, rt = tensor_type(lhs), tensor_type(rhs)
        dims = matmul_result_dims(lt.dims, rt.dims)
        if dims is None:
            raise ValueError(f"bad matmul shapes {lt.dims} @ {rt.dims}")
        res = TensorType.get(dims, lt.is_secret or rt.is_secret)
        super().__init__(operands=[lhs, rhs], result_types=[res])

    def verify_(self) -> None:
        lt, rt, res = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.result)
        dims = matmul_result_dims(lt.dims, rt.dims)
        if dims is None:
            raise VerifyException(
                f"cannot multiply {format_shape(lt.dims)} @ {format_shape(rt.dims)}"
            )
        _expect_shape("result", res, dims)
        _expect_secrecy("result", res, lt.is_secret or rt.is_secret)


def matmul_result_dims(lhs: Sequence[Dim], rhs: Sequence[Dim]) -> tuple[Dim, ...] | None:
    """The result shape of lhs @ rhs for vectors and matrices, or None if they do not fit."""
    if len(lhs) not in (1, 2) or len(rhs) not in (1, 2):
        return None
    inner_l = lhs[-1]
    inner_r = rhs[0]
    if inner_l != inner_r:
        return None
    return tuple(lhs[:-1]) + tuple(rhs[1:])


@irdl_op_definition
class ConstantOp(IRDLOperation):
    name = "stat.constant"

    value = prop_def(FloatAttr)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, value: float):
        super().__init__(
            result_types=[TensorType.get((), False)],
            properties={"value": FloatAttr(float(value), f64)},
        )

    @property
    def float_value(self) -> float:
        return float(self.value.value.data)

    def verify_(self) -> None:
        res = tensor_type(self.result)
        _expect_shape("result", res, ())
        _expect_secrecy("result", res, False)


class _Named(IRDLOperation, ABC):
    """An op naming something of the source program (`sym` is the source name)."""

    sym = prop_def(StringAttr)

    @property
    def sym_value(self) -> str:
        return self.sym.data


@irdl_op_definition
class ParamOp(_Named):
    name = "stat.param"

    bound = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, bound: int):
        super().__init__(properties={"sym": StringAttr(sym), "bound": IntegerAttr(bound, i64)})

    @property
    def bound_value(self) -> int:
        return self.bound.value.data

    def verify_(self) -> None:
        if self.bound_value < 1:
            raise VerifyException(f"size parameter {self.sym_value} needs a bound >= 1")


@irdl_op_definition
class SizeOp(_Named):
    name = "stat.size"

    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, sym: str):
        super().__init__(
            result_types=[TensorType.get((), False)], properties={"sym": StringAttr(sym)}
        )

    def verify_(self) -> None:
        res = tensor_type(self.result)
        _expect_shape("result", res, ())
        _expect_secrecy("result", res, False)


@irdl_op_definition
class InputOp(_Named):
    name = "stat.input"

    domain = opt_prop_def(IntervalAttr | SetAttr)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym attr-dict `:` type($result)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, ty: TensorType, domain: Domain | None):
        props: dict[str, Attribute] = {"sym": StringAttr(sym)}
        if domain is not None:
            props["domain"] = domain_attr(domain)
        super().__init__(result_types=[ty], properties=props)

    @property
    def domain_value(self) -> Domain | None:
        return None if self.domain is None else self.domain.to_domain()

    def verify_(self) -> None:
        if tensor_type(self.result).is_secret and self.domain is None:
            raise VerifyException(f"secret input {self.sym_value} has no value domain")


@irdl_op_definition
class OwnerComputeOp(IRDLOperation):
    """A value every data owner computes on its own rows, in plaintext, before encrypting
    (passes/owner_side.py): `expr` (compiler/owner_expr.py) over the operands, which are the
    owner's secret inputs, all with the same leading (row) axis. The result is encrypted like
    an input named `sym`; `domain` is its exact value set or interval.

    Verified: every operand is a secret `stat.input` whose leading axis is the row axis (so the
    value never combines two owners' rows), the expression names exactly the operands, and it
    has no reduction (an owner expression has none)."""

    name = "stat.owner_compute"

    args = var_operand_def(TensorType)
    sym = prop_def(StringAttr)
    expr = prop_def(StringAttr)
    domain = prop_def(IntervalAttr | SetAttr)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym `(` $args `)` attr-dict `:` functional-type($args, $result)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp), Pure()))

    def __init__(
        self, sym: str, args: Sequence[SSAValue], expr: str, domain: Domain, ty: TensorType
    ):
        super().__init__(
            operands=[list(args)],
            result_types=[ty],
            properties={
                "sym": StringAttr(sym),
                "expr": StringAttr(expr),
                "domain": domain_attr(domain),
            },
        )

    @property
    def sym_value(self) -> str:
        return self.sym.data

    @property
    def expr_value(self) -> str:
        return self.expr.data

    @property
    def domain_value(self) -> Domain:
        return self.domain.to_domain()

    def sources(self) -> list[InputOp]:
        out: list[InputOp] = []
        for a in self.args:
            owner = a.owner
            if not isinstance(owner, InputOp):
                raise VerifyException(
                    f"stat.owner_compute {self.sym_value}: operand {a.name_hint or '?'} is not "
                    "an input of the data owner (an owner-side value may only combine the "
                    "owner's own input rows, never a value computed across rows)"
                )
            out.append(owner)
        return out

    def verify_(self) -> None:
        from compiler.owner_expr import parse

        res = tensor_type(self.result)
        _expect_secrecy("result", res, True)
        if not res.dims:
            raise VerifyException(
                f"stat.owner_compute {self.sym_value}: the result needs a row axis"
            )
        row = res.dims[0]
        names: list[str] = []
        for src in self.sources():
            ty = tensor_type(src.result)
            if not ty.is_secret or not ty.dims or ty.dims[0] != row:
                raise VerifyException(
                    f"stat.owner_compute {self.sym_value}: input {src.sym_value} "
                    f"{format_shape(ty.dims)} is not a secret input with row axis {row} "
                    "(its rows would belong to other owners)"
                )
            if tuple(ty.dims) != tuple(res.dims[: ty.rank]):
                raise VerifyException(
                    f"stat.owner_compute {self.sym_value}: input {src.sym_value} "
                    f"{format_shape(ty.dims)} does not broadcast row-wise to "
                    f"{format_shape(res.dims)}"
                )
            names.append(src.sym_value)
        try:
            used = parse(self.expr_value).sources()
        except ValueError as e:
            raise VerifyException(str(e)) from None
        if sorted(used) != sorted(names):
            raise VerifyException(
                f"stat.owner_compute {self.sym_value}: expression {self.expr_value!r} uses "
                f"{used}, the operands are {names}"
            )


@irdl_op_definition
class PackedSumOp(IRDLOperation):
    """Sums over the row axis of several non-negative integer owner values, one result each
    (the same values as one `stat.sum(x, axis=0)` per operand), marked for radix packing
    (passes/packed_counts.py): each owner encrypts sum_k W_k x_k with W_k = prod_{l<k} R_l,
    the server only adds, and the coordinator reads x_k's sum back as digit k. `radices` are
    proven by range analysis: R_k exceeds the largest possible sum of operand k, so the digits
    never carry into each other and the counts come back exact."""

    name = "stat.packed_sum"

    args = var_operand_def(TensorType)
    radices = prop_def(DenseArrayBase[IntegerType])
    sums = var_result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$args attr-dict `:` functional-type($args, $sums)"
    traits = traits_def(Pure())

    def __init__(self, args: Sequence[SSAValue], radices: Sequence[int]):
        results = [TensorType.get(tensor_type(a).dims[1:], True) for a in args]
        super().__init__(
            operands=[list(args)],
            result_types=[results],
            properties={"radices": _i64_array(radices)},
        )

    @property
    def radix_values(self) -> tuple[int, ...]:
        return _int_tuple(self.radices)

    def verify_(self) -> None:
        if len(self.args) != len(self.sums) or len(self.args) != len(self.radix_values):
            raise VerifyException("stat.packed_sum needs one radix and one result per operand")
        if not self.args:
            raise VerifyException("stat.packed_sum needs at least one operand")
        row = tensor_type(self.args[0]).dims[0] if tensor_type(self.args[0]).dims else None
        for a, s, r in zip(self.args, self.sums, self.radix_values, strict=True):
            ty = tensor_type(a)
            if not ty.is_secret or not ty.dims or ty.dims[0] != row:
                raise VerifyException(
                    f"stat.packed_sum operands are secret arrays over one row axis, got "
                    f"{format_shape(ty.dims)}"
                )
            _expect_shape("result", tensor_type(s), ty.dims[1:])
            if r < 2:
                raise VerifyException(f"stat.packed_sum radix {r} must be >= 2")


@irdl_op_definition
class RevealOp(_Named):
    """Decryption by the coordinator: the result is public and only the client block uses it."""

    name = "stat.reveal"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym $input attr-dict `:` type($input) `->` type($result)"
    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym: str, operand: SSAValue):
        res = tensor_type(operand).with_secrecy(False)
        super().__init__(
            operands=[operand], result_types=[res], properties={"sym": StringAttr(sym)}
        )

    def verify_(self) -> None:
        res = tensor_type(self.result)
        _expect_shape("result", res, tensor_type(self.input).dims)
        _expect_secrecy("result", res, False)


@irdl_op_definition
class OutputOp(_Named):
    """A named result of the client block."""

    name = "stat.output"

    input = operand_def(TensorType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym $input attr-dict `:` type($input)"
    traits = lazy_traits_def(lambda: (HasParent(ClientOp),))

    def __init__(self, sym: str, operand: SSAValue):
        super().__init__(operands=[operand], properties={"sym": StringAttr(sym)})

    def verify_(self) -> None:
        _expect_secrecy("a client output", tensor_type(self.input), False)


@irdl_op_definition
class ClientOp(SingleBlock, IRDLOperation):
    """The client block: public post-processing of revealed values by the coordinator."""

    name = "stat.client"

    body = region_def()

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$body attr-dict"
    traits = lazy_traits_def(lambda: (NoTerminator(), HasParent(ProgramOp)))

    def __init__(self, body: Region | None = None):
        super().__init__(regions=[body or Region(Block())])

    def outputs(self) -> list[OutputOp]:
        return [op for op in self._ops() if isinstance(op, OutputOp)]

    def verify_(self) -> None:
        inside = {id(op) for op in self.body.walk()}
        for op in self.body.walk():
            for result in op.results:
                _expect_secrecy(
                    f"a value in the client block ({op.name})", tensor_type(result), False
                )
            for operand in op.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and id(owner) not in inside:
                    _expect_secrecy(
                        "a server value used by the client block", tensor_type(operand), False
                    )


@irdl_op_definition
class ProgramOp(NamedRegionOp):
    """A whole hec program; see the module docstring for the order of its ops."""

    name = "stat.program"

    def params(self) -> dict[str, int]:
        return {op.sym_value: op.bound_value for op in self._ops() if isinstance(op, ParamOp)}

    def inputs(self) -> list[InputOp]:
        return [op for op in self._ops() if isinstance(op, InputOp)]

    def reveals(self) -> list[RevealOp]:
        return [op for op in self._ops() if isinstance(op, RevealOp)]

    def client(self) -> ClientOp | None:
        found = [op for op in self._ops() if isinstance(op, ClientOp)]
        return found[0] if found else None

    def server_ops(self) -> Iterator[Operation]:
        """The ops the server evaluates (everything but the client block)."""
        return (op for op in self._ops() if not isinstance(op, ClientOp))

    def verify_(self) -> None:
        params = self.params()
        ops = self._ops()
        names: set[str] = set()
        for op in ops:
            if isinstance(op, ParamOp | InputOp | RevealOp):
                if op.sym_value in names:
                    raise VerifyException(f"name {op.sym_value!r} is declared twice")
                names.add(op.sym_value)
        clients = [i for i, op in enumerate(ops) if isinstance(op, ClientOp)]
        if len(clients) > 1 or (clients and clients[0] != len(ops) - 1):
            raise VerifyException("at most one stat.client, and it must be the last op")
        for op in self.body.walk():
            for value in [*op.operands, *op.results]:
                for d in tensor_type(value).dims if isinstance(value.type, TensorType) else ():
                    if isinstance(d, str) and d not in params:
                        raise VerifyException(f"dimension {d} is not a declared stat.param")
            if isinstance(op, SizeOp) and op.sym_value not in params:
                raise VerifyException(f"stat.size of undeclared parameter {op.sym_value}")
            if isinstance(op, DetOp | AdjOp | EyeOp):
                k = tensor_type(op.results[0] if isinstance(op, EyeOp) else op.input).dims[0]
                if isinstance(k, str) and params.get(k, 0) > MAX_SMALL_MATRIX:
                    raise VerifyException(
                        f"{op.name} on a {k} x {k} matrix needs {k} <= {MAX_SMALL_MATRIX}, "
                        f"but its bound is {params[k]}"
                    )
        client = self.client()
        client_ops = {id(op) for op in client.body.walk()} if client else set()
        for reveal in self.reveals():
            for use in reveal.result.uses:
                if id(use.operation) not in client_ops:
                    raise VerifyException(
                        f"revealed value {reveal.sym_value!r} is used outside stat.client"
                    )


Stat = Dialect(
    "stat",
    [
        ProgramOp,
        ParamOp,
        SizeOp,
        InputOp,
        OwnerComputeOp,
        PackedSumOp,
        ConstantOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        NegOp,
        PowOp,
        PolyOp,
        BroadcastOp,
        MatmulOp,
        SumOp,
        MeanOp,
        TransposeOp,
        DetOp,
        AdjOp,
        EyeOp,
        IndexOp,
        RevealOp,
        SqrtOp,
        AbsOp,
        ExpOp,
        LogOp,
        NormSfOp,
        NormCdfOp,
        Chi2SfOp,
        ClientOp,
        OutputOp,
    ],
    [TensorType, IntervalAttr, SetAttr],
)
