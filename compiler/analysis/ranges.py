"""Range analysis: the interval of every value, from the declared input domains and the size
bounds (interval arithmetic, DESIGN.md §5 `range-analysis`).

`stat_ranges` on a `stat.program` (what the user wrote) and `value_ranges` on a ckks, he or
bfv program (what is executed, including the scheme's own ops). A sum of K terms each in
[lo, hi] lies in [K·lo, K·hi] (with K from 1 to its bound); sizes are taken at their bounds,
which callers may tighten with the sizes of one run (`--size N=5000`). Public scalars also
carry whether they are integers: multiplying by an integer costs no level.

An op may carry a **proven range** (`proven_range = array<f64: lo, hi>`): a theorem about
its result that interval arithmetic cannot see, such as the bounds of the Newton-Schulz
iteration (compiler/analysis/newton_schulz.py). The frontend attaches it at the stat level,
the lowerings carry it to the he, ckks and bfv ops that compute the value, and every analysis
here intersects its own result with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, UnitAttr, f64
from xdsl.ir import Operation, SSAValue

from compiler.analysis.forms import MAX_SPLIT_SYMBOLS, SPLITS, Form, Symbols, intersect
from compiler.dialects import ckks, he, stat
from compiler.errors import UserError, op_location
from compiler.types import Dim, Interval, dim_bound, domain_interval


@dataclass(frozen=True)
class PublicValue:
    """A public scalar: its range and whether it is always an integer."""

    interval: Interval
    integer: bool


# The attribute holding an op's proven range (see the module docstring).
PROVEN_RANGE = "proven_range"


def proven_range(op: Operation) -> Interval | None:
    """The proven range of `op`'s result, or None."""
    attr = op.attributes.get(PROVEN_RANGE)
    if not isinstance(attr, DenseArrayBase):
        return None
    lo, hi = attr.get_values()
    return Interval(float(lo), float(hi))


# Marks a proven range that holds in every slot an element occupies, whatever the layout (a
# BFV bit slice's bit is a bit in every slot): the HE lowering carries it to packed arrays too.
EVERY_SLOT = "proven_every_slot"


def set_proven_range(op: Operation, interval: Interval, every_slot: bool = False) -> None:
    """Record that `op`'s result provably lies in `interval` (a theorem, not an estimate:
    every range analysis trusts it); `every_slot`: in every element's slot of any layout."""
    op.attributes[PROVEN_RANGE] = DenseArrayBase.from_list(f64, [interval.lo, interval.hi])
    if every_slot:
        op.attributes[EVERY_SLOT] = UnitAttr()


def proven_every_slot(op: Operation) -> bool:
    return EVERY_SLOT in op.attributes


def within_proven(op: Operation, r: Interval) -> Interval:
    """`r` intersected with `op`'s proven range, if it has one."""
    proven = proven_range(op)
    return r if proven is None else intersect(r, proven)


def _size_interval(bound: int) -> Interval:
    return Interval(1.0, float(bound))


def _div(a: Interval, b: Interval) -> Interval:
    inv = b.reciprocal()
    if inv is None:
        raise UserError(f"a public divisor may be zero (range [{b.lo}, {b.hi}])")
    return a * inv


def _dim(d: Dim, bounds: Mapping[str, int]) -> int:
    return dim_bound(d, dict(bounds))


