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

What the compute rows compare: ours is the compute role's wall time, which reads every upload
from its file and verifies its digest (the signed BLAKE3-256, docs/security.md) before
adding it; the reference folds ciphertexts it holds in memory. So the rows add ours split as the
role reports it ("compute: arithmetic", the passes' folds, next to the reference's in-memory
fold; "compute: read+verify", which the in-memory reference has no counterpart for). And the
reference runs twice: as written (two moduli, a 50-bit scale at N = 1000: over 100x less precise
than ours) and at matched precision (`--scale-bits`: our program's scale, 57 bits, which takes
three moduli in OpenFHE, as many limbs as ours), the second reference column; and a third time
(`openfhe-uploads`, its default parameters) with its server receiving what the owners send:
every ciphertext serialized by its owner (OpenFHE's BINARY format, kept in memory: no file, no
integrity check) and deserialized by the server before it is folded, inside the computation's
time, whose rows then split into deserializing (next to our read+verify) and the rest.

Options: --n 1000 --snps 4096 --threads 1,2 --repeats 3 --large 5000x16384 (`--large none`
skips the hec-only row; it writes about 22 GiB of ciphertext files, deleted block by block;
`--large-only` runs that row alone, at the largest of --threads).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
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

from driver.roles import RoleOutput, RowProgress, Runner
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
# The compute role's own split of its passes over the rows (its stderr: read_seconds=...).
COMPUTE_SPLIT = {
    "read_seconds": "compute: read+verify",
    "arithmetic_seconds": "compute: arithmetic",
}
SHARED = frozenset({"r", "w", "V"})  # the owner inputs every SNP block shares
# The reference's compute split when its server deserializes uploads (`openfhe-uploads`).
DESERIALIZE = "compute: deserialize"
ARITHMETIC = "compute: arithmetic"


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


class SplitBackend(EncryptedBackend):
    """The encrypted backend, keeping the compute role's split of its time (summed over blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.split = dict.fromkeys(COMPUTE_SPLIT, 0.0)

    def _runner(self, meter: PhaseMeter) -> Runner:
        inner = super()._runner(meter)

        def run(binary: Path, args: Sequence[str], on_progress: RowProgress | None) -> RoleOutput:
            out = inner(binary, args, on_progress)
            if args[0] == "compute":
                for key in COMPUTE_SPLIT:
                    found = re.search(rf"\b{key}=([0-9.]+)", out.stderr)
                    if found is None:
                        raise RuntimeError(f"the compute role printed no {key}=")
                    self.split[key] += float(found.group(1))
            return out

        return run


def run_ours(data: Cohort, threads: int, cache: Path) -> Run:
    """logistic.hec through the encrypted backend, the way `hec gwas logistic` runs it: keygen
    once, then per SNP block encrypt, compute, decrypt (r, w, V encrypted once)."""
    n, m = data.S.shape
    k = data.inputs["V"].shape[1]
    backend = SplitBackend()
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
    # The scale the owners encode at: that of the revealed sums of degree 1.
    params["scale_bits"] = min(
        float(o["scale_bits"]) for o in compiled.report["outputs"] if o["degree"] == 1
    )
    seconds = dict(meter.seconds)
    seconds.update({COMPUTE_SPLIT[key]: value for key, value in backend.split.items()})
    return Run(seconds, dict(meter.peak_rss), revealed, params)


def parse_reference(stdout: str, out: Path) -> Run:
    """The reference's JSON line (its last line of stdout) and its decrypted sums (.npz)."""
    facts = json.loads(stdout.strip().splitlines()[-1])
    res = np.load(out)
    revealed = {name: np.asarray(res[name]) for name in ("score", "sws", "vs")}
    params = dict(facts["params"], openfhe=facts.get("openfhe", "?"))
    seconds = dict(facts["seconds"])
    if params.get("uploads"):
        seconds["compute: deserialize"] = float(params["deserialize_seconds"])
    return Run(seconds, facts["peak_rss"], revealed, params)


