"""The plaintext meaning of a `stat` program in upstream MLIR dialects (docs/mlir.md).

`lower_to_upstream` writes one `func.func` taking the program's inputs as static-shape
`tensor<...xf64>` arguments (sizes bound) and returning its revealed values, then its client
results, in source order: func, arith, math, tensor and linalg only, so `mlir-opt-19` lowers
it to LLVM and `mlir-cpu-runner-19` executes it (`run_upstream`). This is a fourth check of
every example, independent of hec's own evaluators (dsl/reference.py on the source,
compiler/stat_numpy.py, the simulator on the ckks IR): MLIR's lowering and LLVM's code
generation compute the numbers.

How each op is written: elementwise ops (arithmetic, pow by repeated products, poly by
Horner, sqrt/abs/exp/log, the normal and chi-square tails) as one `linalg.generic` with a
scalar body; broadcast as a `linalg.generic` whose input map drops or pins axes; matmul as
`linalg.matmul`/`matvec`/`vecmat`/`dot`; sum and mean as `linalg.reduce`; transpose as
`linalg.transpose`; det and adj by cofactor expansion over `tensor.extract`ed entries
(k <= 6). The tails use libm's `erfc` (MLIR 19's math dialect has `erf` but no `erfc`, and
1 - erf loses every digit of a small tail): norm_sf(x) = erfc(x/sqrt 2)/2, and for an integer
df the chi-square tail Q(df/2, x/2) in closed form (a finite sum for even df; erfc plus a
finite sum for odd df).

Results leave the executed program bit-exactly: `run_upstream` bitcasts every f64 to i64 and
prints it with the runner library's `printMemrefI64`.

`mark_secret` writes instead the HEIR form of the server's part, the input of HEIR's
`--mlir-to-ckks` (hec's comparison with HEIR, targets/mlir/heir.py): flat vectors, elementwise
arith, and every data movement a `linalg.matvec` by a public 0/1 matrix (the HEIR form section
below says why).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.dialects import stat
from compiler.errors import InternalError, UserError
from compiler.types import FiniteSet, Interval

Array = npt.NDArray[np.float64]


@dataclass
class UpstreamProgram:
    """The lowered program: MLIR text, and the names of its arguments and results in order."""

    text: str
    name: str
    inputs: list[tuple[str, tuple[int, ...]]]
    outputs: list[tuple[str, tuple[int, ...]]]
    needs_erfc: bool = False


def bind_sizes(params: Mapping[str, int], given: Mapping[str, int]) -> dict[str, int]:
    """Every size parameter bound: the given size (checked against the bound), else the bound."""
    for name, size in given.items():
        if name not in params:
            raise UserError(
                f"--size names {name}, which is not a size parameter of the program",
                hint="size parameters: " + ", ".join(params),
            )
        if not 1 <= size <= params[name]:
            raise UserError(f"--size {name}={size} is outside [1, {params[name]}]")
    return {name: given.get(name, bound) for name, bound in params.items()}


def _stat_program(module: ModuleOp) -> stat.ProgramOp:
    for op in module.body.block.ops:
        if isinstance(op, stat.ProgramOp):
            return op
    raise UserError("--upstream lowers a stat program; this module has none")


def _float(value: float) -> str:
    if not math.isfinite(value):
        raise InternalError(f"non-finite constant {value}")
    text = repr(float(value))
    return text if "." in text or "e" in text else text + ".0"


def _tensor(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


def _flat(shape: Sequence[int]) -> tuple[int, ...]:
    return (math.prod(shape),)


def _identity_map(rank: int) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({dims})>"


@dataclass
class _Emitter:
    sizes: dict[str, int]
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    count: int = 0
    needs_erfc: bool = False
    # HEIR's form (`mark_secret`): every value a flat vector, elementwise ops directly on
    # them, data movement as products with public matrices (_heir_* below).
    heir_form: bool = False
    indent: str = "    "
    # The type the scalar helpers work on: f64 inside a linalg.generic body; a tensor type
    # when elementwise ops are written directly on tensors (the HEIR form).
    elem_type: str = "f64"
    # The splat constants emitted (name -> value): a broadcast of one is a splat again.
    splats: dict[str, float] = field(default_factory=dict)

    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def shape(self, value: SSAValue) -> tuple[int, ...]:
        return tuple(
            d if isinstance(d, int) else self.sizes[d] for d in stat.tensor_type(value).dims
        )

    # -- building blocks ----------------------------------------------------------------------

    def splat(self, value: float, shape: Sequence[int]) -> str:
        name = self.fresh("c")
        self.emit(f"{name} = arith.constant dense<{_float(value)}> : {self.ty(shape)}")
        self.splats[name] = value
        return name

    def zeros(self, shape: Sequence[int]) -> str:
        empty, zero, filled = self.fresh("e"), self.fresh("z"), self.fresh("f")
        ty = _tensor(shape)
        self.emit(f"{empty} = tensor.empty() : {ty}")
        self.emit(f"{zero} = arith.constant 0.0 : f64")
        self.emit(f"{filled} = linalg.fill ins({zero} : f64) outs({empty} : {ty}) -> {ty}")
        return filled

    def map(
        self,
        operands: Sequence[str],
        shape: Sequence[int],
        body: Callable[[list[str]], str],
    ) -> str:
        """One elementwise `linalg.generic` over operands of `shape`; `body` emits the scalar
        ops on the block arguments and returns the yielded value. (In the HEIR form, `body`'s
        ops act on the tensors themselves.)"""
        if self.heir_form:
            outer_type, self.elem_type = self.elem_type, self.ty(shape)
            value = body(list(operands))
            self.elem_type = outer_type
            return value
        rank = len(shape)
        ty = _tensor(shape)
        init, result = self.fresh("e"), self.fresh("v")
        self.emit(f"{init} = tensor.empty() : {ty}")
        maps = ", ".join([_identity_map(rank)] * (len(operands) + 1))
        iterators = ", ".join(['"parallel"'] * rank)
        ins = ", ".join(operands)
        in_types = ", ".join([ty] * len(operands))
        self.emit(
            f"{result} = linalg.generic {{indexing_maps = [{maps}], iterator_types = "
            f"[{iterators}]}} ins({ins} : {in_types}) outs({init} : {ty}) {{"
        )
        args = [self.fresh("a") for _ in operands]
        out = self.fresh("o")
        block_args = ", ".join(f"{a}: f64" for a in [*args, out])
        self.lines.append(f"{self.indent}^bb0({block_args}):")
        outer = self.indent
        self.indent += "  "
        value = body(args)
        self.emit(f"linalg.yield {value} : f64")
        self.indent = outer
        self.emit(f"}} -> {ty}")
        return result

    def scalar(self, op: str, *args: str) -> str:
        name = self.fresh("s")
        self.emit(f"{name} = {op} {', '.join(args)} : {self.elem_type}")
        return name

    def const(self, value: float) -> str:
        name = self.fresh("k")
        if self.elem_type == "f64":
            self.emit(f"{name} = arith.constant {_float(value)} : f64")
        else:
            self.emit(f"{name} = arith.constant dense<{_float(value)}> : {self.elem_type}")
        return name

    def ty(self, shape: Sequence[int]) -> str:
        """The tensor type of a value of `shape`: in the HEIR form flat (row-major), a
        scalar a 1-element vector."""
        return f"tensor<{math.prod(shape)}xf64>" if self.heir_form else _tensor(shape)

    def scalar_on(self, shape: Sequence[int], op: str, *args: str) -> str:
        """`op` on whole tensors of `shape` (the HEIR form)."""
        name = self.fresh("s")
        self.emit(f"{name} = {op} {', '.join(args)} : {self.ty(shape)}")
        return name

    def call(self, fn: str, arg: str) -> str:
        name = self.fresh("s")
        self.emit(f"{name} = func.call @{fn}({arg}) : (f64) -> f64")
        return name

    def erfc(self, x: str) -> str:
        self.needs_erfc = True
        return self.call("erfc", x)

    # -- scalar functions ---------------------------------------------------------------------

    def power(self, x: str, k: int) -> str:
        """x^k by repeated squaring (k >= 1)."""
        result: str | None = None
        base = x
        while k:
            if k & 1:
                result = base if result is None else self.scalar("arith.mulf", result, base)
            k >>= 1
            if k:
                base = self.scalar("arith.mulf", base, base)
        assert result is not None
        return result

    def norm_sf(self, x: str) -> str:
        """1 - Phi(x) = erfc(x / sqrt 2) / 2."""
        scaled = self.scalar("arith.mulf", x, self.const(1.0 / math.sqrt(2.0)))
        return self.scalar("arith.mulf", self.erfc(scaled), self.const(0.5))

    def chi2_sf(self, x: str, df: int) -> str:
        """Q(df/2, x/2), the upper regularized gamma function at half-integer order:
        even df = 2m: e^(-x/2) sum_{i<m} (x/2)^i / i!;
        odd df = 2m+1: erfc(sqrt(x/2)) + e^(-x/2) sum_{i=1..m} (x/2)^(i-1/2) / Gamma(i+1/2).
        Below the support (x < 0) the tail is 1, as scipy's: x is clamped at 0 (NaN stays)."""
        x = self.scalar("arith.maximumf", x, self.const(0.0))
        half = self.scalar("arith.mulf", x, self.const(0.5))
        neg = self.scalar("arith.negf", half)
        decay = self.emit_math("math.exp", neg)
        total: str | None = None
        if df % 2 == 0:
            term = self.const(1.0)
            total = term
            for i in range(1, df // 2):
                term = self.scalar("arith.mulf", term, half)
                term = self.scalar("arith.divf", term, self.const(float(i)))
                total = self.scalar("arith.addf", total, term)
            return self.scalar("arith.mulf", decay, total)
        root = self.emit_math("math.sqrt", half)
        tail = self.erfc(root)
        if df == 1:
            return tail
        # (x/2)^(i-1/2) / Gamma(i+1/2): first term root / Gamma(3/2), then * (x/2) / (i+1/2).
        term = self.scalar("arith.divf", root, self.const(math.gamma(1.5)))
        total = term
        for i in range(2, df // 2 + 1):
            term = self.scalar("arith.mulf", term, half)
            term = self.scalar("arith.divf", term, self.const(i - 0.5))
            total = self.scalar("arith.addf", total, term)
        return self.scalar("arith.addf", tail, self.scalar("arith.mulf", decay, total))

    def emit_math(self, op: str, x: str) -> str:
        name = self.fresh("s")
        self.emit(f"{name} = {op} {x} : {self.elem_type}")
        return name


def _det_cofactor(
    em: _Emitter,
    entry: Callable[[int, int], str],
    rows: tuple[int, ...],
    cols: tuple[int, ...],
    memo: dict[tuple[tuple[int, ...], tuple[int, ...]], str],
) -> str:
    """Determinant of the submatrix (rows x cols) by Laplace expansion along its first row."""
    key = (rows, cols)
    if key in memo:
        return memo[key]
    if len(rows) == 1:
        value = entry(rows[0], cols[0])
    else:
        acc: str | None = None
        for j, col in enumerate(cols):
            minor = _det_cofactor(em, entry, rows[1:], cols[:j] + cols[j + 1 :], memo)
            term = em.scalar("arith.mulf", entry(rows[0], col), minor)
            if acc is None:
                acc = term if j % 2 == 0 else em.scalar("arith.negf", term)
            else:
                acc = em.scalar("arith.subf" if j % 2 else "arith.addf", acc, term)
        assert acc is not None
        value = acc
    memo[key] = value
    return value


def _lower_op(em: _Emitter, op: Operation) -> None:
    if isinstance(op, stat.ParamOp | stat.InputOp | stat.OutputOp | stat.ClientOp):
        return
    result = op.results[0]
    shape = em.shape(result)
    binary = {
        stat.AddOp: "arith.addf",
        stat.SubOp: "arith.subf",
        stat.MulOp: "arith.mulf",
        stat.DivOp: "arith.divf",
    }
    unary_math = {
        stat.SqrtOp: "math.sqrt",
        stat.AbsOp: "math.absf",
        stat.ExpOp: "math.exp",
        stat.LogOp: "math.log",
    }
    name: str
    match op:
        case stat.SizeOp():
            name = em.splat(float(em.sizes[op.sym_value]), shape)
        case stat.ConstantOp():
            name = em.splat(op.float_value, shape)
        case stat.EyeOp():
            name = em.fresh("c")
            rows = [
                ", ".join(_float(float(i == j)) for j in range(shape[1])) for i in range(shape[0])
            ]
            # The HEIR form is flat vectors (em.ty), the plain form nested tensors.
            text = ", ".join(rows) if em.heir_form else ", ".join(f"[{r}]" for r in rows)
            em.emit(f"{name} = arith.constant dense<[{text}]> : {em.ty(shape)}")
        case stat.AddOp() | stat.SubOp() | stat.MulOp() | stat.DivOp():
            kind = binary[type(op)]
            name = em.map(
                [em.names[op.lhs], em.names[op.rhs]], shape, lambda a: em.scalar(kind, *a)
            )
        case stat.NegOp():
            name = em.map([em.names[op.input]], shape, lambda a: em.scalar("arith.negf", a[0]))
        case stat.PowOp():
            k = op.exponent_value
            name = em.map([em.names[op.input]], shape, lambda a: em.power(a[0], k))
        case stat.PolyOp():
            coeffs = op.coefficient_values

            def horner(a: list[str]) -> str:
                acc = em.const(coeffs[-1])
                for c in reversed(coeffs[:-1]):
                    acc = em.scalar("arith.addf", em.scalar("arith.mulf", acc, a[0]), em.const(c))
                return acc

            name = em.map([em.names[op.input]], shape, horner)
        case stat.SqrtOp() | stat.AbsOp() | stat.ExpOp() | stat.LogOp():
            fn = unary_math[type(op)]
            name = em.map([em.names[op.input]], shape, lambda a: em.emit_math(fn, a[0]))
        case stat.NormSfOp():
            name = em.map([em.names[op.input]], shape, lambda a: em.norm_sf(a[0]))
        case stat.NormCdfOp():
            name = em.map(
                [em.names[op.input]], shape, lambda a: em.norm_sf(em.scalar("arith.negf", a[0]))
            )
        case stat.Chi2SfOp():
            df = op.df_value
            name = em.map([em.names[op.input]], shape, lambda a: em.chi2_sf(a[0], df))
        case stat.BroadcastOp():
            name = _broadcast(em, op, shape)
        case stat.MatmulOp():
            name = _matmul(em, op, shape)
        case stat.SumOp() | stat.MeanOp():
            name = _reduce(em, op, shape)
        case stat.TransposeOp() if em.heir_form:
            src = em.shape(op.input)
            name = _heir_linear(em, em.names[op.input], src, shape, lambda out: [(out[1], out[0])])
        case stat.TransposeOp():
            src = em.shape(op.input)
            init, name = em.fresh("e"), em.fresh("v")
            em.emit(f"{init} = tensor.empty() : {_tensor(shape)}")
            em.emit(
                f"{name} = linalg.transpose ins({em.names[op.input]} : {_tensor(src)}) "
                f"outs({init} : {_tensor(shape)}) permutation = [1, 0]"
            )
        case stat.IndexOp():
            name = _index(em, op, shape)
        case stat.DetOp() | stat.AdjOp():
            name = _small_matrix(em, op, shape)
        case stat.RevealOp():
            name = em.names[op.input]
        case _:
            raise InternalError(f"no upstream lowering for {op.name} (every stat op needs one)")
    em.names[result] = name


def _broadcast(em: _Emitter, op: stat.BroadcastOp, shape: tuple[int, ...]) -> str:
    src = em.shape(op.input)
    if em.heir_form:
        return _heir_broadcast(em, em.names[op.input], src, op.dims_tuple, shape)
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    exprs = [
        f"d{result_axis}" if src[axis] == shape[result_axis] else "0"
        for axis, result_axis in enumerate(op.dims_tuple)
    ]
    in_map = f"affine_map<({dims}) -> ({', '.join(exprs)})>"
    init, name = em.fresh("e"), em.fresh("v")
    ty = _tensor(shape)
    em.emit(f"{init} = tensor.empty() : {ty}")
    iterators = ", ".join(['"parallel"'] * rank)
    em.emit(
        f"{name} = linalg.generic {{indexing_maps = [{in_map}, {_identity_map(rank)}], "
        f"iterator_types = [{iterators}]}} ins({em.names[op.input]} : {_tensor(src)}) "
        f"outs({init} : {ty}) {{"
    )
    a, o = em.fresh("a"), em.fresh("o")
    em.lines.append(f"{em.indent}^bb0({a}: f64, {o}: f64):")
    em.emit(f"  linalg.yield {a} : f64")
    em.emit(f"}} -> {ty}")
    return name


def _matmul(em: _Emitter, op: stat.MatmulOp, shape: tuple[int, ...]) -> str:
    if em.heir_form:
        return _heir_matmul(em, op, shape)
    lhs, rhs = em.shape(op.lhs), em.shape(op.rhs)
    kind = {(1, 2): "vecmat", (2, 1): "matvec", (2, 2): "matmul", (1, 1): "dot"}[
        (len(lhs), len(rhs))
    ]
    init = em.zeros(shape)
    name = em.fresh("v")
    em.emit(
        f"{name} = linalg.{kind} ins({em.names[op.lhs]}, {em.names[op.rhs]} : "
        f"{_tensor(lhs)}, {_tensor(rhs)}) outs({init} : {_tensor(shape)}) -> {_tensor(shape)}"
    )
    return name


def _reduce(em: _Emitter, op: stat.SumOp | stat.MeanOp, shape: tuple[int, ...]) -> str:
    src = em.shape(op.input)
    count = float(math.prod(src[a] for a in op.axes_tuple))
    if em.heir_form:
        total = _heir_sum(em, em.names[op.input], src, op.axes_tuple)
        if isinstance(op, stat.MeanOp):
            return em.map(
                [total], shape, lambda a: em.scalar("arith.mulf", a[0], em.const(1 / count))
            )
        return total
    init = em.zeros(shape)
    name = em.fresh("v")
    axes = ", ".join(str(a) for a in op.axes_tuple)
    em.emit(
        f"{name} = linalg.reduce ins({em.names[op.input]} : {_tensor(src)}) "
        f"outs({init} : {_tensor(shape)}) dimensions = [{axes}]"
    )
    x, acc = em.fresh("a"), em.fresh("o")
    em.emit(f"  ({x}: f64, {acc}: f64) {{")
    total = em.fresh("s")
    em.emit(f"    {total} = arith.addf {x}, {acc} : f64")
    em.emit(f"    linalg.yield {total} : f64")
    em.emit("  }")
    if isinstance(op, stat.MeanOp):
        return em.map([name], shape, lambda a: em.scalar("arith.divf", a[0], em.const(count)))
    return name


# -- the HEIR form ------------------------------------------------------------------------------
#
# What heir-opt (heir-py 2026.11.1) `--mlir-to-ckks` compiles on secret tensors, found by
# trying (docs/mlir.md; tests/mlir/test_heir.py pins the facts): elementwise arith on whole
# tensors, and `linalg.matvec` of a plaintext matrix and a secret vector. What it does not:
# `linalg.broadcast` and broadcasting `linalg.generic`s (its layout passes reject them),
# `linalg.vecmat`/`matvec`/`matmul` with a secret matrix ("Only secret vectors and plaintext
# matrices are supported"), `tensor.splat` of a secret scalar, and a secret 2-d tensor read
# under two layouts (say rows summed and columns broadcast against: the layout conversion
# between ciphertext counts fails, "slice along dimension 0 runs out-of-bounds"). So the HEIR
# form is flat: every value is its row-major vector, elementwise ops act on the vectors, and
# every data movement (broadcast, sum over axes, transpose) is one `linalg.matvec` by the
# public 0/1 matrix of that linear map. A product of two secret matrices is both broadcast to
# [outer lhs..., inner, outer rhs...], multiplied, and summed over the inner axis. The
# matrices grow with the sizes squared: this form is for comparisons at small sizes.


# The largest public matrix the HEIR form writes (as MLIR text, about 5 bytes an entry).
HEIR_MATRIX_LIMIT = 1 << 20


def _index(em: _Emitter, op: stat.IndexOp, shape: tuple[int, ...]) -> str:
    """`x[i, a:b]`: a rank-reducing tensor.extract_slice (HEIR form: a 0/1 matvec)."""
    src = em.shape(op.input)
    ranges = op.axis_ranges(em.sizes)
    if em.heir_form:

        def sources(out: tuple[int, ...]) -> list[tuple[int, ...]]:
            kept = iter(out)
            return [tuple(start if drop else start + next(kept) for start, _, drop in ranges)]

        return _heir_linear(em, em.names[op.input], src, shape, sources)
    name = em.fresh("v")
    offsets = ", ".join(str(start) for start, _, _ in ranges)
    sizes = ", ".join(str(stop - start) for start, stop, _ in ranges)
    strides = ", ".join("1" for _ in ranges)
    em.emit(
        f"{name} = tensor.extract_slice {em.names[op.input]}[{offsets}] [{sizes}] [{strides}] "
        f": {_tensor(src)} to {_tensor(shape)}"
    )
    return name


def _heir_linear(
    em: _Emitter,
    value: str,
    src: Sequence[int],
    shape: Sequence[int],
    sources: Callable[[tuple[int, ...]], Sequence[tuple[int, ...]]],
) -> str:
    """The vector of `shape` whose entry `out` is the sum of `value`'s entries `sources(out)`
    (`value` has shape `src`), as `linalg.matvec` by that 0/1 matrix; the identity map is
    `value` itself, and a splat constant's image a splat."""
    rows, cols = math.prod(shape), math.prod(src)
    if rows * cols > HEIR_MATRIX_LIMIT:
        raise UserError(
            f"the HEIR form at sizes {', '.join(f'{k}={v}' for k, v in em.sizes.items())} "
            f"needs a {rows} x {cols} public matrix (more than {HEIR_MATRIX_LIMIT} entries)",
            hint="compare with HEIR at small sizes (e.g. --size N=16,M=8)",
        )
    matrix = np.zeros((rows, cols), dtype=np.int8)
    for out in np.ndindex(*shape):
        row = int(np.ravel_multi_index(out, shape)) if shape else 0
        for index in sources(tuple(int(i) for i in out)):
            matrix[row, int(np.ravel_multi_index(index, src)) if src else 0] += 1
    if rows == cols and np.array_equal(matrix, np.eye(rows, dtype=np.int8)):
        return value
    counts = matrix.sum(axis=1)
    if value in em.splats and np.all(counts == counts[0]):
        return em.splat(em.splats[value] * float(counts[0]), shape)
    return _matvec(em, matrix, value)


def _matvec(em: _Emitter, matrix: npt.NDArray[np.int8], value: str) -> str:
    rows, cols = matrix.shape
    text = "[" + ", ".join("[" + ", ".join(f"{v}.0" for v in row) + "]" for row in matrix) + "]"
    public, zero, name = em.fresh("m"), em.fresh("z"), em.fresh("v")
    em.emit(f"{public} = arith.constant dense<{text}> : tensor<{rows}x{cols}xf64>")
    em.emit(f"{zero} = arith.constant dense<0.0> : tensor<{rows}xf64>")
    em.emit(
        f"{name} = linalg.matvec ins({public}, {value} : tensor<{rows}x{cols}xf64>, "
        f"tensor<{cols}xf64>) outs({zero} : tensor<{rows}xf64>) -> tensor<{rows}xf64>"
    )
    return name


def _heir_broadcast(
    em: _Emitter, value: str, src: Sequence[int], axes: Sequence[int], shape: Sequence[int]
) -> str:
    """`value` (shape `src`) with its axis i on result axis axes[i] of `shape` (a source axis
    of size 1 under a longer result axis is stretched)."""

    def source(out: tuple[int, ...]) -> list[tuple[int, ...]]:
        return [tuple(out[d] if src[i] == shape[d] else 0 for i, d in enumerate(axes))]

    return _heir_linear(em, value, src, shape, source)


def _heir_sum(em: _Emitter, value: str, src: Sequence[int], axes: Sequence[int]) -> str:
    """`value` summed over `axes`."""
    kept = [d for d in range(len(src)) if d not in axes]
    shape = [src[d] for d in kept]
    summed = [src[d] for d in axes]

    def sources(out: tuple[int, ...]) -> list[tuple[int, ...]]:
        found: list[tuple[int, ...]] = []
        for inner in np.ndindex(*summed):
            index = [0] * len(src)
            for d, i in zip(kept, out, strict=True):
                index[d] = i
            for d, i in zip(axes, inner, strict=True):
                index[d] = int(i)
            found.append(tuple(index))
        return found

    return _heir_linear(em, value, src, shape, sources)


def _heir_matmul(em: _Emitter, op: stat.MatmulOp, shape: tuple[int, ...]) -> str:
    """lhs @ rhs as both operands broadcast to [outer lhs..., inner, outer rhs...], multiplied
    and summed over the inner axis."""
    lhs, rhs = em.shape(op.lhs), em.shape(op.rhs)
    full = (*lhs, *rhs[1:])
    inner = len(lhs) - 1
    left = _heir_broadcast(em, em.names[op.lhs], lhs, range(len(lhs)), full)
    right = _heir_broadcast(em, em.names[op.rhs], rhs, range(inner, len(full)), full)
    product = em.scalar_on(full, "arith.mulf", left, right)
    return _heir_sum(em, product, full, (inner,))


def _small_matrix(em: _Emitter, op: stat.DetOp | stat.AdjOp, shape: tuple[int, ...]) -> str:
    """det and adj by cofactor expansion over the matrix's entries: `tensor.extract`ed f64s,
    or in the HEIR form 1-vectors selected by public matrices (heir-opt compiles no
    extraction of a secret scalar), put back in place the same way."""
    src = em.shape(op.input)
    k = src[0]
    matrix = em.names[op.input]
    index: dict[int, str] = {}
    entries: dict[tuple[int, int], str] = {}

    def idx(i: int) -> str:
        if i not in index:
            index[i] = em.fresh("i")
            em.emit(f"{index[i]} = arith.constant {i} : index")
        return index[i]

    def entry(i: int, j: int) -> str:
        if (i, j) not in entries:
            if em.heir_form:
                entries[(i, j)] = _heir_linear(em, matrix, src, (1,), lambda _: [(i, j)])
            else:
                entries[(i, j)] = em.fresh("x")
                em.emit(
                    f"{entries[(i, j)]} = tensor.extract {matrix}[{idx(i)}, {idx(j)}] : "
                    f"{_tensor(src)}"
                )
        return entries[(i, j)]

    outer_type = em.elem_type
    if em.heir_form:
        em.elem_type = em.ty((1,))
    memo: dict[tuple[tuple[int, ...], tuple[int, ...]], str] = {}
    everything = tuple(range(k))
    values: list[str] = []
    if isinstance(op, stat.DetOp):
        values.append(_det_cofactor(em, entry, everything, everything, memo))
    else:
        for row in range(k):  # adj[row][col] = (-1)^(row+col) det(A without row col, column row)
            for col in range(k):
                if k == 1:
                    values.append(em.const(1.0))
                    continue
                rows = tuple(r for r in everything if r != col)
                cols = tuple(c for c in everything if c != row)
                minor = _det_cofactor(em, entry, rows, cols, memo)
                values.append(minor if (row + col) % 2 == 0 else em.scalar("arith.negf", minor))
    em.elem_type = outer_type
    if not em.heir_form:
        name = em.fresh("v")
        em.emit(f"{name} = tensor.from_elements {', '.join(values)} : {em.ty(shape)}")
        return name
    if not shape:
        return values[0]
    placed = [
        _heir_linear(em, value, (1,), shape, lambda out, at=at: [(0,)] if out == at else [])
        for value, at in zip(values, np.ndindex(*shape), strict=True)
    ]
    total = placed[0]
    for part in placed[1:]:
        total = em.scalar_on(shape, "arith.addf", total, part)
    return total


def lower_to_upstream(
    module: ModuleOp,
    sizes: Mapping[str, int] | None = None,
    *,
    client: bool = True,
    mark_secret: bool = False,
) -> UpstreamProgram:
    """The stat program of `module` as one func.func in upstream dialects, sizes bound (each
    size parameter not in `sizes` takes its declared bound). Without `client`, only the
    server's part (results: the revealed values); with `mark_secret`, the form HEIR's
    `--mlir-to-ckks` compiles (the HEIR form above: flat row-major vectors, so `inputs` and
    `outputs` give flat shapes) with each secret input marked `{secret.secret}`."""
    program = _stat_program(module)
    bound = bind_sizes(program.params(), dict(sizes or {}))
    em = _Emitter(bound, heir_form=mark_secret)
    inputs: list[tuple[str, tuple[int, ...]]] = []
    args: list[str] = []
    for op in program.inputs():
        name = f"%{op.sym_value}" if op.sym_value.isidentifier() else em.fresh("in")
        em.names[op.result] = name
        shape = em.shape(op.result)
        inputs.append((op.sym_value, _flat(shape) if mark_secret else shape))
        secret = mark_secret and stat.tensor_type(op.result).is_secret
        args.append(f"{name}: {em.ty(shape)}" + (" {secret.secret}" if secret else ""))
    outputs: list[tuple[str, tuple[int, ...]]] = []
    results: list[str] = []
    for op in program.server_ops():
        _lower_op(em, op)
        if isinstance(op, stat.RevealOp):
            shape = em.shape(op.result)
            outputs.append((op.sym_value, _flat(shape) if mark_secret else shape))
            results.append(em.names[op.result])
    client_op = program.client() if client else None
    if client_op is not None:
        for op in client_op.block.ops:
            if isinstance(op, stat.OutputOp):
                outputs.append((op.sym_value, em.shape(op.input)))
                results.append(em.names[op.input])
            else:
                _lower_op(em, op)
    result_types = ", ".join(_tensor(s) for _, s in outputs)
    sym = program.sym_name.data
    out_names = ", ".join(f'"{n}"' for n, _ in outputs)
    in_names = ", ".join(f'"{n}"' for n, _ in inputs)
    sizes_text = ", ".join(f"{k} = {v} : i64" for k, v in bound.items())
    # HEIR's pipeline needs a backend on the module (any: only its ckks output is read).
    module_attrs = " attributes {backend.openfhe}" if mark_secret else ""
    lines = [
        f"// The plaintext meaning of program {sym} at sizes "
        + ", ".join(f"{k}={v}" for k, v in bound.items()),
        "// (hec ir --upstream; lower with mlir-opt-19, run with mlir-cpu-runner-19: docs/mlir.md)",
        f"module{module_attrs} {{",
        f"  func.func @{sym}({', '.join(args)}) -> ({result_types})",
        f"      attributes {{hec.inputs = [{in_names}], hec.outputs = [{out_names}], "
        f"hec.sizes = {{{sizes_text}}}}} {{",
        *em.lines,
        f"    return {', '.join(results)} : {result_types}",
        "  }",
    ]
    if em.needs_erfc:
        lines.append("  func.func private @erfc(f64) -> f64  // libm")
    lines.append("}")
    return UpstreamProgram("\n".join(lines) + "\n", sym, inputs, outputs, em.needs_erfc)


# --------------------------------------------------------------------------------------------
# Executing it
# --------------------------------------------------------------------------------------------

LOWER_TO_LLVM = (
    "--convert-elementwise-to-linalg",
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--convert-linalg-to-loops",
    "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--convert-math-to-libm",
    "--convert-math-to-llvm",
    "--convert-arith-to-llvm",
    "--finalize-memref-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
)


def _dense(values: Array) -> str:
    if values.ndim == 0:
        return _float(float(values))
    return "[" + ", ".join(_dense(v) for v in values) + "]"


def harness(program: UpstreamProgram, inputs: Mapping[str, npt.ArrayLike]) -> str:
    """`program` plus a `main` that calls it on `inputs` (dense constants) and prints every
    result as the i64 bit patterns of its f64 values."""
    lines = program.text.rstrip().splitlines()
    assert lines[-1] == "}"
    body = ["  func.func private @printMemrefI64(memref<*xi64>)", "  func.func @main() {"]
    args: list[str] = []
    types: list[str] = []
    for i, (name, shape) in enumerate(program.inputs):
        if name not in inputs:
            raise UserError(f"no value given for input '{name}'")
        value = np.asarray(inputs[name], dtype=np.float64)
        if value.shape != shape:
            raise UserError(f"input {name} has shape {value.shape}, the program {shape}")
        body.append(f"    %in{i} = arith.constant dense<{_dense(value)}> : {_tensor(shape)}")
        args.append(f"%in{i}")
        types.append(_tensor(shape))
    outs = [f"%out{i}" for i in range(len(program.outputs))]
    out_types = [_tensor(s) for _, s in program.outputs]
    body.append(
        f"    {', '.join(outs)} = func.call @{program.name}({', '.join(args)}) : "
        f"({', '.join(types)}) -> ({', '.join(out_types)})"
    )
    for i, (_, shape) in enumerate(program.outputs):
        ity = _tensor(shape).replace("f64>", "i64>")
        mty = ity.replace("tensor<", "memref<")
        body += [
            f"    %bits{i} = arith.bitcast %out{i} : {out_types[i]} to {ity}",
            f"    %mem{i} = bufferization.to_memref %bits{i} : {mty}",
            f"    %any{i} = memref.cast %mem{i} : {mty} to memref<*xi64>",
            f"    func.call @printMemrefI64(%any{i}) : (memref<*xi64>) -> ()",
        ]
    body += ["    return", "  }", "}"]
    return "\n".join(lines[:-1] + body) + "\n"


_MEMREF = re.compile(r"Unranked Memref[^\n]*data =\s*\n(.*?)(?=Unranked Memref|\Z)", re.DOTALL)


def parse_printed(text: str, program: UpstreamProgram) -> dict[str, Array]:
    """The results printed by `harness`'s main, as float64 arrays by name."""
    blocks = _MEMREF.findall(text)
    if len(blocks) != len(program.outputs):
        raise InternalError(
            f"the runner printed {len(blocks)} arrays, the program has "
            f"{len(program.outputs)} results:\n{text[:2000]}"
        )
    out: dict[str, Array] = {}
    for (name, shape), block in zip(program.outputs, blocks, strict=True):
        bits = [int(v) for v in re.findall(r"-?\d+", block)]
        if len(bits) != math.prod(shape):
            raise InternalError(f"result {name}: {len(bits)} values for shape {shape}")
        values = [struct.unpack("<d", struct.pack("<q", b))[0] for b in bits]
        out[name] = np.asarray(values, dtype=np.float64).reshape(shape)
    return out


def sample_inputs(module: ModuleOp, sizes: Mapping[str, int], seed: int = 0) -> dict[str, Array]:
    """Random inputs within each input's declared domain (standard normal when it has none)."""
    program = _stat_program(module)
    bound = bind_sizes(program.params(), dict(sizes))
    rng = np.random.default_rng(seed)
    out: dict[str, Array] = {}
    for op in program.inputs():
        shape = tuple(
            d if isinstance(d, int) else bound[d] for d in stat.tensor_type(op.result).dims
        )
        domain = op.domain_value
        if isinstance(domain, FiniteSet):
            out[op.sym_value] = rng.choice(np.array(domain.values), size=shape)
        elif isinstance(domain, Interval):
            out[op.sym_value] = rng.uniform(domain.lo, domain.hi, size=shape)
        else:
            out[op.sym_value] = rng.normal(size=shape)
    return out
