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
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NotRequired, TextIO, TypedDict, cast

import numpy as np
import numpy.typing as npt
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import bfv_programs, ckks_programs
from compiler.analysis.cost import Cost, bfv_cost, ckks_cost, labhe_cost
from compiler.analysis.counts import static_counts
from compiler.analysis.depth import ckks_depth, stat_depth
from compiler.analysis.flooding import flooding_cost_bits
from compiler.analysis.matrix_chain import DEFAULT_SLOTS
from compiler.analysis.ranges import magnitude, stat_ranges
from compiler.analysis.sizes import Sizes, format_sizes, parse_sizes
from compiler.dialects import bfv, ckks, stat
from compiler.errors import InternalError, UserError, op_location
from compiler.ir_text import print_ir
from compiler.stat_numpy import run_client
from driver import MAX_PRECISION_BITS
from driver.manifest import Manifest, manifest_of
from dsl.ast import span_at
from dsl.bitslice import is_integer_program
from dsl.checker import CheckedProgram, check
from dsl.lower import lower
from dsl.parser import parse_file
from dsl.reference import evaluate
from passes.check_degrees import CheckDegreesPass
from passes.check_levels import CheckLevelsPass
from passes.check_precision import CheckPrecisionPass, PrecisionShortfall
from passes.check_scales import CheckScalesPass
from passes.check_security import CheckSecurityPass
from passes.complex_packing import SEARCH_PASSES, SearchMemo
from passes.depth_minimization import DepthMinimizationPass
from passes.lazy_relinearization import LazyRelinearizationPass
from passes.lower_stat_to_he import GridChoice, LowerStatToHePass
from passes.matrix_chain_ordering import MatrixChainOrderingPass, chain_decisions
from passes.owner_side import OwnerSidePass
from passes.packed_counts import PackedCountsPass
from passes.range_analysis import RangeAnalysisPass
from passes.schemes import BFV, CKKS, SCHEMES, Scheme, Settings
from targets.report.report import PassChange, build_bfv_report, build_report
from targets.sim.bfv_sim import simulate_bfv
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

SchemeName = Literal["ckks", "bfv", "labhe", "fhew", "auto"]


@dataclass(frozen=True)
class Options:
    """Every option of a compilation, built once per command (hec/cli.py) and passed down."""

    sizes: Sizes = field(default_factory=Sizes)
    precision_bits: float = 19.0
    precision: str = ""
    # --relative-precision: bits relative to each revealed value (turned into per-output
    # targets relative to the range bound by `relative_targets`); None: not asked for.
    relative_precision: float | None = None
    error_confidence: float = -32.0  # log2 of each revealed value's error-bound failure
    # The per-output targets check-precision holds the result to, when the scale search was
    # given raised ones (a recompilation after a shortfall); None: `precision` itself.
    promise: str | None = None
    # Budget the decrypt role's noise flooding (compiler/analysis/flooding.py): every precision
    # target holds after it. False (--no-flooding) for single-party use, where decrypt runs
    # with --no-flooding (hec run, hec gwas): the targets hold without it.
    flooding: bool = True
    max_degree: int = 4
    log_n: int = 0
    # Grid rows R of the grid layout (docs/layout.md; passes/lower_stat_to_he.py): 1 the
    # packed and replicated layouts (what the C++ target runs today), 0 chosen by the cost
    # model.
    grid_rows: int = 1
    # Budget for the evaluation keys in MiB (0: none): passes/rotation_keys.py plans the slot
    # sums within it, or refuses naming the key size.
    key_memory_mib: float = 0.0
    staged_sums: bool = True  # slot sums in doubly hoisted stages (else the rotate-and-add tree)
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
    # programs), "fhew" (driver/fhew.py: integer and Boolean programs as FHEW gate programs) or
    # "auto" (labhe when every revealed value has degree <= 2).
    scheme: SchemeName = "ckks"
    exact: bool = False  # --exact: only an exact scheme (bfv) may be chosen
    labhe_linear: Literal["jl", "paillier"] = (
        "jl"  # the linear scheme under labhe: "jl" (Joye-Libert) or "paillier"
    )
    modulus_bits: int = 3072  # labhe: 3072 bits = 128-bit security; 2048 = 112 bits

    @property
    def promised(self) -> str:
        """The per-output targets promised: `promise` when `precision` holds raised ones."""
        return self.precision if self.promise is None else self.promise


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
    # --scheme auto: every scheme's estimated cost (or why it cannot run the program), and why
    # this one was chosen.
    alternatives: dict[str, Cost | str] = field(default_factory=dict)
    choice: str = ""
    # --scheme auto chose labeled HE (driver/labhe.py's LabheCompilation): the commands follow
    # the labeled path; this compilation is the best RLWE one, kept for the report.
    labhe: Any = None
    # --grid-rows auto: the grid shapes the lowering weighed and its choice.
    grids: list[GridChoice] = field(default_factory=list)

    @property
    def scheme(self) -> str:
        return self.options.scheme

    @property
    def program(self) -> ckks.ProgramOp:
        """The compiled ckks program (a bfv compilation has `bfv_program` instead)."""
        found = next(ckks_programs(self.module), None)
        if found is None:
            raise UserError(
                f"this command needs a CKKS program; the program was compiled for {self.scheme}"
            )
        return found

    @property
    def bfv_program(self) -> bfv.ProgramOp:
        found = next(bfv_programs(self.module), None)
        if found is None:
            raise InternalError("not a bfv compilation")
        return found

    @property
    def stat_program(self) -> stat.ProgramOp:
        op = self.stat_module.body.block.first_op
        assert isinstance(op, stat.ProgramOp)
        return op

    @cached_property
    def manifest(self) -> Manifest:
        """Inputs, encrypted arrays, outputs and packing, read once from the compiled IR."""
        return manifest_of(self.module)


