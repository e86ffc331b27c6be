"""`bench/run gwas-chisq`: the encrypted allelic chi-square GWAS (examples/gwas/chisq.hec) next
to PNAS Algorithm 2 on OpenFHE (bench/gwas_chisq_reference.py, the PyPI `openfhe` wheel) and on
Lattigo (bench/lattigo/chisq.go: the same algorithm, streaming, relinearizing once per SNP
block where a product feeds another) on the same data in the same run: key generation,
encryption, server computation, decryption, peak resident memory per phase, at N in
{1000, 5000} individuals, M = 16384 SNPs, 1 and 2 threads; and the accuracy of each against
the double-precision statistics.

Ours runs through the `encrypted` backend of `gwas.backend` (the generated C++ program of
issue #7), as `hec gwas chisq` runs it, at the precision `hec gwas chisq` uses (40 bits per
revealed value); a peak the role did not report is left empty. Where that backend is not
available, the benchmark says so and reports the reference alone: the simulator is never
timed as if it were encryption.

The two sides do not do the same I/O, and the difference is charged to ours: its roles are
separate processes, as the parties are, so every individual's ciphertexts are written to
files by `encrypt` (checksummed, under TMPDIR or HEC_SCRATCH) and read back by `compute`;
the reference encrypts and folds its ciphertexts in the same process, in memory, and never
serializes them. Wall-clock seconds of each phase on both sides (the machine otherwise idle).

The packings differ too: the compiler packs each genotype row two slot sets per ciphertext
(real and imaginary parts of the slots, passes/complex_packing.py) and unpacks the per-SNP
sums with one conjugation per ciphertext; the reference packs real values as the paper does.

Every phase row carries `references` (OpenFHE and Lattigo: name, version, seconds or why not
available) and `ratio_fastest` (ours / the faster reference); `reference` and `ratio` stay
OpenFHE's. A reference that cannot be installed, built or run has its cells say
"not available (reason)" and the rest of the bench runs.

Options: --sizes 1000,5000  --snps 16384  --threads 1,2  (smaller values for a quick look).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
from common import (
    LATTIGO,
    ROOT,
    Reference,
    ReferenceUnavailableError,
    failure_reason,
    lattigo_version,
    openfhe_version,
    reference_python,
    reference_tool,
    try_reference,
)

from gwas import DEFAULT_PRECISION_BITS
from gwas.backend import BACKENDS, Block, EncryptedBackend, block_bytes
from gwas.chisq import PROGRAM_COMPLETE, PROGRAM_MISSING, statistics_from_counts
from gwas.exact import exact_statistics, table_counts
from gwas.memory import PhaseMeter

BENCH = "gwas-chisq"
PHASES = ("keygen", "encrypt", "compute", "decrypt")


def cohort(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Genotypes in Hardy-Weinberg proportions (MAF uniform in [0.01, 0.5]) and a balanced
    random phenotype: the shape of real data, no missing calls (the chisq.hec workload)."""
    rng = np.random.default_rng(seed)
    maf = rng.uniform(0.01, 0.5, size=m)
    S = rng.binomial(2, maf, size=(n, m)).astype(np.float64)
    y = (rng.random(n) < 0.5).astype(np.float64)
    return S, y


