"""`bench/run gwas-chisq-dask`: the overhead of the Dask engine (issue 26, docs/scale-out.md).

`hec gwas chisq` on one simulated cohort (no missing call: chisq.hec), run alternately as the
single-process run (one block per ciphertext budget, the roles on every core) and on a Dask
LocalCluster of K worker processes (`--workers K`: two blocks per worker, each role on
cores / K threads), in the same run, on the same files; wall seconds of the whole command
(read, scan, cached compile, keygen, blocks, merge, write), medians over the repeats. The
ratio Dask / single process is the engine's overhead (below 1: a gain). The two .assoc files
are compared byte for byte every time (the counts are exact, so they must be equal).

What the ratio can show depends on the machine: on a 2-core machine shared with other work,
the single-process run already uses both cores, so K = 2 workers can only add overhead
(cluster start-up, the blocks' inputs written to the bank, one task per block, the shared
phenotype encrypted once more per block); the figure says how much.

Options: --individuals 2000 --snps 65536 --workers 2 --repeats 3 (smaller for a quick look).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bed_reader import to_bed
from common import Row, print_rows

BENCH = "gwas-chisq-dask"


def write_cohort(prefix: Path, n: int, m: int, seed: int) -> None:
    """A PLINK 1 fileset: Hardy-Weinberg genotypes (MAF uniform in [0.01, 0.5]), a balanced
    random case/control phenotype, no missing call."""
    rng = np.random.default_rng(seed)
    maf = rng.uniform(0.01, 0.5, size=m)
    genotypes = rng.binomial(2, maf, size=(n, m)).astype(np.int8)
    props = {
        "fid": [f"f{i}" for i in range(n)],
        "iid": [f"i{i}" for i in range(n)],
        "sex": [1] * n,
        "pheno": ["2" if rng.random() < 0.5 else "1" for _ in range(n)],
        "chromosome": ["1"] * m,
        "sid": [f"s{j}" for j in range(m)],
        "bp_position": list(range(1, m + 1)),
        "allele_1": ["A"] * m,
        "allele_2": ["C"] * m,
    }
    to_bed(Path(f"{prefix}.bed"), genotypes, properties=props, count_A1=True)


def run_chisq(prefix: Path, out: Path, cache: Path, extra: list[str]) -> tuple[float, str]:
    """Wall seconds of the whole command as a user runs it (`python -m hec gwas chisq`, in
    its own process: interpreter start-up, and for Dask the cluster's start and stop, are part
    of it), and its .log."""
    cmd = [sys.executable, "-m", "hec", "gwas", "chisq", "--bfile", str(prefix), "--out",
           str(out), "--cache-dir", str(cache), "--no-plots", "--no-progress", *extra]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return seconds, out.with_name(out.name + ".log").read_text()


def run_once(prefix: Path, out: Path, cache: Path, extra: list[str]) -> tuple[float, str]:
    """`run_chisq`'s wall seconds and the phases of its .log."""
    seconds, log = run_chisq(prefix, out, cache, extra)
    phases = ", ".join(f"{m.group(1)} {float(m.group(2)):.1f}" for m in _PHASE.finditer(log))
    return seconds, phases


_PHASE = re.compile(r"^  (\w+) +([0-9.]+) s   peak", re.M)


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/run gwas-chisq-dask", description=__doc__)
    ap.add_argument("--individuals", type=int, default=2000)
    ap.add_argument("--snps", type=int, default=65536)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="hec-bench-dask-") as tmp:
        d = Path(tmp)
        prefix = d / "cohort"
        write_cohort(prefix, args.individuals, args.snps, 26)
        cache = d / "cache"
        cases = {
            "single process": [],
            f"Dask LocalCluster, {args.workers} workers": ["--workers", str(args.workers)],
        }
        # Compile and build once, unmeasured (both cases then hit the program cache).
        run_once(prefix, d / "warm", cache, [])
        want = (d / "warm.assoc").read_bytes()
        times: dict[str, list[float]] = {c: [] for c in cases}
        phases: dict[str, str] = {}
        for r in range(args.repeats):
            for k, (case, extra) in enumerate(cases.items()):  # alternately, in the same run
                out = d / f"r{r}-{k}"
                seconds, phases[case] = run_once(prefix, out, cache, extra)
                times[case].append(seconds)
                if out.with_name(out.name + ".assoc").read_bytes() != want:
                    print(
                        f"{case}: the .assoc differs from the single-process run's", file=sys.stderr
                    )
                    return 1
                print(f"  repeat {r + 1}: {case}: {seconds:.2f} s", file=sys.stderr)
    single, dask = (statistics.median(v) for v in times.values())
    for case, parts in phases.items():  # where the time went, in the last repeat
        print(f"  phases of the last {case} run (s): {parts}", file=sys.stderr)
    load = os.getloadavg()[0]
    title = (
        f"{BENCH}: hec gwas chisq, N = {args.individuals}, M = {args.snps}, wall seconds of "
        f"the whole command, median of {args.repeats} (alternating, same run); {cores} cores, "
        f"load average {load:.1f} at the end; .assoc identical in every run"
    )
    print_rows(
        title,
        [Row(BENCH, f"N={args.individuals} M={args.snps} workers={args.workers} vs single",
             dask, single, "s")],
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
