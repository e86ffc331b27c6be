"""`hec gwas linear` on the SNP blocks of the scale-out run (issue 26, gwas/scaleout.py): blocks
run apart under one --keys and merged by --resume, and on a Dask LocalCluster. NMISS (an
exact count) equals the single-process run's; BETA, SE, R2, T and P come from CKKS sums and
agree within the compiled precision (fresh encryption noise in every run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import PlinkCohort

from compiler.errors import UserError
from gwas.chisq import ChisqOptions
from gwas.linear import LinearResult, run_linear
from gwas.scaleout import ScaleOut
from hec.cli import main


def _linear(cohort: PlinkCohort, out: Path, cache: Path, scale: ScaleOut) -> LinearResult:
    opts = ChisqOptions(
        bfile=str(cohort.prefix), out=str(out), cache_dir=cache, progress=False, plots=False,
        scale=scale,
    )  # fmt: skip
    return run_linear(opts)


@pytest.fixture(scope="module")
def single(
    complete_cohort: PlinkCohort, tmp_path_factory: pytest.TempPathFactory, program_cache: Path
) -> LinearResult:
    return _linear(complete_cohort, tmp_path_factory.mktemp("single") / "res", program_cache,
                   ScaleOut())  # fmt: skip


def _same(result: LinearResult, single: LinearResult) -> None:
    assert np.array_equal(result.nmiss, single.nmiss)
    for got, want in [(result.beta, single.beta), (result.se, single.se),
                      (result.t, single.t), (result.p, single.p)]:  # fmt: skip
        assert np.allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True)


def test_linear_blocks_by_hand_then_resume(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single: LinearResult,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["gwas", "linear", "--bfile", str(complete_cohort.prefix), "--out",
            str(tmp_path / "res"), "--cache-dir", str(program_cache), "--no-progress",
            "--no-plots", "--keys", str(tmp_path / "keys")]  # fmt: skip
    assert main([*base, "--block", "2/3"]) == 0
    assert "block 2/3 stored in res.blocks/" in capsys.readouterr().out
    assert not (tmp_path / "res.qassoc").exists()
    result = _linear(complete_cohort, tmp_path / "res", program_cache,
                     ScaleOut(keys=tmp_path / "keys", resume=True))  # fmt: skip
    assert result.backend_encrypts
    assert "--resume: 1 finished block(s) verified and skipped" in result.log_text
    _same(result, single)
    assert not (tmp_path / "res.blocks").exists()


def test_linear_on_a_local_cluster(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single: LinearResult
) -> None:
    result = _linear(complete_cohort, tmp_path / "res", program_cache, ScaleOut(workers=2))
    assert "Dask LocalCluster of 2 worker processes" in result.log_text
    _same(result, single)


def test_linear_block_needs_keys(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    with pytest.raises(UserError, match="--block needs --keys DIR"):
        _linear(complete_cohort, tmp_path / "res", program_cache, ScaleOut(block=(1, 2)))


def test_linear_blocks_of_the_chisq_run_are_refused(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    """The key set of a chisq run cannot serve linear.hec (one program per key set)."""
    from gwas.chisq import run_chisq

    keys = tmp_path / "keys"
    run_chisq(ChisqOptions(bfile=str(complete_cohort.prefix), out=str(tmp_path / "c"),
                           cache_dir=program_cache, progress=False, plots=False,
                           scale=ScaleOut(block=(1, 2), keys=keys)))  # fmt: skip
    with pytest.raises(UserError, match=r"the key set was made for program chisq .* needs linear"):
        _linear(complete_cohort, tmp_path / "l", program_cache, ScaleOut(block=(1, 2), keys=keys))