def with_missing(S: np.ndarray, rate: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """S with a fraction `rate` of calls missing (0 in S) and the called indicator C."""
    rng = np.random.default_rng(seed + 1)
    C = (rng.random(S.shape) >= rate).astype(np.float64)
    return S * C, C


def accuracy(chi2: np.ndarray, odds: np.ndarray, S: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Worst relative error of CHISQ (>= 0.01) and OR, worst absolute error of CHISQ < 0.01,
    against float64 from the same genotypes (SNPs without a statistic left out)."""
    want_chi, _, want_or = exact_statistics(table_counts(S, y))
    ok = np.isfinite(want_chi)
    big = ok & (want_chi >= 0.01)
    small = ok & (want_chi < 0.01)
    good_or = np.isfinite(want_or) & (want_or > 0)
    return {
        "chi2_rel": float(np.max(np.abs(chi2[big] - want_chi[big]) / want_chi[big], initial=0)),
        "chi2_abs_small": float(np.max(np.abs(chi2[small] - want_chi[small]), initial=0)),
        "or_rel": float(
            np.max(np.abs(odds[good_or] - want_or[good_or]) / want_or[good_or], initial=0)
        ),
    }


def run_reference(
    python: str, data: Path, threads: int, workdir: Path
) -> tuple[dict, np.ndarray, np.ndarray]:
    out = workdir / f"ref-{threads}.npz"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",  # its parallelism is over individuals: --workers processes
        "OMP_WAIT_POLICY": "passive",  # DESIGN.md §7: spinning threads slow shared machines
    }
    proc = subprocess.run(
        [python, str(ROOT / "bench" / "gwas_chisq_reference.py"), "--data", str(data),
         "--out", str(out), "--workers", str(threads)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise ReferenceUnavailableError(
            failure_reason(subprocess.CalledProcessError(proc.returncode, python, "", proc.stderr))
        )
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    res = np.load(out)
    return facts, res["chi2"], res["odds"]


def run_lattigo_chisq(
    S: np.ndarray, y: np.ndarray, threads: int, workdir: Path
) -> tuple[dict, np.ndarray, np.ndarray]:
    """Alg. 2 on Lattigo (bench/lattigo/chisq.go, built by bench/setup-reference lattigo) with
    `threads` goroutines over the individuals (GOMAXPROCS = threads)."""
    binary = reference_tool("lattigo")
    n, m = S.shape
    s_path, y_path, out = workdir / "S.u8", workdir / "y.u8", workdir / f"lattigo-{threads}.f64"
    S.astype(np.uint8).tofile(s_path)
    y.astype(np.uint8).tofile(y_path)
    cfg = {"scheme": "chisq", "repeats": 1, "s": str(s_path), "y": str(y_path), "n": n, "m": m}
    cfg |= {"out": str(out), "workers": threads}
    env = {**os.environ, "GOMAXPROCS": str(threads)}
    proc = subprocess.run(
        [binary, json.dumps(cfg)], env=env, capture_output=True, text=True, check=True
    )
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    stats = np.fromfile(out, dtype="<f8")
    return facts, stats[:m], stats[m:]


def reference_cells(
    phase: str,
    openfhe: dict | None,
    openfhe_note: str,
    lattigo: dict | None,
    lattigo_note: str,
) -> list[dict]:
    """A phase row's OpenFHE and Lattigo cells (seconds), or why a library has none."""
    cells = []
    for name, version, facts, note in (
        ("openfhe", openfhe_version(), openfhe, openfhe_note),
        (LATTIGO, lattigo_version(), lattigo, lattigo_note),
    ):
        value = facts["seconds"].get(phase) if facts else None
        if facts and not note:
            p = facts["params"]
            note = f"ring 2^{int(np.log2(p.get('ring_dim', 0) or 2 ** p.get('log_n', 0)))}"
            note += f", {p.get('workers', '?')} worker(s)"
        cells.append(Reference(name, version, value, note).as_dict())
    return cells


def run_ours(
    S: np.ndarray, y: np.ndarray, threads: int, cache: Path, C: np.ndarray | None = None
) -> tuple[dict[str, float], dict[str, int], np.ndarray, np.ndarray, dict, int, dict]:
    """examples/gwas/chisq.hec (chisq_missing.hec with the called indicator C) through the
    encrypted backend (the generated C++ program), the way `hec gwas chisq` runs it: keygen
    once, then per block of SNPs encrypt, compute, decrypt; the statistics from the decrypted
    counts. Returns the phase seconds and peaks, CHISQ and OR, the parameters, the scratch
    bytes a block's ciphertext files take at their peak, and the upload per SNP per individual
    the encrypt role wrote and the report states."""
    n, m = S.shape
    backend = EncryptedBackend()
    backend.threads = threads
    sizes = {"N": n, "M": m}
    program = PROGRAM_COMPLETE if C is None else PROGRAM_MISSING
    compiled = backend.compile(program, sizes, DEFAULT_PRECISION_BITS, cache)
    width = compiled.block_width(n, m)

    def inputs(a: int) -> dict[str, np.ndarray]:
        out = {"y": y, "S": S[:, a : a + width]}
        if C is not None:
            out["C"] = C[:, a : a + width]
        return out

    blocks = (
        Block(k, a, min(a + width, m), inputs(a), frozenset({"y"}))
        for k, a in enumerate(range(0, m, width))
    )
    meter = PhaseMeter()
    names = [r.sym_value for r in compiled.stat_program.reveals()]
    revealed: dict[str, np.ndarray] = {}
    n_blocks = -(-m // width)
    for block, values in backend.run(compiled, blocks, n_blocks, meter, lambda *a: None):
        for name in names:
            v = np.asarray(values[name], dtype=np.float64)
            if v.ndim == 0:
                revealed[name] = v
            else:
                revealed.setdefault(name, np.zeros(m))[block.start : block.stop] = v
    _, chi2, _, odds, _, _ = statistics_from_counts(compiled, sizes, revealed)
    params = compiled.report["params"]
    upload = {
        "written": backend.upload_bytes / (n * m),
        "report": compiled.report["sizes"]["upload_per_individual"] / m,
    }
    return meter.seconds, meter.peak_rss, chi2, odds, params, block_bytes(compiled, width), upload


def emit(rows: list[dict]) -> None:
    """The table for people, then one JSON object per row (keys of bench/common.py; `ours`
    and `ratio` are null where our encrypted backend did not run)."""
    header = f"{'case':<40} {'ours':>12} {'reference':>12} {'ratio':>7} {'lattigo':>10} "
    header += f"{'r_fastest':>9}  unit"
    print(header)
    print("-" * len(header))

    def cell(v: float | None, width: int, fmt: str) -> str:
        return f"{v:{width}{fmt}}" if v is not None else f"{'-':>{width}}"

    notes: dict[str, None] = {}
    for r in rows:
        lat = next((x for x in r.get("references", []) if x["name"] == LATTIGO), None)
        for x in r.get("references", []):
            if x["value"] is None and x["note"].startswith("not available"):
                notes[f"{x['name']}: {x['note']}"] = None
        print(
            f"{r['case']:<40} {cell(r['ours'], 12, '.4g')} {cell(r['reference'], 12, '.4g')} "
            f"{cell(r['ratio'], 7, '.3f')} {cell(lat['value'] if lat else None, 10, '.4g')} "
            f"{cell(r.get('ratio_fastest'), 9, '.3f')}  {r['unit']}"
        )
    for note in notes:
        print(note)
    print()
    for r in rows:
        print(json.dumps(r))


def row(
    case: str,
    ours: float | None,
    reference: float | None,
    unit: str,
    refs: list[dict] | None = None,
) -> dict:
    ratio = ours / reference if ours is not None and reference is not None and reference else None
    out = {
        "bench": BENCH, "case": case, "ours": ours, "reference": reference, "ratio": ratio,
        "unit": unit,
    }  # fmt: skip
    if refs is not None:
        values = [r["value"] for r in refs if r["value"]]
        out["ratio_fastest"] = ours / min(values) if ours is not None and values else None
        out["references"] = refs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description="encrypted chi-square GWAS vs PNAS Alg. 2 on OpenFHE"
    )
    parser.add_argument("--sizes", default="1000,5000", help="individuals N, comma-separated")
    parser.add_argument("--snps", type=int, default=16384, help="SNPs M")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--missing", type=float, default=0.02, help="missing-call rate")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]

    ours_available = "encrypted" in BACKENDS
    if not ours_available:
        print(
            f"{BENCH}: ours cannot run yet: the encrypted backend (the generated C++ program of "
            "issue #7) is not available in gwas.backend, so only the OpenFHE reference is "
            "measured below; the simulator is not timed as if it were encryption."
        )
    python, python_note = try_reference("openfhe", reference_python)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="hec-bench-gwas-") as tmp:
        work = Path(tmp)
        for n in sizes:
            S, y = cohort(n, args.snps, args.seed + n)
            data = work / f"cohort-{n}.npz"
            np.savez(data, S=S, y=y)
            for t in threads:
                openfhe, openfhe_note = (None, python_note)
                if python:
                    openfhe, openfhe_note = try_reference(
                        "openfhe", partial(run_reference, python, data, t, work)
                    )
                lattigo, lattigo_note = try_reference(
                    LATTIGO, partial(run_lattigo_chisq, S, y, t, work)
                )
                facts = openfhe[0] if openfhe else None
                acc = accuracy(openfhe[1], openfhe[2], S, y) if openfhe else {}
                lat_facts = lattigo[0] if lattigo else None
                lat_acc = accuracy(lattigo[1], lattigo[2], S, y) if lattigo else {}
                if facts:
                    p = facts["params"]
                    print(
                        f"# reference (openfhe {facts.get('openfhe', '?')}) N={n} t={t}: ring "
                        f"2^{int(np.log2(p['ring_dim']))}, "
                        f"moduli {p['moduli_bits']}, gamma {p['gamma']:.3g}",
                        file=sys.stderr,
                    )
                ours_s: dict[str, float] = {}
                ours_peak: dict[str, int] = {}
                ours_acc: dict[str, float] = {}
                miss_s: dict[str, float] = {}
                miss_acc: dict[str, float] = {}
                scratch = miss_scratch = 0
                upload: dict[str, float] = {}
                miss_upload: dict[str, float] = {}
                if ours_available:
                    ours_s, ours_peak, o_chi2, o_odds, params, scratch, upload = run_ours(
                        S, y, t, work / "cache"
                    )
                    ours_acc = accuracy(o_chi2, o_odds, S, y)
                    Sm, C = with_missing(S, args.missing, args.seed + n)
                    miss_s, _, m_chi2, m_odds, _, miss_scratch, miss_upload = run_ours(
                        Sm, y, t, work / "cache", C
                    )
                    miss_acc = accuracy(m_chi2, m_odds, np.where(C > 0, Sm, np.nan), y)
                    print(
                        f"# ours N={n} t={t}: ring 2^{params['log_n']}, moduli "
                        f"{params['moduli_bits']} + special {params['special_moduli_bits']}",
                        file=sys.stderr,
                    )
                case = f"N={n} M={args.snps} t={t}"
                for phase in PHASES:
                    refs = reference_cells(phase, facts, openfhe_note, lat_facts, lattigo_note)
                    rows.append(
                        row(
                            f"{case} {phase}",
                            ours_s.get(phase),
                            facts["seconds"][phase] if facts else None,
                            "s",
                            refs,
                        )
                    )
                for phase in PHASES:
                    mine = ours_peak.get(phase)
                    rows.append(
                        row(
                            f"{case} {phase} peak RSS",
                            mine / 2**20 if mine else None,
                            facts["peak_rss"][phase] / 2**20 if facts else None,
                            "MiB",
                        )
                    )
                rows.append(
                    row(f"{case} CHISQ max rel. error", ours_acc.get("chi2_rel"),
                        acc.get("chi2_rel"), "rel")
                )  # fmt: skip
                rows.append(
                    row(f"{case} OR max rel. error", ours_acc.get("or_rel"), acc.get("or_rel"),
                        "rel")
                )  # fmt: skip
                rows.append(
                    row(f"{case} Lattigo CHISQ max rel. error (vs OpenFHE)",
                        lat_acc.get("chi2_rel"), acc.get("chi2_rel"), "rel")
                )  # fmt: skip
                # Bytes per SNP per individual the encrypt role wrote, against the report.
                for label, up in (
                    ("complete", upload),
                    (f"missing {args.missing:.0%}", miss_upload),
                ):
                    rows.append(
                        row(f"{case} {label} upload written vs report", up.get("written"),
                            up.get("report"), "B/SNP/individual")
                    )  # fmt: skip
                # Missing calls (chisq_missing.hec): the reference has no missing-data variant,
                # so these rows set ours with missing calls against ours on complete data.
                miss = f"{case} missing {args.missing:.0%} vs complete"
                for phase in ("encrypt", "compute"):
                    rows.append(row(f"{miss} {phase}", miss_s.get(phase), ours_s.get(phase), "s"))
                rows.append(
                    row(f"{miss} CHISQ max rel. error", miss_acc.get("chi2_rel"),
                        ours_acc.get("chi2_rel"), "rel")
                )  # fmt: skip
                rows.append(
                    row(f"{miss} scratch per block", miss_scratch / 2**20 or None,
                        scratch / 2**20 or None, "MiB")
                )  # fmt: skip
    print(
        f"{BENCH}: PNAS Alg. 2 on OpenFHE {openfhe_version()} (reference) and Lattigo "
        f"{lattigo_version()} vs hec chisq.hec (ours); ratio_fastest = ours / faster reference"
    )
    emit(rows)


if __name__ == "__main__":
    main()
