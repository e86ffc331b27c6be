"""`bench/run ntt`: our negacyclic NTT, forward and inverse, per limb, on both kernel paths,
against OpenFHE's NTT measured in the same run.

Runs the Google Benchmark binary `hec_bench_ntt` (built by the `bench` preset) for
N = 2^14 and 2^16 with one 50-bit prime, single-threaded, and reports the median of 5
repetitions of the CPU time (steadier than wall time on a machine shared with other
processes): microseconds per transform of one limb and nanoseconds per butterfly
(butterflies = N/2 * log2 N), for the AVX-512 IFMA path and the portable path, and the
speedup of AVX-512 over portable.

Reference: the `openfhe` PyPI wheel (bench/setup-reference) exposes no NTT to Python and
ships no headers, so `hec_bench_openfhe_ntt` loads the wheel's libOPENFHEcore.so.1 and calls
OpenFHE's own ChineseRemainderTransformFTT forward / inverse (what DCRTPoly's format switch
calls) on its own NativeVector, with the same prime and root, in the same Google Benchmark
harness, after checking that its output equals ours. Ratio = ours / OpenFHE (below 1 means
we are faster). Second reference: Lattigo v6's ring package (bench/lattigo/ntt.go, built by
`bench/setup-reference lattigo`): `ring.NewRing` on the same prime (the largest 50-bit prime
that is 1 mod 2N, as ours picks it), `r.NTT(p, p)` / `r.INTT(p, p)` as Lattigo's own ring
benchmarks call them, checked first (round trip, and the product by X is the negacyclic
shift), timed the same way (median of 5 repetitions of at least 0.2 s of CPU time each,
GOMAXPROCS=1); `ratio_fastest` = ours / the faster of the two. A reference that cannot be set
up or run makes its cells say so. Targets (issue 3): AVX-512 <= 0.6 ns/butterfly at N = 2^16
and >= 3x faster than portable.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    LATTIGO,
    ROOT,
    Reference,
    ReferenceUnavailableError,
    Row,
    lattigo_version,
    openfhe_version,
    print_rows,
    reference_python,
    run_lattigo,
    try_reference,
)

LOG_NS = (14, 16)
PATHS = {0: "portable", 1: "avx512-ifma"}
NAME = re.compile(r"BM_(OpenFhe)?Ntt(Forward|Inverse)/logN:(\d+)(?:/path:(\d))?")


def openfhe_core_library() -> tuple[str | None, str]:
    """Path of the wheel's libOPENFHEcore.so.1, or None and the reason."""
    try:
        python = reference_python()
        out = subprocess.run(
            [python, "-c", "import openfhe, os; print(os.path.dirname(openfhe.__file__))"],
            check=True,
            capture_output=True,
            text=True,
        )
    except (ReferenceUnavailableError, subprocess.CalledProcessError, OSError, IndexError) as e:
        return None, f"OpenFHE reference unavailable ({e})"
    lib = Path(out.stdout.strip()) / "lib" / "libOPENFHEcore.so.1"
    if not lib.exists():
        return None, f"OpenFHE reference unavailable ({lib} missing)"
    return str(lib), ""


