"""Indexing and slicing of small axes (issue 21): `H[0, 1]`, `t[1:3]`, `H[:, 0]` on secret
arrays whose every axis is small compile to a gather of ciphertexts (no HE work, depth 0);
the reference, the stat IR and the simulator agree with numpy. What only the sizes of a run
can refuse (an index beyond the actual K), and an array with an axis spread over slots, are
located errors."""

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
input t: secret[K] in [-1.0, 1.0]
input W: secret[3, 3] in [0, 1]
reveal a = H[0, 1]
reveal b = t[1:3] + W[0, 1:]
reveal c = H[:, 0] * 2 + H[1, :]
reveal d = det(H[0:2, 0:2]) + W[2, 2]
reveal e = W[1:, :2] @ t[0:2]
"""


def want(h: np.ndarray, t: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "a": h[0, 1],
        "b": t[1:3] + w[0, 1:],
        "c": h[:, 0] * 2 + h[1, :],
        "d": np.linalg.det(h[:2, :2]) + w[2, 2],
        "e": w[1:, :2] @ t[:2],
    }


def data(k: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "H": rng.uniform(-1, 1, (k, k)),
        "t": rng.uniform(-1, 1, k),
        "W": rng.uniform(0, 1, (3, 3)),
    }


def test_reference_and_ir_index_like_numpy() -> None:
    checked = check(parse_program(PROGRAM))
    program = lower(checked).ops.first
    assert isinstance(program, stat.ProgramOp)
    for k in (3, 4, 6):
        inputs = data(k, seed=k)
        ref = evaluate(checked, {"K": k}, inputs).revealed
        ir = run_program(program, {"K": k}, inputs).revealed
        for name, value in want(inputs["H"], inputs["t"], inputs["W"]).items():
            np.testing.assert_allclose(ref[name], value, rtol=1e-12)
            np.testing.assert_allclose(ir[name], value, rtol=1e-9)


@pytest.mark.parametrize("k", [3, 4, 6])
def test_indexing_secret_small_arrays_in_the_simulator(tmp_path: Path, k: int) -> None:
    path = tmp_path / "index.hec"
    path.write_text(PROGRAM)
    comp = compile_file(path, Options(sizes=Sizes.parse(f"K={k}")))
    depth = {o["name"]: o["depth"] for o in report_of(comp)["outputs"]}
    assert depth == {"a": 0, "b": 0, "c": 0, "d": det_depth(2), "e": 1}
    inputs = data(k, seed=k)
    for noisy, tol in ((False, 1e-12), (True, 1e-4)):
        out = simulate(comp.program, {"K": k}, inputs, noisy=noisy, seed=4).outputs
        for name, value in want(inputs["H"], inputs["t"], inputs["W"]).items():
            err = np.max(np.abs(out[name] - value))
            assert err < tol, (name, noisy, err)


def test_an_index_beyond_the_size_of_the_run_is_located(tmp_path: Path) -> None:
    path = tmp_path / "index.hec"
    path.write_text(PROGRAM)
    with pytest.raises(UserError) as info:
        compile_file(path, Options(sizes=Sizes.parse("K=1")))
    assert f"{path}:5:12:" in str(info.value) and "index 1 is out of range" in str(info.value)
    checked = check(parse_program(PROGRAM, str(path)))
    with pytest.raises(UserError) as info:
        evaluate(checked, {"K": 1}, data(1, seed=1))
    assert f"{path}:5:12:" in str(info.value) and "of size 1 in this run" in str(info.value)


def test_indexing_an_array_with_a_packed_axis_is_refused_located(tmp_path: Path) -> None:
    path = tmp_path / "index.hec"
    path.write_text(
        "param N <= 100\nparam K <= 4\ninput X: secret[N, K] in [-1.0, 1.0]\nreveal x = X[:, 1]\n"
    )
    with pytest.raises(UserError) as info:
        compile_file(path, Options(sizes=Sizes.parse("N=10,K=3")))
    text = str(info.value)
    assert f"{path}:4:12:" in text, text
    assert "an axis spread over slots (N) is not supported by the lowering yet" in text


def test_indexing_without_the_size_of_its_axis_is_refused_located(tmp_path: Path) -> None:
    path = tmp_path / "index.hec"
    path.write_text(PROGRAM)
    with pytest.raises(UserError) as info:
        compile_file(path, Options())
    assert f"{path}:5:12:" in str(info.value) and "needs the size of K" in str(info.value)
