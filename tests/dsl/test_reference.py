"""The plaintext reference evaluator against independent implementations of each example's
statistics (scipy's contingency test, numpy covariance, a full logistic regression), and the
numpy semantics of the lowered IR against the reference (the lowering keeps the meaning)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from scipy.stats import chi2_contingency

from compiler.dialects import stat
from compiler.errors import UserError
from compiler.stat_numpy import run_client, run_program
from dsl.checker import CheckedProgram, check
from dsl.lower import lower
from dsl.parser import parse_file, parse_program
from dsl.reference import evaluate

ROOT = Path(__file__).resolve().parents[2]
Array = npt.NDArray[np.float64]


def load(name: str) -> CheckedProgram:
    return check(parse_file(ROOT / "examples" / name))


def chisq_data(rng: np.random.Generator, n: int, m: int) -> dict[str, Array]:
    y = rng.integers(0, 2, n).astype(float)
    s = rng.integers(0, 3, (n, m)).astype(float)
    return {"y": y, "S": s}


def lra_data(rng: np.random.Generator, n: int, m: int, k: int) -> dict[str, Array]:
    x = np.column_stack([np.ones(n), rng.normal(size=(n, k - 1)).clip(-4, 4)])
    s = rng.integers(0, 3, (n, m)).astype(float)
    eta = 0.3 * x[:, 1] - 0.2 * x[:, 2] + 0.5 * (s[:, 0] - 1)
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return {"y": y, "X": x, "S": s}


def test_chisq_matches_scipy_contingency_test() -> None:
    rng = np.random.default_rng(7)
    n, m = 300, 8
    data = chisq_data(rng, n, m)
    result = evaluate(load("gwas/chisq_numerators.hec"), {"N": n, "M": m}, data)
    y, s = data["y"], data["S"]
    for j in range(m):
        case_minor = s[y == 1, j].sum()
        ctrl_minor = s[y == 0, j].sum()
        table = np.array(
            [[case_minor, 2 * (y == 1).sum() - case_minor],
             [ctrl_minor, 2 * (y == 0).sum() - ctrl_minor]]
        )  # fmt: skip
        stat_value, p, _, _ = chi2_contingency(table, correction=False)
        odds = table[0, 0] * table[1, 1] / (table[0, 1] * table[1, 0])
        assert result.client["chi2"][j] == pytest.approx(stat_value, rel=1e-12)
        assert result.client["p"][j] == pytest.approx(p, rel=1e-9)
        assert result.client["odds"][j] == pytest.approx(odds, rel=1e-12)


def _glm_wald_z(x: Array, g: Array, y: Array) -> float:
    """Wald z of the last coefficient of a logistic regression fitted to convergence."""
    z = np.column_stack([x, g])
    beta = np.zeros(z.shape[1])
    for _ in range(30):
        p = 1 / (1 + np.exp(-z @ beta))
        w = p * (1 - p)
        beta += np.linalg.solve(z.T @ (z * w[:, None]), z.T @ (y - p))
    p = 1 / (1 + np.exp(-z @ beta))
    info = z.T @ (z * (p * (1 - p))[:, None])
    return float(beta[-1] / np.sqrt(np.linalg.inv(info)[-1, -1]))


def test_lra_is_the_semi_parallel_formula_and_approximates_logistic_regression() -> None:
    rng = np.random.default_rng(3)
    n, m, k = 600, 6, 3
    data = lra_data(rng, n, m, k)
    result = evaluate(load("gwas/lra.hec"), {"N": n, "M": m, "K": k}, data)
    x, s, y = data["X"], data["S"], data["y"]
    # The same method written directly with a matrix inverse and an exact 1/w.
    u = x @ (x.T @ (y - 0.5)) * 4 / n
    p = 0.5 + 0.15625 * u
    w = p * (1 - p)
    zeta = u + (y - p) / w
    h_inv = np.linalg.inv(x.T @ (x * w[:, None]))
    s_star = s - x @ h_inv @ x.T @ (s * w[:, None])
    zeta_star = zeta - x @ h_inv @ x.T @ (w * zeta)
    direct = (s_star * (w * zeta_star)[:, None]).sum(0) / np.sqrt((s_star**2 * w[:, None]).sum(0))
    # Only the degree-8 truncation of 1/w separates the two.
    np.testing.assert_allclose(result.client["z"], direct, rtol=1e-5)
    # And the approximation stays close to a full logistic regression on this data.
    glm = np.array([_glm_wald_z(x, s[:, j], y) for j in range(m)])
    np.testing.assert_allclose(result.client["z"], glm, rtol=0.02, atol=0.02)
    assert abs(glm[0]) > 3  # SNP 0 carries a real effect; the test sees it


def test_meancov_matches_numpy() -> None:
    rng = np.random.default_rng(5)
    n, d = 50, 4
    x = rng.uniform(-10, 10, (n, d))
    result = evaluate(load("stats/meancov.hec"), {"N": n, "D": d}, {"X": x})
    np.testing.assert_allclose(result.revealed["means"], x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(result.client["cov"], np.cov(x, rowvar=False), rtol=1e-12)
    np.testing.assert_allclose(result.client["sd"], x.std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(result.client["cor"], np.corrcoef(x, rowvar=False), atol=1e-12)


def test_grs_matches_the_direct_sum() -> None:
    rng = np.random.default_rng(9)
    n, m = 40, 30
    g = rng.integers(0, 3, (n, m)).astype(float)
    a, b, c = rng.uniform(-1, 1, m), rng.uniform(-1, 1, m), 0.75
    result = evaluate(load("stats/grs.hec"), {"N": n, "M": m}, {"G": g, "a": a, "b": b, "c": c})
    expected = np.array([sum(a[j] * g[i, j] ** 2 + b[j] * g[i, j] for j in range(m)) + c
                         for i in range(n)])  # fmt: skip
    np.testing.assert_allclose(result.revealed["score"], expected, rtol=1e-12)
    z = (expected - expected.mean()) / expected.std(ddof=1)
    np.testing.assert_allclose(result.client["z"], z, rtol=1e-10)


def _example_data(name: str, rng: np.random.Generator) -> tuple[dict[str, int], dict[str, Array]]:
    if name == "gwas/chisq_numerators.hec":
        return {"N": 60, "M": 5}, chisq_data(rng, 60, 5)
    if name == "gwas/lra.hec":
        return {"N": 80, "M": 4, "K": 3}, lra_data(rng, 80, 4, 3)
    if name == "stats/meancov.hec":
        return {"N": 30, "D": 3}, {"X": rng.uniform(-10, 10, (30, 3))}
    m = 12
    return {"N": 20, "M": m}, {
        "G": rng.integers(0, 3, (20, m)).astype(float),
        "a": rng.uniform(-1, 1, m),
        "b": rng.uniform(-1, 1, m),
        "c": np.asarray(0.5),
    }


EXAMPLES = ["gwas/chisq_numerators.hec", "gwas/lra.hec", "stats/meancov.hec", "stats/grs.hec"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_lowered_ir_means_what_the_source_means(name: str) -> None:
    rng = np.random.default_rng(11)
    sizes, data = _example_data(name, rng)
    checked = load(name)
    reference = evaluate(checked, sizes, data)
    program = lower(checked).ops.first
    assert isinstance(program, stat.ProgramOp)
    ir = run_program(program, sizes, data)
    assert ir.revealed.keys() == reference.revealed.keys()
    assert ir.client.keys() == reference.client.keys()
    for key, value in reference.revealed.items():
        np.testing.assert_allclose(ir.revealed[key], value, rtol=1e-9, atol=1e-12, err_msg=key)
    for key, value in reference.client.items():
        np.testing.assert_allclose(ir.client[key], value, rtol=1e-9, atol=1e-12, err_msg=key)
    # The coordinator's side alone: the client region from the decrypted values only.
    client = run_client(program, sizes, ir.revealed)
    for key, value in ir.client.items():
        np.testing.assert_allclose(client[key], value, rtol=1e-12, err_msg=key)


def test_reference_rejects_inputs_outside_their_domain_or_shape() -> None:
    checked = load("gwas/chisq_numerators.hec")
    rng = np.random.default_rng(1)
    data = chisq_data(rng, 10, 3)
    data["S"][4, 2] = 3.0
    with pytest.raises(UserError, match=r"input 'S' has value 3 at \(4, 2\), outside its domain"):
        evaluate(checked, {"N": 10, "M": 3}, data)
    with pytest.raises(UserError, match=r"input 'S' has shape \(10, 3\), the program expects"):
        evaluate(checked, {"N": 10, "M": 4}, chisq_data(rng, 10, 3))
    with pytest.raises(UserError, match="size parameter N = 0 is outside"):
        evaluate(checked, {"N": 0, "M": 3}, data)
    with pytest.raises(UserError, match="no value given for input 'y'"):
        evaluate(checked, {"N": 10, "M": 3}, {"S": data["S"]})
    meancov = load("stats/meancov.hec")
    with pytest.raises(UserError, match=r"outside its domain \[-10, 10\]"):
        evaluate(meancov, {"N": 2, "D": 1}, {"X": [[0.0], [11.0]]})


def test_det_and_adj_agree_between_reference_and_ir() -> None:
    text = (
        "param K <= 6\ninput A: secret[K, K] in [-1.0, 1.0]\n"
        "reveal d = det(A)\nreveal j = adj(A)\nreveal i = A @ adj(A)\n"
    )
    checked = check(parse_program(text))
    rng = np.random.default_rng(2)
    for k in range(1, 7):
        a = rng.uniform(-1, 1, (k, k))
        reference = evaluate(checked, {"K": k}, {"A": a})
        program = lower(checked).ops.first
        assert isinstance(program, stat.ProgramOp)
        ir = run_program(program, {"K": k}, {"A": a})
        assert float(ir.revealed["d"]) == pytest.approx(np.linalg.det(a), rel=1e-9)
        np.testing.assert_allclose(ir.revealed["j"], reference.revealed["j"], rtol=1e-8, atol=1e-12)
        # A adj(A) = det(A) I
        np.testing.assert_allclose(ir.revealed["i"], np.linalg.det(a) * np.eye(k), atol=1e-10)
