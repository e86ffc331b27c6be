"""det, adj and inverse (adj/det, finished by the client) of secret k x k matrices (issue 21).

The balanced Laplace expansion (compiler/analysis/minors.py) has depth ceil(log2 k) for det
and ceil(log2 (k - 1)) for adj; the report's depth must equal that formula, and the simulator
(exact and noisy) and BFV must agree with numpy on well-conditioned random matrices. What the
lowering refuses (no compile-time size for k, adj of a 1 x 1 matrix) is located."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.minors import adj_depth, adj_plan, det_depth, det_plan, evaluate
from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from compiler.stat_numpy import run_client
from driver.pipeline import Options, compile_file, report_of
from targets.sim.bfv_sim import simulate_bfv
from targets.sim.simulator import simulate

PROGRAM = """param K <= 6
input A: secret[K, K] in [-1.0, 1.0]
reveal d = det(A)
reveal B = adj(A)
client {
  Ainv = B / d
}
"""


def well_conditioned(k: int, seed: int) -> np.ndarray:
    """A random matrix in [-1, 1] with condition number below ~10."""
    rng = np.random.default_rng(seed)
    a = 0.6 * np.eye(k) + rng.uniform(-0.4 / k, 0.4 / k, size=(k, k))
    assert np.linalg.cond(a) < 10
    return a


@pytest.mark.parametrize("k", range(1, 9))
def test_minor_plans_equal_numpy_and_have_the_stated_depth(k: int) -> None:
    rng = np.random.default_rng(k)
    a = rng.normal(size=(k, k))
    det = det_plan(k)
    assert det.depth == det_depth(k) == (math.ceil(math.log2(k)) if k > 1 else 0)
    assert evaluate(det, a.tolist())[0] == pytest.approx(np.linalg.det(a), rel=1e-10)
    if k >= 2:
        adj = adj_plan(k)
        assert adj.depth == adj_depth(k) == (math.ceil(math.log2(k - 1)) if k > 2 else 0)
        got = np.array(evaluate(adj, a.tolist())).reshape(k, k)
        want = np.linalg.det(a) * np.linalg.inv(a)
        assert np.max(np.abs(got - want)) <= 1e-10 * np.max(np.abs(want))


def test_adj_of_a_one_by_one_matrix_has_no_plan() -> None:
    with pytest.raises(ValueError, match="constant 1"):
        adj_plan(1)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_det_adj_inv_on_secret_matrices_match_numpy(tmp_path: Path, k: int) -> None:
    path = tmp_path / "det.hec"
    path.write_text(PROGRAM)
    comp = compile_file(path, Options(sizes=Sizes.parse(f"K={k}")))
    depth = {o["name"]: o["depth"] for o in report_of(comp)["outputs"]}
    assert depth == {"d": det_depth(k), "B": adj_depth(k)}
    a = well_conditioned(k, seed=k)
    want = {"d": np.linalg.det(a), "B": np.linalg.det(a) * np.linalg.inv(a)}
    for noisy, tol in ((False, 1e-12), (True, 1e-3)):
        out = simulate(comp.program, {"K": k}, {"A": a}, noisy=noisy, seed=3).outputs
        for name, value in want.items():
            err = np.max(np.abs(out[name] - value)) / np.max(np.abs(value))
            assert err < tol, (name, noisy, err)
        inv = run_client(comp.stat_program, {"K": k}, out)["Ainv"]
        err = np.max(np.abs(inv - np.linalg.inv(a))) / np.max(np.abs(np.linalg.inv(a)))
        assert err < tol, ("Ainv", noisy, err)


def test_det_and_adj_of_an_integer_matrix_are_exact_under_bfv(tmp_path: Path) -> None:
    path = tmp_path / "det.hec"
    path.write_text(PROGRAM.replace("[-1.0, 1.0]", "{-2, -1, 0, 1, 2}"))
    comp = compile_file(path, Options(sizes=Sizes.parse("K=4"), scheme="bfv"))
    a = np.random.default_rng(7).integers(-2, 3, size=(4, 4)).astype(np.float64)
    out = simulate_bfv(comp.bfv_program, {"K": 4}, {"A": a}).outputs
    assert float(out["d"]) == round(np.linalg.det(a))
    adj = np.array([[(-1) ** (i + j) for i in range(4)] for j in range(4)], dtype=np.float64)
    for i in range(4):
        for j in range(4):
            minor = np.delete(np.delete(a, j, 0), i, 1)
            adj[i, j] *= round(np.linalg.det(minor))
    assert np.array_equal(np.asarray(out["B"], dtype=np.float64), adj)


def test_det_without_a_compile_time_size_is_refused_located(tmp_path: Path) -> None:
    path = tmp_path / "det.hec"
    path.write_text(PROGRAM)
    with pytest.raises(UserError) as info:
        compile_file(path, Options())
    text = str(info.value)
    assert f"{path}:3:" in text and "expanded for the size of K" in text
    assert "--size K=" in text


def test_adj_of_a_one_by_one_matrix_is_refused_located(tmp_path: Path) -> None:
    path = tmp_path / "adj1.hec"
    path.write_text("input A: secret[1, 1] in [-1.0, 1.0]\nreveal B = adj(A)\n")
    with pytest.raises(UserError) as info:
        compile_file(path, Options())
    assert f"{path}:2:" in str(info.value) and "constant 1" in str(info.value)
