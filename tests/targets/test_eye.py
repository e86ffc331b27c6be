"""eye(K), the identity of a small dimension (issue 21): the plaintext reference and the stat
IR's numpy meaning agree with numpy; added to or subtracted from a secret K x K matrix it
compiles with no ciphertext product (depth 0) and the simulator gives numpy's values; any
other use under encryption is refused at its source location."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.minors import det_depth
from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.errors import UserError
from compiler.stat_numpy import run_program
from driver.pipeline import Options, compile_file, report_of
from dsl.checker import check
from dsl.lower import lower
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.simulator import simulate

PROGRAM = """param K <= 6
input H: secret[K, K] in [-1.0, 1.0]
reveal R = H + 0.5 * eye(K)
reveal S = 2 * eye(K) - H
reveal T = -eye(K) / 4 + H - eye(K)
reveal d = det(H - eye(K) / 4)
"""


def want(h: np.ndarray) -> dict[str, np.ndarray]:
    i = np.eye(h.shape[0])
    return {
        "R": h + 0.5 * i,
        "S": 2 * i - h,
        "T": h - 1.25 * i,
        "d": np.asarray(np.linalg.det(h - i / 4)),
    }


def test_eye_in_the_reference_and_the_ir_is_numpys_identity() -> None:
    checked = check(parse_program(PROGRAM))
    program = lower(checked).ops.first
    assert isinstance(program, stat.ProgramOp)
    rng = np.random.default_rng(5)
    for k in range(1, 7):
        h = rng.uniform(-1, 1, (k, k))
        reference = evaluate(checked, {"K": k}, {"H": h}).revealed
        ir = run_program(program, {"K": k}, {"H": h}).revealed
        for name, value in want(h).items():
            np.testing.assert_allclose(reference[name], value, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ir[name], value, rtol=1e-9, atol=1e-12)


def test_eye_of_a_literal_size() -> None:
    checked = check(parse_program("input H: secret[3, 3] in [0, 1]\nreveal R = H - eye(3)\n"))
    h = np.full((3, 3), 0.5)
    assert np.array_equal(evaluate(checked, {}, {"H": h}).revealed["R"], h - np.eye(3))


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_secret_matrix_plus_eye_matches_numpy_in_the_simulator(tmp_path: Path, k: int) -> None:
    path = tmp_path / "eye.hec"
    path.write_text(PROGRAM)
    comp = compile_file(path, Options(sizes=Sizes.parse(f"K={k}")))
    depth = {o["name"]: o["depth"] for o in report_of(comp)["outputs"]}
    # Adding the identity costs no product: only det's expansion has depth.
    assert depth == {"R": 0, "S": 0, "T": 0, "d": det_depth(k)}
    h = np.random.default_rng(k).uniform(-1, 1, (k, k))
    for noisy, tol in ((False, 1e-12), (True, 1e-4)):
        out = simulate(comp.program, {"K": k}, {"H": h}, noisy=noisy, seed=1).outputs
        for name, value in want(h).items():
            err = np.max(np.abs(out[name] - value))
            assert err < tol * max(1.0, float(np.max(np.abs(value)))), (name, noisy, err)


@pytest.mark.parametrize(
    ("line", "column"),
    [("reveal P = eye(K) * H", 12), ("reveal P = H @ eye(K)", 16)],
)
def test_other_uses_of_eye_under_encryption_are_refused_located(
    tmp_path: Path, line: str, column: int
) -> None:
    path = tmp_path / "eye.hec"
    path.write_text(f"param K <= 6\ninput H: secret[K, K] in [-1.0, 1.0]\n{line}\n")
    with pytest.raises(UserError) as info:
        compile_file(path, Options(sizes=Sizes.parse("K=3")))
    text = str(info.value)
    assert f"{path}:3:{column}:" in text, text
    assert "eye(K) is only supported under encryption added to or subtracted from" in text
