"""The multi-site logistic GWAS (issue 22): `hec gwas logistic`'s semi-parallel test over sites
that may not pool their rows, with the parties and trust model of the multi-site chi-square
(gwas/multisite.py): the coordinator holds the secret keys, the sites their data and the public
keys, the server the evaluation keys only.

Steps (docs/multisite.md walks through three sites on one machine):
 (1) coordinator, `hec site setup --test logistic`: the shared SNP list, each site's rows, the
     covariates' names and declared ranges (every site maps a covariate's range onto [-1, 1]
     with the same affine map, the programs' input domain), K = covariates + 1; keygen for
     gwas/programs/logistic_fit.hec (`fit-keys`), logistic.hec (`keys`) and qc.hec
     (`qc-keys`); round 0 published with theta = 0;
 (2) the pooled covariate-only fit by Newton's method (IRLS), one round at a time:
     (a) each site, `hec site fit`: at the current round's public theta, r = y - p, X and
         V = w X of its analysed rows, encrypted (public key) into one upload;
     (b) server, `hec site compute`: the sums over all sites' rows (evaluation key only);
     (c) coordinator, `hec site step`: decrypts the pooled gradient X'(y - p) and information
         X'WX only, takes the Newton step, publishes round T + 1's theta, or, when the step is
         below the tolerance (NEWTON_TOLERANCE or the step's own CKKS error bound, whichever
         is larger), marks theta_T final;
 (3) each site, `hec site prepare`: r, w, V at the final theta and its genotypes S, aligned
     to the shared list as for the chi-square (gwas/multisite.py `align`), every analysed call
     present and diploid, plus the QC counts' inputs; encrypted into one upload;
 (4) server, `hec site compute`; (5) coordinator, `hec site finish`: decrypts per SNP the
     score S'r, S'WS and X'WS and the QC counts, codes A1 by PLINK's founders rule, removes the
     covariates' residual gradient from the score, and writes .assoc.logistic, plots and .log
     with `hec gwas logistic`'s writer (gwas/logistic.py `write_outputs`).

What each party learns: a site, the published theta of every round (the pooled fit's
coefficients); the server, ciphertexts and each site's row and sample counts; the coordinator,
each site's analysed sample count (to check that it does not change between rounds), per round
the pooled gradient (K values) and information (K x K: at round 0, theta = 0, they give the
pooled sample and case counts and the covariates' pooled sums and cross products), per SNP the
pooled score, S'WS and X'WS (as in one-machine mode) and the pooled QC counts.
No site's own sums. A covariate's declared range is the study protocol's, not a site's data.
"""

from __future__ import annotations

import datetime
import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError
from gwas import DEFAULT_PRECISION_BITS
from gwas.chisq import ChisqOptions, write_failure_log
from gwas.chromosomes import ploidy
from gwas.filters import (
    FilterLog,
    Selection,
    allele_coding,
    qc_from_counts,
    qc_inputs,
)
from gwas.logistic import (
    MAX_K,
    NEWTON_ITERATIONS,
    NEWTON_TOLERANCE,
    PROGRAM_FIT,
    PROGRAM_LOGISTIC,
    check_complete,
    method_lines,
    read_covariates,
    result_lines,
    statistic_columns,
    write_outputs,
)
from gwas.multisite import (
    ROUNDS_DIR,
    Study,
    _compile,
    _roles,
    align,
    aligned_calls,
    check_site,
    compiled,
    load_study,
    site_samples,
    write_json,
    write_upload,
)
from gwas.multisite import setup as setup_study
from gwas.plink import Fileset
from gwas.plots import genomic_inflation
from gwas.qc import PROGRAM_QC, counts_from_reveals, hwe_sample

Array = npt.NDArray[np.float64]
COORDINATOR_DIR = "coordinator"  # the decrypted pooled sums of every round: stays with the key
# The tolerance is this many times the Newton step's error bound propagated from the promised
# errors of the decrypted sums: a step that small is noise, and more rounds cannot shrink it.
NOISE_MARGIN = 4.0