def run_reference(
    python: str,
    data: Path,
    threads: int,
    workdir: Path,
    scale_bits: int | None = None,
    uploads: bool = False,
) -> Run:
    """The OpenFHE reference on `data` with `threads` worker processes; `scale_bits`: at that
    scale (matched precision) instead of its default two moduli; `uploads`: its server
    deserializes every upload before folding it."""
    out = workdir / f"ref-{threads}.npz"
    scale = [] if scale_bits is None else ["--scale-bits", str(scale_bits)]
    scale += ["--uploads"] if uploads else []
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # its parallelism is over individuals: --workers processes
        "OMP_WAIT_POLICY": "passive",
        "PYTHONPATH": str(ROOT / "bench"),  # it imports bench/gwas_chisq_reference's meters
    }
    proc = subprocess.run(
        [python, str(ROOT / "bench" / "gwas_logistic_reference.py"), "--data", str(data),
         "--out", str(out), "--workers", str(threads), *scale],
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


def reference_note(ref: list[Run] | None, ref_note: str) -> str:
    """What a reference column's cells say: its version and parameters, or why it is missing."""
    if not ref:
        return ref_note or "not measured"
    p = ref[0].params
    return (
        f"openfhe {p.get('openfhe', '?')}: ring 2^{int(p['ring_dim']).bit_length() - 1}, "
        f"moduli {p['moduli_bits']}, {p['workers']} worker process(es)"
        + (", the server deserializes every upload" if p.get("uploads") else "")
    )


def comparison_rows(
    case: str,
    ours: list[Run],
    ours_acc: dict[str, float] | None,
    ref: list[Run] | None,
    ref_acc: dict[str, float] | None,
    ref_note: str,
    matched: tuple[list[Run] | None, dict[str, float] | None, str] | None = None,
    uploads: tuple[list[Run] | None, dict[str, float] | None, str] | None = None,
) -> list[Row]:
    """The rows of one size and thread count: each phase's median seconds (and the compute
    role's split of its time), its peak resident memory, and the accuracy of STAT (ours, and
    OpenFHE's as the row's reference, or its cells saying why it is missing: `ref_note` from
    try_reference). `matched`: the reference at our precision (runs, accuracy, note), a second
    reference column; `uploads`: the reference whose server deserializes every upload (its
    parameters the default's), a third."""
    version = openfhe_version()
    o_s, o_peak = median_run(ours) if ours else ({}, {})
    columns = [(ref, ref_acc, ref_note, "openfhe")]
    if matched is not None:
        columns.append((*matched, "openfhe-matched"))
    if uploads is not None:
        columns.append((*uploads, "openfhe-uploads"))
    cells = []
    for runs, acc, why, name in columns:
        seconds, peak = median_run(runs) if runs else ({}, {})
        if runs and all(DESERIALIZE in r.seconds for r in runs):
            # the compute split, medians of each part (read+verify's counterpart: deserializing)
            seconds[DESERIALIZE] = statistics.median(r.seconds[DESERIALIZE] for r in runs)
            seconds[ARITHMETIC] = statistics.median(
                r.seconds["compute"] - r.seconds[DESERIALIZE] for r in runs
            )
        cells.append((name, reference_note(runs, why), why, seconds, peak, acc or {}))
    rows: list[Row] = []

    def add(
        label: str, mine: float | None, theirs: list[float | None], unit: str, missing: str = ""
    ) -> None:
        refs = tuple(
            Reference(name, version, value, note if value is not None else why or missing)
            for (name, note, why, *_), value in zip(cells, theirs, strict=True)
        )
        rows.append(Row(BENCH, f"{case} {label}", mine, theirs[0], unit, refs))

    for phase in PHASES:
        add(phase, o_s.get(phase), [c[3].get(phase) for c in cells], "s")
    # The compute role's split. A reference holding its ciphertexts in memory computes only;
    # one that receives serialized uploads splits into deserializing and the rest.
    for label in COMPUTE_SPLIT.values():
        values = [r.seconds[label] for r in ours if label in r.seconds]
        mine = statistics.median(values) if values else None
        if label.endswith("arithmetic"):
            theirs = [c[3].get(ARITHMETIC, c[3].get("compute")) for c in cells]
        else:
            theirs = [c[3].get(DESERIALIZE) for c in cells]
        add(label, mine, theirs, "s", "none: the reference holds its ciphertexts in memory")
    for phase in PHASES:
        mine = o_peak.get(phase)
        theirs = [c[4].get(phase) for c in cells]
        add(f"{phase} peak RSS", mine / 2**20 if mine else None,
            [t / 2**20 if t else None for t in theirs], "MiB")  # fmt: skip
    o_acc = ours_acc or {}
    for key, label, unit in (
        ("stat_abs", "STAT max abs. error", "abs"),
        ("stat_r2", "STAT R^2 vs float64", "R^2"),
        ("sums_rel", "sums max rel. error", "rel"),
    ):
        add(label, o_acc.get(key), [c[5].get(key) for c in cells], unit)
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
            matched = None
            scale = p.get("scale_bits")
            if python is not None and scale:

                def measure_matched(py: str = python, t: int = t, b: int = int(scale)) -> list[Run]:
                    return [run_reference(py, npz, t, work, b) for _ in range(args.repeats)]

                m_ref, m_note = try_reference("openfhe", measure_matched)
                matched = (m_ref, accuracy(m_ref[0].revealed, data) if m_ref else None, m_note)
            uploads = None
            if python is not None:

                def measure_uploads(py: str = python, t: int = t) -> list[Run]:
                    return [
                        run_reference(py, npz, t, work, uploads=True) for _ in range(args.repeats)
                    ]

                u_ref, u_note = try_reference("openfhe", measure_uploads)
                uploads = (u_ref, accuracy(u_ref[0].revealed, data) if u_ref else None, u_note)
            case = f"N={args.n} M={args.snps} K={k} t={t}"
            rows += comparison_rows(
                case, ours, accuracy(ours[0].revealed, data),
                ref, accuracy(ref[0].revealed, data) if ref else None, note, matched, uploads,
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
