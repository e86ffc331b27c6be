"""`hec gwas logistic`: the case/control test with covariates of PLINK 1.9's `--logistic --covar
--hide-covar` (.assoc.logistic: the ADD row of every SNP), by the semi-parallel method of
Sikorska et al. (BMC Bioinformatics 2013), the LRA of Blatt et al. (PNAS 2020): the
covariate-only logistic model is fitted once, and every SNP gets one Newton step for its effect
from that fit (its score over its information, with the covariates projected out), computed by
gwas/programs/logistic.hec under encryption.

Steps:
 (1) read the genotypes, the phenotype and the covariates (PLINK's covariate file: FID IID and
     one column per covariate, `--covar-name` picks columns), filters and quality control as
     `hec gwas chisq` (gwas/filters.py);
 (2) data holder, on plaintext: A1 by PLINK's rule (gwas/chisq.py `scan`); the covariates
     standardized and scaled into [-1, 1] with an intercept column of ones (K = covariates + 1;
     a linear change of the covariates changes neither the fit's probabilities nor the test);
     the covariate-only model fitted by Newton's method to convergence; per individual
     r = y - p, w = p (1 - p) and w x (the program's inputs);
 (3) compile and run logistic.hec: the coordinator decrypts per SNP the score S'r, S'WS and
     X'WS; the client block projects the covariates out with inverse(X'WX) and gives BETA
     (the one-step log odds ratio), z and P;
 (4) write PREFIX.assoc.logistic, plots and PREFIX.log (a failure log when the run fails).

Why not examples/gwas/lra.hec's covariate model (one gradient step from theta = 0 with the
sigmoid replaced by 0.5 + 0.15625 u, all under encryption): with a covariate that confounds
(ancestry, log odds ratio 1.5 per SD, N = 1000), that fit's weights p (1 - p) turn negative for
some individuals and the degree-8 series for 1 / w diverges there. Measured against plink1.9
--logistic on six cohorts of `hec demo logistic`'s kind (N = 1000, 600 SNPs, ancestry log OR
1.0 and 1.5 per SD, seeds 1-3): lra.hec's algorithm R^2 of STAT 0.982-0.9998 over the SNPs with
P < 0.5 and 8-10 of the top 10 hits (it misses the issue's 0.99 and 9 of 10 on the strongest
confounding), and 0.66 with 5 of 10 on a cohort with fewer cases (intercept -0.3); this module
(the converged covariate-only fit) 0.99998-1.00000, slope 1.002-1.003, 10 of 10 on all six.
At convergence the one Newton step is the
score statistic of the SNP, so `--check-plaintext` compares with `semi_parallel` below, the
same algorithm in float64.

Missing genotype calls and haploid calls (X in males, Y, MT) are refused with a message: PLINK
refits the covariate model per SNP over the called individuals, which this one-fit method
cannot do.

Several sites that may not pool their rows: gwas/multisite_logistic.py (`hec site setup --test
logistic`), the covariate-only fit federated in Newton rounds, then the same program, client
block and writer (`statistic_columns`, `write_outputs`) as here.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import platform
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.dialects import stat
from compiler.errors import UserError
from compiler.stat_numpy import run_client
from driver import __version__
from gwas.assoc import snp_column_width
from gwas.backend import BACKENDS, Block
from gwas.chisq import (
    SCAN_BLOCK,
    ChisqOptions,
    _temp_path,
    backend_label,
    check_options,
    check_output_directory,
    check_variants,
    open_input,
    output_bytes_estimate,
    pheno_spec,
    scan,
    snp_list_digest,
    start_backend,
    write_failure_log,
)
from gwas.filters import FilterLog, quality_control, select
from gwas.memory import PhaseMeter
from gwas.plink import Fileset, Variant, _open_text, sample_phenotypes
from gwas.plots import genomic_inflation, manhattan_plot, qq_plot, top_hits
from gwas.progress import Progress
from gwas.qc import run_qc

Array = npt.NDArray[np.float64]
PROGRAM_LOGISTIC = Path(__file__).resolve().parent / "programs" / "logistic.hec"
# One Newton round of the covariate-only fit pooled over sites (gwas/multisite_logistic.py).
PROGRAM_FIT = Path(__file__).resolve().parent / "programs" / "logistic_fit.hec"
MAX_K = 6  # logistic.hec's `param K <= 6`, the intercept included
MISSING_CODES = ("-9", "NA", "na", "nan", "NaN", ".")  # PLINK 1.9's missing covariate values
NEWTON_TOLERANCE = 1e-10
NEWTON_ITERATIONS = 50
# An information below this fraction of S'WS: the SNP is (nearly) a linear function of the
# covariates among the analysed individuals (monomorphic, say), printed NA as PLINK does.
DEGENERATE_INFORMATION = 1e-8
COLUMNS = ("CHR", "SNP", "BP", "A1", "TEST", "NMISS", "OR", "STAT", "P")


@dataclass
class Covariates:
    """The covariates of the analysed samples, as read (names, values per sample)."""

    path: Path
    names: list[str]
    values: Array  # samples of the fileset x covariates (NaN where the file lists no value)
    listed: npt.NDArray[np.bool_]  # the sample has a line in the file


def read_covariates(path: Path, fileset: Fileset, wanted: Sequence[str] | None) -> Covariates:
    """PLINK 1.9's covariate file: FID IID and one value column per covariate, whitespace
    separated, an optional header `FID IID NAME...` (needed by `--covar-name`; without it the
    columns are COV1, COV2, ... as PLINK names them). -9 and NA are missing values; any other
    value that is not a number is an error naming the line and column."""
    if not path.is_file():
        raise UserError(f"{path}: no such file (--covar)")
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            if not rows and header is None and fields[0] in ("FID", "#FID"):
                if fields[1:2] != ["IID"]:
                    raise UserError(f"{path}:{lineno}: a header line starts FID IID")
                header = fields
                continue
            rows.append((lineno, fields))
    if not rows:
        raise UserError(f"{path}: no covariate line (FID IID value...)")
    width = len(header) if header is not None else len(rows[0][1])
    if width < 3:
        raise UserError(f"{path}: FID IID and at least one covariate column are needed")
    names = header[2:] if header is not None else [f"COV{i}" for i in range(1, width - 1)]
    if len(set(names)) != len(names):
        raise UserError(f"{path}:1: a covariate name appears twice in the header")
    if wanted:
        if header is None:
            raise UserError(
                f"{path}: --covar-name needs a header line FID IID NAME...",
                hint="without a header the columns are COV1, COV2, ...",
            )
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise UserError(
                f"{path}:1: no covariate named {', '.join(unknown)} (--covar-name); the header "
                f"has {', '.join(names)}"
            )
        columns = [names.index(n) for n in wanted]
        names = list(wanted)
    else:
        columns = list(range(len(names)))
    index = {(s.fid, s.iid): i for i, s in enumerate(fileset.samples)}
    values = np.full((fileset.n_samples, len(columns)), np.nan)
    listed = np.zeros(fileset.n_samples, dtype=bool)
    for lineno, fields in rows:
        if len(fields) != width:
            raise UserError(
                f"{path}:{lineno}: {len(fields)} columns, the file's lines have {width}"
            )
        i = index.get((fields[0], fields[1]))
        if i is None:
            continue  # PLINK ignores covariate lines of samples the fileset does not have
        if listed[i]:
            raise UserError(f"{path}:{lineno}: sample {fields[0]} {fields[1]} is listed twice")
        listed[i] = True
        for k, c in enumerate(columns):
            text = fields[2 + c]
            if text in MISSING_CODES:
                continue
            try:
                number = float(text)
            except ValueError:
                raise UserError(
                    f"{path}:{lineno}: column {3 + c} ({names[k]}) holds {text!r}, not a number",
                    hint="covariates are numbers; -9 and NA mark a missing value",
                ) from None
            if not math.isfinite(number) or number == -9.0:
                continue
            values[i, k] = number
    return Covariates(path, names, values, listed)


def check_complete(cov: Covariates, fileset: Fileset, rows: npt.NDArray[np.intp]) -> None:
    """Every analysed sample has every covariate: PLINK drops samples with a missing covariate,
    which would silently change the analysed set, so here it is an error saying which."""
    unlisted = [int(i) for i in rows if not cov.listed[i]]
    if unlisted:
        who = ", ".join(fileset.samples[i].label for i in unlisted[:5])
        raise UserError(
            f"{cov.path}: {len(unlisted)} analysed sample(s) have no covariate line ({who}"
            + (" ..." if len(unlisted) > 5 else "")
            + ")",
            hint="list every sample, or leave the others out with --remove",
        )
    missing = np.argwhere(np.isnan(cov.values[rows]))
    if missing.size:
        i, k = (int(v) for v in missing[0])
        raise UserError(
            f"{cov.path}: {len(missing)} missing covariate value(s) among the analysed samples; "
            f"the first: sample {fileset.samples[int(rows[i])].label}, covariate "
            f"{cov.names[k]} (column {3 + k})",
            hint="PLINK 1.9 would drop these samples: remove them (--remove) or impute the values",
        )


def design_matrix(values: Array, names: Sequence[str], where: Path) -> Array:
    """The intercept and the covariates standardized, then scaled into [-1, 1] (the program's
    domain); each is a column. A constant covariate is an error (it duplicates the intercept)."""
    n, k = values.shape
    if k + 1 > MAX_K:
        raise UserError(
            f"{where}: {k} covariates; the program takes at most {MAX_K - 1} (K <= {MAX_K} with "
            "the intercept)",
            hint="choose at most five with --covar-name",
        )
    if n <= k + 1:
        raise UserError(
            f"{where}: {n} analysed individuals for {k} covariates and the intercept; the "
            "covariate model needs more individuals than coefficients"
        )
    mean = values.mean(axis=0)
    sd = values.std(axis=0)
    constant = [names[j] for j in range(k) if not sd[j] > 1e-12 * max(1.0, abs(mean[j]))]
    if constant:
        raise UserError(
            f"{where}: covariate {', '.join(constant)} is constant among the {n} analysed "
            "individuals (it duplicates the intercept)",
            hint="leave it out with --covar-name",
        )
    z = (values - mean) / sd
    z /= np.max(np.abs(z), axis=0)
    x = np.column_stack([np.ones(n), z])
    if np.linalg.matrix_rank(x) < k + 1:
        raise UserError(
            f"{where}: the covariates {', '.join(names)} are linearly dependent (with the "
            "intercept) among the analysed individuals",
            hint="leave one out with --covar-name",
        )
    return x


@dataclass
class NullFit:
    theta: Array  # coefficients of the covariate-only model (on the scaled covariates)
    p: Array  # fitted probabilities
    h_inv: Array  # inverse of X'WX at the fit
    iterations: int


def null_fit(x: Array, y: Array) -> NullFit:
    """The covariate-only logistic model by Newton's method (IRLS) from theta = 0, to a step
    below NEWTON_TOLERANCE. No convergence (complete separation: a covariate predicts the
    phenotype exactly) is an error."""
    theta = np.zeros(x.shape[1])
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for iteration in range(1, NEWTON_ITERATIONS + 1):
            p = 1.0 / (1.0 + np.exp(-(x @ theta)))
            w = p * (1.0 - p)
            try:
                step = np.linalg.solve(x.T @ (x * w[:, None]), x.T @ (y - p))
            except np.linalg.LinAlgError:
                break  # the weights vanished: the fitted probabilities reached 0 and 1
            theta = theta + step
            if not np.all(np.isfinite(theta)):
                break
            if np.max(np.abs(step)) < NEWTON_TOLERANCE:
                p = 1.0 / (1.0 + np.exp(-(x @ theta)))
                w = p * (1.0 - p)
                if np.min(w) <= 0.0:
                    break
                h_inv = np.asarray(np.linalg.inv(x.T @ (x * w[:, None])), dtype=np.float64)
                return NullFit(theta, p, h_inv, iteration)
    raise UserError(
        f"the covariate-only logistic model does not converge in {NEWTON_ITERATIONS} Newton "
        "steps (a covariate separates cases from controls)",
        hint="leave the covariate that predicts the phenotype out with --covar-name",
    )


def owner_inputs(x: Array, y: Array, fit: NullFit) -> dict[str, Array]:
    """What each data owner computes from its own row and the public fit: logistic.hec's
    inputs r, w and V (the genotypes S come per block)."""
    w = fit.p * (1.0 - fit.p)
    return {"r": y - fit.p, "w": w, "V": x * w[:, None]}


def semi_parallel(x: Array, y: Array, s: Array, fit: NullFit | None = None) -> dict[str, Array]:
    """The plaintext statistic in float64, the same algorithm: the covariate-only fit (`fit`, or
    computed here), then per SNP (column of `s`) one Newton step from it. BETA, STAT (z) and P;
    NaN where the SNP's information vanishes."""
    from scipy import stats

    fit = fit or null_fit(x, y)
    inputs = owner_inputs(x, y, fit)
    score = inputs["r"] @ s
    sws = inputs["w"] @ (s * s)
    vs = inputs["V"].T @ s
    return finish(score, sws, vs, fit.h_inv, stats.norm.sf)