def scheme_of(o: Options) -> Scheme:
    """The scheme record a compilation targets (`auto` is resolved before compiling)."""
    if o.scheme not in SCHEMES:
        raise InternalError(f"no scheme record for {o.scheme!r}")
    return SCHEMES[o.scheme]


def flooding_bits_of(o: Options) -> float:
    """The bits of precision the decrypt role's noise flooding costs every output, which the
    parameter search buys back: 0 when compiled for single-party use (--no-flooding)."""
    return flooding_cost_bits() if o.flooding else 0.0


def transform_passes(
    o: Options, memo: SearchMemo | None = None, grids: list[GridChoice] | None = None
) -> list[ModulePass]:
    """The stat passes, the lowering to the HE layer and the scheme-independent HE passes,
    then the scheme's own (passes/schemes.py)."""
    scheme = scheme_of(o)
    sizes = str(o.sizes)  # the passes' textual option
    settings = Settings(
        sizes=sizes,
        precision_bits=o.precision_bits,
        precision=o.precision,
        failure_log2=o.error_confidence,
        flooding_bits=flooding_bits_of(o),
        log_n=o.log_n,
        key_memory_mib=o.key_memory_mib,
        staged_sums=o.staged_sums,
        insecure=o.insecure,
        complex_packing=o.complex_packing,
        search_memo=memo,
    )
    return [
        RangeAnalysisPass(sizes=sizes),
        OwnerSidePass(enabled=o.owner_side),
        PackedCountsPass(sizes=sizes, enabled=o.packed_counts and scheme.packed_counts),
        DepthMinimizationPass(),
        MatrixChainOrderingPass(sizes=sizes, log_n=o.log_n),
        LowerStatToHePass(sizes=sizes, grid_rows=o.grid_rows, log_n=o.log_n, choices=grids),
        LazyRelinearizationPass(max_degree=min(o.max_degree, scheme.max_degree)),
        *scheme.passes(settings),
    ]


def checker_passes(o: Options) -> list[ModulePass]:
    degree = min(o.max_degree, scheme_of(o).max_degree)
    if scheme_of(o) is BFV:
        return [CheckDegreesPass(degree), CheckSecurityPass()]
    return [
        CheckLevelsPass(),
        CheckScalesPass(),
        CheckDegreesPass(degree),
        CheckSecurityPass(),
        CheckPrecisionPass(
            o.precision_bits,
            o.promised,
            flooding_bits_of(o),
        ),
    ]


PASS_NAMES = list(
    dict.fromkeys(
        p.name
        for scheme in SCHEMES
        for o in [Options(scheme=cast(SchemeName, scheme))]
        for p in transform_passes(o) + checker_passes(o)
    )
)


