"""Precision relative to the value (issue 19): `--relative-precision P` promises P bits relative
to each revealed value itself, not to its range bound, where the range analysis bounds the
value away from 0; an output that can be 0 (a centred moment) is refused, located, and the
report says per output what it can promise relative to the value."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, report_of, run_pipeline, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.report.report import render_text
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

MOMENTS = """param N <= 1000
input x: secret[N] in [10, 60]
xc = x - mean(x)
reveal m2 = sum(xc^2)
reveal m3 = sum(xc^3)
reveal m4 = sum(xc^4)
"""
POSITIVE = """param N <= 1000
input x: secret[N] in [10, 60]
reveal s2 = sum(x^2)
reveal s1 = sum(x)
reveal q = sum(x) * sum(x^2)
"""


def _compile(text: str, **options: object):
    checked = check(parse_program(text, "rel.hec"))
    return checked, run_pipeline(checked, Options(sizes=Sizes.parse("N=200"), **options))  # type: ignore[arg-type]


def test_an_output_that_can_be_zero_is_refused_located() -> None:
    with pytest.raises(UserError) as info:
        _compile(MOMENTS, relative_precision=19.0)
    assert str(info.value).startswith("rel.hec:4:1: error: --relative-precision: m2 can be 0")


@pytest.mark.parametrize("bits", [19.0, 22.0])
def test_every_value_keeps_its_relative_precision(bits: float) -> None:
    checked, comp = _compile(POSITIVE, relative_precision=bits)
    report = report_of(comp)
    for out in report["outputs"]:
        assert out["relative_precision_bits"] >= bits - 0.05, out
    sizes = sizes_for_run(comp)
    for seed in range(3):
        inputs = random_inputs(comp.program, sizes, seed=seed)
        want = evaluate(checked, sizes, inputs).revealed
        got = simulate(comp.program, sizes, inputs, noisy=True, seed=seed + 7).outputs
        for name, value in want.items():
            v = np.asarray(value, dtype=np.float64)
            err = np.abs(np.asarray(got[name]) - v)
            assert np.all(err <= np.abs(v) * 2.0**-bits), (name, float(np.max(err / np.abs(v))))


def test_a_target_beyond_reach_is_refused_naming_the_output() -> None:
    # q = sum(x) * sum(x^2) spans [1e3, 8.6e9] over N <= 200: 30 bits at its smallest values
    # are 53 bits relative to its bound.
    with pytest.raises(UserError, match=r"rel.hec:5:1: error: --relative-precision 30: q spans"):
        _compile(POSITIVE, relative_precision=30.0)


def test_the_report_says_what_it_cannot_promise() -> None:
    _, comp = _compile(MOMENTS)
    report = report_of(comp)
    rel = {o["name"]: o["relative_precision_bits"] for o in report["outputs"]}
    assert rel == {"m2": None, "m3": None, "m4": None}
    text = render_text(report)
    assert "relative to the value: none promised: the range [" in text
    # a square's range starts at 0, not below (interval arithmetic knew no better before)
    m2 = next(o for o in report["outputs"] if o["name"] == "m2")
    assert m2["range"][0] == 0.0
