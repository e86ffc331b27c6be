"""inv(A) of a secret K x K matrix (issue 21): `reveal B = inv(A)` reveals adj(A) and det(A)
(B_adj, B_det) and the client divides. The plaintext reference, the stat IR and the simulator
(exact and noisy) agree with numpy's inverse on well-conditioned matrices, K = 2..6; an
inverse that would feed encrypted computation is a located error naming Cramer's rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.minors import adj_depth, det_depth
from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.stat_numpy import run_client, run_program
from driver.pipeline import Options, compile_file, report_of
from dsl.checker import ProgramErrors, check
from dsl.lower import lower
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.simulator import simulate

PROGRAM = """param K <= 6
input A: secret[K, K] in [-1.0, 1.0]
reveal B = inv(A)
client {
  C = B @ inv(B)
}
"""


def well_conditioned(k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = 0.6 * np.eye(k) + rng.uniform(-0.4 / k, 0.4 / k, size=(k, k))
    assert np.linalg.cond(a) < 10
    return a


def test_reference_and_ir_reveal_adj_and_det_and_the_client_divides() -> None:
    checked = check(parse_program(PROGRAM))
    assert checked.inverses == {"B"}
    program = lower(checked).ops.first
    assert isinstance(program, stat.ProgramOp)
    assert [r.sym_value for r in program.reveals()] == ["B_adj", "B_det"]
    for k in range(2, 7):
        a = well_conditioned(k, seed=10 + k)
        ref = evaluate(checked, {"K": k}, {"A": a})
        ir = run_program(program, {"K": k}, {"A": a})
        assert sorted(ref.revealed) == sorted(ir.revealed) == ["B_adj", "B_det"]
        assert sorted(ref.client) == sorted(ir.client) == ["B", "C"]
        for got in (ref, ir):
            np.testing.assert_allclose(got.client["B"], np.linalg.inv(a), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(got.client["C"], np.eye(k), atol=1e-9)
            assert float(got.revealed["B_det"]) == pytest.approx(np.linalg.det(a), rel=1e-9)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_inverse_of_a_secret_matrix_matches_numpy_in_the_simulator(tmp_path: Path, k: int) -> None:
    path = tmp_path / "inv.hec"
    path.write_text(PROGRAM)
    comp = compile_file(path, Options(sizes=Sizes.parse(f"K={k}")))
    depth = {o["name"]: o["depth"] for o in report_of(comp)["outputs"]}
    assert depth == {"B_adj": adj_depth(k), "B_det": det_depth(k)}
    a = well_conditioned(k, seed=k)
    want = np.linalg.inv(a)
    for noisy, tol in ((False, 1e-12), (True, 1e-3)):
        out = simulate(comp.program, {"K": k}, {"A": a}, noisy=noisy, seed=2).outputs
        inv = run_client(comp.stat_program, {"K": k}, out)["B"]
        err = np.max(np.abs(inv - want)) / np.max(np.abs(want))
        assert err < tol, (noisy, err)


def test_a_program_without_client_block_gets_one_for_the_division() -> None:
    checked = check(parse_program("input A: secret[2, 2] in [-1, 1]\nreveal B = inv(A)\n"))
    program = lower(checked).ops.first
    assert isinstance(program, stat.ProgramOp)
    client = program.client()
    assert client is not None and [o.sym_value for o in client.outputs()] == ["B"]
    a = np.array([[1.0, 0.5], [0.25, -1.0]])
    np.testing.assert_allclose(run_program(program, {}, {"A": a}).client["B"], np.linalg.inv(a))


HEADER = """param N <= 100
param K <= 4
input A: secret[K, K] in [-1.0, 1.0]
input b: secret[K] in [-1.0, 1.0]
input X: secret[N, K] in [-1.0, 1.0]
"""


@pytest.mark.parametrize(
    ("tail", "line", "column", "message", "hint"),
    [
        ("reveal x = inv(A) @ b\n", 0, 12, "the inverse of a secret matrix is finished", "adj(A)"),
        ("B = inv(A)\nreveal B\n", 0, 5, "cannot feed further encrypted computation", "Cramer"),
        ("reveal B = 2 * inv(A)\n", 0, 16, "the inverse of a secret matrix", "det(A)"),
        ("reveal B = inv(X)\n", 0, 16, "inv() needs a square k x k matrix, got secret", ""),
        ("B_adj = 1\nreveal B = inv(A)\n", 1, 8, "but 'B_adj' is already defined", "another"),
        ("reveal B = inv(A)\nB_det = 2\n", 1, 1, "'B_det' is already defined", ""),
        ("reveal B = inv(b)\n", 0, 16, "inv() needs a square k x k matrix", ""),
    ],
)
def test_misuse_of_inv_is_a_located_error(
    tail: str, line: int, column: int, message: str, hint: str
) -> None:
    first = HEADER.count("\n") + 1
    with pytest.raises(ProgramErrors) as info:
        check(parse_program(HEADER + tail, "inv.hec"))
    text = str(info.value)
    assert f"inv.hec:{first + line}:{column}:" in text, text
    assert message in text and hint in text, text
