"""`bench/run gwas-logistic`: `hec gwas logistic`'s encrypted computation (gwas/programs/
logistic.hec, the semi-parallel logistic regression with covariates) next to the same algorithm
on OpenFHE (bench/gwas_logistic_reference.py, the PyPI `openfhe` wheel) on the same data in the
same run: key generation, encryption, server computation, decryption (medians of repeats), at
N = 1000 individuals, M = 4096 SNPs, K = 4 (three covariates and the intercept), 1 and 2
threads; both results decrypted and checked against the float64 statistic. Then a row for hec
alone at N = 5000, M = 16384, K = 4 (issue 22's scale): seconds and peak resident memory of
every phase, run once.

Both sides start from the same owner inputs, computed here as `hec gwas logistic` computes them
(gwas/logistic.py: the covariate-only fit by Newton's method; per individual r = y - p,
w = p (1 - p), V = w x), and both form the products r S and w S^2 owner-side, before encryption;
the server adds them and multiplies V (encrypted once, replicated) by S without
relinearization. Ours runs through the `encrypted` backend of gwas.backend as `hec gwas
logistic` runs it (separate role processes exchanging checksummed ciphertext files, charged to
ours); the reference keeps everything in one process's memory (its workers' partial sums aside).

Options: --n 1000 --snps 4096 --threads 1,2 --repeats 3 --large 5000x16384 (`--large none`
skips the hec-only row; it writes about 22 GiB of ciphertext files, deleted block by block;
`--large-only` runs that row alone, at the largest of --threads).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from common import (
    ROOT,
    Reference,
    Row,
    openfhe_version,
    print_rows,
    reference_python,
    try_reference,
)
from scipy import stats

from gwas import DEFAULT_PRECISION_BITS
from gwas.backend import Block, EncryptedBackend
from gwas.demo_logistic import COVARIATES, simulate_logistic_cohort
from gwas.logistic import (
    PROGRAM_LOGISTIC,
    NullFit,
    design_matrix,
    finish,
    null_fit,
    owner_inputs,
    r_squared,
)
from gwas.memory import PhaseMeter, peak_rss_bytes, reset_peak_rss

BENCH = "gwas-logistic"
PHASES = ("keygen", "encrypt", "compute", "decrypt")
SHARED = frozenset({"r", "w", "V"})  # the owner inputs every SNP block shares


@dataclass
class Cohort:
    S: np.ndarray  # N x M minor-allele counts
    inputs: dict[str, np.ndarray]  # r, w (N) and V (N x K): the owners' inputs
    fit: NullFit


def cohort(n: int, m: int, seed: int) -> Cohort:
    """`hec demo logistic`'s simulated cohort (an ancestry covariate that confounds, age, sex,
    ten planted effects) and the owner inputs `hec gwas logistic` computes from it."""
    c = simulate_logistic_cohort(n, m, seed=seed)
    x = design_matrix(c.covariates, list(COVARIATES), Path("<simulated>"))
    y = c.case.astype(np.float64)
    fit = null_fit(x, y)
    return Cohort(c.genotypes, owner_inputs(x, y, fit), fit)


@dataclass
class Run:
    """One side's run: seconds and peak resident bytes per phase, the decrypted sums."""

    seconds: dict[str, float]
    peak: dict[str, int]
    revealed: dict[str, np.ndarray]
    params: dict = field(default_factory=dict)