def parse_ranges(names: Sequence[str], ranges: Sequence[str]) -> list[tuple[float, float]]:
    """`--covar-range NAME=LO:HI` for every covariate of `--covar-name`."""
    if not names:
        raise UserError("hec site setup --test logistic needs --covar-name A,B,... (the "
                        "covariates every site's --covar file has, by header name)")  # fmt: skip
    if len(set(names)) != len(names):
        raise UserError(f"--covar-name {','.join(names)}: a name appears twice")
    if len(names) + 1 > MAX_K:
        raise UserError(
            f"--covar-name: {len(names)} covariates; the program takes at most {MAX_K - 1} "
            f"(K <= {MAX_K} with the intercept)"
        )
    found: dict[str, tuple[float, float]] = {}
    for item in ranges:
        name, sep, span = item.partition("=")
        lo, sep2, hi = span.partition(":")
        try:
            bounds = (float(lo), float(hi))
        except ValueError:
            bounds = (math.nan, math.nan)
        if not sep or not sep2 or not all(math.isfinite(b) for b in bounds):
            raise UserError(f"--covar-range {item!r}: expected NAME=LO:HI (e.g. age=18:100)")
        if name not in names:
            raise UserError(f"--covar-range {item!r}: {name} is not in --covar-name "
                            f"{','.join(names)}")  # fmt: skip
        if name in found:
            raise UserError(f"--covar-range {name} is given twice")
        if not bounds[0] < bounds[1]:
            raise UserError(f"--covar-range {item!r}: LO must be below HI")
        found[name] = bounds
    absent = [n for n in names if n not in found]
    if absent:
        raise UserError(
            f"no --covar-range for {', '.join(absent)}",
            hint="the study declares every covariate's range (NAME=LO:HI): each site maps it "
            "onto [-1, 1] with the same affine map, and refuses a value outside it",
        )
    return [found[n] for n in names]


def setup(
    directory: Path,
    shared: Path,
    sites: list[str],
    covariates: Sequence[str],
    ranges: Sequence[str],
    precision_bits: float = DEFAULT_PRECISION_BITS,
    cache_dir: Path | None = None,
) -> Study:
    """Step (1): the study, its three programs' keys, and round 0 (theta = 0)."""
    bounds = parse_ranges(covariates, ranges)
    study = setup_study(directory, shared, sites, precision_bits, cache_dir, True, "logistic",
                        covariates, bounds)  # fmt: skip
    (directory / ROUNDS_DIR).mkdir()
    (directory / COORDINATOR_DIR).mkdir(mode=0o700)
    _publish(study, 0, np.zeros(study.k), final=False)
    return study


def load_logistic(study_dir: Path) -> Study:
    study = load_study(study_dir)
    if study.test != "logistic":
        raise UserError(f"{study_dir}: a {study.test} study (set up without --test logistic): "
                        "it has no covariate fit")  # fmt: skip
    if not study.rounds():
        raise UserError(
            f"{study_dir}: no round of the covariate fit in {study_dir / ROUNDS_DIR} (its "
            "setup did not finish)",
            hint="the coordinator sets the study up again with `hec site setup --test logistic`",
        )
    return study


def _publish(study: Study, round_: int, theta: Array, final: bool, **extra: Any) -> None:
    made = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    entry = {"round": round_, "theta": [float(t) for t in theta], "final": final, "made": made}
    write_json(study.directory / ROUNDS_DIR / f"round-{round_}.json", {**entry, **extra})


@dataclass
class SiteRows:
    """A site's analysed samples: after its sample filters and --mind, with a phenotype."""

    fileset: Fileset
    included: npt.NDArray[np.bool_]  # per sample of `fileset`: analysed
    y: Array  # phenotype (0/1) of the analysed samples
    x: Array  # their design rows: the intercept, then the covariates mapped onto [-1, 1]
    log: FilterLog