def _op_counts(module: ModuleOp) -> dict[str, int]:
    """Op counts by op name plus the ckks cost categories: what a pass changes."""
    counts: dict[str, int] = {}
    for op in module.walk():
        if op.name.split(".")[0] in ("ckks", "stat", "he", "bfv"):
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
    """Compile `checked` once per scheme considered (one scheme unless `--scheme auto` or
    `--exact`): every pass in order, each decision (complex packing included) made inside the
    one run by the cost model; IR dumps go to `out` (stdout by default)."""
    bits = options.precision_bits
    if not math.isfinite(bits) or bits <= 0 or bits > MAX_PRECISION_BITS:
        raise UserError(f"precision bits {bits:g}: must be a number in (0, {MAX_PRECISION_BITS:g}]")
    if options.relative_precision is not None:
        options = relative_targets(checked, options)
    if options.scheme == "auto" or (options.exact and options.scheme != BFV.name):
        return _choose_scheme(checked, options, out)
    return _run_passes(checked, options, out)


def relative_targets(checked: CheckedProgram, options: Options) -> Options:
    """`--relative-precision P`: every revealed value v keeps P bits relative to |v| itself.
    A promise relative to the range bound B gives v only P - log2(B/|v|) bits, so each
    output's target becomes P + log2(B / min|v|) over its range (the stat range analysis at
    the compiled sizes), raised into `precision` (a per-output target already higher stays).
    An output whose range contains 0 (a centred moment, a difference) can have values with
    no bits at all relative to themselves: refused, located at its reveal."""
    assert options.relative_precision is not None
    program = lower(checked).body.block.first_op
    assert isinstance(program, stat.ProgramOp)
    sizes = dict(options.sizes)
    bounds = {k: min(v, sizes.get(k, v)) for k, v in program.params().items()}
    ranges = stat_ranges(program, bounds)
    targets = {k: float(v) for k, v in parse_sizes(options.precision).items()}
    for op in program.block.ops:
        if not isinstance(op, stat.RevealOp) or op.input not in ranges:
            continue
        name, r = op.sym_value, ranges[op.input]
        low = 0.0 if r.lo <= 0.0 <= r.hi else min(abs(r.lo), abs(r.hi))
        if not (low > 0.0 and math.isfinite(magnitude(r))):
            raise UserError(
                f"--relative-precision: {name} can be 0 (its range is [{r.lo:.6g}, "
                f"{r.hi:.6g}]), so no precision relative to its value can be promised: a "
                "value near 0 keeps only log2(|value| / error) bits",
                op_location(op),
                hint="use --precision-bits (relative to the range bound; the report states "
                "each output's absolute error bound), or reveal a value bounded away from 0",
            )
        need = options.relative_precision + math.log2(magnitude(r) / low)
        if need > MAX_PRECISION_BITS:
            raise UserError(
                f"--relative-precision {options.relative_precision:g}: {name} spans "
                f"[{r.lo:.6g}, {r.hi:.6g}], so its smallest values need {need:.1f} bits "
                f"relative to the range bound, beyond the {MAX_PRECISION_BITS:g} CKKS reaches",
                op_location(op),
            )
        targets[name] = max(targets.get(name, options.precision_bits), need)
    text = ",".join(f"{k}={math.ceil(v)}" for k, v in targets.items())
    return replace(options, precision=text, relative_precision=None)


def cost_of(comp: Compilation) -> Cost:
    """The cost model's estimate (compiler/analysis/cost.py) at the sizes of the run."""
    sizes = sizes_for_run(comp)
    if comp.scheme == BFV.name:
        return bfv_cost(comp.bfv_program, sizes)
    return ckks_cost(comp.program, sizes)


