"""`bench/run circuits`: 8-bit add, multiply and compare on hec's FHEW target against tfhe-rs and
OpenFHE binfhe, same run (issue 23).

Ours: examples/circuits/add8.hec, mul8.hec and bench/lt8.hec compiled by hec (`--scheme fhew`,
GINX STD128) and run by `hec run` at N = 1 (keygen, encrypt, compute, decrypt, one process
each); the row's figure is the compute role's own time for the gate program (one element:
the latency of one operation), median of the repeats, each repeat a fresh run with new keys
and random operands, decrypted and checked against the integer reference. At T threads
(HEC_THREADS) each bootstrap level's gates are spread over the threads.

tfhe-rs (bench/tfhers, `bench/setup-reference tfhers`): the high-level API's FheUint8 `+`, `*`
and `gt` at its default configuration, RAYON_NUM_THREADS = T. OpenFHE (the newest wheel,
bench/_circuits_openfhe.py): the same three operations written with binfhe's gates as an
expert would (ripple-carry adder with MAJORITY carries, a row-by-row multiplier, a borrow
chain), one thread (the wheel's binfhe runs one gate per call and cannot share its keys with
worker processes), so its row is the same figure at every T.

Every row states each library's security and failure probability; `ratio_fastest` is ours over
the faster reference, `ratio_tfhe` ours over tfhe-rs. Targets (issue 23, 2 threads): ours <=
1.0x tfhe-rs and <= 0.5x OpenFHE.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    ROOT,
    TFHERS,
    Reference,
    Row,
    openfhe_version,
    print_rows,
    reference_python,
    tfhers_version,
    try_reference,
)
from fhew import run_tfhers

EXAMPLES = ROOT / "examples" / "circuits"
OPS = {
    # name: (program, tfhe-rs field, label, integer reference)
    "add": (EXAMPLES / "add8.hec", "uint8_add", "8-bit add", np.add),
    "mul": (EXAMPLES / "mul8.hec", "uint8_mul", "8-bit multiply", np.multiply),
    "lt": (ROOT / "bench" / "lt8.hec", "uint8_gt", "8-bit compare", np.less),
}
OURS = "GINX STD128: 128-bit classical, modelled failure per bootstrap in the row's note"
OPENFHE = "binfhe STD128 GINX: > 128-bit classical; failure probability not stated"
TFHERS_INTEGER = "FheUint8 default config: 128-bit, failure <= 2^-128 per bootstrap (docs)"


def _threads_env(threads: int) -> dict[str, str]:
    t = str(threads)
    return {"HEC_THREADS": t, "OMP_NUM_THREADS": t, "OMP_WAIT_POLICY": "passive"}


def run_ours(op: str, repeats: int, threads: int, seed: int) -> dict[str, Any]:
    """Medians of the compute role's seconds (ms) over `repeats` fresh runs at N = 1."""
    from driver.fhew import run_fhew
    from driver.pipeline import Options

    program, _, _, reference = OPS[op]
    rng = np.random.default_rng(seed)
    ms: list[float] = []
    failure, bootstraps = None, 0
    saved = dict(os.environ)
    os.environ.update(_threads_env(threads))
    try:
        for _ in range(repeats):
            a, b = rng.integers(0, 256, 1, dtype=np.uint8), rng.integers(0, 256, 1, dtype=np.uint8)
            with tempfile.TemporaryDirectory(prefix="hec-bench-circuits-") as tmp:
                work = Path(tmp)
                np.save(work / "a.npy", a)
                np.save(work / "b.npy", b)
                inputs = {"a": work / "a.npy", "b": work / "b.npy"}
                res = run_fhew(program, inputs, work / "out", Options(), work=work / "run")
            want = reference(a, b).astype(res.revealed["c"].dtype)
            if not np.array_equal(res.revealed["c"], want):
                raise SystemExit(f"bench/circuits: {op}({a}, {b}) decrypted {res.revealed['c']}")
            compute: dict[str, Any] = res.summary["compute"]  # type: ignore[assignment]
            ms.append(float(compute["seconds"]) * 1e3)
            failure = compute.get("worst_failure_log2")
            bootstraps = compute["bootstraps"]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {"ms": statistics.median(ms), "bootstraps": bootstraps, "failure_log2": failure}


def run_openfhe(repeats: int) -> dict[str, Any]:
    script = ROOT / "bench" / "_circuits_openfhe.py"
    env = {**os.environ, **_threads_env(1)}
    out = subprocess.run(
        [reference_python(), str(script), str(repeats), ",".join(OPS)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description="bench/run circuits: 8-bit operations on FHEW")
    parser.add_argument("--repeats", type=int, default=5, help="timed operations per library")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated: add, mul, lt")
    args = parser.parse_args()
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    for op in ops:
        if op not in OPS:
            raise SystemExit(f"bench/circuits: unknown op {op!r}; use {', '.join(OPS)}")
    threads = sorted({int(t) for t in args.threads.split(",")})
    ofhe, ofhe_note = try_reference("openfhe", partial(run_openfhe, args.repeats))
    rows: list[Row] = []
    for t in threads:
        tfhe, tfhe_note = try_reference(TFHERS, partial(run_tfhers, args.repeats, t))
        for op in ops:
            _, field, label, _ = OPS[op]
            ours = run_ours(op, args.repeats, t, seed=23 + t)
            o_ms = ofhe[op]["wall_ms"] if ofhe else None
            refs = (
                Reference(
                    "openfhe",
                    openfhe_version(),
                    o_ms,
                    ofhe_note or f"{OPENFHE}; {ofhe[op]['gates']} gates, 1 thread",  # type: ignore[index]
                ),
                Reference(
                    TFHERS,
                    tfhers_version(),
                    tfhe[field]["wall_ms"] if tfhe else None,
                    tfhe_note or TFHERS_INTEGER,
                ),
            )
            note = f"{OURS} (2^{ours['failure_log2']}); {ours['bootstraps']} bootstraps"
            rows.append(
                Row("circuits", f"{label} wall, {t} thr", ours["ms"], o_ms, "ms", refs, note)
            )
    print_rows(
        f"8-bit integer operations, one operation's latency, median of {args.repeats} "
        f"(hec FHEW GINX STD128; references: tfhe-rs {tfhers_version()} FheUint8, openfhe "
        f"{openfhe_version()} wheel binfhe gates, same run; load {os.getloadavg()[0]:.1f})",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
