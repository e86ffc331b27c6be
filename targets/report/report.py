"""`hec report`: what a compiled program costs, how precise and secure it is, what it reveals.

Built from the final ckks IR and the pass records of the pipeline (DESIGN.md §6 report):
parameters and security; per output the multiplicative depth, levels, degree, scale and the
promised precision (`compiler.analysis.noise`); static and executed counts of each kind of
operation; the rotation keys and evaluation-key bytes; ciphertext bytes per party; what each
pass changed; and what the coordinator learns. The JSON form (keys below) is validated
against `tests/report.schema.json`; the text form is for people.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xdsl.ir import Operation, SSAValue

from compiler.analysis.bfv_noise import Ring, decrypt_budgets
from compiler.analysis.ckks_util import needs_conjugation_key, needs_relin_key
from compiler.analysis.cost import Units
from compiler.analysis.counts import (
    ciphertext_bytes,
    executed_counts,
    individual_axes,
    key_bytes,
    party_sizes,
    static_counts,
)
from compiler.analysis.depth import ciphertext_products, ckks_depth
from compiler.analysis.flooding import (
    DEFAULT_STATISTICAL_BITS,
    REVEAL_BUDGET_LOG2,
    flooding_cost_bits,
)
from compiler.analysis.noise import NoiseModel, error_failure_log2, output_precision
from compiler.analysis.packed import FAILURE_LOG2
from compiler.analysis.profile import active
from compiler.analysis.ranges import magnitude, public_values, range_of, value_ranges
from compiler.analysis.rotations import SumPlan, plan_seconds, tree
from compiler.analysis.streaming import ServerMemory, server_memory
from compiler.dialects import bfv, ckks, he
from compiler.errors import InternalError
from compiler.types import format_shape

SCHEMA_VERSION = 1
# Bits of a revealed value's range an output can promise: the decrypted float64 rounds to 2^-53 of
# the value, so a bound tighter than 2^-52 of the range is not kept by the output itself.
OUTPUT_BITS = 52.0


@dataclass(frozen=True)
class PassChange:
    name: str
    changed: Mapping[str, tuple[int, int]]


def _bits(values: Sequence[int]) -> list[float]:
    return [round(math.log2(v), 3) for v in values]


def _rescales_on_path(program: ckks.ProgramOp) -> dict[SSAValue, int]:
    depth: dict[SSAValue, int] = {}
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, ckks.CtType | ckks.PtType):
            continue
        base = max((depth.get(v, 0) for v in op.operands), default=0)
        depth[op.results[0]] = base + int(isinstance(op, ckks.RescaleOp))
    return depth


def _inputs_of(value: SSAValue) -> set[str]:
    seen: set[str] = set()
    stack = [value]
    visited: set[int] = set()
    while stack:
        v = stack.pop()
        owner = v.owner
        if not isinstance(owner, Operation) or id(owner) in visited:
            continue
        visited.add(id(owner))
        if isinstance(owner, ckks.EncodeOp):
            seen.add(owner.sym_value)
        stack.extend(owner.operands)
    return seen


def _memory_dict(memory: ServerMemory, threads: int) -> dict[str, Any]:
    return {
        "streamed": memory.streamed,
        "threads": threads,
        "total": memory.total,
        "keys": memory.keys,
        "accumulators": memory.accumulators,
        "chunk": memory.chunk,
        "globals": memory.globals_peak,
        "outputs": memory.outputs,
        "scratch": memory.scratch,
        "baseline": memory.baseline,
    }


def _sum_plan(program: ckks.ProgramOp, params: ckks.Parameters, one_key: int) -> dict[str, Any]:
    """The staging of the slot sums (passes/rotation_keys.py) against the rotate-and-add tree:
    radices, rotations (key products) per sum, keys and estimated seconds per ciphertext."""
    sums = [o for o in program.block.ops if isinstance(o, ckks.SumSlotsOp) and o.axis_value is None]
    if not sums:
        return {}
    u = Units(params.log_n)
    base, special = len(params.output_moduli), len(params.special_moduli)

    def seconds(radices: Sequence[int]) -> float:
        return sum(
            plan_seconds(u, base + ckks.ct_type(s.input).level_value, special, params.dnum, radices)
            for s in sums
        )

    radices = sums[0].radix_values or tree(params.slots)
    plan, full = SumPlan(radices, seconds(radices)), SumPlan(tree(params.slots), 0.0)
    return {
        "sum_plan": {
            "radices": list(plan.radices),
            "rotations": plan.key_switches,
            "keys": plan.keys,
            "seconds": plan.seconds,
            "tree_rotations": full.key_switches,
            "tree_keys": full.keys,
            "tree_seconds": seconds(full.radices),
            "sums": len(sums),
            "key_bytes_each": one_key,
        }
    }


def build_report(
    program: ckks.ProgramOp,
    sizes: Mapping[str, int],
    passes: Sequence[PassChange],
    depth_before: Mapping[str, int] | None = None,
    threads: int = 0,
) -> dict[str, Any]:
    """`threads`: the server's threads the memory figure is for (0: this machine's cores)."""
    threads = threads or os.cpu_count() or 1
    params = program.parameters()
    if params is None:
        raise InternalError("report: the program has no parameters")
    bounds = program.params()
    run_sizes = {k: sizes.get(k, v) for k, v in bounds.items()}
    model = NoiseModel(params.log_n, max(params.dnum, 1))
    ranges = value_ranges(program, bounds)
    failure_log2 = error_failure_log2(program)
    precision = {p.name: p for p in output_precision(program, bounds, model, ranges, failure_log2)}
    depth = ckks_depth(program)
    products = ciphertext_products(program)
    rescales = _rescales_on_path(program)
    group = program.primes_per_level_value()
    outputs = []
    public = public_values(program, bounds)
    for d in program.decrypts():
        ty = ckks.ct_type(d.input)
        if d.digit_value is not None:
            outputs.append(_count_output(d, params.insecure))
            continue
        r = range_of(ranges, d.input)
        if d.factor is not None:
            r = r * public[d.factor].interval  # the coordinator's factor scales value and error
        p = precision[d.sym_value]
        error = p.error_bound * (magnitude(r) / p.bound if p.bound else 1.0)
        # The output is a float64: its own rounding (2^-53 of the value) caps what any bound
        # can promise at OUTPUT_BITS bits of the range, whatever the HE error.
        error = max(error, magnitude(r) * 2.0**-OUTPUT_BITS)
        bits, flooded = (
            min(b, OUTPUT_BITS) for b in (p.precision_bits, p.flooded_precision_bits())
        )
        # Relative to the value itself: at least log2(min|v| / error) bits when the range is
        # bounded away from 0; none can be promised when the range contains 0.
        low = 0.0 if r.lo <= 0.0 <= r.hi else min(abs(r.lo), abs(r.hi))
        relative = math.log2(low / error) if low > 0.0 and 0.0 < error < math.inf else None
        outputs.append(
            {
                "name": d.sym_value,
                "shape": format_shape(ty.dims),
                "layout": ty.layout_name,
                "depth": depth[d.sym_value],
                "multiplications": products[d.sym_value],
                # multiplicative levels: composite scaling drops `group` primes per level
                "levels": rescales.get(d.input, 0) // group,
                "level": ty.level_value,
                "degree": ty.degree_value,
                "scale_bits": round(ty.scale_bits, 3),
                "range": [r.lo, r.hi],
                "precision_bits": round(bits, 2),
                # after the decrypt role's noise flooding (compiler/analysis/flooding.py)
                "flooded_precision_bits": round(flooded, 2),
                "limited_by_float64": p.precision_bits > OUTPUT_BITS,
                "error_bound": error,
                "relative_precision_bits": None if relative is None else round(relative, 2),
                "failure_log2": failure_log2,
                "public_factor": d.factor is not None,
                "insecure": params.insecure,
            }
        )
    key_level = max(
        (
            ckks.ct_type(o.operands[0]).level_value
            for o in program.block.ops
            if isinstance(o, ckks.KEY_SWITCH_OPS)
        ),
        default=0,
    )
    rotations = list(program.rotation_keys() or ())
    relin = needs_relin_key(program)
    conjugation = needs_conjugation_key(program)
    one_key = key_bytes(params, key_level)
    n_keys = len(rotations) + int(relin) + int(conjugation)
    party = party_sizes(program, params, run_sizes)
    bytes_of: dict[SSAValue, int] = {
        r: ciphertext_bytes(params, r.type.level_value, r.type.degree_value)
        for op in program.block.ops
        for r in op.results
        if isinstance(r.type, ckks.CtType)
    }
    memory = server_memory(program, run_sizes, params.slots, bytes_of, n_keys * one_key, threads)
    # The process's own resident set as the cost profile in use measured it.
    memory = replace(memory, baseline=active().runtime_baseline_bytes)
    people = sorted(str(a) for a in individual_axes(program))
    reveals = []
    for d in program.decrypts():
        ty = ckks.ct_type(d.input)
        per_person = bool(ty.dims) and ty.dims[0] in individual_axes(program)
        reveals.append(
            {
                "name": d.sym_value,
                "shape": "scalar" if d.is_scalar_digit else format_shape(ty.dims),
                "depends_on": sorted(_inputs_of(d.input)),
                "per_individual": per_person,
                "learned_by": "coordinator",
            }
        )
    top = len(params.moduli)
    return {
        "schema_version": SCHEMA_VERSION,
        "program": program.sym_name.data,
        "size_binding": run_sizes,
        "params": {
            "log_n": params.log_n,
            "slots": params.slots,
            "moduli_bits": _bits(params.output_moduli + params.moduli),
            "output_moduli_bits": _bits(params.output_moduli),
            "rescale_moduli_bits": _bits(params.moduli),
            "special_moduli_bits": _bits(params.special_moduli),
            "primes": len(params.output_moduli) + len(params.moduli),
            "chain_levels": top + 1,
            "primes_per_level": group,
            "dnum": params.dnum,
            "log_qp": round(params.log_qp, 2),
            "security_bits": params.security_bits,
            "insecure": params.insecure,
        },
        "outputs": outputs,
        "counts": {
            "static": static_counts(program, params.slots),
            "executed": executed_counts(program, run_sizes, params.slots),
        },
        "keys": {
            "relinearization": relin,
            "rotations": rotations,
            "conjugation": conjugation,
            "key_level": key_level,
            "eval_key_bytes": n_keys * one_key,
            **_sum_plan(program, params, one_key),
        },
        "sizes": {
            "ciphertext_top_level": ciphertext_bytes(params, top),
            "upload_per_individual": party.upload_per_individual,
            "upload_other": party.upload_other,
            "server_working_set": party.server_working_set,
            "server_memory": _memory_dict(memory, threads),
            "download": party.download,
            "individual_axes": people,
        },
        "passes": [
            {"name": p.name, "changed": {k: list(v) for k, v in p.changed.items()}} for p in passes
        ],
        "stat_depth_before": dict(depth_before or {}),
        "reveals": reveals,
        "exact_outputs": [o["name"] for o in outputs if o.get("exact")],
        "flooding": {
            # decrypt adds Gaussian noise to every inexact revealed value; the precision it
            # costs is stated, not bought back by larger parameters (TODO(#25)).
            "statistical_bits": DEFAULT_STATISTICAL_BITS,
            "reveal_budget_log2": REVEAL_BUDGET_LOG2,
            "cost_bits": round(flooding_cost_bits(), 2),
            "flooded_outputs": [o["name"] for o in outputs if not o.get("exact")],
        },
        "owner_side": _owner_side(program),
    }


def _count_output(d: ckks.DecryptOp, insecure: bool) -> dict[str, Any]:
    """A packed count (coeff layout): an exact integer in [0, radix - 1]; the rounding that
    makes it exact fails with probability below 2^FAILURE_LOG2 per coefficient."""
    enc = d.input.owner
    while not isinstance(enc, ckks.EncryptOp):
        assert isinstance(enc, Operation)
        enc = enc.operands[0].owner
    src = enc.source()
    k = d.digit_value
    assert k is not None
    radix = src.radix_values[k]
    ty = ckks.ct_type(d.input)
    return {
        "name": d.sym_value,
        "shape": "scalar" if d.is_scalar_digit else format_shape(ty.dims),
        "layout": ty.layout_name,
        "depth": 0,
        "multiplications": 0,
        "levels": 0,
        "level": ty.level_value,
        "degree": ty.degree_value,
        "scale_bits": round(ty.scale_bits, 3),
        "range": [0.0, float(radix - 1)],
        "precision_bits": round(math.log2(radix), 2),
        "public_factor": False,
        "insecure": insecure,
        "exact": True,
        "failure_log2": FAILURE_LOG2,
        "packed_digit": k,
        "owner_expression": src.digit_exprs[k],
    }


def _owner_side(program: ckks.ProgramOp) -> list[dict[str, Any]]:
    """What the data owners compute on their own rows before encrypting."""
    out: list[dict[str, Any]] = []
    for enc in program.encrypts():
        src = enc.source()
        if src.expr_value is not None:
            out.append({"array": src.sym_value, "computes": [src.expr_value], "packed": False})
        elif src.digit_exprs:
            out.append(
                {
                    "array": src.sym_value,
                    "computes": list(src.digit_exprs),
                    "packed": True,
                    "radices": list(src.radix_values),
                    "columns_per_coefficient": src.group_value,
                }
            )
    return out


def _bfv_memory(
    program: bfv.ProgramOp, params: bfv.Parameters, sizes: Mapping[str, int], threads: int
) -> dict[str, Any]:
    """The BFV server's peak memory under its streaming schedule (compiler/analysis/streaming.py),
    as for CKKS: one residue computation at a time (a CRT's residues run one after another)."""
    n = 1 << params.log_n
    bytes_of: dict[SSAValue, int] = {
        r: (r.type.degree_value + 1) * (r.type.level_value + 1) * n * 8
        for op in program.block.ops
        for r in op.results
        if isinstance(r.type, he.CtType)
    }
    primes = len(params.moduli) + len(params.special_moduli)
    one_key = max(params.dnum, 1) * 2 * n * primes * 8
    relin = any(isinstance(o, bfv.RelinearizeOp) for o in program.block.ops)
    n_keys = len(list(program.rotation_keys() or ())) + int(relin)
    memory = server_memory(
        program,
        sizes,
        params.slots,
        bytes_of,
        n_keys * one_key,
        threads,
        dot_scratch=_bfv_dot_scratch(params),
        dot_slices=True,
    )
    memory = replace(memory, baseline=active().runtime_baseline_bytes)
    return _memory_dict(memory, threads)


def _bfv_dot_scratch(params: bfv.Parameters) -> int:
    """The bytes one thread holds while BFV's DotSink folds a row (runtime/bfv/multiply.cpp):
    the HPS multiply's scratch (the four operand polynomials and the three of the tensor over
    Q u P_mult, a coefficient copy over Q) and the degree-2 product over Q. P_mult has the
    primes below 2^50 that cover log2(Q t N) + 3 bits (runtime/bfv/context.cpp)."""
    n = 1 << params.log_n
    k = len(params.moduli)
    log_q = sum(math.log2(q) for q in params.moduli)
    aux = math.ceil((log_q + params.log_t + params.log_n + 3.0) / 49.99)
    return ((4 + 3) * (k + aux) + k + 3 * k) * n * 8


def build_bfv_report(
    program: bfv.ProgramOp,
    sizes: Mapping[str, int],
    passes: Sequence[PassChange],
    threads: int = 0,
) -> dict[str, Any]:
    """The report of a bfv compilation: parameters (with the plaintext modulus and why), each
    output's range and noise budget (exact while the budget is positive), bytes, the server's
    peak memory at `threads` (0: this machine's cores), passes."""
    threads = threads or os.cpu_count() or 1
    params = program.parameters()
    if params is None:
        raise InternalError("report: the program has no parameters")
    bounds = program.params()
    run_sizes = {k: sizes.get(k, v) for k, v in bounds.items()}
    ranges = value_ranges(program, bounds)
    ring = Ring(
        log_n=params.log_n,
        log_t=params.log_t,
        q_bits=tuple(math.log2(q) for q in params.moduli),
        p_bits=tuple(math.log2(q) for q in params.special_moduli),
        dnum=params.dnum,
    )
    budgets = decrypt_budgets(program, ring, bounds)
    largest = max(
        (magnitude(r) for v, r in ranges.items() if isinstance(v.type, he.CtType)), default=0.0
    )
    products = ciphertext_products(program)
    outputs = [
        {
            "name": d.sym_value,
            "shape": format_shape(he.ct_type(d.input).dims),
            "layout": he.ct_type(d.input).layout_name,
            "multiplications": products[d.sym_value],
            "degree": he.ct_type(d.input).degree_value,
            "range": [ranges[d.input].lo, ranges[d.input].hi],
            "noise_budget_bits": round(budgets[d.sym_value], 1),
            "public_factor": d.factor is not None,
            "exact": True,
        }
        for d in program.decrypts()
    ]
    return {
        "program": program.sym_name.data,
        "size_binding": run_sizes,
        "params": {
            "scheme": "bfv",
            "log_n": params.log_n,
            "slots": params.slots,
            "plain_moduli": list(params.plain_moduli),
            "plain_moduli_bits": [round(math.log2(t), 2) for t in params.plain_moduli],
            "residues": params.residues,
            "largest_value": largest,
            "primes": len(params.moduli),
            "moduli_bits": _bits(params.moduli),
            "special_moduli_bits": _bits(params.special_moduli),
            "dnum": params.dnum,
            "log_qp": round(params.log_qp, 1),
            "security_bits": params.security_bits,
            "insecure": params.insecure,
        },
        "outputs": outputs,
        "keys": {
            "relinearization": any(isinstance(o, bfv.RelinearizeOp) for o in program.block.ops),
            "rotations": list(program.rotation_keys() or ()),
        },
        "sizes": {"server_memory": _bfv_memory(program, params, run_sizes, threads)},
        "passes": [{"name": c.name, "changed": c.changed} for c in passes],
    }


def _memory_text(m: Mapping[str, Any]) -> str:
    how = (
        f"streams the rows: accumulators {_mib(m['accumulators'])}, one chunk of rows "
        f"{_mib(m['chunk'])}, global values {_mib(m['globals'])}"
        if m["streamed"]
        else f"holds every array at once: {_mib(m['globals'])}"
    )
    if m.get("outputs"):
        how += f", revealed values held until written {_mib(m['outputs'])}"
    if m.get("scratch"):
        how += f", multiply scratch {_mib(m['scratch'])}"

    return (
        f"server memory at {m['threads']} threads: {_mib(m['total'])} at its peak (the server "
        f"{how}, evaluation keys {_mib(m['keys'])}, runtime {_mib(m['baseline'])})"
    )


def _plain_text(p: Mapping[str, Any]) -> str:
    """The plaintext modulus (or the CRT over several) and why."""
    within = f"every value of the program lies within +-{p['largest_value']:g}"
    if p["residues"] == 1:
        return (
            f"plaintext modulus t = {p['plain_moduli'][0]} ({p['plain_moduli_bits'][0]} bits: "
            f"{within} < t/2)"
        )
    bits = sum(math.log2(t) for t in p["plain_moduli"])
    return (
        f"CRT over {p['residues']} plaintext moduli t = {p['plain_moduli']} (bits "
        f"{p['plain_moduli_bits']}, product {bits:.1f} bits: {within} < T/2, beyond one "
        f"prime below 2^60), so the program runs {p['residues']} times: time and bytes "
        f"x{p['residues']}"
    )


def render_bfv_text(report: Mapping[str, Any]) -> str:
    p = report["params"]
    sec = "INSECURE (--insecure)" if p["insecure"] else f"{p['security_bits']}-bit secure"
    lines = [
        f"program {report['program']}  sizes {report['size_binding']}  scheme bfv (exact)",
        f"parameters: n = 2^{p['log_n']} ({p['slots']} slots), {_plain_text(p)}, "
        f"{p['primes']} primes {p['moduli_bits']}, "
        f"special {p['special_moduli_bits']}, dnum {p['dnum']}, log2 QP = {p['log_qp']}: {sec} "
        "(HE Standard, ternary secret)",
        "outputs (exact integers while the noise budget is positive):",
    ]
    for o in report["outputs"]:
        factor = ", times a public factor after decryption" if o["public_factor"] else ""
        lines.append(
            f"  {o['name']:<12} {o['shape']:<8} mults {o['multiplications']}  "
            f"degree {o['degree']}  range "
            f"[{o['range'][0]:g}, {o['range'][1]:g}]  noise budget {o['noise_budget_bits']} "
            f"bits{factor}"
        )
    keys = report["keys"]
    lines.append(
        f"keys: relinearization {'yes' if keys['relinearization'] else 'no'}, rotations "
        f"{keys['rotations'] or 'none'}"
    )
    lines.append(_memory_text(report["sizes"]["server_memory"]))
    lines += render_cost(report)
    lines += _render_bitslice(report)
    lines.append("passes:")
    for ps in report["passes"]:
        changes = ", ".join(f"{k} {a}->{b}" for k, (a, b) in ps["changed"].items())
        lines.append(f"  {ps['name']:<22} {changes or 'no change'}")
    return "\n".join(lines) + "\n"


def _render_bitslice(report: Mapping[str, Any]) -> list[str]:
    """An integer program's BFV bit slices (driver/bitslices.py)."""
    b = report.get("bitslice")
    if not b:
        return []
    lines = [
        f"bit slices (one bit of {b['slots']} elements per ciphertext; {b['elements']} elements, "
        f"{b['batches']} batch{'es' if b['batches'] > 1 else ''}):",
        f"  circuit: depth {b['circuit_depth']}, {b['circuit_products']} products; compiled "
        f"program: depth {b['compiled_depth']}, {b['compiled_products']} ciphertext products",
    ]
    for op in b["operations"]:
        seed = f" (seed's GF(2) construction: depth {op['seed_depth']})" if op["seed_depth"] else ""
        lines.append(
            f"  line {op['line']}:{op['column']} {op['op']} of {op['width']} bits: "
            f"{op['generator']}, depth {op['depth']}, {op['products']} products{seed}"
        )
    lines.append(
        f"  estimated time (one core): {b['compute_seconds']:.3g} s, "
        f"{b['seconds_per_element'] * 1e3:.3g} ms per element, "
        f"{b['seconds_per_slot_full_batch'] * 1e3:.3g} ms per slot of a full batch; the seed's "
        "HElib times: " + ", ".join(f"{k} {v}" for k, v in b["seed_times"].items())
    )
    f = b["fhew"]
    if "unavailable" in f:
        lines.append(f"  fhew: cannot run this program ({f['unavailable']})")
    else:
        lines.append(f"  bfv or fhew: {f['faster']} is faster: {f['reason']}")
    return lines


def render_cost(report: Mapping[str, Any]) -> list[str]:
    """The cost model's estimate, and under --scheme auto every scheme's side by side."""
    lines: list[str] = []
    schemes = report.get("schemes") or {report.get("scheme", "ckks"): report.get("cost")}
    if not any(schemes.values()):
        return lines
    lines.append(
        f"  {'estimated':<10} {'n':>6} {'limbs':>5} {'encrypt s':>10} {'compute s':>10} "
        f"{'upload':>12} {'download':>12}"
    )
    for name, c in schemes.items():
        if c is None:
            continue
        if "unavailable" in c:
            lines.append(f"  {name:<10} cannot run the program: {c['unavailable']}")
            continue
        labeled = c.get("scheme") == "labhe"  # no ring dimension or limbs
        lines.append(
            f"  {name:<10} {'-' if labeled else '2^' + str(c['log_n']):>6} "
            f"{'-' if labeled else c['limbs']:>5} "
            f"{c['encrypt_seconds']:>10.3g} {c['compute_seconds']:>10.3g} "
            f"{_mib(c['upload_bytes']):>12} {_mib(c['download_bytes']):>12}"
            + (
                f"  ({c['residues']} residue computations, x{c['residues']} counted)"
                if c.get("residues", 1) > 1
                else ""
            )
        )
    if report.get("scheme_choice"):
        lines.append(f"scheme chosen: {report['scheme_choice']}")
    return ["cost model (compiler/analysis/cost.py; one core):", *lines, *render_profile(report)]


def render_profile(report: Mapping[str, Any]) -> list[str]:
    """Which cost profile the estimates used (compiler/analysis/profile.py)."""
    p = report.get("profile")
    if not p:
        return []
    if p["source"] == "default":
        text = (
            "the shipped default (hand-measured constants; `hec calibrate` measures this machine)"
        )
    else:
        load = ", load " + "/".join(f"{x:g}" for x in p["load"]) if p["load"] else ""
        text = f"{p['source']} (measured {p['created']} on {p['cpu']}{load})"
    lines = [f"cost profile: {text}"]
    if p.get("note"):
        lines.append(f"  {p['note']}")
    if p.get("stale"):
        lines.append(f"  {p['stale']}")
    return lines


def _chain_cost_text(cost: Mapping[str, int] | None) -> str:
    if cost is None:
        return "cannot be lowered"
    return (
        f"depth {cost['depth']}, key switches {cost['key_switches']}, ct mults "
        f"{cost['ct_mults']}, pt mults {cost['pt_mults']}, upload {_mib(cost['bytes'])}"
    )


def render_heir_comparison(comparison: Mapping[str, Any]) -> list[str]:
    """`heir_comparison` (hec report --compare-heir): hec's executed ciphertext ops next to
    HEIR's for the same program and sizes, or HEIR's error when it cannot compile it."""
    sizes = ",".join(f"{k}={v}" for k, v in comparison["sizes"].items())
    ours, theirs = comparison["hec"], comparison["heir"]
    lines = [
        f"hec vs HEIR (heir-opt --mlir-to-ckks, heir-py {comparison['heir_version']}) at {sizes}:"
    ]
    if not theirs["compiled"]:
        who = "HEIR cannot compile it" if theirs["by"] == "heir-opt" else "not compared"
        lines.append(f"  {who}: {theirs['error']}")
        return lines
    lines.append(f"  {'executed':<12} {'hec':>10} {'HEIR':>10}")
    for key, ours_count in ours["counts"].items():
        lines.append(f"  {key:<12} {ours_count:>10} {theirs['counts'].get(key, 0):>10}")
    lines.append(
        f"  {'ring':<12} {'2^' + str(ours['log_n']):>10} {'2^' + str(theirs['log_n']):>10}"
    )
    lines.append(f"  {'levels':<12} {ours['levels']:>10} {theirs['levels']:>10}")
    return lines


def _render_grid(report: Mapping[str, Any]) -> list[str]:
    """The grid layout (docs/layout.md; passes/lower_stat_to_he.py): the (R, C) chosen, every
    shape weighed with its cost, and the layout of each input and revealed value."""
    g = report.get("grid")
    if not g:
        return []
    cols = g.get("columns", g["slots_assumed"] // g["rows"])
    corner = " (the packed and replicated layouts)" if g["rows"] == 1 else ""
    lines = [
        f"grid layout: R = {g['rows']} rows x C = {cols} columns{corner}; shapes weighed at "
        f"{g['slots_assumed']} slots (depth, then key switches, then ct mults, then uploads):"
    ]
    for c in g["candidates"]:
        mark = "chosen  " if c["rows"] == g["rows"] else "rejected"
        if "unavailable" in c:
            lines.append(f"  {mark} R = {c['rows']:<5} {c['unavailable']}")
            continue
        lines.append(
            f"  {mark} R = {c['rows']:<5} C = {c['columns']:<6} depth {c['depth']}  key switches "
            f"{c['key_switches']} (rotations {c['rotations']})  ct mults {c['products']}  "
            f"uploads {c['uploads']} ciphertexts"
        )
    for name, layout in (g.get("layouts") or {}).items():
        lines.append(f"  {name:<12} {layout}")
    return lines


def _render_diagonal(report: Mapping[str, Any]) -> list[str]:
    """The diagonal method's matrix-vector products (driver/pipeline.py: diagonal_report)."""
    d = report.get("diagonal")
    if not d:
        return []
    lines = [f"matrix-vector products by the diagonal method (Halevi-Shoup, {d['slots']} slots):"]
    for p in d["products"]:
        r = p["rejected"]
        rows, cols = p["shape"]
        lines.append(
            f"  line {p['location']} [{rows} x {cols}] @ [{cols}]: {p['matrix_layout']} x "
            f"{p['vector_layout']} -> {p['result_layout']}; baby step {p['baby_step']}, "
            f"{p['giant_steps']} giant steps: key switches {p['key_switches']} (rotations "
            f"{p['rotations']}), ct mults {p['ct_mults']}"
        )
        lines.append(
            f"    rejected {r['method']}: key switches {r['key_switches']} (rotations "
            f"{r['rotations']}), ct mults {r['ct_mults']}"
        )
    for c in d.get("conversions", []):
        cost = (
            f"{c['rotations']} rotate-and-adds"
            if c["rotations"]
            else "a mask (one plaintext product, one level)"
        )
        lines.append(f"  line {c['location']} conversion {c['from']} -> {c['to']}: {cost}")
    for name, layout in d["layouts"].items():
        lines.append(f"  {name:<12} {layout}")
    return lines


def _render_chains(report: Mapping[str, Any]) -> list[str]:
    """Matrix-chain ordering (passes/matrix_chain_ordering.py): per chain the order chosen
    and the order written, each with its HE cost (compiler/analysis/matrix_chain.py)."""
    chains = report.get("matrix_chains") or []
    if not chains:
        return []
    lines = [
        f"matrix chains (HE cost at {chains[0]['slots']} slots: depth, then key switches, "
        "then ct mults, then bytes):"
    ]
    for c in chains:
        verdict = "reordered" if c["chosen_order"] != c["source_order"] else "kept"
        lines.append(f"  line {c['location']} ({c['layout']} result): {verdict}")
        lines.append(f"    chosen  {c['chosen_order']}: {_chain_cost_text(c['chosen_cost'])}")
        lines.append(f"    source  {c['source_order']}: {_chain_cost_text(c['source_cost'])}")
    return lines


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def render_text(report: Mapping[str, Any]) -> str:
    if report.get("scheme") == "bfv":
        return render_bfv_text(report)
    p = report["params"]
    lines = [f"program {report['program']}  sizes {report['size_binding']}"]
    sec = "INSECURE (--insecure)" if p["insecure"] else f"{p['security_bits']}-bit secure"
    lines.append(
        f"parameters: n = 2^{p['log_n']} ({p['slots']} slots), {p['primes']} primes "
        f"{p['moduli_bits']} (output modulus {p['output_moduli_bits']}, rescale "
        f"{p['rescale_moduli_bits']}), special {p['special_moduli_bits']}, dnum {p['dnum']}, "
        f"log2 QP = {p['log_qp']}: {sec} (HE Standard, ternary secret)"
    )
    if p.get("primes_per_level", 1) > 1:
        lines.append(
            f"composite scaling: {p['primes_per_level']} rescale primes per level "
            "(docs/precision.md): a level's scale spans that many primes' bits, more than one "
            "prime holds; the levels below count levels, not primes"
        )
    lines.append("outputs:")
    for o in report["outputs"]:
        factor = ", times a public factor after decryption" if o["public_factor"] else ""
        if o["insecure"]:
            factor += "  [INSECURE PARAMETERS]"
        if o.get("exact"):
            lines.append(
                f"  {o['name']:<12} {o['shape']:<8} depth 0  exact integer count in "
                f"[0, {int(o['range'][1])}] (packed digit {o['packed_digit']}: "
                f"{o['owner_expression']}; rounding fails with probability < "
                f"2^{int(o['failure_log2'])} per coefficient){factor}"
            )
            continue
        lines.append(
            f"  {o['name']:<12} {o['shape']:<8} depth {o['depth']}  "
            f"mults {o['multiplications']}  levels {o['levels']}  degree {o['degree']}  "
            f"scale 2^{o['scale_bits']}  precision "
            f"{o['precision_bits']} bits (|error| <= {o['error_bound']:.3g}, failing with "
            f"probability 2^{o['failure_log2']:g}; {o['flooded_precision_bits']} bits with "
            f"flooding{'; capped at the float64 output' if o.get('limited_by_float64') else ''})"
            f"{factor}"
        )
        rel = o.get("relative_precision_bits")
        lines.append(
            f"  {'':<12} relative to the value: at least {rel} bits"
            if rel is not None
            else f"  {'':<12} relative to the value: none promised: the range "
            f"[{o['range'][0]:.4g}, {o['range'][1]:.4g}] contains 0, so a value v keeps "
            f"log2(|v| / {o['error_bound']:.3g}) bits (a small value, e.g. a centred moment "
            "or a difference, may keep none)"
        )
    fl = report["flooding"]
    if fl["flooded_outputs"]:
        lines.append(
            f"flooding: decrypt adds Gaussian noise to {', '.join(fl['flooded_outputs'])} "
            f"({fl['statistical_bits']}-bit statistical security for up to "
            f"2^{fl['reveal_budget_log2']} values revealed under one key), costing "
            f"{fl['cost_bits']} bits of precision; `decrypt --no-flooding` (single-party use: "
            "hec run and hec gwas, which delete the result ciphertexts) keeps it"
        )
    st, ex = report["counts"]["static"], report["counts"]["executed"]
    lines.append(f"  {'counts':<12} {'static':>10} {'executed':>14}")
    for k in st:
        lines.append(f"  {k:<12} {st[k]:>10} {ex[k]:>14}")
    keys = report["keys"]
    lines.append(
        f"keys: relinearization {'yes' if keys['relinearization'] else 'no'}, rotations "
        f"{keys['rotations'] or 'none'}, conjugation {'yes' if keys['conjugation'] else 'no'}, "
        f"evaluation keys {_mib(keys['eval_key_bytes'])} (over Q_{keys['key_level']}·P)"
    )
    if keys.get("sum_plan"):
        sp = keys["sum_plan"]
        lines.append(
            f"slot sums: stages {' x '.join(str(r) for r in sp['radices'])} (doubly hoisted): "
            f"{sp['rotations']} rotations and {sp['keys']} keys of "
            f"{_mib(sp['key_bytes_each'])} per sum, est. {sp['seconds'] * 1e3:.3g} ms over "
            f"the program's {sp['sums']} sum(s); rotate-and-add tree: {sp['tree_rotations']} "
            f"rotations, {sp['tree_keys']} keys, est. {sp['tree_seconds'] * 1e3:.3g} ms"
        )
    s = report["sizes"]
    lines.append(
        f"ciphertext bytes: upload per individual {_mib(s['upload_per_individual'])}, other "
        f"uploads {_mib(s['upload_other'])}, download {_mib(s['download'])}"
    )
    lines.append(_memory_text(s["server_memory"]))
    if report.get("owner_side"):
        lines.append("computed by each data owner on its own rows, before encryption:")
        for o in report["owner_side"]:
            how = (
                f"packed into one integer per coefficient, {o['columns_per_coefficient']} "
                f"column(s) per coefficient, radices {o['radices']}"
                if o["packed"]
                else "encrypted as an input"
            )
            lines.append(f"  {o['array']}: {', '.join(o['computes'])} ({how})")
    lines += _render_grid(report)
    lines += _render_diagonal(report)
    lines += _render_chains(report)
    lines += render_cost(report)
    if "heir_comparison" in report:
        lines += render_heir_comparison(report["heir_comparison"])
    lines.append("passes:")
    for ps in report["passes"]:
        changes = ", ".join(f"{k} {a}->{b}" for k, (a, b) in ps["changed"].items())
        lines.append(f"  {ps['name']:<22} {changes or 'no change'}")
    lines.append("the coordinator learns:")
    for r in report["reveals"]:
        who = "one value per individual" if r["per_individual"] else "aggregates"
        lines.append(f"  {r['name']} {r['shape']} ({who}) from {', '.join(r['depends_on'])}")
    return "\n".join(lines) + "\n"