def finish(score: Array, sws: Array, vs: Array, h_inv: Array, norm_sf) -> dict[str, Array]:
    info = sws - np.sum(vs * (h_inv @ vs), axis=0)
    ok = info > DEGENERATE_INFORMATION * np.maximum(sws, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(ok, score / info, np.nan)
        z = np.where(ok, score / np.sqrt(info), np.nan)
    return {"BETA": beta, "STAT": z, "P": np.where(ok, 2.0 * norm_sf(np.abs(z)), np.nan)}


def r_squared(ours: Array, reference: Array) -> float:
    """Squared Pearson correlation over the entries finite in both."""
    ok = np.isfinite(ours) & np.isfinite(reference)
    if ok.sum() < 3:
        return float("nan")
    return float(np.corrcoef(ours[ok], reference[ok])[0, 1] ** 2)


@dataclass
class LogisticOptions:
    common: ChisqOptions  # data, phenotype, filters, backend (covar: the covariate file)
    covar_names: list[str] | None = None
    check_plaintext: bool = False


@dataclass
class LogisticResult:
    beta: Array
    stat: Array
    p: Array
    a1: list[str]
    files: list[Path]
    log_text: str
    n_included: int
    n_cases: int
    covariates: list[str]
    lam: float
    backend_encrypts: bool
    fit: NullFit
    check: dict[str, float] = field(default_factory=dict)


def write_assoc_logistic(path: Path, variants: Sequence[Variant], a1: Sequence[str], nmiss: int,
                         cols: dict[str, Array]) -> None:  # fmt: skip
    """PLINK 1.9's .assoc.logistic with --hide-covar: one ADD row per SNP, 4 significant
    digits as PLINK prints them (OR from the one-step BETA)."""
    snp_w = snp_column_width([v.snp for v in variants])

    def num(x: float) -> str:
        return "NA" if not math.isfinite(x) else f"{x:.4g}"

    with path.open("w") as fh:
        fh.write(
            f"{'CHR':>4} {'SNP':>{snp_w}} {'BP':>10} {'A1':>4} {'TEST':>10} {'NMISS':>8} "
            f"{'OR':>10} {'STAT':>12} {'P':>12} \n"
        )
        odds = np.exp(cols["BETA"])
        for j, v in enumerate(variants):
            fh.write(
                f"{v.chrom:>4} {v.snp:>{snp_w}} {v.bp:>10} {a1[j]:>4} {'ADD':>10} {nmiss:>8} "
                f"{num(float(odds[j])):>10} {num(float(cols['STAT'][j])):>12} "
                f"{num(float(cols['P'][j])):>12}\n"
            )


def statistic_columns(
    program: stat.ProgramOp,
    sizes: Mapping[str, int],
    revealed: Mapping[str, Array],
    h_inv: Array,
    monomorphic: npt.NDArray[np.bool_],
) -> dict[str, Array]:
    """logistic.hec's client block on the decrypted score, S'WS and X'WS with the covariate
    fit's inverse(X'WX): BETA, STAT and P, NA (NaN) where the SNP is monomorphic or its
    information vanishes (a linear function of the covariates), as PLINK prints them."""
    with np.errstate(divide="ignore", invalid="ignore"):
        client = run_client(program, sizes, revealed, {"Hinv": h_inv})
    ok = client["info"] > DEGENERATE_INFORMATION * np.maximum(revealed["sws"], 1e-300)
    ok &= ~monomorphic
    return {
        "BETA": np.where(ok, client["beta"], np.nan),
        "STAT": np.where(ok, client["z"], np.nan),
        "P": np.where(ok, client["pval"], np.nan),
    }


def method_lines(fit: str) -> list[str]:
    """The .log's accuracy section: the method (`fit`: how the covariate model converged)."""
    return [
        "accuracy:",
        "  method: semi-parallel logistic regression (Sikorska et al. 2013; the LRA of Blatt",
        "  et al., PNAS 2020): the covariate-only model fitted once by Newton's method to",
        f"  {fit}, then one Newton step for each SNP's effect",
        "  from that fit: BETA = score / information, STAT = score / sqrt(information), the",
        "  covariates projected out with inverse(X'WX). PLINK --logistic instead fits every",
        "  SNP's full model to convergence; the two agree closely for the small effects of",
        "  a GWAS (measured R^2 of STAT >= 0.9999 on simulated cohorts with confounding",
        "  covariates) and differ most for large effects, where the one step falls short.",
        "  OR = exp(BETA).",
    ]


def result_lines(lam: float, p: Array, variants: Sequence[Variant]) -> list[str]:
    hits = top_hits(p, [v.snp for v in variants])
    return [
        f"genomic inflation lambda (from STAT^2): {lam:.6f}",
        "top hits: " + ", ".join(f"{name} (P {pv:.3g})" for name, pv in hits),
    ]


def write_outputs(
    out: Path,
    variants: Sequence[Variant],
    a1: Sequence[str],
    nmiss: int,
    cols: dict[str, Array],
    plots: bool,
    title: str,
    log_lines: Callable[[list[Path]], list[str]],
    highlight: Sequence[int] = (),
) -> tuple[list[Path], str]:
    """PREFIX.assoc.logistic, the plots (`plots`) and PREFIX.log (`log_lines`, given the files
    written), each under a temporary name, all renamed only when every one succeeded.
    Returns the files and the log's text."""
    finals = {
        "logistic": out.with_name(out.name + ".assoc.logistic"),
        "manhattan": out.with_name(out.name + ".manhattan.png"),
        "qq": out.with_name(out.name + ".qq.png"),
        "log": out.with_name(out.name + ".log"),
    }
    temps = {key: _temp_path(v) for key, v in finals.items()}
    try:
        write_assoc_logistic(temps["logistic"], variants, a1, nmiss, cols)
        if plots:
            manhattan_plot(temps["manhattan"], [v.chrom for v in variants],
                           [int(v.bp) for v in variants], cols["P"], title, highlight,
                           names=[v.snp for v in variants])  # fmt: skip
            qq_plot(temps["qq"], cols["STAT"] ** 2, cols["P"], title)
        shown = [key for key in finals if plots or key not in ("manhattan", "qq")]
        log_text = "\n".join(log_lines([finals[key] for key in shown])) + "\n"
        temps["log"].write_text(log_text)
        produced = [key for key in finals if temps[key].exists()]
        for key in produced:
            temps[key].replace(finals[key])
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    return [finals[key] for key in produced], log_text


def run_logistic(options: LogisticOptions) -> LogisticResult:
    opts = options.common
    out = Path(opts.out)
    if not out.parent.is_dir():
        raise UserError(f"--out {opts.out}: directory {out.parent} does not exist")
    started = datetime.datetime.now(datetime.UTC)
    done: list[str] = []
    log = out.with_name(out.name + ".log")
    try:
        with contextlib.ExitStack() as cleanup:
            return _run_logistic(options, out, started, done, cleanup)
    except (Exception, KeyboardInterrupt) as err:
        with contextlib.suppress(OSError):
            write_failure_log(log, "gwas logistic", opts.command_line, started, done, err)
        raise


def _run_logistic(
    options: LogisticOptions,
    out: Path,
    started: datetime.datetime,
    done: list[str],
    cleanup: contextlib.ExitStack,
) -> LogisticResult:
    opts = options.common
    check_options(opts)
    if opts.backend not in BACKENDS:
        raise UserError(f"--backend {opts.backend}: unknown backend")
    if opts.covar is None:
        raise UserError("hec gwas logistic needs --covar FILE (FID IID covariate...)")
    if opts.scale.active:
        raise UserError("hec gwas logistic runs on one machine: the scale-out options are "
                        "not supported yet")  # fmt: skip
    backend = start_backend(opts, out, cleanup)
    meter = PhaseMeter()
    progress = Progress(enabled=opts.progress, seconds=lambda ph: meter.seconds.get(ph, 0.0))
    filter_log = FilterLog()

    # Step (1).
    progress.start("read")
    with meter.phase("read"):
        fileset = open_input(opts)
        done.append(f"read {fileset.kind} {fileset.prefix}: {fileset.n_samples} samples")
        spec = pheno_spec(opts)
        y_file = sample_phenotypes(fileset, spec, binary=True)
        cov = read_covariates(Path(opts.covar), fileset, options.covar_names)
        fileset = select(fileset, opts.selection, filter_log)
        assert fileset.sample_rows is not None
        y_all = y_file[fileset.sample_rows]
        qc = quality_control(fileset, y_all, True, opts.selection, filter_log)
        fileset, y_all = qc.fileset, qc.pheno
        fileset = run_qc(fileset, y_all, True, opts.selection, filter_log, backend, meter,
                         progress, opts.precision_bits, opts.cache_dir)  # fmt: skip
        assert fileset.sample_rows is not None
        cov_rows = np.asarray(fileset.sample_rows)  # the file's rows of the analysed samples
        done.extend(filter_log.lines)
    progress.finish("read")
    warnings = check_variants(fileset)
    check_output_directory(out, output_bytes_estimate(fileset.n_variants, opts.plots))
    included = ~np.isnan(y_all)
    y = y_all[included]
    n_inc = int(included.sum())
    n_cases = int(y.sum())
    if n_cases == 0 or n_cases == n_inc:
        raise UserError(
            f"{opts.pheno or fileset.fam}: {n_cases} cases and {n_inc - n_cases} controls with "
            f"a phenotype ({spec.describe(fileset)}); the case/control test needs both",
            hint="phenotypes: 1 = control, 2 = case, -9/0/NA = missing (0/1 coding: --1)",
        )
    done.append(f"phenotype from {spec.describe(fileset)}: {n_cases} cases, "
                f"{n_inc - n_cases} controls")  # fmt: skip

    # Step (2).
    progress.start("covariates")
    with meter.phase("covariates"):
        rows = cov_rows[included]
        check_complete(cov, fileset, rows)
        x = design_matrix(cov.values[rows], cov.names, cov.path)
        fit = null_fit(x, y)
        done.append(
            f"covariates {', '.join(cov.names)} from {cov.path}: standardized, intercept added "
            f"(K = {x.shape[1]}); covariate-only model converged in {fit.iterations} Newton steps"
        )
    progress.finish("covariates")
    progress.start("scan")
    with meter.phase("scan"):
        sc = scan(fileset, y_all, included)
    progress.finish("scan")
    if sc.any_missing or sc.any_haploid:
        why = "missing genotype calls" if sc.any_missing else "haploid calls (X, Y, MT)"
        raise UserError(
            f"{fileset.prefix}: the analysed samples have {why}; the semi-parallel test fits "
            "the covariate model once for all SNPs, so every analysed call must be diploid "
            "and present",
            hint="--geno 0 removes SNPs with missing calls; --chr 1-22 keeps the autosomes",
        )

    m = fileset.n_variants
    k = x.shape[1]
    bim = fileset.variants
    a1 = [v.a2 if s else v.a1 for v, s in zip(bim, sc.swap, strict=True)]
    a2 = [v.a1 if s else v.a2 for v, s in zip(bim, sc.swap, strict=True)]
    backend.bindings["snps_sha256"] = snp_list_digest(fileset, a1, a2)
    backend.bindings["individuals"] = str(n_inc)
    sizes = {"N": n_inc, "M": m, "K": k}
    progress.start("compile")
    with meter.phase("compile"):
        compiled = backend.compile(PROGRAM_LOGISTIC, sizes, opts.precision_bits, opts.cache_dir)
    progress.finish("compile")
    done.append(f"compiled {PROGRAM_LOGISTIC.name} for N={n_inc} M={m} K={k}")
    width = compiled.block_width(n_inc, m)
    ranges = [(i, start, min(start + width, m)) for i, start in enumerate(range(0, m, width))]
    owner = owner_inputs(x, y, fit)

    def blocks():
        for index, start, stop in ranges:
            with meter.phase("inputs"):
                g = fileset.read_block(start, stop)[included].astype(np.float64)
                minor = np.where(sc.swap[start:stop], 2.0 - g, g)
            yield Block(index, start, stop, {**owner, "S": minor},
                        shared=frozenset({"r", "w", "V"}))  # fmt: skip

    names = [r.sym_value for r in compiled.stat_program.reveals()]
    revealed = {"score": np.zeros(m), "sws": np.zeros(m), "vs": np.zeros((k, m))}
    for block, values in backend.run(compiled, blocks(), len(ranges), meter, progress):
        for name in names:
            revealed[name][..., block.start : block.stop] = values[name]
    done.append(f"ran {len(ranges)} block(s) with {backend_label(backend)}")

    progress.start("client")
    with meter.phase("client"):
        cols = statistic_columns(compiled.stat_program, sizes, revealed, fit.h_inv,
                                 sc.counts.monomorphic)  # fmt: skip
        check: dict[str, float] = {}
        if options.check_plaintext:
            check = _check_plaintext(fileset, included, sc.swap, x, y, cols)
    progress.finish("client")

    lam = genomic_inflation(cols["STAT"] ** 2)
    kind = "encrypted" if backend.encrypts else "SIMULATION of encryption"
    title = (
        f"{out.name}: logistic regression with {k - 1} covariates (semi-parallel, "
        f"PLINK --logistic), {kind}; N = {n_inc}, M = {m} SNPs, λ = {lam:.3f}"
    )

    def log_lines(written: list[Path]) -> list[str]:
        rep = compiled.report
        return [
            f"hec {__version__} gwas logistic  (Python {platform.python_version()})",
            f"command: {opts.command_line or ' '.join(shlex.quote(a) for a in sys.argv)}",
            f"started: {started.isoformat(timespec='seconds')}",
            "",
            f"backend: {backend_label(backend)}",
            f"  {backend.description}",
            *(f"  {note}" for note in backend.notes),
            "",
            *done,
            *warnings,
            f"program: {PROGRAM_LOGISTIC.name} (source sha256 {compiled.source_sha256})",
            f"security: {rep['params']['security_bits']}-bit, ring dimension "
            f"2^{rep['params']['log_n']}",
            compiled.promise_text(),
            "revealed to the coordinator (decrypted): per SNP the score S'(y - p), S'WS and "
            f"X'WS ({k} values): the sums of the SNP's one Newton step",
            "computed on plaintext by the data holder before encryption: the A1/A2 coding, the "
            "covariate-only logistic fit (coefficients and X'WX, which the coordinator uses) "
            "and each individual's r = y - p, w = p (1 - p), w x",
            "",
            *method_lines(f"convergence ({fit.iterations} steps)"),
            *_check_lines(check, options.check_plaintext),
            "",
            *result_lines(lam, cols["P"], bim),
            "phases:",
            *(f"  {name:<10} {secs:10.3f} s" for name, secs in meter.seconds.items()),
            "written:",
            *(f"  {path}" for path in written),
        ]

    progress.start("write")
    with meter.phase("write"):
        files, log_text = write_outputs(out, bim, a1, n_inc, cols, opts.plots, title, log_lines,
                                        opts.highlight)  # fmt: skip
    progress.finish("write")
    return LogisticResult(
        cols["BETA"], cols["STAT"], cols["P"], a1, files, log_text,
        n_inc, n_cases, cov.names, lam, backend.encrypts, fit, check,
    )  # fmt: skip


def _check_plaintext(
    fileset: Fileset,
    included: npt.NDArray[np.bool_],
    swap: npt.NDArray[np.bool_],
    x: Array,
    y: Array,
    cols: dict[str, Array],
) -> dict[str, float]:
    """The same statistic in float64 on the data holder's plaintext genotypes: R^2 and the
    largest difference of STAT."""
    fit = null_fit(x, y)
    want = {"STAT": np.full(fileset.n_variants, np.nan)}
    for start in range(0, fileset.n_variants, SCAN_BLOCK):  # bounded memory, as the scan
        stop = min(start + SCAN_BLOCK, fileset.n_variants)
        g = fileset.read_block(start, stop)[included].astype(np.float64)
        s = np.where(swap[start:stop], 2.0 - g, g)
        want["STAT"][start:stop] = semi_parallel(x, y, s, fit)["STAT"]
    ok = np.isfinite(want["STAT"]) & np.isfinite(cols["STAT"])
    diff = float(np.max(np.abs(want["STAT"][ok] - cols["STAT"][ok]), initial=0.0))
    na = int(np.sum(np.isfinite(want["STAT"]) != np.isfinite(cols["STAT"])))
    return {"r2": r_squared(cols["STAT"], want["STAT"]), "max_abs_diff": diff, "na_differ": na}


def _check_lines(check: dict[str, float], asked: bool) -> list[str]:
    if not asked:
        return ["  --check-plaintext was not given: no comparison with the plaintext statistic"]
    return [
        "  --check-plaintext: against the same statistic in float64 on the plaintext data:",
        f"    R^2 of STAT {check['r2']:.9f}, largest |difference| {check['max_abs_diff']:.3g}, "
        f"SNPs NA in one only: {int(check['na_differ'])}",
    ]


__all__ = ["LogisticOptions", "LogisticResult", "run_logistic", "semi_parallel"]
