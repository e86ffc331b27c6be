"""`bench/run fhew`: bootstrapped NAND gates, ours against OpenFHE binfhe, same run.

For each blind-rotation method (GINX, AP), runs our `hec_bench_fhew` (built by the `bench`
preset; STD128_GINX or STD128_AP of runtime/fhew/params.cpp) and the PyPI `openfhe` wheel's
binfhe at its STD128 (GINX) and STD128_AP sets (bench/_fhew_openfhe.py under the Python 3.10
of .venv-bench), one after the other, both single-threaded (HEC_THREADS=1, OMP_NUM_THREADS=1).

Rows: median wall milliseconds per NAND (after one warm-up gate, freshly encrypted inputs,
every output decrypted and checked; on every side at least --repeats gates, more until the
timed gates fill a quarter second: the repeat rule of bench/common.py), median CPU
milliseconds per NAND (thread/process CPU time: on a shared machine it leaves out the time
spent waiting for a core), key generation seconds (secret key + bootstrapping and
key-switching keys), and evaluation-key size: growth of the resident set during key generation
for both (the wheel cannot serialize binfhe keys), plus our exact in-memory bytes and our file
size (no reference for those). Last, wall milliseconds per gate of Context::eval_batch on 16
independent GINX NANDs with 1 and with 2 threads, against tfhe-rs running 16 independent NANDs
by rayon's par_iter on as many threads (the OpenFHE wheel has no batched gate call), both the
median of at least --repeats batches.
Targets (issue 9): GINX gate <= 0.5x OpenFHE's GINX with a key no larger; AP gate <= 0.5x
OpenFHE's AP.

tfhe-rs (bench/tfhers, built by `bench/setup-reference tfhers`): its default Boolean parameters
(`tfhe::boolean::gen_keys`, DEFAULT_PARAMETERS: 132-bit security and per-gate failure
probability <= 2^-64 as tfhe-rs documents them) give the NAND rows a second reference
(`ratio_tfhe` = ours / tfhe-rs); its AND, XOR and MUX and the high-level API's FheUint8 add,
multiply and greater-than (default configuration: 128-bit security, failure probability
<= 2^-128 per bootstrap, as documented) are rows of their own (ours: -). RAYON_NUM_THREADS=1.
Every row states the security and failure probability each library documents: ours from the
parameter set the binary ran (runtime/fhew/params.cpp: LWE dimension, secret and key-switching
modulus, the lattice estimator's figure from runtime/fhew/README.md, and the noise model's
per-gate failure: GINX STD128 2^-118.9, AP 2^-53.4), OpenFHE's STD128 sets from its
binfhe-constants.h (more than 128-bit classical; no failure probability stated there for these
sets).
A reference that cannot be set up or run shows "not available (reason)" and the bench goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    ROOT,
    TFHERS,
    Reference,
    Row,
    openfhe_version,
    print_rows,
    reference_python,
    reference_tool,
    tfhers_version,
    try_reference,
)

SINGLE_THREAD = {"HEC_THREADS": "1", "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"}


def run_ours(method: str, repeats: int) -> dict[str, Any]:
    binary = ROOT / "build" / "bench" / "hec_bench_fhew"
    if not binary.exists():
        raise SystemExit(f"bench/fhew: {binary} is missing; build the runtime with preset 'bench'")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [str(binary), method.lower(), str(repeats), str(Path(tmp) / "eval_key.hec")],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, **SINGLE_THREAD},
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_openfhe(method: str, repeats: int) -> dict[str, Any]:
    out = subprocess.run(
        [reference_python(), str(ROOT / "bench" / "_fhew_openfhe.py"), str(repeats), method],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **SINGLE_THREAD},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# The lattice estimator's cheapest attack on each set's LWE key (runtime/fhew/README.md,
# "Security"; the ring side is the HE Standard's 128-bit row).
LATTICE_ESTIMATE_LOG2 = {"GINX": 131.7, "AP": 134.0}


def ours_security(method: str, ours: dict) -> str:
    """Security and per-gate failure of our row, from the set the binary ran."""
    return (
        f"128-bit: LWE n={ours['n']} {ours['lwe_secret']} secret mod q_ks={ours['q_ks']}, "
        f"lattice estimator 2^{LATTICE_ESTIMATE_LOG2[method]}; ring N={ours['N']} by the HE "
        f"Standard; per-gate failure 2^{ours['failure_log2']} (noise model, 2-input gate)"
    )


OPENFHE_SECURITY = "> 128-bit classical (OpenFHE STD128 sets); failure probability not stated"
TFHERS_BOOLEAN = "DEFAULT_PARAMETERS: 132-bit security, per-gate failure <= 2^-64 (tfhe-rs docs)"
TFHERS_INTEGER = "default config: 128-bit, failure <= 2^-128 per bootstrap (tfhe-rs docs)"


def run_tfhers(repeats: int, threads: int = 1, batch: int = 0) -> dict[str, Any]:
    """tfhe-rs' medians: {op: {"wall_ms", "cpu_ms"}} for nand, and, xor, mux, uint8_*, at
    `threads` (RAYON_NUM_THREADS); with `batch` > 0 only nand_batch: `batch` independent
    NANDs on rayon's pool (par_iter, one shared server key), per gate."""
    binary = reference_tool("tfhers")
    t = str(threads)
    env = {**os.environ, **SINGLE_THREAD, "RAYON_NUM_THREADS": t}
    env.update(HEC_THREADS=t, OMP_NUM_THREADS=t)
    args = [binary, str(repeats)] + ([str(batch), "only"] if batch > 0 else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def gate_refs(
    ref: dict[str, Any] | None, ref_note: str, key: str, tfhe: dict[str, Any] | None, tfhe_note: str
) -> tuple[Reference, ...]:
    """A NAND row's OpenFHE and tfhe-rs cells (`key`: nand_ms_median or nand_cpu_ms_median)."""
    tfhe_key = "wall_ms" if key == "nand_ms_median" else "cpu_ms"
    return (
        Reference(
            "openfhe", openfhe_version(), ref[key] if ref else None, ref_note or OPENFHE_SECURITY
        ),
        Reference(
            TFHERS,
            tfhers_version(),
            tfhe["nand"][tfhe_key] if tfhe else None,
            tfhe_note or TFHERS_BOOLEAN,
        ),
    )


def run_ours_batch(method: str, batch: int, threads: int, repeats: int) -> dict[str, Any]:
    """Our eval_batch of `batch` NANDs at `threads`, at least `repeats` timed batches (as many
    as tfhe-rs' par_iter row); the binary's single-gate figures are not used here."""
    binary = ROOT / "build" / "bench" / "hec_bench_fhew"
    env = {**os.environ, **SINGLE_THREAD, "HEC_THREADS": str(threads)}
    env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run(
        [str(binary), method.lower(), str(repeats), "-", str(batch)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description="bench/run fhew: bootstrapped NAND, ours vs OpenFHE"
    )
    parser.add_argument("--repeats", type=int, default=21, help="timed gates per method")
    parser.add_argument("--methods", default="GINX,AP", help="comma-separated: GINX, AP")
    parser.add_argument(
        "--batch", type=int, default=16, help="GINX gates in the 2-thread eval_batch row (0: skip)"
    )
    args = parser.parse_args()
    rows: list[Row] = []
    notes: list[str] = []
    tfhe, tfhe_note = try_reference(TFHERS, partial(run_tfhers, args.repeats))
    ours_ginx: dict[str, Any] | None = None
    for method in [m.strip().upper() for m in args.methods.split(",") if m.strip()]:
        if method not in ("GINX", "AP"):
            raise SystemExit(f"bench/fhew: unknown method {method!r}; use GINX or AP")
        ours = run_ours(method, args.repeats)
        if method == "GINX":
            ours_ginx = ours
        notes.append(f"ours {method}: {ours_security(method, ours)}")
        ref, ref_note = try_reference("openfhe", partial(run_openfhe, method, args.repeats))
        if not (ours["correct"] and (ref is None or ref["correct"])):
            raise SystemExit(f"bench/fhew: a {method} gate decrypted wrongly: {ours} {ref}")
        mib = 1024.0 * 1024.0
        case = f"{method} STD128"

        def openfhe(key: str, scale: float = 1.0) -> float | None:
            return ref[key] / scale if ref else None  # noqa: B023 (used in this iteration)

        for key, what in (("nand_ms_median", "wall"), ("nand_cpu_ms_median", "cpu")):
            refs = gate_refs(ref, ref_note, key, tfhe, tfhe_note)
            row = Row("fhew", f"{case} NAND {what}", ours[key], openfhe(key), "ms", refs)
            rows.append(replace(row, ours_note=ours_security(method, ours)))
        not_measured = Reference(TFHERS, tfhers_version(), None, "not measured")
        for key, label, scale, unit in (
            ("keygen_s", "keygen", 1.0, "s"),
            ("eval_key_rss_bytes", "eval key resident", mib, "MiB"),
        ):
            value = openfhe(key, scale)
            note = ref_note or OPENFHE_SECURITY
            refs = (Reference("openfhe", openfhe_version(), value, note), not_measured)
            rows.append(Row("fhew", f"{case} {label}", ours[key] / scale, value, unit, refs))
        rows += [
            Row(
                "fhew",
                f"{case} eval key in memory",
                ours["eval_key_memory_bytes"] / mib,
                None,
                "MiB",
            ),
            Row("fhew", f"{case} eval key file", ours["eval_key_file_bytes"] / mib, None, "MiB"),
        ]
        openfhe_params = f"OpenFHE n={ref['n']} q={ref['q']}" if ref else f"OpenFHE {ref_note}"
        notes.append(
            f"{method}: ours {ours['params']} n={ours['n']} q={ours['q']} N={ours['N']} "
            f"Q={ours['Q']}; {openfhe_params}"
        )
    tfhe_only = (
        ("and", "AND", TFHERS_BOOLEAN),
        ("xor", "XOR", TFHERS_BOOLEAN),
        ("mux", "MUX", TFHERS_BOOLEAN),
        ("uint8_add", "FheUint8 add", TFHERS_INTEGER),
        ("uint8_mul", "FheUint8 multiply", TFHERS_INTEGER),
        ("uint8_gt", "FheUint8 greater-than", TFHERS_INTEGER),
    )
    for op, label, doc in tfhe_only:
        value = tfhe[op]["wall_ms"] if tfhe else None
        refs = (Reference(TFHERS, tfhers_version(), value, tfhe_note or doc),)
        rows.append(Row("fhew", f"tfhe-rs {label} wall (no hec row)", None, None, "ms", refs))
    if args.batch > 0:
        for threads in sorted({1, min(2, os.cpu_count() or 1)}):
            b = run_ours_batch("GINX", args.batch, threads, args.repeats)
            if not b["correct"]:
                raise SystemExit(f"bench/fhew: a batched gate decrypted wrongly: {b}")
            batched, batched_note = try_reference(
                TFHERS, partial(run_tfhers, args.repeats, threads, args.batch)
            )
            value = batched["nand_batch"]["wall_ms"] if batched else None
            note = batched_note or (
                f"{args.batch} NANDs by par_iter on {threads} rayon thread(s), per gate; "
                + TFHERS_BOOLEAN
            )
            rows.append(
                Row(
                    "fhew",
                    f"GINX eval_batch {args.batch} NAND, {b['threads']} thr, per gate",
                    b["batch_ms_per_gate"],
                    None,
                    "ms",
                    (Reference(TFHERS, tfhers_version(), value, note),),
                    ours_security("GINX", ours_ginx) if ours_ginx else "",
                )
            )
    print_rows(
        f"FHEW bootstrapped NAND, single thread, median of at least {args.repeats} (references: "
        f"openfhe {openfhe_version()} wheel binfhe STD128 / STD128_AP, tfhe-rs {tfhers_version()} "
        "default Boolean parameters, same run)",
        rows,
    )
    for line in notes:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
