"""The report's section for an integer program compiled to BFV bit slices (dsl/bitslice.py):
each operation's circuit and its depth next to the seed's GF(2) constructions, the compiled
program's multiplicative depth, the time per element and per slot, and whether FHEW would run
the same program faster at this many elements (issue 23)."""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compiler.analysis.depth import ciphertext_products, product_depth
from compiler.circuits import arith
from compiler.circuits.generators import seed_multiplier_depth_bound
from compiler.errors import UserError
from dsl import ast
from dsl.bitslice import lower_bitslice
from dsl.lower import program_name

if TYPE_CHECKING:
    from driver.pipeline import Compilation, Options
    from dsl.checker import CheckedProgram

# The seed's HElib timings (H. Chen's slides, single thread), as the issue quotes them.
SEED_TIMES = {"16-bit CLA addition": "2.53 s", "16-bit multiplication": "21-46 s"}


def seed_depth(op: str, width: int) -> int | None:
    """The seed's GF(2) depth for the operation: its carry-lookahead adder (16 bits: 7, 64
    bits: 11) and its multiplier formula 1 + d + ceil(log2(n + d + 2)), d = ceil(log_1.5 n)."""
    if op == "add":
        return arith.seed_cla_depth(width)
    if op == "mul":
        return seed_multiplier_depth_bound(width)
    return None


def bitslice_report(comp: Compilation) -> dict[str, Any]:
    from driver.pipeline import cost_of

    _, info = lower_bitslice(comp.checked, program_name(comp.checked.source.filename))
    program = comp.bfv_program
    params = program.parameters()
    assert params is not None
    slots = params.slots
    elements = elements_of(comp)
    ops = []
    for ch in info.choices:
        choice = arith.choose(ch.op, ch.width)
        ops.append(
            {
                "op": ch.op,
                "width": ch.width,
                "line": ch.line,
                "column": ch.column,
                "generator": ch.generator,
                "depth": choice.cost.depth,
                "products": choice.cost.products,
                "seed_depth": seed_depth(ch.op, ch.width),
                "reason": ch.reason,
            }
        )
    cost = cost_of(comp)
    batches = max(1, math.ceil(elements / slots))
    out: dict[str, Any] = {
        "circuit_depth": info.depth,
        "circuit_products": info.products,
        "compiled_depth": max(product_depth(program).values(), default=0),
        "compiled_products": sum(1 for op in program.block.ops if op.name == "bfv.mul"),
        "products_by_output": ciphertext_products(program),
        "operations": ops,
        "elements": elements,
        "slots": slots,
        "batches": batches,
        "compute_seconds": cost.compute_s,
        "seconds_per_element": cost.compute_s / max(1, elements),
        "seconds_per_slot_full_batch": cost.compute_s / (batches * slots),
        "seed_times": SEED_TIMES,
    }
    out["fhew"] = fhew_comparison(comp)
    return out


def elements_of(comp: Compilation) -> int:
    """Elements the program runs on at the compiled sizes (the arrays' common shape)."""
    from driver.pipeline import sizes_for_run

    sizes = sizes_for_run(comp)
    for stmt in comp.checked.program.statements:
        shape = comp.checked.bindings[stmt.name].ty.shape if isinstance(stmt, ast.InputDecl) else ()
        if shape:
            return math.prod(int(sizes.get(d, 1)) if isinstance(d, str) else d for d in shape)
    return 1


def fhew_comparison(comp: Compilation) -> dict[str, Any]:
    """The same program on FHEW at this many elements, one thread like the BFV estimate, and
    the element count where the two cross (BFV's time grows by batches of `slots`, FHEW's with
    every element): the cost model's choice between them, and why."""
    from driver.fhew import compile_fhew
    from driver.pipeline import cost_of

    bfv_seconds = cost_of(comp).compute_s
    elements = elements_of(comp)
    params = comp.bfv_program.parameters()
    assert params is not None
    batches = max(1, math.ceil(elements / params.slots))
    try:
        fhew = compile_fhew(comp.checked, replace(comp.options, scheme="fhew"))
    except UserError as e:
        return {"unavailable": e.message}
    fhew_seconds = fhew.estimate(threads=1).seconds
    per_element = fhew_seconds / max(1, elements)
    per_batch = bfv_seconds / batches
    crossover = math.ceil(per_batch / per_element) if per_element > 0 else None
    choice = "bfv" if bfv_seconds < fhew_seconds else "fhew"
    reason = (
        f"at {elements} elements BFV bit slices take {bfv_seconds:.3g} s ({batches} batch"
        f"{'es' if batches > 1 else ''} of {params.slots} slots) and "
        f"FHEW {fhew_seconds:.3g} s ({per_element:.3g} s per element); "
        + (
            "BFV is faster even for one element"
            if crossover is not None and crossover <= 1
            else f"BFV is faster from about {crossover} elements on"
        )
    )
    return {
        "seconds": fhew_seconds,
        "bootstraps_per_element": fhew.metrics.bootstraps,
        "crossover_elements": crossover,
        "faster": choice,
        "reason": reason,
    }


def choose_integer_scheme(checked: CheckedProgram, options: Options) -> tuple[str, str]:
    """`--scheme auto` on an integer program: "bfv" (bit slices) or "fhew" by the cost model's
    server time at the options' sizes, and why."""
    from driver.pipeline import run_pipeline

    try:
        comp = run_pipeline(checked, replace(options, scheme="bfv"), out=io.StringIO())
    except UserError as e:
        return "fhew", f"BFV bit slices cannot run it: {e.message}"
    f = fhew_comparison(comp)
    if "unavailable" in f:
        return "bfv", f"FHEW cannot run it: {f['unavailable']}"
    return str(f["faster"]), str(f["reason"])


__all__ = ["bitslice_report", "choose_integer_scheme", "fhew_comparison", "seed_depth"]
