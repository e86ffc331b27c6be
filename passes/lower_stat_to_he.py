"""Lowering of a `stat` program to the HE layer (`he` dialect) with explicit ciphertext layouts.

Layouts (DESIGN.md §5 `layout-assignment`, in its first form):
- a secret matrix [N, M] is row-packed: one ciphertext per row and block of `slots` columns
  (each individual encrypts its own row);
- a vector whose length is a column dimension of a secret matrix ([M]) is packed; any other
  vector ([N], one entry per individual) and every scalar is replicated (one value in every
  slot), so that it multiplies a packed row with no rotation;
- a value is lowered on demand in the layout its consumer needs; an input needed in two
  layouts is encrypted twice by its owner (a layout conversion on the server would cost
  rotations, a second encryption costs one more upload). Per-row quantities are thus computed
  directly in replicated form (the mean/covariance scatter matrix needs no rotation).

Sums over rows become `he.reduce`; `y @ S` becomes the fused `he.dot`; sums over the
packed axis become `he.sum_slots` (rotations, after a relinearization), and a sum of two
such products shares one slot sum; `x^k` becomes a power chain (depth ceil(log2 k)) and `poly`
the depth-optimal baby-step giant-step plan of compiler/analysis/polynomial.py (depth
ceil(log2(d + 1)) with real coefficients). Constants are marked `integer` when they are
(every scheme multiplies and adds integers exactly; a real constant needs an approximate
scheme). Public inputs (scalars and arrays) are encrypted by their owner like secret ones
(see `_is_public`). Nothing here knows a scheme:
scales (ckks) and the plaintext modulus (bfv) come with the scheme's lowering
(passes/lower_he_to_ckks.py, passes/lower_he_to_bfv.py).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.counts import Shapes, sum_slots_rotations
from compiler.analysis.depth import stat_depth
from compiler.analysis.diagonal import cyclic_value, diagonal_input
from compiler.analysis.minors import adj_plan, det_plan
from compiler.analysis.polynomial import Leaf, Plan, plan_polynomial, power_chain
from compiler.analysis.ranges import (
    proven_every_slot,
    proven_range,
    set_proven_range,
    within_proven,
)
from compiler.analysis.security import smallest_secure_log_n
from compiler.analysis.sizes import parse_sizes
from compiler.dialects import he, stat
from compiler.errors import UserError, op_location
from compiler.types import Dim

PACKED, REPLICATED = he.PACKED, he.REPLICATED
PUBLIC_FUNCTIONS = (
    stat.SqrtOp,
    stat.AbsOp,
    stat.ExpOp,
    stat.LogOp,
    stat.NormSfOp,
    stat.NormCdfOp,
    stat.Chi2SfOp,
)


def _is_public(v: SSAValue) -> bool:
    """Whether `v` is a public value the compiler knows: constants and sizes, arithmetic on
    them and their broadcasts. These multiply and add ciphertexts as scalars. Any other public
    value (a public input, scalar or array, and what is computed from it) is data the compiler
    does not see: its owner encrypts it like a secret input, so it enters every product,
    elementwise, matrix or reduction, as a ciphertext (a plaintext operand would need the
    server to read public data at run time, which the runtime has no channel for:
    TODO(#19))."""
    if stat.tensor_type(v).is_secret:
        return False
    op = v.owner
    match op:
        case stat.ConstantOp() | stat.SizeOp():
            return True
        case stat.AddOp() | stat.SubOp() | stat.MulOp() | stat.DivOp():
            return _is_public(op.lhs) and _is_public(op.rhs)
        case stat.NegOp():
            return _is_public(op.input)
        case stat.BroadcastOp():
            return _is_public(op.input) and not stat.tensor_type(op.input).dims
        case _:
            return False


class _Lowering:
    def __init__(self, program: stat.ProgramOp, sizes: dict[str, int], grid_rows: int = 1):
        self.src = program
        self.sizes = sizes
        # Grid rows R (docs/layout.md); 1: the corner layouts (packed, replicated) only.
        self.grid_rows = grid_rows
        self.out = he.ProgramOp(program.sym_name.data)
        self.block: Block = self.out.block
        self.memo: dict[tuple[SSAValue, str], SSAValue] = {}
        self.pub: dict[SSAValue, SSAValue] = {}
        self.pub_int: dict[SSAValue, bool] = {}
        self.dirty: dict[SSAValue, bool] = {}
        self.memo_dirty: dict[tuple[SSAValue, str], bool] = {}
        self.powers: dict[SSAValue, dict[int, SSAValue]] = {}
        # The stat op being lowered: the he ops emitted for it take its source location, and
        # a construct the lowering refuses is reported there.
        self.at: Operation | None = None
        # Small-matrix dimensions (of det/adj operands): vectors along them stay replicated,
        # one ciphertext per entry, so that k x k algebra and products with per-individual
        # rows need no rotation.
        self.small: set[Dim] = {
            stat.tensor_type(op.input).dims[0]
            for op in program.walk()
            if isinstance(op, stat.DetOp | stat.AdjOp)
        } | {
            stat.tensor_type(op.result).dims[0]
            for op in program.walk()
            if isinstance(op, stat.EyeOp)
        }
        # Indexed axes are small too (the checker allows indexing only there).
        for op in program.walk():
            if isinstance(op, stat.IndexOp):
                ranges = zip(stat.tensor_type(op.input).dims, op.stops.get_values(), strict=True)
                for d, stop in ranges:
                    if stop >= 0:
                        self.small.add(d)
        self.columns: set[Dim] = {
            stat.tensor_type(op.result).dims[-1]
            for op in program.inputs()
            if stat.tensor_type(op.result).rank == 2 and stat.tensor_type(op.result).is_secret
        } - self.small
        # Row dimensions: the leading axis of any value of rank two or more. A vector along one
        # stays replicated (one ciphertext per entry), so that it meets the rows it is used
        # against (y @ S, per-individual weights) without rotations; a vector along any other
        # dimension is packed into slots, ceil(n / slots) ciphertexts (issue 19: a secret [N]
        # vector whose N is no matrix's row axis).
        self.rows: set[Dim] = {
            stat.tensor_type(r).dims[0]
            for op in program.walk()
            for r in op.results
            if isinstance(r.type, stat.TensorType) and stat.tensor_type(r).rank >= 2
        }
        # Grid row dimensions: the leading axis of the secret matrices (the individuals), which
        # a grid layout spreads over the grid rows.
        self.grid_row_dims: set[Dim] = grid_row_dims(program) - self.small

    # ------------------------------------------------------------------------- helpers
    def emit(self, op: Operation) -> SSAValue:
        if self.at is not None:
            op.location = self.at.location
        self.block.add_op(op)
        return op.results[0]

    def error(self, message: str, hint: str = "") -> UserError:
        """A refusal located at the source of the stat op being lowered."""
        return UserError(message, op_location(self.at), hint)

    @property
    def grid(self) -> bool:
        return self.grid_rows > 1

    def grid_layout(self, dims: tuple[Dim, ...]) -> str:
        """The grid layout of an array of these dims: its individuals axis on the rows, a
        column dimension in last place on the columns, every other axis unrolled (the roles
        are forced by the dims, so every value has one layout and meets the others with no
        conversion: docs/layout.md)."""
        roles: list[str] = []
        for i, d in enumerate(dims):
            if d in self.grid_row_dims and he.ROW not in roles:
                roles.append(he.ROW)
            elif d in self.columns and i == len(dims) - 1:
                roles.append(he.COL)
            else:
                roles.append(he.UNROLLED)
        return he.layout_text(self.grid_rows, roles)

    def default_layout(self, v: SSAValue) -> str:
        dims: tuple[Dim, ...] = stat.tensor_type(v).dims
        if self.grid:
            return self.grid_layout(dims)
        if len(dims) >= 2:
            # A small matrix (every axis a det/adj dimension) is one replicated ciphertext per
            # entry, the layout its algebra produces, so that adj(A) - A needs no conversion.
            return REPLICATED if all(d in self.small for d in dims) else PACKED
        if len(dims) != 1:
            return REPLICATED
        packs = dims[0] in self.columns or dims[0] not in self.rows | self.small
        return PACKED if packs else REPLICATED

    def const(self, value: float) -> SSAValue:
        return self.emit(he.ConstantOp(value))

    def is_integer(self, pub: SSAValue) -> bool:
        return self.pub_int.get(pub, False)

    def _pub_op(self, op: Operation, integer: bool) -> SSAValue:
        v = self.emit(op)
        self.pub_int[v] = integer
        return v

    def public(self, v: SSAValue) -> SSAValue:
        """The public scalar of a public stat value (scalars and their broadcasts)."""
        if v in self.pub:
            return self.pub[v]
        op = v.owner
        r: SSAValue
        match op:
            case stat.ConstantOp():
                r = self._pub_op(he.ConstantOp(op.float_value), op.float_value.is_integer())
            case stat.SizeOp():
                r = self._pub_op(he.SizeOp(op.sym_value), True)
            case stat.BroadcastOp():
                r = self.public(op.input)
            case stat.AddOp() | stat.SubOp() | stat.MulOp() | stat.DivOp():
                a, b = self.public(op.lhs), self.public(op.rhs)
                kind = {
                    stat.AddOp: "add",
                    stat.SubOp: "sub",
                    stat.MulOp: "mul",
                    stat.DivOp: "div",
                }[type(op)]
                integer = kind != "div" and self.is_integer(a) and self.is_integer(b)
                r = self._pub_op(he.PublicArithOp(kind, a, b), integer)
            case stat.NegOp():
                zero = self._pub_op(he.ConstantOp(0.0), True)
                x = self.public(op.input)
                r = self._pub_op(he.PublicArithOp("sub", zero, x), self.is_integer(x))
            case _:
                name = op.name if isinstance(op, Operation) else "a block argument"
                raise self.error(
                    f"public arrays ({name}) are not supported in encrypted programs yet; "
                    "only public scalars (sizes, constants and arithmetic on them)"
                )
        self.pub[v] = r
        return r

    def mul_const(self, x: SSAValue, c: SSAValue) -> SSAValue:
        return self.emit(he.MulConstOp(x, c, self.is_integer(c)))

    def add_const(self, x: SSAValue, c: SSAValue) -> SSAValue:
        return self.emit(he.AddConstOp(x, c, self.is_integer(c)))

    def add(self, a: SSAValue, b: SSAValue, sub: bool = False) -> SSAValue:
        return self.emit(he.SubOp(a, b) if sub else he.AddOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(he.MulOp(a, b))

    def relin_if_needed(self, x: SSAValue) -> SSAValue:
        if he.ct_type(x).degree_value > 1:
            return self.emit(he.RelinearizeOp(x))
        return x

    def padding_may_be_nonzero(self, v: SSAValue) -> bool:
        """Whether the padding slots of packed `v` may hold something other than zero.

        Encryption zero-pads; a replicated value broadcast to packed and `add_const` fill the
        padding; sums and negations carry it; a product is zero-padded when one factor is."""
        if v in self.dirty:
            return self.dirty[v]
        op = v.owner
        ty = he.ct_type(v)
        dirty: bool
        match op:
            case _ if ty.layout_name != PACKED:
                dirty = False
            case he.EncryptOp():
                dirty = False
            case he.MulConstOp() if op.is_masked:
                dirty = False
            case he.AddConstOp():
                dirty = True
            case he.BroadcastOp():
                src_packed = he.ct_type(op.input).layout_name == PACKED
                dirty = not src_packed or self.padding_may_be_nonzero(op.input)
            case he.MulOp() | he.DotOp():
                dirty = all(
                    self.padding_may_be_nonzero(x)
                    for x in op.operands
                    if isinstance(x.type, he.CtType)
                )
            case Operation():
                dirty = any(
                    self.padding_may_be_nonzero(x)
                    for x in op.operands
                    if isinstance(x.type, he.CtType)
                )
            case _:
                dirty = True
        self.dirty[v] = dirty
        return dirty

    def mask(self, x: SSAValue) -> SSAValue:
        """x times 1 on its valid slots and 0 elsewhere (a masked constant: one plaintext
        product and, under CKKS, one level)."""
        one = self._pub_op(he.ConstantOp(1.0), True)
        return self.emit(he.MulConstOp(self.relin_if_needed(x), one, True, masked=True))

    def sum_slots(self, x: SSAValue) -> SSAValue:
        """`he.sum_slots` of packed `x`, whose padding slots must be zero (they are summed):
        when they may not be, x is first multiplied by 1 on its valid slots and 0 on the
        padding (a masked constant: one plaintext product and, under CKKS, one level)."""
        if self.padding_may_be_nonzero(x):
            x = self.mask(x)
            self.dirty[x] = False
        return self.emit(he.SumSlotsOp(self.relin_if_needed(x)))

    def rows_dirty(self, v: SSAValue) -> bool:
        """Whether the padding rows of grid `v` (the rows past the individuals in its last row
        block) may hold something other than zero: encryption zero-pads; a broadcast that adds
        the row axis fills them with replicas, `add_const` with the constant; a product is
        clean when one factor is; anything else carries its operands' padding."""
        key = (v, he.ROW)
        if key in self.memo_dirty:
            return self.memo_dirty[key]
        op = v.owner
        grid = he.grid_of(he.ct_type(v).layout_name)
        dirty: bool
        match op:
            case _ if grid is None or grid.row_axis is None:
                dirty = False
            case he.EncryptOp():
                dirty = False
            case he.MulConstOp() if op.is_masked:
                dirty = False
            case he.AddConstOp():
                dirty = True
            case he.BroadcastOp():
                src = he.grid_of(he.ct_type(op.input).layout_name)
                dirty = src is None or src.row_axis is None or self.rows_dirty(op.input)
            case he.MulOp() | he.DotOp():
                dirty = all(
                    self.rows_dirty(x) for x in op.operands if isinstance(x.type, he.CtType)
                )
            case Operation():
                dirty = any(
                    self.rows_dirty(x) for x in op.operands if isinstance(x.type, he.CtType)
                )
            case _:
                dirty = True
        self.memo_dirty[key] = dirty
        return dirty

    def row_sum(self, x: SSAValue, axis: int) -> SSAValue:
        """The sum over the row axis of grid `x`: `he.sum_slots` over that axis (the row blocks
        added, then log2 R strided rotations); padding rows that may not be zero are first
        multiplied by 0 (a masked constant 1: one plaintext product, one level under CKKS)."""
        if self.rows_dirty(x):
            x = self.mask(x)
        return self.emit(he.SumSlotsOp(self.relin_if_needed(x), axis))

    def bcast(self, x: SSAValue, shape: tuple[Dim, ...], dims: tuple[int, ...], layout: str):
        src = he.ct_type(x)
        if src.dims == shape and src.layout_name == layout:
            return x
        return self.emit(he.BroadcastOp(x, shape, dims, layout))

    # ------------------------------------------------------------------------- lowering
    def run(self) -> he.ProgramOp:
        for op in self.src.server_ops():
            if isinstance(op, stat.ParamOp):
                bound = min(op.bound_value, self.sizes.get(op.sym_value, op.bound_value))
                self.block.add_op(he.ParamOp(op.sym_value, bound))
        # The owner inputs that owner-side values read, declared for the encrypting owner.
        declared: set[str] = set()
        for op in self.src.server_ops():
            srcs: list[stat.InputOp] = []
            if isinstance(op, stat.OwnerComputeOp):
                srcs = op.sources()
            elif isinstance(op, stat.PackedSumOp):
                srcs = [a.owner for a in op.args if isinstance(a.owner, stat.InputOp)]
            if srcs:
                for src in srcs:
                    dom = src.domain_value
                    if src.sym_value not in declared and dom is not None:
                        declared.add(src.sym_value)
                        dims = stat.tensor_type(src.result).dims
                        self.block.add_op(he.SourceOp(src.sym_value, dims, dom))
        for reveal in self.src.reveals():
            self.at = reveal
            owner = reveal.input.owner
            if isinstance(owner, stat.PackedSumOp):
                k = [SSAValue.get(r) for r in owner.sums].index(reveal.input)
                scalar = stat.tensor_type(owner.args[k]).rank == 1
                x = self.lower_packed_sum(owner)
                self.block.add_op(he.DecryptOp(reveal.sym_value, x, None, k, scalar))
                continue
            value, factor = self.split_public_factor(reveal.input)
            x = self.lower(value, self.reveal_layout(value))
            self.block.add_op(he.DecryptOp(reveal.sym_value, x, factor))
        return self.out

    def lower_packed_sum(self, op: stat.PackedSumOp) -> SSAValue:
        """One coeff-layout encryption of every operand's radix digit, summed over the rows:
        the server only adds (passes/packed_counts.py)."""
        key = (op.sums[0], he.COEFF)
        if key in self.memo:
            return self.memo[key]
        digits: list[str] = []
        scalar: list[bool] = []
        cols: list[Dim] = []
        row: Dim = stat.tensor_type(op.args[0]).dims[0]
        for a in op.args:
            ty = stat.tensor_type(a)
            src = a.owner
            if isinstance(src, stat.OwnerComputeOp):
                digits.append(src.expr_value)
            elif isinstance(src, stat.InputOp):
                digits.append(src.sym_value)
            else:
                raise self.error(f"packed sum of {src} (an owner value or input was expected)")
            scalar.append(ty.rank == 1)
            if ty.rank == 2:
                cols.append(ty.dims[1])
        dims: tuple[Dim, ...] = (row, cols[0] if cols else 1)
        pt = he.PtType.get(dims, he.COEFF)
        names = [a.name_hint or "x" for a in op.args]
        encode = he.EncodeOp("counts_" + "_".join(n for n in names)[:40], pt, None)
        encode.set_digits(digits, scalar, op.radix_values)
        enc = self.emit(encode)
        enc.name_hint = "counts_pt"
        ct = self.emit(he.EncryptOp(enc))
        ct.name_hint = "counts"
        total = self.emit(he.ReduceOp(ct, 0))
        total.name_hint = "counts_sum"
        self.memo[key] = total
        return total

    def split_public_factor(self, v: SSAValue) -> tuple[SSAValue, SSAValue | None]:
        """A revealed `c * x` with c a public integer scalar: x is computed under encryption
        and the coordinator multiplies by c after decryption (the factor is public)."""
        op = v.owner
        if isinstance(op, stat.MulOp):
            for pub, sec in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                if _is_public(pub) and not _is_public(sec):
                    if stat.tensor_type(sec).dims != stat.tensor_type(v).dims:
                        continue
                    factor = self.public(pub)
                    if self.is_integer(factor):
                        return sec, factor
        return v, None

    def lower(self, v: SSAValue, layout: str) -> SSAValue:
        """`v` as a ciphertext array in `layout`."""
        if _is_public(v):
            raise self.error(
                f"the public value {v.name_hint or stat.tensor_type(v).dims} is used where a "
                "ciphertext is needed (a revealed public value, or a public array in a secret "
                "operation); only secret values are encrypted",
                hint="compute public values in the client block",
            )
        if self.grid:
            layout = self.grid_layout(stat.tensor_type(v).dims)
        key = (v, layout)
        if key not in self.memo:
            outer = self.at
            self.at = v.owner if isinstance(v.owner, Operation) else outer
            try:
                result = self._lower(v, layout)
            finally:
                self.at = outer
            got = he.ct_type(result).layout_name
            if got != layout and stat.tensor_type(v).dims:
                # No lowering may hand back another layout than asked for: the he verifier
                # would reject the op that uses it, far from the source.
                raise UserError(
                    f"{v.name_hint or 'this value'} is computed as a {got} array but used "
                    f"where a {layout} one is needed; this layout conversion is not supported "
                    "yet",
                    op_location(v.owner if isinstance(v.owner, Operation) else self.at),
                )
            if result.name_hint is None and v.name_hint is not None:
                result.name_hint = v.name_hint
            proven = proven_range(v.owner) if isinstance(v.owner, Operation) else None
            owner = v.owner
            every = isinstance(owner, Operation) and proven_every_slot(owner)
            if (
                proven is not None
                and (layout == REPLICATED or every)
                and isinstance(result.owner, Operation)
            ):
                # Every ciphertext of a replicated array holds one element of v in every slot
                # (no padding), so the theorem about v's elements holds for all its slots; a
                # range proven for every slot (bit slices) holds in any layout's element slots.
                set_proven_range(result.owner, within_proven(result.owner, proven), every)
            self.memo[key] = result
        return self.memo[key]

    def _lower(self, v: SSAValue, layout: str) -> SSAValue:
        op = v.owner
        ty = stat.tensor_type(v)
        if not ty.dims:
            layout = REPLICATED
        match op:
            case stat.InputOp():
                pt = he.PtType.get(ty.dims, layout)
                enc = self.emit(he.EncodeOp(op.sym_value, pt, op.domain_value))
                enc.name_hint = f"{op.sym_value}_pt"
                return self.emit(he.EncryptOp(enc))
            case stat.OwnerComputeOp():
                pt = he.PtType.get(ty.dims, layout)
                enc = self.emit(he.EncodeOp(op.sym_value, pt, op.domain_value, expr=op.expr_value))
                enc.name_hint = f"{op.sym_value}_pt"
                return self.emit(he.EncryptOp(enc))
            case stat.AddOp() | stat.SubOp():
                return self.lower_add(op, layout, isinstance(op, stat.SubOp))
            case stat.MulOp():
                return self.lower_mul(op, layout)
            case stat.DivOp() if not _is_public(op.lhs) and _is_public(op.rhs):
                # Division by a public scalar is a multiplication by its reciprocal.
                one = self._pub_op(he.ConstantOp(1.0), True)
                inv = self._pub_op(he.PublicArithOp("div", one, self.public(op.rhs)), False)
                return self.mul_const(self.lower(op.lhs, layout), inv)
            case stat.NegOp():
                return self.emit(he.NegateOp(self.lower(op.input, layout)))
            case stat.BroadcastOp():
                return self.lower_broadcast(op, layout)
            case stat.PowOp():
                return self.power(self.lower(op.input, layout), op.exponent_value)
            case stat.PolyOp():
                return self.lower_poly(op, layout)
            case stat.MatmulOp():
                return self.lower_matmul(op, layout)
            case stat.SumOp() | stat.MeanOp():
                return self.lower_sum(op, layout)
            case stat.TransposeOp():
                if layout != REPLICATED:
                    raise self.error(
                        "a transposed secret matrix is only supported as the left factor "
                        "of a matrix product (packed transposes need rotations)"
                    )
                return self.emit(he.TransposeOp(self.lower(op.input, REPLICATED)))
            case stat.DetOp() | stat.AdjOp():
                return self.lower_small_matrix(op)
            case stat.IndexOp():
                return self.lower_index(op)
            case stat.EyeOp():
                raise self.error(
                    "eye(K) is only supported under encryption added to or subtracted from a "
                    "secret small matrix (H + c * eye(K)), where it needs no ciphertext",
                    hint="write products with the identity out: eye(K) @ X is X, and "
                    "c * eye(K) * X keeps the diagonal of c * X",
                )
            case _:
                name = op.name if isinstance(op, Operation) else "a block argument"
                hint = ""
                if isinstance(op, PUBLIC_FUNCTIONS):
                    hint = (
                        "a function of public data is not evaluated under encryption: compute "
                        "it beforehand and give the result as a public input"
                    )
                raise self.error(
                    f"{name} on encrypted values is not supported by the lowering", hint
                )

    def small_size(self, d: Dim) -> int:
        """The compile-time size of a small-matrix dimension (det/adj are expanded for it)."""
        if isinstance(d, int):
            return d
        if d not in self.sizes:
            raise self.error(
                f"det and adj of an encrypted {d} x {d} matrix are expanded for the size of {d}, "
                "which is not given",
                hint=f"compile for the data's size, e.g. --size {d}=4 (hec run does it by itself)",
            )
        return self.sizes[d]

    def lower_index(self, op: stat.IndexOp) -> SSAValue:
        """x[i, a:b] of a replicated array (every axis small: one ciphertext per entry): a
        gather of the picked entries, no HE work."""
        dims = stat.tensor_type(op.input).dims
        big = [d for d in dims if d not in self.small]
        if big:
            raise self.error(
                f"indexing an encrypted array with an axis spread over slots ({big[0]}) is not "
                "supported by the lowering yet; only arrays whose every axis is small",
                hint="index the small matrix before combining it with per-individual or "
                "per-SNP data",
            )
        sizes: dict[str, int] = {}
        for d in dims:
            if isinstance(d, str):
                if d not in self.sizes:
                    raise self.error(
                        f"indexing an encrypted array along {d} needs the size of {d}, which is "
                        "not given",
                        hint=f"compile for the data's size, e.g. --size {d}=4 (hec run does it "
                        "by itself)",
                    )
                sizes[d] = self.sizes[d]
        ranges = op.axis_ranges(sizes)
        shape = [d if isinstance(d, int) else sizes[d] for d in dims]
        for axis, (_, stop, _) in enumerate(ranges):
            if stop > shape[axis]:
                raise self.error(
                    f"index {stop - 1} is out of range for axis {axis} ({dims[axis]} = "
                    f"{shape[axis]} in this compilation)",
                    hint=f"use indices below {shape[axis]}, or compile for a larger size",
                )
        picks = [range(start, stop) for start, stop, _ in ranges]
        indices = [
            sum(i * math.prod(shape[axis + 1 :]) for axis, i in enumerate(entry))
            for entry in itertools.product(*picks)
        ]
        x = self.lower(op.input, REPLICATED)
        res = stat.tensor_type(op.result).dims
        return self.emit(he.GatherOp(x, indices, [False] * len(indices), res))

    def lower_small_matrix(self, op: stat.DetOp | stat.AdjOp) -> SSAValue:
        """det/adj by the balanced Laplace expansion of compiler/analysis/minors.py: one stage
        of `dot(gather, gather)` per minor size, on the replicated matrix (no rotation); the
        depth is ceil(log2 k) for det and ceil(log2 (k - 1)) for adj."""
        dims = stat.tensor_type(op.input).dims
        k = self.small_size(dims[0])
        a = self.lower(op.input, REPLICATED)
        if isinstance(op, stat.AdjOp):
            if k < 2:
                raise self.error(
                    "adj of a 1 x 1 matrix is the constant 1, not an encrypted value",
                    hint="use a matrix of at least 2 x 2, or the constant 1",
                )
            plan = adj_plan(k)
            shape: tuple[Dim, ...] = dims
        else:
            plan = det_plan(k)
            shape = ()
        flat = self.emit(he.GatherOp(a, list(range(k * k)), [False] * (k * k), (k * k,)))
        tables: dict[int, SSAValue] = {1: flat}
        for s in plan.stages:
            terms = (s.count, s.terms)
            top = self.emit(he.GatherOp(tables[s.top_size], s.top_indices, s.top_negate, terms))
            bottom = self.emit(
                he.GatherOp(
                    tables[s.bottom_size], s.bottom_indices, [False] * len(s.top_negate), terms
                )
            )
            # Relinearized once per minor (the tables are gathered again: one key switch per
            # minor instead of one per term that reads it).
            minors = self.relin_if_needed(self.emit(he.DotOp(top, bottom, 1)))
            minors.name_hint = f"minors{s.size}"
            tables[s.size] = minors
        return self.emit(
            he.GatherOp(tables[plan.result_size], plan.result_indices, plan.result_negate, shape)
        )

    def slot_summand(self, v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
        """(G, w) when v = G @ w sums the packed axis ([N, K] @ [K], K packed)."""
        op = v.owner
        if self.grid:
            return None
        if not isinstance(op, stat.MatmulOp) or _is_public(op.lhs) or _is_public(op.rhs):
            return None
        lt, rt = stat.tensor_type(op.lhs), stat.tensor_type(op.rhs)
        if lt.rank == 2 and rt.rank == 1 and lt.dims[-1] in self.columns:
            return op.lhs, op.rhs
        return None

    def packed_product(self, g: SSAValue, w: SSAValue) -> SSAValue:
        n, k = stat.tensor_type(g).dims
        wide = self.bcast(self.lower(w, PACKED), (n, k), (1,), PACKED)
        return self.mul(self.lower(g, PACKED), wide)

    def lower_add(self, op: stat.AddOp | stat.SubOp, layout: str, sub: bool) -> SSAValue:
        lp, rp = _is_public(op.lhs), _is_public(op.rhs)
        left, right = self.slot_summand(op.lhs), self.slot_summand(op.rhs)
        if left and right and layout == REPLICATED:
            # G@a + H@b = sum_slots(G*a + H*b): one relinearization and one rotation tree
            # instead of two (the slot sum is linear).
            total = self.add(self.packed_product(*left), self.packed_product(*right), sub)
            return self.sum_slots(total)
        for secret, diagonal, negated in ((op.lhs, op.rhs, False), (op.rhs, op.lhs, sub)):
            c = self.diagonal(diagonal)
            if c is not None and stat.tensor_type(secret).is_secret and layout == REPLICATED:
                x = self.lower(secret, REPLICATED)
                if negated:
                    x = self.emit(he.NegateOp(x))
                return self.add_diagonal(x, c, sub and not negated)
        if not lp and not rp:
            return self.add(self.lower(op.lhs, layout), self.lower(op.rhs, layout), sub)
        if rp:
            x, c = self.lower(op.lhs, layout), self.public(op.rhs)
            if sub:
                zero = self._pub_op(he.ConstantOp(0.0), True)
                c = self._pub_op(he.PublicArithOp("sub", zero, c), self.is_integer(c))
            return self.add_const(x, c)
        x, c = self.lower(op.rhs, layout), self.public(op.lhs)
        if sub:
            x = self.emit(he.NegateOp(x))
        return self.add_const(x, c)

    def diagonal(self, v: SSAValue) -> SSAValue | None:
        """The public scalar c when the stat value `v` is c * eye(K) (eye(K) scaled, divided
        or negated by public scalars), else None; emits he ops only when it is."""
        op = v.owner
        match op:
            case stat.EyeOp():
                return self._pub_op(he.ConstantOp(1.0), True)
            case stat.MulOp():
                for scale, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                    if _is_public(scale) and (d := self.diagonal(other)) is not None:
                        s = self.public(scale)
                        integer = self.is_integer(s) and self.is_integer(d)
                        return self._pub_op(he.PublicArithOp("mul", s, d), integer)
            case stat.DivOp() if _is_public(op.rhs):
                d = self.diagonal(op.lhs)
                if d is not None:
                    return self._pub_op(he.PublicArithOp("div", d, self.public(op.rhs)), False)
            case stat.NegOp():
                d = self.diagonal(op.input)
                if d is not None:
                    zero = self._pub_op(he.ConstantOp(0.0), True)
                    return self._pub_op(he.PublicArithOp("sub", zero, d), self.is_integer(d))
            case _:
                pass
        return None

    def add_diagonal(self, x: SSAValue, c: SSAValue, sub: bool) -> SSAValue:
        """x +- c * eye(k) for a replicated k x k `x`, with no encryption and no product: the
        public c/2 is added to x - x (an exact zero, so a trivial ciphertext of c/2 in every
        entry); two gathers of it, the second negated off the diagonal, sum to c on the
        diagonal and exactly 0 elsewhere."""
        dims = he.ct_type(x).dims
        k = self.small_size(dims[0])
        two = self._pub_op(he.ConstantOp(2.0), True)
        half = self._pub_op(he.PublicArithOp("div", c, two), False)
        zero = self.add(x, x, sub=True)
        t = self.add_const(zero, half)
        first = [i * k + i if i == j else 0 for i in range(k) for j in range(k)]
        plain = self.emit(he.GatherOp(t, first, [False] * (k * k), dims))
        off = self.emit(he.GatherOp(t, first, [i != j for i in range(k) for j in range(k)], dims))
        return self.add(x, self.add(plain, off), sub)

    def lower_mul(self, op: stat.MulOp, layout: str) -> SSAValue:
        lp, rp = _is_public(op.lhs), _is_public(op.rhs)
        if not lp and not rp:
            return self.mul(self.lower(op.lhs, layout), self.lower(op.rhs, layout))
        secret, public = (op.lhs, op.rhs) if rp else (op.rhs, op.lhs)
        return self.mul_const(self.lower(secret, layout), self.public(public))

    def lower_broadcast(self, op: stat.BroadcastOp, layout: str) -> SSAValue:
        res = stat.tensor_type(op.result)
        src = stat.tensor_type(op.input)
        dims = op.dims_tuple
        last = len(res.dims) - 1
        fed = last in dims and src.dims[dims.index(last)] == res.dims[last]
        src_layout = layout if (layout == REPLICATED or fed) else REPLICATED
        x = self.lower(op.input, src_layout)
        return self.bcast(x, res.dims, dims, layout)

    def power(self, x: SSAValue, j: int) -> SSAValue:
        """x^j by the power chain (compiler/analysis/polynomial.py: depth ceil(log2 j)), each
        power of x computed once."""
        powers = self.powers.setdefault(x, {1: x})
        if j not in powers:
            chain = power_chain(j)
            assert chain is not None
            a, b = chain
            powers[j] = self.mul(self.power(x, a), self.power(x, b))
        return powers[j]

    def scalar_times(self, x: SSAValue, c: float) -> SSAValue:
        if c == 1.0:
            return x
        return self.mul_const(x, self._pub_op(he.ConstantOp(c), c.is_integer()))

    def lower_poly(self, op: stat.PolyOp, layout: str) -> SSAValue:
        """The plan of compiler/analysis/polynomial.py: baby-step leaves from the powers of x,
        giant-step products low + x^(2^m) high, the constant term added once at the end."""
        x = self.lower(op.input, layout)
        found = plan_polynomial(op.coefficient_values)
        acc, c0 = self.evaluate(x, found.plan)
        if acc is None:
            # A constant: 0 * x + c0 (multiplying by the integer 0 is exact and free).
            acc = self.scalar_times(x, 0.0)
        if c0 != 0.0:
            acc = self.add_const(acc, self._pub_op(he.ConstantOp(c0), c0.is_integer()))
        return acc

    def evaluate(self, x: SSAValue, plan: Plan) -> tuple[SSAValue | None, float]:
        """(the non-constant part as a ciphertext, or None when there is none; the constant)."""
        if isinstance(plan, Leaf):
            acc: SSAValue | None = None
            for i, c in enumerate(plan.coeffs):
                if i == 0 or c == 0.0:
                    continue
                term = self.scalar_times(self.power(x, i), c)
                acc = term if acc is None else self.add(acc, term)
            return acc, plan.coeffs[0] if plan.coeffs else 0.0
        giant = self.power(x, plan.power)
        high, h0 = self.evaluate(x, plan.high)
        if high is None:
            product = self.scalar_times(giant, h0)
        else:
            if h0 != 0.0:
                high = self.add_const(high, self._pub_op(he.ConstantOp(h0), h0.is_integer()))
            product = self.mul(giant, high)
        low, c0 = self.evaluate(x, plan.low)
        return (product if low is None else self.add(low, product)), c0

    def lower_matmul(self, op: stat.MatmulOp, layout: str) -> SSAValue:
        lt, rt = stat.tensor_type(op.lhs), stat.tensor_type(op.rhs)
        if _is_public(op.lhs) or _is_public(op.rhs):
            raise self.error(
                "a matrix product with a constant array is not supported by the lowering",
                "write it as a sum, e.g. c * sum(x) for x @ (c + 0 * x)",
            )
        k = lt.dims[-1]
        if self.grid:
            return self.lower_matmul_grid(op)
        if lt.rank == 1 and rt.rank == 2:  # [K] @ [K, M] -> [M]
            m = rt.dims[1]
            y = self.lower(op.lhs, REPLICATED)
            y = self.bcast(y, (k, m), (0,), layout)
            s = self.lower(op.rhs, layout)
            return self.emit(he.DotOp(y, s, 0))
        if lt.rank == 2 and rt.rank == 1 and k not in self.columns and layout == REPLICATED:
            # [N, K] @ [K] -> [N] with K small: a dot over the replicated entries (no rotation;
            # every individual's result is directly the replicated scalar its products need).
            n = lt.dims[0]
            left = self.lower(op.lhs, REPLICATED)
            right = self.bcast(self.lower(op.rhs, REPLICATED), (n, k), (1,), REPLICATED)
            return self.emit(he.DotOp(left, right, 1))
        if lt.rank == 2 and rt.rank == 1 and layout != REPLICATED and diagonal_input(op.lhs):
            return self.diag_matvec(op, layout)
        if lt.rank == 2 and rt.rank == 1:  # [N, K] @ [K] -> [N]
            if layout == PACKED or k not in self.columns:
                raise self.error(
                    f"matrix-vector product with a {'packed result' if layout == PACKED else k}"
                    " layout is not supported yet"
                )
            product = self.packed_product(op.lhs, op.rhs)
            return self.sum_slots(product)
        if lt.rank == 2 and rt.rank == 2:  # [A, K] @ [K, B] -> [A, B]
            a, b = lt.dims[0], rt.dims[1]
            lhs_src = op.lhs.owner
            if not isinstance(lhs_src, stat.TransposeOp):
                # [A, K] @ [K, B] as a dot over the middle axis of [A, K, B]: the left factor's
                # rows are used in place (no transpose, so a streamed A stays streamed).
                left = self.bcast(self.lower(op.lhs, REPLICATED), (a, k, b), (0, 1), layout)
                right = self.bcast(self.lower(op.rhs, layout), (a, k, b), (1, 2), layout)
                return self.emit(he.DotOp(left, right, 1))
            left = self.lower(lhs_src.input, REPLICATED)  # [K, A]
            left = self.bcast(left, (k, a, b), (0, 1), layout)
            right = self.bcast(self.lower(op.rhs, layout), (k, a, b), (0, 2), layout)
            return self.emit(he.DotOp(left, right, 0))
        # [K] @ [K] -> scalar
        if k in self.columns:
            prod = self.mul(self.lower(op.lhs, PACKED), self.lower(op.rhs, PACKED))
            return self.sum_slots(prod)
        return self.emit(
            he.DotOp(self.lower(op.lhs, REPLICATED), self.lower(op.rhs, REPLICATED), 0)
        )

    def dim_size(self, d: Dim) -> int:
        """The compile-time size of `d`: the literal, the given size, else the bound."""
        if isinstance(d, int):
            return d
        bound = self.src.params().get(d)
        given = self.sizes.get(d)
        if given is None and bound is None:
            raise self.error(f"the size of {d} is not known at compile time")
        return min(x for x in (given, bound) if x is not None)

    def cyclic_layout(self, d: Dim) -> str:
        """`cyclic<Q>` for a vector along `d` (Q: its size rounded up to a power of two)."""
        return he.cyclic_text(he.pow2_at_least(self.dim_size(d)))

    def diag_matvec(self, op: stat.MatmulOp, layout: str) -> SSAValue:
        """[A, K] @ [K] by the diagonal method (docs/layout.md, "Diagonal layout"): the matrix
        encrypted by its owner as its generalized diagonals, the vector cyclic, the result
        cyclic; min(P, Q) products and a baby-step giant-step of rotations, one level."""
        a, k = stat.tensor_type(op.lhs).dims
        diag = he.diagonal_layout(self.dim_size(a), self.dim_size(k))
        out = he.cyclic_text(diag.rows)
        if layout not in (out, PACKED):
            raise self.error(
                f"the matrix-vector product gives a cyclic vector ({out}: the diagonal method), "
                f"but a {layout} one is needed here; this layout conversion is not supported yet"
            )
        m = self.lower(op.lhs, diag.text)
        v = self.relin_if_needed(self.cyclic(op.rhs, he.cyclic_text(diag.cols)))
        result = self.emit(he.DiagMatvecOp(m, v))
        if layout == PACKED:
            # Conversion cyclic -> packed: the mask zeroes the padding and later periods (one
            # plaintext product, one level), then the vector is packed as it stands.
            result = self.emit(he.ConvertOp(self.mask(result), PACKED))
            self.dirty[result] = False
        return result

    def cyclic(self, v: SSAValue, layout: str) -> SSAValue:
        """Vector `v` in the cyclic `layout`: computed so when it can be (inputs, elementwise
        functions of them, diagonal products), else computed packed (its padding masked when
        it may not be zero) and converted: log2(slots / Q) rotate-and-adds."""
        if cyclic_value(v):
            return self.lower(v, layout)
        x = self.relin_if_needed(self.lower(v, PACKED))
        if self.padding_may_be_nonzero(x):
            x = self.mask(x)
        return self.emit(he.ConvertOp(x, layout))

    def reveal_layout(self, v: SSAValue) -> str:
        """The layout a revealed value is computed in: the matrix-chain pass's choice for a
        chain (attribute `layout` on its root product), cyclic for a vector the diagonal
        method computes, else the default."""
        default = self.default_layout(v)
        if self.grid or stat.tensor_type(v).rank != 1:
            return default
        chosen = v.owner.attributes.get("layout") if isinstance(v.owner, Operation) else None
        choice = chosen.data if isinstance(chosen, StringAttr) else None
        if choice is None and _has_diag_product(v) and cyclic_value(v):
            choice = "cyclic"
        if choice == "cyclic":
            return self.cyclic_layout(stat.tensor_type(v).dims[0])
        if choice in (PACKED, REPLICATED):
            return choice
        return default

    def lower_matmul_grid(self, op: stat.MatmulOp) -> SSAValue:
        """A matrix product under the grid layout (docs/layout.md). Over the individuals (the
        row axis): the elementwise products, then a row sum (`he.sum_slots` over the axis: log2
        R rotations, the count independent of N); the left factor is a vector of individuals
        or a transposed matrix of them. Over an unrolled (small) axis: a dot over its
        ciphertexts, as in the corner layouts."""
        lt, rt = stat.tensor_type(op.lhs), stat.tensor_type(op.rhs)
        k = lt.dims[-1]
        lhs_src = op.lhs.owner
        transposed = lt.rank == 2 and isinstance(lhs_src, stat.TransposeOp)
        if k in self.grid_row_dims:
            if lt.rank == 1:  # [N] @ [N, B] -> [B]
                shape = tuple(rt.dims)
                y = self.lower(op.lhs, "")
                left = self.bcast(y, shape, (0,), self.grid_layout(shape))
                return self.row_sum(self.mul(left, self.lower(op.rhs, "")), 0)
            if isinstance(lhs_src, stat.TransposeOp):  # [A, N] @ [N] or [N, B]
                a = lt.dims[0]
                shape = (k, a) if rt.rank == 1 else (k, a, rt.dims[1])
                layout = self.grid_layout(shape)
                left = self.bcast(self.lower(lhs_src.input, ""), shape, (0, 1), layout)
                right_dims = (0,) if rt.rank == 1 else (0, 2)
                right = self.bcast(self.lower(op.rhs, ""), shape, right_dims, layout)
                return self.row_sum(self.mul(left, right), 0)
            raise self.error(
                f"a matrix product over {k} (the individuals, on the grid rows) needs a "
                "vector or a transposed matrix of individuals on the left",
                hint=f"write it as x @ A or A.T @ B with {k} the first axis of A and B",
            )
        if k in self.columns:
            raise self.error(
                f"a matrix product over {k} (on the grid columns) is not supported by the grid "
                "layout yet (it needs a column sum)"
            )
        if lt.rank == 1 and rt.rank == 2:  # [K] @ [K, B] -> [B]
            shape = tuple(rt.dims)
            y = self.bcast(self.lower(op.lhs, ""), shape, (0,), self.grid_layout(shape))
            return self.emit(he.DotOp(y, self.lower(op.rhs, ""), 0))
        if lt.rank == 2 and rt.rank == 1:  # [A, K] @ [K] -> [A]
            if transposed:
                raise self.error("a transposed matrix times a vector over a small axis")
            shape = tuple(lt.dims)
            right = self.bcast(self.lower(op.rhs, ""), shape, (1,), self.grid_layout(shape))
            return self.emit(he.DotOp(self.lower(op.lhs, ""), right, 1))
        if lt.rank == 2 and rt.rank == 2:  # [A, K] @ [K, B] -> [A, B]
            b = rt.dims[1]
            if isinstance(lhs_src, stat.TransposeOp):
                a = lt.dims[0]
                shape = (k, a, b)
                layout = self.grid_layout(shape)
                left = self.bcast(self.lower(lhs_src.input, ""), shape, (0, 1), layout)
                right = self.bcast(self.lower(op.rhs, ""), shape, (0, 2), layout)
                return self.emit(he.DotOp(left, right, 0))
            a = lt.dims[0]
            shape = (a, k, b)
            layout = self.grid_layout(shape)
            left = self.bcast(self.lower(op.lhs, ""), shape, (0, 1), layout)
            right = self.bcast(self.lower(op.rhs, ""), shape, (1, 2), layout)
            return self.emit(he.DotOp(left, right, 1))
        return self.emit(he.DotOp(self.lower(op.lhs, ""), self.lower(op.rhs, ""), 0))

    def lower_sum(self, op: stat.SumOp | stat.MeanOp, layout: str) -> SSAValue:
        src = stat.tensor_type(op.input)
        axes = op.axes_tuple
        last = src.rank - 1
        src_layout = self.default_layout(op.input) if last in axes else layout
        x = self.lower(op.input, src_layout)
        for axis in sorted(axes, reverse=True):
            grid = he.grid_of(he.ct_type(x).layout_name)
            if grid is not None and grid.roles[axis] == he.ROW:
                x = self.row_sum(x, axis)
            elif grid is not None and grid.roles[axis] == he.COL:
                raise self.error(
                    f"a sum over {src.dims[axis]} (on the grid columns) is not supported by the "
                    "grid layout yet"
                )
            elif axis == last and he.ct_type(x).layout_name == PACKED:
                x = self.sum_slots(x)
            else:
                x = self.emit(he.ReduceOp(x, axis))
        if isinstance(op, stat.MeanOp):
            count: SSAValue | None = None
            for axis in axes:
                d = src.dims[axis]
                size = self._pub_op(
                    he.SizeOp(d) if isinstance(d, str) else he.ConstantOp(float(d)), True
                )
                count = (
                    size
                    if count is None
                    else self._pub_op(he.PublicArithOp("mul", count, size), True)
                )
            assert count is not None
            one = self._pub_op(he.ConstantOp(1.0), True)
            inv = self._pub_op(he.PublicArithOp("div", one, count), False)
            x = self.mul_const(x, inv)
        got = he.ct_type(x).layout_name
        if got != layout:
            if got == REPLICATED and he.ct_type(x).dims == ():
                return x  # a replicated scalar serves every layout through broadcast
            raise self.error(
                f"the sum over axes {list(axes)} gives a {got} array, but a {layout} one is "
                "needed; this layout conversion is not supported yet"
            )
        return x


def _has_diag_product(v: SSAValue) -> bool:
    """Whether the cyclic-computable `v` contains a matrix-vector product (which only the
    diagonal method computes into a slot layout); each value visited once."""
    seen: set[SSAValue] = set()
    stack = [v]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        op = x.owner
        if isinstance(op, stat.MatmulOp):
            return True
        if isinstance(op, Operation) and not isinstance(op, stat.InputOp | stat.OwnerComputeOp):
            stack.extend(y for y in op.operands if stat.tensor_type(y).rank == 1)
    return False


def grid_row_dims(program: stat.ProgramOp) -> set[Dim]:
    """The dimensions a grid layout puts on its rows: the leading axis of every secret input
    matrix (the individuals)."""
    return {
        stat.tensor_type(op.result).dims[0]
        for op in program.inputs()
        if stat.tensor_type(op.result).rank == 2 and stat.tensor_type(op.result).is_secret
    }


def lower_program(
    program: stat.ProgramOp, sizes: dict[str, int], grid_rows: int = 1
) -> he.ProgramOp:
    return _Lowering(program, sizes, grid_rows).run()


@dataclass(frozen=True)
class GridCost:
    """The cost model's vector for one grid shape, compared in this order: multiplicative
    depth (a level is never traded for work), key switches (a relinearization per result
    ciphertext of a product or dot, plus the rotations), ciphertext products, then uploaded
    ciphertexts; all executed counts at the compiled sizes."""

    depth: int
    key_switches: int
    products: int
    rotations: int
    uploads: int

    def key(self) -> tuple[int, int, int, int]:
        return (self.depth, self.key_switches, self.products, self.uploads)


@dataclass(frozen=True)
class GridChoice:
    """The grid shapes weighed for a program: per R (C = slots / R) its cost, or why it cannot
    hold the program; `rows` the chosen R (1: the corner layouts)."""

    rows: int
    slots: int
    candidates: tuple[tuple[int, GridCost | str], ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "columns": self.slots // self.rows,
            "slots_assumed": self.slots,
            "candidates": [
                {"rows": r, "columns": self.slots // r}
                | (c.__dict__ if isinstance(c, GridCost) else {"unavailable": c})
                for r, c in self.candidates
            ],
        }


def grid_cost(program: he.ProgramOp, sizes: dict[str, int], slots: int) -> GridCost:
    """The executed counts of `program` (a he program straight from the lowering) for the
    sizes and a slot count (compiler/analysis/counts.py's ciphertext counts)."""
    bounds = program.params()
    shapes = Shapes({**bounds, **sizes}, slots)
    depth: dict[SSAValue, int] = {}
    products = relins = rotations = uploads = 0
    steps = int(math.log2(slots))
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, he.CtType):
            continue
        out = op.results[0]
        below = max((depth.get(v, 0) for v in op.operands), default=0)
        match op:
            case he.MulOp():
                products += shapes.count(he.ct_type(out))
                relins += shapes.count(he.ct_type(out))
                below += 1
            case he.DotOp():
                products += shapes.count(he.ct_type(op.lhs))
                relins += shapes.count(he.ct_type(out))
                below += 1
            case he.MulConstOp() if op.is_masked or not op.is_integer:
                below += 1
            case he.SumSlotsOp():
                rotations += sum_slots_rotations(op, steps) * shapes.count(he.ct_type(out))
            case he.RotateOp():
                rotations += shapes.count(he.ct_type(out))
            case he.EncryptOp():
                uploads += shapes.count(he.ct_type(out))
            case _:
                pass
        depth[out] = below
    top = max((depth.get(d.input, 0) for d in program.decrypts()), default=0)
    return GridCost(top, relins + rotations, products, rotations, uploads)


def estimated_slots(program: stat.ProgramOp, log_n: int) -> int:
    """The slots the grid is weighed for: those of ring `log_n` when fixed, else of the
    smallest 128-bit ring holding the program's depth at about 40 bits a level, a 60-bit
    output prime and a 60-bit special prime (parameter-selection picks the ring later; R stays,
    C = slots / R follows it)."""
    if log_n:
        return 1 << (log_n - 1)
    depth = max(stat_depth(program).values(), default=0)
    found = smallest_secure_log_n(120 + 40 * depth)
    return 1 << ((found or 16) - 1)


def choose_grid(program: stat.ProgramOp, sizes: dict[str, int], log_n: int = 0) -> GridChoice:
    """Weigh every grid shape R = 1, 2, 4, ... (up to the individuals, C = slots / R >= 1) by
    lowering the program with it and pricing the result (`grid_cost`); the cheapest wins, ties
    to the smaller R. R = 1 is the corner layouts (packed and replicated). The roles of every
    value are forced by its dims (`_Lowering.grid_layout`), so the enumeration over R is the
    whole search: there is no per-value choice left to a dynamic program."""
    slots = estimated_slots(program, log_n)
    rows = grid_row_dims(program)
    sized = {**program.params(), **sizes}
    largest = max((d if isinstance(d, int) else sized.get(d, 1) for d in rows), default=1)
    candidates: list[tuple[int, GridCost | str]] = []
    r = 1
    while r <= slots and (r == 1 or r // 2 < largest):
        try:
            lowered = lower_program(program, sizes, r)
            candidates.append((r, grid_cost(lowered, sizes, slots)))
        except UserError as err:
            if r == 1:
                raise
            candidates.append((r, err.message))
        r *= 2
    priced = [(c.key(), r) for r, c in candidates if isinstance(c, GridCost)]
    best = min(priced)[1]
    return GridChoice(best, slots, tuple(candidates))


@dataclass(frozen=True)
class LowerStatToHePass(ModulePass):
    """Lower every `stat.program` of the module to a `he.program` (replacing it).

    Assumes: a verified stat program (after range-analysis and depth-minimization).
    Establishes: a verified he program in which every value is a ciphertext array with a
    layout, all at level 0, so the later passes (lazy-relinearization, then the scheme's
    lowering and passes) own the remaining decisions. Options: `sizes` ("N=5000,M=16384"):
    compile for these sizes (each parameter's bound becomes min(declared bound, size));
    `grid_rows`: R of the grid layout (docs/layout.md), 1 for the corner layouts (packed and
    replicated), 0 to let the cost model choose (`choose_grid`, for the ring `log_n` when it is
    fixed; each choice is appended to `choices` for the report).
    """

    name = "lower-stat-to-he"

    sizes: str = ""
    grid_rows: int = 1
    log_n: int = 0
    choices: list[GridChoice] | None = field(default=None, compare=False)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sizes = parse_sizes(self.sizes)
        rows = self.grid_rows
        if rows < 0 or rows & (rows - 1):
            raise UserError(
                f"--grid-rows {rows}: the grid rows must be a power of two (1: the packed and "
                "replicated layouts) or auto",
                hint="e.g. --grid-rows 32, or --grid-rows auto to let the cost model choose",
            )
        for program in list(op.body.block.ops):
            if isinstance(program, stat.ProgramOp):
                if self.grid_rows == 0:
                    choice = choose_grid(program, sizes, self.log_n)
                    rows = choice.rows
                    if self.choices is not None:
                        self.choices.append(choice)
                elif rows > 1 and self.choices is not None:  # given, not weighed
                    slots = estimated_slots(program, self.log_n)
                    self.choices.append(GridChoice(rows, slots, ()))
                lowered = lower_program(program, sizes, rows)
                op.body.block.insert_op_before(lowered, program)
                program.detach()
                program.erase()
