"""Reference simulator for `ckks` programs: runs the IR on numpy arrays (DESIGN.md §2, §9).

Every ciphertext array is held as its slot values with the layout of its type: a packed
array of logical shape [..., W] as [..., ceil(W / slots), slots] (zero padded), a complex one
as complex numbers [..., ceil(W / (2 slots)), slots] (block 2j the real parts, block 2j + 1
the imaginary parts), a replicated array as [..., 1] (one value standing for every slot), a
grid array (docs/layout.md) as [array axes..., slots] with its row axis replaced by its row
blocks ceil(n / R), its column axis by its column blocks ceil(m / C), unrolled axes as they
are, and slot r * C + c holding grid row r, column c (replicas where no axis is).
Each op does on these arrays what the scheme does on ciphertexts: `sum_slots` adds the
blocks and then rotates and adds with the offsets 1, 2, ..., slots/2, `rotate` rolls each
ciphertext's slots, `broadcast` reuses ciphertexts, `unpack_complex` splits the real and
imaginary parts into blocks, and the value of every ciphertext is checked against the
modulus of its level (|x|·scale < Q_l / 2, else decryption would wrap), with the exact
scales of the types.

The simulator also checks what the runtime checks, so a program that passes it cannot abort
encrypted: it follows each ciphertext array's level, scale and degree by the runtime's own
rules (runtime/ckks/evaluator.cpp, runtime/program/ckks_program.cpp: the scale a double,
multiplied, divided by the dropped prime, 2^bits as emitted), refuses what the evaluator
refuses (operands of add/sub/dot at different levels or scales beyond its 1e-9 relative
tolerance, rescale at level 0, a key switch above the key level or of the wrong degree), and
compares each value with its type as the generated program's `expect_type` does. Each
refusal names the op and its IR value, as the runtime's errors do (`run_op`).

Two modes:
- exact: real arithmetic in float64, no rounding, no noise: agreement with the plaintext
  reference shows that the passes kept the meaning;
- noisy: the errors of the scheme at their analytic magnitudes (`compiler.analysis.noise`),
  drawn as Gaussians and divided by the scale at which they occur: encoding rounding, fresh
  public-key encryption, rescale rounding (growing with the ciphertext degree), key switches;
  real constants are rounded to their encoding scale. A replicated ciphertext carries one
  error sample for all its slots (the real slots' errors are independent, with the same
  variance). The precision the report promises is checked against this mode.
  With `flooding`, each revealed value (not an exact digit) also gets the Gaussian the decrypt
  role floods it with (compiler/analysis/flooding.py), as the generated program's decrypt does
  unless run with --no-flooding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.ir import Operation, SSAValue

from compiler.analysis.ckks_util import sum_slots_offsets
from compiler.analysis.flooding import flooding_sigma
from compiler.analysis.noise import NoiseModel, output_precision
from compiler.analysis.packed import fresh_coefficient_sigma
from compiler.analysis.ranges import evaluate_public
from compiler.dialects import ckks, he
from compiler.errors import InternalError, UserError
from compiler.ir_text import value_names
from compiler.owner_expr import parse
from compiler.types import Dim

Array = npt.NDArray[np.float64]
# Slot values of a ciphertext array: real, or complex for the complex layout.
Slots = npt.NDArray[np.inexact[Any]]


@dataclass
class SimulationResult:
    outputs: dict[str, Array]


@dataclass(frozen=True)
class _Meta:
    """What the runtime holds about a ciphertext (or plaintext) array besides its slots: the
    level, the scale as the runtime's double and the degree (1 for a plaintext)."""

    level: int
    scale: float
    degree: int


def _runtime_scale(bits: float) -> float:
    """The scale the runtime derives from an emitted log2 scale (std::exp2 of the double;
    inf past the double range, as std::exp2 returns, which no check then accepts)."""
    return 2.0**bits if bits < 1024.0 else math.inf


