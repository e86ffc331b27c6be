"""`bench/run math-kernels`: base conversion and pointwise RNS kernels, both kernel paths.

Runs the Google Benchmark binaries `hec_bench_rns` and `hec_bench_poly` (preset `bench`)
for N = 2^14 and 2^16, 50-bit primes, single-threaded, and reports the median CPU time of 5
repetitions in nanoseconds per coefficient: fast base conversion from 8 limbs to 4 limbs
(approximate and exact, per coefficient of the whole conversion), and per limb the
pointwise add, multiply, multiply-add and the 8-term lazy multiply-accumulate (per product
term). The speedup row divides the portable time by the AVX-512 time.

No OpenFHE row: these kernels are not exposed by the `openfhe` PyPI wheel, so they cannot
be timed in the same run; we do not quote a figure from elsewhere.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows

LOG_NS = (14, 16)
PATHS = {0: "portable", 1: "avx512"}
NAME = re.compile(r"(BM_\w+)/logN:(\d+)/path:(\d)")
KERNELS = {
    "BM_BaseConvertApprox8to4": "base conversion approx 8->4",
    "BM_BaseConvertExact8to4": "base conversion exact 8->4",
    "BM_Add": "add",
    "BM_Multiply": "multiply",
    "BM_MultiplyAdd": "multiply-add",
    "BM_MultiplyAccumulate8": "multiply-accumulate 8 terms",
}


def run(binary_name: str) -> dict[tuple[str, int, str], float]:
    """Median CPU nanoseconds per item, keyed by (kernel, log N, path)."""
    binary = ROOT / "build" / "bench" / binary_name
    if not binary.exists():
        raise SystemExit(f"bench/math_kernels: {binary} is missing; build with preset 'bench'")
    logs = "|".join(str(v) for v in LOG_NS)
    out = subprocess.run(
        [
            str(binary),
            f"--benchmark_filter=/logN:({logs})/",
            "--benchmark_format=json",
            "--benchmark_repetitions=5",
            "--benchmark_report_aggregates_only=true",
            "--benchmark_min_time=0.2",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"HEC_THREADS": "1", "OMP_NUM_THREADS": "1"},
    )
    result: dict[tuple[str, int, str], float] = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        m = NAME.match(b["run_name"])
        if m is None or m.group(1) not in KERNELS:
            continue
        key = (m.group(1), int(m.group(2)), PATHS[int(m.group(3))])
        result[key] = 1e9 / b["items_per_second"]
    return result


def main() -> int:
    times = run("hec_bench_rns") | run("hec_bench_poly")
    rows: list[Row] = []
    for kernel, label in KERNELS.items():
        for log_n in LOG_NS:
            per_path = {
                p: times[(kernel, log_n, p)] for p in PATHS.values() if (kernel, log_n, p) in times
            }
            for path, ns in per_path.items():
                rows.append(
                    Row("math-kernels", f"{label} N=2^{log_n} {path}", ns, None, "ns/coeff")
                )
            if len(per_path) == 2:
                rows.append(
                    Row(
                        "math-kernels",
                        f"{label} N=2^{log_n} speedup avx512/portable",
                        per_path["portable"] / per_path["avx512"],
                        None,
                        "x",
                    )
                )
    print_rows(
        "RNS kernels, 50-bit primes, single thread, median CPU time of 5 "
        "(ours only: OpenFHE does not expose these kernels in its Python wheel)",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
