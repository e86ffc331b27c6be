"""Depth-optimal polynomials (issue 19): the baby-step giant-step plan of
compiler/analysis/polynomial.py, and every way of writing a polynomial (poly(), Horner form,
power form) compiling to depth ceil(log2(d + 1)) with about 2 sqrt(d) + log2 d ciphertext
products, shown by the report, with the simulator agreeing with the plaintext reference."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.polynomial import (
    MAX_DEGREE,
    Leaf,
    Plan,
    plan_polynomial,
    power_products,
)
from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference

DEGREES = [3, 7, 8, 15, 31]
FORMS = ["poly", "horner", "power"]


def _coefficients(degree: int) -> list[float]:
    rng = np.random.default_rng(degree)
    return [round(float(c), 3) or 0.5 for c in rng.uniform(-1.0, 1.0, degree + 1)]


def _source(form: str, coeffs: list[float]) -> str:
    d = len(coeffs) - 1
    match form:
        case "poly":
            body = f"poly(x, [{', '.join(map(str, coeffs))}])"
        case "horner":
            body = f"{coeffs[d]}"
            for k in range(d - 1, -1, -1):
                body = f"{coeffs[k]} + x * ({body})"
        case _:
            terms = [str(coeffs[0]), f"{coeffs[1]} * x"]
            terms += [f"{coeffs[k]} * x^{k}" for k in range(2, d + 1)]
            body = " + ".join(terms)
    return f"param N <= 4096\ninput x: secret[N] in [-1, 1]\nreveal p = {body}\n"


def _evaluate(plan: Plan, x: float) -> float:
    """The value the plan computes, evaluated as the lowering emits it."""
    if isinstance(plan, Leaf):
        return sum(c * x**i for i, c in enumerate(plan.coeffs))
    return _evaluate(plan.low, x) + x**plan.power * _evaluate(plan.high, x)


@pytest.mark.parametrize("degree", range(1, MAX_DEGREE + 1))
def test_plan_is_depth_optimal_with_few_products_and_computes_the_polynomial(
    degree: int,
) -> None:
    coeffs = _coefficients(degree)
    found = plan_polynomial(coeffs)
    assert found.depth == math.ceil(math.log2(degree + 1))
    assert found.products <= 2 * math.sqrt(degree) + math.log2(degree) + 1e-9
    for x in (-1.0, -0.3, 0.7, 1.0):
        assert _evaluate(found.plan, x) == pytest.approx(
            np.polynomial.polynomial.polyval(x, coeffs), abs=1e-9
        )


def test_integer_coefficients_cost_no_level() -> None:
    # x^4 + 3x^2 + 1: the power chain alone, depth 2 (the coefficients multiply exactly).
    assert plan_polynomial([1.0, 0.0, 3.0, 0.0, 1.0]).depth == 2


def test_powers_use_the_chain_not_every_lower_power() -> None:
    # x^31 = x^16 x^8 x^4 x^2 x: 4 squarings and 4 products, not 30.
    assert power_products(31) == 8
    assert power_products(16) == 4


@pytest.mark.parametrize("degree", DEGREES)
@pytest.mark.parametrize("form", FORMS)
def test_every_form_compiles_to_optimal_depth(degree: int, form: str, tmp_path: Path) -> None:
    path = tmp_path / f"{form}{degree}.hec"
    path.write_text(_source(form, _coefficients(degree)))
    comp = compile_file(path, Options(sizes=Sizes.parse("N=64"), flooding=False))
    (out,) = report_of(comp)["outputs"]
    assert out["depth"] == math.ceil(math.log2(degree + 1))
    assert out["multiplications"] <= 2 * math.sqrt(degree) + math.log2(degree)
    for row in simulate_against_reference(comp, seed=3)["rows"]:
        assert row["max_rel_error"] < 1e-9, row


def test_the_three_forms_compile_to_the_same_program(tmp_path: Path) -> None:
    texts = []
    for form in FORMS:
        path = tmp_path / f"{form}.hec"
        path.write_text(_source(form, _coefficients(15)))
        comp = compile_file(path, Options(sizes=Sizes.parse("N=64"), flooding=False))
        texts.append([op.name for op in comp.program.block.ops])
    assert texts[0] == texts[1] == texts[2]


def test_expansion_that_would_cancel_is_not_applied(tmp_path: Path) -> None:
    # (x - 9)(x - 10)...(x - 14) over [0, 1]: the expanded coefficients (up to ~3e6) exceed the
    # value's range by far more than 2^10; the product chain is kept (balanced, depth 3).
    path = tmp_path / "factors.hec"
    factors = " * ".join(f"(x - {k})" for k in range(9, 15))
    path.write_text(f"param N <= 64\ninput x: secret[N] in [0, 1]\nreveal p = {factors}\n")
    comp = compile_file(path, Options(sizes=Sizes.parse("N=16"), flooding=False))
    assert comp.stat_depth_after == {"p": 3}
    assert "stat.poly" not in {op.name for op in comp.stat_program.walk()}
