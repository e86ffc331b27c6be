"""`hec demo logistic`: simulate a case/control cohort whose covariates confound the genotypes
(a population-structure covariate shifts allele frequencies and risk), plant a few effects,
write it as a PLINK 1 fileset with a covariate file, run `hec gwas logistic` on it end to end,
and print the top hits next to the planted SNPs; when plink1.9 is installed, run
`plink1.9 --logistic --covar --hide-covar` on the same files and print the agreement (R^2 of
STAT over the SNPs with P < 0.5, shared top hits).

The cohort (test data, so numpy's seeded generator is the right tool): covariates pc (the
ancestry axis), age and sex; SNP j has minor-allele frequency maf_j + d_j pc (d_j ~ N(0, 0.08),
clipped into [0.01, 0.99]), so without the covariates every SNP with a large d_j looks
associated; the phenotype follows logit P(case) = b0 + 1.0 pc + 0.5 age + 0.6 sex + planted
per-allele log odds ratios in [0.3, 0.5].
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
from gwas.chisq import ChisqOptions
from gwas.logistic import LogisticOptions, LogisticResult, r_squared, run_logistic, semi_parallel
from gwas.plots import genomic_inflation

Array = npt.NDArray[np.float64]
PLINK = "plink1.9"
COVARIATES = ("pc", "age", "sex")


@dataclass
class LogisticCohort:
    genotypes: Array  # N x M counts of the .bim A1 allele
    case: npt.NDArray[np.int8]
    covariates: Array  # N x 3: pc, age, sex
    causal: npt.NDArray[np.intp]
    log_odds: Array  # planted per-allele log odds ratios


def simulate_logistic_cohort(
    n: int, m: int, n_causal: int = 10, seed: int = 2020, confounding: float = 1.0
) -> LogisticCohort:
    if n < 20 or m < max(1, n_causal) or n_causal < 0:
        raise UserError(f"demo: need N >= 20 and M >= causal SNPs; got N={n}, M={m}")
    rng = np.random.default_rng(seed)
    pc = rng.normal(size=n)
    age = rng.normal(size=n)
    sex = rng.integers(0, 2, n).astype(np.float64)
    maf = rng.uniform(0.05, 0.5, m)
    drift = rng.normal(0.0, 0.08, m)
    freq = np.clip(maf[None, :] + drift[None, :] * pc[:, None], 0.01, 0.99)
    g = rng.binomial(2, freq).astype(np.float64)
    causal = np.sort(rng.choice(m, size=n_causal, replace=False))
    log_odds = rng.uniform(0.3, 0.5, n_causal)
    eta = confounding * pc + 0.5 * age + 0.6 * sex + (g[:, causal] - 2 * maf[causal]) @ log_odds
    eta -= np.mean(eta)
    case = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int8)
    return LogisticCohort(g, case, np.column_stack([pc, age, sex]), causal, log_odds)


def write_logistic_cohort(cohort: LogisticCohort, prefix: Path) -> Path:
    """PREFIX.bed/.bim/.fam (one chromosome per half of the SNPs) and PREFIX.covar (header FID
    IID pc age sex). Returns the covariate file."""
    n, m = cohort.genotypes.shape
    half = -(-m // 2)
    props = {
        "fid": [f"fam{i}" for i in range(n)],
        "iid": [f"ind{i}" for i in range(n)],
        "father": ["0"] * n,
        "mother": ["0"] * n,
        "sex": [1 + (i % 2) for i in range(n)],
        "pheno": [str(2 if c else 1) for c in cohort.case],
        "chromosome": [str(1 + j // half) for j in range(m)],
        "sid": [f"rs{100000 + j}" for j in range(m)],
        "cm_position": [0.0] * m,
        "bp_position": [1000 * (1 + j % half) for j in range(m)],
        "allele_1": ["A"] * m,
        "allele_2": ["G"] * m,
    }
    to_bed(Path(f"{prefix}.bed"), cohort.genotypes, properties=props, count_A1=True)
    covar = Path(f"{prefix}.covar")
    with covar.open("w") as fh:
        fh.write("FID IID " + " ".join(COVARIATES) + "\n")
        for i, (pc, age, sex) in enumerate(cohort.covariates):
            fh.write(f"fam{i} ind{i} {pc:.6f} {age:.6f} {int(sex)}\n")
    return covar


def read_logistic(path: Path) -> dict[str, tuple[str, float, float]]:
    """SNP -> (A1, STAT, P) of a .assoc.logistic (NA as NaN)."""
    rows: dict[str, tuple[str, float, float]] = {}
    with path.open() as fh:
        header = fh.readline().split()
        at = {name: header.index(name) for name in ("SNP", "A1", "STAT", "P", "TEST")}
        for line in fh:
            f = line.split()
            if f[at["TEST"]] != "ADD":
                continue
            stat, p = (float("nan") if f[at[c]] == "NA" else float(f[at[c]]) for c in ("STAT", "P"))
            rows[f[at["SNP"]]] = (f[at["A1"]], stat, p)
    return rows


@dataclass
class PlinkAgreement:
    r2: float  # of STAT over the SNPs with PLINK's P < 0.5
    slope: float  # of our STAT on PLINK's, same SNPs
    top_shared: int  # of PLINK's top 10 by P among ours
    a1_differ: int
    text: str


def compare_with_plink_logistic(ours: Path, theirs: Path) -> PlinkAgreement:
    a, b = read_logistic(ours), read_logistic(theirs)
    snps = [s for s in b if s in a]
    sa = np.array([a[s][1] for s in snps])
    sb = np.array([b[s][1] for s in snps])
    pa = np.array([a[s][2] for s in snps])
    pb = np.array([b[s][2] for s in snps])
    a1_differ = sum(a[s][0] != b[s][0] for s in snps)
    ok = np.isfinite(sa) & np.isfinite(sb) & (pb < 0.5)
    r2 = r_squared(sa[ok], sb[ok])
    slope = float(np.polyfit(sb[ok], sa[ok], 1)[0]) if ok.sum() >= 3 else float("nan")

    def top(p: Array) -> set[int]:
        return set(np.argsort(np.where(np.isfinite(p), p, np.inf), kind="stable")[:10].tolist())

    shared = len(top(pa) & top(pb))
    text = (
        f"R^2 of STAT over the {int(ok.sum())} SNPs with PLINK P < 0.5: {r2:.5f} (slope "
        f"{slope:.4f}); top 10 hits shared: {shared} of 10; A1 differs on {a1_differ} SNPs"
    )
    return PlinkAgreement(r2, slope, shared, a1_differ, text)


def plink_logistic(prefix: Path, covar: Path, out: Path) -> Path | str:
    """plink1.9 --logistic hide-covar --covar on the fileset: its .assoc.logistic, or why not."""
    exe = shutil.which(PLINK)
    if exe is None:
        return f"{PLINK} is not installed: no comparison with PLINK (Debian: apt install plink1.9)"
    ran = subprocess.run(
        [exe, "--bfile", str(prefix), "--logistic", "hide-covar", "--covar", str(covar),
         "--out", str(out), "--threads", "1", "--allow-no-sex"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if ran.returncode != 0:
        return f"{PLINK} --logistic failed: {ran.stdout[-500:]}"
    return out.with_name(out.name + ".assoc.logistic")


@dataclass
class LogisticDemo:
    cohort: LogisticCohort
    result: LogisticResult
    plink: PlinkAgreement | None
    text: str


def run_logistic_demo(
    directory: Path,
    n: int = 1000,
    m: int = 4096,
    n_causal: int = 10,
    seed: int = 2020,
    backend: str = DEFAULT_BACKEND,
    threads: int = 0,
    top: int = 15,
    progress: bool = True,
    cache_dir: Path | None = None,
) -> LogisticDemo:
    directory.mkdir(parents=True, exist_ok=True)
    cohort = simulate_logistic_cohort(n, m, n_causal, seed)
    prefix = directory / "cohort"
    covar = write_logistic_cohort(cohort, prefix)
    out = directory / "demo"
    common = ChisqOptions(
        bfile=str(prefix),
        out=str(out),
        covar=str(covar),
        backend=backend,
        threads=threads,
        progress=progress,
        cache_dir=cache_dir,
        allow_no_sex=True,
        command_line=f"hec demo logistic --dir {directory} --n {n} --m {m} --seed {seed}",
        highlight=[int(j) for j in cohort.causal],
    )
    result = run_logistic(LogisticOptions(common, None, check_plaintext=True))

    lines: list[str] = []
    w = lines.append
    w(
        f"hec demo logistic: {n} individuals ({result.n_cases} cases) x {m} SNPs, covariates "
        f"{', '.join(COVARIATES)} (pc confounds: it shifts allele frequencies and risk), "
        f"{n_causal} planted effects, seed {seed}"
    )
    w(f"backend: {backend_label_of(result, backend)}")
    w(
        f"covariate-only model: {result.fit.iterations} Newton steps; then one Newton step per "
        "SNP (semi-parallel)"
    )
    order = np.argsort(np.where(np.isfinite(result.p), result.p, np.inf))[:top]
    planted = dict(zip(cohort.causal.tolist(), cohort.log_odds.tolist(), strict=True))
    w("")
    w(f"top {top} SNPs by P (* = planted):")
    w(f"  {'SNP':>10} {'OR':>8} {'STAT':>9} {'P':>11}  planted OR")
    for j in order:
        j = int(j)
        mark = "*" if j in planted else " "
        true_or = f"{np.exp(planted[j]):.2f}" if j in planted else ""
        w(
            f"{mark} {'rs' + str(100000 + j):>10} {np.exp(result.beta[j]):8.4g} "
            f"{result.stat[j]:9.4g} {result.p[j]:11.4g}  {true_or}"
        )
    found = len(set(planted) & {int(j) for j in order})
    w(f"planted SNPs among the top {top}: {found} of {n_causal}")
    # What the covariates change: the same test with the intercept only (plaintext, float64).
    x0 = np.ones((n, 1))
    y = cohort.case.astype(np.float64)
    s = cohort.genotypes.copy()
    swap = np.array([a != "A" for a in result.a1])
    s[:, swap] = 2.0 - s[:, swap]
    unadjusted = semi_parallel(x0, y, s)["STAT"]
    w(
        f"genomic inflation lambda: {result.lam:.4f} with the covariates; "
        f"{genomic_inflation(unadjusted**2):.4f} without them (intercept only, plaintext): "
        "the adjustment removes the confounding"
    )
    check = result.check
    w(
        f"against the same statistic in float64 (--check-plaintext): R^2 of STAT "
        f"{check['r2']:.9f}, largest difference {check['max_abs_diff']:.3g}"
    )
    agreement: PlinkAgreement | None = None
    theirs = plink_logistic(prefix, covar, directory / "plink")
    w("")
    if isinstance(theirs, Path):
        agreement = compare_with_plink_logistic(out.with_name(out.name + ".assoc.logistic"),
                                                theirs)  # fmt: skip
        w(f"{PLINK} --logistic hide-covar --covar on the same files ({theirs}):")
        w(f"  {agreement.text}")
    else:
        w(theirs)
    w("")
    w("written: " + ", ".join(str(p) for p in result.files))
    w("")
    w("to run it on your own data (docs/gwas.md):")
    w("  hec gwas logistic --bfile YOUR_PREFIX --covar YOUR.covar --out results")
    return LogisticDemo(cohort, result, agreement, "\n".join(lines) + "\n")


def backend_label_of(result: LogisticResult, backend: str) -> str:
    if result.backend_encrypts:
        return f"--backend {backend} (encrypted)"
    return f"--backend {backend} (SIMULATION, not encrypted: CKKS noise on plaintext)"


__all__ = ["run_logistic_demo", "simulate_logistic_cohort", "write_logistic_cohort"]
