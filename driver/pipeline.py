"""The pass-pipeline driver: source -> stat -> ckks, transform then validate.

One place decides the order of passes (STYLE.md: one pipeline driver). Transformation passes
run first, each followed by a verification of the whole module; the checker passes run last
and only read the IR. After every pass the driver records static op counts (so the report can
show what each pass changed) and, when asked, prints the IR (`--print-ir-after-all`,
`--print-ir-after=PASS`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TextIO, TypedDict

import numpy as np
import numpy.typing as npt
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.counts import static_counts
from compiler.analysis.depth import ckks_depth, stat_depth
from compiler.analysis.sizes import Sizes, format_sizes
from compiler.dialects import ckks, stat
from compiler.errors import UserError
from compiler.ir_text import print_ir
from compiler.stat_numpy import run_client
from driver import MAX_PRECISION_BITS
from driver.manifest import Manifest, manifest_of
from dsl.checker import CheckedProgram, check
from dsl.lower import lower
from dsl.parser import parse_file
from dsl.reference import evaluate
from passes.check_degrees import CheckDegreesPass
from passes.check_levels import CheckLevelsPass
from passes.check_scales import CheckScalesPass
from passes.check_security import CheckSecurityPass
from passes.coefficient_parameters import CoefficientParametersPass
from passes.complex_packing import SEARCH_PASSES, ComplexPackingPass, SearchMemo
from passes.depth_minimization import DepthMinimizationPass
from passes.lazy_relinearization import LazyRelinearizationPass
from passes.level_assignment import LevelAssignmentPass
from passes.lower_stat_to_ckks import LowerStatToCkksPass
from passes.owner_side import OwnerSidePass
from passes.packed_counts import PackedCountsPass
from passes.parameter_selection import ParameterSelectionPass
from passes.range_analysis import RangeAnalysisPass
from passes.rescale_placement import RescalePlacementPass
from passes.rotation_keys import RotationKeysPass
from passes.scale_management import ScaleManagementPass
from targets.report.report import PassChange, build_report
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

Scheme = Literal["ckks", "labhe", "auto"]


@dataclass(frozen=True)
class Options:
    """Every option of a compilation, built once per command (hec/cli.py) and passed down."""

    sizes: Sizes = field(default_factory=Sizes)
    precision_bits: float = 19.0
    precision: str = ""
    max_degree: int = 4
    log_n: int = 0
    insecure: bool = False
    print_ir_after_all: bool = False
    print_ir_after: tuple[str, ...] = ()
    # Complex packing (passes/complex_packing.py): decided inside the compilation by the cost
    # model when a row spans two slot sets.
    complex_packing: bool = True
    # Owner-side precomputation and packed counts (passes/owner_side.py, packed_counts.py).
    owner_side: bool = True
    packed_counts: bool = True
    # The target scheme: "ckks" (this module), "labhe" (driver/labhe.py: labeled HE for degree-2
    # programs) or "auto" (labhe when every revealed value has degree <= 2).
    scheme: Scheme = "ckks"
    labhe_linear: Literal["jl", "paillier"] = (
        "jl"  # the linear scheme under labhe: "jl" (Joye-Libert) or "paillier"
    )
    modulus_bits: int = 3072  # labhe: 3072 bits = 128-bit security; 2048 = 112 bits


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

    @cached_property
    def manifest(self) -> Manifest:
        """Inputs, encrypted arrays, outputs and packing, read once from the compiled IR."""
        return manifest_of(self.module)


def transform_passes(o: Options, memo: SearchMemo | None = None) -> list[ModulePass]:
    sizes = str(o.sizes)  # the passes' textual option
    return [
        RangeAnalysisPass(sizes=sizes),
        OwnerSidePass(enabled=o.owner_side),
        PackedCountsPass(sizes=sizes, enabled=o.packed_counts),
        DepthMinimizationPass(),
        LowerStatToCkksPass(sizes=sizes),
        LazyRelinearizationPass(max_degree=o.max_degree),
        RescalePlacementPass(),
        LevelAssignmentPass(),
        complex_packing_pass(o, memo),
        CoefficientParametersPass(log_n=o.log_n, insecure=o.insecure),
        ScaleManagementPass(
            precision_bits=o.precision_bits,
            precision=o.precision,
            log_n=o.log_n,
            insecure=o.insecure,
        ),
        ParameterSelectionPass(insecure=o.insecure),
        RotationKeysPass(),
    ]


def complex_packing_pass(o: Options, memo: SearchMemo | None) -> ComplexPackingPass:
    """Complex packing decides by the cost model inside the one compilation; it estimates the
    ring with the parameter search's own options (passes/complex_packing.py) and keeps each
    search in `memo` for the pipeline to reuse."""
    return ComplexPackingPass(
        enabled=o.complex_packing,
        sizes=str(o.sizes),
        precision_bits=o.precision_bits,
        precision=o.precision,
        log_n=o.log_n,
        insecure=o.insecure,
        memo=memo,
    )


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
    for op in module.body.block.ops:
        if isinstance(op, stat.ProgramOp):
            for name, d in stat_depth(op).items():
                counts[f"depth.{name}"] = d
    for program in ckks_programs(module):
        for name, d in ckks_depth(program).items():
            counts[f"depth.{name}"] = d
        types = [
            r.type
            for o in program.block.ops
            for r in o.results
            if isinstance(r.type, ckks.CtType | ckks.PtType)
        ]
        counts["chain.top_level"] = max((t.level_value for t in types), default=0)
        counts["scale.max_bits"] = round(max((t.scale_bits for t in types), default=0.0))
        counts["inputs.level_sum"] = sum(
            ckks.ct_type(e.result).level_value for e in program.encrypts()
        )
        params = program.parameters()
        if params is not None:
            counts["params.log_n"] = params.log_n
            counts["params.primes"] = len(params.output_moduli) + len(params.moduli)
            counts["params.special_primes"] = len(params.special_moduli)
        counts["keys.rotation"] = len(program.rotation_keys() or ())
        for k, v in static_counts(program, params.slots if params else None).items():
            counts[f"cost.{k}"] = counts.get(f"cost.{k}", 0) + v
    return counts


def run_pipeline(
    checked: CheckedProgram, options: Options, out: TextIO | None = None
) -> Compilation:
    """Compile `checked` once: every pass in order, each decision (complex packing included)
    made inside this one run by the cost model; IR dumps go to `out` (stdout by default)."""
    bits = options.precision_bits
    if not math.isfinite(bits) or bits <= 0 or bits > MAX_PRECISION_BITS:
        raise UserError(f"precision bits {bits:g}: must be a number in (0, {MAX_PRECISION_BITS:g}]")
    return _run_passes(checked, options, out)


def _run_passes(
    checked: CheckedProgram, options: Options, out: TextIO | None = None
) -> Compilation:
    stream: TextIO = out or sys.stdout
    unknown = [p for p in options.print_ir_after if p not in PASS_NAMES]
    if unknown:
        raise UserError(
            f"unknown pass {unknown[0]!r} in --print-ir-after",
            hint="passes: " + ", ".join(PASS_NAMES),
        )
    sizes = dict(options.sizes)
    for name, size in sizes.items():
        if name not in checked.params:
            raise UserError(
                f"--size names {name}, which is not a size parameter of the program",
                hint="size parameters: " + ", ".join(checked.params),
            )
        if size > checked.params[name]:
            raise UserError(
                f"--size {name}={size} exceeds the program's bound {name} <= "
                f"{checked.params[name]}",
                hint=f"raise the bound in the program (param {name} <= ...) or use a smaller size",
            )
    module = lower(checked)
    stat_module = module.clone()
    comp = Compilation(checked, stat_module, module, sizes, options)
    src = stat_module.body.block.first_op
    assert isinstance(src, stat.ProgramOp)
    comp.stat_depth_before = stat_depth(src)
    ctx = Context()
    memo = SearchMemo()
    steps: list[ModulePass] = transform_passes(options, memo) + checker_passes(options)
    searched: str | None = None  # the candidate whose recorded search the pipeline reuses
    for p in steps:
        before = _op_counts(module)
        if p.name == SEARCH_PASSES[0]:
            searched = memo.key_of(module)
        if not (searched and p.name in SEARCH_PASSES and memo.restore(module, searched, p.name)):
            p.apply(ctx, module)
        module.verify()
        comp.records.append(PassRecord(p.name, before, _op_counts(module)))
        if p.name == DepthMinimizationPass.name:
            first = module.body.block.first_op
            assert isinstance(first, stat.ProgramOp)
            comp.stat_depth_after = stat_depth(first)
        if options.print_ir_after_all or p.name in options.print_ir_after:
            stream.write(f"// -----// IR after {p.name} //----- //\n")
            stream.write(print_ir(module))
    return comp


def compile_file(path: str | Path, options: Options, out: TextIO | None = None) -> Compilation:
    return run_pipeline(check(parse_file(str(path))), options, out)


def sizes_for_run(comp: Compilation) -> dict[str, int]:
    """Concrete sizes of a run: the given sizes, else each parameter's declared bound."""
    return {name: comp.sizes.get(name, bound) for name, bound in comp.checked.params.items()}


