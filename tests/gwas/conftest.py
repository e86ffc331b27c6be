"""Fixtures of the GWAS tests: cohorts simulated by `plink1.9 --simulate` (with and without
missing calls) and hand-made filesets with the degenerate SNPs PLINK treats specially, each
with PLINK's own `--assoc` output next to it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import (
    PlinkCohort,
    plink,
    scaled_chisq,
    simulate_plink_cohort,
    write_fileset,
)

from gwas.scaleout import ScaleOut


@pytest.fixture(scope="session")
def complete_cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    """200 individuals x 300 SNPs, no missing call."""
    return simulate_plink_cohort(tmp_path_factory.mktemp("complete"), 100, 100, 280, 20, 0.0, 11)


@pytest.fixture(scope="session")
def missing_cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    """200 individuals x 300 SNPs with 5% of the calls missing."""
    return simulate_plink_cohort(tmp_path_factory.mktemp("missing"), 90, 110, 280, 20, 0.05, 12)


@pytest.fixture(scope="session")
def degenerate_cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    """Every special case of PLINK's --assoc in one fileset (12 individuals: 5 cases, 5
    controls, 2 with a missing phenotype, one of them a nonfounder):
    monomorphic SNPs (all A2, all A1), a SNP without calls, cases all missing, controls all
    missing, a zero cell making OR NA, OR = 0, an A1 chosen by the founders (the
    missing-phenotype founder tips it), an allele-count tie (keeps the .bim order), and
    ordinary SNPs."""
    nan = np.nan
    rows = [
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],  # monomorphic: all A2
        [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2],  # monomorphic: all A1 (A1 becomes C)
        [nan] * 12,  # no call
        [nan, nan, nan, nan, nan, 1, 0, 1, 0, 0, 1, 1],  # cases all missing
        [1, 0, 1, 0, 0, nan, nan, nan, nan, nan, 0, 1],  # controls all missing
        [1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0],  # controls have no A: OR NA
        [0, 0, 0, 0, 0, 1, 2, 1, 1, 0, 0, 1],  # cases have no A: OR 0
        [2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 2, 0],  # tie among the 10, founders decide
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0],  # tie over founders: .bim order
        [2, 1, 1, 0, 1, 0, 1, 0, 0, 0, 2, 1],
        [0, 1, nan, 2, 1, 1, 0, 0, nan, 1, 1, 2],
        [2, 2, 1, 2, 1, 1, 0, 1, 2, 0, 0, 1],
    ]
    g = np.array(rows, dtype=np.float64).T
    pheno = ["2"] * 5 + ["1"] * 5 + ["-9", "0"]
    father = ["0"] * 11 + ["i3"]  # the last individual is a nonfounder
    directory = tmp_path_factory.mktemp("degenerate")
    write_fileset(directory / "cohort", g, pheno, father=father)
    plink("--bfile", "cohort", "--assoc", "--out", "plink", cwd=directory)
    return PlinkCohort(directory / "cohort", directory / "plink.assoc")


@pytest.fixture(scope="session")
def program_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compiled-program cache (IR and generated C++ builds) for the whole session."""
    return tmp_path_factory.mktemp("program-cache")


@pytest.fixture(scope="session")
def single_assoc(
    complete_cohort: PlinkCohort, tmp_path_factory: pytest.TempPathFactory, program_cache: Path
) -> bytes:
    """The single-process run's .assoc: what every split run must reproduce exactly."""
    out = tmp_path_factory.mktemp("single") / "res"
    scaled_chisq(complete_cohort, out, program_cache, ScaleOut())
    return out.with_name("res.assoc").read_bytes()