def stat_ranges(program: stat.ProgramOp, bounds: Mapping[str, int]) -> dict[SSAValue, Interval]:
    """Interval of every server value of a stat program (the client block is not analysed)."""
    out: dict[SSAValue, Interval] = {}

    def g(v: SSAValue) -> Interval:
        return out[v]

    for op in program.server_ops():
        if not op.results:
            continue
        r: Interval
        match op:
            case stat.InputOp():
                dom = op.domain_value
                if dom is None:
                    raise UserError(f"input {op.sym_value} has no value domain", op_location(op))
                r = domain_interval(dom)
            case stat.ConstantOp():
                r = Interval.point(op.float_value)
            case stat.EyeOp():
                r = Interval(0.0, 1.0)
            case stat.SizeOp():
                r = _size_interval(bounds[op.sym_value])
            case stat.AddOp():
                r = g(op.lhs) + g(op.rhs)
            case stat.SubOp():
                r = g(op.lhs) - g(op.rhs)
            case stat.MulOp():
                r = g(op.lhs).power(2) if op.lhs is op.rhs else g(op.lhs) * g(op.rhs)
            case stat.DivOp():
                r = _div(g(op.lhs), g(op.rhs))
            case stat.NegOp():
                r = -g(op.input)
            case stat.PowOp():
                r = g(op.input).power(op.exponent_value)
            case stat.PolyOp():
                x = g(op.input)
                r = Interval.point(0.0)
                for c in reversed(op.coefficient_values):
                    r = r * x + Interval.point(c)
            case stat.BroadcastOp() | stat.TransposeOp() | stat.IndexOp() | stat.RevealOp():
                r = g(op.input)
            case stat.MatmulOp():
                k = stat.tensor_type(op.lhs).dims[-1]
                r = (g(op.lhs) * g(op.rhs)).scaled_sum(_dim(k, bounds))
            case stat.SumOp() | stat.MeanOp():
                dims = stat.tensor_type(op.input).dims
                count = 1
                for a in op.axes_tuple:
                    count *= _dim(dims[a], bounds)
                # A mean lies within the range of its terms.
                r = g(op.input) if isinstance(op, stat.MeanOp) else g(op.input).scaled_sum(count)
            case stat.OwnerComputeOp():
                r = domain_interval(op.domain_value)
            case stat.PackedSumOp():
                count = _dim(stat.tensor_type(op.args[0]).dims[0], bounds)
                for arg, res in zip(op.args, op.sums, strict=True):
                    out[res] = g(arg).scaled_sum(count)
                continue
            case stat.DetOp() | stat.AdjOp():
                k = _dim(stat.tensor_type(op.input).dims[0], bounds)
                x = g(op.input)
                m = max(abs(x.lo), abs(x.hi))
                # Hadamard: |det| <= (sqrt(k) m)^k; an adjugate entry is a (k-1) minor.
                kk = k if isinstance(op, stat.DetOp) else k - 1
                bound = (kk**0.5 * m) ** kk if kk > 0 else 1.0
                r = Interval(-bound, bound)
            case _:
                raise UserError(f"range analysis does not handle {op.name}", op_location(op))
        out[op.results[0]] = within_proven(op, r)
    return out


def public_values(
    program: ckks.ProgramOp | he.ProgramRule, bounds: Mapping[str, int]
) -> dict[SSAValue, PublicValue]:
    """Range and integrality of every public scalar (of a ckks, he or bfv program)."""
    out: dict[SSAValue, PublicValue] = {}
    for op in program.block.ops:
        match op:
            case ckks.SizeOp() | he.SizeRule():
                out[op.result] = PublicValue(_size_interval(bounds[op.sym_value]), True)
            case ckks.ConstantOp() | he.ConstantRule():
                v = op.float_value
                out[op.result] = PublicValue(Interval.point(v), float(v).is_integer())
            case ckks.PublicArithOp() | he.PublicArithRule():
                a, b = out[op.lhs], out[op.rhs]
                kind = op.kind.data
                if kind == "add":
                    out[op.result] = PublicValue(a.interval + b.interval, a.integer and b.integer)
                elif kind == "sub":
                    out[op.result] = PublicValue(a.interval - b.interval, a.integer and b.integer)
                elif kind == "mul":
                    out[op.result] = PublicValue(a.interval * b.interval, a.integer and b.integer)
                else:
                    out[op.result] = PublicValue(_div(a.interval, b.interval), False)
            case _:
                pass
    return out


