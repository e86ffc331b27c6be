"""Regressions of issue 19 (exact scales), each named after what broke: programs outside
examples/ whose encrypted run aborted while the simulator passed, or whose compilation ended
in a traceback. Each program is compiled as the issue ran it, run in the simulator (which now
checks what the runtime checks) and compared with the plaintext reference; the encrypted runs
are in tests/targets/cpp_target/test_cpp_exact_scales.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import InternalError
from driver.pipeline import Compilation, Options, run_pipeline, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

HEAD = "param N <= 64\ninput x: secret[N] in [-1.0, 1.0]\n"
# A degree-8 polynomial in Horner form (issue 19, fact 1).
HORNER_8 = HEAD + (
    "reveal p = ((((((((0.5*x + 0.25)*x - 0.125)*x + 0.3)*x - 0.2)*x + 0.1)*x + 0.7)*x"
    " - 0.6)*x + 0.4)\n"
)
# A degree-15 polynomial in power form (issue 19, fact 2).
TERMS = " + ".join(f"{0.9 / (k + 1):.3f}*x^{k}" for k in range(1, 16))
POWER_15 = HEAD + f"reveal p = 0.9 + {TERMS}\n"
# Five or more rescales (issue 19, fact 2): the noise analysis raised OverflowError.
DEEP = {
    "x17": HEAD + "reveal p = x^16 * x\n",
    "x24": HEAD + "reveal p = (x^12)^2\n",
    "poly31": HEAD
    + "reveal p = poly(x, ["
    + ", ".join(f"{0.5 / (k + 1):.4f}" for k in range(32))
    + "])\n",
    "squarings": HEAD + "a = x*x\nb = a*a\nc = b*b\nd = c*c\nreveal p = d*d\n",
}


def compile_text(text: str, options: Options) -> Compilation:
    return run_pipeline(check(parse_program(text, "regression.hec")), options)


def simulate_and_compare(comp: Compilation, text: str, rtol: float = 1e-9) -> None:
    """The exact simulator (with the runtime's checks) against the plaintext reference."""
    run_sizes = sizes_for_run(comp)
    inputs = random_inputs(comp.program, run_sizes, seed=1)
    reference = evaluate(check(parse_program(text, "regression.hec")), run_sizes, inputs)
    result = simulate(comp.program, run_sizes, inputs)
    for name, want in reference.revealed.items():
        np.testing.assert_allclose(result.outputs[name], want, rtol=rtol, atol=1e-12)


def assert_additions_have_exactly_equal_scales(program: ckks.ProgramOp) -> None:
    for op in program.block.ops:
        if isinstance(op, ckks.AddOp | ckks.SubOp):
            assert ckks.ct_type(op.lhs).scale == ckks.ct_type(op.rhs).scale, op


@pytest.mark.parametrize("text", [HORNER_8, POWER_15], ids=["horner8", "power15"])
def test_polynomials_add_values_of_exactly_equal_scales(text: str) -> None:
    """Fact 1 and the degree-15 power form: with exact primes the terms of the polynomial met
    at scales 2^101.99999999708 and 2^101.99999999637, which the compiler's log2 tolerance
    called equal and the runtime refused (`Evaluator::add: scales differ`). The compiler now
    folds the exact ratio into the constant multiplies, and the simulator, which follows the
    runtime's doubles, passes only programs the runtime accepts."""
    comp = compile_text(text, Options(sizes=Sizes.parse("N=64"), flooding=False))
    assert_additions_have_exactly_equal_scales(comp.program)
    if text is POWER_15:
        # Evaluated by baby-step giant-step (compiler/analysis/polynomial.py): a giant-step
        # product has no constant multiply to fold the ratio into, so a lift may take it.
        simulate_and_compare(comp, text)
        return
    # Horner form: no lift by an inexact ratio was needed: the constants took it.
    lifts = [
        op
        for op in comp.program.block.ops
        if isinstance(op, ckks.MulConstOp) and "align" in op.attributes
    ]
    assert all(op.const_scale.pow2_bits is not None for op in lifts)
    simulate_and_compare(comp, text)


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_programs_compile_without_overflow(name: str) -> None:
    """Fact 2: five or more rescales ended in OverflowError at `2.0**op.const_scale_bits` in
    the noise analysis (scale plans beyond 2^1023); the rounding error of a constant is now
    computed on the exact scale."""
    text = DEEP[name]
    comp = compile_text(text, Options(sizes=Sizes.parse("N=64"), flooding=False))
    assert_additions_have_exactly_equal_scales(comp.program)
    simulate_and_compare(comp, text, rtol=1e-7)


def test_a_scale_at_the_floor_stays_above_it_with_exact_primes() -> None:
    """`reveal q = c^8 * 0.5` over [-100, 100] at 10 bits on a 2^12 ring ended in
    `InternalError: check-scales: ckks.rescale has scale 2^8.0 < 2^8`: the plan put a scale at
    exactly 2^8 with nominal primes, and the exact primes left it at 2^7.99999. The plan now
    keeps a margin above the floor."""
    text = "param N <= 64\ninput c: secret[N] in [-100.0, 100.0]\nreveal q = c^8 * 0.5\n"
    comp = compile_text(
        text, Options(sizes=Sizes.parse("N=64"), precision_bits=10.0, log_n=12, insecure=True)
    )
    scales = [
        ckks.ct_type(r).scale_bits
        for op in comp.program.block.ops
        for r in op.results
        if isinstance(r.type, ckks.CtType)
    ]
    assert min(scales) >= 8.0
    simulate_and_compare(comp, text, rtol=1e-9)


def test_the_simulator_refuses_what_the_runtime_refuses_naming_the_op() -> None:
    """A program whose addition meets scales that differ by a ratio of primes (what the
    compiler used to emit) is refused by the simulator as the runtime refuses it, naming the op
    and its IR value; before, `--sim` passed and only the encrypted run aborted."""
    comp = compile_text(HORNER_8, Options(sizes=Sizes.parse("N=64"), flooding=False))
    program = comp.program
    params = program.parameters()
    assert params is not None
    q1, q2 = params.moduli[0], params.moduli[1]
    add = next(op for op in program.block.ops if isinstance(op, ckks.AddOp))
    mul = add.lhs.owner
    assert isinstance(mul, ckks.MulConstOp)
    # Off by (q1/q2)^k, about 1 + 1e-8: below what the old log2 tolerance could see, above
    # the runtime's 1e-9 relative check.
    k = math.ceil(1e-8 / abs(q1 / q2 - 1.0))
    mul.const_scale = mul.const_scale.times(ckks.ScaleAttr.of({q1: k, q2: -k}))
    mul.results[0]._type = mul.infer()  # pyright: ignore[reportPrivateUsage]
    run_sizes = sizes_for_run(comp)
    inputs = random_inputs(program, run_sizes, seed=1)
    with pytest.raises(InternalError, match=r"%\w+ = ckks\.add: Evaluator::add: scales differ"):
        simulate(program, run_sizes, inputs)
