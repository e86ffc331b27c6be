"""Range analysis on `stat` (DESIGN.md §5): the interval of every value, recorded on its op.

Each server op of a stat program gets a `range = array<f64: lo, hi>` attribute from interval
arithmetic over the input domains and the size bounds (`compiler.analysis.ranges`). Every
secret value must have a finite range: a precision can only be promised for bounded values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, f64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ranges import magnitude, stat_ranges
from compiler.analysis.sizes import parse_sizes
from compiler.dialects import stat
from compiler.errors import UserError, op_location
from compiler.types import Interval


def _unbounded(op: Operation, ranges: Mapping[SSAValue, Interval]) -> UserError:
    """The refusal of a secret value without a finite range, located at the op whose bound
    overflowed (every operand finite, the result not) or at the value itself."""
    name = op.results[0].name_hint or op.name
    magnitudes = [magnitude(ranges[v]) for v in op.operands if v in ranges]
    if magnitudes and all(math.isfinite(m) for m in magnitudes):
        shown = " and ".join(f"{m:.3g}" for m in magnitudes)
        return UserError(
            f"the range of the secret value {name} overflows at the declared sizes: interval "
            f"arithmetic on the input domains and size bounds gives its operands magnitudes "
            f"up to {shown}, and the result exceeds the largest double, so no precision "
            "can be promised for it",
            op_location(op),
            hint="compile for smaller sizes (--size) or tighten the size bounds and input domains",
        )
    return UserError(
        f"the secret value {name} has no finite range, so no precision can be promised for it",
        op_location(op),
        hint="give every secret input a bounded domain",
    )


@dataclass(frozen=True)
class RangeAnalysisPass(ModulePass):
    """Annotate every stat server op with the range of its result.

    Assumes: a verified stat program. Establishes: a `range` attribute on every op with a
    result; every secret range is finite (else UserError naming the value). The module
    verifies. Options: `sizes` ("N=5000"): tighter bounds than the declared ones.
    """

    name = "range-analysis"

    sizes: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sizes = parse_sizes(self.sizes)
        for program in op.body.block.ops:
            if not isinstance(program, stat.ProgramOp):
                continue
            bounds = {k: min(v, sizes.get(k, v)) for k, v in program.params().items()}
            ranges = stat_ranges(program, bounds)
            for o in program.server_ops():
                if not o.results or o.results[0] not in ranges:
                    continue
                r = ranges[o.results[0]]
                if stat.tensor_type(o.results[0]).is_secret and not r.is_finite:
                    raise _unbounded(o, ranges)
                o.attributes["range"] = DenseArrayBase.from_list(f64, [r.lo, r.hi])
