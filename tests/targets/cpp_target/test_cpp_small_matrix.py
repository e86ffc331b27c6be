"""det, adj and the client's inverse of a secret 3 x 3 matrix, encrypted end to end by
`hec run` (issue 21): the generated program's gather (targets/cpp/emit.py) and the minors'
products give numpy's values within the precision the report promises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.minors import adj_depth, det_depth
from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from hec.cli import main
from tests.targets.test_small_matrix import well_conditioned

PROGRAM = """param K <= 6
input A: secret[K, K] in [-1.0, 1.0]
reveal d = det(A)
reveal B = adj(A)
client {
  Ainv = B / d
}
"""


def test_hec_run_det_adj_inv_encrypted(tmp_path: Path) -> None:
    (tmp_path / "det.hec").write_text(PROGRAM)
    rng = np.random.default_rng(4)
    a = 0.6 * np.eye(3) + rng.uniform(-0.1, 0.1, size=(3, 3))
    np.save(tmp_path / "A.npy", a)
    args = ["run", str(tmp_path / "det.hec"), "--input", f"A={tmp_path / 'A.npy'}"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    det = float(np.load(out / "d.npy"))
    assert abs(det - np.linalg.det(a)) <= 1e-4 * abs(np.linalg.det(a))
    inv = np.load(out / "Ainv.npy")
    want = np.linalg.inv(a)
    assert np.max(np.abs(inv - want)) <= 1e-4 * np.max(np.abs(want))
    assert '"backend": "encrypted"' in (out / "summary.json").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_det_adj_inv_encrypted_for_every_small_k(tmp_path: Path, k: int) -> None:
    """Issue 21's acceptance: det, adj and the client's inverse of a secret K x K matrix,
    K = 2..6, encrypted by `hec run` on random well-conditioned matrices: numpy's values within
    the error bound the report states, at the depth the stated formula gives."""
    (tmp_path / "det.hec").write_text(PROGRAM)
    a = well_conditioned(k, seed=10 + k)
    np.save(tmp_path / "A.npy", a)
    options = Options(sizes=Sizes.parse(f"K={k}"), flooding=False)  # hec run's compile
    report = report_of(compile_file(tmp_path / "det.hec", options))
    outputs = {o["name"]: o for o in report["outputs"]}
    assert outputs["d"]["depth"] == det_depth(k) and outputs["B"]["depth"] == adj_depth(k)
    args = ["run", str(tmp_path / "det.hec"), "--input", f"A={tmp_path / 'A.npy'}"]
    assert main([*args, "--no-flooding", "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    det = np.linalg.det(a)
    want = {"d": det, "B": det * np.linalg.inv(a)}
    for name, value in want.items():
        err = float(np.max(np.abs(np.load(out / f"{name}.npy") - value)))
        print(f"K={k} {name}: |error| {err:.3g} <= {outputs[name]['error_bound']:.3g}")
        assert err <= outputs[name]["error_bound"], (name, err)
    # The client's B / d: |B/d - B'/d'| <= (e_B + |B| e_d / |d|) / (|d| - e_d).
    e_d, e_b = outputs["d"]["error_bound"], outputs["B"]["error_bound"]
    bound = (e_b + np.max(np.abs(want["B"])) * e_d / abs(det)) / (abs(det) - e_d)
    err = float(np.max(np.abs(np.load(out / "Ainv.npy") - np.linalg.inv(a))))
    print(f"K={k} Ainv: |error| {err:.3g} <= {bound:.3g}")
    assert err <= bound, err
