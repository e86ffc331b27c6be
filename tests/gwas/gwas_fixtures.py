"""Helpers of the GWAS tests: run plink1.9, simulate cohorts with `plink1.9 --simulate`, write
hand-made filesets with bed-reader."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bed_reader import to_bed

from gwas.chisq import ChisqOptions, ChisqResult, run_chisq
from gwas.scaleout import ScaleOut

PLINK = "plink1.9"


@dataclass(frozen=True)
class PlinkCohort:
    prefix: Path  # the fileset
    assoc: Path  # plink1.9 --assoc on it


def plink(*args: str, cwd: Path) -> None:
    exe = shutil.which(PLINK)
    assert exe, f"{PLINK} is not installed (scripts/setup installs the Debian package plink1.9)"
    result = subprocess.run(
        [exe, "--threads", "1", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def simulate_plink_cohort(
    directory: Path,
    cases: int,
    controls: int,
    null_snps: int,
    disease_snps: int,
    missing: float,
    seed: int,
) -> PlinkCohort:
    directory.mkdir(parents=True, exist_ok=True)
    spec = directory / "sim.txt"
    spec.write_text(
        f"{null_snps} null 0.01 0.5 1.00 1.00\n{disease_snps} disease 0.05 0.5 1.6 mult\n"
    )
    extra = ["--simulate-missing", str(missing)] if missing else []
    plink(
        "--simulate", str(spec), "--make-bed", "--out", "cohort",
        "--simulate-ncases", str(cases), "--simulate-ncontrols", str(controls),
        "--seed", str(seed), *extra,
        cwd=directory,
    )  # fmt: skip
    plink("--bfile", "cohort", "--assoc", "--out", "plink", cwd=directory)
    return PlinkCohort(directory / "cohort", directory / "plink.assoc")


def write_fileset(
    prefix: Path,
    genotypes: npt.NDArray[np.float64],
    pheno: list[str],
    father: list[str] | None = None,
    snp_names: list[str] | None = None,
    chromosome: list[str] | None = None,
) -> Path:
    """A fileset from counts of allele A (the .bim A1), NaN = missing."""
    n, m = genotypes.shape
    props = {
        "fid": [f"f{i}" for i in range(n)],
        "iid": [f"i{i}" for i in range(n)],
        "father": father or ["0"] * n,
        "mother": ["0"] * n,
        "sex": [1] * n,
        "pheno": pheno,
        "chromosome": chromosome or ["1"] * m,
        "sid": snp_names or [f"s{j}" for j in range(m)],
        "bp_position": list(range(1, m + 1)),
        "allele_1": ["A"] * m,
        "allele_2": ["C"] * m,
    }
    to_bed(Path(f"{prefix}.bed"), genotypes, properties=props, count_A1=True)
    return prefix


def scaled_chisq(cohort: PlinkCohort, out: Path, cache: Path, scale: ScaleOut) -> ChisqResult:
    """`hec gwas chisq` on `cohort` with the scale-out options `scale` (ScaleOut(): one
    process), quietly, into `out`."""
    opts = ChisqOptions(
        bfile=str(cohort.prefix), out=str(out), cache_dir=cache, progress=False, plots=False,
        scale=scale,
    )  # fmt: skip
    return run_chisq(opts)