def run_benchmarks(
    binary_name: str, extra_env: dict[str, str]
) -> dict[tuple[str, int, str], float]:
    """Median CPU nanoseconds per transform, keyed by (direction, log N, path or 'openfhe')."""
    binary = ROOT / "build" / "bench" / binary_name
    if not binary.exists():
        raise SystemExit(f"bench/ntt: {binary} is missing; build the runtime with preset 'bench'")
    logs = "|".join(str(v) for v in LOG_NS)
    out = subprocess.run(
        [
            str(binary),
            f"--benchmark_filter=Ntt.*/logN:({logs})(/|$)",
            "--benchmark_format=json",
            "--benchmark_repetitions=5",
            "--benchmark_report_aggregates_only=true",
            "--benchmark_min_time=0.2",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"HEC_THREADS": "1", "OMP_NUM_THREADS": "1", **extra_env},
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
        direction, log_n = m.group(2).lower(), int(m.group(3))
        path = "openfhe" if m.group(1) else PATHS[int(m.group(4))]
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
        result[(direction, log_n, path)] = b["cpu_time"] * scale
    return result


def reference_cells(
    openfhe_ns: float | None, lattigo_ns: float | None, scale: float, notes: tuple[str, str]
) -> tuple[Reference, ...]:
    """A case's OpenFHE and Lattigo cells: nanoseconds per transform divided by `scale` (None
    where the reference has no figure; `notes` say why a reference is not available)."""

    def per(ns: float | None) -> float | None:
        return ns / scale if ns is not None else None

    return (
        Reference("openfhe", openfhe_version(), per(openfhe_ns), notes[0]),
        Reference(LATTIGO, lattigo_version(), per(lattigo_ns), notes[1]),
    )


def run_lattigo_ntt() -> dict[tuple[str, int], float]:
    """Lattigo's median CPU nanoseconds per transform, keyed by (direction, log N)."""
    cfg = {"scheme": "ntt", "log_ns": list(LOG_NS), "bits": 50, "repeats": 1}
    _, times = run_lattigo(cfg)
    out: dict[tuple[str, int], float] = {}
    for op, seconds in times.items():
        direction, log_n = op.split("/")
        out[(direction, int(log_n))] = seconds * 1e9
    return out


def main() -> int:
    times = run_benchmarks("hec_bench_ntt", {})
    lib, why_not = openfhe_core_library()
    if lib is not None:
        times |= run_benchmarks("hec_bench_openfhe_ntt", {"HEC_OPENFHE_CORE_LIB": lib})
    lattigo, lattigo_note = try_reference(LATTIGO, run_lattigo_ntt)
    openfhe_note = "" if lib is not None else f"not available ({why_not})"
    notes = (openfhe_note, lattigo_note)
    rows: list[Row] = []
    lines: list[str] = []
    for direction in ("forward", "inverse"):
        for log_n in LOG_NS:
            n = 1 << log_n
            butterflies = n // 2 * log_n
            per_path: dict[str, float] = {}
            ref_ns = times.get((direction, log_n, "openfhe"))
            if lib is not None and ref_ns is None:
                lines.append(f"{direction} N=2^{log_n}: OpenFHE benchmark produced no figure")
            lat_ns = lattigo.get((direction, log_n)) if lattigo is not None else None
            if lattigo is not None and lat_ns is None:
                lines.append(f"{direction} N=2^{log_n}: Lattigo produced no figure")
            for path in ("avx512-ifma", "portable"):
                ns = times.get((direction, log_n, path))
                if ns is None:
                    lines.append(f"{direction} N=2^{log_n} {path}: not run (CPU lacks the path)")
                    continue
                per_path[path] = ns / butterflies
                case = f"{direction} N=2^{log_n} {path}"
                # `reference` and `ratio` stay OpenFHE's (the first cell).
                us = reference_cells(ref_ns, lat_ns, 1e3, notes)
                bf = reference_cells(ref_ns, lat_ns, butterflies, notes)
                rows.append(Row("ntt", case + " time/limb", ns / 1e3, us[0].value, "us", us))
                rows.append(Row("ntt", case, ns / butterflies, bf[0].value, "ns/butterfly", bf))
            if len(per_path) == 2:
                speedup = per_path["portable"] / per_path["avx512-ifma"]
                rows.append(
                    Row("ntt", f"{direction} N=2^{log_n} speedup ifma/portable", speedup, None, "x")
                )
    print_rows(
        "Negacyclic NTT, one 50-bit prime, single thread, median CPU time of 5 (references: "
        f"OpenFHE {openfhe_version()} wheel's NTT, Lattigo {lattigo_version()} ring NTT, same "
        "run; ratio = ours / OpenFHE, ratio_fastest = ours / the faster)",
        rows,
    )
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
