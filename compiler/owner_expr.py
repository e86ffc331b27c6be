"""Owner-side expressions: what a data owner computes on its own rows before encrypting.

An owner expression combines the data owner's inputs element by element within one row
(individual): `y * S` is y_i * S_ij for the owner of row i. Operands that hold one value per
row (`y: [N]`) broadcast along the row's other axes; nothing ever combines two rows or reduces
over the row axis, so every owner can evaluate its own rows alone (passes/owner_side.py).

The text form is an s-expression over the source input names: `(mul y S)`, `(sub 2 S)`,
`(pow S 2)`. One tree serves every consumer: numpy (reference and simulator), the value
domain (exact by enumeration over finite input sets, else interval arithmetic) and C++ (the
generated encrypt role evaluates it per element).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from compiler.errors import InternalError
from compiler.types import Domain, FiniteSet, Interval, domain_interval

Array = npt.NDArray[np.float64]

OPS = ("add", "sub", "mul", "neg", "pow")
# Enumerate exact value sets up to this many input combinations, else use intervals.
MAX_ENUMERATION = 4096


@dataclass(frozen=True)
class Expr:
    """A node: `op` in OPS with `args`, a source input (`name`), or a constant (`value`)."""

    op: str = ""
    args: tuple[Expr, ...] = ()
    name: str = ""
    value: float = 0.0
    exponent: int = 0

    @staticmethod
    def source(name: str) -> Expr:
        return Expr(name=name)

    @staticmethod
    def const(value: float) -> Expr:
        return Expr(op="const", value=float(value))

    @staticmethod
    def apply(op: str, *args: Expr, exponent: int = 0) -> Expr:
        if op not in OPS:
            raise InternalError(f"unknown owner-expression op {op!r}")
        return Expr(op=op, args=tuple(args), exponent=exponent)

    @property
    def is_source(self) -> bool:
        return bool(self.name)

    def sources(self) -> list[str]:
        """Source input names in order of first use."""
        out: list[str] = []

        def walk(e: Expr) -> None:
            if e.is_source and e.name not in out:
                out.append(e.name)
            for a in e.args:
                walk(a)

        walk(self)
        return out

    def text(self) -> str:
        if self.is_source:
            return self.name
        if self.op == "const":
            v = self.value
            return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)
        if self.op == "pow":
            return f"(pow {self.args[0].text()} {self.exponent})"
        return "(" + " ".join([self.op, *(a.text() for a in self.args)]) + ")"

    def is_multiplicative(self) -> bool:
        """True when the tree multiplies two non-constant values (it has depth on a server)."""

        def secret(e: Expr) -> bool:
            return e.is_source or any(secret(a) for a in e.args)

        if self.op == "mul" and sum(secret(a) for a in self.args) >= 2:
            return True
        if self.op == "pow" and self.exponent >= 2 and secret(self.args[0]):
            return True
        return any(a.is_multiplicative() for a in self.args)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, env: Mapping[str, Array], rank: int) -> Array:
        """Elementwise value; each source is aligned on the row axis (axis 0) and broadcast
        along the trailing axes up to `rank`."""

        def go(e: Expr) -> Array:
            if e.is_source:
                x = np.asarray(env[e.name], dtype=np.float64)
                return x.reshape(x.shape + (1,) * (rank - x.ndim))
            if e.op == "const":
                return np.asarray(e.value, dtype=np.float64)
            vals = [go(a) for a in e.args]
            return _apply(e, vals)

        return go(self)

    def scalar(self, env: Mapping[str, float]) -> float:
        def go(e: Expr) -> float:
            if e.is_source:
                return float(env[e.name])
            if e.op == "const":
                return e.value
            return float(_apply(e, [go(a) for a in e.args]))

        return go(self)

    def domain(self, domains: Mapping[str, Domain]) -> Domain:
        """The value domain: the exact set of values when every source has a small finite set,
        else the interval from interval arithmetic."""
        names = self.sources()
        sets = [domains[n] for n in names]
        if all(isinstance(d, FiniteSet) for d in sets):
            finite = [d.values for d in sets if isinstance(d, FiniteSet)]
            if math.prod(len(v) for v in finite) <= MAX_ENUMERATION:
                values = {
                    self.scalar(dict(zip(names, combo, strict=True)))
                    for combo in itertools.product(*finite)
                }
                return FiniteSet(tuple(sorted(values)))
        return self.interval({n: domain_interval(domains[n]) for n in names})

    def interval(self, ranges: Mapping[str, Interval]) -> Interval:
        def go(e: Expr) -> Interval:
            if e.is_source:
                return ranges[e.name]
            if e.op == "const":
                return Interval.point(e.value)
            a = [go(x) for x in e.args]
            match e.op:
                case "add":
                    return a[0] + a[1]
                case "sub":
                    return a[0] - a[1]
                case "mul":
                    return a[0] * a[1]
                case "neg":
                    return -a[0]
                case _:
                    return a[0].power(e.exponent)

        return go(self)

    def cpp(self, index_of: Callable[[str], int]) -> str:
        """A C++ expression over `in.at(k, j)` (source k's value at column j of the row)."""

        def go(e: Expr) -> str:
            if e.is_source:
                return f"in.at({index_of(e.name)}, j)"
            if e.op == "const":
                return repr(e.value)
            a = [go(x) for x in e.args]
            match e.op:
                case "add":
                    return f"({a[0]} + {a[1]})"
                case "sub":
                    return f"({a[0]} - {a[1]})"
                case "mul":
                    return f"({a[0]} * {a[1]})"
                case "neg":
                    return f"(-{a[0]})"
                case _:
                    return "(" + " * ".join([a[0]] * e.exponent) + ")" if e.exponent else "1.0"

        return go(self)


def _apply(e: Expr, vals: Sequence[Array | float]) -> Array:
    match e.op:
        case "add":
            return np.add(vals[0], vals[1])
        case "sub":
            return np.subtract(vals[0], vals[1])
        case "mul":
            return np.multiply(vals[0], vals[1])
        case "neg":
            return np.negative(vals[0])
        case "pow":
            return np.power(vals[0], e.exponent)
        case _:
            raise InternalError(f"unknown owner-expression op {e.op!r}")


def parse(text: str) -> Expr:
    """Parse the s-expression form printed by `Expr.text` (ValueError when malformed)."""
    try:
        return _parse(text)
    except IndexError:
        raise ValueError(f"owner expression {text!r} ends early") from None


def _parse(text: str) -> Expr:
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def atom(tok: str) -> Expr:
        try:
            return Expr.const(float(tok))
        except ValueError:
            if not tok.replace("_", "a").isalnum():
                raise ValueError(f"bad owner expression token {tok!r} in {text!r}") from None
            return Expr.source(tok)

    def go() -> Expr:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"owner expression {text!r} ends early")
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return atom(tok)
        op = tokens[pos]
        pos += 1
        if op not in OPS:
            raise ValueError(f"unknown op {op!r} in owner expression {text!r}")
        if op == "pow":
            base = go()
            exponent = int(tokens[pos])
            pos += 1
            args: tuple[Expr, ...] = (base,)
        else:
            exponent = 0
            items: list[Expr] = []
            while tokens[pos] != ")":
                items.append(go())
            args = tuple(items)
        if tokens[pos] != ")":
            raise ValueError(f"owner expression {text!r}: expected ')'")
        pos += 1
        want = 1 if op in ("neg", "pow") else 2
        if len(args) != want:
            raise ValueError(f"owner expression {text!r}: {op} takes {want} operands")
        return Expr(op=op, args=args, exponent=exponent)

    e = go()
    if pos != len(tokens):
        raise ValueError(f"trailing text in owner expression {text!r}")
    return e