def site_rows(study: Study, site: str, opts: ChisqOptions) -> SiteRows:
    """Read the site's files as `hec gwas logistic` does (gwas/logistic.py, step (1)) and map
    its covariates with the study's declared ranges (a value outside is an error naming the
    file and line)."""
    if opts.covar is None:
        raise UserError(f"site {site}: a logistic study needs --covar FILE (FID IID and the "
                        f"covariates {', '.join(study.covariates)} by header name)")  # fmt: skip
    samples = site_samples(study, site, opts, "the coordinator gives them to `hec site finish`")
    cov = read_covariates(Path(opts.covar), samples.opened, study.covariates)
    fileset, y_all, log = samples.fileset, samples.pheno, samples.log
    assert fileset.sample_rows is not None
    included = ~np.isnan(y_all)
    rows = np.asarray(fileset.sample_rows)[included]
    check_complete(cov, fileset, rows)
    values = cov.values[rows]
    for k, (lo, hi) in enumerate(study.covar_ranges):
        outside = np.flatnonzero((values[:, k] < lo) | (values[:, k] > hi))
        if outside.size:
            sample = fileset.samples[int(np.flatnonzero(included)[outside[0]])]
            line = _covar_line(cov.path, sample.fid, sample.iid)
            raise UserError(
                f"{cov.path}:{line}: site {site}: {study.covariates[k]} = "
                f"{values[outside[0], k]:g} (sample {sample.label}) is outside the study's "
                f"declared range [{lo:g}, {hi:g}] ({outside.size} value(s) outside)",
                hint="the coordinator declares the ranges with `hec site setup --covar-range`; "
                "a wider range needs a new study",
            )
    lo_hi = np.array(study.covar_ranges).reshape(-1, 2)
    scaled = (2.0 * values - (lo_hi[:, 0] + lo_hi[:, 1])) / (lo_hi[:, 1] - lo_hi[:, 0])
    x = np.column_stack([np.ones(len(rows)), np.clip(scaled, -1.0, 1.0)])
    return SiteRows(fileset, included, y_all[included], x, log)


def _covar_line(path: Path, fid: str, iid: str) -> int:
    with path.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.split()[:2] == [fid, iid]:
                return lineno
    return 0


def _owner_rows(rows: SiteRows, theta: Array) -> dict[str, Array]:
    """r = y - p, w = p (1 - p) and V = w x of the site's analysed rows at `theta`."""
    p = 1.0 / (1.0 + np.exp(-(rows.x @ theta)))
    w = p * (1.0 - p)
    return {"r": rows.y - p, "w": w, "V": rows.x * w[:, None]}


def fit_round(
    study_dir: Path, site: str, opts: ChisqOptions, out: Path, cache_dir: Path | None = None
) -> dict[str, Any]:
    """Step (2a): the site's upload of the current round (r, X, V at its theta)."""
    study = load_logistic(study_dir)
    check_site(study, site, out)
    current = study.rounds()[-1]
    if current["final"]:
        raise UserError(
            f"site {site}: the covariate fit converged (round {current['round']} is final); "
            "the sites now run `hec site prepare`"
        )
    rows = site_rows(study, site, opts)
    owner = _owner_rows(rows, np.array(current["theta"]))
    inputs = {"r": owner["r"], "X": rows.x, "V": owner["V"]}
    summary = {
        "kind": "fit",
        "round": current["round"],
        "samples": rows.fileset.n_samples,
        "samples_analysed": len(rows.y),
        "filters": rows.log.lines,
        "input": f"{rows.fileset.kind} {rows.fileset.prefix}",
    }
    encrypt = [(PROGRAM_FIT, "fit-keys", "ciphertexts", inputs)]
    return write_upload(study, site, out, summary, encrypt, cache_dir)


def _results_meta(results: Path, kind: str) -> dict[str, dict[str, Any]]:
    path = results / "uploads.json"
    if not path.is_file():
        raise UserError(f"{results}: not the server's results (no uploads.json: "
                        "`hec site compute` writes it)")  # fmt: skip
    metas: dict[str, dict[str, Any]] = json.loads(path.read_text())
    got = next(iter(metas.values()))["kind"]
    if got != kind:
        what = {"fit": "a round of the covariate fit", "snps": "the per-SNP inputs"}
        raise UserError(f"{results}: the server's results of {what[got]}, not of {what[kind]}")
    return metas


@dataclass
class NewtonStep:
    step: Array  # inverse(X'WX) X'(y - p)
    largest: float  # its largest component
    tolerance: float  # the largest a final step may be
    final: bool


