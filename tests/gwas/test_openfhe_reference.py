"""The benchmark's OpenFHE reference (bench/gwas_chisq_reference.py, PNAS Alg. 2 on the PyPI
`openfhe` wheel under Python 3.10) against the double-precision statistics, with one and two
worker processes; and the benchmark's refusal to time the simulator as ours.

Slow tier: it creates .venv-bench (Python 3.10 and the wheel) on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gwas.exact import exact_statistics, table_counts

ROOT = Path(__file__).resolve().parents[2]


def reference_python() -> str:
    out = subprocess.run(
        [str(ROOT / "bench" / "setup-reference")], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_reference_matches_exact_statistics(tmp_path: Path, workers: int) -> None:
    rng = np.random.default_rng(31)
    n, m = 400, 5000  # two SNP blocks, the second one partial
    S = rng.binomial(2, rng.uniform(0.01, 0.5, size=m), size=(n, m)).astype(np.float64)
    y = (rng.random(n) < 0.45).astype(np.float64)
    data = tmp_path / "in.npz"
    np.savez(data, S=S, y=y)
    out = tmp_path / "out.npz"
    proc = subprocess.run(
        [reference_python(), str(ROOT / "bench" / "gwas_chisq_reference.py"), "--data",
         str(data), "--out", str(out), "--workers", str(workers)],
        env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(facts["seconds"]) == {"keygen", "encrypt", "compute", "decrypt"}
    assert facts["params"]["ring_dim"] == 8192 and facts["params"]["workers"] == workers
    res = np.load(out)
    chi, _, odds = exact_statistics(table_counts(S, y))
    ok = np.isfinite(chi)
    big, small = ok & (chi >= 0.01), ok & (chi < 0.01)
    assert np.max(np.abs(res["chi2"][big] - chi[big]) / chi[big]) < 1e-3
    assert np.max(np.abs(res["chi2"][small] - chi[small])) < 1e-4
    good = np.isfinite(odds) & (odds > 0)
    assert np.max(np.abs(res["odds"][good] - odds[good]) / odds[good]) < 1e-3


@pytest.mark.slow
def test_benchmark_measures_ours_next_to_the_reference() -> None:
    """The benchmark at a tiny size: every timing row has ours, the reference and their ratio
    (the encrypted backend exists), and ours is as accurate as `hec gwas chisq` promises."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gwas_chisq.py"), "--sizes", "120",
         "--snps", "600", "--threads", "1"],
        capture_output=True, text=True, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "bench")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    by_case = {r["case"]: r for r in rows}
    for phase in ("keygen", "encrypt", "compute", "decrypt"):
        r = by_case[f"N=120 M=600 t=1 {phase}"]
        assert r["ours"] > 0 and r["reference"] > 0 and r["ratio"] == r["ours"] / r["reference"]
        assert by_case[f"N=120 M=600 t=1 {phase} peak RSS"]["ours"] > 0
    assert by_case["N=120 M=600 t=1 CHISQ max rel. error"]["ours"] < 1e-4
    assert "cannot run yet" not in proc.stdout
