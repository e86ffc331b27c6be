"""`bench/run digest`: throughput of the container digest (runtime/core/serialize.h) on one
256 MiB buffer: our BLAKE3-256 (runtime/core/blake3.h, format 6) on its AVX-512 and portable
kernels at one thread, and on two threads (update_parallel's 1 MiB subtrees), next to OpenSSL's
SHA-256 (EVP, on the CPU's SHA extensions where it has them), the hash of format 5's chunk list,
in the same run.

Runs the Google Benchmark binary `hec_bench_digest` (preset `bench`), median wall time of 5
repetitions, reported in GB/s (10^9 bytes per second). The reference column is SHA-256 at one
thread; the ratio is ours / reference throughput, so above 1 is faster than SHA-256.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows

NAME = re.compile(r"BM_(Blake3/kernel:(\d)/threads:(\d)|Sha256)")
KERNELS = {0: "portable", 1: "avx512"}


def run() -> dict[str, float]:
    """Median GB/s keyed by 'blake3 KERNEL tTHREADS' and 'sha256'."""
    binary = ROOT / "build" / os.environ.get("HEC_PRESET", "bench") / "hec_bench_digest"
    if not binary.exists():
        raise SystemExit(f"bench/digest: {binary} is missing; build with preset 'bench'")
    out = subprocess.run(
        [
            str(binary),
            "--benchmark_format=json",
            "--benchmark_repetitions=5",
            "--benchmark_report_aggregates_only=true",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"HEC_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    result: dict[str, float] = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        m = NAME.match(b["run_name"])
        if m is None:
            continue
        if m.group(1) == "Sha256":
            key = "sha256"
        else:
            key = f"blake3 {KERNELS[int(m.group(2))]} t{m.group(3)}"
        result[key] = b["bytes_per_second"] / 1e9
    return result


def main() -> int:
    speeds = run()
    sha = speeds.get("sha256")
    cases = [
        ("blake3 avx512 t1", "BLAKE3-256 avx512, 1 thread"),
        ("blake3 portable t1", "BLAKE3-256 portable, 1 thread"),
        ("blake3 avx512 t2", "BLAKE3-256 avx512, 2 threads"),
    ]
    rows = [Row("digest", label, speeds[key], sha, "GB/s") for key, label in cases if key in speeds]
    rows.append(Row("digest", "SHA-256 (OpenSSL), 1 thread", sha, None, "GB/s"))
    print_rows(
        "Container digest over 256 MiB, median wall time of 5; reference: OpenSSL SHA-256 at one "
        "thread (ratio = ours / reference throughput, above 1 is faster)",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