def _choose_scheme(checked: CheckedProgram, options: Options, out: TextIO | None) -> Compilation:
    """`--scheme auto`: compile for every scheme that can run the program (one compilation
    each) and keep the one the cost model estimates fastest (owners' encryption plus the
    server's work), labeled HE included when every revealed value has degree <= 2 (then
    `comp.labhe` holds its compilation and the commands follow the labeled path); `--exact`:
    BFV (and labeled HE, exact too) only, and an error naming what is not an integer."""
    if options.exact and options.scheme not in ("auto", BFV.name):
        raise UserError(
            f"--exact: {options.scheme} is an approximate scheme",
            hint="use --scheme bfv or --scheme auto with --exact",
        )
    names = [BFV.name] if options.exact else [CKKS.name, BFV.name]
    compiled: dict[str, Compilation] = {}
    why_not: dict[str, str] = {}
    for name in names:
        try:
            compiled[name] = run_pipeline(checked, replace(options, scheme=name, exact=False), out)
        except UserError as e:
            if options.exact:
                raise
            why_not[name] = e.message
    if not compiled:
        raise UserError(
            "no scheme can run the program: " + "; ".join(f"{k}: {v}" for k, v in why_not.items())
        )
    costs = {name: cost_of(c) for name, c in compiled.items()}
    labhe = None
    if options.scheme == "auto":
        # Labeled HE when every revealed value has degree <= 2 (its lowering refuses the rest,
        # and a message space its modulus cannot hold), in the same currency.
        from driver.labhe import compile_labhe

        try:
            labhe = compile_labhe(checked, replace(options, scheme="labhe"))
            costs["labhe"] = labhe_cost(labhe.plan, options.labhe_linear, options.modulus_bits)
        except UserError as e:
            why_not["labhe"] = e.message
    best = min(costs, key=lambda k: costs[k].total_s)
    rlwe = [k for k in costs if k != "labhe"]  # not empty: compiled is not
    comp = compiled[best if best != "labhe" else min(rlwe, key=lambda k: costs[k].total_s)]
    comp.alternatives = {**costs, **why_not}
    if best == "labhe":
        comp.labhe = labhe
    others = [k for k in costs if k != best]
    if others:
        ratio = ", ".join(f"{costs[k].total_s / costs[best].total_s:.2f}x for {k}" for k in others)
        comp.choice = (
            f"{best}: the lowest estimated time, owners' encryption plus the server ({ratio})"
        )
    else:
        comp.choice = f"{best}: the only scheme that runs the program"
    if "labhe" in why_not:
        comp.choice += f"; labhe not considered: {why_not['labhe']}"
    return comp


# Recompilations with raised targets when the final parameters keep fewer bits than the plan.
PRECISION_RETRIES = 3


def _run_passes(
    checked: CheckedProgram, options: Options, out: TextIO | None = None
) -> Compilation:
    """The passes once; when check-precision finds an output short of its promise under the
    primes found (the plan's whole-bit scales met it), the scale search again with that
    output's target raised by the shortfall, so that the promise holds (issue 19)."""
    first = options
    targets = {k: float(v) for k, v in parse_sizes(options.precision).items()}
    for attempt in range(PRECISION_RETRIES + 1):
        try:
            return _run_passes_once(checked, options, out)
        except PrecisionShortfall as e:
            if attempt == PRECISION_RETRIES:
                worst = ", ".join(
                    f"{name} reaches {reached:.2f} of {promised:g} bits (its scale target "
                    f"raised to {targets.get(name, options.precision_bits):g})"
                    for name, (reached, promised) in e.short.items()
                )
                # Located at the reveal of the first output short of its promise (the slow
                # property test found this refusal unlocated).
                reveal = next((r for r in checked.reveals if r.name in e.short), None)
                raise UserError(
                    f"no parameters keep the precision promise: {worst}; "
                    + e.message.split("; ", 1)[-1],
                    checked.source.location(reveal.span) if reveal is not None else None,
                    hint=e.hint,
                ) from e
            for name, (reached, promised) in e.short.items():
                base = targets.get(name, options.precision_bits)
                # Whole bits: the scale search takes per-output targets as integers.
                targets[name] = math.ceil(base + max(promised - reached, 0.0) + 0.1)
            text = ",".join(f"{k}={math.ceil(v)}" for k, v in targets.items())
            options = replace(options, precision=text, promise=first.precision)
    raise InternalError("unreachable")


