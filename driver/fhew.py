"""The FHEW driver (`--scheme fhew`): compile, report and run integer and Boolean programs as
FHEW gate programs (docs/circuits.md).

Beside the CKKS pipeline (driver/pipeline.py), as the labeled-HE driver is: the checked program
is lowered to one Boolean circuit per element (dsl/circuit.py, generators chosen per operation
for the fewest bootstraps), cleaned, optimized by ABC and kept only when ABC's `cec` proves it
equivalent and it is cheaper (compiler/circuits/abc.py), held as a `bool` dialect module (one
`bool.circuit` with the program's word names and element types, compiler/dialects/boolean.py),
and the netlist read back from that module is covered by one-bootstrap cells
(compiler/circuits/metrics.fhew_cover) and written as a gate program (targets/fhew/gates.py).
The dialect comes after ABC because ABC reads and writes netlists (AIGER); what the module
holds is exactly the circuit the gate program computes (`hec compile` writes it as
NAME.bool.mlir, in the MLIR form that `mlir-opt-19` verifies against the IRDL definitions).

`hec run --scheme fhew` runs the gate program once per element, with the roles of the runtime's
`hec_fhew_gates` each in its own process and its own directory:

    keygen (coordinator: secret, evaluation and public keys)
        -> encrypt (each data owner: its own inputs under the public key, never the secret key)
        -> compute (server: the evaluation key and every owner's ciphertexts only)
        -> decrypt (coordinator)

Each input is its own data owner unless `owners` groups inputs (`--owner NAME=I`: the inputs
with one I are encrypted by one owner); an owner's directory holds the public key, its own
values and its ciphertexts (runtime/fhew/README.md, "Public-key encryption"). `--sim` runs the
same circuit in the netlist simulator instead. Parameters: GINX STD128 (128-bit, the runtime's
README), or with `--insecure` the runtime's small-n test set (for fast tests only).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import ModuleOp

from compiler.analysis.cost import FhewEstimate, fhew_compute_estimate
from compiler.circuits.abc import optimize
from compiler.circuits.bool_conversion import bool_to_circuit, circuit_to_bool
from compiler.circuits.fhew_model import FhewCost, FhewGateModel
from compiler.circuits.metrics import Metrics, fhew_cover, measure
from compiler.circuits.netlist import Circuit
from compiler.errors import UserError
from compiler.types import Shape
from driver.pipeline import Options
from driver.roles import run_role
from driver.run import Json, RunResult, infer_sizes, parse_inputs, write_outputs
from dsl.checker import CheckedProgram, IntType, check
from dsl.circuit import CircuitProgram, lower_circuit
from dsl.lower import program_name
from dsl.parser import parse_file
from dsl.reference import int_input, run_client_block
from targets.fhew.gates import gate_program
from targets.mlir.form import to_mlir

# The runtime's parameter sets (runtime/fhew/README.md): 128-bit GINX, or the insecure test set.
SECURE_PARAMS = "std128-ginx"
TOY_PARAMS = "toy-ginx"

__all__ = ["FhewCompilation", "compile_fhew", "fhew_report", "parse_inputs", "run_fhew"]


@dataclass
class FhewCompilation:
    checked: CheckedProgram
    program: CircuitProgram
    sizes: dict[str, int]
    options: Options
    circuit: Circuit  # the circuit the gate program computes (ABC's when kept), read from `ir`
    mapped: Circuit  # `circuit` as the cover maps it (the gate program's wires)
    cover: FhewCost
    metrics: Metrics
    abc: dict[str, Json]
    ir: ModuleOp  # `circuit` in the bool dialect (one verified bool.circuit)

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def params_name(self) -> str:
        return TOY_PARAMS if self.options.insecure else SECURE_PARAMS

    @property
    def gate_text(self) -> str:
        return gate_program(self.mapped, self.cover)

    @property
    def bool_text(self) -> str:
        """`ir` in the MLIR form (generic ops; targets/mlir/form.py), NAME.bool.mlir."""
        return to_mlir(self.ir)

    def estimate(self, threads: int = 0) -> FhewEstimate:
        """The compute role's estimated time at `threads` (0: this machine's cores) from the
        cost profile's measured bootstrap (compiler/analysis/cost.py)."""
        levels: dict[int, list[int]] = {}
        for cell in self.cover.cells.values():
            levels.setdefault(cell.level, []).append(cell.bootstraps)
        return fhew_compute_estimate(
            [levels[k] for k in sorted(levels)],
            self.elements(self.sizes),
            len(self.mapped.nodes),
            threads or os.cpu_count() or 1,
        )

    def elements(self, sizes: Mapping[str, int]) -> int:
        """How many times the per-element circuit runs at `sizes`."""
        shapes = [s for _, s in self.program.inputs.values() if s]
        return _count(shapes[0], sizes) if shapes else 1