def evaluate_public(
    program: ckks.ProgramOp | he.ProgramRule, sizes: Mapping[str, int]
) -> dict[SSAValue, float]:
    """The exact value of every public scalar for concrete sizes."""
    out: dict[SSAValue, float] = {}
    for op in program.block.ops:
        match op:
            case ckks.SizeOp() | he.SizeRule():
                out[op.result] = float(sizes[op.sym_value])
            case ckks.ConstantOp() | he.ConstantRule():
                out[op.result] = op.float_value
            case ckks.PublicArithOp() | he.PublicArithRule():
                a, b = out[op.lhs], out[op.rhs]
                kind = op.kind.data
                out[op.result] = (
                    (a + b if kind == "add" else a - b if kind == "sub" else a * b)
                    if kind != "div"
                    else a / b
                )
            case _:
                pass
    return out


def packed_capacity(op: he.EncodeRule) -> int:
    """The product of the radices one coefficient of a coeff encode holds: `group` columns of
    every per-element digit and every per-row digit once. The packed sum stays below it."""
    per_column = math.prod(
        r for r, s in zip(op.radix_values, op.scalar_digit_flags, strict=True) if not s
    )
    per_row = math.prod(r for r, s in zip(op.radix_values, op.scalar_digit_flags, strict=True) if s)
    return per_row * per_column**op.group_value


def value_ranges(
    program: ckks.ProgramOp | he.ProgramRule, bounds: Mapping[str, int]
) -> dict[SSAValue, Interval]:
    """Range of every ciphertext / plaintext value of a ckks, he or bfv program (the op rules
    of the HE layer, which every scheme's ops are, and CKKS's own ops): what CKKS's scales and
    an exact scheme's plaintext modulus must hold. Each range is the intersection of interval
    arithmetic and the relational bound (`compiler.analysis.forms`), both sound."""
    return RelationalRanges(program, bounds).ranges


