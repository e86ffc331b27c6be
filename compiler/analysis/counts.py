"""Operation counts and sizes of a ckks program: static (per IR op) and executed (per
ciphertext, for concrete sizes), key sets and byte sizes per party.

Executed counts follow the layouts: an op on an array of k ciphertexts does k ciphertext
operations; `dot` over an axis of length K does K products per result ciphertext (and K - 1
additions); `sum_slots` adds the column blocks and then does log2(slots) rotations (key
switches) per result ciphertext, log2(R) over the row axis of a grid array (docs/layout.md);
broadcasts and level drops move no data. A ciphertext of degree d at level l is
(d + 1)·n·(primes of Q_l) 64-bit words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.ir import SSAValue

from compiler.dialects import ckks, he
from compiler.types import Dim

COUNT_KEYS = (
    "ct_mul",
    "pt_mul",
    "const_mul",
    "relin",
    "rotate",
    "conjugate",
    "key_switch",
    "rescale",
    "add",
)


def static_counts(program: ckks.ProgramOp, slots: int | None = None) -> dict[str, int]:
    """Counts of IR ops (sum_slots counts its log2(slots) rotations when slots is known)."""
    c: Counter[str] = Counter(dict.fromkeys(COUNT_KEYS, 0))
    steps = int(math.log2(slots)) if slots else 1
    for op in program.block.ops:
        match op:
            case ckks.MulOp() | ckks.DotOp():
                c["ct_mul"] += 1
            case ckks.MulPlainOp():
                c["pt_mul"] += 1
            case ckks.MulConstOp():
                c["const_mul" if op.is_integer else "pt_mul"] += 1
            case ckks.RelinearizeOp():
                c["relin"] += 1
                c["key_switch"] += 1
            case ckks.UnpackComplexOp():
                relin = ckks.ct_type(op.input).degree_value > 1
                c["relin"] += relin
                c["conjugate"] += 1
                c["key_switch"] += 1 + relin
                c["add"] += 2
            case ckks.RotateOp():
                c["rotate"] += 1
                c["key_switch"] += 1
            case ckks.SumSlotsOp():
                rotations = sum_slots_rotations(op, steps if slots else None)
                c["rotate"] += rotations
                c["key_switch"] += rotations
            case ckks.DiagMatvecOp():
                _diag_matvec(c, op.diagonal)
            case ckks.ConvertOp():
                _rotate_adds(c, len(op.replications(slots)) if slots else 1)
            case ckks.RescaleOp():
                c["rescale"] += 1
            case ckks.AddOp() | ckks.SubOp() | ckks.AddConstOp() | ckks.AddPlainOp():
                c["add"] += 1
            case ckks.ReduceOp():
                c["add"] += 1
            case _:
                pass
    return dict(c)


@dataclass
class Executed:
    counts: dict[str, int] = field(default_factory=dict)


def sum_slots_rotations(op: he.SumSlotsRule, steps: int | None) -> int:
    """Rotations (key switches) of one slot sum: `steps` = log2(slots) for the rotate-and-add
    tree (1 when the slots are not known), sum of r_i - 1 for a staged sum (its key products;
    compiler/analysis/rotations.py), log2(R) for a sum over the row axis of a grid array."""
    if op.axis_value is not None:
        grid = he.grid_of(he.any_ct(op.input).layout_name)
        assert grid is not None
        return int(math.log2(grid.rows))
    radices = op.radix_values if isinstance(op, ckks.SumSlotsOp) else None
    if radices is not None:
        return sum(r - 1 for r in radices)
    return 1 if steps is None else steps


class Shapes:
    """Ciphertext counts of arrays for concrete sizes and a slot count."""

    def __init__(self, sizes: Mapping[str, int], slots: int, coeff_group: int = 1):
        self.sizes = dict(sizes)
        self.slots = slots
        self.coeff_group = coeff_group

    def dim(self, d: Dim) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def count(self, ty: he.CiphertextType | he.PlaintextType) -> int:
        dims = [self.dim(d) for d in ty.dims]
        grid = he.grid_of(ty.layout_name)
        if grid is not None:
            return grid_count(grid, dims, self.slots)
        diagonal = he.diagonal_of(ty.layout_name)
        if diagonal is not None:
            return diagonal.count
        if he.cyclic_of(ty.layout_name) is not None:
            return 1
        if ty.layout_name == ckks.PACKED:
            return math.prod(dims[:-1]) * -(-dims[-1] // self.slots)
        if ty.layout_name == ckks.COMPLEX:
            return math.prod(dims[:-1]) * -(-dims[-1] // (2 * self.slots))
        if ty.layout_name == ckks.COEFF:
            # `coeff_group` columns per coefficient, n = 2 slots coefficients per ciphertext.
            coefficients = -(-dims[-1] // self.coeff_group)
            return math.prod(dims[:-1]) * -(-coefficients // (2 * self.slots))
        return math.prod(dims)


def grid_count(grid: he.Grid, dims: list[int], slots: int) -> int:
    """Ciphertexts of a grid array: its unrolled extents times its row blocks ceil(n / R) and
    column blocks ceil(m / C), C = slots / R."""
    per = {he.ROW: grid.rows, he.COL: grid.columns(slots), he.UNROLLED: 1}
    return math.prod(-(-d // per[r]) for d, r in zip(dims, grid.roles, strict=True))


def coeff_group(program: ckks.ProgramOp) -> int:
    """Columns per coefficient of the program's coeff arrays (1 when it has none)."""
    groups = [
        op.group_value
        for op in program.block.ops
        if isinstance(op, ckks.EncodeOp) and ckks.pt_type(op.result).layout_name == ckks.COEFF
    ]
    return max(groups, default=1)


