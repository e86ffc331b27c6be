# ruff: noqa: E501  (the cases are lines of MLIR text, kept whole to stay readable)
"""The `ckks` dialect: MLIR text round trips, and the verifier rejects IR that breaks the
scheme's rules (each case names the rule)."""

from __future__ import annotations

import math

import pytest
from xdsl.utils.exceptions import VerifyException

from compiler.analysis.sizes import Sizes
from compiler.dialects.ckks import Ckks, ScaleAttr
from compiler.ir_text import parse_ir, print_ir
from driver.pipeline import Options, compile_file

HEAD = """builtin.module {
  ckks.program "t" {
    ckks.param "N" {bound = 100 : i64}
    ckks.param "M" {bound = 100 : i64}
    %p = ckks.encode "S" {domain = #stat.set<0.0, 1.0, 2.0>} : !ckks.ptensor<[N, M], packed, pt<1, 30.0>>
    %s = ckks.encrypt %p {party = "data_owner"} : !ckks.ptensor<[N, M], packed, pt<1, 30.0>> -> !ckks.tensor<[N, M], packed, ct<1, 30.0, 1>>
    %pc = ckks.encode "C" {domain = #stat.set<0.0, 1.0>} : !ckks.ptensor<[N, M], complex, pt<1, 30.0>>
    %py = ckks.encode "y" {domain = #stat.set<0.0, 1.0>} : !ckks.ptensor<[N], replicated, pt<1, 30.0>>
"""
TAIL = "  }\n}\n"
CT = "!ckks.tensor<[N, M], packed, ct<1, 30.0, 1>>"
PC = "!ckks.ptensor<[N, M], complex, pt<1, 30.0>>"
CC = "!ckks.tensor<[N, M], complex, ct<1, 30.0, 1>>"
PY = "!ckks.ptensor<[N], replicated, pt<1, 30.0>>"
CY = "!ckks.tensor<[N], replicated, ct<1, 30.0, 1>>"


def parse(body: str):
    return parse_ir(HEAD + body + TAIL, Ckks)


def test_round_trip_of_a_compiled_program() -> None:
    comp = compile_file(
        "examples/gwas/chisq_numerators.hec", Options(sizes=Sizes.parse("N=100,M=1000"))
    )
    text = print_ir(comp.module)
    assert print_ir(parse_ir(text, Ckks)) == text


def test_round_trip_of_a_complex_packed_program() -> None:
    comp = compile_file(
        "examples/gwas/chisq_numerators.hec", Options(sizes=Sizes.parse("N=100,M=10000"))
    )
    text = print_ir(comp.module)
    assert "complex" in text and "ckks.unpack_complex" in text and "real_factor" in text
    assert print_ir(parse_ir(text, Ckks)) == text


