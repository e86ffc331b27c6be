"""Packed counts: several bounded integer sums over the individuals in one encrypted value.

A program whose server part is only sums over the row axis of non-negative integer owner
values (allele counts, case counts, called counts) reveals counts. Each owner then encrypts
sum_k W_k x_k (W_k = R_0 ... R_{k-1}) instead of every x_k apart; the server adds; the
coordinator reads sum_i x_ik back as digit k of the decrypted integer. Range analysis proves
the radices: R_k = (largest x_k) * N + 1 exceeds every possible sum, so no digit carries into
the next and the counts come back exact. The `ckks` lowering encrypts such a value in the
coefficients of the plaintext (layout `coeff`), where the decrypted error is the sum of the
owners' fresh encryption errors and never meets the canonical embedding, and chooses how many
columns share one coefficient (coefficient-parameters).

Applies only when every revealed value is such a sum and nothing else is computed on the
server; otherwise the program is left to the general path.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, f64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.sizes import parse_sizes
from compiler.dialects import stat
from compiler.types import Dim
from passes.owner_side import _remove_dead, count_domain_max, only_sums, row_axis


@dataclass(frozen=True)
class PackedCountsPass(ModulePass):
    """Replace the revealed integer sums of an additions-only program by one `stat.packed_sum`.

    Assumes: a verified stat program after owner-side. Establishes: when every reveal is
    `sum(x, axis 0)` of a row input or owner value with a non-negative integer finite domain,
    all of rank 1 or 2 over one row axis and one column axis, and the server computes nothing
    else, one `stat.packed_sum` of the distinct summands (radix per operand: its largest
    value times the row count bound, plus one) feeds every reveal; the module verifies.
    Options: `sizes` (the row count bound is min(declared bound, size)), `enabled` (off:
    `--no-packed-counts`).
    """

    name = "packed-counts"

    sizes: str = ""
    enabled: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enabled:
            return
        sizes = parse_sizes(self.sizes)
        for program in list(op.body.block.ops):
            if isinstance(program, stat.ProgramOp):
                self.run(program, sizes)

    def run(self, program: stat.ProgramOp, sizes: dict[str, int]) -> None:
        row = row_axis(program)
        reveals = program.reveals()
        if row is None or not reveals:
            return
        if not only_sums(program):
            return
        sums: list[stat.SumOp] = []
        operands: list[SSAValue] = []
        cols: set[Dim] = set()
        for reveal in reveals:
            s = reveal.input.owner
            assert isinstance(s, stat.SumOp)
            ty = stat.tensor_type(s.input)
            if ty.rank == 2:
                cols.add(ty.dims[1])
            sums.append(s)
            if s.input not in operands:
                operands.append(s.input)
        if len(cols) > 1:
            return
        bounds = program.params()
        rows = row if isinstance(row, int) else min(bounds[row], sizes.get(row, bounds[row]))
        radices = []
        for x in operands:
            top = count_domain_max(x)
            assert top is not None
            radices.append(max(2, top * rows + 1))
        first: Operation = sums[0]
        for s in sums:
            if list(program.block.ops).index(s) < list(program.block.ops).index(first):
                first = s
        packed = stat.PackedSumOp(operands, radices)
        program.block.insert_op_before(packed, first)
        for x, result in zip(operands, packed.sums, strict=True):
            result.name_hint = f"sum_{x.name_hint or 'x'}"
        lo_hi = [(0.0, float(r - 1)) for r in radices]
        packed.attributes["range"] = DenseArrayBase.from_list(
            f64, [min(lo for lo, _ in lo_hi), max(hi for _, hi in lo_hi)]
        )
        for s in sums:
            k = operands.index(s.input)
            s.result.replace_all_uses_with(packed.sums[k])
        _remove_dead(program)