def executed_counts(
    program: ckks.ProgramOp, sizes: Mapping[str, int], slots: int
) -> dict[str, int]:
    s = Shapes(sizes, slots, coeff_group(program))
    c: Counter[str] = Counter(dict.fromkeys(COUNT_KEYS, 0))
    steps = int(math.log2(slots))
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, ckks.CtType):
            continue
        out = s.count(ckks.ct_type(op.results[0]))
        match op:
            case ckks.MulOp():
                c["ct_mul"] += out
            case ckks.DotOp():
                k = s.count(ckks.ct_type(op.lhs))
                c["ct_mul"] += k
                c["add"] += k - out
            case ckks.MulPlainOp():
                c["pt_mul"] += out
            case ckks.MulConstOp():
                c["const_mul" if op.is_integer else "pt_mul"] += out
            case ckks.RelinearizeOp():
                c["relin"] += out
                c["key_switch"] += out
            case ckks.UnpackComplexOp():
                # one conjugation (and relinearization) per complex ciphertext
                pairs = s.count(ckks.ct_type(op.input))
                relin = ckks.ct_type(op.input).degree_value > 1
                c["relin"] += relin * pairs
                c["conjugate"] += pairs
                c["key_switch"] += (1 + relin) * pairs
                c["add"] += 2 * pairs
            case ckks.RotateOp():
                c["rotate"] += out
                c["key_switch"] += out
            case ckks.DiagMatvecOp():
                _diag_matvec(c, op.diagonal)
            case ckks.ConvertOp():
                _rotate_adds(c, len(op.replications(slots)))
            case ckks.SumSlotsOp():
                blocks = s.count(ckks.ct_type(op.input))
                rotations = sum_slots_rotations(op, steps)
                c["add"] += blocks - out + rotations * out
                c["rotate"] += rotations * out
                c["key_switch"] += rotations * out
            case ckks.RescaleOp():
                c["rescale"] += out
            case ckks.AddOp() | ckks.SubOp() | ckks.AddConstOp() | ckks.AddPlainOp():
                c["add"] += out
            case ckks.ReduceOp():
                c["add"] += s.count(ckks.ct_type(op.input)) - out
            case _:
                pass
    return dict(c)


def _rotate_adds(c: Counter[str], steps: int) -> None:
    """`steps` rotate-and-adds of one ciphertext (a packed -> cyclic conversion)."""
    c["rotate"] += steps
    c["key_switch"] += steps
    c["add"] += steps


def _diag_matvec(c: Counter[str], d: he.Diagonal) -> None:
    """One diagonal matrix-vector product (he.DiagMatvecRule): D products, G relinearizations,
    the baby-step, giant-step and fold rotations, and the additions that sum them."""
    babies, giants = d.rotations()
    c["ct_mul"] += d.count
    c["relin"] += d.giants
    c["rotate"] += len(babies) + len(giants)
    c["key_switch"] += len(babies) + len(giants) + d.giants
    c["add"] += (d.count - d.giants) + (d.giants - 1) + len(d.fold)


