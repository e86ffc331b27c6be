"""`hec gwas logistic` (issue 22): the semi-parallel logistic regression with covariates against
its float64 statistic (sim and encrypted backends), against `plink1.9 --logistic --covar
--hide-covar` on cohorts whose covariates confound, the measured reason the program is not
examples/gwas/lra.hec's covariate model, the demo, and a negative test per covariate-file
error (each names the file, line or column, and leaves only a failure log)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import UserError
from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import evaluate
from gwas.chisq import ChisqOptions
from gwas.demo_logistic import (
    LogisticCohort,
    compare_with_plink_logistic,
    plink_logistic,
    run_logistic_demo,
    simulate_logistic_cohort,
    write_logistic_cohort,
)
from gwas.filters import Selection
from gwas.logistic import LogisticOptions, LogisticResult, r_squared, run_logistic, semi_parallel
from hec.cli import main
from tests.conftest import ROOT

needs_plink = pytest.mark.skipif(shutil.which("plink1.9") is None, reason="plink1.9 missing")


class Files:
    def __init__(self, directory: Path, cohort: LogisticCohort) -> None:
        self.directory = directory
        self.cohort = cohort
        self.prefix = directory / "cohort"
        self.covar = write_logistic_cohort(cohort, self.prefix)


@pytest.fixture(scope="module")
def confounded(tmp_path_factory: pytest.TempPathFactory) -> Files:
    """1000 individuals x 600 SNPs, the ancestry covariate with log odds ratio 1.5 per SD."""
    cohort = simulate_logistic_cohort(1000, 600, 8, seed=1, confounding=1.5)
    return Files(tmp_path_factory.mktemp("confounded"), cohort)


def run(files: Files, out: Path, cache: Path, backend: str = "sim", **kw: object) -> LogisticResult:
    names = kw.pop("covar_names", None)
    covar = kw.pop("covar", str(files.covar))
    common = ChisqOptions(bfile=str(files.prefix), out=str(out), covar=str(covar),
                          backend=backend, cache_dir=cache, progress=False, plots=False,
                          allow_no_sex=True, **kw)  # type: ignore[arg-type]  # fmt: skip
    return run_logistic(LogisticOptions(common, names, check_plaintext=True))  # type: ignore[arg-type]


def minor_counts(files: Files, result: LogisticResult) -> np.ndarray:
    s = files.cohort.genotypes.copy()
    swap = np.array([a != "A" for a in result.a1])
    s[:, swap] = 2.0 - s[:, swap]
    return s


def test_sim_backend_agrees_with_the_float64_statistic(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    result = run(confounded, tmp_path / "res", program_cache)
    x = np.column_stack([np.ones(1000), confounded.cohort.covariates])
    want = semi_parallel(x, confounded.cohort.case.astype(float), minor_counts(confounded, result))
    assert r_squared(result.stat, want["STAT"]) >= 0.999
    np.testing.assert_allclose(result.stat, want["STAT"], atol=1e-6)
    assert result.check["r2"] >= 0.999
    log = (tmp_path / "res.log").read_text()
    assert "--backend sim (SIMULATION, not encrypted)" in log
    assert "accuracy:" in log and "one Newton step for each SNP's effect" in log
    assert "--check-plaintext: against the same statistic in float64" in log
    header = (tmp_path / "res.assoc.logistic").read_text().splitlines()[0].split()
    assert header == ["CHR", "SNP", "BP", "A1", "TEST", "NMISS", "OR", "STAT", "P"]


@needs_plink
@pytest.mark.parametrize("seed", [1, 3])
def test_agrees_with_plink_logistic_on_confounded_cohorts(
    seed: int, tmp_path: Path, program_cache: Path
) -> None:
    """The issue's acceptance: R^2 >= 0.99 of STAT over the SNPs with P < 0.5, >= 9 of PLINK's
    top 10 hits among ours (measured 0.9999+ and 10 of 10)."""
    files = Files(tmp_path, simulate_logistic_cohort(1000, 600, 8, seed=seed, confounding=1.5))
    run(files, tmp_path / "ours", program_cache)
    theirs = plink_logistic(files.prefix, files.covar, tmp_path / "plink")
    assert isinstance(theirs, Path), theirs
    agreement = compare_with_plink_logistic(tmp_path / "ours.assoc.logistic", theirs)
    assert agreement.r2 >= 0.99, agreement.text
    assert agreement.top_shared >= 9, agreement.text
    assert agreement.a1_differ == 0


def test_lra_covariate_step_misses_under_strong_confounding(confounded: Files) -> None:
    """Why gwas/programs/logistic.hec fits the covariate model to convergence: lra.hec's first
    gradient step with a linear sigmoid, on the same cohort, gives weights p (1 - p) below 0 and
    misses the issue's R^2 >= 0.99 against the converged semi-parallel z (measured 0.965 here;
    the converged z agrees with plink1.9 to 0.9999)."""
    c = confounded.cohort
    z = (c.covariates - c.covariates.mean(0)) / c.covariates.std(0)
    x = np.column_stack([np.ones(1000), np.clip(z, -4, 4)])  # lra.hec's X: standardized
    s, y = c.genotypes[:, :200], c.case.astype(float)
    lra = check(parse_file(ROOT / "examples" / "gwas" / "lra.hec"))
    got = evaluate(lra, {"N": 1000, "M": 200, "K": 4}, {"y": y, "X": x, "S": s}).client["z"]
    want = semi_parallel(x, y, s)["STAT"]
    assert r_squared(got, want) < 0.99
    u = x @ (x.T @ (y - 0.5)) * 4 / 1000  # lra.hec's linear predictor
    p = 0.5 + 0.15625 * u
    assert np.min(p * (1 - p)) < 0  # its weights: some negative


def test_encrypted_backend_small(tmp_path: Path, program_cache: Path) -> None:
    files = Files(tmp_path, simulate_logistic_cohort(120, 24, 2, seed=5))
    result = run(files, tmp_path / "enc", program_cache, backend="encrypted", threads=1)
    assert result.backend_encrypts
    assert result.check["r2"] >= 0.999
    log = (tmp_path / "enc.log").read_text()
    assert "backend: --backend encrypted (encrypted)" in log
    for phase in ("covariates", "compile", "keygen", "encrypt", "compute", "decrypt", "client"):
        assert f"\n  {phase:<10} " in log, phase


@needs_plink
def test_demo_logistic_prints_the_plink_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "logistic", "--dir", str(tmp_path / "d"), "--n", "600", "--m", "800",
                 "--causal", "4", "--backend", "sim", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "plink1.9 --logistic hide-covar --covar on the same files" in text
    assert "top 10 hits shared" in text
    assert "without them (intercept only, plaintext)" in text


def test_demo_logistic_measures_the_confounding(tmp_path: Path) -> None:
    demo = run_logistic_demo(tmp_path / "d", n=600, m=800, n_causal=4, seed=4, backend="sim",
                             progress=False, cache_dir=tmp_path / "cache")  # fmt: skip
    assert demo.result.lam < 1.3
    assert "lambda" in demo.text and demo.result.check["r2"] >= 0.999


def test_cli_writes_the_outputs(
    confounded: Files, tmp_path: Path, program_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli"
    code = main(["gwas", "logistic", "--bfile", str(confounded.prefix), "--covar",
                 str(confounded.covar), "--covar-name", "pc,sex", "--out", str(out),
                 "--backend", "sim", "--allow-no-sex", "--no-progress", "--check-plaintext",
                 "--cache-dir", str(program_cache)])  # fmt: skip
    assert code == 0
    stdout = capsys.readouterr().out
    assert "covariates pc, sex and an intercept" in stdout
    for suffix in (".assoc.logistic", ".manhattan.png", ".qq.png", ".log"):
        assert (tmp_path / f"cli{suffix}").is_file(), suffix
    assert "K = 3" in (tmp_path / "cli.log").read_text()


# --- bad input: one negative test per message ----------------------------------------------


def _covar(tmp_path: Path, files: Files, edit) -> Path:
    lines = files.covar.read_text().splitlines()
    path = tmp_path / "bad.covar"
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


def _refused(tmp_path: Path, files: Files, cache: Path, match: str, **kw: object) -> None:
    out = tmp_path / "bad"
    with pytest.raises(UserError, match=match):
        run(files, out, cache, **kw)  # type: ignore[arg-type]
    assert not (tmp_path / "bad.assoc.logistic").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert "RUN FAILED: no result file was written." in (tmp_path / "bad.log").read_text()


def _set(lines: list[str], row: int, col: int, value: str) -> list[str]:
    fields = lines[row].split()
    fields[col] = value
    return [*lines[:row], " ".join(fields), *lines[row + 1 :]]


@pytest.mark.parametrize("code", ["-9", "NA"])
def test_missing_covariate_value_is_refused(
    code: str, confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    bad = _covar(tmp_path, confounded, lambda ls: _set(ls, 5, 3, code))
    _refused(tmp_path, confounded, program_cache,
             r"bad\.covar: 1 missing covariate value.*sample fam4 ind4, covariate age \(column 4\)",
             covar=bad)  # fmt: skip


def test_non_numeric_covariate_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    bad = _covar(tmp_path, confounded, lambda ls: _set(ls, 7, 2, "high"))
    _refused(tmp_path, confounded, program_cache,
             r"bad\.covar:8: column 3 \(pc\) holds 'high', not a number", covar=bad)  # fmt: skip


def test_unknown_covariate_name_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    _refused(tmp_path, confounded, program_cache,
             r"cohort\.covar:1: no covariate named bmi \(--covar-name\); the header has pc, age, "
             r"sex", covar_names=["pc", "bmi"])  # fmt: skip


def test_constant_covariate_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    def constant_sex(lines: list[str]) -> list[str]:
        return [lines[0]] + [" ".join([*line.split()[:4], "1"]) for line in lines[1:]]

    bad = _covar(tmp_path, confounded, constant_sex)
    _refused(
        tmp_path,
        confounded,
        program_cache,
        r"bad\.covar: covariate sex is constant among the 1000 analysed",
        covar=bad,
    )


def test_fewer_individuals_than_covariates_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    case = confounded.cohort.case
    rows = [*np.flatnonzero(case == 1)[:2], *np.flatnonzero(case == 0)[:2]]
    keep = tmp_path / "keep"
    keep.write_text("".join(f"fam{i} ind{i}\n" for i in rows))
    _refused(tmp_path, confounded, program_cache,
             r"cohort\.covar: 4 analysed individuals for 3 covariates and the intercept",
             selection=Selection(keep=str(keep)))  # fmt: skip


def test_too_many_covariates_for_the_program_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    rng = np.random.default_rng(0)

    def widen(lines: list[str]) -> list[str]:
        head = [lines[0] + " c4 c5 c6"]
        extra = rng.normal(size=(len(lines) - 1, 3))
        return head + [
            f"{line} {a:.4f} {b:.4f} {c:.4f}"
            for line, (a, b, c) in zip(lines[1:], extra, strict=True)
        ]

    bad = _covar(tmp_path, confounded, widen)
    _refused(
        tmp_path,
        confounded,
        program_cache,
        r"bad\.covar: 6 covariates; the program takes at most 5 \(K <= 6",
        covar=bad,
    )


def test_sample_without_covariate_line_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    bad = _covar(tmp_path, confounded, lambda ls: ls[:3] + ls[4:])
    _refused(tmp_path, confounded, program_cache,
             r"bad\.covar: 1 analysed sample\(s\) have no covariate line \(fam2 ind2\)",
             covar=bad)  # fmt: skip


def test_covar_name_without_header_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    bad = _covar(tmp_path, confounded, lambda ls: ls[1:])
    _refused(tmp_path, confounded, program_cache, r"bad\.covar: --covar-name needs a header",
             covar=bad, covar_names=["COV1"])  # fmt: skip


def test_short_covariate_line_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    bad = _covar(tmp_path, confounded, lambda ls: [*ls[:9], " ".join(ls[9].split()[:4]),
                                                   *ls[10:]])  # fmt: skip
    _refused(
        tmp_path,
        confounded,
        program_cache,
        r"bad\.covar:10: 4 columns, the file's lines have 5",
        covar=bad,
    )


def test_separating_covariate_is_refused(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    case = confounded.cohort.case

    def separate(lines: list[str]) -> list[str]:
        rows = []
        for i, line in enumerate(lines[1:]):
            fields = line.split()
            fields[2] = str(float(case[i]) + 0.01 * (i % 7))  # pc now predicts the phenotype
            rows.append(" ".join(fields))
        return [lines[0], *rows]

    bad = _covar(tmp_path, confounded, separate)
    _refused(
        tmp_path,
        confounded,
        program_cache,
        r"covariate-only logistic model does not converge",
        covar=bad,
    )


def test_missing_genotype_calls_are_refused(tmp_path: Path, program_cache: Path) -> None:
    cohort = simulate_logistic_cohort(100, 20, 1, seed=6)
    cohort.genotypes[3, 4] = np.nan
    files = Files(tmp_path, cohort)
    _refused(tmp_path, files, program_cache, r"cohort: the analysed samples have missing "
             r"genotype calls")  # fmt: skip


def test_missing_covar_option_is_refused(
    confounded: Files, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["gwas", "logistic", "--bfile", str(confounded.prefix), "--out",
                 str(tmp_path / "x"), "--backend", "sim", "--no-progress"])  # fmt: skip
    assert code == 1
    assert "hec gwas logistic needs --covar FILE" in capsys.readouterr().err
    assert not (tmp_path / "x.assoc.logistic").exists()


def test_pheno_file_and_keep_select_the_covariate_rows(
    confounded: Files, tmp_path: Path, program_cache: Path
) -> None:
    """--pheno (some phenotypes missing) and --keep: the covariates follow the analysed samples
    (the statistic equals the float64 one on exactly those rows, NMISS counts them)."""
    c = confounded.cohort
    keep_rows = np.arange(0, 1000, 2)[:400]  # every other sample, the first 400 of them
    missing = set(range(0, 1000, 10))  # every tenth sample has no phenotype (-9)
    (tmp_path / "keep").write_text("".join(f"fam{i} ind{i}\n" for i in keep_rows))
    (tmp_path / "pheno").write_text(
        "FID IID status\n"
        + "".join(
            f"fam{i} ind{i} {-9 if i in missing else 1 + int(c.case[i])}\n" for i in range(1000)
        )
    )
    result = run(confounded, tmp_path / "res", program_cache, pheno=str(tmp_path / "pheno"),
                 selection=Selection(keep=str(tmp_path / "keep")))  # fmt: skip
    rows = np.array([i for i in keep_rows if i not in missing])
    assert result.n_included == len(rows)
    x = np.column_stack([np.ones(len(rows)), c.covariates[rows]])
    s = minor_counts(confounded, result)[rows]
    want = semi_parallel(x, c.case[rows].astype(float), s)["STAT"]
    np.testing.assert_allclose(result.stat, want, atol=1e-6)
    nmiss = {line.split()[5] for line in (tmp_path / "res.assoc.logistic").open() if "ADD" in line}
    assert nmiss == {str(len(rows))}