def run_ours(data: Cohort, threads: int, cache: Path) -> Run:
    """logistic.hec through the encrypted backend, the way `hec gwas logistic` runs it: keygen
    once, then per SNP block encrypt, compute, decrypt (r, w, V encrypted once)."""
    n, m = data.S.shape
    k = data.inputs["V"].shape[1]
    backend = EncryptedBackend()
    backend.threads = threads
    sizes = {"N": n, "M": m, "K": k}
    compiled = backend.compile(PROGRAM_LOGISTIC, sizes, DEFAULT_PRECISION_BITS, cache)
    width = compiled.block_width(n, m)
    blocks = (
        Block(b, a, min(a + width, m), {**data.inputs, "S": data.S[:, a : a + width]}, SHARED)
        for b, a in enumerate(range(0, m, width))
    )
    meter = PhaseMeter()
    revealed = {"score": np.zeros(m), "sws": np.zeros(m), "vs": np.zeros((k, m))}
    n_blocks = -(-m // width)
    for block, values in backend.run(compiled, blocks, n_blocks, meter, lambda *a: None):
        for name, value in values.items():
            revealed[name][..., block.start : block.stop] = value
    params = dict(compiled.report["params"], block_width=width, blocks=n_blocks)
    params["upload_bytes"] = backend.upload_bytes
    return Run(dict(meter.seconds), dict(meter.peak_rss), revealed, params)


def parse_reference(stdout: str, out: Path) -> Run:
    """The reference's JSON line (its last line of stdout) and its decrypted sums (.npz)."""
    facts = json.loads(stdout.strip().splitlines()[-1])
    res = np.load(out)
    revealed = {name: np.asarray(res[name]) for name in ("score", "sws", "vs")}
    params = dict(facts["params"], openfhe=facts.get("openfhe", "?"))
    return Run(facts["seconds"], facts["peak_rss"], revealed, params)


def run_reference(python: str, data: Path, threads: int, workdir: Path) -> Run:
    out = workdir / f"ref-{threads}.npz"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # its parallelism is over individuals: --workers processes
        "OMP_WAIT_POLICY": "passive",
        "PYTHONPATH": str(ROOT / "bench"),  # it imports bench/gwas_chisq_reference's meters
    }
    proc = subprocess.run(
        [python, str(ROOT / "bench" / "gwas_logistic_reference.py"), "--data", str(data),
         "--out", str(out), "--workers", str(threads)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return parse_reference(proc.stdout, out)


def accuracy(revealed: dict[str, np.ndarray], data: Cohort) -> dict[str, float]:
    """STAT from the decrypted sums (the client block's formula) against the float64 statistic
    on the same data: the largest |difference|, R^2, and the worst error of a decrypted sum
    relative to that sum's largest float64 magnitude."""
    S = data.S
    want = {
        "score": data.inputs["r"] @ S,
        "sws": data.inputs["w"] @ (S * S),
        "vs": data.inputs["V"].T @ S,
    }
    got_stat = finish(revealed["score"], revealed["sws"], revealed["vs"], data.fit.h_inv,
                      stats.norm.sf)["STAT"]  # fmt: skip
    want_stat = finish(want["score"], want["sws"], want["vs"], data.fit.h_inv,
                       stats.norm.sf)["STAT"]  # fmt: skip
    ok = np.isfinite(got_stat) & np.isfinite(want_stat)
    sums_rel = max(
        float(np.max(np.abs(revealed[k] - want[k])) / max(float(np.max(np.abs(want[k]))), 1e-300))
        for k in want
    )
    return {
        "stat_abs": float(np.max(np.abs(got_stat[ok] - want_stat[ok]), initial=0.0)),
        "stat_r2": r_squared(got_stat, want_stat),
        "sums_rel": sums_rel,
        "na_differ": float(np.sum(np.isfinite(got_stat) != np.isfinite(want_stat))),
    }


def median_run(runs: list[Run]) -> tuple[dict[str, float], dict[str, int]]:
    """Median seconds and the largest peak of each phase over repeated runs."""
    seconds = {p: statistics.median(r.seconds[p] for r in runs) for p in PHASES}
    peak = {p: max(r.peak.get(p, 0) for r in runs) for p in PHASES}
    return seconds, peak


def comparison_rows(
    case: str,
    ours: list[Run],
    ours_acc: dict[str, float] | None,
    ref: list[Run] | None,
    ref_acc: dict[str, float] | None,
    ref_note: str,
) -> list[Row]:
    """The rows of one size and thread count: each phase's median seconds, its peak resident
    memory, and the accuracy of STAT (ours, and OpenFHE's as the row's reference, or its cells
    saying why it is missing: `ref_note` from try_reference)."""
    version = openfhe_version()
    if ref:
        p = ref[0].params
        note = (
            f"openfhe {p.get('openfhe', '?')}: ring 2^{int(p['ring_dim']).bit_length() - 1}, "
            f"moduli {p['moduli_bits']}, {p['workers']} worker process(es)"
        )
    else:
        note = ref_note or "not measured"
    o_s, o_peak = median_run(ours) if ours else ({}, {})
    r_s, r_peak = median_run(ref) if ref else ({}, {})
    rows: list[Row] = []

    def add(label: str, mine: float | None, theirs: float | None, unit: str) -> None:
        refs = (Reference("openfhe", version, theirs, note if theirs is not None else ref_note),)
        rows.append(Row(BENCH, f"{case} {label}", mine, theirs, unit, refs))

    for phase in PHASES:
        add(phase, o_s.get(phase), r_s.get(phase), "s")
    for phase in PHASES:
        mine, theirs = o_peak.get(phase), r_peak.get(phase)
        add(f"{phase} peak RSS", mine / 2**20 if mine else None,
            theirs / 2**20 if theirs else None, "MiB")  # fmt: skip
    o_acc, r_acc = ours_acc or {}, ref_acc or {}
    add("STAT max abs. error", o_acc.get("stat_abs"), r_acc.get("stat_abs"), "abs")
    add("STAT R^2 vs float64", o_acc.get("stat_r2"), r_acc.get("stat_r2"), "R^2")
    add("sums max rel. error", o_acc.get("sums_rel"), r_acc.get("sums_rel"), "rel")
    return rows


def large_rows(case: str, run: Run, driver_peak: int) -> list[Row]:
    """The hec-only row at scale: seconds and peak resident memory of every phase (the role
    process's), the bench process's own peak (which holds the genotypes), the upload."""
    rows = [Row(BENCH, f"{case} {p}", run.seconds.get(p), None, "s") for p in PHASES]
    rows += [
        Row(BENCH, f"{case} {p} peak RSS", run.peak.get(p, 0) / 2**20 or None, None, "MiB")
        for p in PHASES
    ]
    rows.append(Row(BENCH, f"{case} driver process peak RSS", driver_peak / 2**20, None, "MiB"))
    upload = run.params.get("upload_bytes")
    rows.append(Row(BENCH, f"{case} ciphertext files written", upload / 2**30 if upload else None,
                    None, "GiB"))  # fmt: skip
    return rows


def parse_size(text: str) -> tuple[int, int] | None:
    """`--large NxM` (or `none`)."""
    if text.lower() == "none":
        return None
    n, _, m = text.lower().partition("x")
    return int(n), int(m)


def main() -> int:
    parser = argparse.ArgumentParser(
        description="hec gwas logistic (logistic.hec, encrypted) vs the same algorithm on OpenFHE"
    )
    parser.add_argument("--n", type=int, default=1000, help="individuals N")
    parser.add_argument("--snps", type=int, default=4096, help="SNPs M")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side (median)")
    parser.add_argument("--large", default="5000x16384", help="NxM of the hec-only row, or none")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument(
        "--large-only", action="store_true", help="only the hec-only row (no comparison)"
    )
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    large = parse_size(args.large)
    load = os.getloadavg()
    print(f"# load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", file=sys.stderr)

    rows: list[Row] = []
    python, py_note = (None, "") if args.large_only else try_reference("openfhe", reference_python)
    with tempfile.TemporaryDirectory(prefix="hec-bench-logistic-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        data = cohort(args.n, args.snps, args.seed)
        k = data.inputs["V"].shape[1]
        npz = work / "cohort.npz"
        np.savez(npz, S=data.S, r=data.inputs["r"], w=data.inputs["w"], V=data.inputs["V"])
        for t in [] if args.large_only else threads:
            ours = [run_ours(data, t, cache) for _ in range(args.repeats)]
            p = ours[0].params
            print(
                f"# ours N={args.n} t={t}: ring 2^{p['log_n']}, moduli {p['moduli_bits']}, "
                f"{p['blocks']} block(s) of {p['block_width']} SNPs",
                file=sys.stderr,
            )
            ref: list[Run] | None = None
            note = py_note
            if python is not None:

                def measure(py: str = python, t: int = t) -> list[Run]:
                    return [run_reference(py, npz, t, work) for _ in range(args.repeats)]

                ref, note = try_reference("openfhe", measure)
            case = f"N={args.n} M={args.snps} K={k} t={t}"
            rows += comparison_rows(
                case, ours, accuracy(ours[0].revealed, data),
                ref, accuracy(ref[0].revealed, data) if ref else None, note,
            )  # fmt: skip
        del data
        if large is not None:
            n, m = large
            data = cohort(n, m, args.seed)
            t = max(threads)
            k = data.inputs["V"].shape[1]
            reset_peak_rss()
            run = run_ours(data, t, cache)
            acc = accuracy(run.revealed, data)
            case = f"hec only N={n} M={m} K={k} t={t}"
            rows += large_rows(case, run, peak_rss_bytes())
            rows.append(Row(BENCH, f"{case} STAT max abs. error", acc["stat_abs"], None, "abs"))
    title = f"{BENCH}: hec logistic.hec (ours) vs the same algorithm on OpenFHE (reference)"
    print_rows(f"{title}; load average at start {load[0]:.2f}", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
