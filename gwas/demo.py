"""`hec demo`: simulate a case/control cohort with planted associations, write it as a PLINK 1
fileset, run `hec gwas chisq` on it end to end, and show the top hits next to the planted SNPs;
when plink1.9 is installed, run `plink1.9 --assoc` on the same fileset and print how many SNPs
agree to PLINK's printed digits; end with the command to run on one's own data.

The cohort (test data, not key material, so numpy's seeded generator is the right tool):
genotypes in Hardy-Weinberg proportions with minor-allele frequencies uniform in
[0.05, 0.5], a handful of causal SNPs with per-allele odds ratios in [1.5, 2.0], and a
phenotype drawn from the logistic model logit P(case) = b0 + sum_k log(OR_k) g_k with b0 set
so that about half the cohort are cases. Optionally a fraction of calls is set missing, which
makes `hec gwas chisq` use the missing-call program.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bed_reader import to_bed

from compiler.errors import UserError
from gwas import DEFAULT_BACKEND
from gwas.assoc import compare_with_plink, read_assoc
from gwas.chisq import ChisqOptions, ChisqResult, backend_label, run_chisq
from gwas.exact import exact_statistics, table_counts
from gwas.plink import open_fileset
from gwas.plots import genomic_inflation

CHROMOSOMES = 2


@dataclass
class Cohort:
    genotypes: npt.NDArray[np.float64]  # N x M counts of the .bim A1 allele, NaN = missing
    case: npt.NDArray[np.int8]  # 1 case, 0 control
    causal: npt.NDArray[np.intp]  # planted SNP indices
    odds_ratio: npt.NDArray[np.float64]  # their per-allele odds ratios


def simulate_cohort(
    n: int, m: int, n_causal: int = 10, missing_rate: float = 0.0, seed: int = 2020
) -> Cohort:
    if n < 10 or m < n_causal or n_causal < 0:
        raise UserError(f"demo: need N >= 10 and M >= causal SNPs; got N={n}, M={m}")
    if not 0.0 <= missing_rate < 0.5:
        raise UserError(f"demo: --missing-rate {missing_rate} must be in [0, 0.5)")
    rng = np.random.default_rng(seed)
    maf = rng.uniform(0.05, 0.5, size=m)
    g = rng.binomial(2, maf, size=(n, m)).astype(np.float64)
    causal = np.sort(rng.choice(m, size=n_causal, replace=False))
    odds = rng.uniform(1.5, 2.0, size=n_causal)
    beta = np.log(odds)
    score = g[:, causal] @ beta
    b0 = -float(np.mean(score))
    prob = 1.0 / (1.0 + np.exp(-(b0 + score)))
    case = (rng.random(n) < prob).astype(np.int8)
    if missing_rate > 0:
        g[rng.random((n, m)) < missing_rate] = np.nan
    return Cohort(g, case, causal, odds)


def write_fileset(cohort: Cohort, prefix: Path) -> None:
    n, m = cohort.genotypes.shape
    per_chrom = -(-m // CHROMOSOMES)
    props = {
        "fid": [f"fam{i}" for i in range(n)],
        "iid": [f"ind{i}" for i in range(n)],
        "father": ["0"] * n,
        "mother": ["0"] * n,
        "sex": [1 + (i % 2) for i in range(n)],
        "pheno": [str(2 if c else 1) for c in cohort.case],
        "chromosome": [str(1 + j // per_chrom) for j in range(m)],
        "sid": [f"rs{100000 + j}" for j in range(m)],
        "cm_position": [0.0] * m,
        "bp_position": [1000 * (1 + j % per_chrom) for j in range(m)],
        "allele_1": ["A"] * m,
        "allele_2": ["G"] * m,
    }
    to_bed(Path(f"{prefix}.bed"), cohort.genotypes, properties=props, count_A1=True)


PLINK = "plink1.9"


def plink_agreement(directory: Path, prefix: Path, out: Path) -> str:
    """Run plink1.9 --assoc on the demo's fileset (when installed) and compare with ours."""
    exe = shutil.which(PLINK)
    if exe is None:
        return f"{PLINK} is not installed: no comparison with PLINK (Debian: apt install plink1.9)"
    ran = subprocess.run(
        [exe, "--bfile", str(prefix), "--assoc", "--out", str(directory / "plink"), "--threads",
         "1"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    if ran.returncode != 0:
        return f"{PLINK} --assoc failed: {ran.stdout[-500:]}"
    ours = read_assoc(out.with_name(out.name + ".assoc"))
    theirs = read_assoc(directory / "plink.assoc")
    agreeing, problems = compare_with_plink(ours, theirs)
    freqs = "F_A, F_U, " if any(r.f_a is not None for r in ours) else ""
    text = (
        f"{PLINK} --assoc on the same fileset ({directory / 'plink.assoc'}): A1, A2, {freqs}"
        f"CHISQ, P and OR agree to PLINK's printed digits on {agreeing} of {len(theirs)} SNPs"
    )
    if problems:
        text += "; differences: " + "; ".join(problems[:5])
    return text


@dataclass
class DemoResult:
    cohort: Cohort
    result: ChisqResult
    exact_chisq: npt.NDArray[np.float64]
    max_rel_error: float
    max_abs_error_small: float
    text: str


def run_demo(
    directory: Path,
    n: int = 2000,
    m: int = 20000,
    n_causal: int = 10,
    missing_rate: float = 0.0,
    seed: int = 2020,
    backend: str = DEFAULT_BACKEND,
    threads: int = 0,
    top: int = 15,
    progress: bool = True,
    cache_dir: Path | None = None,
) -> DemoResult:
    directory.mkdir(parents=True, exist_ok=True)
    cohort = simulate_cohort(n, m, n_causal, missing_rate, seed)
    prefix = directory / "cohort"
    write_fileset(cohort, prefix)
    out = directory / "demo"
    result = run_chisq(
        ChisqOptions(
            bfile=str(prefix),
            out=str(out),
            backend=backend,
            threads=threads,
            progress=progress,
            cache_dir=cache_dir,
            command_line=f"hec demo --dir {directory} --n {n} --m {m} --seed {seed}",
            highlight=[int(j) for j in cohort.causal],
        )
    )
    # The same statistics in double precision from the plaintext genotypes, with the same A1.
    fs = open_fileset(str(prefix))
    S = cohort.genotypes.copy()
    swap = np.array([a != v.a1 for a, v in zip(result.a1, fs.variants, strict=True)])
    S[:, swap] = 2.0 - S[:, swap]
    chi_exact, _, _ = exact_statistics(table_counts(S, cohort.case.astype(np.float64)))
    ok = np.isfinite(chi_exact) & np.isfinite(result.chisq)
    big = ok & (chi_exact >= 0.01)
    small = ok & (chi_exact < 0.01)
    rel = float(np.max(np.abs(result.chisq[big] - chi_exact[big]) / chi_exact[big], initial=0))
    ab = float(np.max(np.abs(result.chisq[small] - chi_exact[small]), initial=0))

    lines: list[str] = []
    w = lines.append
    label = backend_label(result.backend)
    w(
        f"hec demo: {n} individuals ({result.n_cases} cases, {result.n_controls} controls) x {m} "
        f"SNPs, {n_causal} planted associations, seed {seed}"
    )
    w(f"backend: {label}")
    if not result.backend.encrypts:
        w("  (a simulation of the encrypted computation with CKKS noise; nothing was encrypted)")
    w(
        f"program: {result.program.name}; parameters 2^{result.compiled.report['params']['log_n']}"
        f" ring, {result.compiled.report['params']['security_bits']}-bit security"
    )
    order = np.argsort(np.where(np.isfinite(result.p), result.p, np.inf))[:top]
    planted = set(cohort.causal.tolist())
    w("")
    w(f"top {top} SNPs by P (* = planted):")
    w(f"  {'SNP':>10} {'CHISQ':>12} {'P':>12} {'OR':>9}  planted OR")
    ors = dict(zip(cohort.causal.tolist(), cohort.odds_ratio.tolist(), strict=True))
    for j in order:
        mark = "*" if int(j) in planted else " "
        true_or = f"{ors[int(j)]:.2f}" if int(j) in planted else ""
        w(
            f"{mark} {fs.variants[int(j)].snp:>10} {result.chisq[j]:12.6g} {result.p[j]:12.4g} "
            f"{result.odds[j]:9.4g}  {true_or}"
        )
    found = len(planted & {int(j) for j in order})
    bonferroni = 0.05 / m
    sig = np.flatnonzero(np.nan_to_num(result.p, nan=1.0) < bonferroni)
    w("")
    w(
        f"planted SNPs among the top {top}: {found} of {n_causal}; below the Bonferroni line "
        f"P < {bonferroni:.2g}: {len(sig)} SNPs, {len(planted & set(sig.tolist()))} of them planted"
    )
    w(
        "planted SNPs: "
        + ", ".join(
            f"{fs.variants[int(j)].snp} (OR {o:.2f}, P {result.p[int(j)]:.3g})"
            for j, o in zip(cohort.causal, cohort.odds_ratio, strict=True)
        )
    )
    w(f"genomic inflation lambda = {result.lam:.4f}")
    w(
        f"agreement with double-precision chi-square from the plaintext genotypes: max relative "
        f"error {rel:.2e} (CHISQ >= 0.01), max absolute error {ab:.2e} (below)"
    )
    w(f"(lambda of the double-precision statistics: {genomic_inflation(chi_exact):.4f})")
    w("")
    w(plink_agreement(directory, prefix, out))
    w("")
    w("timings:")
    for name, secs in result.meter.seconds.items():
        w(f"  {name:<10} {secs:8.2f} s")
    w("")
    w("written: " + ", ".join(str(p) for p in result.files))
    w("")
    w("to run it on your own data (a PLINK 1 fileset; --pfile, --vcf and PLINK's phenotype and")
    w("filter options work too, see docs/gwas.md):")
    w("  hec gwas chisq --bfile YOUR_PREFIX --out results            # results.assoc, .log, plots")
    text = "\n".join(lines) + "\n"
    return DemoResult(cohort, result, chi_exact, rel, ab, text)
