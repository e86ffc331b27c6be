"""`hec run` of a program that declares an input and a size its server never reads (found by
the slow statistical test's generated programs): the encrypt role refused the unused input
("the program has no input of that name"), and without it the server asked for the unused size
("size M is not given by any input"). Only the inputs the program encrypts go to the encrypt
role, and the generated program asks only for the sizes its values and numbers use."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hec.cli import main

PROGRAM = """param N <= 10
param M <= 10
input x: secret[N] in [0.0, 1.0]
input z: secret[M] in [0.0, 1.0]
reveal s = sum(x)
"""


def test_an_input_the_server_never_reads_does_not_stop_hec_run(tmp_path: Path) -> None:
    (tmp_path / "p.hec").write_text(PROGRAM)
    x = np.linspace(0.0, 1.0, 7)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "z.npy", np.full(4, 0.5))
    args = ["run", str(tmp_path / "p.hec"), "--insecure", "--log-n", "12"]
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"z={tmp_path / 'z.npy'}"]
    assert main([*args, *inputs, "--out", str(tmp_path / "out")]) == 0
    assert abs(float(np.load(tmp_path / "out" / "s.npy")) - float(np.sum(x))) <= 1e-6
