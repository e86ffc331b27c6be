"""examples/gwas/lra.hec compiles and keeps its meaning (issue 21).

It needs det/adj of the secret K x K matrix H (compiler/analysis/minors.py) and products with
the covariates that keep every per-individual quantity a replicated scalar (K, a det/adj
dimension, is not packed), so the compiled program has no rotation at all: the rotation
count per SNP block cannot grow with N. The compiled program in the simulator agrees with the
plaintext reference of the same program on a realistic cohort (standardized covariates with
an intercept, phenotype from a logistic model)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.stat_numpy import run_client
from driver.pipeline import Compilation, Options, compile_file, report_of
from dsl.reference import evaluate
from targets.sim.simulator import simulate
from tests.conftest import ROOT
from tests.dsl.test_reference import lra_data

LRA = ROOT / "examples" / "gwas" / "lra.hec"
SIZES = {"N": 120, "M": 16, "K": 3}


# Compiled single-party (flooding=False), as hec run does: one prime per level. With decrypt's
# noise flooding budgeted lra needs composite scaling (tests/targets/test_composite_scaling.py).
@pytest.fixture(scope="module")
def lra() -> Compilation:
    text = ",".join(f"{k}={v}" for k, v in SIZES.items())
    return compile_file(LRA, Options(sizes=Sizes.parse(text), flooding=False))


def test_lra_has_no_rotation_and_at_most_12_levels(lra: Compilation) -> None:
    report = report_of(lra)
    assert report["counts"]["static"]["rotate"] == 0
    assert report["counts"]["executed"]["rotate"] == 0
    assert report["keys"]["rotations"] == []
    for out in report["outputs"]:
        assert out["levels"] <= 12, out


def test_lra_in_the_simulator_agrees_with_its_plaintext_reference(lra: Compilation) -> None:
    data = lra_data(np.random.default_rng(2), SIZES["N"], SIZES["M"], SIZES["K"])
    want = evaluate(lra.checked, SIZES, data).client["z"]
    for noisy, tol in ((False, 1e-9), (True, 1e-2)):
        out = simulate(lra.program, SIZES, data, noisy=noisy, seed=4).outputs
        z = run_client(lra.stat_program, SIZES, out)["z"]
        r2 = 1 - np.sum((z - want) ** 2) / np.sum((want - want.mean()) ** 2)
        assert r2 >= 0.9999, (noisy, r2)
        assert np.max(np.abs(z - want)) <= tol * np.max(np.abs(want)), noisy


@pytest.mark.slow
def test_lra_rotations_do_not_grow_with_n() -> None:
    """The issue's acceptance sizes: the same (zero) rotations at N = 1000 and N = 5000."""
    for n in (1000, 5000):
        comp = compile_file(LRA, Options(sizes=Sizes.parse(f"N={n},M=16384,K=4"), flooding=False))
        report = report_of(comp)
        assert report["counts"]["executed"]["rotate"] == 0
        assert max(o["levels"] for o in report["outputs"]) <= 12


# --------------------------------------------------------------------------------------------
# The grid layout (docs/layout.md): per-individual values packed R to a ciphertext.


def _grid_compile(sizes: dict[str, int], rows: int) -> Compilation:
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    return compile_file(LRA, Options(sizes=Sizes.parse(text), flooding=False, grid_rows=rows))


@pytest.fixture(scope="module")
def lra_grid() -> Compilation:
    return _grid_compile(SIZES, 0)


def test_lra_takes_a_grid_chosen_by_the_cost_model_and_reports_it(lra_grid: Compilation) -> None:
    g = report_of(lra_grid)["grid"]
    rows = g["rows"]
    assert rows > 1
    assert g["layouts"]["S"] == f"grid<{rows}, [row, col]>"
    assert g["layouts"]["X"] == f"grid<{rows}, [row, unrolled]>"
    assert g["layouts"]["y"] == f"grid<{rows}, [row]>"
    assert g["layouts"]["z_num"] == f"grid<{rows}, [col]>"
    chosen = next(c for c in g["candidates"] if c["rows"] == rows)
    key = ("depth", "key_switches", "products", "uploads")
    for c in g["candidates"]:
        if "unavailable" not in c:
            assert tuple(c[k] for k in key) >= tuple(chosen[k] for k in key), c
    corner = next(c for c in g["candidates"] if c["rows"] == 1)
    assert corner["uploads"] > chosen["uploads"]


def test_lra_grid_in_the_simulator_agrees_with_its_plaintext_reference(
    lra_grid: Compilation,
) -> None:
    data = lra_data(np.random.default_rng(2), SIZES["N"], SIZES["M"], SIZES["K"])
    want = evaluate(lra_grid.checked, SIZES, data).client["z"]
    for noisy, tol in ((False, 1e-9), (True, 1e-2)):
        out = simulate(lra_grid.program, SIZES, data, noisy=noisy, seed=4).outputs
        z = run_client(lra_grid.stat_program, SIZES, out)["z"]
        r2 = 1 - np.sum((z - want) ** 2) / np.sum((want - want.mean()) ** 2)
        assert r2 >= 0.9999, (noisy, r2)
        assert np.max(np.abs(z - want)) <= tol * np.max(np.abs(want)), noisy


def test_lra_grid_rotations_per_snp_block_do_not_grow_with_n() -> None:
    """A row sum is ceil(N / R) block additions and log2 R rotations whatever N is: the same
    rotations (and rotation keys) at two N for one grid shape."""
    counts = []
    for n in (200, 1000):
        report = report_of(_grid_compile({"N": n, "M": 64, "K": 3}, 16))
        assert report["grid"]["rows"] == 16
        counts.append((report["counts"]["executed"]["rotate"], report["keys"]["rotations"]))
    assert counts[0] == counts[1]
    assert counts[0][0] > 0


@pytest.mark.slow
def test_lra_grid_at_the_acceptance_sizes() -> None:
    """Issue 21's sizes under the grid (single-party, as above): at most 12 levels with 128-bit
    parameters, and for every grid shape weighed the same rotations at N = 1000 and 5000 (the
    cost model may pick a larger R at the larger N: measured R = 32, then 64)."""
    rotations: list[dict[int, int]] = []
    for n in (1000, 5000):
        report = report_of(_grid_compile({"N": n, "M": 16384, "K": 4}, 0))
        assert report["params"]["security_bits"] == 128
        assert max(o["levels"] for o in report["outputs"]) <= 12
        assert report["grid"]["rows"] > 1
        rotations.append({c["rows"]: c["rotations"] for c in report["grid"]["candidates"]})
    shared = set(rotations[0]) & set(rotations[1])
    assert len(shared) > 4
    assert all(rotations[0][r] == rotations[1][r] for r in shared)
