"""Checks a parsed hec program: names, shapes, broadcasting, secrecy, value domains, reveals
and the client block, and annotates every expression with its `ValueType`.

Rules (each violation is a located `UserError` with a next step; all errors of a program are
reported together as one `ProgramErrors`):
- every name is declared before use, once; size parameters have a whole-number bound in
  [1, 2^40]; a secret value's exponent, and the degree of a polynomial of one, is at most 63;
- shapes follow `dsl/shapes.py` for elementwise operations and vector/matrix rules for `@`;
- division, sqrt, abs, exp, log and the distribution functions need public operands outside
  the client block (the divisor of `/` must be public; the numerator may be secret);
- every secret value has a finite domain: secret inputs declare one (`in {..}` / `in [..]`)
  and secret values may not be computed from unbounded public values (for example a public
  input without a domain, or a division whose divisor can be zero). The numeric range of each
  secret value is the range-analysis pass's job; the checker only guarantees one exists;
- a name is revealed at most once; the client block sees revealed values, public values and
  its own bindings, never an unrevealed secret;
- `inv(A)` of a secret matrix is only the whole expression of `reveal B = inv(A)`: the server
  reveals `B_adj = adj(A)` and `B_det = det(A)` and the client divides (`inverse_parts`);
  anywhere else the inverse would feed encrypted computation, which needs a division;
- `inv_approx(A, steps)` takes a bounded real k x k matrix (k small) and a constant number of
  Newton-Schulz steps in 1..16; its result is an ordinary matrix, bounded by the iteration's
  proven range (compiler/analysis/newton_schulz.py);
- integer and Boolean values (`input a: secret[N] u8`, docs/language.md) wrap around at their
  width and combine elementwise with values of the same type (equal shapes or a scalar) or with
  whole-number constants that fit it; mixing them with real values needs an explicit
  conversion (`u16(a)`, `real(a)` on public values); shift and rotation amounts are constants
  below the width; a constant divisor is not zero; `/` and `%` are unsigned.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from compiler.analysis.newton_schulz import MAX_STEPS, NewtonSchulz
from compiler.analysis.polynomial import MAX_DEGREE
from compiler.errors import UserError
from compiler.types import (
    Dim,
    Domain,
    FiniteSet,
    Interval,
    Shape,
    dim_bound,
    domain_interval,
    format_shape,
)
from dsl import ast
from dsl.shapes import BroadcastError, broadcast_plan

MAX_SMALL_MATRIX = 6
MAX_RANK = 2
# Limits of what can compile: a size bound that fits the IR's 64-bit integers with room for
# products of sizes, and the largest power of a secret value (depth 6, the polynomial planner's
# limit, compiler/analysis/polynomial.py; whether the value's range fits the modulus is the
# parameter search's question, answered with a located error).
MAX_SIZE_BOUND = 2**40
MAX_SECRET_EXPONENT = MAX_DEGREE
PUBLIC_FUNCTIONS = {"sqrt", "abs", "exp", "log", "norm_sf", "norm_cdf", "chi2_sf"}
UNBOUNDED = Interval(-math.inf, math.inf)


@dataclass(frozen=True)
class IntType:
    """An integer element type of `width` bits in two's complement (`signed`) or unsigned;
    bool is the unsigned 1-bit type. Arithmetic wraps around modulo 2^width."""

    signed: bool
    width: int

    @property
    def name(self) -> str:
        if self.width == 1 and not self.signed:
            return "bool"
        return f"{'i' if self.signed else 'u'}{self.width}"

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def describe(self) -> str:
        return f"{self.name} ({self.lo}..{self.hi})"


BOOL = IntType(False, 1)
INT_TYPES: dict[str, IntType] = {"bool": BOOL} | {
    f"{'i' if signed else 'u'}{w}": IntType(signed, w)
    for signed in (False, True)
    for w in (8, 16, 32, 64)
}
# Functions on integer values; the type names convert between integer types.
INT_FUNCTIONS = {"min", "max", "select", "popcount", "rotl", "rotr", "real"} | set(INT_TYPES)
# Operators defined on integer (and Boolean) values only.
INT_OPERATORS = {"%", "<", "<=", ">", ">=", "==", "!=", "&", "|", "^", "<<", ">>"}
COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}
RESERVED = {"param", "input", "secret", "public", "in", "reveal", "client"} | set(INT_TYPES)
FUNCTIONS = (
    {"sum", "mean", "poly", "det", "adj", "inv", "inv_approx", "eye", "row", "col"}
    | PUBLIC_FUNCTIONS
    | INT_FUNCTIONS
)
_ARITY = {"poly": 2, "inv_approx": 2, "min": 2, "max": 2, "rotl": 2, "rotr": 2, "select": 3}


def newton_schulz(e: ast.Call, params: dict[str, int]) -> NewtonSchulz:
    """The iteration of a checked `inv_approx(A, steps)` call: A's dimension bound, the
    magnitude of A's range as the checker knows it, and the steps (what the lowering and the
    plaintext reference both compute with, so that they agree)."""
    a, steps = e.args[0].ty, e.args[1].ty
    assert a is not None and steps is not None and steps.const is not None, "a checked call"
    mag = max(abs(a.interval.lo), abs(a.interval.hi))
    return NewtonSchulz(dim_bound(a.shape[0], params), mag, int(steps.const))


def inverse_parts(name: str) -> tuple[str, str]:
    """The revealed adjugate and determinant of `reveal name = inv(A)` on a secret A."""
    return f"{name}_adj", f"{name}_det"


@dataclass(frozen=True)
class ValueType:
    """What the checker knows about a value.

    `interval` is a sound but loose numeric range (used to see whether a divisor can be zero);
    `bounded` says whether a finite range exists at all; `unbounded_why` names the cause when
    it does not; `const` is the value of a compile-time scalar constant.
    """

    shape: Shape
    secret: bool
    bounded: bool = True
    interval: Interval = UNBOUNDED
    const: float | None = None
    unbounded_why: str = ""
    # The element type of an integer or Boolean value; None for real values.
    int_type: IntType | None = None


@dataclass
class Binding:
    kind: str  # "param", "input", "let", "client"
    ty: ValueType
    span: ast.Span
    revealed_at: ast.Span | None = None
    domain: Domain | None = None


@dataclass
class CheckedProgram:
    """A program that passed every check; expressions carry their `ty`."""

    program: ast.Program
    params: dict[str, int]
    bindings: dict[str, Binding]
    reveals: list[ast.Reveal] = field(default_factory=list)
    client: ast.ClientBlock | None = None
    # Names of `reveal B = inv(A)` on a secret A (revealed as adj and det, divided by the client).
    inverses: set[str] = field(default_factory=set)

    @property
    def source(self) -> ast.Source:
        return self.program.source

    def summary(self) -> str:
        secret = [n for n, b in self.bindings.items() if b.kind == "input" and b.ty.secret]
        public = [n for n, b in self.bindings.items() if b.kind == "input" and not b.ty.secret]
        outputs = len(self.client.lets) if self.client else 0
        return (
            f"{self.source.filename}: ok: {len(self.params)} size parameters, "
            f"{len(secret)} secret and {len(public)} public inputs, "
            f"{len(self.reveals)} revealed values, {outputs} client outputs"
        )


class ProgramErrors(UserError):  # noqa: N818 (a UserError, named for what it holds)
    """All the errors found in one program, printed one after another."""

    def __init__(self, errors: list[UserError]):
        super().__init__(errors[0].message, errors[0].location, errors[0].hint)
        self.errors = errors

    def __str__(self) -> str:
        count = len(self.errors)
        tail = f"\n{count} errors" if count > 1 else ""
        return "\n".join(UserError.__str__(e) for e in self.errors) + tail


class _PoisonedError(Exception):
    """A statement uses a name whose definition already failed: no second error."""


def _safe(make: Callable[[], Interval]) -> Interval:
    try:
        return make()
    except (ValueError, OverflowError):
        return UNBOUNDED


def _describe(ty: ValueType) -> str:
    kind = "secret" if ty.secret else "public"
    element = f" {ty.int_type.name}" if ty.int_type else ""
    return f"{kind} {format_shape(ty.shape)}{element}"


def _whole(value: float) -> int | None:
    return int(value) if math.isfinite(value) and value == int(value) else None


# The largest size bound: sizes are i64 attributes in the IR.
MAX_BOUND = 2**62


class Checker:
    """One pass over the statements in order; see the module docstring for the rules."""

    def __init__(self, program: ast.Program):
        self.program = program
        self.source = program.source
        self.params: dict[str, int] = {}
        self.bindings: dict[str, Binding] = {}
        self.poisoned: set[str] = set()
        self.errors: list[UserError] = []
        self.reveals: list[ast.Reveal] = []
        self.client: ast.ClientBlock | None = None
        self.in_client = False
        self.inverses: set[str] = set()
        # The `inv(A)` call that is the whole expression of the reveal being checked.
        self.revealed_inverse: ast.Call | None = None

    # ------------------------------------------------------------------------------ errors
    def error(self, span: ast.Span, message: str, hint: str = "") -> UserError:
        return UserError(message, self.source.location(span), hint)

    # --------------------------------------------------------------------------- program
    def run(self) -> CheckedProgram:
        for stmt in self.program.statements:
            if self.client is not None:
                self.errors.append(
                    self.error(
                        stmt.span,
                        "statement after the client block",
                        "the client block comes last: move this statement above it",
                    )
                )
                break
            try:
                self.statement(stmt)
            except UserError as err:
                self.errors.append(err)
                self._poison(stmt)
            except _PoisonedError:
                self._poison(stmt)
        if self.errors:
            raise ProgramErrors(self.errors)
        return CheckedProgram(
            self.program, self.params, self.bindings, self.reveals, self.client, self.inverses
        )

    def _poison(self, stmt: ast.Statement) -> None:
        name = getattr(stmt, "name", None)
        if isinstance(name, str) and name not in self.bindings:
            self.poisoned.add(name)

    def statement(self, stmt: ast.Statement) -> None:
        match stmt:
            case ast.ParamDecl():
                self.param(stmt)
            case ast.InputDecl():
                self.input(stmt)
            case ast.Let():
                self.let(stmt, kind="let")
            case ast.Reveal():
                self.reveal(stmt)
            case ast.ClientBlock():
                self.client_block(stmt)

    def define(self, name: str, span: ast.Span, binding: Binding) -> None:
        if name in RESERVED:
            raise self.error(span, f"'{name}' is a reserved word", "choose another name")
        if name in FUNCTIONS:
            raise self.error(span, f"'{name}' is the name of a function", "choose another name")
        if name in self.bindings:
            first = self.bindings[name].span
            raise self.error(
                span,
                f"'{name}' is already defined (line {first.line})",
                "every name is defined once: choose another name",
            )
        self.bindings[name] = binding

    def param(self, stmt: ast.ParamDecl) -> None:
        bound = _whole(stmt.bound)
        if bound is None or bound < 1 or bound > MAX_BOUND:
            raise self.error(
                stmt.bound_span,
                f"the bound of size parameter '{stmt.name}' must be a whole number >= 1 and "
                f"<= 2^62, got {stmt.bound:g}",
                f"for example: param {stmt.name} <= 100000",
            )
        if bound > MAX_SIZE_BOUND:
            raise self.error(
                stmt.bound_span,
                f"the bound of size parameter '{stmt.name}' is {stmt.bound:g}, above the "
                f"largest size hec compiles for, 2^40 = {MAX_SIZE_BOUND}",
                "sizes index ciphertext arrays and count individuals: use a realistic bound, "
                f"for example: param {stmt.name} <= 1000000",
            )
        ty = ValueType((), False, True, Interval(1.0, float(bound)))
        self.define(stmt.name, stmt.span, Binding("param", ty, stmt.span))
        self.params[stmt.name] = bound

    def dim(self, ref: ast.DimRef) -> Dim:
        if isinstance(ref.value, str):
            if ref.value in self.poisoned:
                raise _PoisonedError()
            if ref.value not in self.params:
                hint = "declare it first: param NAME <= BOUND"
                if ref.value in self.bindings:
                    hint = f"'{ref.value}' is not a size parameter; {hint}"
                raise self.error(ref.span, f"unknown size parameter '{ref.value}'", hint)
            return ref.value
        size = _whole(ref.value)
        if size is None or size < 1:
            raise self.error(
                ref.span,
                f"a dimension must be a size parameter or a whole number >= 1, got {ref.value:g}",
            )
        return size

    def input(self, stmt: ast.InputDecl) -> None:
        if len(stmt.shape) > MAX_RANK:
            raise self.error(
                stmt.span,
                f"input '{stmt.name}' has {len(stmt.shape)} dimensions; at most {MAX_RANK}",
                "inputs are scalars, vectors [N] or matrices [N, M]",
            )
        shape = tuple(self.dim(d) for d in stmt.shape)
        domain: Domain | None = None
        if stmt.int_type is not None:
            t = INT_TYPES[stmt.int_type.name]
            domain = Interval(float(t.lo), float(t.hi))
            ty = ValueType(shape, stmt.secret, True, domain, int_type=t)
            self.define(stmt.name, stmt.span, Binding("input", ty, stmt.span, domain=domain))
            return
        if stmt.domain is not None:
            domain = self.domain(stmt.domain)
        elif stmt.secret:
            # Bind the input anyway so that later uses are checked, not reported again.
            ty = ValueType(shape, True, True, UNBOUNDED)
            self.define(stmt.name, stmt.span, Binding("input", ty, stmt.span))
            example = f"input {stmt.name}: secret{format_shape(shape) if shape else ''}"
            raise self.error(
                stmt.span,
                f"secret input '{stmt.name}' has no value domain, so no precision can be "
                "promised for anything computed from it",
                f"declare its values: `{example} in [lo, hi]` or a finite set `in {{0, 1, 2}}`",
            )
        if domain is None:
            ty = ValueType(
                shape, stmt.secret, False, UNBOUNDED, None, f"'{stmt.name}' has no domain"
            )
        else:
            ty = ValueType(shape, stmt.secret, True, domain_interval(domain))
        self.define(stmt.name, stmt.span, Binding("input", ty, stmt.span, domain=domain))

    def domain(self, decl: ast.DomainDecl) -> Domain:
        if any(not math.isfinite(v) for v in decl.values):
            raise self.error(decl.span, "domain bounds must be finite numbers")
        if decl.kind == "interval":
            lo, hi = decl.values
            if lo > hi:
                raise self.error(
                    decl.span,
                    f"empty interval [{lo:g}, {hi:g}]: the lower bound exceeds the upper",
                    f"write [{hi:g}, {lo:g}]",
                )
            return Interval(lo, hi)
        return FiniteSet(tuple(sorted(set(decl.values))))

    def let(self, stmt: ast.Let, kind: str) -> None:
        ty = self.expr(stmt.expr)
        self.define(stmt.name, stmt.name_span, Binding(kind, ty, stmt.name_span))

    def reveal(self, stmt: ast.Reveal) -> None:
        if isinstance(stmt.expr, ast.Call) and stmt.expr.func == "inv":
            self.revealed_inverse = stmt.expr
        try:
            if stmt.expr is not None:
                self.let(ast.Let(stmt.span, stmt.name, stmt.name_span, stmt.expr), kind="let")
        finally:
            self.revealed_inverse = None
        expr = stmt.expr
        if isinstance(expr, ast.Call) and expr.func == "inv" and expr.ty and expr.ty.secret:
            self.reveal_inverse(stmt)
        binding = self.lookup(stmt.name, stmt.name_span)
        if binding.kind == "param":
            raise self.error(
                stmt.name_span,
                f"'{stmt.name}' is a size parameter; it is public and needs no reveal",
            )
        if binding.revealed_at is not None:
            raise self.error(
                stmt.name_span,
                f"'{stmt.name}' is already revealed (line {binding.revealed_at.line})",
                "reveal each value once; the client block may use it as often as needed",
            )
        binding.revealed_at = stmt.name_span
        self.reveals.append(stmt)

    def reveal_inverse(self, stmt: ast.Reveal) -> None:
        """`reveal B = inv(A)`, A secret: B_adj and B_det are revealed in its place."""
        ty = self.bindings[stmt.name].ty
        for part in inverse_parts(stmt.name):
            if part in self.bindings or part in self.poisoned:
                raise self.error(
                    stmt.name_span,
                    f"`reveal {stmt.name} = inv(...)` reveals the adjugate and the determinant "
                    f"as {' and '.join(inverse_parts(stmt.name))}, but '{part}' is already "
                    "defined",
                    "choose another name for the inverse or for that value",
                )
        adj, det = inverse_parts(stmt.name)
        for part, shape in ((adj, ty.shape), (det, ())):
            part_ty = ValueType(shape, True, True, UNBOUNDED)
            self.bindings[part] = Binding("let", part_ty, stmt.name_span, stmt.name_span)
        self.inverses.add(stmt.name)

    def client_block(self, stmt: ast.ClientBlock) -> None:
        self.client = stmt
        self.in_client = True
        for let in stmt.lets:
            try:
                self.let(let, kind="client")
            except UserError as err:
                self.errors.append(err)
                self._poison(let)
            except _PoisonedError:
                self._poison(let)

    # ------------------------------------------------------------------------- expressions
    def lookup(self, name: str, span: ast.Span) -> Binding:
        if name in self.poisoned:
            raise _PoisonedError()
        binding = self.bindings.get(name)
        if binding is None:
            close = difflib.get_close_matches(name, [*self.bindings, *FUNCTIONS], n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            hint += f"define '{name}' before this line (`input {name}: ...` or `{name} = ...`)"
            raise self.error(span, f"unknown name '{name}'", hint)
        return binding

    def expr(self, e: ast.Expr) -> ValueType:
        ty = self._expr(e)
        if ty.secret and not ty.bounded:
            raise self.error(
                e.span,
                f"this secret value has no finite bound ({ty.unbounded_why}), so no precision "
                "can be promised",
                "give every public input used here a domain (`in [lo, hi]`), and divide only "
                "by values that cannot be zero",
            )
        e.ty = ty
        return ty

    def _expr(self, e: ast.Expr) -> ValueType:
        match e:
            case ast.Number():
                return ValueType((), False, True, Interval.point(e.value), e.value)
            case ast.Name():
                return self.name(e)
            case ast.Binary():
                return self.binary(e)
            case ast.Neg():
                t = self.expr(e.operand)
                if t.int_type is not None:
                    return self.int_unary(e, t, "-")
                const = None if t.const is None else -t.const
                return ValueType(t.shape, t.secret, t.bounded, -t.interval, const, t.unbounded_why)
            case ast.Pow():
                return self.power(e)
            case ast.BitNot():
                return self.int_unary(e, self.expr(e.operand), "~")
            case ast.Transpose():
                t = self.expr(e.operand)
                self.not_integer(e, t, "'.T'")
                if len(t.shape) != 2:
                    raise self.error(
                        e.span,
                        f"'.T' needs a matrix, but the operand is {_describe(t)}",
                        "`@` uses a vector as a row or a column as needed; "
                        "row(v) and col(v) make 1 x n and n x 1 matrices",
                    )
                return ValueType(
                    t.shape[::-1], t.secret, t.bounded, t.interval, None, t.unbounded_why
                )
            case ast.Index():
                return self.index(e)
            case ast.Call():
                return self.call(e)
            case ast.ListLit():
                raise self.error(
                    e.span,
                    "a list [...] is only allowed as the coefficients of poly(x, [c0, c1, ...])",
                )
            case _:
                raise AssertionError(f"unknown expression {e!r}")

    def name(self, e: ast.Name) -> ValueType:
        binding = self.lookup(e.name, e.span)
        if self.in_client and binding.ty.secret and binding.kind != "client":
            if binding.revealed_at is None:
                raise self.error(
                    e.span,
                    f"the client block cannot use '{e.name}': it is secret and was not revealed",
                    f"reveal it before the client block: `reveal {e.name}`",
                )
            t = binding.ty
            return ValueType(
                t.shape, False, t.bounded, t.interval, t.const, t.unbounded_why, t.int_type
            )
        return binding.ty

    def _combine(self, a: ValueType, b: ValueType, shape: Shape, interval: Interval) -> ValueType:
        bounded = a.bounded and b.bounded
        why = a.unbounded_why or b.unbounded_why
        return ValueType(shape, a.secret or b.secret, bounded, interval, None, why)

    def binary(self, e: ast.Binary) -> ValueType:
        a = self.expr(e.lhs)
        b = self.expr(e.rhs)
        if a.int_type is not None or b.int_type is not None or e.op in INT_OPERATORS:
            return self.int_binary(e, a, b)
        if e.op == "@":
            return self.matmul(e, a, b)
        if e.op == "/" and b.secret and not self.in_client:
            raise self.error(
                e.rhs.span,
                "division by a secret value is not possible under encryption",
                "reveal the numerator and the denominator (`reveal num = ...`, "
                "`reveal den = ...`) and divide in the client block: "
                "`client { ratio = num / den }`",
            )
        try:
            plan = broadcast_plan(a.shape, b.shape)
        except BroadcastError as err:
            if err.ambiguous:
                vec = a if len(a.shape) == 1 else b
                raise self.error(
                    e.span,
                    f"ambiguous broadcast in '{e.op}': the vector {format_shape(vec.shape)} "
                    f"matches both the rows and the columns of the matrix "
                    f"{format_shape((b if vec is a else a).shape)}",
                    "say which one you mean: row(v) repeats v along every row (one value per "
                    "column), col(v) repeats it along every column (one value per row)",
                ) from None
            raise self.error(
                e.span,
                f"shape mismatch in '{e.op}': left is {_describe(a)}, right is {_describe(b)}",
                "elementwise operations need equal shapes, a scalar on one side, or a vector "
                "whose length matches the rows or the columns of the matrix",
            ) from None
        ia, ib = a.interval, b.interval
        if e.op == "/":
            recip = ib.reciprocal()
            if recip is None:
                why = f"the divisor can be zero: its range is [{ib.lo:g}, {ib.hi:g}]"
                return ValueType(plan.shape, a.secret, False, UNBOUNDED, None, why)
            interval = _safe(lambda: ia * recip)
        elif e.op == "+":
            interval = _safe(lambda: ia + ib)
        elif e.op == "-":
            interval = _safe(lambda: ia - ib)
        else:
            interval = _safe(lambda: ia * ib)
        ty = self._combine(a, b, plan.shape, interval)
        if a.const is not None and b.const is not None:
            value = {"+": a.const + b.const, "-": a.const - b.const, "*": a.const * b.const}
            const = value.get(e.op, a.const / b.const if b.const else None)
            if const is not None and math.isfinite(const):
                ty = ValueType((), False, True, Interval.point(const), const)
        return ty

    def matmul(self, e: ast.Binary, a: ValueType, b: ValueType) -> ValueType:
        if not a.shape or not b.shape:
            raise self.error(
                e.span,
                f"'@' needs vectors or matrices, got {_describe(a)} @ {_describe(b)}",
                "use '*' to multiply by a scalar",
            )
        inner_a, inner_b = a.shape[-1], b.shape[0]
        if inner_a != inner_b:
            raise self.error(
                e.span,
                f"shape mismatch in '@': left is {_describe(a)}, right is {_describe(b)}; "
                f"the inner sizes {inner_a} and {inner_b} differ",
                "the last size on the left must equal the first size on the right; "
                "transpose a matrix with '.T' if needed",
            )
        shape = a.shape[:-1] + b.shape[1:]
        count = dim_bound(inner_a, self.params)
        interval = _safe(lambda: (a.interval * b.interval).scaled_sum(count))
        return self._combine(a, b, shape, interval)

    def power(self, e: ast.Pow) -> ValueType:
        t = self.expr(e.base)
        if t.int_type is not None:  # `a ^ 3` on integers: XOR with a constant
            self.fitting_constant(e.exponent, e.exponent_span, t.int_type)
            return ValueType(
                t.shape, t.secret, True, Interval(t.int_type.lo, t.int_type.hi), int_type=t.int_type
            )
        k = _whole(e.exponent)
        if k is None or k < 1:
            raise self.error(
                e.exponent_span,
                f"the exponent must be a whole number >= 1, got {e.exponent:g}",
                "write x^2, x^3, ...; for other powers reveal x and use exp/log in the client",
            )
        if t.secret and k > MAX_SECRET_EXPONENT:
            raise self.error(
                e.exponent_span,
                f"the exponent of a secret value is at most {MAX_SECRET_EXPONENT}, got {k}: "
                "the encrypted power's range and depth exceed what the parameters can hold",
                "reveal the base and take the power in the client block, or lower the degree",
            )
        const = None
        if t.const is not None:
            try:
                const = t.const**k
            except OverflowError:  # a float power raises instead of giving inf (found by fuzzing)
                const = None
            if const is not None and not math.isfinite(const):
                const = None
        interval = _safe(lambda: t.interval.power(k))
        return ValueType(t.shape, t.secret, t.bounded, interval, const, t.unbounded_why)

    # ------------------------------------------------------------------ integers and Booleans
    def not_integer(self, e: ast.Expr, t: ValueType, what: str) -> None:
        """Refuses an integer value where only real values are defined."""
        if t.int_type is not None:
            raise self.error(
                e.span,
                f"{what} is defined on real values, but this is {_describe(t)}",
                "integer values combine elementwise (+ - * / % & | ^ ~ << >>, comparisons, "
                "min, max, select, popcount, rotl, rotr); convert a public one with real(x)",
            )

    def fitting_constant(self, value: float, span: ast.Span, t: IntType) -> int:
        """A whole-number constant that fits `t`."""
        whole = _whole(value)
        if whole is None or not t.lo <= whole <= t.hi:
            raise self.error(
                span,
                f"the constant {value:g} does not fit in {t.describe()}"
                if whole is not None
                else f"the constant {value:g} is not a whole number, so it cannot meet {t.name}",
                f"use a constant in {t.lo}..{t.hi}, or widen the value first: "
                f"{'i' if t.signed else 'u'}{min(2 * t.width, 64) if t.width > 1 else 8}(x)"
                if whole is not None
                else f"use a whole number in {t.lo}..{t.hi}; for real arithmetic convert a "
                "revealed integer in the client block: real(x)",
            )
        return whole

    def int_operand_type(
        self, e: ast.Binary | ast.Call, a: ValueType, b: ValueType, spans: tuple[ast.Span, ast.Span]
    ) -> IntType:
        """The common integer type of two operands: equal types, or one integer and one
        whole-number constant that fits it; anything else needs a conversion."""
        ta, tb = a.int_type, b.int_type
        if ta is not None and tb is not None:
            if ta != tb:
                wider = ta if ta.width >= tb.width else tb
                raise self.error(
                    e.span,
                    f"mixing {ta.name} and {tb.name} needs an explicit conversion",
                    f"convert one side, for example {wider.name}(x): conversions zero- or "
                    "sign-extend, or wrap to the narrower width",
                )
            return ta
        t = ta or tb
        assert t is not None
        other, span = (b, spans[1]) if ta is not None else (a, spans[0])
        if other.const is None:
            raise self.error(
                e.span,
                f"mixing integer and real values needs an explicit conversion: one side is "
                f"{_describe(a)}, the other {_describe(b)}",
                f"declare the real input with an integer type (`input x: secret[N] {t.name}`), "
                "or reveal the integer and convert it in the client block with real(x)",
            )
        self.fitting_constant(other.const, span, t)
        return t

    def int_shape(self, e: ast.Expr, shapes: list[ValueType]) -> Shape:
        """Integer values combine elementwise: equal shapes or scalars."""
        arrays = {t.shape for t in shapes if t.shape}
        if len(arrays) > 1:
            raise self.error(
                e.span,
                "integer values combine elementwise: "
                + ", ".join(_describe(t) for t in shapes)
                + " have different shapes",
                "give them one shape, or use a scalar on one side",
            )
        return next(iter(arrays), ())

    def _int_value(self, shape: Shape, secret: bool, t: IntType) -> ValueType:
        return ValueType(shape, secret, True, Interval(t.lo, t.hi), int_type=t)

    def int_unary(self, e: ast.Neg | ast.BitNot, t: ValueType, op: str) -> ValueType:
        it = t.int_type
        if it is None:
            raise self.error(
                e.span,
                f"'{op}' is bitwise NOT, defined on integer and bool values, but this is "
                f"{_describe(t)}",
                "declare the input with an integer type, for example "
                "`input a: secret[N] u8`, or `bool`",
            )
        if op == "-" and it == BOOL:
            raise self.error(
                e.span, "'-' on a bool value", "use ~b for NOT, or convert first: -u8(b)"
            )
        return self._int_value(t.shape, t.secret, it)

    def int_binary(self, e: ast.Binary, a: ValueType, b: ValueType) -> ValueType:
        if a.int_type is None and b.int_type is None:
            what = {
                "^": "'^' with a non-literal right side is XOR",
                "%": "'%' is the remainder of integer division",
            }.get(e.op, f"'{e.op}'")
            raise self.error(
                e.span,
                f"{what}, defined on integer and bool values; here the operands are "
                f"{_describe(a)} and {_describe(b)}",
                "declare the inputs with an integer type (`input a: secret[N] u8`); a power of "
                "a real value takes a whole-number literal exponent (x ^ 2)",
            )
        if e.op in ("@",):
            raise self.error(
                e.span,
                f"'@' is defined on real values, but an operand is "
                f"{_describe(a if a.int_type else b)}",
                "integer arrays combine elementwise",
            )
        secret = a.secret or b.secret
        shape = self.int_shape(e, [a, b])
        if e.op in ("<<", ">>"):
            t = a.int_type
            if t is None:
                raise self.error(
                    e.lhs.span,
                    f"'{e.op}' shifts an integer value, but the left side is {_describe(a)}",
                )
            self.shift_amount(e.rhs, b, t, e.op)
            return self._int_value(a.shape, a.secret, t)
        t = self.int_operand_type(e, a, b, (e.lhs.span, e.rhs.span))
        if e.op in COMPARISONS:
            return self._int_value(shape, secret, BOOL)
        if e.op in ("+", "-", "*", "/", "%") and t == BOOL:
            raise self.error(
                e.span,
                f"'{e.op}' on bool values",
                "use & (and), | (or), ^ (xor), ~ (not), or convert first: u8(b)",
            )
        if e.op in ("/", "%"):
            if t.signed:
                raise self.error(
                    e.span,
                    f"'{e.op}' on signed {t.name} values is not supported yet (TODO(#23))",
                    f"convert to unsigned first: u{t.width}(x) {e.op} u{t.width}(y)",
                )
            if b.int_type is None and b.const == 0:
                raise self.error(
                    e.rhs.span,
                    "division by a constant zero",
                    "divide by a non-zero constant or a value; an encrypted divisor of zero "
                    "gives the all-ones quotient and the dividend as the remainder",
                )
        return self._int_value(shape, secret, t)

    def shift_amount(self, e: ast.Expr, t: ValueType, of: IntType, what: str) -> int:
        k = None if t.const is None or t.int_type is not None else _whole(t.const)
        if k is None:
            raise self.error(
                e.span,
                f"the amount of '{what}' must be a constant whole number",
                "shifts and rotations by constants are wires; a data-dependent shift is not "
                "supported",
            )
        if not 0 <= k < of.width:
            raise self.error(
                e.span,
                f"shift by {k} is beyond the width of {of.name}: amounts are 0..{of.width - 1}",
                f"a shift by {of.width} or more leaves no bit of the value; widen it first "
                f"({'i' if of.signed else 'u'}{min(2 * of.width, 64)}(x)) or use a smaller amount",
            )
        return k

    def int_call(self, e: ast.Call) -> ValueType:
        args = [self.expr(a) for a in e.args]
        func = e.func
        if func == "real":
            (x,) = args
            if x.int_type is None:
                raise self.error(e.args[0].span, f"real() converts an integer, got {_describe(x)}")
            if x.secret:
                raise self.error(
                    e.args[0].span,
                    "real() of a secret integer: integer values are computed as Boolean "
                    "circuits and become real only after reveal",
                    "reveal the integer and call real() in the client block",
                )
            t = x.int_type
            return ValueType(x.shape, False, True, Interval(float(t.lo), float(t.hi)))
        if func in INT_TYPES:
            (x,) = args
            target = INT_TYPES[func]
            if x.int_type is None:
                if x.const is None:
                    raise self.error(
                        e.args[0].span,
                        f"{func}() converts integer values or constants, got {_describe(x)}",
                        "real values cannot become integers under encryption; declare the input "
                        f"as `{func}`",
                    )
                self.fitting_constant(x.const, e.args[0].span, target)
            return self._int_value(x.shape, x.secret, target)
        ints = [x for x in args if x.int_type is not None]
        if not ints:
            raise self.error(
                e.span,
                f"{func}() is defined on integer and bool values, but its arguments are "
                + ", ".join(_describe(x) for x in args),
                "declare the inputs with an integer type (`input a: secret[N] u8`)",
            )
        secret = any(x.secret for x in args)
        if func in ("rotl", "rotr"):
            x, k = args
            if x.int_type is None:
                raise self.error(e.args[0].span, f"{func}() rotates an integer value")
            self.shift_amount(e.args[1], k, x.int_type, func)
            return self._int_value(x.shape, x.secret, x.int_type)
        if func == "popcount":
            (x,) = args
            assert x.int_type is not None
            return self._int_value(x.shape, x.secret, x.int_type)
        if func == "select":
            cond, a, b = args
            if cond.int_type != BOOL:
                raise self.error(
                    e.args[0].span,
                    f"the condition of select() must be a bool, got {_describe(cond)}",
                    "compare to get a bool: select(a < b, a, b); or convert: bool(x) is x != 0",
                )
            if a.int_type is None and b.int_type is None:
                raise self.error(
                    e.span,
                    "select() chooses between integer values, but both are constants",
                    "convert one: select(c, u8(1), 0)",
                )
            t = self.int_operand_type(e, a, b, (e.args[1].span, e.args[2].span))
            return self._int_value(self.int_shape(e, args), secret, t)
        a, b = args  # min, max
        t = self.int_operand_type(e, a, b, (e.args[0].span, e.args[1].span))
        return self._int_value(self.int_shape(e, args), secret, t)

    # --------------------------------------------------------------------------- functions
    def call(self, e: ast.Call) -> ValueType:
        if e.func not in FUNCTIONS:
            close = difflib.get_close_matches(e.func, sorted(FUNCTIONS), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise self.error(
                e.func_span,
                f"unknown function '{e.func}'",
                hint + "functions: " + ", ".join(sorted(FUNCTIONS)),
            )
        allowed_kwargs = {"sum": {"axis"}, "mean": {"axis"}, "chi2_sf": {"df"}}.get(e.func, set())
        for kw in e.kwargs:
            if kw.name not in allowed_kwargs:
                raise self.error(
                    kw.span,
                    f"{e.func}() has no argument '{kw.name}'",
                    f"{e.func}() takes: {', '.join(sorted(allowed_kwargs)) or 'no keywords'}",
                )
        arity = _ARITY.get(e.func, 1)
        if len(e.args) != arity:
            raise self.error(
                e.span,
                f"{e.func}() takes {arity} argument{'s' if arity > 1 else ''}, got {len(e.args)}",
                self._usage(e.func),
            )
        if e.func == "poly":
            return self.poly(e)
        if e.func == "eye":
            return self.eye(e)
        if e.func in INT_FUNCTIONS:
            return self.int_call(e)
        x = self.expr(e.args[0])
        self.not_integer(e.args[0], x, f"{e.func}()")
        if e.func in ("sum", "mean"):
            return self.reduce(e, x)
        if e.func in ("det", "adj"):
            return self.small_matrix(e, x)
        if e.func == "inv":
            return self.inverse(e, x)
        if e.func == "inv_approx":
            return self.inv_approx(e, x)
        if e.func in ("row", "col"):
            if len(x.shape) != 1:
                raise self.error(
                    e.args[0].span,
                    f"{e.func}() needs a vector, got {_describe(x)}",
                    self._usage(e.func),
                )
            shape: Shape = (1, x.shape[0]) if e.func == "row" else (x.shape[0], 1)
            return ValueType(shape, x.secret, x.bounded, x.interval, None, x.unbounded_why)
        return self.public_function(e, x)

    @staticmethod
    def _usage(func: str) -> str:
        return {
            "sum": "sum(x) adds every element; sum(x, axis=0) adds down the columns",
            "mean": "mean(x) or mean(x, axis=0)",
            "poly": "poly(x, [c0, c1, c2]) is c0 + c1*x + c2*x^2",
            "det": "det(A) for a k x k matrix, k <= 6",
            "adj": "adj(A) for a k x k matrix, k <= 6",
            "inv": "inv(A) for a k x k matrix; on a secret A only as `reveal B = inv(A)`",
            "inv_approx": "inv_approx(A, steps): the Newton-Schulz approximate inverse of a "
            f"k x k matrix, k <= {MAX_SMALL_MATRIX}, after a constant number of steps in "
            f"1..{MAX_STEPS}",
            "eye": "eye(K) is the K x K identity, K a size parameter with bound <= 6 or a "
            "whole number <= 6",
            "row": "row(v) is v as a 1 x n matrix",
            "col": "col(v) is v as an n x 1 matrix",
            "chi2_sf": "chi2_sf(x, df=1)",
            "min": "min(a, b) of two integer values",
            "max": "max(a, b) of two integer values",
            "select": "select(c, a, b) is a where the bool c is 1, else b",
            "rotl": "rotl(x, k) rotates x left by the constant k",
            "rotr": "rotr(x, k) rotates x right by the constant k",
            "popcount": "popcount(x) counts the one bits of x",
        }.get(func, f"{func}(x)")

    def const_int(self, e: ast.Expr, what: str) -> int:
        t = self.expr(e)
        k = None if t.const is None else _whole(t.const)
        if k is None:
            raise self.error(e.span, f"{what} must be a constant whole number")
        return k

    def reduce(self, e: ast.Call, x: ValueType) -> ValueType:
        axes = tuple(range(len(x.shape)))
        for kw in e.kwargs:
            axis = self.const_int(kw.value, "the axis")
            if not 0 <= axis < len(x.shape):
                raise self.error(
                    kw.value.span,
                    f"axis {axis} is out of range for {_describe(x)}",
                    f"axes of a {len(x.shape)}-d value are 0..{len(x.shape) - 1}"
                    if x.shape
                    else "a scalar has no axes",
                )
            axes = (axis,)
        if not x.shape:
            raise self.error(e.args[0].span, f"{e.func}() of a scalar", "drop the call")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        count = math.prod(dim_bound(x.shape[i], self.params) for i in axes)
        interval = x.interval
        if e.func == "sum":
            interval = _safe(lambda: x.interval.scaled_sum(count))
        return ValueType(shape, x.secret, x.bounded, interval, None, x.unbounded_why)

    def small_matrix(self, e: ast.Call, x: ValueType) -> ValueType:
        if len(x.shape) != 2 or x.shape[0] != x.shape[1]:
            raise self.error(
                e.args[0].span,
                f"{e.func}() needs a square k x k matrix, got {_describe(x)}",
                self._usage(e.func),
            )
        k = x.shape[0]
        bound = dim_bound(k, self.params)
        if bound > MAX_SMALL_MATRIX:
            raise self.error(
                e.args[0].span,
                f"{e.func}() needs k <= {MAX_SMALL_MATRIX}, but the matrix is {k} x {k}"
                + (f" with {k} <= {bound}" if isinstance(k, str) else ""),
                "det and adj expand into k! products; use them on small covariate matrices",
            )
        # Hadamard-style bound: |det| <= k! * max|a|^k, |adj entries| <= (k-1)! max|a|^(k-1).
        mag = max(abs(x.interval.lo), abs(x.interval.hi))
        if e.func == "det":
            m = _safe(
                lambda: Interval(-1.0, 1.0) * Interval.point(math.factorial(bound) * mag**bound)
            )
            return ValueType((), x.secret, x.bounded, m, None, x.unbounded_why)
        m = _safe(
            lambda: (
                Interval(-1.0, 1.0)
                * Interval.point(math.factorial(bound - 1) * mag ** max(bound - 1, 0))
            )
        )
        return ValueType(x.shape, x.secret, x.bounded, m, None, x.unbounded_why)

    def inverse(self, e: ast.Call, x: ValueType) -> ValueType:
        if not x.secret:
            self.small_matrix(e, x)  # a k x k matrix, k <= 6: it is adj(A) / det(A)
            # A public inverse is unbounded (the matrix may be singular); it may be revealed
            # data in the client block or a public value, never mixed into a secret one.
            return ValueType(x.shape, False, False, UNBOUNDED, None, "an inverse matrix")
        if e is not self.revealed_inverse:
            raise self.error(
                e.span,
                "the inverse of a secret matrix is finished by the client (it needs a "
                "division), so it cannot feed further encrypted computation",
                "reveal it on its own, `reveal B = inv(A)` (the server reveals adj(A) and "
                "det(A), the client divides), or use Cramer's rule under encryption: "
                "inv(A) @ b = (adj(A) @ b) / det(A), so reveal `adj(A) @ b` and `det(A)` and "
                "divide in the client block",
            )
        self.small_matrix(e, x)
        return ValueType(x.shape, True, True, UNBOUNDED)

    def inv_approx(self, e: ast.Call, x: ValueType) -> ValueType:
        """`inv_approx(A, steps)`: A a bounded real k x k matrix, k small, steps a constant
        in 1..MAX_STEPS; the result is bounded by X_steps' proven range (newton_schulz.py)."""
        arg = e.args[0]
        if len(x.shape) != 2 or x.shape[0] != x.shape[1]:
            raise self.error(
                arg.span,
                f"inv_approx() needs a square k x k matrix, got {_describe(x)}",
                self._usage("inv_approx"),
            )
        k = x.shape[0]
        bound = dim_bound(k, self.params)
        if bound > MAX_SMALL_MATRIX:
            raise self.error(
                arg.span,
                f"inv_approx() needs k <= {MAX_SMALL_MATRIX}, but the matrix is {k} x {k}"
                + (f" with {k} <= {bound}" if isinstance(k, str) else ""),
                "the iteration multiplies k x k matrices kept one ciphertext per entry; use it "
                "on small (covariate) matrices",
            )
        t = self.expr(e.args[1])
        steps = None if t.const is None else _whole(t.const)
        if steps is None or not 1 <= steps <= MAX_STEPS:
            raise self.error(
                e.args[1].span,
                f"the number of steps of inv_approx() must be a constant whole number in "
                f"1..{MAX_STEPS}" + (f", got {t.const:g}" if t.const is not None else ""),
                "each step costs two levels (depth 2 steps + 1); the residual I - A X shrinks "
                "as (1 - s_min^2 / c)^(2^steps): docs/language.md, 'inv_approx'",
            )
        if not x.bounded or not x.interval.is_finite:
            raise self.error(
                arg.span,
                "inv_approx() needs a matrix with a bounded range (its initial scale 1/c comes "
                "from it), but this one is unbounded"
                + (f": {x.unbounded_why}" if x.unbounded_why else ""),
                "give the inputs it is computed from a domain (`in [-1.0, 1.0]`)",
            )
        mag = max(abs(x.interval.lo), abs(x.interval.hi))
        if mag == 0.0:
            raise self.error(
                arg.span,
                "inv_approx() of a matrix whose range is [0, 0]: it is the zero matrix, which "
                "has no inverse",
                "give the matrix a domain other than {0}",
            )
        iteration = NewtonSchulz(bound, mag, steps)
        interval = _safe(lambda: iteration.x_range(steps))
        return ValueType(x.shape, x.secret, True, interval, None, "")

    def index(self, e: ast.Index) -> ValueType:
        """`x[i, a:b, :]`: constant indices and slices of small axes (bound <= 6; any axis
        in the client block); the result drops indexed axes, and a cut axis has the literal
        size b - a."""
        t = self.expr(e.operand)
        self.not_integer(e.operand, t, "indexing")
        if len(e.subscripts) != len(t.shape):
            raise self.error(
                e.span,
                f"{len(e.subscripts)} subscripts for {_describe(t)}: give one per axis"
                if t.shape
                else "a scalar cannot be indexed",
                "write x[i] for a vector and x[i, j], x[:, j] or x[a:b, :] for a matrix"
                if t.shape
                else "drop the subscript",
            )
        shape: list[Dim] = []
        for axis, (dim, sub) in enumerate(zip(t.shape, e.subscripts, strict=True)):
            if isinstance(sub, ast.Slice) and sub.start is None and sub.stop is None:
                shape.append(dim)  # `:` keeps the axis
                continue
            bound = dim_bound(dim, self.params)
            if bound > MAX_SMALL_MATRIX and not self.in_client:  # the client indexes numpy
                raise self.error(
                    sub.span,
                    f"axis {axis} of {_describe(t)} has size {dim}"
                    + (f" <= {bound}" if isinstance(dim, str) else "")
                    + ", which is spread over ciphertext slots; only small axes (size <= "
                    f"{MAX_SMALL_MATRIX}: a size parameter with such a bound, or a literal size) "
                    "can be indexed or sliced",
                    "keep the whole axis with ':', or reduce over it with sum(x, axis=k)",
                )
            size = f"{dim} <= {bound}" if isinstance(dim, str) else f"{dim}"
            if not isinstance(sub, ast.Slice):
                i = self.subscript(sub)
                if i >= bound:
                    raise self.error(
                        sub.span,
                        f"index {i} is out of range for axis {axis} of size {size}",
                        f"indices of this axis are 0..{bound - 1}",
                    )
                continue
            start = 0 if sub.start is None else self.subscript(sub.start)
            if sub.stop is None and isinstance(dim, str):
                raise self.error(
                    sub.span,
                    f"a slice of axis {axis} (size {dim}) needs its end, so that its size is known",
                    f"write {start}:b with b <= {bound}, or ':' for the whole axis",
                )
            stop = bound if sub.stop is None else self.subscript(sub.stop)
            if not start < stop <= bound:
                raise self.error(
                    sub.span,
                    f"slice {start}:{stop} is empty or out of range for axis {axis} of size {size}",
                    f"a slice a:b takes entries a..b-1, with 0 <= a < b <= {bound}",
                )
            shape.append(stop - start)
        return ValueType(tuple(shape), t.secret, t.bounded, t.interval, None, t.unbounded_why)

    def subscript(self, e: ast.Expr) -> int:
        t = self.expr(e)
        i = None if t.const is None else _whole(t.const)
        if i is None or i < 0:
            raise self.error(
                e.span,
                "an index must be a constant whole number >= 0",
                "indices select fixed entries of small axes; a data-dependent index is not "
                "possible under encryption",
            )
        return i

    def eye(self, e: ast.Call) -> ValueType:
        arg = e.args[0]
        k: Dim
        if isinstance(arg, ast.Name) and arg.name in self.params:
            self.expr(arg)
            k = arg.name
        else:
            t = self.expr(arg)
            whole = None if t.const is None else _whole(t.const)
            if whole is None or whole < 1:
                raise self.error(
                    arg.span,
                    "eye() needs a size parameter or a constant whole number >= 1",
                    self._usage("eye"),
                )
            k = whole
        bound = dim_bound(k, self.params)
        if bound > MAX_SMALL_MATRIX:
            raise self.error(
                arg.span,
                f"eye() is for small matrices, k <= {MAX_SMALL_MATRIX}, but it is {k} x {k}"
                + (f" with {k} <= {bound}" if isinstance(k, str) else ""),
                "the identity is added to small (covariate) matrices, one ciphertext per entry",
            )
        return ValueType((k, k), False, True, Interval(0.0, 1.0))

    def poly(self, e: ast.Call) -> ValueType:
        x = self.expr(e.args[0])
        coeffs = e.args[1]
        if not isinstance(coeffs, ast.ListLit) or not coeffs.items:
            raise self.error(
                coeffs.span,
                "the second argument of poly() must be a non-empty list of constants",
                self._usage("poly"),
            )
        values = []
        for item in coeffs.items:
            t = self.expr(item)
            if t.const is None:
                raise self.error(
                    item.span,
                    "poly() coefficients must be constants (numbers or names bound to numbers)",
                    self._usage("poly"),
                )
            values.append(t.const)
        self.not_integer(e.args[0], x, "poly()")
        degree = max((i for i, c in enumerate(values) if c != 0.0), default=0)
        if x.secret and degree > MAX_DEGREE:
            raise self.error(
                coeffs.span,
                f"a polynomial of a secret value has degree at most {MAX_DEGREE}, got {degree}",
                "lower the degree, or reveal the argument and evaluate in the client block",
            )
        interval = Interval.point(0.0)
        for i, c in enumerate(values):
            term = _safe(
                lambda c=c, i=i: (
                    Interval.point(c) * (x.interval.power(i) if i else Interval.point(1.0))
                )
            )
            interval = _safe(lambda term=term, interval=interval: interval + term)
        return ValueType(x.shape, x.secret, x.bounded, interval, None, x.unbounded_why)

    def public_function(self, e: ast.Call, x: ValueType) -> ValueType:
        if x.secret:
            raise self.error(
                e.args[0].span,
                f"{e.func}() needs a public value, but its argument is secret",
                f"reveal the argument and call {e.func}() in the client block "
                "(or approximate it with poly())",
            )
        if e.func == "chi2_sf":
            df_kw = [kw for kw in e.kwargs if kw.name == "df"]
            if not df_kw:
                raise self.error(
                    e.span, "chi2_sf() needs its degrees of freedom", "chi2_sf(x, df=1)"
                )
            df = self.const_int(df_kw[0].value, "df")
            if df < 1:
                raise self.error(df_kw[0].value.span, f"df must be >= 1, got {df}")
        i = x.interval
        bounded = x.bounded
        why = x.unbounded_why
        if e.func in ("norm_sf", "norm_cdf", "chi2_sf"):
            interval, bounded, why = Interval(0.0, 1.0), True, ""
        elif e.func == "abs":
            interval = Interval(
                0.0 if i.contains(0.0) else min(abs(i.lo), abs(i.hi)), max(abs(i.lo), abs(i.hi))
            )
        elif e.func == "sqrt":
            interval = _safe(lambda: Interval(math.sqrt(max(i.lo, 0.0)), math.sqrt(max(i.hi, 0.0))))
        elif e.func == "exp":
            interval = _safe(lambda: Interval(_exp(i.lo), _exp(i.hi)))
        else:  # log
            if i.lo <= 0.0:
                interval, bounded = UNBOUNDED, False
                why = f"log of a value that can be <= 0: its range is [{i.lo:g}, {i.hi:g}]"
            else:
                interval = _safe(lambda: Interval(math.log(i.lo), math.log(i.hi)))
        return ValueType(x.shape, False, bounded, interval, None, why)


def _exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def check(program: ast.Program) -> CheckedProgram:
    """Check a parsed program; raises `ProgramErrors` listing every error found."""
    with ast.recursion_room():
        return Checker(program).run()
