"""Issue 19's acceptance grid for polynomials, encrypted (slow tier): degrees 3, 7, 8, 15 and
31, each written with poly(), in Horner form and in power form, over `x in [-1, 1]` at
N = 4096: depth ceil(log2(d + 1)) in the report, and the encrypted `hec run` within the error
bound the report states for every value."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.run import run_encrypted
from tests.passes.test_polynomials import DEGREES, FORMS, _coefficients, _source

N = 4096


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("degree", DEGREES)
def test_polynomial_runs_encrypted_within_its_bound(tmp_path: Path, degree: int, form: str) -> None:
    coeffs = _coefficients(degree)
    source = tmp_path / f"{form}{degree}.hec"
    source.write_text(_source(form, coeffs))
    # hec run's single-party compile (decrypt without flooding), for the report and the run
    options = Options(sizes=Sizes.parse(f"N={N}"), flooding=False)
    (out,) = report_of(compile_file(source, options))["outputs"]
    assert out["depth"] == math.ceil(math.log2(degree + 1))
    x = np.random.default_rng(degree).uniform(-1.0, 1.0, N)
    x[:2] = (-1.0, 1.0)  # the range's ends, where the polynomial is largest
    np.save(tmp_path / "x.npy", x)
    enc = run_encrypted(source, {"x": tmp_path / "x.npy"}, tmp_path / "enc", options)
    want = np.polynomial.polynomial.polyval(x, coeffs)
    err = float(np.max(np.abs(enc.revealed["p"] - want)))
    print(f"{form}{degree}: depth {out['depth']}, |error| {err:.3g} <= {out['error_bound']:.3g}")
    assert err <= out["error_bound"]
