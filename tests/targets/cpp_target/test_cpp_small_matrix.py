"""det, adj and the client's inverse of a secret 3 x 3 matrix, encrypted end to end by
`hec run` (issue 21): the generated program's gather (targets/cpp/emit.py) and the minors'
products give numpy's values within the precision the report promises."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hec.cli import main

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
