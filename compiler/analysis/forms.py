"""Relational range analysis: every array element as a polynomial in shared noise symbols.

Interval arithmetic forgets that two operands depend on the same data: `x - mean(x)`,
`n11·d - c1·r1` and `c1·(d - c1)` come out 2-16x wider than they can be. This domain keeps the
dependence (a polynomial extension of affine arithmetic, Comba-Stolfi 1993 / de Figueiredo-
Stolfi 2004, with sums over an array axis as shared "aggregate" symbols):

- an input element is `mid + rad·e` with one symbol e in [-1, 1] per input, indexed by the
  value's axes (`Sym.axes`: which axis of the value each axis of the input runs along);
- a size N is a variable in [1, bound] (so `sum(x) / N` is exactly `mean`);
- a sum over an axis turns the part of each monomial that runs along it into an aggregate
  symbol `a = (1/K) sum_i m_i` (a mean over the axis, in the range of the monomial m) times K;
  two sums of the same monomial share the symbol (c1 in `n11·d - c1·r1` and in `d - c1`);
- forms that grow beyond `MAX_TERMS` monomials are replaced by a fresh symbol (sound, less
  precise).

Bounding treats the symbols as independent over their ranges (a box), which is sound because
every symbol's value lies in its range whatever the others are, and tightens two relations
of means (exactly what the data implies, so still sound): for u, v in [-1, 1],
mean(u·v) lies in [|mean u + mean v| - 1, 1 - |mean u - mean v|] (the means of (1 ± u)(1 ± v)
are >= 0), and mean(u²) >= (mean u)² (Jensen). They are applied on a subdivision of the box of
the first-order means (branch and bound), which is what brings `n11·d - c1·r1` from 4N² to
about N² (its true extreme).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from compiler.types import Interval

MAX_TERMS = 64  # beyond this a form is replaced by a fresh symbol
SPLITS = 8  # pieces per first-order mean in the branch and bound (at most)
MAX_SPLIT_SYMBOLS = 3  # means subdivided at most (SPLITS ** this boxes)


# A template slot: -1 is the summed axis, k >= 0 the aggregate's k-th free axis.
Template = tuple[tuple[object, tuple[int, ...], int], ...]


@dataclass(frozen=True)
class Var:
    """A variable of a form: a size (`kind` "size", `key` its name, no axes) or a symbol."""

    kind: str
    key: object
    axes: tuple[int, ...] = ()

    def remap(self, f: Mapping[int, int]) -> Var:
        return Var(self.kind, self.key, tuple(f[a] for a in self.axes)) if self.axes else self


Monomial = tuple[tuple[Var, int], ...]
# A form for the branch and bound: per monomial, an interval coefficient and boxed factors.
Compiled = list[tuple[float, float, Monomial]]


def _canon(items: Iterable[tuple[Var, int]]) -> Monomial:
    return tuple(sorted(items, key=repr))


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    d: dict[Var, int] = dict(a)
    for v, e in b:
        d[v] = d.get(v, 0) + e
    return _canon((v, e) for v, e in d.items() if e != 0)


@dataclass
class Form:
    """A polynomial: monomial -> coefficient (the empty monomial is the constant)."""

    terms: dict[Monomial, float] = field(default_factory=dict)

    @staticmethod
    def const(c: float) -> Form:
        return Form({(): c} if c != 0.0 else {})

    @staticmethod
    def var(v: Var, scale: float = 1.0, offset: float = 0.0) -> Form:
        f = Form({((v, 1),): scale} if scale != 0.0 else {})
        if offset:
            f.terms[()] = offset
        return f

    def __add__(self, other: Form) -> Form:
        t = dict(self.terms)
        for m, c in other.terms.items():
            t[m] = t.get(m, 0.0) + c
        return Form({m: c for m, c in t.items() if c != 0.0})

    def __neg__(self) -> Form:
        return Form({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Form) -> Form:
        return self + (-other)

    def __mul__(self, other: Form) -> Form:
        t: dict[Monomial, float] = {}
        for (ma, ca), (mb, cb) in itertools.product(self.terms.items(), other.terms.items()):
            m = _mono_mul(ma, mb)
            t[m] = t.get(m, 0.0) + ca * cb
        return Form({m: c for m, c in t.items() if c != 0.0 and math.isfinite(c)})

    def remap(self, f: Mapping[int, int]) -> Form:
        out: dict[Monomial, float] = {}
        for m, c in self.terms.items():
            key = _canon((v.remap(f), e) for v, e in m)
            out[key] = out.get(key, 0.0) + c
        return Form(out)

    @property
    def is_finite(self) -> bool:
        return all(math.isfinite(c) for c in self.terms.values())

    def as_monomial(self) -> tuple[float, Monomial] | None:
        if len(self.terms) != 1:
            return None
        ((m, c),) = self.terms.items()
        return c, m


class Symbols:
    """The ranges of a program's symbols and sizes, and the relations among its means."""

    def __init__(self, sizes: Mapping[str, Interval]):
        self.ranges: dict[Var, Interval] = {Var("size", k): v for k, v in sizes.items()}
        self._fresh = 0
        self._power_cache: dict[tuple[str, object, int], tuple[float, float]] = {}

    def size(self, name: str) -> Form:
        return Form.var(Var("size", name))

    def input(self, name: str, rank: int, interval: Interval) -> Form:
        v = Var("sym", ("in", name), tuple(range(rank)))
        self.ranges[Var("sym", ("in", name), ())] = Interval(-1.0, 1.0)
        mid, rad = (interval.lo + interval.hi) / 2, (interval.hi - interval.lo) / 2
        return Form.var(v, rad, mid)

    def fresh(self, rank: int, interval: Interval) -> Form:
        """A new symbol standing for a value of `interval` (correlations forgotten)."""
        if not interval.is_finite:
            return Form({(): math.nan})
        self._fresh += 1
        v = Var("sym", ("fresh", self._fresh), tuple(range(rank)))
        self.ranges[Var("sym", ("fresh", self._fresh), ())] = Interval(-1.0, 1.0)
        mid, rad = (interval.lo + interval.hi) / 2, (interval.hi - interval.lo) / 2
        return Form.var(v, rad, mid)

    def range_of(self, v: Var, exponent: int = 1) -> Interval:
        base = self.ranges[Var(v.kind, v.key, ())] if v.kind == "sym" else self.ranges[v]
        if exponent >= 0:
            return base.power(exponent) if exponent else Interval.point(1.0)
        inv = base.reciprocal()
        assert inv is not None, "only sizes (>= 1) take negative exponents"
        return inv.power(-exponent)

    # -- sums over an axis --------------------------------------------------------------

    def reduce(self, form: Form, axis: int, count: Form) -> Form:
        """Sum of `form` over `axis` (of `count` elements); axes above it shift down."""
        shift = {a: (a if a < axis else a - 1) for a in range(64) if a != axis}
        out = Form()
        for m, c in form.terms.items():
            inner = [(v, e) for v, e in m if axis in v.axes]
            outer = tuple((v.remap(shift), e) for v, e in m if axis not in v.axes)
            if not inner:
                out = out + Form({_canon(outer): c}) * count
                continue
            agg = self._aggregate(inner, axis, shift)
            out = out + Form({_canon(outer): c}) * Form.var(agg) * count
        return out

    def _aggregate(self, inner: list[tuple[Var, int]], axis: int, shift: Mapping[int, int]) -> Var:
        slots: dict[int, int] = {}
        for v, _ in inner:
            for a in v.axes:
                if a != axis and a not in slots:
                    slots[a] = len(slots)
        template: Template = tuple(
            sorted(
                (
                    (v.key, tuple(-1 if a == axis else slots[a] for a in v.axes), e)
                    for v, e in inner
                ),
                key=repr,
            )
        )
        agg = Var("sym", ("agg", template), tuple(shift[a] for a in slots))
        key = Var("sym", ("agg", template), ())
        if key not in self.ranges:
            r = Interval.point(1.0)
            for v, e in inner:
                r = r * self.range_of(v, e)
            self.ranges[key] = r
        return agg

    # -- bounds ---------------------------------------------------------------------------

    def bound(self, form: Form) -> Interval:
        """An interval holding every value of `form`, the relations of its means applied on
        their whole ranges (the program-level branch and bound, `boxes`, splits them)."""
        if not form.is_finite:
            return Interval(-math.inf, math.inf)
        env: dict[Var, Interval] = {}
        for target, bases, kind in self.relations([form]):
            env[target] = self._tighten(target, bases, kind, env)
        return self._evaluate(form, env)

    def evaluate(self, form: Form, env: Mapping[Var, Interval]) -> Interval:
        if not form.is_finite:
            return Interval(-math.inf, math.inf)
        return self._evaluate(form, env)

    def relations(self, forms: Iterable[Form]) -> list[tuple[Var, tuple[Var, ...], str]]:
        """(mean of u·v or u², the first-order means it relates to, kind) in `forms`."""
        present = {v for form in forms for m in form.terms for v, _ in m if v.kind == "sym"}
        out: list[tuple[Var, tuple[Var, ...], str]] = []
        for v in sorted(present, key=repr):
            kind, template = v.key  # type: ignore[misc]
            if kind != "agg":
                continue
            factors: Template = template  # type: ignore[assignment]
            if not all(self._unit(k) for k, _, _ in factors):
                continue
            if len(factors) == 1 and factors[0][2] == 2:
                base = self._sub_aggregate(v, factors[0])
                if base in present:
                    out.append((v, (base,), "square"))
            elif len(factors) == 2 and all(e == 1 for _, _, e in factors):
                bases = tuple(self._sub_aggregate(v, f) for f in factors)
                if all(b in present for b in bases):
                    out.append((v, bases, "pair"))
        return out

    def boxes(
        self, relations: list[tuple[Var, tuple[Var, ...], str]], split: list[Var], splits: int
    ) -> Iterator[dict[Var, Interval]]:
        """The boxes of the branch and bound: each of the `split` means in one of `SPLITS`
        pieces of its range, and the means related to them tightened on it."""
        pieces = [self._pieces(self._base_range(b), splits) for b in split]
        for box in itertools.product(*pieces):
            env = dict(zip(split, box, strict=True))
            for target, bases, kind in relations:
                env[target] = self._tighten(target, bases, kind, env)
            yield env

    def _base_range(self, v: Var) -> Interval:
        return self.ranges[Var(v.kind, v.key, ())]

    @staticmethod
    def _pieces(r: Interval, splits: int) -> list[Interval]:
        w = (r.hi - r.lo) / splits
        return [Interval(r.lo + k * w, r.lo + (k + 1) * w) for k in range(splits)] if w else [r]

    def _unit(self, key: object) -> bool:
        return self.ranges.get(Var("sym", key, ())) == Interval(-1.0, 1.0)

    @staticmethod
    def _sub_aggregate(agg: Var, factor: tuple[object, tuple[int, ...], int]) -> Var:
        key, slots, _ = factor
        order: dict[int, int] = {}
        for s in slots:
            if s >= 0 and s not in order:
                order[s] = len(order)
        template: Template = ((key, tuple(-1 if s < 0 else order[s] for s in slots), 1),)
        return Var("sym", ("agg", template), tuple(agg.axes[s] for s in order))

    def _tighten(
        self, target: Var, bases: tuple[Var, ...], kind: str, env: Mapping[Var, Interval]
    ) -> Interval:
        r = self._base_range(target)
        ranges = [env.get(b, self._base_range(b)) for b in bases]
        if kind == "square":
            lo = ranges[0].power(2).lo
            r = Interval(max(r.lo, lo), r.hi)
        else:
            s, d = ranges[0] + ranges[1], ranges[0] - ranges[1]
            lo = _min_abs(s) - 1.0
            hi = 1.0 - _min_abs(d)
            r = Interval(max(r.lo, lo), min(r.hi, hi))
        return r if r.lo <= r.hi else Interval.point(r.lo)

    def compile(self, form: Form, boxed: set[Var]) -> Compiled:
        """`form` with every factor but the `boxed` variables folded into an interval
        coefficient per monomial: what `evaluate_compiled` reads once per box."""
        out: Compiled = []
        for m, c in form.terms.items():
            lo = hi = c
            rest: list[tuple[Var, int]] = []
            for v, e in m:
                if v in boxed and e > 0:
                    rest.append((v, e))
                    continue
                blo, bhi = self._power_range(v, e)
                p1, p2, p3, p4 = lo * blo, lo * bhi, hi * blo, hi * bhi
                lo, hi = min(p1, p2, p3, p4), max(p1, p2, p3, p4)
            out.append((lo, hi, tuple(rest)))
        return out

    @staticmethod
    def evaluate_compiled(compiled: Compiled, env: Mapping[Var, tuple[float, float]]) -> Interval:
        total_lo = total_hi = 0.0
        for lo, hi, rest in compiled:
            for v, e in rest:
                blo, bhi = _power(*env[v], e)
                p1, p2, p3, p4 = lo * blo, lo * bhi, hi * blo, hi * bhi
                lo, hi = min(p1, p2, p3, p4), max(p1, p2, p3, p4)
            total_lo += lo
            total_hi += hi
        if math.isnan(total_lo) or math.isnan(total_hi):
            return Interval(-math.inf, math.inf)
        return Interval(total_lo, total_hi)

    def _power_range(self, v: Var, e: int) -> tuple[float, float]:
        key = (v.kind, v.key, e)
        found = self._power_cache.get(key)
        if found is None:
            r = self.range_of(v, e)
            found = self._power_cache[key] = (r.lo, r.hi)
        return found

    def _evaluate(self, form: Form, env: Mapping[Var, Interval]) -> Interval:
        """Interval evaluation of the expanded polynomial (floats: the hot loop)."""
        total_lo = total_hi = 0.0
        cache = self._power_cache
        for m, c in form.terms.items():
            lo = hi = c
            for v, e in m:
                box = env.get(v)
                if box is not None and e > 0:
                    blo, bhi = _power(box.lo, box.hi, e)
                else:
                    key = (v.kind, v.key, e)
                    found = cache.get(key)
                    if found is None:
                        r = self.range_of(v, e)
                        found = cache[key] = (r.lo, r.hi)
                    blo, bhi = found
                p1, p2, p3, p4 = lo * blo, lo * bhi, hi * blo, hi * bhi
                lo, hi = min(p1, p2, p3, p4), max(p1, p2, p3, p4)
            total_lo += lo
            total_hi += hi
        if math.isnan(total_lo) or math.isnan(total_hi):
            return Interval(-math.inf, math.inf)
        return Interval(total_lo, total_hi)

    def collapse(self, form: Form, rank: int, interval: Interval) -> Form:
        """`form` itself, or a fresh symbol when it has grown too large to keep."""
        if len(form.terms) <= MAX_TERMS and form.is_finite:
            return form
        return self.fresh(rank, interval)


def _power(lo: float, hi: float, e: int) -> tuple[float, float]:
    if e == 1:
        return lo, hi
    a, b = lo**e, hi**e
    if e % 2 == 0:
        return (0.0 if lo <= 0.0 <= hi else min(a, b)), max(a, b)
    return a, b


def _min_abs(r: Interval) -> float:
    return 0.0 if r.contains(0.0) else min(abs(r.lo), abs(r.hi))


def intersect(a: Interval, b: Interval) -> Interval:
    lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
    return Interval(lo, hi) if lo <= hi else Interval.point(lo)


def hull(rs: Iterable[Interval]) -> Interval:
    rs = list(rs)
    return Interval(min(r.lo for r in rs), max(r.hi for r in rs))