class _Sim:
    def __init__(
        self,
        program: ckks.ProgramOp,
        sizes: Mapping[str, int],
        noisy: bool,
        seed: int,
        flooding: bool = False,
    ):
        params = program.parameters()
        if params is None:
            raise InternalError("the simulator needs a program with parameters")
        self.params = params
        self.slots = params.slots
        self.sizes = dict(sizes)
        self.noisy = noisy
        self.rng = np.random.default_rng(seed)
        self.model = NoiseModel(params.log_n, max(params.dnum, 1))
        self.flood_sigma: dict[str, float] = {}
        if noisy and flooding:
            self.flood_sigma = {
                p.name: flooding_sigma(p.sigma)
                for p in output_precision(program, program.params(), self.model)
            }
        self.values: dict[SSAValue, Slots] = {}
        self.meta: dict[SSAValue, _Meta] = {}
        self.program = program
        self.key_level = len(params.moduli) if params.key_level is None else params.key_level
        self.public = evaluate_public(program, self.sizes)
        bounds = program.params()
        for name, size in self.sizes.items():
            if name in bounds and size > bounds[name]:
                raise UserError(
                    f"size {name} = {size} exceeds the bound {bounds[name]} the program was "
                    "compiled for",
                    hint=f"recompile with --size {name}={size}",
                )

    # ------------------------------------------------------------------ layouts
    def dim(self, d: Dim) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def blocks(self, width: int) -> int:
        return -(-width // self.slots)

    def grid_shape(self, grid: he.Grid, dims: tuple[int, ...]) -> tuple[int, ...]:
        """The array axes of a grid array: row and column axes become their block counts."""
        per = {he.ROW: grid.rows, he.COL: grid.columns(self.slots), he.UNROLLED: 1}
        return tuple(-(-d // per[r]) for d, r in zip(dims, grid.roles, strict=True))

    def to_grid(self, x: Array, grid: he.Grid) -> Slots:
        """Logical `x` into the grid's slots (zero padding, replicas where no axis is)."""
        rows, cols = grid.rows, grid.columns(self.slots)
        out = x
        tail: list[int] = []
        for axis, size in ((grid.row_axis, rows), (grid.col_axis, cols)):
            if axis is None:
                out = out[..., np.newaxis]
                tail.append(-1)
                continue
            blocks = -(-x.shape[axis] // size)
            pad = [(0, 0)] * out.ndim
            pad[axis] = (0, blocks * size - x.shape[axis])
            out = np.pad(out, pad)
            out = out.reshape((*out.shape[:axis], blocks, size, *out.shape[axis + 1 :]))
            out = np.moveaxis(out, axis + 1, -1)
            tail.append(size)
        # out: [array axes..., (rows or 1), (cols or 1)] in the order rows, cols.
        full = np.broadcast_to(out, (*out.shape[:-2], rows, cols))
        return full.reshape((*out.shape[:-2], rows * cols)).copy()

    def from_grid(self, x: Slots, grid: he.Grid, dims: tuple[int, ...]) -> Array:
        """The logical array of grid slots `x`: each element read at its block, grid row and
        column (row 0 or column 0 where that direction holds replicas)."""
        rows, cols = grid.rows, grid.columns(self.slots)
        arr = self.grid_shape(grid, dims)
        y = np.real(np.broadcast_to(x, (*arr, self.slots))).reshape((*arr, rows, cols))
        at = np.indices(dims)
        zero = np.zeros(dims, np.int64)
        row_i = at[grid.row_axis] if grid.row_axis is not None else zero
        col_i = at[grid.col_axis] if grid.col_axis is not None else zero
        index = [
            at[axis] // (rows if role == he.ROW else cols if role == he.COL else 1)
            for axis, role in enumerate(grid.roles)
        ]
        return y[(*index, row_i % rows, col_i % cols)].copy()

    def to_diagonal(self, x: Array, d: he.Diagonal) -> Slots:
        """Matrix `x` as its generalized diagonals, pre-rotated per giant group and repeated
        every L slots (he.Diagonal): [D, slots]."""
        if d.period > self.slots or x.shape[0] > d.rows or x.shape[1] > d.cols:
            raise InternalError(f"{d.text} does not hold a {list(x.shape)} matrix in {self.slots}")
        padded = np.zeros((d.rows, d.cols))
        padded[: x.shape[0], : x.shape[1]] = x
        i = np.arange(d.count)[:, None]
        j = np.arange(d.period)[None, :]
        diagonals = padded[j % d.rows, (j + i) % d.cols]  # [D, L], diagonal i at slot j
        out = np.empty_like(diagonals)
        for g in range(d.giants):
            rows = slice(g * d.baby, (g + 1) * d.baby)
            out[rows] = np.roll(diagonals[rows], g * d.baby, axis=-1)  # slot j -> j + g b
        return np.tile(out, self.slots // d.period)

    def to_cyclic(self, x: Array, period: int) -> Slots:
        """Vector `x` repeated every `period` slots, zero between its end and the period."""
        if period > self.slots or x.shape[0] > period:
            raise InternalError(f"cyclic<{period}> does not hold {x.shape[0]} in {self.slots}")
        base = np.zeros(period)
        base[: x.shape[0]] = x
        return np.tile(base, self.slots // period).reshape((1, self.slots))

    def diag_matvec(self, op: ckks.DiagMatvecOp) -> Slots:
        """The Halevi-Shoup product with baby-step giant-step, as the runtime does it
        (he.DiagMatvecRule), a key-switch error for every rotation and relinearization."""
        d = op.diagonal
        m, v = self.values[op.lhs], self.values[op.rhs]
        v_bits = ckks.ct_type(op.rhs).scale_bits
        bits = ckks.ct_type(op.result).scale_bits
        babies = [v] + [
            np.roll(v, -k, axis=-1) + self.noise(v.shape, self.model.key_switch(), v_bits)
            for k in range(1, d.baby)
        ]
        total: Slots | None = None
        for g in range(d.giants):
            acc = np.sum([m[g * d.baby + k] * babies[k][0] for k in range(d.baby)], axis=0)
            acc = acc + self.noise_like(acc, self.model.key_switch(), bits)  # relinearize
            if g:
                acc = np.roll(acc, -g * d.baby) + self.noise_like(
                    acc, self.model.key_switch(), bits
                )
            total = acc if total is None else total + acc
        assert total is not None
        for stride in d.fold:
            total = (
                total
                + np.roll(total, -stride)
                + self.noise_like(total, self.model.key_switch(), bits)
            )
        return np.asarray(total).reshape((1, self.slots))

    def convert(self, op: ckks.ConvertOp) -> Slots:
        """he.ConvertRule as the runtime does it: a relabelling of a masked cyclic vector, or
        the rotate-and-add replication of a zero-padded packed one."""
        x = np.asarray(self.values[op.input])
        src = ckks.ct_type(op.input)
        if not self.noisy:
            width = self.dim(src.dims[0])
            if np.any(np.abs(x.reshape(-1)[width:]) > 1e-9):
                raise InternalError(f"{op.name}: the padding slots of the operand are not zero")
        bits = ckks.ct_type(op.result).scale_bits
        for offset in op.replications(self.slots):
            x = x + np.roll(x, -offset, axis=-1) + self.noise_like(x, self.model.key_switch(), bits)
        return x.reshape((1, self.slots))

    def to_layout(self, logical: Array, ty: ckks.CtType | ckks.PtType) -> Slots:
        dims = tuple(self.dim(d) for d in ty.dims)
        x = np.asarray(logical, dtype=np.float64).reshape(dims)
        grid = he.grid_of(ty.layout_name)
        if grid is not None:
            return self.to_grid(x, grid)
        diagonal = he.diagonal_of(ty.layout_name)
        if diagonal is not None:
            return self.to_diagonal(x, diagonal)
        period = he.cyclic_of(ty.layout_name)
        if period is not None:
            return self.to_cyclic(x, period)
        if ty.layout_name == ckks.REPLICATED:
            return x.reshape((*dims, 1))
        width = dims[-1]
        if ty.layout_name == ckks.COMPLEX:
            pairs = -(-width // (2 * self.slots))
            padded = np.zeros((*dims[:-1], 2 * pairs * self.slots))
            padded[..., :width] = x
            split = padded.reshape((*dims[:-1], pairs, 2, self.slots))
            return split[..., 0, :] + 1j * split[..., 1, :]
        padded = np.zeros((*dims[:-1], self.blocks(width) * self.slots))
        padded[..., :width] = x
        return padded.reshape((*dims[:-1], self.blocks(width), self.slots))

    def from_layout(self, x: Slots, ty: ckks.CtType) -> Array:
        dims = tuple(self.dim(d) for d in ty.dims)
        grid = he.grid_of(ty.layout_name)
        if grid is not None:
            return self.from_grid(x, grid, dims)
        if he.cyclic_of(ty.layout_name) is not None:
            return np.real(np.asarray(x).reshape(-1)[: dims[0]]).copy()
        if he.diagonal_of(ty.layout_name) is not None:
            raise InternalError("a diagonal array is not decrypted")
        if ty.layout_name == ckks.REPLICATED:
            return np.real(np.broadcast_to(x, (*dims, 1))[..., 0]).copy()
        width = dims[-1]
        if ty.layout_name == ckks.COMPLEX:
            x = self.split_complex(x, dims)
        flat = np.broadcast_to(np.real(x), (*dims[:-1], self.blocks(width), self.slots))
        return flat.reshape((*dims[:-1], -1))[..., :width].copy()

    def split_complex(self, z: Slots, dims: tuple[int, ...]) -> Array:
        """Complex layout -> packed: block 2j = Re, block 2j + 1 = Im (as the runtime)."""
        pairs = -(-dims[-1] // (2 * self.slots))
        z = np.broadcast_to(z, (*dims[:-1], pairs, self.slots))
        both = np.stack([np.real(z), np.imag(z)], axis=-2)
        blocks = both.reshape((*dims[:-1], 2 * pairs, self.slots))
        return blocks[..., : self.blocks(dims[-1]), :].copy()

    # ------------------------------------------------------------------ noise
    def noise(self, shape: tuple[int, ...], slot_variance: float, log_scale: float) -> Array:
        if not self.noisy:
            return np.zeros(())
        sigma = math.sqrt(slot_variance) * 2.0 ** (-log_scale)  # no overflow past 2^1023
        return self.rng.normal(0.0, sigma, size=shape)

    def noise_like(self, x: Slots, slot_variance: float, log_scale: float) -> Slots:
        """Errors for every slot of `x`: on both parts of complex slots."""
        e = self.noise(x.shape, slot_variance, log_scale)
        if np.iscomplexobj(x) and self.noisy:
            e = e + 1j * self.noise(x.shape, slot_variance, log_scale)
        return e

    def round_const(self, c: float, scale: ckks.ScaleAttr) -> float:
        """c as the runtime encodes it, round(c·scale)/scale, computed on the exact scale
        (`ckks.ScaleAttr.rounded`)."""
        if not self.noisy:
            return c
        return scale.rounded(c)

    def grid_valid(
        self, grid: he.Grid, dims: tuple[int, ...], columns: bool = True
    ) -> npt.NDArray[np.bool_]:
        """Which slots of a grid array hold an element (not padding): [array axes..., slots];
        with `columns` False, only the padding rows count as padding."""
        rows, cols = grid.rows, grid.columns(self.slots)
        arr = self.grid_shape(grid, dims)
        valid = np.ones((*arr, rows, cols), dtype=bool)
        for axis, size, at in ((grid.row_axis, rows, -2), (grid.col_axis, cols, -1)):
            if axis is None or (at == -1 and not columns):
                continue
            shape = [1] * (len(arr) + 2)
            shape[axis], shape[at] = arr[axis], size
            position = np.arange(arr[axis])[:, None] * size + np.arange(size)[None, :]
            valid = valid & (position < dims[axis]).reshape(shape)
        return valid.reshape((*arr, rows * cols))

    def masked(self, x: Slots, c: float, op: ckks.MulConstOp) -> Slots:
        """x times c on the valid slots of its packed axis and 0 on the padding; in noisy mode
        plus the mask's per-slot encoding error (N/12 at const_scale) times x."""
        ty = ckks.ct_type(op.input)
        grid = he.grid_of(ty.layout_name)
        if grid is not None:
            valid = self.grid_valid(grid, tuple(self.dim(d) for d in ty.dims))
            x = np.broadcast_to(x, valid.shape)
            out = x * np.where(valid, c, 0.0)
            if self.noisy:
                out = out + x * self.noise(x.shape, self.model.encoding(), op.const_scale_bits)
            return out
        width = self.dim(ty.dims[-1])
        blocks = self.blocks(width)
        valid = (np.arange(blocks * self.slots) < width).reshape(blocks, self.slots)
        x = np.broadcast_to(x, (*x.shape[:-2], blocks, self.slots))
        out = x * np.where(valid, c, 0.0)
        if self.noisy:
            out = out + x * self.noise(x.shape, self.model.encoding(), op.const_scale_bits)
        return out

    def check_fits(self, x: Slots, ty: ckks.CtType, what: str) -> None:
        peak = float(np.max(np.abs(x))) if x.size else 0.0
        if peak == 0.0:
            return
        bits = math.log2(peak) + ty.scale_bits + 1.0
        have = self.params.modulus_bits(ty.level_value)
        if bits > have:
            raise InternalError(
                f"{what}: |x| = {peak:.3g} at scale 2^{ty.scale_bits:.1f} needs {bits:.1f} bits "
                f"but Q_{ty.level_value} has {have:.1f}: decryption would wrap around"
            )

    # ------------------------------------------------------------------ ops
    # ------------------------------------------------------------------ coeff layout
    def coeff_digits(self, op: ckks.EncodeOp, inputs: Mapping[str, npt.ArrayLike]) -> Array:
        """A coeff array as its digits: [digit, rows, columns] (per-row digits broadcast along
        the columns). No digit carries into another (packed-counts proves the radices), so the
        sums of the digits are the sums of the packed integers."""
        ty = ckks.pt_type(op.result)
        rows, cols = (self.dim(d) for d in ty.dims)
        env = {name: self.source_array(name, inputs) for name in op.sources()}
        out = np.zeros((len(op.digit_exprs), rows, cols))
        for k, text in enumerate(op.digit_exprs):
            value = parse(text).evaluate(env, 2)
            out[k] = np.broadcast_to(value, (rows, cols))
        return out

    def source_array(self, name: str, inputs: Mapping[str, npt.ArrayLike]) -> Array:
        if name not in inputs:
            raise UserError(f"no data for input {name}")
        return np.asarray(inputs[name], dtype=np.float64)

    def decrypt_digit(self, op: ckks.DecryptOp) -> Array:
        """Digit k of a decrypted coeff sum; in noisy mode the coefficient's decryption error
        (sum of the rows' fresh errors, Gaussian with the analytic sigma) is rounded away as
        the runtime rounds it, and whatever survives the rounding lands in the lowest digit."""
        x = self.values[op.input]
        k = op.digit_value
        assert k is not None
        enc = self.coeff_encode[op.input]
        group = enc.group_value
        digits = x[k].copy()
        if self.noisy:
            ty = ckks.ct_type(op.input)
            rows = self.coeff_rows[op.input]
            sigma = fresh_coefficient_sigma(self.params.log_n) * math.sqrt(rows)
            coefs = -(-digits.shape[-1] // group)
            if op.input not in self.coeff_noise:
                e = self.rng.normal(0.0, sigma, size=coefs) / 2.0**ty.scale_bits
                self.coeff_noise[op.input] = np.round(e)
            first = (
                next(j for j, s in enumerate(enc.scalar_digit_flags) if not s)
                if not all(enc.scalar_digit_flags)
                else 0
            )
            if k == first:
                carry = self.coeff_noise[op.input]
                digits[..., ::group] += carry[: digits[..., ::group].shape[-1]]
        if op.is_scalar_digit:
            return np.asarray(digits.reshape(-1)[0])
        return digits

    def run(self, program: ckks.ProgramOp, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Array]:
        outputs: dict[str, Array] = {}
        self.coeff_encode: dict[SSAValue, ckks.EncodeOp] = {}
        self.coeff_rows: dict[SSAValue, int] = {}
        self.coeff_noise: dict[SSAValue, Array] = {}
        for op in program.block.ops:
            if isinstance(op, ckks.DecryptOp) and op.digit_value is not None:
                outputs[op.sym_value] = self.decrypt_digit(op)
                continue
            if isinstance(op, ckks.EncodeOp) and op.digit_exprs:
                self.values[op.result] = self.coeff_digits(op, inputs)
                self.coeff_encode[op.result] = op
                continue
            if (
                op.results
                and isinstance(op.results[0].type, ckks.CtType)
                and ckks.ct_type(op.results[0]).layout_name == ckks.COEFF
            ):
                src = op.operands[0]
                self.coeff_encode[op.results[0]] = self.coeff_encode[src]
                x = self.values[src]
                if isinstance(op, ckks.EncryptOp):
                    self.coeff_rows[op.result] = x.shape[1]
                    self.values[op.result] = x
                elif isinstance(op, ckks.ReduceOp):
                    self.coeff_rows[op.result] = self.coeff_rows[src]
                    self.values[op.result] = np.sum(x, axis=1)
                else:
                    raise InternalError(f"{op.name} on a coeff array in the simulator")
                continue
            if isinstance(op, ckks.DecryptOp):
                x = self.from_layout(self.values[op.input], ckks.ct_type(op.input))
                if op.factor is not None:
                    x = x * self.public[op.factor]
                sigma = self.flood_sigma.get(op.sym_value, 0.0)
                if sigma > 0.0:
                    x = x + self.rng.normal(0.0, sigma, np.shape(x))
                outputs[op.sym_value] = x
                continue
            if not op.results or isinstance(op.results[0].type, ckks.PublicType):
                continue
            out = op.results[0]
            value = self.step(op, inputs)
            ty = out.type
            if isinstance(ty, ckks.CtType):
                self.check_fits(value, ty, op.name)
            if isinstance(ty, ckks.CtType | ckks.PtType) and ty.layout_name != ckks.COEFF:
                self.meta[out] = self.runtime_meta(op)
                self.expect_type(op, ty)
            self.values[out] = value
        return outputs

    # ------------------------------------------------------------------ the runtime's checks
    def refuse(self, op: Operation, message: str) -> InternalError:
        """The runtime would abort at `op`: name the op and its value as `run_op` does."""
        name = value_names(self.program).get(op.results[0], "?")
        return InternalError(
            f"{name} = {op.name}: {message} (the runtime refuses this: the encrypted run "
            "would abort here)"
        )

    def same_level(self, op: Operation, a: _Meta, b: _Meta, what: str) -> None:
        if a.level != b.level:
            raise self.refuse(op, f"{what}: levels differ ({a.level} vs {b.level})")

    def same_scale(self, op: Operation, a: _Meta, b: _Meta, what: str) -> None:
        # runtime/ckks/evaluator.cpp check_same_scale: 1e-9 relative on the doubles.
        if abs(a.scale - b.scale) > 1e-9 * max(abs(a.scale), abs(b.scale)):
            raise self.refuse(op, f"{what}: scales differ ({a.scale!r} vs {b.scale!r})")

    def key_switch(self, op: Operation, a: _Meta, what: str, degree_one: bool) -> None:
        if a.level > self.key_level:
            raise self.refuse(
                op, f"{what}: ciphertext level {a.level} exceeds key level {self.key_level}"
            )
        if degree_one and a.degree != 1:
            raise self.refuse(op, f"{what}: degree {a.degree} (needs 1: relinearize first)")

    def runtime_meta(self, op: Operation) -> _Meta:
        """The result's level, scale and degree by the runtime's rules; raises where the
        runtime would throw."""
        m = self.meta.__getitem__
        match op:
            case ckks.EncodeOp():
                ty = ckks.pt_type(op.result)
                return _Meta(ty.level_value, _runtime_scale(ty.scale_bits), 1)
            case ckks.EncryptOp():
                return m(op.input)
            case ckks.AddOp() | ckks.SubOp():
                a, b = m(op.lhs), m(op.rhs)
                what = "Evaluator::add" if isinstance(op, ckks.AddOp) else "Evaluator::sub"
                self.same_level(op, a, b, what)
                self.same_scale(op, a, b, what)
                return _Meta(a.level, a.scale, max(a.degree, b.degree))
            case ckks.AddPlainOp():
                a, p = m(op.input), m(op.plain)
                self.same_level(op, a, p, "Evaluator::add_plain")
                self.same_scale(op, a, p, "Evaluator::add_plain")
                return a
            case ckks.MulOp() | ckks.DotOp():
                a, b = m(op.lhs), m(op.rhs)
                self.same_level(op, a, b, "Evaluator::multiply")
                return _Meta(a.level, a.scale * b.scale, a.degree + b.degree)
            case ckks.MulPlainOp():
                a, p = m(op.input), m(op.plain)
                self.same_level(op, a, p, "Evaluator::multiply_plain")
                return _Meta(a.level, a.scale * p.scale, a.degree)
            case ckks.MulConstOp():
                a = m(op.input)
                if op.is_integer:
                    return a
                return _Meta(a.level, a.scale * _runtime_scale(op.const_scale_bits), a.degree)
            case ckks.RescaleOp():
                a = m(op.input)
                if a.level < 1:
                    raise self.refuse(
                        op, "Evaluator::rescale: ciphertext at level 0 has no prime to drop"
                    )
                q = self.params.moduli[a.level - 1]
                return _Meta(a.level - 1, a.scale / float(q), a.degree)
            case ckks.LevelDownOp():
                a = m(op.input)
                if not 0 <= op.to_level < a.level:
                    raise self.refuse(
                        op, f"Evaluator::drop_to_level: target level {op.to_level} from {a.level}"
                    )
                return _Meta(op.to_level, a.scale, a.degree)
            case ckks.RelinearizeOp():
                a = m(op.input)
                self.key_switch(op, a, "Evaluator::relinearize", degree_one=False)
                return _Meta(a.level, a.scale, 1)
            case ckks.RotateOp() | ckks.SumSlotsOp():
                a = m(op.input)
                self.key_switch(op, a, "Evaluator::rotate", degree_one=True)
                return a
            case ckks.DiagMatvecOp():
                a, b = m(op.lhs), m(op.rhs)
                self.same_level(op, a, b, "diag_matvec")
                self.key_switch(op, a, "diag_matvec", degree_one=True)
                self.key_switch(op, b, "diag_matvec", degree_one=True)
                return _Meta(a.level, a.scale * b.scale, 1)
            case ckks.UnpackComplexOp():
                a = m(op.input)
                self.key_switch(op, a, "unpack_complex (conjugation)", degree_one=False)
                return _Meta(a.level, a.scale * 2.0, 1)
            case _:
                return m(op.operands[0])

    def expect_type(self, op: Operation, ty: ckks.CtType | ckks.PtType) -> None:
        """The generated program's check after every op (ckks_program.cpp expect_type)."""
        got = self.meta[op.results[0]]
        degree = ty.degree_value if isinstance(ty, ckks.CtType) else 1
        bits = math.log2(got.scale)
        if (
            got.level != ty.level_value
            or got.degree != degree
            or abs(bits - ty.scale_bits) > 1e-6 * max(1.0, abs(ty.scale_bits))
        ):
            raise self.refuse(
                op,
                f"the compiler expects level {ty.level_value}, scale 2^{ty.scale_bits}, degree "
                f"{degree} but the runtime has level {got.level}, scale 2^{bits}, degree "
                f"{got.degree} (a compiler/runtime mismatch)",
            )

    def step(self, op: ckks.CkksOp | object, inputs: Mapping[str, npt.ArrayLike]) -> Slots:
        g = self.values.__getitem__
        match op:
            case ckks.EncodeOp() if op.expr_value is not None:
                ty = ckks.pt_type(op.result)
                env = {name: self.source_array(name, inputs) for name in op.sources()}
                value = parse(op.expr_value).evaluate(env, len(ty.dims))
                dims = tuple(self.dim(d) for d in ty.dims)
                x = self.to_layout(np.broadcast_to(value, dims), ty)
                return x + self.noise_like(x, self.model.encoding(), ty.scale_bits)
            case ckks.EncodeOp():
                ty = ckks.pt_type(op.result)
                if op.sym_value not in inputs:
                    raise UserError(f"no data for input {op.sym_value}")
                x = self.to_layout(np.asarray(inputs[op.sym_value], dtype=np.float64), ty)
                return x + self.noise_like(x, self.model.encoding(), ty.scale_bits)
            case ckks.EncryptOp():
                ty = ckks.ct_type(op.result)
                x = g(op.input)
                return x + self.noise_like(x, self.model.fresh(), ty.scale_bits)
            case ckks.AddOp():
                return g(op.lhs) + g(op.rhs)
            case ckks.SubOp():
                return g(op.lhs) - g(op.rhs)
            case ckks.NegateOp():
                return -g(op.input)
            case ckks.MulOp():
                return g(op.lhs) * g(op.rhs)
            case ckks.MulPlainOp():
                return g(op.input) * g(op.plain)
            case ckks.AddPlainOp():
                return g(op.input) + g(op.plain)
            case ckks.MulConstOp():
                c = self.public[op.value]
                if not op.is_integer:
                    c = self.round_const(c, op.const_scale)
                if op.is_masked:
                    return self.masked(g(op.input), c, op)
                return g(op.input) * c
            case ckks.AddConstOp():
                ty = ckks.ct_type(op.input)
                c = self.round_const(self.public[op.value], ty.scale)
                return g(op.input) + (c * (1 + 1j) if ty.layout_name == ckks.COMPLEX else c)
            case ckks.DotOp():
                a, b = g(op.lhs), g(op.rhs)
                shape = np.broadcast_shapes(a.shape, b.shape)
                a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
                if op.axis_value == 0:
                    return np.einsum("i...,i...->...", a, b)
                return np.sum(a * b, axis=op.axis_value)
            case ckks.ReduceOp():
                return np.sum(g(op.input), axis=op.axis_value)
            case ckks.DiagMatvecOp():
                return self.diag_matvec(op)
            case ckks.ConvertOp():
                return self.convert(op)
            case ckks.SumSlotsOp():
                return self.sum_slots(op)
            case ckks.RotateOp():
                ty = ckks.ct_type(op.result)
                x = np.roll(g(op.input), -op.offset_value, axis=-1)
                return x + self.noise(x.shape, self.model.key_switch(), ty.scale_bits)
            case ckks.RelinearizeOp():
                ty = ckks.ct_type(op.result)
                x = g(op.input)
                return x + self.noise_like(x, self.model.key_switch(), ty.scale_bits)
            case ckks.UnpackComplexOp():
                src, ty = ckks.ct_type(op.input), ckks.ct_type(op.result)
                z = g(op.input)
                switches = 1 + (src.degree_value > 1)
                z = z + self.noise_like(z, switches * self.model.key_switch(), src.scale_bits)
                return self.split_complex(z, tuple(self.dim(d) for d in src.dims))
            case ckks.RescaleOp():
                src, ty = ckks.ct_type(op.input), ckks.ct_type(op.result)
                x = g(op.input)
                return x + self.noise_like(x, self.model.rescale(src.degree_value), ty.scale_bits)
            case ckks.LevelDownOp():
                return g(op.input)
            case ckks.TransposeOp():
                return np.swapaxes(g(op.input), 0, 1)
            case ckks.GatherOp():
                x = g(op.input)
                shape = tuple(self.dim(d) for d in op.shape_tuple)
                return gather(x.reshape(x.shape[:-1]), op, shape).reshape((*shape, x.shape[-1]))
            case ckks.BroadcastOp():
                return self.broadcast(op)
            case _:
                raise InternalError(f"the simulator does not handle {getattr(op, 'name', op)}")

    def grid_row_sum(self, op: ckks.SumSlotsOp) -> Slots:
        """The sum over the row axis of a grid array, as the runtime does it: the row blocks
        added, then rotate-and-add with the strides C, 2C, ..., (R/2) C (each step a key
        switch); the padding rows must be zero (they are summed)."""
        src, ty = ckks.ct_type(op.input), ckks.ct_type(op.result)
        grid = he.grid_of(src.layout_name)
        axis = op.axis_value
        assert grid is not None and axis is not None
        dims = tuple(self.dim(d) for d in src.dims)
        x = np.broadcast_to(self.values[op.input], (*self.grid_shape(grid, dims), self.slots))
        # Padding columns do not matter (each column is summed on its own); padding rows do.
        valid = self.grid_valid(grid, dims, columns=False)
        if not self.noisy and np.any(np.where(valid, 0.0, np.real(x)) != 0.0):
            raise InternalError(
                "sum_slots over the rows of a grid array whose padding rows are not zero"
            )
        acc = np.sum(x, axis=axis)
        stride = grid.columns(self.slots)
        while stride < self.slots:
            acc = acc + np.roll(acc, -stride, axis=-1)
            acc = acc + self.noise(acc.shape, self.model.key_switch(), ty.scale_bits)
            stride *= 2
        if ty.layout_name == ckks.REPLICATED:
            if not self.noisy and not np.allclose(acc, acc[..., :1], rtol=1e-12, atol=1e-9):
                raise InternalError("a row sum did not leave the same total in every slot")
            return acc[..., :1].copy()
        return acc

    def sum_slots(self, op: ckks.SumSlotsOp) -> Slots:
        if op.axis_value is not None:
            return self.grid_row_sum(op)
        src, ty = ckks.ct_type(op.input), ckks.ct_type(op.result)
        x = np.broadcast_to(
            self.values[op.input],
            (
                *(self.dim(d) for d in src.dims[:-1]),
                self.blocks(self.dim(src.dims[-1])),
                self.slots,
            ),
        )
        width = self.dim(src.dims[-1])
        padding = x.reshape((*x.shape[:-2], -1))[..., width:]
        if not self.noisy and padding.size and np.any(padding != 0.0):
            raise InternalError("sum_slots on a packed array whose padding slots are not zero")
        acc = np.sum(x, axis=-2)
        radices = op.radix_values
        if radices is None:
            for offset in sum_slots_offsets(self.slots):
                acc = acc + np.roll(acc, -offset, axis=-1)
                acc = acc + self.noise(acc.shape, self.model.key_switch(), ty.scale_bits)
        else:
            # In stages, as the runtime's sum_slots_staged: stage i adds the rotations by
            # t * stride (t < r_i), each with its key-switch error.
            if math.prod(radices) != self.slots:
                raise InternalError(f"sum_slots radices {list(radices)} do not cover the slots")
            stride = 1
            for r in radices:
                terms = [acc]
                for t in range(1, r):
                    rotated = np.roll(acc, -t * stride, axis=-1)
                    terms.append(
                        rotated + self.noise(acc.shape, self.model.key_switch(), ty.scale_bits)
                    )
                acc = np.sum(terms, axis=0)
                stride *= r
        if not self.noisy and not np.allclose(acc, acc[..., :1], rtol=1e-12, atol=1e-9):
            raise InternalError("sum_slots did not leave the same total in every slot")
        return acc[..., :1].copy()

    def broadcast(self, op: ckks.BroadcastOp) -> Slots:
        src, res = ckks.ct_type(op.input), ckks.ct_type(op.result)
        x = self.values[op.input]
        res_dims = [self.dim(d) for d in res.dims]
        res_grid = he.grid_of(res.layout_name)
        if res_grid is not None:
            # Every operand axis keeps its role (the verifier's rule), so its array extent is
            # the result's; new or stretched axes read the operand's replicas.
            arr = list(self.grid_shape(res_grid, tuple(res_dims)))
            target = [1] * len(arr)
            for i, d in enumerate(op.dims_tuple):
                target[d] = x.shape[i]
            return np.broadcast_to(x.reshape((*target, x.shape[-1])), (*arr, x.shape[-1]))
        # Array axes of the result (the packed axis becomes its block axis), then the slots.
        if he.cyclic_of(res.layout_name) is not None:
            if src.layout_name == res.layout_name:
                return x
            return np.broadcast_to(x.reshape((1, x.shape[-1])), (1, self.slots))
        if res.layout_name == ckks.PACKED:
            arr = [*res_dims[:-1], self.blocks(res_dims[-1])]
        elif res.layout_name == ckks.COMPLEX:
            arr = [*res_dims[:-1], -(-res_dims[-1] // (2 * self.slots))]
        else:
            arr = list(res_dims)
        target = [1] * len(arr)
        src_arr_axes = x.shape[:-1]
        for i, d in enumerate(op.dims_tuple):
            if i < len(src_arr_axes):
                target[d] = src_arr_axes[i]
        if src.layout_name == ckks.REPLICATED and res.layout_name != ckks.REPLICATED:
            # The last result axis is new or stretched: its block axis broadcasts.
            target[-1] = 1
        shaped = x.reshape((*target, x.shape[-1]))
        if res.layout_name == ckks.COMPLEX and src.layout_name == ckks.REPLICATED:
            # v + 0i as a real factor of a product, else v in both parts (times 1 + i).
            shaped = shaped * (1.0 + 0j if op.real_factor is not None else 1.0 + 1j)
        return np.broadcast_to(shaped, (*arr, x.shape[-1]))


def gather(x: Slots, op: he.GatherRule, shape: tuple[int, ...]) -> Slots:
    """`op` on the array x of its operand's elements (he.GatherRule): the result's elements in
    C order, each the picked element, negated where asked. Refuses, as the runtime does, index
    tables made for other sizes than the run's."""
    flat = np.asarray(x).reshape(-1)
    indices = np.asarray(op.index_values, dtype=np.int64)
    if math.prod(shape) != len(indices) or (len(indices) and int(indices.max()) >= flat.size):
        raise UserError(
            f"{op.name} was compiled for other sizes: {len(indices)} elements from "
            f"{flat.size}, but the run needs shape {list(shape)}",
            hint="recompile for the data's sizes (det and adj are expanded for them)",
        )
    picked = flat[indices]
    return np.where(np.asarray(op.negate_flags, dtype=bool), -picked, picked).reshape(shape)


def simulate(
    program: ckks.ProgramOp,
    sizes: Mapping[str, int],
    inputs: Mapping[str, npt.ArrayLike],
    noisy: bool = False,
    seed: int = 0,
    flooding: bool = False,
) -> SimulationResult:
    """Run `program` on `inputs` (logical arrays by input name) for concrete `sizes`; with
    `noisy` and `flooding`, revealed values carry decrypt's flooding noise too."""
    sim = _Sim(program, sizes, noisy, seed, flooding)
    return SimulationResult(sim.run(program, inputs))