def test_a_valid_product_verifies() -> None:
    parse(
        f"    %m = ckks.mul %s, %s : {CT}, {CT} -> !ckks.tensor<[N, M], packed, ct<1, 60.0, 2>>\n"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # A tensor product adds degrees: claiming degree 1 is a missing relinearization.
        (
            f"    %m = ckks.mul %s, %s : {CT}, {CT} -> !ckks.tensor<[N, M], packed, ct<1, 60.0, 1>>\n",
            "does not match",
        ),
        # Adding values at different scales is wrong whatever the result type says.
        (
            f"    %l = ckks.mul %s, %s : {CT}, {CT} -> !ckks.tensor<[N, M], packed, ct<1, 60.0, 2>>\n"
            f"    %a = ckks.add %s, %l : {CT}, !ckks.tensor<[N, M], packed, ct<1, 60.0, 2>> -> "
            "!ckks.tensor<[N, M], packed, ct<1, 60.0, 2>>\n",
            "scales",
        ),
        # Rescale at the bottom of the chain.
        (
            f"    %d = ckks.level_down %s {{to = 0 : i64}} : {CT} -> "
            "!ckks.tensor<[N, M], packed, ct<0, 30.0, 1>>\n"
            "    %r = ckks.rescale %d {divisor = #ckks.scale<2:30>} : !ckks.tensor<[N, M], packed, "
            "ct<0, 30.0, 1>> -> !ckks.tensor<[N, M], packed, ct<0, 0.0, 1>>\n",
            "level 0",
        ),
        # Operands at different levels.
        (
            f"    %d = ckks.level_down %s {{to = 0 : i64}} : {CT} -> "
            "!ckks.tensor<[N, M], packed, ct<0, 30.0, 1>>\n"
            f"    %a = ckks.add %s, %d : {CT}, !ckks.tensor<[N, M], packed, ct<0, 30.0, 1>> -> {CT}\n",
            "levels",
        ),
        # Rotations need a relinearized ciphertext.
        (
            f"    %m = ckks.mul %s, %s : {CT}, {CT} -> !ckks.tensor<[N, M], packed, ct<1, 60.0, 2>>\n"
            "    %r = ckks.rotate %m {offset = 1 : i64} : !ckks.tensor<[N, M], packed, "
            "ct<1, 60.0, 2>> -> !ckks.tensor<[N, M], packed, ct<1, 60.0, 2>>\n",
            "degree 1",
        ),
        # Reducing the packed axis is a slot sum, not an array reduction.
        (
            f"    %r = ckks.reduce %s {{axis = 1 : i64}} : {CT} -> "
            "!ckks.tensor<[N], packed, ct<1, 30.0, 1>>\n",
            "packed axis",
        ),
        # A product of two complex arrays mixes the real and imaginary parts (two packed
        # column blocks): only a real_factor broadcast may multiply a complex array.
        (
            f'    %c = ckks.encrypt %pc {{party = "data_owner"}} : {PC} -> {CC}\n'
            f"    %m = ckks.mul %c, %c : {CC}, {CC} -> !ckks.tensor<[N, M], complex, ct<1, 60.0, 2>>\n",
            "unpack_complex first",
        ),
        # A real_factor broadcast (imaginary parts 0) is no complex value of its own.
        (
            f'    %c = ckks.encrypt %pc {{party = "data_owner"}} : {PC} -> {CC}\n'
            f'    %y = ckks.encrypt %py {{party = "data_owner"}} : {PY} -> {CY}\n'
            '    %b = ckks.broadcast %y {dims = array<i64: 0>, shape = ["N", "M"], '
            f'out_layout = "complex", real_factor}} : {CY} -> {CC}\n'
            f"    %a = ckks.add %c, %b : {CC}, {CC} -> {CC}\n",
            "only a factor",
        ),
        # Unpacking takes a complex array.
        (
            f"    %u = ckks.unpack_complex %s : {CT} -> !ckks.tensor<[N, M], packed, ct<1, 31.0, 1>>\n",
            "needs a complex array",
        ),
        # Only the data owner encrypts.
        (
            '    %q = ckks.encrypt %p {party = "server"} : !ckks.ptensor<[N, M], packed, '
            f"pt<1, 30.0>> -> {CT}\n",
            "data owner",
        ),
    ],
)
def test_verifier_rejects(body: str, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        parse(body)


# Two rescale primes of about 2^30 (q1 = 1073750017, q2 = 1073692673): scales differing by
# their ratio, q1/q2 = 1 + 5e-5, are different scales (the runtime refuses to add them).
Q1, Q2 = 1073750017, 1073692673


def test_exact_scales_round_trip_with_their_factors() -> None:
    body = (
        f"    %r1 = ckks.rescale %s {{divisor = #ckks.scale<{Q1}:1>}} : {CT} -> "
        f"!ckks.tensor<[N, M], packed, ct<0, {30 - math.log2(Q1)!r} exact<2:30, {Q1}:-1>, 1>>\n"
    )
    module = parse(body)
    text = print_ir(module)
    assert f"exact<2:30, {Q1}:-1>" in text
    assert print_ir(parse_ir(text, Ckks)) == text


def test_scales_are_equal_only_when_their_factors_are() -> None:
    """Regression (issue 19, fact 1): the compiler compared log2 scales with a tolerance of
    1e-9 * log2, looser than the runtime's 1e-9 relative check on the values, so it let
    through additions the runtime aborted (`Evaluator::add: scales differ`)."""
    a = ScaleAttr.of({2: 60, Q1: -1})
    b = ScaleAttr.of({2: 60, Q2: -1})
    assert a != b and abs(a.bits - b.bits) < 1e-4
    assert a.times(ScaleAttr.of({Q1: 1})) == ScaleAttr.pow2(60)
    assert a.over(b) == ScaleAttr.of({Q1: -1, Q2: 1})
    assert ScaleAttr.pow2(3).fraction == 8 and ScaleAttr.one().is_one


def test_rounding_error_of_a_constant_is_exact_beyond_the_float_range() -> None:
    """Regression (issue 19, fact 2): the noise analysis computed 2.0**const_scale_bits and
    raised OverflowError past 2^1023 (x^17, degree-31 poly(), five nested squarings)."""
    huge = ScaleAttr.pow2(1500)
    assert huge.rounding_error(1.0) == 0.0
    assert huge.rounding_error(0.1) == 0.0  # a double is k·2^-m with m < 1100: exact here
    assert 0.0 < ScaleAttr.pow2(20).rounding_error(0.1) <= 2.0**-21
    odd = ScaleAttr.of({2: 40, Q1: -1})  # ~2^10
    assert 0.0 < odd.rounding_error(1.0 / 3.0) <= 0.5 / odd.fraction


def test_rounding_on_a_deep_composite_scale_is_bracketed_not_formed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression (issue 21): under composite scaling an exponent doubles at every level, so at
    depth 25 a scale near 2^48 is 2^503316036 over primes to powers near 2^23; forming those
    integers (Fraction's gcd) did not finish. Beyond `EXACT_SCALE_BITS` the rounding is
    decided on a bracket of the scale: an upper bound within ~2^-96 of the exact error."""
    from compiler.dialects import ckks

    e = 2**23
    deep = ScaleAttr.of(
        {2: round(e * math.log2(Q1) + (e - 1) * math.log2(Q2)) + 48, Q1: -e, Q2: 1 - e}
    )
    assert deep.size_bits > 10**9 and 0 < deep.bits < 100
    lo, hi = deep.bracket(160)
    assert lo <= hi and float(hi / lo - 1) < 2.0**-120
    err = deep.rounding_error(1.0)
    assert 0.0 < err <= 0.5 * 2.0**-deep.bits * (1 + 1e-9)
    assert abs(deep.rounded(1.0) - 1.0) <= err + 2.0**-52
    # Where the exact integers are affordable, the bracket gives the same floats.
    cases = [
        (ScaleAttr.of({2: 40 + 30 * 65, Q1: -64, Q2: -1}), c)
        for c in (1.0, 1.0 / 3.0, -0.027777777777777776, 1e6)
    ]
    want = [(s.rounding_error(c), s.rounded(c)) for s, c in cases]
    monkeypatch.setattr(ckks, "EXACT_SCALE_BITS", 0)
    assert [(s.rounding_error(c), s.rounded(c)) for s, c in cases] == want


def test_adding_values_whose_scales_differ_by_a_prime_ratio_is_rejected() -> None:
    lhs = f"!ckks.tensor<[N, M], packed, ct<0, {30 - math.log2(Q1)!r} exact<2:30, {Q1}:-1>, 1>>"
    rhs = f"!ckks.tensor<[N, M], packed, ct<0, {30 - math.log2(Q2)!r} exact<2:30, {Q2}:-1>, 1>>"
    body = (
        f"    %r1 = ckks.rescale %s {{divisor = #ckks.scale<{Q1}:1>}} : {CT} -> {lhs}\n"
        f"    %r2 = ckks.rescale %s {{divisor = #ckks.scale<{Q2}:1>}} : {CT} -> {rhs}\n"
        f"    %a = ckks.add %r1, %r2 : {lhs}, {rhs} -> {lhs}\n"
    )
    with pytest.raises(VerifyException, match=r"scales .* differ"):
        parse(body)
