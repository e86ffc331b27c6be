"""Regression tests of issue 25's program-cache findings: two `hec gwas chisq` runs sharing a
fresh cache crashed in 4 of 6 trials ("Text file busy", PermissionError on the half-built
binary). Entries are now built under a lock, installed atomically and verified by digest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gwas.backend import _entry_intact, compile_cached

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gwas"))
from gwas_fixtures import PlinkCohort, simulate_plink_cohort  # noqa: E402

CHISQ = ROOT / "examples" / "gwas" / "chisq.hec"


@pytest.fixture(scope="module")
def small_cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    return simulate_plink_cohort(tmp_path_factory.mktemp("small"), 40, 40, 90, 10, 0.0, 7)


def _chisq(cohort: PlinkCohort, out: Path, cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hec", "gwas", "chisq", "--bfile", str(cohort.prefix),
         "--out", str(out), "--no-progress", "--no-plots"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "HEC_CACHE_DIR": str(cache), "HEC_THREADS": "1"},
    )  # fmt: skip


def test_concurrent_cold_runs_share_a_fresh_cache(small_cohort: PlinkCohort, tmp_path: Path):
    cache = tmp_path / "cache"  # fresh: both runs compile and build at the same moment
    runs = [_chisq(small_cohort, tmp_path / f"run{k}", cache) for k in range(2)]
    results = [p.communicate(timeout=900) for p in runs]
    for p, (_, err) in zip(runs, results, strict=True):
        assert p.returncode == 0, err
    a, b = ((tmp_path / f"run{k}.assoc").read_text() for k in range(2))
    assert a.splitlines()[0] == b.splitlines()[0] and len(a.splitlines()) == 101
    # One entry, compiled once, intact.
    entries = [d for d in cache.iterdir() if d.is_dir() and not d.name.startswith(".")]
    assert len(entries) == 1 and _entry_intact(entries[0])


def test_damaged_entry_is_rebuilt(tmp_path: Path) -> None:
    sizes = {"N": 20, "M": 10}
    first = compile_cached(CHISQ, sizes, 20.0, tmp_path)
    assert not first.cache_hit
    assert compile_cached(CHISQ, sizes, 20.0, tmp_path).cache_hit
    entry = tmp_path / first.cache_key
    ir = entry / "program.mlir"
    ir.write_text(ir.read_text().replace("ckks.", "ckks_damaged.", 1))
    assert not _entry_intact(entry)
    again = compile_cached(CHISQ, sizes, 20.0, tmp_path)
    assert not again.cache_hit and _entry_intact(entry)
    (entry / "report.json").unlink()  # a half-deleted entry
    assert not compile_cached(CHISQ, sizes, 20.0, tmp_path).cache_hit
    assert compile_cached(CHISQ, sizes, 20.0, tmp_path).cache_hit
