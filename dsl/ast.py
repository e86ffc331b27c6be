"""The syntax tree of a hec program: one dataclass per construct, each with its source span.

The parser (`dsl/parser.py`) builds it; the checker (`dsl/checker.py`) fills in `Expr.ty`;
the lowering (`dsl/lower.py`) and the reference evaluator (`dsl/reference.py`) read it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
    # + - * / @ on real values; on integers also % < <= > >= == != & | ^ << >>
    op: str
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class Neg(Expr):
    operand: Expr


@dataclass(eq=False)
class BitNot(Expr):
    """`~x`: bitwise complement of an integer (logical NOT of a bool)."""

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
class Slice:
    """`start:stop` in an index (either may be omitted; `:` alone keeps the whole axis)."""

    span: Span
    start: Expr | None
    stop: Expr | None


@dataclass(eq=False)
class Index(Expr):
    """`x[i, a:b]`: one subscript per axis, a constant index or a slice."""

    operand: Expr
    subscripts: list[Expr | Slice]


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
class TypeRef:
    """An element type written after an input's shape: bool, u8 ... u64, i8 ... i64."""

    span: Span
    name: str


@dataclass(eq=False)
class InputDecl:
    span: Span
    name: str
    secret: bool
    shape: list[DimRef]
    domain: DomainDecl | None
    int_type: TypeRef | None = None


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


# Expressions nest at most this deep (parentheses, operator chains): the checker, the lowering
# and the reference evaluator recurse over expressions, a few Python frames per level.
MAX_NESTING = 1000
_FRAMES_PER_LEVEL = 8


def children(e: Expr) -> list[Expr]:
    match e:
        case Binary():
            return [e.lhs, e.rhs]
        case Neg() | BitNot() | Transpose():
            return [e.operand]
        case Pow():
            return [e.base]
        case ListLit():
            return list(e.items)
        case Call():
            return [*e.args, *(kw.value for kw in e.kwargs)]
        case Index():
            out = [e.operand]
            for s in e.subscripts:
                if isinstance(s, Slice):
                    out.extend(x for x in (s.start, s.stop) if x is not None)
                else:
                    out.append(s)
            return out
        case _:
            return []


def subscript_ranges(e: Index) -> tuple[list[int], list[int], list[bool]]:
    """(starts, stops, drops) of a checked index, as `stat.index` takes them: stop -1 keeps the
    whole axis, a single index drops its axis, an open slice end stops at the axis' size
    (the checker allows that on literal sizes only)."""
    starts, stops, drops = [], [], []
    assert e.operand.ty is not None
    for dim, sub in zip(e.operand.ty.shape, e.subscripts, strict=True):
        if isinstance(sub, Slice):
            start = 0 if sub.start is None else _const_int(sub.start)
            if sub.stop is None:
                stop = -1 if sub.start is None else int(dim)
            else:
                stop = _const_int(sub.stop)
            starts.append(start)
            stops.append(stop)
            drops.append(False)
        else:
            i = _const_int(sub)
            starts.append(i)
            stops.append(i + 1)
            drops.append(True)
    return starts, stops, drops


def _const_int(e: Expr) -> int:
    assert e.ty is not None and e.ty.const is not None
    return int(e.ty.const)


def nesting(e: Expr) -> tuple[int, Expr]:
    """The depth of `e` and its deepest sub-expression, computed without recursion."""
    deepest, where = 0, e
    stack = [(e, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest, where = depth, node
        stack.extend((child, depth + 1) for child in children(node))
    return deepest, where


@contextmanager
def recursion_room() -> Iterator[None]:
    """Enough Python stack for expressions nested MAX_NESTING deep."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, MAX_NESTING * _FRAMES_PER_LEVEL + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def span_at(program: Program, line: int, column: int) -> Span:
    """The widest span of the program that starts at `line`:`column` (an expression or a
    statement): the span an op of the lowered IR was emitted for (its MLIR location keeps
    only the start), so a pass's error can underline the whole construct."""
    best = Span(line, column, line, column + 1)

    def wider(span: Span) -> None:
        nonlocal best
        if (span.line, span.column) == (line, column) and (span.end_line, span.end_column) > (
            best.end_line,
            best.end_column,
        ):
            best = span

    for stmt in program.statements:
        wider(stmt.span)
        roots: list[Expr] = []
        match stmt:
            case Let(expr=e) | Reveal(expr=e) if e is not None:
                roots.append(e)
            case ClientBlock():
                roots.extend(let.expr for let in stmt.lets)
            case _:
                pass
        stack = roots
        while stack:
            e = stack.pop()
            wider(e.span)
            stack.extend(children(e))
    return best
