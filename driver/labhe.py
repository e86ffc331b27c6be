"""The labeled-HE driver (`--scheme labhe`): compile, report, build and run degree-2 programs.

Beside the CKKS pipeline (driver/pipeline.py) until the scheme-agnostic middle exists: the same
checked program and `stat` lowering, then `passes/lower_stat_to_labhe.py` (which refuses a
revealed value of degree > 2; this driver adds the source location), the report, the C++
target (`targets/labhe`) and the roles of the generated binary run in order:

    setup -> encrypt-offline (each provider) -> encrypt-online (each provider)
          -> evaluate (server) || decrypt-offline (receiver) -> decrypt-online (receiver)

Plans are compiled for the exact sizes of a run (the fixed-point denominators of means are
sizes), so `hec run` compiles for the data's sizes.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.errors import UserError
from compiler.labhe_plan import (
    CHECK_BITS,
    LabheProgram,
    ciphertext_bytes,
    evaluate_plain,
    message_bytes,
    result_bytes,
)
from compiler.stat_numpy import run_client
from driver.pipeline import Options
from driver.roles import read_revealed
from driver.run import (
    Json,
    RunResult,
    check_domains,
    infer_sizes,
    load_npy,
    public_only,
    write_outputs,
)
from dsl.checker import CheckedProgram, check
from dsl.lower import lower
from dsl.parser import parse_file
from passes.lower_stat_to_labhe import DegreeError, LowerStatToLabhe
from targets.labhe.emit import emit_labhe, write_labhe_project

# NIST SP 800-57 Part 1, Table 2: factoring moduli.
SECURITY_BITS = {2048: 112, 3072: 128, 7680: 192}


@dataclass
class LabheCompilation:
    checked: CheckedProgram
    stat_module: ModuleOp
    plan: LabheProgram
    sizes: dict[str, int]
    options: Options

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def stat_program(self) -> stat.ProgramOp:
        op = self.stat_module.body.block.first_op
        assert isinstance(op, stat.ProgramOp)
        return op


def concrete_sizes(checked: CheckedProgram, given: Sizes) -> dict[str, int]:
    for name, size in given.items():
        if name not in checked.params:
            raise UserError(f"--size names {name}, which is not a size parameter of the program")
        if size > checked.params[name]:
            raise UserError(f"--size {name}={size} exceeds the program's bound")
    return {n: given.get(n, bound) for n, bound in checked.params.items()}


def compile_labhe(checked: CheckedProgram, options: Options) -> LabheCompilation:
    """The labeled program of `checked` for the sizes in `options` (declared bounds where
    absent). A revealed value of degree > 2 is refused at its source location."""
    if options.modulus_bits not in SECURITY_BITS:
        raise UserError(
            f"--modulus-bits {options.modulus_bits}: expected 3072 (128-bit security, the "
            "default) or 2048 (112 bits, for comparison with Barbosa-Catalano-Fiore)"
        )
    if options.labhe_linear not in ("jl", "paillier"):
        raise UserError(f"--labhe-scheme {options.labhe_linear}: expected jl or paillier")
    sizes = concrete_sizes(checked, options.sizes)
    module = lower(checked)
    program = module.body.block.first_op
    try:
        plan = LowerStatToLabhe(sizes, options.precision_bits).run(program)  # type: ignore[arg-type]
    except DegreeError as err:
        reveal = next((r for r in checked.reveals if r.name == err.name), None)
        if reveal is None:
            raise
        span = reveal.expr.span if reveal.expr is not None else reveal.span
        raise UserError(err.message, checked.source.location(span), err.hint) from None
    if options.labhe_linear == "jl":
        limit = options.modulus_bits // 4 - 128
        if plan.message_bits > limit:
            raise UserError(
                f"the revealed values need a message space of 2^{plan.message_bits}; Joye-Libert "
                f"with a {options.modulus_bits}-bit modulus holds at most 2^{limit}",
                hint="narrow the input domains or sizes, lower --precision-bits, or use "
                "--labhe-scheme paillier",
            )
    return LabheCompilation(checked, module, plan, sizes, options)


def compile_labhe_file(path: str | Path, options: Options) -> LabheCompilation:
    return compile_labhe(check(parse_file(str(path))), options)


def labhe_report(comp: LabheCompilation) -> dict[str, Any]:
    """Parameters, costs, sizes and what the receiver learns (JSON-ready)."""
    o = comp.options
    plan = comp.plan
    scheme, bits = o.labhe_linear, o.modulus_bits
    ct, msg = ciphertext_bytes(scheme, bits), message_bytes(scheme, bits, plan.message_bits)
    inputs = [
        {
            "name": i.name,
            "shape": list(i.shape),
            "fixed_point_scale": i.scale,
            "quantization_step": 1.0 / i.scale,
            "labels": int(np.prod(i.shape, dtype=np.int64)),
        }
        for i in plan.inputs
    ]
    outputs = []
    for r in plan.reveals:
        s = plan.steps[r.register]
        outputs.append(
            {
                "name": r.name,
                "shape": list(s.shape),
                "level": 2 if s.level2 else 1,
                "denominator": r.den,
                "bound_bits": r.bound.bit_length(),
                "result_bytes": int(np.prod(s.shape, dtype=np.int64)) * (ct if s.level2 else msg),
                "learned_by": "receiver",
            }
        )
    return {
        "program": plan.name,
        "scheme": "labhe",
        "size_binding": comp.sizes,
        "params": {
            "linear_scheme": "joye-libert" if scheme == "jl" else "paillier",
            "modulus_bits": bits,
            "security_bits": SECURITY_BITS[bits],
            "message_bits": plan.message_bits if scheme == "jl" else bits,
            "check_bits": plan.check_bits(),
            "plan_digest": plan.digest,
        },
        "inputs": inputs,
        "outputs": outputs,
        "counts": {
            "uploaded_values": plan.upload_values(),
            "level2_products": plan.products(),
            "steps": len(plan.steps),
        },
        "sizes": {
            "upload_per_value": msg + ct,
            "ciphertext": ct,
            "result": result_bytes(plan, scheme, bits),
            "result_depends_on_rows": False,
        },
        "reveals": {
            "receiver_learns": [r.name for r in plan.reveals],
            "server_learns": "nothing: uniform a = m - b and IND-CPA ciphertexts",
            "providers_learn": "nothing about other providers' data (per-provider PRF keys)",
            "note": "the receiver must know the program (labeled HE); it learns the revealed "
            "values exactly and nothing else that the result ciphertexts carry",
        },
    }


def render_labhe_text(report: Mapping[str, Any]) -> str:
    p = report["params"]
    lines = [
        f"program {report['program']} (labeled HE, Barbosa-Catalano-Fiore) at sizes "
        f"{report['size_binding']}",
        f"  scheme     labHE over {p['linear_scheme']}, {p['modulus_bits']}-bit modulus, "
        f"{p['security_bits']}-bit security"
        + ("" if p["security_bits"] >= 128 else "  ** BELOW 128-BIT SECURITY **"),
        f"  messages   Z_2^{p['message_bits']} ({p['check_bits']} check bit(s) per entry above "
        f"the widest revealed numerator: a wrong result passes every entry with probability "
        f"below 2^-{CHECK_BITS})",
        "  inputs",
    ]
    for i in report["inputs"]:
        step = (
            "exact integers"
            if i["fixed_point_scale"] == 1
            else (
                f"fixed point, scale {i['fixed_point_scale']} (step {i['quantization_step']:.3g})"
            )
        )
        lines.append(f"    {i['name']:<10} {i['shape']}  {i['labels']} labels, {step}")
    lines.append("  revealed to the receiver")
    for o in report["outputs"]:
        lines.append(
            f"    {o['name']:<10} {o['shape']}  level {o['level']}, numerator / {o['denominator']}"
            f", |numerator| < 2^{o['bound_bits']}, {o['result_bytes']} bytes"
        )
    c, s = report["counts"], report["sizes"]
    lines += [
        f"  costs      {c['uploaded_values']} uploaded values ({s['upload_per_value']} bytes "
        f"each), {c['level2_products']} level-2 products at the server",
        f"  result     {s['result']} bytes, independent of the number of rows",
        f"  learns     receiver: {', '.join(report['reveals']['receiver_learns'])}; server: "
        f"{report['reveals']['server_learns']}",
    ]
    if report.get("schemes"):  # --scheme auto chose labeled HE
        from targets.report.report import render_cost

        lines += render_cost(report)
    return "\n".join(lines) + "\n"


# --- C++ target and runs -------------------------------------------------------------------


@dataclass
class BuiltLabhe:
    directory: Path
    binary: Path
    comp: LabheCompilation
    rewritten: list[Path]
    built: bool

    def describe(self) -> str:
        files = ", ".join(p.name for p in self.rewritten) or "none (unchanged)"
        state = f"built {self.binary}" if self.built else "not built (--no-build)"
        return (
            f"program {self.comp.name}: labeled HE, roles setup, encrypt-offline, "
            f"encrypt-online, evaluate, decrypt-offline, decrypt-online; files rewritten: "
            f"{files}; {state}"
        )


def build_labhe(comp: LabheCompilation, outdir: str | Path, build: bool = True) -> BuiltLabhe:
    from driver.run import _runtime_library, ninja_build

    runtime_dir, lib = _runtime_library()
    emitted = emit_labhe(comp.plan, runtime_dir, lib, _libs())
    out = Path(outdir)
    rewritten = write_labhe_project(emitted, out)
    binary = out / emitted.name
    if build:
        ninja_build(out, binary)
    return BuiltLabhe(out, binary, comp, rewritten, build)


def _libs() -> str:
    done = subprocess.run(
        ["pkg-config", "--libs", "libsodium", "libcrypto", "gmp"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else "-lsodium -lcrypto -lgmp"


def compile_labhe_cpp(
    path: str | Path, outdir: str | Path, options: Options, build: bool = True
) -> BuiltLabhe:
    return build_labhe(compile_labhe_file(path, options), outdir, build)


def provider_slices(
    comp: LabheCompilation, providers: int, owners: Mapping[str, int]
) -> list[dict[str, tuple[int, int]]]:
    """Rows of each input per provider, as the runtime's setup splits them (program.h)."""
    count = max([providers] + [w + 1 for w in owners.values()])
    out: list[dict[str, tuple[int, int]]] = [{} for _ in range(count)]
    for i in comp.plan.inputs:
        if i.source:  # derived inputs are computed by the provider from their source
            continue
        rows = i.shape[0] if i.shape else 1
        if i.name in owners:
            out[owners[i.name]][i.name] = (0, rows)
            continue
        for p in range(providers):
            out[p][i.name] = (rows * p // providers, rows * (p + 1) // providers)
    return out


def run_labhe_roles(
    binary: Path,
    comp: LabheCompilation,
    arrays: Mapping[str, np.ndarray],
    base: Path,
    providers: int = 1,
    owners: Mapping[str, int] | None = None,
    upload_order: list[int] | None = None,
    threads: int = 0,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Run every role of a built labeled program in `base` (all parties local); returns the
    decrypted values and each role's stderr (its timing line)."""
    from driver.roles import run_role

    def role(*args: str) -> str:
        return run_role(binary, *args).stderr

    owners = dict(owners or {})
    o = comp.options
    keys, up, work = base / "keys", base / "uploads", base / "work"
    for d in (keys, up, work, base / "dec"):
        shutil.rmtree(d, ignore_errors=True)
    up.mkdir(parents=True)
    work.mkdir(parents=True)
    extra = ["--threads", str(threads)] if threads else []
    logs: dict[str, str] = {}
    setup = ["setup", "--out", str(keys), "--scheme", o.labhe_linear]
    setup += ["--modulus-bits", str(o.modulus_bits), "--providers", str(providers)]
    for name, who in owners.items():
        setup += ["--owner", f"{name}={who}"]
    logs["setup"] = role(*setup, *extra)
    slices = provider_slices(comp, providers, owners)
    order = upload_order or list(range(len(slices)))
    for p in order:
        key = keys / f"provider-{p}.key"
        offline = work / f"provider-{p}.offline"
        common = ["--pk", str(keys / "public.key"), "--key", str(key), "--provider", str(p)]
        logs[f"encrypt-offline-{p}"] = role(
            "encrypt-offline", *common, "--out", str(offline), *extra
        )
        inputs: list[str] = []
        for name, (lo, hi) in slices[p].items():
            value = np.asarray(arrays[name], dtype=np.float64)
            part = value[lo:hi] if value.ndim else value
            f = work / f"provider-{p}-{name}.npy"
            np.save(f, part)
            inputs += ["--input", f"{name}={f}"]
        logs[f"encrypt-online-{p}"] = role(
            "encrypt-online",
            *common,
            "--offline",
            str(offline),
            *inputs,
            "--out",
            str(up / f"provider-{p}.upload"),
            *extra,
        )
    pk, sk = str(keys / "public.key"), str(keys / "receiver.secret")
    result, masks = work / "result.bin", work / "masks.bin"
    logs["evaluate"] = role("evaluate", "--pk", pk, "--in", str(up), "--out", str(result), *extra)
    logs["decrypt-offline"] = role(
        "decrypt-offline", "--pk", pk, "--sk", sk, "--out", str(masks), *extra
    )
    dec = base / "dec"
    logs["decrypt-online"] = role(
        "decrypt-online",
        "--pk",
        pk,
        "--sk",
        sk,
        "--masks",
        str(masks),
        "--in",
        str(result),
        "--out",
        str(dec),
        *extra,
    )
    return read_revealed(dec), logs


def run_labhe(
    path: str | Path,
    inputs: Mapping[str, Path],
    outdir: str | Path,
    options: Options,
    sim: bool = False,
    work: str | Path | None = None,
    providers: int = 1,
    owners: Mapping[str, int] | None = None,
) -> RunResult:
    """`hec run --scheme labhe`: compile for the data's sizes; `sim` runs the exact integer
    reference of the plan (compiler.labhe_plan.evaluate_plain), otherwise every role of the
    generated program; then the client block; outputs as `hec run` writes them."""
    checked = check(parse_file(str(path)))
    arrays = {name: load_npy(name, p) for name, p in inputs.items()}
    run_sizes = infer_sizes(checked, arrays)
    check_domains(checked, arrays)
    if options.sizes and dict(options.sizes) != {
        k: v for k, v in run_sizes.items() if k in options.sizes
    }:
        raise UserError(
            f"labeled programs are compiled for the exact sizes of the data ({run_sizes}); "
            f"--size {options.sizes} differs",
            hint="omit --size",
        )
    comp = compile_labhe(checked, replace(options, sizes=Sizes.of(run_sizes)))
    if sim:
        revealed = evaluate_plain(comp.plan, dict(arrays))
        backend = "labhe-exact-integer-reference"
    else:
        scratch = tempfile.TemporaryDirectory(prefix="hec-labhe-") if work is None else None
        base = Path(scratch.name if scratch is not None else str(work))
        try:
            built = build_labhe(comp, base / "build")
            revealed, _ = run_labhe_roles(built.binary, comp, arrays, base, providers, owners)
        finally:
            if scratch is not None:
                scratch.cleanup()
        backend = "labhe-encrypted"
    client = run_client(
        comp.stat_program, run_sizes, revealed, public_inputs=public_only(checked, arrays)
    )
    report = labhe_report(comp)
    summary: dict[str, Json] = {
        "program": comp.name,
        "source": str(path),
        "backend": backend,
        "scheme": "labhe",
        "sizes": run_sizes,
        "params": report["params"],
        "insecure": report["params"]["security_bits"] < 128,
        "revealed": sorted(revealed),
        "client": sorted(client),
        "result_bytes": report["sizes"]["result"],
    }
    if summary["insecure"]:
        summary["warning"] = f"{options.modulus_bits}-bit modulus: below 128-bit security"
    out = Path(outdir)
    write_outputs(out, revealed, client, summary)
    return RunResult(out, revealed, client, summary)


def fixed_point_tolerance(comp: LabheCompilation, name: str) -> float:
    """An upper bound on |labhe result - real-valued result| for revealed value `name` that
    comes only from quantizing the inputs (the computation itself is exact): first-order in
    the quantization step, times the bound of the numerator's sensitivity (estimated as the
    value bound over the input bound, per factor)."""
    rev = next(r for r in comp.plan.reveals if r.name == name)
    steps = [1.0 / i.scale for i in comp.plan.inputs if i.scale > 1]
    if not steps:
        return 0.0
    widest = max(i.bound / i.scale for i in comp.plan.inputs)
    value_bound = rev.bound / rev.den
    # A degree-2 value moves by at most 2 * (value bound / input bound) * step per unit of
    # input error, and half a step is the largest rounding.
    return 2.0 * value_bound / max(widest, 1e-300) * max(steps) * 0.5 + math.ulp(value_bound)
