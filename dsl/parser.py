"""Parses hec source text into the syntax tree of `dsl/ast.py` with the lark grammar
`dsl/grammar.lark` (LALR(1)); every lark error becomes a located `UserError`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.lexer import PatternStr
from lark.tree import Meta
from lark.visitors import Transformer_NonRecursive

from compiler.errors import SourceLocation, UserError
from dsl import ast

GRAMMAR = Path(__file__).with_name("grammar.lark")

# How terminals are named in "expected ..." messages.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "SECRECY": "'secret' or 'public'",
    "TRANSPOSE": "'.T'",
    "MINUS": "'-'",
    "INT_TYPE": "a type (bool, u8 ... u64, i8 ... i64)",
    "$END": "end of file",
}


_STATEMENT_KEYWORDS = {"param", "input", "reveal", "client"}


@cache
def _lark() -> Lark:
    return Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        propagate_positions=True,
    )


def _span(meta: Meta | Token) -> ast.Span:
    line = meta.line or 1
    column = meta.column or 1
    end_line = meta.end_line or line
    end_column = meta.end_column or column + 1
    return ast.Span(line, column, end_line, end_column)


def _join(a: ast.Span, b: ast.Span) -> ast.Span:
    return ast.Span(a.line, a.column, b.end_line, b.end_column)


@v_args(meta=True)
class _Builder(Transformer_NonRecursive):
    """Turns the lark tree into `dsl.ast` nodes."""

    def start(self, meta: Meta, items: list[ast.Statement]) -> list[ast.Statement]:
        return items

    # statements ---------------------------------------------------------------------------
    def param_decl(self, meta: Meta, items: list[Token]) -> ast.ParamDecl:
        name, bound = items
        return ast.ParamDecl(_span(meta), str(name), float(bound), _span(bound))

    def input_decl(self, meta: Meta, items: list[Any]) -> ast.InputDecl:
        name, secrecy, *rest = items
        shape: list[ast.DimRef] = []
        domain: ast.DomainDecl | None = None
        int_type: ast.TypeRef | None = None
        for item in rest:
            if isinstance(item, ast.DomainDecl):
                domain = item
            elif isinstance(item, Token):
                int_type = ast.TypeRef(_span(item), str(item))
            else:
                shape = item
        return ast.InputDecl(
            _span(meta), str(name), str(secrecy) == "secret", shape, domain, int_type
        )

    def shape(self, meta: Meta, items: list[ast.DimRef]) -> list[ast.DimRef]:
        return items

    def dim(self, meta: Meta, items: list[Token]) -> ast.DimRef:
        (tok,) = items
        value: float | str = float(tok) if tok.type == "NUMBER" else str(tok)
        return ast.DimRef(_span(tok), value)

    def set_domain(self, meta: Meta, items: list[float]) -> ast.DomainDecl:
        return ast.DomainDecl(_span(meta), "set", items)

    def interval_domain(self, meta: Meta, items: list[float]) -> ast.DomainDecl:
        return ast.DomainDecl(_span(meta), "interval", items)

    def signed(self, meta: Meta, items: list[Token]) -> float:
        value = float(items[-1])
        return -value if len(items) == 2 else value

    def let_stmt(self, meta: Meta, items: list[Any]) -> ast.Let:
        name, expr = items
        return ast.Let(_span(meta), str(name), _span(name), expr)

    def reveal_stmt(self, meta: Meta, items: list[Any]) -> ast.Reveal:
        name = items[0]
        expr = items[1] if len(items) > 1 else None
        return ast.Reveal(_span(meta), str(name), _span(name), expr)

    def client_block(self, meta: Meta, items: list[ast.Let]) -> ast.ClientBlock:
        return ast.ClientBlock(_span(meta), items)

    # expressions --------------------------------------------------------------------------
    def _binary(self, op: str, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        lhs, rhs = items
        return ast.Binary(_join(lhs.span, rhs.span), op, lhs, rhs)

    def add(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("+", meta, items)

    def sub(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("-", meta, items)

    def mul(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("*", meta, items)

    def div(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("/", meta, items)

    def matmul(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("@", meta, items)

    def mod(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("%", meta, items)

    # integer and Boolean operators (the checker refuses them on real values)
    def lt(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("<", meta, items)

    def le(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("<=", meta, items)

    def gt(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary(">", meta, items)

    def ge(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary(">=", meta, items)

    def eq(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("==", meta, items)

    def ne(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("!=", meta, items)

    def bitor(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("|", meta, items)

    def bitand(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("&", meta, items)

    def shl(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary("<<", meta, items)

    def shr(self, meta: Meta, items: list[ast.Expr]) -> ast.Binary:
        return self._binary(">>", meta, items)

    def bitnot(self, meta: Meta, items: list[ast.Expr]) -> ast.BitNot:
        return ast.BitNot(_span(meta), items[0])

    def neg(self, meta: Meta, items: list[ast.Expr]) -> ast.Neg:
        return ast.Neg(_span(meta), items[0])

    def pow(self, meta: Meta, items: list[Any]) -> ast.Pow | ast.Binary:
        base, exponent = items
        if isinstance(exponent, ast.Number):
            return ast.Pow(_span(meta), base, exponent.value, exponent.span)
        # `x ^ y` with a non-literal right side: XOR of integers (the checker refuses it on
        # real values, whose powers take a whole-number literal).
        return ast.Binary(_span(meta), "^", base, exponent)

    def transpose(self, meta: Meta, items: list[Any]) -> ast.Transpose:
        return ast.Transpose(_span(meta), items[0])

    def index(self, meta: Meta, items: list[Any]) -> ast.Index:
        operand, *subscripts = items
        return ast.Index(_span(meta), operand, subscripts)

    def slice(self, meta: Meta, items: list[Any]) -> ast.Slice:
        start, stop = items
        return ast.Slice(_span(meta), start, stop)

    def number(self, meta: Meta, items: list[Token]) -> ast.Number:
        return ast.Number(_span(items[0]), float(items[0]))

    def name(self, meta: Meta, items: list[Token]) -> ast.Name:
        return ast.Name(_span(items[0]), str(items[0]))

    def paren(self, meta: Meta, items: list[ast.Expr]) -> ast.Expr:
        # A parenthesized expression is reported with its parentheses.
        inner = items[0]
        inner.span = _span(meta)
        return inner

    def list(self, meta: Meta, items: list[ast.Expr | None]) -> ast.ListLit:
        # An empty optional group `[...]` in the grammar arrives as None.
        return ast.ListLit(_span(meta), [item for item in items if item is not None])

    def kwarg(self, meta: Meta, items: list[Any]) -> ast.Kwarg:
        name, value = items
        return ast.Kwarg(_span(meta), str(name), value)

    def call(self, meta: Meta, items: list[Any]) -> ast.Call:
        func, *args = items
        positional = [a for a in args if isinstance(a, ast.Expr)]
        keywords = [a for a in args if isinstance(a, ast.Kwarg)]
        return ast.Call(_span(meta), str(func), _span(func), positional, keywords)


def _describe_expected(expected: set[str]) -> str:
    words = []
    for name in sorted(expected):
        if name in _TERMINAL_WORDS:
            words.append(_TERMINAL_WORDS[name])
            continue
        try:
            pattern = _lark().get_terminal(name).pattern
        except KeyError:
            words.append(name)
            continue
        words.append(f"'{pattern.value}'" if isinstance(pattern, PatternStr) else name)
    words = sorted(set(words))
    if len(words) > 8:
        words = [*words[:8], "..."]
    return ", ".join(words)


def _located(source: ast.Source, line: int, column: int, length: int = 1) -> SourceLocation:
    span = ast.Span(line, column, line, column + length)
    return source.location(span)


def _syntax_error(source: ast.Source, err: UnexpectedInput) -> UserError:
    hint = "the statements of the language are listed in docs/language.md"
    if isinstance(err, UnexpectedCharacters):
        char = source.text[err.pos_in_stream] if err.pos_in_stream < len(source.text) else ""
        return UserError(
            f"unexpected character {char!r}",
            _located(source, err.line, err.column),
            "names use letters, digits and '_'; comments start with '#'",
        )
    if isinstance(err, UnexpectedToken) and err.token.type != "$END":
        tok = err.token
        unknown_type = _unknown_element_type(source, tok)
        if unknown_type is not None:
            return unknown_type
        if str(tok) in _COMPARISONS:
            return UserError(
                f"unexpected {str(tok)!r}: comparisons do not chain",
                _located(source, tok.line or 1, tok.column or 1, len(str(tok))),
                "compare two values at a time and combine the bools: (a < b) & (b < c)",
            )
        expected = _describe_expected(set(err.expected))
        line_text = source.text.splitlines()[(tok.line or 1) - 1]
        before = line_text[: (tok.column or 1) - 1].split()
        if before and before[-1] in _STATEMENT_KEYWORDS and expected == "'='":
            # The contextual lexer read a keyword as a name where that statement is not
            # allowed (for example `reveal` inside the client block).
            hint = (
                f"'{before[-1]}' cannot start a statement here; the client block holds only "
                "`name = expression` lines, and reveals go before it"
            )
        return UserError(
            f"unexpected {str(tok)!r}; expected {expected}",
            _located(source, tok.line or 1, tok.column or 1, len(str(tok))),
            hint,
        )
    # End of input in the middle of a statement: point just past the last character.
    expected_names: set[str] = set(getattr(err, "expected", None) or ())
    lines = source.text.splitlines() or [""]
    line = len(lines)
    while line > 1 and not lines[line - 1].strip():
        line -= 1
    column = len(lines[line - 1]) + 1
    expected = _describe_expected(expected_names) if expected_names else "more input"
    return UserError(
        f"unexpected end of file; expected {expected}", _located(source, line, column), hint
    )


_COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}
# An input declaration ending in a word that is not a type: `input a: secret[N] u9`.
_INPUT_WITH_WORD = re.compile(
    r"input\s+[A-Za-z_]\w*\s*:\s*(secret|public)\s*(\[[^\]]*\])?\s*([A-Za-z_]\w*)\s*$"
)


def _unknown_element_type(source: ast.Source, tok: Token) -> UserError | None:
    """The error for a misspelled element type, which the grammar reads as the name of the
    next statement (and then fails at the token after it)."""
    offset = tok.start_pos or 0
    found = _INPUT_WITH_WORD.search(source.text[:offset])
    if found is None or found.group(3) == "in":
        return None
    word = found.group(3)
    line = source.text.count("\n", 0, found.start(3)) + 1
    column = found.start(3) - (source.text.rfind("\n", 0, found.start(3)) + 1) + 1
    return UserError(
        f"unknown element type '{word}'",
        _located(source, line, column, len(word)),
        "an input's type is one of bool, u8, u16, u32, u64, i8, i16, i32, i64 (or a domain: "
        "in {0, 1} / in [lo, hi])",
    )


def parse_program(text: str, filename: str = "<input>") -> ast.Program:
    """Parse hec source text; raises a located `UserError` on any syntax error."""
    source = ast.Source(filename, text)
    try:
        tree: Tree[Token] = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(source, err) from None
    except LarkError as err:  # any other lark failure is still a problem with the text
        raise UserError(f"cannot parse {filename}: {err}") from None
    try:
        statements: list[ast.Statement] = _Builder().transform(tree)
    except VisitError as err:
        raise err.orig_exc from None
    for stmt in statements:
        for expr in _statement_exprs(stmt):
            depth, _ = ast.nesting(expr)
            if depth > ast.MAX_NESTING:
                raise UserError(
                    f"expression nested {depth} levels deep; at most {ast.MAX_NESTING}",
                    source.location(expr.span),
                    "split it into named steps: `part1 = ...` then `part2 = part1 + ...`",
                )
    return ast.Program(source, statements)


def _statement_exprs(stmt: ast.Statement) -> list[ast.Expr]:
    match stmt:
        case ast.Let() | ast.Reveal():
            return [stmt.expr] if stmt.expr is not None else []
        case ast.ClientBlock():
            return [let.expr for let in stmt.lets]
        case _:
            return []


def parse_file(path: str | Path) -> ast.Program:
    """Read and parse a `.hec` file (UTF-8)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    return parse_bytes(data, str(path))


def parse_bytes(data: bytes, filename: str = "<input>") -> ast.Program:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise UserError(
            f"{filename}:{line}: the file is not UTF-8 text (byte {err.start})",
            hint="save the program as UTF-8",
        ) from None
    return parse_program(text, filename)


__all__ = ["UnexpectedEOF", "parse_bytes", "parse_file", "parse_program"]
