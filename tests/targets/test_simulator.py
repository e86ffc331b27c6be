"""The reference simulator against the plaintext reference (DESIGN.md §9): exact mode must
agree to ~1e-9 relative (the passes kept the meaning), noisy mode within the precision the
analysis promises; and the simulator itself must catch what would break decryption."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import InternalError
from driver.pipeline import Options, compile_file, simulate_against_reference, sizes_for_run
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

EXAMPLES = [
    ("examples/gwas/chisq_numerators.hec", "N=300,M=700"),
    ("examples/stats/meancov.hec", "N=150,D=5"),
    ("examples/stats/grs.hec", "N=40,M=300"),
    ("tests/passes/depth-minimization-horner.hec", "N=64"),
]


@pytest.mark.parametrize(("path", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_exact_simulation_matches_the_plaintext_reference(path: str, sizes: str) -> None:
    comp = compile_file(path, Options(sizes=Sizes.parse(sizes)))
    result = simulate_against_reference(comp, seed=5)
    assert result["rows"]
    for row in result["rows"]:
        assert row["max_rel_error"] <= 1e-9, row


@pytest.mark.parametrize("flooding", [True, False], ids=["flooded", "single-party"])
def test_noisy_chisq_is_within_the_promised_precision(flooding: bool) -> None:
    # Compiled for shared results (the default), the promise holds after decrypt's flooding;
    # compiled --no-flooding, it holds for the scheme's own noise.
    comp = compile_file(
        "examples/gwas/chisq_numerators.hec",
        Options(sizes=Sizes.parse("N=400,M=900"), flooding=flooding),
    )
    sizes = sizes_for_run(comp)
    data = random_inputs(comp.program, sizes, seed=2)
    ref = evaluate(comp.checked, sizes, data)
    noisy = simulate(comp.program, sizes, data, noisy=True, seed=3, flooding=flooding)
    from driver.pipeline import report_of

    promised = {o["name"]: o for o in report_of(comp)["outputs"]}
    for name, want in ref.revealed.items():
        got = noisy.outputs[name]
        o = promised[name]
        bound = max(abs(o["range"][0]), abs(o["range"][1]))
        bits = o["flooded_precision_bits"] if flooding else o["precision_bits"]
        # The analysis promises |error| <= bound * 2^-bits (failure probability 2^-32).
        assert np.max(np.abs(got - want)) <= bound * 2.0**-bits, name
        assert np.any(got != want), f"{name}: the noisy mode injected no error"


def test_noisy_mode_is_reproducible_and_seeded() -> None:
    comp = compile_file("examples/stats/grs.hec", Options(sizes=Sizes.parse("N=20,M=100")))
    sizes = sizes_for_run(comp)
    data = random_inputs(comp.program, sizes, seed=1)
    a = simulate(comp.program, sizes, data, noisy=True, seed=7).outputs["score"]
    b = simulate(comp.program, sizes, data, noisy=True, seed=7).outputs["score"]
    c = simulate(comp.program, sizes, data, noisy=True, seed=8).outputs["score"]
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_simulator_catches_a_value_that_would_wrap_the_modulus() -> None:
    comp = compile_file(
        "examples/gwas/chisq_numerators.hec", Options(sizes=Sizes.parse("N=100,M=200"))
    )
    params = comp.program.parameters()
    assert params is not None
    import dataclasses

    comp.program.set_parameters(dataclasses.replace(params, output_moduli=params.output_moduli[:1]))
    sizes = sizes_for_run(comp)
    with pytest.raises(InternalError, match="wrap"):
        simulate(comp.program, sizes, random_inputs(comp.program, sizes))


def test_simulator_catches_dirty_padding_before_a_slot_sum() -> None:
    # G @ b sums the packed axis: poison b's encoding so padding slots are not zero.
    comp = compile_file("examples/stats/grs.hec", Options(sizes=Sizes.parse("N=4,M=10")))
    program = comp.program
    sizes = sizes_for_run(comp)
    data = random_inputs(program, sizes)
    from targets.sim import simulator

    original = simulator._Sim.to_layout

    def dirty(self, logical, ty):
        x = original(self, logical, ty)
        if isinstance(ty, ckks.PtType) and ty.layout_name == ckks.PACKED:
            x = x.copy()
            x[..., -1] = 1.0
        return x

    simulator._Sim.to_layout = dirty  # type: ignore[method-assign]
    try:
        with pytest.raises(InternalError, match="padding"):
            simulate(program, sizes, data)
    finally:
        simulator._Sim.to_layout = original  # type: ignore[method-assign]


@pytest.mark.slow
def test_chisq_acceptance_at_5000_by_16384() -> None:
    """Issue #6 acceptance: N = 5000, M = 16384; exact to 1e-9, noisy chi-square to 1e-5
    relative for every statistic >= 0.01 (about 1 GB of arrays, 20 s)."""
    comp = compile_file(
        "examples/gwas/chisq_numerators.hec",
        Options(sizes=Sizes.parse("N=5000,M=16384"), precision="chi2_num=29"),
    )
    sizes = sizes_for_run(comp)
    data = random_inputs(comp.program, sizes, seed=11)
    ref = evaluate(comp.checked, sizes, data)
    exact = simulate(comp.program, sizes, data)
    for name, want in ref.revealed.items():
        assert np.allclose(exact.outputs[name], want, rtol=1e-9, atol=0), name
    noisy = simulate(comp.program, sizes, data, noisy=True, seed=12)
    chi_ref = ref.revealed["chi2_num"] / ref.revealed["chi2_den"]
    chi = noisy.outputs["chi2_num"] / noisy.outputs["chi2_den"]
    mask = chi_ref >= 0.01
    assert mask.sum() > 1000
    assert np.max(np.abs(chi[mask] - chi_ref[mask]) / chi_ref[mask]) <= 1e-5


@pytest.mark.parametrize("flooding", [False, True], ids=["scheme-noise", "flooded"])
def test_noisy_error_matches_the_analytic_variance_of_a_linear_statistic(flooding: bool) -> None:
    # sum(x) over N: the error is the sum of N independent encoding + encryption errors, so
    # the sample standard deviation over many runs must match sqrt(N * fresh) / scale; with
    # decrypt's flooding it must match sqrt(sigma^2 + sigma_f^2) (compiler/analysis/flooding.py).
    # Flooded compiles pick input scales near 2^80, where the scheme's own noise is below
    # float64's resolution of the value: the scheme-noise case compiles single-party.
    from compiler.analysis.flooding import flooding_sigma
    from compiler.analysis.noise import NoiseModel, output_precision

    comp = compile_file(
        "tests/passes/noise-sum.hec", Options(sizes=Sizes.parse("N=400"), flooding=flooding)
    )
    program = comp.program
    params = program.parameters()
    assert params is not None
    (predicted,) = output_precision(program, program.params(), NoiseModel(params.log_n, 1))
    sigma = predicted.sigma
    if flooding:
        sigma = math.hypot(sigma, flooding_sigma(predicted.sigma))
    sizes = sizes_for_run(comp)
    data = random_inputs(program, sizes, seed=0)
    exact = simulate(program, sizes, data).outputs["t"]
    errors = [
        float(
            simulate(program, sizes, data, noisy=True, seed=s, flooding=flooding).outputs["t"]
            - exact
        )
        for s in range(200)
    ]
    measured = float(np.std(errors))
    # 200 samples: the sample std is within ~15% of the true one with high probability.
    assert 0.8 * sigma <= measured <= 1.2 * sigma