def _count(shape: Shape, sizes: Mapping[str, int]) -> int:
    return math.prod(d if isinstance(d, int) else sizes[d] for d in shape)


def _concrete_sizes(checked: CheckedProgram, options: Options) -> dict[str, int]:
    for name, size in options.sizes.items():
        if name not in checked.params:
            raise UserError(
                f"--size names {name}, which is not a size parameter of the program",
                hint="size parameters: " + (", ".join(checked.params) or "none"),
            )
        if size > checked.params[name]:
            raise UserError(
                f"--size {name}={size} exceeds the program's bound {name} <= {checked.params[name]}"
            )
    return {n: options.sizes.get(n, bound) for n, bound in checked.params.items()}


def compile_fhew(checked: CheckedProgram, options: Options) -> FhewCompilation:
    """The gate program of `checked` (module docstring)."""
    sizes = _concrete_sizes(checked, options)
    program = lower_circuit(checked, program_name(checked.source.filename), "fhew")
    base = program.circuit.cleaned()
    abc: dict[str, Json]
    try:
        optimized = optimize(base, "fhew")
    except UserError as err:  # ABC is not installed: the generated circuit, unoptimized
        circuit = base
        abc = {"used": False, "skipped": err.message}
    else:
        circuit = optimized.circuit
        abc = {
            "used": optimized.used_abc,
            "verdict": optimized.verdict,
            "bootstraps_before": optimized.before.bootstraps,
            "bootstraps_after_abc": optimized.after_abc.bootstraps,
        }
    ir = circuit_to_bool(
        circuit,
        program.name,
        {name: t.name for name, (t, _) in program.inputs.items()},
        {name: t.name for name, (t, _) in program.outputs.items()},
    )
    # From here on the circuit is the dialect's: the cover maps the netlist read back from it
    # (the same nodes in the same order: bool_conversion's round trip is exact).
    circuit = bool_to_circuit(ir)
    mapped, cover = fhew_cover(circuit)
    return FhewCompilation(
        checked, program, sizes, options, circuit, mapped, cover, measure(circuit), abc, ir
    )


def compile_fhew_file(path: str | Path, options: Options) -> FhewCompilation:
    return compile_fhew(check(parse_file(str(path))), options)


def _failure_log2(weight: float) -> float | None:
    """log2 of the failure probability of one bootstrap of noise weight `weight` under GINX
    STD128 (None when the program has no bootstrap)."""
    p = FhewGateModel().failure_probability(weight) if weight > 0 else 0.0
    return round(math.log2(p), 1) if p > 0 else None


