"""`bench/run modarith`: scalar Barrett versus Shoup modular multiplication, ns per product.

Runs the Google Benchmark binary `hec_bench_modarith` (built by the `bench` preset). No
reference library row: this is an internal comparison of our two reductions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows


def main() -> int:
    binary = ROOT / "build" / "bench" / "hec_bench_modarith"
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
    )
    rows = []
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        ns_per_item = 1e9 / b["items_per_second"]
        rows.append(Row("modarith", b["run_name"], ns_per_item, None, "ns/product"))
    print_rows("Modular multiplication, 50-bit modulus, single thread (median of 5)", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