__all__ = ["Compilation", "Options", "compile_file", "format_sizes", "run_pipeline"]


class ErrorRow(TypedDict):
    name: str
    mode: str
    max_rel_error: float
    median_rel_error: float


class SimulationCheck(TypedDict):
    sizes: dict[str, int]
    seed: int
    rows: list[ErrorRow]


def report_of(comp: Compilation) -> dict[str, Any]:
    """The report (`targets/report`) of a compilation, with the pipeline's pass records."""
    changes = [PassChange(r.name, r.changed) for r in comp.records]
    return build_report(comp.program, sizes_for_run(comp), changes, comp.stat_depth_before)


def _relative_errors(got: npt.NDArray[np.float64], want: npt.NDArray[np.float64]) -> list[float]:
    """Max and median of |got - want| / |want| over the entries with want != 0 (relative error
    is undefined at 0; there the absolute error is reported relative to the largest |want|)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = np.where(want != 0.0, np.abs(want), np.max(np.abs(want)) or 1.0)
    rel = np.abs(got - want) / scale
    return [float(np.max(rel)), float(np.median(rel))]


def simulate_against_reference(
    comp: Compilation, seed: int = 0, noisy: bool = False
) -> SimulationCheck:
    """Run the plaintext reference (source program) and the simulator (compiled ckks IR) on the
    same random inputs; compare every revealed value and every client-block result."""
    sizes = sizes_for_run(comp)
    inputs = random_inputs(comp.program, sizes, seed=seed)
    reference = evaluate(comp.checked, sizes, inputs)
    rows: list[ErrorRow] = []
    modes = [("exact", False)] + ([("noisy", True)] if noisy else [])
    for mode, is_noisy in modes:
        result = simulate(comp.program, sizes, inputs, noisy=is_noisy, seed=seed + 1)
        client = run_client(comp.stat_program, sizes, result.outputs)
        for name, want in reference.revealed.items():
            worst, median = _relative_errors(result.outputs[name], want)
            rows.append(
                {"name": name, "mode": mode, "max_rel_error": worst, "median_rel_error": median}
            )
        for name, want in reference.client.items():
            worst, median = _relative_errors(client[name], want)
            rows.append(
                {"name": name, "mode": mode, "max_rel_error": worst, "median_rel_error": median}
            )
    return {"sizes": sizes, "seed": seed, "rows": rows}