def newton_step(
    round_: int,
    theta: Array,
    grad: Array,
    info: Array,
    errors: tuple[float, float],
    covariates: Sequence[str],
) -> NewtonStep:
    """The coordinator's Newton step from round `round_`'s decrypted pooled gradient and
    information, whose promised absolute errors are `errors` (gradient, information). Final
    when the step is at most max(NEWTON_TOLERANCE, NOISE_MARGIN x its own error bound)."""
    info = (info + info.T) / 2.0
    if round_ == 0:  # theta = 0: p = 1/2, w = 1/4, so the intercept's sums count the samples
        n, cases = 4.0 * info[0, 0], grad[0] + 2.0 * info[0, 0]
        if round(cases) <= 0 or round(cases) >= round(n):
            raise UserError(
                f"the pooled analysed samples are {round(cases)} cases and "
                f"{round(n - cases)} controls; the case/control test needs both"
            )
    try:
        h_inv = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        h_inv = np.full_like(info, np.nan)
    if not np.all(np.isfinite(h_inv)) or np.linalg.cond(info) > 1e12:
        raise UserError(
            f"round {round_}: the pooled information X'WX is singular: a covariate is constant "
            f"or the covariates {', '.join(covariates)} are linearly dependent (with the "
            "intercept) over all sites, or the fitted probabilities reached 0 and 1",
            hint="set the study up again without the covariate (--covar-name)",
        )
    step = h_inv @ grad
    # The step's error bound: the decrypted sums carry at most err_g (gradient) and err_h
    # (information) each; to first order the step then errs by |H^-1| (err_g + err_h |step|_1).
    err_g, err_h = errors
    bound = np.abs(h_inv) @ np.full(len(grad), err_g + err_h * np.sum(np.abs(step)))
    tolerance = max(NEWTON_TOLERANCE, NOISE_MARGIN * float(np.max(bound)))
    largest = float(np.max(np.abs(step)))
    final = largest <= tolerance
    if not final and (round_ + 1 >= NEWTON_ITERATIONS or not np.all(np.isfinite(theta + step))):
        raise UserError(
            f"the pooled covariate-only logistic model does not converge in {round_ + 1} Newton "
            "rounds (a covariate separates cases from controls)",
            hint="set the study up again without the covariate that predicts the phenotype",
        )
    return NewtonStep(step, largest, tolerance, final)


def _coordinator_record(study: Study, round_: int) -> dict[str, Any]:
    return json.loads((study.directory / COORDINATOR_DIR / f"round-{round_}.json").read_text())


def same_samples(before: dict[str, int], now: dict[str, int], then: str, later: str) -> None:
    """Every site analyses the same samples in every round and in its per-SNP upload (its
    count, which the uploads' summaries carry, must not change)."""
    for site, n in now.items():
        if before.get(site) != n:
            raise UserError(
                f"site {site}: {n} analysed samples in {later}, {before.get(site)} in {then}; "
                "a site analyses the same samples in every round and in `hec site prepare`",
                hint="the site gives the same phenotype, sample filters and --mind to every "
                "`hec site fit` and `hec site prepare`",
            )