class RelationalRanges:
    """Interval and polynomial form of every value of a ckks, he or bfv program."""

    def __init__(self, program: ckks.ProgramOp | he.ProgramRule, bounds: Mapping[str, int]):
        self.bounds = dict(bounds)
        self.symbols = Symbols({k: _size_interval(v) for k, v in bounds.items()})
        self.public = public_values(program, bounds)
        self.public_forms = self._public_forms(program)
        self.ranges: dict[SSAValue, Interval] = {}
        self.interval_ranges: dict[SSAValue, Interval] = {}
        self.forms: dict[SSAValue, Form] = {}
        self._ops: list[Operation] = []
        self._rules: dict[Operation, Callable[[Mapping[SSAValue, Interval]], Interval]] = {}
        for op in program.block.ops:
            if not op.results or isinstance(op.results[0].type, he.PublicType):
                continue
            self._visit(op)
        self._refine()

    def _public_forms(self, program: ckks.ProgramOp | he.ProgramRule) -> dict[SSAValue, Form]:
        out: dict[SSAValue, Form] = {}
        for op in program.block.ops:
            match op:
                case ckks.SizeOp() | he.SizeRule():
                    out[op.result] = self.symbols.size(op.sym_value)
                case ckks.ConstantOp() | he.ConstantRule():
                    out[op.result] = Form.const(op.float_value)
                case ckks.PublicArithOp() | he.PublicArithRule():
                    a, b = out[op.lhs], out[op.rhs]
                    kind = op.kind.data
                    if kind == "add":
                        out[op.result] = a + b
                    elif kind == "sub":
                        out[op.result] = a - b
                    elif kind == "mul":
                        out[op.result] = a * b
                    else:
                        out[op.result] = self._divide(a, b, self.public[op.result].interval)
                case _:
                    pass
        return out

    def _divide(self, a: Form, b: Form, interval: Interval) -> Form:
        """a / b: exact when b is a constant times sizes (1 / N), else a fresh symbol."""
        mono = b.as_monomial()
        if mono is not None and mono[0] != 0.0 and all(v.kind == "size" for v, _ in mono[1]):
            c, m = mono
            return a * Form({tuple((v, -e) for v, e in m): 1.0 / c})
        return self.symbols.fresh(0, interval)

    def _visit(self, op: Operation) -> None:
        res = op.results[0]
        r = self._interval_rule(op, self.ranges)
        form = self._form_rule(op)
        self.interval_ranges[res] = r
        rank = _rank(res)
        if form is not None and form.is_finite:
            r = intersect(r, self.symbols.bound(form))
            form = self.symbols.collapse(form, rank, r)
        else:
            form = self.symbols.fresh(rank, r)
        self.ranges[res] = r
        self.forms[res] = form
        self._ops.append(op)

    def _refine(self) -> None:
        """Branch and bound over the program: on each box of the first-order means (the
        relations of `Symbols.relations` applied), every value's range is its form's bound
        intersected with interval arithmetic on its operands' ranges in the same box, which
        keeps a product's factorization (c1·(d - c1) <= d²/4) as well as the correlation of
        its factors; a value's range is the hull over the boxes.

        Soundness: a box constrains a mean at the index of the element being bounded, so a
        mean is split only where that index is the same everywhere: it occurs under one
        axis map in every form, and an op that moves or mixes elements (sum, dot,
        broadcast, transpose, rotation) reads its operand's whole range, not the box's,
        when that operand's value depends on a split mean."""
        forms = [self.forms[op.results[0]] for op in self._ops]
        relations = self.symbols.relations(forms)
        if not relations:
            return
        axes: dict[object, set[tuple[int, ...]]] = {}
        for form in forms:
            for m in form.terms:
                for v, _ in m:
                    axes.setdefault(v.key, set()).add(v.axes)
        candidates = sorted({b for _, bases, _ in relations for b in bases}, key=repr)
        split = [b for b in candidates if len(axes[b.key]) == 1][:MAX_SPLIT_SYMBOLS]
        if not split:
            return
        keys = {b.key for b in split}
        depends: dict[SSAValue, bool] = {}
        for op in self._ops:
            res = op.results[0]
            own = any(v.key in keys for m in self.forms[res].terms for v, _ in m)
            depends[res] = own or any(depends.get(x, False) for x in op.operands)
        touched = keys | {t.key for t, _, _ in relations}
        relational = {
            op.results[0]
            for op in self._ops
            if any(v.key in touched for m in self.forms[op.results[0]].terms for v, _ in m)
        }
        # Values whose range can differ between boxes; the others keep their range.
        affected: set[SSAValue] = set()
        for op in self._ops:
            res = op.results[0]
            reads_box = not (
                isinstance(op, _MOVES_ELEMENTS) and any(depends.get(x, False) for x in op.operands)
            )
            if res in relational or (reads_box and any(x in affected for x in op.operands)):
                affected.add(res)
        work = [op for op in self._ops if op.results[0] in affected]
        global_view = {
            op
            for op in work
            if isinstance(op, _MOVES_ELEMENTS) and any(depends.get(x, False) for x in op.operands)
        }
        boxed = set(split) | {t for t, _, _ in relations}
        compiled = {res: self.symbols.compile(self.forms[res], boxed) for res in relational}
        hulls: dict[SSAValue, Interval] = {}
        splits = int((BOX_BUDGET / max(len(work), 1)) ** (1.0 / len(split)))
        for box_env in self.symbols.boxes(relations, split, max(2, min(SPLITS, splits))):
            env = {v: (r.lo, r.hi) for v, r in box_env.items()}
            box: dict[SSAValue, Interval] = _Overlay(self.ranges)
            for op in work:
                res = op.results[0]
                view: Mapping[SSAValue, Interval] = box
                if op in global_view:
                    view = self.ranges
                r = intersect(self._interval_rule(op, view), self.ranges[res])
                if res in relational:
                    r = intersect(r, self.symbols.evaluate_compiled(compiled[res], env))
                box[res] = r
                old = hulls.get(res)
                hulls[res] = r if old is None else old.union(r)
        self.ranges.update(hulls)

    def _interval_rule(self, op: Operation, g: Mapping[SSAValue, Interval]) -> Interval:
        """Interval arithmetic: the range of `op`'s result from its operands' ranges `g`."""
        return self._rule(op)(g)

    def _rule(self, op: Operation) -> Callable[[Mapping[SSAValue, Interval]], Interval]:
        """The interval rule of `op` as a function of its operands' ranges (chosen once: the
        branch and bound applies it once per box)."""
        found = self._rules.get(op)
        if found is None:
            rule = self._make_rule(op)
            proven = proven_range(op)
            if proven is not None:
                # A theorem about the result: every box's interval arithmetic is cut to it.
                found = self._rules[op] = lambda g: intersect(rule(g), proven)
            else:
                found = self._rules[op] = rule
        return found

    def _make_rule(self, op: Operation) -> Callable[[Mapping[SSAValue, Interval]], Interval]:
        match op:
            case he.EncodeRule() if he.any_pt(op.result).layout_name == he.COEFF:
                # One row's packed integer: below (prod of one coefficient's radices) / rows.
                rows = _dim(he.any_pt(op.result).dims[0], self.bounds)
                fixed = Interval(0.0, (packed_capacity(op) - 1) / max(rows, 1))
                return lambda g: fixed
            case he.EncodeRule():
                dom = op.domain_value
                if dom is None:
                    raise UserError(f"input {op.sym_value} has no value domain", op_location(op))
                domain = domain_interval(dom)
                return lambda g: domain
            case he.SubRule():
                lhs, rhs = op.lhs, op.rhs
                return lambda g: g[lhs] - g[rhs]
            case he.AddRule():
                lhs, rhs = op.lhs, op.rhs
                return lambda g: g[lhs] + g[rhs]
            case he.MulRule():
                lhs, rhs = op.lhs, op.rhs
                if lhs is rhs:  # a square is non-negative
                    return lambda g: g[lhs].power(2)
                return lambda g: g[lhs] * g[rhs]
            case ckks.MulPlainOp():
                lhs, rhs = op.input, op.plain
                return lambda g: g[lhs] * g[rhs]
            case ckks.AddPlainOp():
                lhs, rhs = op.input, op.plain
                return lambda g: g[lhs] + g[rhs]
            case he.NegateRule():
                x = op.input
                return lambda g: -g[x]
            case he.MulConstRule() | ckks.MulConstOp():
                x, c = op.input, self.public[op.value].interval
                return lambda g: g[x] * c
            case he.AddConstRule() | ckks.AddConstOp():
                x, c = op.input, self.public[op.value].interval
                return lambda g: g[x] + c
            case he.DotRule():
                lhs, rhs = op.lhs, op.rhs
                k = _dim(he.any_ct(op.lhs).dims[op.axis_value], self.bounds)
                if lhs is rhs:
                    return lambda g: g[lhs].power(2).scaled_sum(k)
                return lambda g: (g[lhs] * g[rhs]).scaled_sum(k)
            case he.DiagMatvecRule():
                # A sum of products over K (the padding slots hold 0).
                lhs, rhs = op.lhs, op.rhs
                k = _dim(he.any_ct(op.lhs).dims[1], self.bounds)
                return lambda g: (g[lhs] * g[rhs]).scaled_sum(k).union(Interval.point(0.0))
            case he.ReduceRule():
                x = op.input
                k = _dim(he.any_ct(op.input).dims[op.axis_value], self.bounds)
                return lambda g: g[x].scaled_sum(k)
            case he.SumSlotsRule():
                x = op.input
                axis = -1 if op.axis_value is None else op.axis_value  # a grid's row axis
                k = _dim(he.any_ct(op.input).dims[axis], self.bounds)
                return lambda g: g[x].scaled_sum(k)
            case he.RotateRule():
                x = op.input
                return lambda g: g[x].union(Interval.point(0.0))  # padding slots rotate in
            case he.GatherRule() if any(op.negate_flags):
                x = op.input
                return lambda g: g[x].union(-g[x])
            case (
                he.EncryptRule()
                | he.RelinearizeRule()
                | he.LevelDownRule()
                | ckks.LevelDownOp()
                | ckks.UnpackComplexOp()
                | he.BroadcastRule()
                | he.TransposeRule()
                | he.GatherRule()
                | he.ConvertRule()
            ):
                x = op.operands[0]
                return lambda g: g[x]
            case _:
                raise UserError(f"range analysis does not handle {op.name}", op_location(op))

    def _form_rule(self, op: Operation) -> Form | None:
        """The polynomial form of `op`'s result (None: a fresh symbol)."""
        f, pub = self.forms, self.public_forms
        match op:
            case he.EncodeRule() if he.any_pt(op.result).layout_name == he.COEFF:
                return None
            case he.EncodeRule():
                dom = op.domain_value
                r = domain_interval(dom) if dom is not None else None
                if op.expr is None and r is not None and r.is_finite:
                    return self.symbols.input(op.sym_value, _rank(op.result), r)
                return None
            case he.SubRule():
                return f[op.lhs] - f[op.rhs]
            case he.AddRule():
                return f[op.lhs] + f[op.rhs]
            case he.MulRule():
                return f[op.lhs] * f[op.rhs]
            case ckks.MulPlainOp():
                return f[op.input] * f[op.plain]
            case ckks.AddPlainOp():
                return f[op.input] + f[op.plain]
            case he.NegateRule():
                return -f[op.input]
            case he.MulConstRule() | ckks.MulConstOp():
                return f[op.input] * pub[op.value]
            case he.AddConstRule() | ckks.AddConstOp():
                return f[op.input] + pub[op.value]
            case he.DotRule():
                k = he.any_ct(op.lhs).dims[op.axis_value]
                product = f[op.lhs] * f[op.rhs]
                return self.symbols.reduce(product, op.axis_value, self._count(k))
            case he.ReduceRule():
                k = he.any_ct(op.input).dims[op.axis_value]
                return self.symbols.reduce(f[op.input], op.axis_value, self._count(k))
            case he.SumSlotsRule():
                dims = he.any_ct(op.input).dims
                axis = len(dims) - 1 if op.axis_value is None else op.axis_value
                return self.symbols.reduce(f[op.input], axis, self._count(dims[axis]))
            case he.BroadcastRule():
                return f[op.input].remap(dict(enumerate(op.dims_tuple)))
            case he.TransposeRule():
                return f[op.input].remap({0: 1, 1: 0})
            case (
                he.EncryptRule()
                | he.RelinearizeRule()
                | he.LevelDownRule()
                | ckks.LevelDownOp()
                | ckks.UnpackComplexOp()
                | he.ConvertRule()
            ):
                return f[op.operands[0]]
            case _:
                return None

    def _count(self, dim: Dim) -> Form:
        return self.symbols.size(dim) if isinstance(dim, str) else Form.const(float(dim))


