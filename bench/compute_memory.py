"""`bench/run compute-memory`: peak resident set of the server role (`compute`) of the generated
chi-square program (examples/gwas/chisq.hec) at M = 16384 SNPs for N = 5000 and N = 10000
individuals (issue 7: under 1.5 GB, and doubling N adds at most 10%).

For each N: compile and build the program for that size (128-bit secure parameters chosen by
the compiler), make random genotypes and phenotypes, run keygen and encrypt (the driver's role
sequence, driver/roles.py, unsigned), then run `compute` alone in a fresh process and read its
peak resident set twice: from the kernel's accounting of the finished child (getrusage
RUSAGE_CHILDREN ru_maxrss, in a wrapper process whose only child is compute) and from the
program's own report (VmHWM). Only compute is measured; keygen and encrypt run before it in
other processes. Every ciphertext is written to disk (about 7.9 GB at N = 5000 and 15.7 GB at
N = 10000 with these parameters) and deleted after the measurement. No reference library
row: the comparison is ours against the target and N = 10000 against N = 5000 (the ratio row).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row

TARGET_BYTES = 1.5e9

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(done.returncode)
"""


def measure(n: int, m: int, work: Path, seed: int) -> dict[str, float]:
    from compiler.analysis.sizes import Sizes
    from driver.pipeline import Options
    from driver.roles import RoleOutput, RoleSequence, RowProgress, run_role
    from driver.run import compile_cpp

    built = compile_cpp(
        ROOT / "examples/gwas/chisq.hec",
        work / "build",
        Options(sizes=Sizes.of({"N": n, "M": m}), flooding=False),
    )
    rng = np.random.default_rng(seed)
    maf = rng.uniform(0.05, 0.5, size=m)
    np.save(work / "S.npy", rng.binomial(2, maf, size=(n, m)).astype(np.uint8))
    np.save(work / "y.npy", rng.integers(0, 2, size=n).astype(np.uint8))

    def runner(binary: Path, args: Sequence[str], progress: RowProgress | None) -> RoleOutput:
        # compute alone runs under the wrapper whose only child it is (the kernel's account).
        wrap = [sys.executable, "-c", WRAPPER] if args[0] == "compute" else []
        return run_role(binary, *args, wrap=wrap, on_progress=progress)

    # Unsigned: the measurement is the arithmetic of the roles, as before signing existed.
    roles = RoleSequence(built.binary, work, runner, signed=False)
    roles.keygen()
    t0 = time.perf_counter()
    roles.encrypt({"y": work / "y.npy", "S": work / "S.npy"}, work / "ct")
    t_enc = time.perf_counter() - t0
    disk = sum(f.stat().st_size for f in (work / "ct").iterdir())
    t0 = time.perf_counter()
    done = roles.compute(work / "ct", work / "res")
    t_compute = time.perf_counter() - t0
    kernel_peak = float(done.stdout.strip().splitlines()[-1])
    own = [ln for ln in done.stderr.splitlines() if "peak_rss_bytes=" in ln]
    own_peak = float(own[-1].split("peak_rss_bytes=")[1].rstrip(")")) if own else float("nan")
    # The results must decrypt to the right statistics, or the measurement means nothing.
    got = roles.decrypt(work / "res", work / "dec", flooding=False)["chi2_den"]
    y = np.load(work / "y.npy").astype(np.float64)
    s = np.load(work / "S.npy").astype(np.float64)
    c1 = s.sum(axis=0)
    r1 = 2 * y.sum()
    d = 2.0 * n
    want = c1 * (d - c1) * r1 * (d - r1)
    rel = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    if rel > 1e-4:
        raise SystemExit(f"N={n}: decrypted chi2_den is off by {rel:.2e} relative")
    return {
        "kernel_peak": kernel_peak,
        "own_peak": own_peak,
        "encrypt_s": t_enc,
        "compute_s": t_compute,
        "disk": float(disk),
        "rel_error": rel,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--m", type=int, default=16384)
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 10000])
    parser.add_argument("--work", default="", help="scratch directory (default: a temp dir)")
    args = parser.parse_args()
    preset = os.environ.get("HEC_PRESET", "release")
    os.environ["HEC_RUNTIME_BUILD"] = str(ROOT / "build" / preset)
    results: dict[int, dict[str, float]] = {}
    for n in args.n:
        base = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="hec-mem-"))
        work = base / f"N{n}"
        work.mkdir(parents=True, exist_ok=True)
        try:
            results[n] = measure(n, args.m, work, seed=n)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    rows: list[Row] = []
    for n, r in results.items():
        case = f"chisq compute peak RSS, N={n} M={args.m}"
        rows.append(Row("compute-memory", case, r["kernel_peak"] / 2**20, None, "MiB"))
    if len(results) >= 2:
        (n0, r0), (n1, r1) = list(results.items())[:2]
        rows.append(
            Row(
                "compute-memory",
                f"peak RSS N={n1} / N={n0}",
                r1["kernel_peak"] / r0["kernel_peak"],
                None,
                "ratio",
            )
        )
    print(
        "compute-memory: peak resident set of `compute` (chisq), measured by the kernel "
        f"(ru_maxrss of the child). Target < {TARGET_BYTES / 1e9:.1f} GB; N doubled: <= +10%."
    )
    print(
        f"{'N':>6} {'peak RSS':>10} {'own VmHWM':>10} {'ciphertexts':>12} {'encrypt':>9} "
        f"{'compute':>9} {'chi2_den rel.err':>17}"
    )
    for n, r in results.items():
        print(
            f"{n:>6} {r['kernel_peak'] / 2**20:>7.1f} MiB {r['own_peak'] / 2**20:>6.1f} MiB "
            f"{r['disk'] / 2**30:>8.2f} GiB {r['encrypt_s']:>8.1f}s {r['compute_s']:>8.1f}s "
            f"{r['rel_error']:>17.2e}"
        )
    print()
    for row in rows:
        print(row.as_json())
    ok = all(r["kernel_peak"] < TARGET_BYTES for r in results.values())
    if len(results) >= 2:
        last = rows[-1].ours
        ok = ok and last is not None and last <= 1.10
    print(json.dumps({"bench": "compute-memory", "targets_met": ok}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
