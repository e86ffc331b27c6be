"""Encrypted regressions of issue 19 (exact scales): polynomials whose encrypted run aborted
with `Evaluator::add: scales differ` while the simulator passed now run encrypted and agree
with the simulator and the plaintext reference; and when the runtime does refuse an op, its
error names the op and its IR value."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import UserError
from driver.pipeline import Options, run_pipeline
from driver.roles import RoleSequence
from driver.run import build_cpp, run_encrypted, run_sim
from dsl.checker import check
from dsl.parser import parse_program

# Fact 1 (degree-8 Horner form) and the degree-15 power form, over one input: each aborted
# the encrypted run at the default ring (2^14) and precision.
POLYNOMIALS = (
    "param N <= 64\n"
    "input x: secret[N] in [-1.0, 1.0]\n"
    "reveal p = ((((((((0.5*x + 0.25)*x - 0.125)*x + 0.3)*x - 0.2)*x + 0.1)*x + 0.7)*x"
    " - 0.6)*x + 0.4)\n"
    "reveal r = 0.9 + " + " + ".join(f"{0.9 / (k + 1):.3f}*x^{k}" for k in range(1, 16)) + "\n"
)


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    p = np.zeros_like(x)
    for c in (0.5, 0.25, -0.125, 0.3, -0.2, 0.1, 0.7, -0.6, 0.4):
        p = p * x + c
    r = np.full_like(x, 0.9)
    for k in range(1, 16):
        r = r + round(0.9 / (k + 1), 3) * x**k
    return {"p": p, "r": r}


def test_polynomials_run_encrypted_as_simulated(tmp_path: Path) -> None:
    source = tmp_path / "polynomials.hec"
    source.write_text(POLYNOMIALS)
    x = np.random.default_rng(7).uniform(-1.0, 1.0, 64)
    np.save(tmp_path / "x.npy", x)
    inputs = {"x": tmp_path / "x.npy"}
    sim = run_sim(source, inputs, tmp_path / "sim")
    enc = run_encrypted(source, inputs, tmp_path / "enc")
    want = reference(x)
    for name in ("p", "r"):
        np.testing.assert_allclose(sim.revealed[name], want[name], rtol=1e-9, atol=1e-12)
        # 19 bits relative to the range bound (default precision): well inside 1e-4 here.
        assert np.max(np.abs(enc.revealed[name] - want[name])) < 1e-4 * max(
            1.0, float(np.max(np.abs(want[name])))
        )


def test_a_runtime_refusal_names_the_op_and_its_value(tmp_path: Path) -> None:
    """The constant multiply feeding the first addition is encoded off by about 1e-8 (as the
    compiler's log2 scales used to be): the runtime refuses the addition, and the error says
    which op and value (`%N = ckks.add: Evaluator::add: scales differ (...)`), not only
    `Evaluator::add: scales differ`."""
    text = POLYNOMIALS.split("reveal r")[0]
    comp = run_pipeline(check(parse_program(text, "p.hec")), Options(sizes=Sizes.parse("N=64")))
    program = comp.program
    params = program.parameters()
    assert params is not None
    q1, q2 = params.moduli[0], params.moduli[1]
    add = next(op for op in program.block.ops if isinstance(op, ckks.AddOp))
    mul = add.lhs.owner
    assert isinstance(mul, ckks.MulConstOp)
    k = math.ceil(1e-8 / abs(q1 / q2 - 1.0))
    mul.const_scale = mul.const_scale.times(ckks.ScaleAttr.of({q1: k, q2: -k}))
    mul.results[0]._type = mul.infer()  # pyright: ignore[reportPrivateUsage]
    # The generated program's own check after the multiply would catch the changed scale
    # first; give the multiply the type the (tampered) constant implies, as a buggy pass
    # would, so the first refusal is the runtime's at the addition.
    built = build_cpp(comp, "p.hec", tmp_path / "build")
    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 64))
    roles = RoleSequence(built.binary, tmp_path / "work")
    roles.keygen(64 if built.emitted.stream_dim else None)
    roles.encrypt({"x": tmp_path / "x.npy"}, tmp_path / "work" / "ct")
    with pytest.raises(UserError, match=r"%\w+ = ckks\.add: Evaluator::add: scales differ"):
        roles.compute(tmp_path / "work" / "ct", tmp_path / "work" / "res")
