"""A secret [N] vector packed into slots, encrypted end to end by `hec run` (issue 19): at
N = 9000 over 8192 slots the vector is two ciphertexts, the second partly padding, and the
centred sums multiply by the runtime's mask (`mul_mask`: a full block by the integer constant,
the partial one by the encoded 0/1 vector) before their slot sums. Every value lies within
the bound the report promises."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from hec.cli import main
from tests.targets.test_packed_vectors import MOMENTS


def test_hec_run_centred_moments_of_a_packed_vector(tmp_path: Path) -> None:
    n = 9000
    path = tmp_path / "moments.hec"
    path.write_text(MOMENTS)
    x = np.random.default_rng(6).uniform(10.0, 60.0, n)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    assert main(["run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "--out", str(out)]) == 0
    assert '"backend": "encrypted"' in (out / "summary.json").read_text()
    comp = compile_file(path, Options(sizes=Sizes.parse(f"N={n}"), flooding=False))
    params = comp.program.parameters()
    assert params is not None and params.slots < n < 2 * params.slots
    xc = x - x.mean()
    want = {"m2": np.sum(xc**2), "m3": np.sum(xc**3), "s": np.sum(x)}
    for o in report_of(comp)["outputs"]:
        got = float(np.load(out / f"{o['name']}.npy"))
        bound = max(abs(o["range"][0]), abs(o["range"][1]))
        err = abs(got - want[o["name"]])
        assert 0.0 < err <= bound * 2.0 ** -o["precision_bits"], (o["name"], err)
