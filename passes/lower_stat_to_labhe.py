"""Lowering `lower-stat-to-labhe`: a `stat` program of degree <= 2 -> a labeled program.

What it does: walks the server part of a `stat.program` for concrete sizes and writes a
`compiler.labhe_plan.LabheProgram`: secret values become integer registers with a public
denominator (value = register / den), linear ops stay level 1 (sums, differences, transposes,
broadcasts, products with public constants), and a product of two secret values becomes one
`contract` (an einsum over the operands' axes: `X.T @ X` is `nd,ne->de`, `X * X` is
`ab,ab->ab`, `y @ S` is `n,nm->m`), a level-2 register. Means divide the denominator, not the
data, so every step is exact in Z_(2^k).
Assumes: the program was checked and lowered (dsl/); sizes bind every parameter.
Establishes: every revealed value is a register of the plan with its denominator and a bound
on |numerator| from the input domains (interval arithmetic over integers); message_bits k
holds twice the largest bound plus the check bits (`check_bits_per_entry`).
Owner-side precomputation: `x^2`, `x * x` and `poly(x)` of a secret input x become a derived
input (`from x c0 c1 c2` in the plan) that x's provider computes and encrypts with its own
labels, so `G^2 @ a` is degree 2.
Options: `precision_bits`: real inputs are encoded round(x * 2^f) with f chosen so that the
quantization step is 2^-precision_bits of the input's largest magnitude.
Refuses (UserError): a revealed value of degree > 2 (with its name and degree; the driver adds
the source location), public inputs and public non-constant arrays meeting secret values,
non-polynomial functions of secret values.
Reference: M. Barbosa, D. Catalano, D. Fiore, "Labeled Homomorphic Encryption", ESORICS 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue

from compiler.analysis.degree import owner_side, reveal_degrees
from compiler.dialects import stat
from compiler.errors import InternalError, UserError
from compiler.labhe_plan import (
    LabheProgram,
    PlanInput,
    PlanReveal,
    Step,
)
from compiler.types import FiniteSet, Interval

MAX_DEGREE = 2


class DegreeError(UserError):
    """A revealed value of degree > 2; `name` and `degree` let the driver locate it."""

    def __init__(self, name: str, degree: float):
        text = "unbounded (not a polynomial)" if math.isinf(degree) else str(int(degree))
        super().__init__(
            f"revealed value '{name}' has degree {text} in the secret inputs; the labeled "
            f"target (--scheme labhe) evaluates degree <= {MAX_DEGREE}",
            hint="reveal degree-2 parts and finish in the client block, or use --scheme ckks",
        )
        self.name = name
        self.degree = degree


@dataclass(frozen=True)
class _Pub:
    value: Any  # numpy object array of Fraction


@dataclass(frozen=True)
class _Sec:
    reg: int
    shape: tuple[int, ...]
    den: int
    bound: int
    level2: bool
    # The contraction that made this value (operands, spec, and the denominator and bound of
    # its numerator before `_expanded_contract` divided out a common factor), so that a sum
    # over its result becomes one contraction (sum(X * X, axis=0) is `ab,ab->b`, not n x d
    # products).
    contraction: tuple[int, int, str, int, int] | None = None


class _Builder:
    def __init__(self, name: str):
        self.plan = LabheProgram(name=name, message_bits=0)
        self.seen: dict[tuple[str, tuple[int, ...], tuple[str, ...]], int] = {}

    def emit(
        self,
        op: str,
        shape: tuple[int, ...],
        level2: bool,
        args: tuple[int, ...] = (),
        words: tuple[str, ...] = (),
    ) -> int:
        """The register of a new step, or of an identical earlier one (common
        subexpressions: the column sums a centring and an expanded product both need)."""
        key = (op, args, words)
        if op != "input" and key in self.seen:
            return self.seen[key]
        reg = len(self.plan.steps)
        self.plan.steps.append(Step(reg, op, args, words, shape, level2))
        self.seen[key] = reg
        return reg


def _fraction(x: float) -> Fraction:
    return Fraction(repr(float(x)))


def _scalar(p: _Pub) -> Fraction | None:
    """The single value of a public array whose entries are all equal, else None."""
    flat = list(np.asarray(p.value, dtype=object).reshape(-1))
    if not flat:
        return None
    first = flat[0]
    return first if all(v == first for v in flat) else None


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a, b))


def _remove_dead_steps(plan: LabheProgram) -> None:
    """Drop the steps no reveal reads (a contraction a fused sum replaced, say) and number
    the rest in order."""
    live = {r.register for r in plan.reveals}
    for s in reversed(plan.steps):
        if s.id in live or s.op == "input":
            live.update(s.args)
    kept = [s for s in plan.steps if s.id in live or s.op == "input"]
    new_id = {s.id: i for i, s in enumerate(kept)}
    plan.steps = [replace(s, id=new_id[s.id], args=tuple(new_id[a] for a in s.args)) for s in kept]
    plan.inputs = [replace(i, register=new_id[i.register]) for i in plan.inputs]
    plan.reveals = [replace(r, register=new_id[r.register]) for r in plan.reveals]


class LowerStatToLabhe:
    """See the module docstring."""

    name = "lower-stat-to-labhe"

    def __init__(self, sizes: dict[str, int], precision_bits: float = 19.0):
        self.sizes = sizes
        self.precision_bits = precision_bits

    def run(self, program: stat.ProgramOp) -> LabheProgram:
        for name, degree in reveal_degrees(program).items():
            if degree > MAX_DEGREE:
                raise DegreeError(name, degree)
        self.b = _Builder(program.sym_name.data)
        self.values: dict[SSAValue, _Pub | _Sec] = {}
        self.domains: dict[str, Any] = {}
        for op in program.server_ops():
            self._lower(op)
        plan = self.b.plan
        if not plan.reveals:
            raise UserError("the program reveals nothing")
        _remove_dead_steps(plan)
        widest = max(r.bound for r in plan.reveals)
        plan.message_bits = max(8, (2 * widest + 1).bit_length() + plan.check_bits())
        return plan

    # --- helpers --------------------------------------------------------------------------

    def _shape(self, value: SSAValue) -> tuple[int, ...]:
        dims = stat.tensor_type(value).dims
        return tuple(d if isinstance(d, int) else self.sizes[d] for d in dims)

    def _mulc(self, x: _Sec, c: int) -> _Sec:
        if c == 1:
            return x
        reg = self.b.emit("mulc", x.shape, x.level2, (x.reg,), (str(c),))
        return replace(x, reg=reg, bound=x.bound * abs(c))

    def _to_den(self, x: _Sec, den: int) -> _Sec:
        if den == x.den:
            return x
        assert den % x.den == 0
        return replace(self._mulc(x, den // x.den), den=den)

    def _scale(self, x: _Sec, c: Fraction) -> _Sec:
        """x * c for a public rational c."""
        if c == 0:
            raise UserError("a secret value multiplied by 0 (remove the term)")
        y = self._mulc(x, c.numerator)
        return replace(y, den=y.den * c.denominator)

    def _add_const(self, x: _Sec, c: Fraction, shape: tuple[int, ...]) -> _Sec:
        if x.shape != shape:
            x = self._broadcast_to(x, shape)
        if c == 0:
            return x
        if (c * x.den).denominator != 1:
            x = self._to_den(x, x.den * (c * x.den).denominator)
        k = int(c * x.den)
        reg = self.b.emit("addc", x.shape, x.level2, (x.reg,), (str(k),))
        return replace(x, reg=reg, bound=x.bound + abs(k))

    def _broadcast_to(self, x: _Sec, shape: tuple[int, ...]) -> _Sec:
        if x.shape == shape:
            return x
        axis_map = [len(shape) - len(x.shape) + i for i in range(len(x.shape))]
        return self._broadcast(x, shape, axis_map)

    def _broadcast(self, x: _Sec, shape: tuple[int, ...], axis_map: list[int]) -> _Sec:
        words = (str(len(shape)), *[str(d) for d in shape], str(len(axis_map)))
        words += tuple(str(a) for a in axis_map)
        reg = self.b.emit("broadcast", shape, x.level2, (x.reg,), words)
        return replace(x, reg=reg, shape=shape)

    def _unbroadcast(self, v: _Sec) -> _Sec:
        """The source of a broadcast that NumPy's trailing-axis rule reproduces (add and sub
        broadcast that way in the runtime): the server then touches each source element once,
        not once per copy."""
        step = self.b.plan.steps[v.reg]
        if step.op != "broadcast":
            return v
        src = self.b.plan.steps[step.args[0]]
        rank = int(step.words[0])
        axis_map = [int(w) for w in step.words[2 + rank :]]
        if axis_map != [rank - len(src.shape) + i for i in range(len(src.shape))]:
            return v
        return replace(v, reg=src.id, shape=src.shape)

    def _combine(self, x: _Sec, y: _Sec, sub: bool) -> _Sec:
        shape = _broadcast_shape(x.shape, y.shape)
        x, y = self._unbroadcast(x), self._unbroadcast(y)
        den = math.lcm(x.den, y.den)
        x, y = self._to_den(x, den), self._to_den(y, den)
        level2 = x.level2 or y.level2
        reg = self.b.emit("sub" if sub else "add", shape, level2, (x.reg, y.reg))
        return _Sec(reg, shape, den, x.bound + y.bound, level2)

    def _contract(self, x: _Sec, y: _Sec, spec: str, shape: tuple[int, ...], terms: int) -> _Sec:
        if x.level2 or y.level2:
            raise InternalError("contract of a level-2 value after the degree check")
        den, bound = x.den * y.den, x.bound * y.bound * terms
        reg, g = self._expanded_contract(x.reg, y.reg, spec, shape, den)
        return _Sec(reg, shape, den // g, -(-bound // g), True, (x.reg, y.reg, spec, den, bound))

    def _terms(self, reg: int, letters: str) -> list[tuple[int, int, str]]:
        """A level-1 register as a sum of coef * register terms with their einsum letters:
        through constant factors, negations and transposes, and through a sum or difference
        with a broadcast (lower-rank) operand, such as N X - colsum(X). Each term's letters
        are those of its own axes."""
        step = self.b.plan.steps[reg]
        if step.op == "mulc":
            c = int(step.words[0])
            return [(c * k, r, ls) for k, r, ls in self._terms(step.args[0], letters)]
        if step.op == "neg":
            return [(-k, r, ls) for k, r, ls in self._terms(step.args[0], letters)]
        if step.op == "transpose":
            return self._terms(step.args[0], letters[::-1])
        if step.op == "broadcast":
            src = self.b.plan.steps[step.args[0]]
            rank = int(step.words[0])
            axis_map = [int(w) for w in step.words[2 + rank :]]
            if all(src.shape[i] == step.shape[a] for i, a in enumerate(axis_map)):
                return self._terms(src.id, "".join(letters[a] for a in axis_map))
        if step.op in ("add", "sub"):
            a, b = (self.b.plan.steps[i] for i in step.args)
            if len(a.shape) < len(letters) or len(b.shape) < len(letters):
                sign = -1 if step.op == "sub" else 1
                la = letters[len(letters) - len(a.shape) :]
                lb = letters[len(letters) - len(b.shape) :]
                return self._terms(a.id, la) + [
                    (sign * k, r, ls) for k, r, ls in self._terms(b.id, lb)
                ]
        return [(1, reg, letters)]

    def _reduce(self, reg: int, letters: str, keep: str) -> tuple[int, str]:
        """Sum `reg` over its letters not in `keep` (a level-1 sum: cheap), before a product."""
        axes = [i for i, ch in enumerate(letters) if ch not in keep]
        if not axes:
            return reg, letters
        src = self.b.plan.steps[reg]
        shape = tuple(d for i, d in enumerate(src.shape) if i not in axes)
        words = (str(len(axes)), *[str(a) for a in axes])
        out = self.b.emit("sum", shape, False, (reg,), words)
        return out, "".join(ch for i, ch in enumerate(letters) if i not in axes)

    def _expanded_contract(
        self, xr: int, yr: int, spec: str, shape: tuple[int, ...], den: int
    ) -> tuple[int, int]:
        """Emit einsum(spec, x, y) as a combination of contractions of the operands' terms
        (`_terms`), each operand first summed over the letters only it has: the server then
        never scales or inverts the big input arrays element by element (Xc.T @ Xc for
        Xc = N X - colsum(X) is N^2 X.T X - N s s^T - N s s^T + N s s^T, one multi-
        exponentiation over the rows per entry). Identical contractions are shared (common
        subexpressions). A factor g common to every term's coefficient and to the result's
        denominator `den` is divided out of both (N above: N X.T X - s s^T over N, not N^2
        X.T X - N s s^T over N^2), which keeps the numerators, the message space and so every
        exponent of the server's multi-exponentiations log2(g) bits smaller. Returns the
        register and g."""
        lhs, rest = spec.split(",")
        rhs, out = rest.split("->")
        extent = dict(zip(lhs, self.b.plan.steps[xr].shape, strict=True))
        extent.update(zip(rhs, self.b.plan.steps[yr].shape, strict=True))
        summed = set(lhs + rhs) - set(out)
        pairs = [(tx, ty) for tx in self._terms(xr, lhs) for ty in self._terms(yr, rhs)]
        if any(set(out) - set(tx[2] + ty[2]) for tx, ty in pairs):
            # A pair of terms both broadcast along an output axis: keep the product whole.
            return self.b.emit("contract", shape, True, (xr, yr), (spec,)), 1

        def coefficient(lx: str, ly: str, k: int) -> int:
            # A summed letter neither term has (both broadcast along it) counts its terms.
            for ch in summed - set(lx + ly):
                k *= extent[ch]
            return k

        ks = [coefficient(tx[2], ty[2], tx[0] * ty[0]) for tx, ty in pairs]
        g = math.gcd(den, *ks)
        acc: int | None = None
        for ((_, rx, lx), (_, ry, ly)), k in zip(pairs, (k // g for k in ks), strict=True):
            ax, lx2 = self._reduce(rx, lx, ly + out)
            ay, ly2 = self._reduce(ry, ly, lx + out)
            # One register read twice: the server detects the symmetry of x.T @ x.
            reg = self.b.emit("contract", shape, True, (ax, ay), (f"{lx2},{ly2}->{out}",))
            if acc is None:
                if k != 1:
                    reg = self.b.emit("mulc", shape, True, (reg,), (str(k),))
                acc = reg
            else:
                if abs(k) != 1:
                    reg = self.b.emit("mulc", shape, True, (reg,), (str(abs(k)),))
                acc = self.b.emit("sub" if k < 0 else "add", shape, True, (acc, reg))
        assert acc is not None
        return acc, g

    def _elementwise_product(self, x: _Sec, y: _Sec) -> _Sec:
        shape = _broadcast_shape(x.shape, y.shape)
        letters = "abcdefgh"[: len(shape)]

        def spec_of(v: _Sec) -> tuple[_Sec, str]:
            offset = len(shape) - len(v.shape)
            if any(d == 1 and shape[offset + i] != 1 for i, d in enumerate(v.shape)):
                v = self._broadcast_to(v, shape)
                offset = 0
            return v, letters[offset:]

        x, sx = spec_of(x)
        y, sy = spec_of(y)
        return self._contract(x, y, f"{sx},{sy}->{letters}", shape, 1)

    def _secret(self, v: _Pub | _Sec, what: str) -> _Sec:
        if not isinstance(v, _Sec):
            raise InternalError(f"{what}: expected a secret operand")
        return v

    # --- ops --------------------------------------------------------------------------------

    def _lower(self, op: Operation) -> None:
        get = self.values.__getitem__
        result: _Pub | _Sec | None = None
        match op:
            case stat.ParamOp() | stat.OutputOp() | stat.ClientOp():
                return
            case _ if owner_side(op):
                result = self._derived(op)
            case stat.SizeOp():
                result = _Pub(np.asarray(Fraction(self.sizes[op.sym_value]), dtype=object))
            case stat.ConstantOp():
                result = _Pub(np.asarray(_fraction(op.float_value), dtype=object))
            case stat.InputOp():
                result = self._input(op)
            case stat.AddOp() | stat.SubOp():
                result = self._add(op, get(op.lhs), get(op.rhs), isinstance(op, stat.SubOp))
            case stat.MulOp():
                result = self._mul(op, get(op.lhs), get(op.rhs))
            case stat.DivOp():
                x, y = get(op.lhs), get(op.rhs)
                if isinstance(y, _Sec):
                    raise InternalError("division by a secret value after the degree check")
                if isinstance(x, _Pub):
                    result = _Pub(x.value / y.value)
                else:
                    c = self._constant(y, "a divisor")
                    if c == 0:
                        raise UserError("division of a secret value by 0")
                    result = self._scale(x, 1 / c)
            case stat.NegOp():
                x = get(op.input)
                if isinstance(x, _Pub):
                    result = _Pub(-x.value)
                else:
                    reg = self.b.emit("neg", x.shape, x.level2, (x.reg,))
                    result = replace(x, reg=reg)
            case stat.PowOp():
                x = get(op.input)
                k = op.exponent_value
                if isinstance(x, _Pub):
                    result = _Pub(x.value**k)
                elif k == 1:
                    result = x
                else:  # k == 2 (the degree check)
                    result = self._elementwise_product(x, x)
            case stat.PolyOp():
                result = self._poly(op, get(op.input))
            case stat.BroadcastOp():
                x = get(op.input)
                shape = self._shape(op.result)
                if isinstance(x, _Pub):
                    target = [1] * len(shape)
                    for axis, res_axis in enumerate(op.dims_tuple):
                        target[res_axis] = np.asarray(x.value).shape[axis]
                    result = _Pub(np.broadcast_to(np.asarray(x.value).reshape(target), shape))
                else:
                    result = self._broadcast(x, shape, list(op.dims_tuple))
            case stat.SumOp() | stat.MeanOp():
                x = get(op.input)
                axes = op.axes_tuple
                count = 1
                src = self._shape(op.input)
                for a in axes:
                    count *= src[a]
                if isinstance(x, _Pub):
                    s = np.sum(np.asarray(x.value, dtype=object), axis=axes)
                    result = _Pub(np.asarray(s / count if isinstance(op, stat.MeanOp) else s))
                elif x.contraction is not None:
                    # sum over a contraction's output axes: drop their letters (one fused
                    # multi-exponentiation per remaining entry).
                    xr, yr, spec, raw_den, raw_bound = x.contraction
                    lhs_rhs, out = spec.split("->")
                    kept = "".join(ch for i, ch in enumerate(out) if i not in axes)
                    shape = self._shape(op.result)
                    reg, g = self._expanded_contract(xr, yr, f"{lhs_rhs}->{kept}", shape, raw_den)
                    den = raw_den // g * (count if isinstance(op, stat.MeanOp) else 1)
                    result = _Sec(reg, shape, den, -(-raw_bound * count // g), True)
                else:
                    shape = self._shape(op.result)
                    words = (str(len(axes)), *[str(a) for a in axes])
                    reg = self.b.emit("sum", shape, x.level2, (x.reg,), words)
                    den = x.den * count if isinstance(op, stat.MeanOp) else x.den
                    result = _Sec(reg, shape, den, x.bound * count, x.level2)
            case stat.TransposeOp():
                x = get(op.input)
                if isinstance(x, _Pub):
                    result = _Pub(np.asarray(x.value).T)
                else:
                    reg = self.b.emit("transpose", x.shape[::-1], x.level2, (x.reg,))
                    result = replace(x, reg=reg, shape=x.shape[::-1])
            case stat.MatmulOp():
                result = self._matmul(get(op.lhs), get(op.rhs))
            case stat.RevealOp():
                x = get(op.input)
                if isinstance(x, _Pub):
                    raise UserError(f"revealed value '{op.sym_value}' is public (nothing to hide)")
                self.b.plan.reveals.append(PlanReveal(op.sym_value, x.reg, x.den, x.bound))
                result = x
            case _:
                ins = [self.values.get(o) for o in op.operands]
                if any(isinstance(v, _Sec) for v in ins):
                    raise UserError(
                        f"{op.name} of a secret value has no labeled-HE lowering",
                        hint="compute it in the client block, or use --scheme ckks",
                    )
                raise UserError(f"{op.name} of public values outside the client block")
        for r in op.results:
            self.values[r] = result  # type: ignore[assignment]

    def _constant(self, p: _Pub, what: str) -> Fraction:
        c = _scalar(p)
        if c is None:
            raise UserError(
                f"{what} is a public array of distinct values; the labeled target takes "
                "public scalars (or constant arrays) next to secret values"
            )
        return Fraction(c)

    def _derived(self, op: Operation) -> _Sec:
        """An owner-side value of one secret input, uploaded as a derived input."""
        src_value = op.operands[0]
        src = src_value.owner
        assert isinstance(src, stat.InputOp)
        if isinstance(op, stat.PowOp):
            coeffs = [Fraction(0)] * op.exponent_value + [Fraction(1)]
        elif isinstance(op, stat.PolyOp):
            coeffs = [_fraction(c) for c in op.coefficient_values]
        else:
            coeffs = [Fraction(0), Fraction(0), Fraction(1)]
        while len(coeffs) > 1 and coeffs[-1] == 0:
            coeffs.pop()
        if len(coeffs) > 3:
            raise UserError(f"{op.name} of degree {len(coeffs) - 1} of input '{src.sym_value}'")
        coeffs += [Fraction(0)] * (3 - len(coeffs))
        domain = src.domain_value
        if isinstance(domain, FiniteSet):
            image = [
                sum(c * _fraction(v) ** i for i, c in enumerate(coeffs)) for v in domain.values
            ]
            largest = float(max(abs(v) for v in image))
            integral = all(v.denominator == 1 for v in image)
        elif isinstance(domain, Interval):
            top = max(abs(domain.lo), abs(domain.hi))
            largest = float(sum(abs(c) * _fraction(top) ** i for i, c in enumerate(coeffs)))
            integral = False
        else:
            raise UserError(f"input '{src.sym_value}' needs a bounded domain")
        squared = coeffs == [0, 0, 1]
        poly = ",".join(str(c) for c in coeffs)
        name = f"{src.sym_value}^2" if squared else f"poly({src.sym_value};{poly})"
        extra = ("from", src.sym_value, *[str(float(c)) for c in coeffs])
        for c in coeffs:
            if Fraction(float(c)) != c:
                raise UserError(f"coefficient {c} of {op.name} is not exact in binary")
        return self._declare_input(name, self._shape(op.results[0]), largest, integral, extra)

    def _declare_input(
        self,
        name: str,
        shape: tuple[int, ...],
        largest: float,
        integral: bool,
        extra: tuple[str, ...] = (),
    ) -> _Sec:
        for s in self.b.plan.steps:
            if s.op == "input" and s.words[0] == name:
                inp = self.b.plan.input(name)
                return _Sec(s.id, shape, inp.scale, inp.bound, False)
        if integral:
            scale = 1
        else:
            f = math.ceil(self.precision_bits) - math.ceil(math.log2(max(largest, 2**-30)))
            scale = 2 ** max(0, f)
        bound = math.ceil(largest * scale)
        words = (name, str(scale), str(len(shape)), *[str(d) for d in shape], *extra)
        reg = self.b.emit("input", shape, False, (), words)
        source, coeffs = "", ()
        if extra:
            source, coeffs = extra[1], tuple(float(c) for c in extra[2:])
        self.b.plan.inputs.append(PlanInput(name, scale, shape, reg, bound, source, coeffs))
        return _Sec(reg, shape, scale, bound, False)

    def _input(self, op: stat.InputOp) -> _Sec:
        ty = stat.tensor_type(op.result)
        shape = self._shape(op.result)
        if not ty.is_secret:
            raise UserError(
                f"public input '{op.sym_value}': the labeled target takes secret inputs only",
                hint="make it a constant of the program, or use --scheme ckks",
            )
        domain = op.domain_value
        if isinstance(domain, FiniteSet):
            values = list(domain.values)
            largest = max(abs(v) for v in values)
            integral = all(float(v).is_integer() for v in values)
        elif isinstance(domain, Interval) and math.isfinite(domain.lo) and math.isfinite(domain.hi):
            largest = max(abs(domain.lo), abs(domain.hi))
            integral = False
        else:
            raise UserError(
                f"input '{op.sym_value}' needs a bounded domain (in {{...}} or in [lo, hi]) "
                "for the labeled target to size its message space"
            )
        return self._declare_input(op.sym_value, shape, largest, integral)

    def _add(self, op: Operation, x: _Pub | _Sec, y: _Pub | _Sec, sub: bool) -> _Pub | _Sec:
        shape = self._shape(op.results[0])
        if isinstance(x, _Pub) and isinstance(y, _Pub):
            return _Pub(x.value - y.value if sub else x.value + y.value)
        if isinstance(x, _Sec) and isinstance(y, _Sec):
            return self._combine(x, y, sub)
        if isinstance(x, _Sec):
            assert isinstance(y, _Pub)
            c = self._constant(y, "a public operand of + or -")
            return self._add_const(x, -c if sub else c, shape)
        assert isinstance(x, _Pub) and isinstance(y, _Sec)
        c = self._constant(x, "a public operand of + or -")
        if sub:
            reg = self.b.emit("neg", y.shape, y.level2, (y.reg,))
            y = replace(y, reg=reg)
        return self._add_const(y, c, shape)

    def _mul(self, op: Operation, x: _Pub | _Sec, y: _Pub | _Sec) -> _Pub | _Sec:
        shape = self._shape(op.results[0])
        if isinstance(x, _Pub) and isinstance(y, _Pub):
            return _Pub(x.value * y.value)
        if isinstance(x, _Sec) and isinstance(y, _Sec):
            return self._elementwise_product(x, y)
        sec, pub = (x, y) if isinstance(x, _Sec) else (y, x)
        assert isinstance(sec, _Sec) and isinstance(pub, _Pub)
        out = self._scale(sec, self._constant(pub, "a public factor"))
        return self._broadcast_to(out, shape) if out.shape != shape else out

    def _poly(self, op: stat.PolyOp, x: _Pub | _Sec) -> _Pub | _Sec:
        coeffs = [_fraction(c) for c in op.coefficient_values]
        if isinstance(x, _Pub):
            acc: Any = 0
            for c in reversed(coeffs):
                acc = acc * x.value + c
            return _Pub(np.asarray(acc, dtype=object))
        terms: list[_Sec] = []
        if len(coeffs) > 1 and coeffs[1] != 0:
            terms.append(self._scale(x, coeffs[1]))
        if len(coeffs) > 2 and coeffs[2] != 0:
            terms.append(self._scale(self._elementwise_product(x, x), coeffs[2]))
        if not terms:
            return _Pub(np.full(x.shape, coeffs[0], dtype=object))
        acc_s = terms[0]
        for t in terms[1:]:
            acc_s = self._combine(acc_s, t, False)
        return self._add_const(acc_s, coeffs[0], x.shape)

    def _matmul(self, x: _Pub | _Sec, y: _Pub | _Sec) -> _Pub | _Sec:
        if isinstance(x, _Pub) and isinstance(y, _Pub):
            return _Pub(np.asarray(x.value, dtype=object) @ np.asarray(y.value, dtype=object))
        if not (isinstance(x, _Sec) and isinstance(y, _Sec)):
            pub = x if isinstance(x, _Pub) else y
            if isinstance(pub, _Pub) and _scalar(pub) is None:
                raise UserError(
                    "a matrix product of a public array and a secret value has no labeled-HE "
                    "lowering yet",
                    hint="compute it in the client block, or use --scheme ckks",
                )
            raise UserError("a matrix product with a constant array: write it as a sum")
        lx = "ab"[: len(x.shape)] if len(x.shape) == 2 else "b"
        ly = "bc" if len(y.shape) == 2 else "b"
        out = ("a" if len(x.shape) == 2 else "") + ("c" if len(y.shape) == 2 else "")
        shape = tuple(
            ([x.shape[0]] if len(x.shape) == 2 else [])
            + ([y.shape[1]] if len(y.shape) == 2 else [])
        )
        terms = x.shape[-1]
        return self._contract(x, y, f"{lx},{ly}->{out}", shape, terms)