def packed_bits(q: int) -> int:
    """The bits a residue modulo q takes in a ciphertext array file (runtime/math/pack.h):
    the bit width of q - 1, or 64 above 56."""
    bits = (q - 1).bit_length()
    return 64 if bits > 56 else max(bits, 1)


def ciphertext_bytes(params: ckks.Parameters, level: int, degree: int = 1) -> int:
    """One ciphertext in memory: 64-bit words, (degree + 1) polynomials of its level's limbs."""
    primes = len(params.output_moduli) + level
    return (degree + 1) * (1 << params.log_n) * primes * 8


def ciphertext_file_bytes(params: ckks.Parameters, level: int, degree: int = 1) -> int:
    """One ciphertext as the array files store it (runtime/ckks/io.h: uploads, results): a
    16-byte record head and every limb's residues at their modulus's bit width."""
    primes = (params.output_moduli + params.moduli)[: len(params.output_moduli) + level]
    n = 1 << params.log_n
    return 16 + (degree + 1) * sum(n // 8 * packed_bits(q) for q in primes)


def key_bytes(params: ckks.Parameters, key_level: int) -> int:
    """One switching key: dnum digits, each a degree-1 ciphertext over Q_key_level·P."""
    primes = len(params.output_moduli) + key_level + len(params.special_moduli)
    return max(params.dnum, 1) * 2 * (1 << params.log_n) * primes * 8


@dataclass(frozen=True)
class PartySizes:
    upload_per_individual: int
    upload_other: int
    server_working_set: int
    download: int


def individual_axes(program: ckks.ProgramOp) -> set[Dim]:
    """The dimension indexing individuals, as a set of at most one: the axis the server streams
    over (`streaming.choose_stream_dim`, the runtime's `stream_dim`: its uploads are files of
    rows of it), else the row axis of the input matrices when they share one. One axis, so
    that the upload is `upload_per_individual` times that size plus `upload_other`. (Was: the
    row axis of every input matrix, so that a program with inputs [N, K] and [K, K] counted
    both N and K as individuals, and the per-individual figure, multiplied by N x K, was twice
    what the roles wrote: found by the slow tier's generated programs.)"""
    from compiler.analysis.streaming import choose_stream_dim  # (it imports this module)

    dim = choose_stream_dim(program)
    if dim is not None:
        return {dim}
    axes: set[Dim] = set()
    for op in program.block.ops:
        if isinstance(op, ckks.EncodeOp):
            ty = ckks.pt_type(op.result)
            # A diagonal matrix is one owner's whole (its rows are not individuals:
            # compiler/analysis/diagonal.py), as are its products' cyclic vectors.
            if len(ty.dims) >= 2 and he.diagonal_of(ty.layout_name) is None:
                axes.add(ty.dims[0])
    return axes if len(axes) == 1 else set()


def party_sizes(
    program: ckks.ProgramOp, params: ckks.Parameters, sizes: Mapping[str, int]
) -> PartySizes:
    s = Shapes(sizes, params.slots, coeff_group(program))
    people = individual_axes(program)
    per_person = other = 0
    for op in program.encrypts():
        ty = ckks.ct_type(op.result)
        total = s.count(ty) * ciphertext_file_bytes(params, ty.level_value)
        if ty.dims and ty.dims[0] in people:
            per_person += total // s.dim(ty.dims[0])
        else:
            other += total
    # Working set: the bytes of live ciphertext values, at their peak along program order.
    ops = list(program.block.ops)
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last_use[v] = i
    live: dict[SSAValue, int] = {}
    peak = 0
    for i, op in enumerate(ops):
        for r in op.results:
            ty = r.type
            if isinstance(ty, ckks.CtType) and not isinstance(
                op, ckks.BroadcastOp | ckks.LevelDownOp | ckks.TransposeOp | ckks.GatherOp
            ):
                live[r] = s.count(ty) * ciphertext_bytes(params, ty.level_value, ty.degree_value)
        peak = max(peak, sum(live.values()))
        for v in [v for v in live if last_use.get(v, -1) <= i]:
            del live[v]
    download = 0
    seen: set[SSAValue] = set()
    for d in program.decrypts():
        if d.input in seen:  # packed counts: several decrypts read one result
            continue
        seen.add(d.input)
        ty = ckks.ct_type(d.input)
        download += s.count(ty) * ciphertext_file_bytes(params, ty.level_value, ty.degree_value)
    return PartySizes(per_person, other, peak, download)
