"""Regressions found by the property test (tests/targets/test_random_programs.py), each named
after what broke and shrunk to the smallest program that showed it."""

from __future__ import annotations

import math

import numpy as np

from compiler.analysis.noise import OutputPrecision
from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from driver.pipeline import Options, run_pipeline, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate


def compile_and_compare(text: str, sizes: str) -> None:
    """Compile at ring 2^12, run the exact simulator, compare with the plaintext reference."""
    checked = check(parse_program(text, "regression.hec"))
    comp = run_pipeline(checked, Options(sizes=Sizes.parse(sizes), insecure=True, log_n=12))
    run_sizes = sizes_for_run(comp)
    inputs = random_inputs(comp.program, run_sizes, seed=0)
    for name, b in checked.bindings.items():
        if b.kind == "input" and name not in inputs:  # declared but unused by the server
            shape = [d if isinstance(d, int) else run_sizes[d] for d in b.ty.shape]
            inputs[name] = np.full(shape, -1.0)
    reference = evaluate(checked, run_sizes, inputs)
    result = simulate(comp.program, run_sizes, inputs)
    for name, want in reference.revealed.items():
        np.testing.assert_allclose(result.outputs[name], want, rtol=1e-9, atol=0.0)


# K is a column of the secret matrix s, so vectors of length K are packed.
PACKED_K = "param K <= 4\ninput s: secret[K, K] in [-2.0, -1.0]\n"


def _masks(text: str, sizes: str) -> int:
    checked = check(parse_program(text, "regression.hec"))
    comp = run_pipeline(checked, Options(sizes=Sizes.parse(sizes), insecure=True, log_n=12))
    return sum(
        1 for op in comp.program.block.ops if isinstance(op, ckks.MulConstOp) and op.is_masked
    )


def test_sum_of_a_scalar_broadcast_into_a_packed_vector_is_masked() -> None:
    """`(a - v) @ (a - v)` broadcast the replicated scalar a into the packed vector v, which
    filled v's zero padding slots with a; the slot sum then added them in (an InternalError in
    the simulator, a wrong sum under encryption). The lowering refused it; it now multiplies by
    a masked constant (0 on the padding) before the slot sum, and keeps the meaning."""
    text = PACKED_K + "input a: secret in {-1}\ninput v: secret[K] in [-2.0, -1.0]\n"
    text += "t = a - v\nreveal r = t @ t\n"
    assert _masks(text, "K=3") == 1
    compile_and_compare(text, "K=3")


def test_sum_of_a_poly_with_a_constant_term_on_a_packed_vector_is_masked() -> None:
    """`sum(poly(v, [1, 1]))` lowered the constant term to `add_const`, which adds 1 to every
    slot of the packed v, padding included, before `sum_slots`: refused before, masked now."""
    text = PACKED_K + "input v: secret[K] in [-2.0, -1.0]\nreveal r = sum(poly(v, [1, 1]))\n"
    assert _masks(text, "K=3") == 1
    compile_and_compare(text, "K=3")


def test_padding_filled_by_a_scalar_is_cleared_by_a_zero_padded_factor() -> None:
    """The mask above is no broader than needed: `(a - v) * v` is zero-padded again (v's
    padding is zero), so its slot sum needs no mask and keeps its meaning."""
    text = PACKED_K + "input a: secret in {-1}\ninput v: secret[K] in [-2.0, -1.0]\n"
    text += "reveal r = sum((a - v) * v)\n"
    assert _masks(text, "K=3") == 0
    compile_and_compare(text, "K=3")


def test_scale_plans_beyond_the_float_range_do_not_overflow_the_noise_analysis() -> None:
    """The scale search tried plans (small rescale primes, large Delta) whose scales grow past
    2^1023 after a few levels and lifts; the noise analysis divided by scale^2 and raised
    OverflowError. It now multiplies by 2^(-2·scale bits), which underflows to 0 instead, and
    the pass rejects such plans on their modulus needs."""
    text = "input x: secret in {-1}\nt = poly(x, [1, 1, 1, -0.5]) / 2\nreveal r = x + t\n"
    compile_and_compare(text, "")


def test_an_unbounded_error_gives_no_precision() -> None:
    """An error variance that overflowed to inf gave inf/inf = nan bits of precision, which
    compared as feasible; it is now -inf bits, so the plan is rejected."""
    assert OutputPrecision("r", math.inf, math.inf).precision_bits == -math.inf
    assert OutputPrecision("r", 1.0, math.inf).precision_bits == -math.inf
