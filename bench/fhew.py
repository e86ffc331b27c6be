"""`bench/run fhew`: bootstrapped NAND gates, ours against OpenFHE binfhe, same run.

For each blind-rotation method (GINX, AP), runs our `hec_bench_fhew` (built by the `bench`
preset; STD128_GINX or STD128_AP of runtime/fhew/params.cpp) and the PyPI `openfhe` wheel's
binfhe at its STD128 (GINX) and STD128_AP sets (bench/_fhew_openfhe.py under the Python 3.10
of .venv-bench), one after the other, both single-threaded (HEC_THREADS=1, OMP_NUM_THREADS=1).

Rows: median wall milliseconds per NAND (after one warm-up gate, freshly encrypted inputs,
every output decrypted and checked), median CPU milliseconds per NAND (thread/process CPU
time: on a shared machine it leaves out the time spent waiting for a core), key generation
seconds (secret key + bootstrapping and key-switching keys), and evaluation-key size: growth
of the resident set during key generation for both (the wheel cannot serialize binfhe keys),
plus our exact in-memory bytes and our file size (no reference for those). Last, wall
milliseconds per gate of Context::eval_batch on 16 independent GINX NANDs with 1 and with 2
threads (no reference: the wheel has no batched gate call).
Targets (issue 9): GINX gate <= 0.5x OpenFHE's GINX with a key no larger; AP gate <= 0.5x
OpenFHE's AP.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows, reference_python

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


def run_ours_batch(method: str, batch: int, threads: int) -> dict[str, Any]:
    binary = ROOT / "build" / "bench" / "hec_bench_fhew"
    env = {**os.environ, **SINGLE_THREAD, "HEC_THREADS": str(threads)}
    env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run(
        [str(binary), method.lower(), "3", "-", str(batch)],
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
    for method in [m.strip().upper() for m in args.methods.split(",") if m.strip()]:
        if method not in ("GINX", "AP"):
            raise SystemExit(f"bench/fhew: unknown method {method!r}; use GINX or AP")
        ours = run_ours(method, args.repeats)
        ref = run_openfhe(method, args.repeats)
        if not (ours["correct"] and ref["correct"]):
            raise SystemExit(f"bench/fhew: a {method} gate decrypted wrongly: {ours} {ref}")
        mib = 1024.0 * 1024.0
        case = f"{method} STD128"
        rows += [
            Row("fhew", f"{case} NAND wall", ours["nand_ms_median"], ref["nand_ms_median"], "ms"),
            Row(
                "fhew",
                f"{case} NAND cpu",
                ours["nand_cpu_ms_median"],
                ref["nand_cpu_ms_median"],
                "ms",
            ),
            Row("fhew", f"{case} keygen", ours["keygen_s"], ref["keygen_s"], "s"),
            Row(
                "fhew",
                f"{case} eval key resident",
                ours["eval_key_rss_bytes"] / mib,
                ref["eval_key_rss_bytes"] / mib,
                "MiB",
            ),
            Row(
                "fhew",
                f"{case} eval key in memory",
                ours["eval_key_memory_bytes"] / mib,
                None,
                "MiB",
            ),
            Row("fhew", f"{case} eval key file", ours["eval_key_file_bytes"] / mib, None, "MiB"),
        ]
        notes.append(
            f"{method}: ours {ours['params']} n={ours['n']} q={ours['q']} N={ours['N']} "
            f"Q={ours['Q']}; OpenFHE n={ref['n']} q={ref['q']}"
        )
    if args.batch > 0:
        for threads in sorted({1, min(2, os.cpu_count() or 1)}):
            b = run_ours_batch("GINX", args.batch, threads)
            if not b["correct"]:
                raise SystemExit(f"bench/fhew: a batched gate decrypted wrongly: {b}")
            rows.append(
                Row(
                    "fhew",
                    f"GINX eval_batch {args.batch} NAND, {b['threads']} thr, per gate",
                    b["batch_ms_per_gate"],
                    None,
                    "ms",
                )
            )
    print_rows(
        f"FHEW bootstrapped NAND, single thread, median of {args.repeats} "
        "(reference: openfhe wheel binfhe STD128 / STD128_AP, same run)",
        rows,
    )
    for line in notes:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
