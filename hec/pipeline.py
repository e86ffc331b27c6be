"""The pass-pipeline driver: source -> stat -> ckks, transform then validate.

One place decides the order of passes (STYLE.md: one pipeline driver). Transformation passes
run first, each followed by a verification of the whole module; the checker passes run last
and only read the IR. After every pass the driver records static op counts (so the report can
show what each pass changed) and, when asked, prints the IR (`--print-ir-after-all`,
`--print-ir-after=PASS`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.counts import static_counts
from compiler.analysis.depth import stat_depth
from compiler.analysis.sizes import format_sizes, parse_sizes
from compiler.dialects import ckks, stat
from compiler.errors import UserError
from compiler.ir_text import print_ir
from dsl.checker import CheckedProgram, check
from dsl.lower import lower
from dsl.parser import parse_file
from passes.check_degrees import CheckDegreesPass
from passes.check_levels import CheckLevelsPass
from passes.check_scales import CheckScalesPass
from passes.check_security import CheckSecurityPass
from passes.depth_minimization import DepthMinimizationPass
from passes.lazy_relinearization import LazyRelinearizationPass
from passes.level_assignment import LevelAssignmentPass
from passes.lower_stat_to_ckks import LowerStatToCkksPass
from passes.parameter_selection import ParameterSelectionPass
from passes.range_analysis import RangeAnalysisPass
from passes.rescale_placement import RescalePlacementPass
from passes.rotation_keys import RotationKeysPass
from passes.scale_management import ScaleManagementPass


@dataclass(frozen=True)
class Options:
    sizes: str = ""
    precision_bits: float = 19.0
    precision: str = ""
    max_degree: int = 4
    log_n: int = 0
    insecure: bool = False
    print_ir_after_all: bool = False
    print_ir_after: tuple[str, ...] = ()


@dataclass
class PassRecord:
    name: str
    before: dict[str, int]
    after: dict[str, int]

    @property
    def changed(self) -> dict[str, tuple[int, int]]:
        keys = sorted(set(self.before) | set(self.after))
        return {
            k: (self.before.get(k, 0), self.after.get(k, 0))
            for k in keys
            if self.before.get(k, 0) != self.after.get(k, 0)
        }


@dataclass
class Compilation:
    checked: CheckedProgram
    stat_module: ModuleOp  # the lowered source, before any pass (the reference's meaning)
    module: ModuleOp  # the final ckks module
    sizes: dict[str, int]
    options: Options
    records: list[PassRecord] = field(default_factory=list)
    stat_depth_before: dict[str, int] = field(default_factory=dict)
    stat_depth_after: dict[str, int] = field(default_factory=dict)

    @property
    def program(self) -> ckks.ProgramOp:
        return next(ckks_programs(self.module))

    @property
    def stat_program(self) -> stat.ProgramOp:
        op = self.stat_module.body.block.first_op
        assert isinstance(op, stat.ProgramOp)
        return op


def transform_passes(o: Options) -> list[ModulePass]:
    return [
        RangeAnalysisPass(sizes=o.sizes),
        DepthMinimizationPass(),
        LowerStatToCkksPass(sizes=o.sizes),
        LazyRelinearizationPass(max_degree=o.max_degree),
        RescalePlacementPass(),
        LevelAssignmentPass(),
        ScaleManagementPass(
            precision_bits=o.precision_bits,
            precision=o.precision,
            log_n=o.log_n,
            insecure=o.insecure,
        ),
        ParameterSelectionPass(insecure=o.insecure),
        RotationKeysPass(),
    ]


def checker_passes(o: Options) -> list[ModulePass]:
    return [
        CheckLevelsPass(),
        CheckScalesPass(),
        CheckDegreesPass(o.max_degree),
        CheckSecurityPass(),
    ]


PASS_NAMES = [p.name for p in transform_passes(Options()) + checker_passes(Options())]


def _op_counts(module: ModuleOp) -> dict[str, int]:
    """Op counts by op name plus the ckks cost categories: what a pass changes."""
    counts: dict[str, int] = {}
    for op in module.walk():
        if op.name.startswith("ckks.") or op.name.startswith("stat."):
            counts[op.name] = counts.get(op.name, 0) + 1
    for program in ckks_programs(module):
        params = program.parameters()
        for k, v in static_counts(program, params.slots if params else None).items():
            counts[f"cost.{k}"] = counts.get(f"cost.{k}", 0) + v
    return counts


def run_pipeline(
    checked: CheckedProgram, options: Options, out: TextIO | None = None
) -> Compilation:
    out = out or sys.stdout
    unknown = [p for p in options.print_ir_after if p not in PASS_NAMES]
    if unknown:
        raise UserError(
            f"unknown pass {unknown[0]!r} in --print-ir-after",
            hint="passes: " + ", ".join(PASS_NAMES),
        )
    sizes = parse_sizes(options.sizes)
    for name in sizes:
        if name not in checked.params:
            raise UserError(
                f"--size names {name}, which is not a size parameter of the program",
                hint="size parameters: " + ", ".join(checked.params),
            )
    module = lower(checked)
    stat_module = module.clone()
    comp = Compilation(checked, stat_module, module, sizes, options)
    src = stat_module.body.block.first_op
    assert isinstance(src, stat.ProgramOp)
    comp.stat_depth_before = stat_depth(src)
    ctx = Context()
    steps: list[ModulePass] = transform_passes(options) + checker_passes(options)
    for p in steps:
        before = _op_counts(module)
        p.apply(ctx, module)
        module.verify()
        comp.records.append(PassRecord(p.name, before, _op_counts(module)))
        if p.name == DepthMinimizationPass.name:
            first = module.body.block.first_op
            assert isinstance(first, stat.ProgramOp)
            comp.stat_depth_after = stat_depth(first)
        if options.print_ir_after_all or p.name in options.print_ir_after:
            out.write(f"// -----// IR after {p.name} //----- //\n")
            out.write(print_ir(module))
    return comp


def compile_file(path: str | Path, options: Options, out: TextIO | None = None) -> Compilation:
    return run_pipeline(check(parse_file(str(path))), options, out)


def sizes_for_run(comp: Compilation) -> dict[str, int]:
    """Concrete sizes of a run: the given sizes, else each parameter's declared bound."""
    return {name: comp.sizes.get(name, bound) for name, bound in comp.checked.params.items()}


__all__ = ["Compilation", "Options", "compile_file", "format_sizes", "run_pipeline"]