def fhew_report(comp: FhewCompilation, threads: int = 0) -> dict[str, Any]:
    """What the program costs and reveals (JSON-ready): `counts.static` per element (the gate
    program), `counts.executed` at the sizes (every element), `estimate` the compute role's
    time at `threads` (0: this machine's cores; None for the insecure toy parameters, which
    the profile did not measure)."""
    from driver.calibrate import profile_description

    m = comp.metrics
    elements = comp.elements(comp.sizes)
    linear = sum(1 for c in comp.cover.cells.values() if c.combination is not None)
    mux = len(comp.cover.cells) - linear
    static: dict[str, Any] = {
        "bootstraps": comp.cover.bootstraps,
        "bootstrap_levels": comp.cover.levels,
        "cells": {"linear": linear, "mux": mux},
        "gates": dict(m.gates),
        "gate_count": m.gate_count,
        "depth": m.depth,
        "and_count": m.and_count,
        "and_depth": m.and_depth,
    }

    def words(items: Mapping[str, tuple[IntType, Shape]]) -> dict[str, Any]:
        return {
            name: {"type": t.name, "bits": t.width, "shape": [str(d) for d in shape]}
            for name, (t, shape) in items.items()
        }

    insecure = comp.options.insecure
    return {
        "program": comp.name,
        "scheme": "fhew",
        "sizes": comp.sizes,
        "elements": elements,
        "params": {
            "name": comp.params_name,
            "security_bits": None if insecure else 128,
            "insecure": insecure,
            "max_noise_weight": round(comp.cover.max_noise_weight, 3),
            "failure_log2_per_bootstrap": _failure_log2(comp.cover.max_noise_weight),
        },
        "counts": {
            "static": static,
            "executed": {"bootstraps": comp.cover.bootstraps * elements, "elements": elements},
        },
        "inputs": words(comp.program.inputs),
        "outputs": words(comp.program.outputs),
        "operations": [
            {
                "op": c.op,
                "width": c.width,
                "at": f"{comp.checked.source.filename}:{c.line}:{c.column}",
                "generator": c.generator,
                "reason": c.reason,
            }
            for c in comp.program.choices
        ],
        "abc": comp.abc,
        "estimate": None if insecure else comp.estimate(threads).as_dict(),
        "profile": profile_description(),
        "parties": {
            "coordinator": "keygen (secret, evaluation and public keys), decrypt",
            "data owner": "encrypt its own inputs with the public key (never the secret key); "
            "by default each input is its own owner",
            "server": "compute with the evaluation key only",
        },
        "receiver_learns": sorted(comp.program.outputs),
    }


def render_fhew_text(report: Mapping[str, Any]) -> str:
    s = report["counts"]["static"]
    p = report["params"]
    lines = [
        f"program {report['program']} (fhew, {p['name']}"
        + (", INSECURE" if p["insecure"] else ", 128-bit")
        + f") at sizes {report['sizes']}: {report['elements']} element(s)",
        f"  per element: {s['bootstraps']} bootstraps in {s['bootstrap_levels']} levels "
        f"({s['cells']['linear']} one-bootstrap cells, {s['cells']['mux']} MUX cells); "
        f"{s['gate_count']} gates {s['gates']}, logic depth {s['depth']}",
        f"  all elements: {report['counts']['executed']['bootstraps']} bootstraps",
        f"  worst cell: noise weight {p['max_noise_weight']}, failure 2^"
        f"{p['failure_log2_per_bootstrap']} per bootstrap",
    ]
    est = report.get("estimate")
    if est is not None:
        lines.append(
            f"  estimated compute: {est['compute_seconds']:.3g} s at {est['threads']} thread(s) "
            f"({est['gate_seconds'] * 1e3:.3g} ms a bootstrap, cost profile "
            f"{report['profile']['source']})"
        )
    for op in report["operations"]:
        lines.append(f"  {op['at']}: {op['op']} on {op['width']} bits -> {op['generator']}")
    abc = report["abc"]
    if abc.get("used") is not None and "verdict" in abc:
        lines.append(
            f"  ABC: {abc['bootstraps_before']} -> {abc['bootstraps_after_abc']} bootstraps, "
            f"{'kept' if abc['used'] else 'not kept'} ({abc['verdict']})"
        )
    elif "skipped" in abc:
        lines.append(f"  ABC: skipped ({abc['skipped']})")
    lines.append("  revealed: " + ", ".join(report["receiver_learns"]))
    return "\n".join(lines) + "\n"


# ---- hec run ------------------------------------------------------------------------------


def _load_integers(name: str, path: Path) -> npt.NDArray[Any]:
    if not path.is_file():
        raise UserError(f"input '{name}': file {path} does not exist")
    try:
        value = np.load(path, allow_pickle=False)
    except Exception as err:  # numpy's header parser raises many kinds
        raise UserError(f"input '{name}': {path} is not a readable .npy file ({err})") from err
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise UserError(f"input '{name}': {path} must hold a numeric array")
    return value


