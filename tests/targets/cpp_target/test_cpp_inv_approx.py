"""inv_approx(A, steps) of a secret 3 x 3 matrix, encrypted end to end by `hec run` (issue 21):
the Newton-Schulz steps (replicated small-matrix products, `2 * eye(K) - M` as trivial
ciphertexts) give the plaintext reference's value within the error bound the report states."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from dsl.reference import evaluate
from hec.cli import main

PROGRAM = """param K <= 6
input A: secret[K, K] in [-1.0, 1.0]
reveal X = inv_approx(A, 4)
"""


def test_hec_run_inv_approx_encrypted(tmp_path: Path) -> None:
    (tmp_path / "ia.hec").write_text(PROGRAM)
    k = 3
    a = 0.6 * np.eye(k) + np.random.default_rng(4).uniform(-0.1, 0.1, size=(k, k))
    np.save(tmp_path / "A.npy", a)
    comp = compile_file(tmp_path / "ia.hec", Options(sizes=Sizes.parse(f"K={k}"), flooding=False))
    output = report_of(comp)["outputs"][0]
    assert output["depth"] == 2 * 4 + 1
    want = evaluate(comp.checked, {"K": k}, {"A": a}).revealed["X"]
    args = ["run", str(tmp_path / "ia.hec"), "--input", f"A={tmp_path / 'A.npy'}"]
    assert main([*args, "--no-flooding", "--out", str(tmp_path / "out")]) == 0
    got = np.load(tmp_path / "out" / "X.npy")
    err = float(np.max(np.abs(got - want)))
    print(f"|error| {err:.3g} <= {output['error_bound']:.3g}")
    assert 0 < err <= output["error_bound"]
    assert '"backend": "encrypted"' in (tmp_path / "out" / "summary.json").read_text()
