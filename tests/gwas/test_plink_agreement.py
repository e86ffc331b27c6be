"""`hec gwas chisq` against `plink1.9 --assoc` on the same data (to the 4 significant digits
PLINK prints) and against the double-precision statistics (1e-4 relative for CHISQ >= 0.01,
1e-6 absolute below; P and OR likewise), with and without missing calls, and on every
degenerate SNP PLINK treats specially."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bed_reader import open_bed
from gwas_fixtures import PlinkCohort, plink, simulate_plink_cohort

from gwas.assoc import AssocRow, read_assoc
from gwas.chisq import ChisqOptions, ChisqResult, run_chisq
from gwas.exact import exact_statistics, frequencies, table_counts


def run(cohort: PlinkCohort, tmp_path: Path, cache: Path, **kw: object) -> ChisqResult:
    opts = ChisqOptions(
        bfile=str(cohort.prefix),
        out=str(tmp_path / "ours"),
        cache_dir=cache,
        progress=False,
        plots=False,
    )
    for k, v in kw.items():
        setattr(opts, k, v)
    return run_chisq(opts)


def agrees_to_printed_digits(ours: float | None, plink: float | None, text_digits: int = 4) -> bool:
    """`ours` rounds to PLINK's printed value (4 significant digits); PLINK's 0 is matched by
    |ours| <= 1e-6 (the absolute tolerance of small statistics)."""
    if plink is None or ours is None:
        return plink is None and ours is None
    if plink == 0.0:
        return abs(ours) <= 1e-6
    exponent = math.floor(math.log10(abs(plink)))
    half_unit = 0.5 * 10.0 ** (exponent - text_digits + 1)
    return abs(ours - plink) <= half_unit * (1 + 1e-9) + 1e-12 * abs(plink)


def compare_with_plink(ours: list[AssocRow], theirs: list[AssocRow]) -> list[str]:
    problems: list[str] = []
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        for col in ("chrom", "snp", "bp", "a1", "a2"):
            if getattr(a, col) != getattr(b, col):
                problems.append(f"{b.snp}: {col} ours {getattr(a, col)} plink {getattr(b, col)}")
        for col in ("chisq", "p", "odds", "f_a", "f_u"):
            x, y = getattr(a, col), getattr(b, col)
            if not agrees_to_printed_digits(x, y):
                problems.append(f"{b.snp}: {col} ours {x} plink {y}")
    return problems


def exact_for(cohort: PlinkCohort, a1_is_bim_a2: np.ndarray) -> tuple[np.ndarray, ...]:
    with open_bed(cohort.prefix.with_suffix(".bed")) as bed:
        g = bed.read(dtype=np.float64)
        pheno = np.asarray(bed.pheno, dtype=str)
    keep = np.isin(pheno, ["1", "2"])
    y = (pheno[keep] == "2").astype(np.float64)
    S = g[keep]
    S[:, a1_is_bim_a2] = 2.0 - S[:, a1_is_bim_a2]
    counts = table_counts(S, y)
    return (*exact_statistics(counts), *frequencies(counts))


def check_exact(result: ChisqResult, cohort: PlinkCohort) -> None:
    """The counts are decrypted exactly (packed counts), so every statistic equals its float64
    value from the same genotypes to 1e-9 relative (issue 20; with the degree-4 CKKS programs
    the tolerance was 1e-4)."""
    bim = [line.split() for line in cohort.prefix.with_suffix(".bim").read_text().splitlines()]
    swap = np.array([a1 != row[4] for a1, row in zip(result.a1, bim, strict=True)])
    chi, p, odds, f_a, f_u = exact_for(cohort, swap)
    assert result.f_a is not None and result.f_u is not None
    for name, ours, want in (
        ("CHISQ", result.chisq, chi),
        ("P", result.p, p),
        ("OR", result.odds, odds),
        ("F_A", result.f_a, f_a),
        ("F_U", result.f_u, f_u),
    ):
        assert np.array_equal(np.isnan(ours), np.isnan(want)), f"{name}: NA positions differ"
        ok = ~np.isnan(want)
        err = np.abs(ours[ok] - want[ok]) - 1e-9 * np.abs(want[ok])
        assert err.max(initial=0.0) <= 0.0, f"{name}: error above 1e-9 relative"


BACKENDS = ["encrypted", "sim"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_complete_cohort_agrees_with_plink(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, backend: str
) -> None:
    result = run(complete_cohort, tmp_path, program_cache, backend=backend)
    assert result.backend.name == backend
    assert result.program.name == "chisq.hec"
    problems = compare_with_plink(
        read_assoc(tmp_path / "ours.assoc"), read_assoc(complete_cohort.assoc)
    )
    assert not problems, "\n".join(problems)
    check_exact(result, complete_cohort)
    assert "chisq.hec (no call is missing" in result.log_text


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_calls_agree_with_plink(
    missing_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, backend: str
) -> None:
    result = run(missing_cohort, tmp_path, program_cache, backend=backend)
    assert result.program.name == "chisq_missing.hec"
    problems = compare_with_plink(
        read_assoc(tmp_path / "ours.assoc"), read_assoc(missing_cohort.assoc)
    )
    assert not problems, "\n".join(problems)
    check_exact(result, missing_cohort)
    assert "chisq_missing.hec (calls are missing" in result.log_text


@pytest.mark.parametrize("backend", BACKENDS)
def test_degenerate_snps_printed_as_plink_prints_them(
    degenerate_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, backend: str
) -> None:
    result = run(degenerate_cohort, tmp_path, program_cache, backend=backend)
    ours = read_assoc(tmp_path / "ours.assoc")
    theirs = read_assoc(degenerate_cohort.assoc)
    problems = compare_with_plink(ours, theirs)
    assert not problems, "\n".join(problems)
    check_exact(result, degenerate_cohort)
    # The log names the degenerate SNPs and what was printed for them.
    log = result.log_text
    assert "no call among the analysed samples (CHISQ, P, OR = NA): 1 [s2]" in log
    assert "monomorphic among the called samples (CHISQ, P, OR = NA): 2 [s0, s1]" in log
    assert "all cases or all controls (CHISQ 0, P 1, OR NA): 2 [s3, s4]" in log
    # The cases worth naming (the fixture's docstring) are really there in PLINK's output.
    by = {r.snp: r for r in theirs}
    assert by["s1"].a1 == "C" and by["s7"].a1 == "C" and by["s8"].a1 == "A"
    assert by["s5"].odds is None and by["s5"].chisq is not None and by["s6"].odds == 0.0


def test_phenotype_file_replaces_fam_column(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    """--pheno: unlisted samples and -9/0 values are missing; compared with plink --pheno."""
    fam = [
        line.split() for line in complete_cohort.prefix.with_suffix(".fam").read_text().splitlines()
    ]
    rng = np.random.default_rng(5)
    lines = ["FID IID pheno"]
    for fid, iid, *_ in fam[:-7]:  # the last 7 are not listed: missing
        lines.append(f"{fid} {iid} {rng.choice(['1', '2', '2', '1', '-9', '0'])}")
    pheno = tmp_path / "pheno.txt"
    pheno.write_text("\n".join(lines) + "\n")
    plink(
        "--bfile", str(complete_cohort.prefix), "--pheno", str(pheno), "--assoc",
        "--out", str(tmp_path / "plink"), cwd=tmp_path,
    )  # fmt: skip
    result = run(complete_cohort, tmp_path, program_cache, pheno=str(pheno), backend="sim")
    n_listed_ok = sum(1 for line in lines[1:] if line.split()[2] in ("1", "2"))
    assert result.n_included == n_listed_ok
    problems = compare_with_plink(
        read_assoc(tmp_path / "ours.assoc"), read_assoc(tmp_path / "plink.assoc")
    )
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_larger_cohort_with_missing_calls_agrees_with_plink(tmp_path: Path, backend: str) -> None:
    """2,000 individuals x 10,000 SNPs (two SNP blocks at 2^14, three at 2^13), 2% missing."""
    cohort = simulate_plink_cohort(tmp_path / "big", 1000, 1000, 9950, 50, 0.02, 21)
    result = run(cohort, tmp_path, tmp_path / "cache", backend=backend)
    problems = compare_with_plink(read_assoc(tmp_path / "ours.assoc"), read_assoc(cohort.assoc))
    assert not problems, "\n".join(problems[:20])
    check_exact(result, cohort)
