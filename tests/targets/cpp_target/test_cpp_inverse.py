"""`reveal B = inv(A + 0.5 * eye(K))` of a secret 3 x 3 matrix, encrypted end to end by `hec run`
(issue 21): the identity is added with no ciphertext product, the server reveals adj and det,
and the client's division gives numpy's inverse."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hec.cli import main

PROGRAM = """param K <= 6
input A: secret[K, K] in [-1.0, 1.0]
reveal S = A + 0.5 * eye(K)
reveal B = inv(A + 0.5 * eye(K))
"""


def test_hec_run_inverse_of_a_shifted_matrix_encrypted(tmp_path: Path) -> None:
    (tmp_path / "inv.hec").write_text(PROGRAM)
    a = np.random.default_rng(8).uniform(-0.15, 0.15, size=(3, 3))
    np.save(tmp_path / "A.npy", a)
    args = ["run", str(tmp_path / "inv.hec"), "--input", f"A={tmp_path / 'A.npy'}"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    shifted = a + 0.5 * np.eye(3)
    assert np.max(np.abs(np.load(out / "S.npy") - shifted)) <= 1e-6
    want = np.linalg.inv(shifted)
    inv = np.load(out / "B.npy")
    assert np.max(np.abs(inv - want)) <= 1e-4 * np.max(np.abs(want))
    assert '"backend": "encrypted"' in (out / "summary.json").read_text()
