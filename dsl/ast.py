"""The syntax tree of a hec program: one dataclass per construct, each with its source span.

The parser (`dsl/parser.py`) builds it; the checker (`dsl/checker.py`) fills in `Expr.ty`;
the lowering (`dsl/lower.py`) and the reference evaluator (`dsl/reference.py`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compiler.errors import SourceLocation

if TYPE_CHECKING:
    from dsl.checker import ValueType


@dataclass(frozen=True)
class Span:
    """1-based line and column of the first character, and of one past the last."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Source:
    """A program text and the name it is reported under."""

    filename: str
    text: str

    def location(self, span: Span) -> SourceLocation:
        lines = self.text.splitlines()
        line_text = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
        if span.end_line == span.line:
            length = max(1, span.end_column - span.column)
        else:
            length = max(1, len(line_text) - span.column + 1)
        return SourceLocation(
            self.filename, span.line, span.column, line_text.expandtabs(1), length
        )


# ---------------------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr:
    span: Span
    # Set by the checker: shape, secrecy, bounds, constant value.
    ty: ValueType | None = field(default=None, init=False, repr=False)


@dataclass(eq=False)
class Number(Expr):
    value: float


@dataclass(eq=False)
class Name(Expr):
    name: str


@dataclass(eq=False)
class Binary(Expr):
    op: str  # one of + - * / @
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class Neg(Expr):
    operand: Expr


@dataclass(eq=False)
class Pow(Expr):
    base: Expr
    exponent: float
    exponent_span: Span


@dataclass(eq=False)
class Transpose(Expr):
    operand: Expr


@dataclass(eq=False)
class ListLit(Expr):
    items: list[Expr]


@dataclass(eq=False)
class Kwarg:
    span: Span
    name: str
    value: Expr


@dataclass(eq=False)
class Call(Expr):
    func: str
    func_span: Span
    args: list[Expr]
    kwargs: list[Kwarg]


# ----------------------------------------------------------------------------- statements


@dataclass(eq=False)
class ParamDecl:
    span: Span
    name: str
    bound: float
    bound_span: Span


@dataclass(eq=False)
class DimRef:
    span: Span
    value: float | str  # a literal size or a size-parameter name


@dataclass(eq=False)
class DomainDecl:
    span: Span
    kind: str  # "set" or "interval"
    values: list[float]


@dataclass(eq=False)
class InputDecl:
    span: Span
    name: str
    secret: bool
    shape: list[DimRef]
    domain: DomainDecl | None


@dataclass(eq=False)
class Let:
    span: Span
    name: str
    name_span: Span
    expr: Expr


@dataclass(eq=False)
class Reveal:
    """`reveal x = expr` (binds and reveals) or `reveal x` (reveals an existing value)."""

    span: Span
    name: str
    name_span: Span
    expr: Expr | None


@dataclass(eq=False)
class ClientBlock:
    span: Span
    lets: list[Let]


Statement = ParamDecl | InputDecl | Let | Reveal | ClientBlock


@dataclass(eq=False)
class Program:
    source: Source
    statements: list[Statement]