def step(study_dir: Path, results: Path, cache_dir: Path | None = None) -> dict[str, Any]:
    """Step (2c): decrypt the pooled gradient and information of the current round, take the
    Newton step, publish the next round (or mark the fit final). Returns the published round."""
    study = load_logistic(study_dir)
    current = study.rounds()[-1]
    t = int(current["round"])
    if current["final"]:
        raise UserError(f"the covariate fit already converged (round {t} is final); run "
                        "`hec site prepare` at the sites")  # fmt: skip
    metas = _results_meta(results, "fit")
    got = next(iter(metas.values()))["round"]
    if got != t:
        raise UserError(
            f"{results}: the sums of round {got}, the study's current round is {t} (run out "
            "of order: every round is computed and stepped once, in turn)"
        )
    samples = {site: int(meta["samples_analysed"]) for site, meta in metas.items()}
    if t > 0:
        before = _coordinator_record(study, t - 1)["samples"]
        same_samples(before, samples, f"round {t - 1}", f"round {t}")
    backend = _compile(study, cache_dir, PROGRAM_FIT)
    # Flooded (the default): the new theta, computed from these values, is published.
    with tempfile.TemporaryDirectory(prefix="hec-step-") as tmp:
        revealed = _roles(backend, study_dir, "fit-keys").decrypt(results, Path(tmp) / "dec")
    grad = revealed["grad"].astype(np.float64).reshape(study.k)
    info = revealed["info"].astype(np.float64).reshape(study.k, study.k)
    info = (info + info.T) / 2.0  # X'WX is symmetric; its decrypted entries differ by noise
    theta = np.array(current["theta"])
    fit_program = compiled(study, cache_dir, PROGRAM_FIT)
    errors = (fit_program.revealed_abs_error("grad"), fit_program.revealed_abs_error("info"))
    newton = newton_step(t, theta, grad, info, errors, study.covariates)
    new_step, largest, tolerance, final = (
        newton.step,
        newton.largest,
        newton.tolerance,
        newton.final,
    )
    record = {
        "round": t,
        "theta": [float(v) for v in theta],
        "grad": [float(v) for v in grad],
        "info": [[float(v) for v in row] for row in info],
        "step": [float(v) for v in new_step],
        "tolerance": tolerance,
        "results": str(results),
        "samples": samples,
    }
    write_json(study.directory / COORDINATOR_DIR / f"round-{t}.json", record)
    if final:  # theta_T is the fit: the sites' r, w, V and X'WX are all at theta_T
        _publish(study, t + 1, theta, final=True, fit_round=t, last_step=largest,
                 tolerance=tolerance)  # fmt: skip
    else:
        _publish(study, t + 1, theta + new_step, final=False, last_step=largest,
                 tolerance=tolerance)  # fmt: skip
    return study.rounds()[-1]


def prepare(
    study_dir: Path,
    site: str,
    opts: ChisqOptions,
    out: Path,
    strand_ambiguous: str = "keep",
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Step (3): the site's per-SNP upload at the final theta (logistic.hec's r, w, V, S) and
    its QC counts' inputs (qc.hec)."""
    study = load_logistic(study_dir)
    check_site(study, site, out)
    current = study.rounds()[-1]
    if not current["final"]:
        raise UserError(
            f"site {site}: the covariate fit has not converged (round {current['round']} is "
            "open): the per-SNP inputs need its final theta",
            hint="each round: `hec site fit` at every site, `hec site compute`, `hec site step`",
        )
    rows = site_rows(study, site, opts)
    fileset = rows.fileset
    alignment = align(site, fileset, study.shared, strand_ambiguous)
    male = np.array([s.is_male for s in fileset.samples])
    ploidies = [ploidy(s.chrom) for s in study.shared]
    g = aligned_calls(fileset, alignment)
    a1, alleles = allele_coding(g, ploidies, male)
    called = alleles[rows.included]
    for value, why in ((0, "missing genotype calls"), (1, "haploid calls (X, Y, MT)")):
        bad = np.flatnonzero((called == value).any(axis=0))
        if bad.size:
            names = ", ".join(study.shared[int(j)].snp for j in bad[:5])
            raise UserError(
                f"site {site}: {fileset.prefix}: the analysed samples have {why} in "
                f"{bad.size} shared SNP(s) ({names}{' ...' if bad.size > 5 else ''}); the "
                "semi-parallel test fits the covariate model once for all SNPs, so every "
                "analysed call must be diploid and present",
                hint="the coordinator removes those SNPs from the shared list (or the sites "
                "impute them); a dropped strand-ambiguous SNP counts as missing",
            )
    owner = _owner_rows(rows, np.array(current["theta"]))
    inputs = {**owner, "S": a1[rows.included]}
    founders = np.array([s.is_founder for s in fileset.samples])
    y_all = np.full(fileset.n_samples, np.nan)
    y_all[rows.included] = rows.y
    qc_in = qc_inputs(g, ploidies, male, founders, hwe_sample(fileset, y_all, True))
    summary = {
        "kind": "snps",
        "round": current["round"],
        "samples": fileset.n_samples,
        "samples_analysed": len(rows.y),
        "alignment": alignment.counts,
        "filters": rows.log.lines,
        "input": f"{fileset.kind} {fileset.prefix}",
    }
    return write_upload(
        study, site, out, summary,
        [(PROGRAM_LOGISTIC, "keys", "ciphertexts", inputs),
         (PROGRAM_QC, "qc-keys", "qc-ciphertexts", qc_in)],
        cache_dir,
    )  # fmt: skip