def _unsigned(values: npt.NDArray[Any], t: IntType) -> list[int]:
    return [int(v) % (1 << t.width) for v in values.flat]


def _typed(values: list[int], t: IntType, shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """Decrypted unsigned words as the output's type and shape (int64 signed, uint64 else)."""
    if t.signed:
        half = 1 << (t.width - 1)
        out = np.asarray([v - (1 << t.width) if v >= half else v for v in values], dtype=np.int64)
    else:
        out = np.asarray(values, dtype=np.uint64)
    return out.reshape(shape) if shape else out[:1].reshape(())


def harness() -> Path:
    from driver.environment import runtime_build_dir

    tool = runtime_build_dir() / "hec_fhew_gates"
    if not tool.is_file():
        raise UserError(
            f"the FHEW runtime tool {tool} is not built",
            hint="cmake --build build/release --target hec_fhew_gates (or scripts/setup)",
        )
    return tool


def run_fhew(
    path: str | Path,
    inputs: Mapping[str, Path],
    outdir: str | Path,
    options: Options,
    sim: bool = False,
    work: str | Path | None = None,
    owners: Mapping[str, int] | None = None,
) -> RunResult:
    """`hec run --scheme fhew`: the gate program on every element, encrypted with the four roles
    (or in the netlist simulator with `sim`); the client block on the revealed values.
    `owners`: input name -> data owner number (inputs not named: each its own owner)."""
    from driver.interrupt import scratch_directory

    checked = check(parse_file(str(path)))
    arrays = {name: _load_integers(name, p) for name, p in inputs.items()}
    run_sizes = infer_sizes(checked, arrays)
    for name, size in options.sizes.items():
        if name in run_sizes and run_sizes[name] > size:
            raise UserError(
                f"the inputs have {name} = {run_sizes[name]}, above --size {name}={size}",
                hint=f"--size {name}={run_sizes[name]} (or omit --size)",
            )
    comp = compile_fhew(checked, options)
    groups = owner_groups(comp, owners or {})
    ints = {
        name: int_input(name, arrays[name], arrays[name].shape, t)
        for name, (t, _) in comp.program.inputs.items()
    }
    elements = comp.elements(run_sizes)
    words: dict[str, list[int]] = {}
    for name, (t, shape) in comp.program.inputs.items():
        flat = _unsigned(ints[name], t)
        words[name] = flat if shape else flat * elements
    summary: dict[str, Json] = {
        "program": comp.name,
        "source": str(path),
        "scheme": "fhew",
        "sizes": dict(run_sizes),
        "elements": elements,
        "bootstraps_per_element": comp.cover.bootstraps,
        "params": {"name": comp.params_name, "insecure": options.insecure},
        "insecure": options.insecure,
    }
    if sim:
        summary["backend"] = "fhew-simulator"
        raw = comp.circuit.simulate({k: np.asarray(v, dtype=np.uint64) for k, v in words.items()})
        decrypted = {k: [int(x) for x in v] for k, v in raw.items()}
    else:
        summary["backend"] = "fhew-encrypted"
        with contextlib.ExitStack() as stack:
            base = (
                stack.enter_context(scratch_directory("hec-fhew-"))
                if work is None
                else Path(str(work))
            )
            base.mkdir(parents=True, exist_ok=True)
            decrypted, stats, encrypted = _run_roles(comp, words, base, groups)
        summary["compute"] = stats
        summary["owners"] = encrypted
    revealed = {
        name: _typed(decrypted[name], t, tuple(arrays_shape(shape, run_sizes)))
        for name, (t, shape) in comp.program.outputs.items()
    }
    public = {
        n: arrays[n] for n in arrays if not checked.bindings[n].ty.secret
    }  # the client sees public inputs, never a secret one
    client = run_client_block(checked, run_sizes, revealed, public)
    summary["revealed"] = sorted(revealed)
    summary["client"] = sorted(client)
    if options.insecure:
        summary["warning"] = "INSECURE parameters (--insecure: the runtime's small-n test set)"
    out = Path(outdir)
    summary = write_outputs(out, revealed, client, summary)
    return RunResult(out, revealed, client, summary)


def arrays_shape(shape: Shape, sizes: Mapping[str, int]) -> list[int]:
    return [d if isinstance(d, int) else sizes[d] for d in shape]


def owner_groups(comp: FhewCompilation, owners: Mapping[str, int]) -> dict[str, list[str]]:
    """The data owners of a run: directory label -> the inputs it encrypts, in program order.
    `owners` maps input names to owner numbers; every input not named is its own owner."""
    inputs = list(comp.program.inputs)
    for name, who in owners.items():
        if name not in comp.program.inputs:
            raise UserError(
                f"--owner {name}={who}: the program has no input '{name}'",
                hint="inputs: " + ", ".join(inputs),
            )
        if who < 0:
            raise UserError(f"--owner {name}={who}: an owner number is 0 or more")
    groups: dict[str, list[str]] = {}
    for name in inputs:
        label = f"owner-{owners[name]}" if name in owners else f"owner-{name}"
        groups.setdefault(label, []).append(name)
    return groups


def _run_roles(
    comp: FhewCompilation,
    words: Mapping[str, list[int]],
    base: Path,
    groups: Mapping[str, list[str]],
) -> tuple[dict[str, list[int]], dict[str, Json], list[Json]]:
    """keygen, one encrypt per data owner, compute, decrypt in `base` (module docstring);
    returns the decrypted words, the compute role's report (bootstraps counted by the runtime,
    seconds) and each owner's encrypt report.

    Layout: `keys/` (keygen: `secret`, `eval`, `public`; the coordinator's), `program.gates`
    (public), `owners/LABEL/` (an owner's: a copy of the public key, `values/` its inputs,
    `ct/NAME.ct` its ciphertexts), `results.ct` (the server's), `decrypted.json`."""
    import shutil

    tool = harness()
    params = comp.params_name
    keys, program = base / "keys", base / "program.gates"
    program.write_text(comp.gate_text)
    owners_dir = base / "owners"
    shutil.rmtree(owners_dir, ignore_errors=True)  # a kept work directory: start clean
    res, dec = base / "results.ct", base / "decrypted.json"
    run_role(tool, "keygen", "--params", params, "--out", str(keys))
    encrypted: list[Json] = []
    cts: list[str] = []
    for label, names in groups.items():
        own = owners_dir / label
        (own / "values").mkdir(parents=True)
        public = own / "public"
        shutil.copyfile(keys / "public", public)  # what the coordinator hands each owner
        args: list[str] = []
        for name in names:
            f = own / "values" / f"{name}.txt"
            f.write_text("\n".join(str(x) for x in words[name]) + "\n")
            args += ["--input", f"{name}=@{f}"]
            cts += ["--in", f"{name}={own / 'ct' / f'{name}.ct'}"]
        done = run_role(
            tool,
            "encrypt",
            "--params",
            params,
            "--pk",
            str(public),
            "--program",
            str(program),
            *args,
            "--out",
            str(own / "ct"),
        )
        report: dict[str, Json] = {"owner": label, "inputs": list(names)}
        report.update(json.loads(done.stdout))
        encrypted.append(report)
    computed = run_role(
        tool,
        "compute",
        "--params",
        params,
        "--eval",
        str(keys / "eval"),
        "--program",
        str(program),
        *cts,
        "--out",
        str(res),
    )
    run_role(
        tool,
        "decrypt",
        "--params",
        params,
        "--sk",
        str(keys / "secret"),
        "--program",
        str(program),
        "--in",
        str(res),
        "--out",
        str(dec),
    )
    stats: dict[str, Json] = json.loads(computed.stdout)
    stats["peak_rss_bytes"] = computed.peak_rss_bytes
    decrypted = {k: [int(x) for x in v] for k, v in json.loads(dec.read_text()).items()}
    return decrypted, stats, encrypted