def _run_passes_once(
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
    module = lower(checked, scheme=options.scheme)
    stat_module = module.clone()
    comp = Compilation(checked, stat_module, module, sizes, options)
    src = stat_module.body.block.first_op
    assert isinstance(src, stat.ProgramOp)
    comp.stat_depth_before = stat_depth(src)
    ctx = Context()
    memo = SearchMemo()
    steps: list[ModulePass] = transform_passes(options, memo, comp.grids) + checker_passes(options)
    searched: str | None = None  # the candidate whose recorded search the pipeline reuses
    for p in steps:
        before = _op_counts(module)
        if p.name == SEARCH_PASSES[0]:
            searched = memo.key_of(module)
        if not (searched and p.name in SEARCH_PASSES and memo.restore(module, searched, p.name)):
            try:
                p.apply(ctx, module)
            except UserError as err:
                if p.name in PARAMETER_PASSES:
                    err = at_deepest_output(err, comp)
                raise with_source_line(err, checked) from None
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


# Passes whose refusals concern the whole program (no parameter set holds it): such an error is
# reported at the deepest revealed value, the one whose levels the modulus chain must hold.
PARAMETER_PASSES = frozenset(
    {*SEARCH_PASSES, "complex-packing", "bfv-parameters", "bfv-mod-switch", "check-security"}
)


def at_deepest_output(err: UserError, comp: Compilation) -> UserError:
    """`err`, when it has no location, located at the reveal of the deepest output."""
    depths = comp.stat_depth_after or comp.stat_depth_before
    if err.location is not None or not depths:
        return err
    name = max(depths, key=lambda k: depths[k])
    reveal = next((r for r in comp.stat_program.reveals() if r.sym_value == name), None)
    err.location = op_location(reveal)
    if err.location is not None:
        err.message += f" (the deepest output is {name}, at multiplicative depth {depths[name]})"
    return err


def with_source_line(err: UserError, checked: CheckedProgram) -> UserError:
    """`err` with the line text and the construct's extent filled in when a pass located it
    from an op's MLIR location (which keeps only file, line and column)."""
    loc = err.location
    if loc is None or loc.line_text or loc.file != checked.source.filename:
        return err
    span = span_at(checked.program, loc.line, loc.column)
    err.location = checked.source.location(span)
    return err


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
    noise_budget_bits: NotRequired[dict[str, float]]


def report_of(comp: Compilation, threads: int = 0) -> dict[str, Any]:
    """The report (`targets/report`) of a compilation, with the pipeline's pass records and
    (under --scheme auto) every scheme's estimated cost and the choice; `threads`: the
    server's, for the memory figure (0: this machine's cores)."""
    from driver.calibrate import profile_description

    changes = [PassChange(r.name, r.changed) for r in comp.records]
    if comp.scheme == BFV.name:
        report = build_bfv_report(comp.bfv_program, sizes_for_run(comp), changes, threads)
    else:
        report = build_report(
            comp.program, sizes_for_run(comp), changes, comp.stat_depth_before, threads
        )
    report["scheme"] = comp.scheme
    report["cost"] = cost_of(comp).as_dict()
    report["profile"] = profile_description()  # which measured costs the estimates used
    slots = 1 << (comp.options.log_n - 1) if comp.options.log_n else DEFAULT_SLOTS
    decisions = chain_decisions(comp.stat_program, dict(comp.options.sizes), slots)
    if decisions:
        report["matrix_chains"] = [d.as_dict() for d in decisions]
    if comp.grids:
        report["grid"] = grid_report(comp)
    layouts = diagonal_report(comp)
    if layouts:
        report["diagonal"] = layouts
    if comp.scheme == BFV.name and is_integer_program(comp.checked):
        from driver.bitslices import bitslice_report

        report["bitslice"] = bitslice_report(comp)
    if comp.alternatives:
        report["schemes"] = {
            name: (c.as_dict() if isinstance(c, Cost) else {"unavailable": c})
            for name, c in comp.alternatives.items()
        }
        report["scheme_choice"] = comp.choice
    return report


def grid_report(comp: Compilation) -> dict[str, Any]:
    """The grid shape chosen (R, and C = slots / R on the ring the parameters picked), the
    shapes weighed with their costs (at the slots assumed before the ring was chosen) and the
    layout of every encrypted input and revealed value."""
    choice = comp.grids[0]
    out = choice.as_dict()
    program = next(ckks_programs(comp.module), None)
    params = program.parameters() if program is not None else None
    if program is not None and params is not None:
        out["columns"] = params.slots // choice.rows
        out["slots"] = params.slots
        out["layouts"] = _layouts(program)
    return out


def _layouts(program: ckks.ProgramOp) -> dict[str, str]:
    """The layout of every encrypted input and revealed value, by name."""
    layouts: dict[str, str] = {}
    for e in program.encrypts():
        layouts[e.source().sym_value] = ckks.ct_type(e.result).layout_name
    for d in program.decrypts():
        layouts[d.sym_value] = ckks.ct_type(d.input).layout_name
    return layouts


def diagonal_report(comp: Compilation) -> dict[str, Any] | None:
    """The diagonal method's products (docs/layout.md, "Diagonal layout"), when the program
    has any: each product's layouts, baby and giant steps, key switches and products, next to
    the method it was chosen over (row-wise products summed over the slots into a replicated
    result: a relinearization and a log2(slots) rotation tree per row), and the layout of every
    encrypted input and revealed value."""
    program = next(ckks_programs(comp.module), None)
    if program is None:
        return None
    ops = [op for op in program.block.ops if isinstance(op, ckks.DiagMatvecOp)]
    converts = [op for op in program.block.ops if isinstance(op, ckks.ConvertOp)]
    params = program.parameters()
    if not (ops or converts) or params is None:
        return None
    sizes = sizes_for_run(comp)

    def size(d: object) -> int:
        return d if isinstance(d, int) else int(sizes[str(d)])

    steps = params.slots.bit_length() - 1
    products: list[dict[str, Any]] = []
    for op in ops:
        d = op.diagonal
        rows, cols = (size(x) for x in ckks.ct_type(op.lhs).dims)
        babies, giants = d.rotations()
        loc = op_location(op)
        products.append(
            {
                "location": f"{loc.line}:{loc.column}" if loc else "?",
                "shape": [rows, cols],
                "matrix_layout": d.text,
                "vector_layout": ckks.ct_type(op.rhs).layout_name,
                "result_layout": ckks.ct_type(op.result).layout_name,
                "baby_step": d.baby,
                "giant_steps": d.giants,
                "rotations": len(babies) + len(giants),
                "key_switches": d.key_switches(),
                "ct_mults": d.count,
                "rejected": {
                    "method": "row-wise slot sums (a replicated result)",
                    "key_switches": rows * (1 + steps),
                    "rotations": rows * steps,
                    "ct_mults": rows * -(-cols // params.slots),
                },
            }
        )
    conversions: list[dict[str, Any]] = []
    for op in converts:
        loc = op_location(op)
        rotations = len(op.replications(params.slots))
        conversions.append(
            {
                "location": f"{loc.line}:{loc.column}" if loc else "?",
                "from": ckks.ct_type(op.input).layout_name,
                "to": op.to_layout,
                # cyclic -> packed: the mask before it (a plaintext product and a level);
                # packed -> cyclic: the rotate-and-adds (and a mask first when the padding
                # may not be zero).
                "rotations": rotations,
                "levels": 0 if rotations else 1,
            }
        )
    return {
        "products": products,
        "conversions": conversions,
        "layouts": _layouts(program),
        "slots": params.slots,
    }


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
    if comp.scheme == BFV.name:
        return _simulate_bfv_against_reference(comp, sizes, seed)
    inputs = random_inputs(comp.program, sizes, seed=seed)
    reference = evaluate(comp.checked, sizes, inputs)
    rows: list[ErrorRow] = []
    modes = [("exact", False)] + ([("noisy", True)] if noisy else [])
    for mode, is_noisy in modes:
        result = simulate(
            comp.program,
            sizes,
            inputs,
            noisy=is_noisy,
            seed=seed + 1,
            flooding=comp.options.flooding,
        )
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


def _simulate_bfv_against_reference(
    comp: Compilation, sizes: dict[str, int], seed: int
) -> SimulationCheck:
    """BFV is exact: every revealed value and client result must equal the reference's."""
    inputs = random_inputs(comp.bfv_program, sizes, seed=seed)
    result = simulate_bfv(comp.bfv_program, sizes, inputs)
    if is_integer_program(comp.checked):  # bit slices: the planes are random bits
        from dsl.bitslice import assemble_outputs, join_inputs
        from dsl.reference import run_client_block

        integers = join_inputs(comp.checked, inputs)
        reference = evaluate(comp.checked, sizes, integers)
        revealed = assemble_outputs(comp.checked, result.outputs)
        public = {k: v for k, v in integers.items() if not comp.checked.bindings[k].ty.secret}
        result.outputs = {k: np.asarray(v, dtype=np.float64) for k, v in revealed.items()}
        client = run_client_block(comp.checked, sizes, revealed, public)
    else:
        reference = evaluate(comp.checked, sizes, inputs)
        outputs = {  # the client block computes in float64 (exact integers beyond int64: objects)
            k: np.asarray(v, dtype=np.float64) if v.dtype == object else v
            for k, v in result.outputs.items()
        }
        client = run_client(comp.stat_program, sizes, outputs)
    rows: list[ErrorRow] = []
    for values, wanted in ((result.outputs, reference.revealed), (client, reference.client)):
        for name, want in wanted.items():
            worst, median = _relative_errors(values[name], want)
            rows.append(
                {"name": name, "mode": "exact", "max_rel_error": worst, "median_rel_error": median}
            )
    return {"sizes": sizes, "seed": seed, "rows": rows, "noise_budget_bits": result.budgets}