@dataclass
class SiteResult:
    beta: Array
    stat: Array
    p: Array
    a1: list[str]
    snps: list[str]
    files: list[Path]
    log_text: str


def finish(
    study_dir: Path,
    results: Path,
    out: Path,
    plots: bool = True,
    cache_dir: Path | None = None,
    qc: Selection | None = None,
) -> SiteResult:
    """Step (5): decrypt the pooled per-SNP sums and write `hec gwas logistic`'s outputs;
    `qc`: the --geno, --hwe and --maf thresholds, applied to the pooled QC counts."""
    started = datetime.datetime.now(datetime.UTC)
    done: list[str] = []
    try:
        return _finish(study_dir, results, out, plots, cache_dir, qc or Selection(), started,
                       done)  # fmt: skip
    except (Exception, KeyboardInterrupt) as err:
        write_failure_log(out.with_name(out.name + ".log"), "site finish", "", started, done, err)
        raise


def _finish(
    study_dir: Path, results: Path, out: Path, plots: bool, cache_dir: Path | None,
    qc: Selection, started: datetime.datetime, done: list[str],
) -> SiteResult:  # fmt: skip
    study = load_logistic(study_dir)
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: directory {out.parent} does not exist")
    final = study.rounds()[-1]
    if not final["final"]:
        raise UserError(f"the covariate fit has not converged (round {final['round']} is open)")
    metas = _results_meta(results, "snps")
    got = next(iter(metas.values()))["round"]
    if got != final["round"]:
        raise UserError(f"{results}: the sites' inputs at round {got}'s theta, the final round "
                        f"is {final['round']}")  # fmt: skip
    fit = _coordinator_record(study, int(final["fit_round"]))
    samples = {site: int(meta["samples_analysed"]) for site, meta in metas.items()}
    same_samples(fit["samples"], samples, "the covariate fit", "the per-SNP upload")
    grad, info = np.array(fit["grad"]), np.array(fit["info"])
    h_inv = np.linalg.inv(info)
    backend = _compile(study, cache_dir, PROGRAM_LOGISTIC)
    program = compiled(study, cache_dir, PROGRAM_LOGISTIC)
    # Flooded (the default): the statistics written are computed from these values.
    with tempfile.TemporaryDirectory(prefix="hec-finish-") as tmp:
        dec = _roles(backend, study_dir).decrypt(results, Path(tmp) / "dec")
    m, k = len(study.shared), study.k
    score = dec["score"].astype(np.float64).reshape(m)
    sws = dec["sws"].astype(np.float64).reshape(m)
    vs = dec["vs"].astype(np.float64).reshape(k, m)
    done.append(f"decrypted score, sws, vs from {results}")
    qc_backend = _compile(study, cache_dir, PROGRAM_QC)
    with tempfile.TemporaryDirectory(prefix="hec-finish-") as tmp:
        # Unflooded: only the counts rounded to integers leave (as gwas/multisite.py `finish`).
        qc_dec = _roles(qc_backend, study_dir, "qc-keys").decrypt(
            results / "qc", Path(tmp) / "dec", flooding=False
        )
    qcc = counts_from_reveals(
        compiled(study, cache_dir, PROGRAM_QC),
        {key: v.astype(np.float64) for key, v in qc_dec.items()},
    )
    # A1: the minor allele of the pooled founders' calls (PLINK's rule, as `hec gwas logistic`).
    swap = qcc.maf_a1 > qcc.maf_n - qcc.maf_a1
    # The sites counted the shared A1; S' = 2 - S for the other allele (the intercept's column
    # is 1 on every analysed row): S'r = 2 sum(r) - S'r, S'WS' = 4 sum(w) - 4 w'S + S'WS,
    # X'WS' = 2 X'W1 - X'WS; sum(r) = grad[0], sum(w) = info[0, 0], X'W1 = info[:, 0].
    score = np.where(swap, 2.0 * grad[0] - score, score)
    sws = np.where(swap, 4.0 * info[0, 0] - 4.0 * vs[0] + sws, sws)
    vs = np.where(swap, 2.0 * info[:, :1] - vs, vs)
    # The efficient score: the covariates' residual gradient at the final theta projected out
    # (exactly 0 at the exact optimum; here the pooled fit stops within its CKKS tolerance).
    score = score - vs.T @ (h_inv @ grad)
    monomorphic = (qcc.maf_a1 == 0) | (qcc.maf_a1 == qcc.maf_n)
    sums = {"score": score, "sws": sws, "vs": vs}
    sizes = study.sizes_for(PROGRAM_LOGISTIC)
    cols = statistic_columns(program.stat_program, sizes, sums, h_inv, monomorphic)
    log = FilterLog()
    keep = np.ones(m, dtype=bool)
    if qc.geno is not None or qc.maf is not None or qc.hwe is not None:
        keep = qc_from_counts(qcc, [v.snp for v in study.shared], qc, log)
    kept = np.flatnonzero(keep)
    variants = [study.shared[int(j)] for j in kept]
    cols = {key: v[kept] for key, v in cols.items()}
    a1 = [v.a2 if s else v.a1 for v, s in zip(variants, swap[kept], strict=True)]
    n = sum(int(meta["samples_analysed"]) for meta in metas.values())
    lam = genomic_inflation(cols["STAT"] ** 2)
    title = (
        f"{out.name}: logistic regression with {k - 1} covariates (semi-parallel, PLINK "
        f"--logistic), encrypted, {len(study.sites)} sites; N = {n}, M = {len(variants)} SNPs, "
        f"λ = {lam:.3f}"
    )
    params = program.report["params"]
    site_rows_text = ", ".join(f"{s} rows {a}:{b}" for s, (a, b) in study.sites.items())
    ranges = ", ".join(f"{c} [{lo:g}, {hi:g}]" for c, (lo, hi) in
                       zip(study.covariates, study.covar_ranges, strict=True))  # fmt: skip

    def log_lines(written: list[Path]) -> list[str]:
        return [
            f"hec site finish: pooled logistic regression over {len(study.sites)} sites",
            f"started: {started.isoformat(timespec='seconds')}",
            f"study {study_dir}: sites {site_rows_text}",
            *(
                f"  upload of site {s}: {meta['upload']} ({meta['samples_analysed']} analysed "
                "samples)"
                for s, meta in metas.items()
            ),
            f"covariates (declared ranges, mapped onto [-1, 1]): {ranges}; intercept added, "
            f"K = {k}",
            f"covariate-only fit pooled over the sites: theta final at round {fit['round']} "
            f"(largest Newton step {final['last_step']:.3g} <= tolerance "
            f"{final['tolerance']:.3g}: max(1e-10, {NOISE_MARGIN:g} x the step's error bound "
            "from the decrypted sums' promised errors))",
            f"program {PROGRAM_LOGISTIC.name}, N = {study.n_rows} rows (padding rows are zero), "
            f"M = {m}, K = {k}; ring 2^{params['log_n']}, {params['security_bits']}-bit security",
            program.promise_text(),
            "revealed to the coordinator: per round of the fit the pooled gradient X'(y - p) "
            f"({k} values) and information X'WX ({k} x {k}); per SNP the pooled score S'r, "
            f"S'WS and X'WS ({k} values); the pooled QC counts of gwas/programs/qc.hec (no "
            "site's own sums)",
            f"A1 = the minor allele of the pooled founders' calls (PLINK's rule, QC counts): "
            f"{int(swap[kept].sum())} SNPs have A1 = the shared list's A2",
            *(f"  {line}" for line in log.lines),
            *(
                f"  removed by {key}: {', '.join(v[:10])}"
                for key, v in log.removed_snps.items()
                if v
            ),
            "",
            *method_lines(f"convergence over the sites ({fit['round'] + 1} rounds)"),
            "  Each score has the covariates' residual gradient at the final theta (pooled,",
            "  decrypted) projected out: S'r - (X'WS)' inverse(X'WX) X'r, the efficient score.",
            "",
            *result_lines(lam, cols["P"], variants),
            "written:",
            *(f"  {path}" for path in written),
        ]

    files, log_text = write_outputs(out, variants, a1, n, cols, plots, title, log_lines)
    return SiteResult(cols["BETA"], cols["STAT"], cols["P"], a1, [v.snp for v in variants],
                      files, log_text)  # fmt: skip


__all__ = ["finish", "fit_round", "prepare", "setup", "step"]