# Box evaluations of one value (boxes x values) the branch and bound may spend.
BOX_BUDGET = 16000


class _Overlay(dict[SSAValue, Interval]):
    """A box's ranges: the values it changed, the program's ranges for the rest."""

    def __init__(self, base: Mapping[SSAValue, Interval]):
        super().__init__()
        self.base = base

    def __missing__(self, key: SSAValue) -> Interval:
        return self.base[key]


# Ops whose result element reads other elements (or other positions) of its operand.
_MOVES_ELEMENTS = (
    he.DotRule,
    he.DiagMatvecRule,
    he.ConvertRule,
    he.ReduceRule,
    he.SumSlotsRule,
    he.RotateRule,
    he.BroadcastRule,
    he.TransposeRule,
    he.GatherRule,
    ckks.UnpackComplexOp,
)


def _rank(v: SSAValue) -> int:
    ty = v.type
    return len(ty.dims) if isinstance(ty, he.CiphertextType | he.PlaintextType) else 0


def magnitude(interval: Interval) -> float:
    return max(abs(interval.lo), abs(interval.hi))


def range_of(ranges: Mapping[SSAValue, Interval], v: SSAValue) -> Interval:
    """The range of `v`, looking through ops inserted after the analysis that keep the value
    (scale-alignment multiplies by 1, level drops, rescales)."""
    found = ranges.get(v)
    if found is not None:
        return found
    owner = v.owner
    if isinstance(owner, ckks.MulConstOp | ckks.LevelDownOp | ckks.RescaleOp):
        if isinstance(owner, ckks.MulConstOp) and "align" not in owner.attributes:
            raise KeyError(v)
        return range_of(ranges, owner.operands[0])
    raise KeyError(v)
