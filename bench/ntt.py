"""`bench/run ntt`: our negacyclic NTT, forward and inverse, per limb, on both kernel paths.

Runs the Google Benchmark binary `hec_bench_ntt` (built by the `bench` preset) for
N = 2^14 and 2^16 with one 50-bit prime, single-threaded, and reports the median of 5
repetitions of the CPU time (steadier than wall time on a machine shared with other
processes): microseconds per transform of one limb and nanoseconds per butterfly
(butterflies = N/2 * log2 N), for the AVX-512 IFMA path and the portable path, and the
speedup of AVX-512 over portable.

No OpenFHE row: the `openfhe` PyPI wheel exposes no NTT (and ships no C++ headers), so its
NTT cannot be timed in the same run; we do not quote a figure from elsewhere.
Targets (issue 3): AVX-512 <= 0.6 ns/butterfly at N = 2^16 and >= 3x faster than portable.
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
PATHS = {0: "portable", 1: "avx512-ifma"}
NAME = re.compile(r"BM_Ntt(Forward|Inverse)/logN:(\d+)/path:(\d)")


def run_benchmarks() -> dict[tuple[str, int, str], float]:
    """Median nanoseconds per transform, keyed by (direction, log N, path)."""
    binary = ROOT / "build" / "bench" / "hec_bench_ntt"
    if not binary.exists():
        raise SystemExit(f"bench/ntt: {binary} is missing; build the runtime with preset 'bench'")
    logs = "|".join(str(v) for v in LOG_NS)
    out = subprocess.run(
        [
            str(binary),
            f"--benchmark_filter=BM_Ntt.*/logN:({logs})/",
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
        if b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            continue
        m = NAME.match(b["run_name"])
        if m is None:
            continue
        direction, log_n, path = m.group(1).lower(), int(m.group(2)), PATHS[int(m.group(3))]
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        result[(direction, log_n, path)] = b["cpu_time"] * scale
    return result


def main() -> int:
    times = run_benchmarks()
    rows: list[Row] = []
    lines: list[str] = []
    for direction in ("forward", "inverse"):
        for log_n in LOG_NS:
            n = 1 << log_n
            butterflies = n // 2 * log_n
            per_path: dict[str, float] = {}
            for path in ("avx512-ifma", "portable"):
                ns = times.get((direction, log_n, path))
                if ns is None:
                    lines.append(f"{direction} N=2^{log_n} {path}: not run (CPU lacks the path)")
                    continue
                per_path[path] = ns / butterflies
                case = f"{direction} N=2^{log_n} {path}"
                rows.append(Row("ntt", case + " time/limb", ns / 1e3, None, "us"))
                rows.append(Row("ntt", case, ns / butterflies, None, "ns/butterfly"))
            if len(per_path) == 2:
                speedup = per_path["portable"] / per_path["avx512-ifma"]
                rows.append(
                    Row("ntt", f"{direction} N=2^{log_n} speedup ifma/portable", speedup, None, "x")
                )
    print_rows(
        "Negacyclic NTT, one 50-bit prime, single thread, median CPU time of 5 "
        "(ours only: OpenFHE's NTT is not exposed by its Python wheel, no reference row)",
        rows,
    )
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
