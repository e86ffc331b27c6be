"""No traceback past the checker (issue 19): a property test over generated well-typed programs
(arithmetic DAGs, polynomials in every written form, reductions over either axis, products
and dot products of mixed shapes, public arrays and scalars, input ranges from 1e-6 to 1e12).
Compilation either succeeds or raises the project's located `UserError` (file:line:column);
a compiled program runs in the simulator with every revealed value inside the bound the report
states (range x 2^-precision_bits) in the noisy mode, and equal to the reference in the exact
mode. 200 programs in the fast tier, 2000 in the slow tier.

Failures that belong to other work in progress are listed in `KNOWN` with the reproducer of
each as a strict xfail below (the property test skips an example whose failure matches one;
when the fix lands, the xfail passes, fails strictly, and the entry goes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import UserError
from compiler.types import FiniteSet, domain_interval
from driver.pipeline import Options, report_of, run_pipeline, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

SIZES = "N=6,M=5"
Shape = tuple[str, ...]
SHAPES: list[Shape] = [(), ("N",), ("M",), ("N", "M")]


@dataclass(frozen=True)
class Known:
    """A failure owned by other work: the exception type and a message pattern."""

    kind: type[BaseException]
    pattern: str
    owner: str


KNOWN = [
    # The first modulus holds |x| * scale with no room for the sign at the range's edge.
    Known(Exception, r"decryption would wrap around", "scales19 (modulus sizing)"),
]


def _known(err: BaseException) -> Known | None:
    for k in KNOWN:
        if isinstance(err, k.kind) and re.search(k.pattern, str(err)):
            return k
    return None


def _magnitude(draw: st.DrawFn) -> float:
    return 10.0 ** draw(st.integers(-6, 12))


def _domain(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        values = sorted(set(draw(st.lists(st.integers(-3, 3), min_size=1, max_size=3))))
        return "{" + ", ".join(map(str, values)) + "}"
    m = _magnitude(draw)
    lo = draw(st.sampled_from([-m, 0.0, m / 2]))
    return f"[{lo!r}, {m!r}]"


def _constant(draw: st.DrawFn) -> str:
    c = draw(st.sampled_from([1.0, 2.0, 3.0, 0.5, -1.5, 0.1]))
    return repr(c * 10.0 ** draw(st.integers(-3, 3)))


class _Writer:
    def __init__(self, draw: st.DrawFn, names: dict[str, Shape]):
        self.draw = draw
        self.names = names

    def leaf(self, shape: Shape) -> str:
        names = [n for n, s in self.names.items() if s == shape]
        if not shape and (not names or self.draw(st.booleans())):
            return self.draw(st.sampled_from(["N", "M", _constant(self.draw)]))
        return self.draw(st.sampled_from(names))

    def poly(self, x: str) -> str:
        d = self.draw(st.integers(2, 9))
        cs = [_constant(self.draw) for _ in range(d + 1)]
        match self.draw(st.sampled_from(["poly", "horner", "power"])):
            case "poly":
                return f"poly({x}, [{', '.join(cs)}])"
            case "horner":
                body = cs[d]
                for k in range(d - 1, -1, -1):
                    body = f"{cs[k]} + {x} * ({body})"
                return f"({body})"
            case _:
                terms = [cs[0], f"{cs[1]} * {x}"] + [f"{cs[k]} * {x}^{k}" for k in range(2, d + 1)]
                return "(" + " + ".join(terms) + ")"

    def expr(self, shape: Shape, depth: int) -> str:
        if depth <= 0:
            return self.leaf(shape)
        e = lambda s: self.expr(s, depth - 1)  # noqa: E731
        kinds = ["leaf", "add", "mul", "scale", "neg", "pow", "poly", "sum", "div"]
        if shape in ((), ("N",), ("M",)):
            kinds.append("dot")
        kind = self.draw(st.sampled_from(kinds))
        op = self.draw(st.sampled_from(["+", "-"]))
        match kind:
            case "leaf":
                return self.leaf(shape)
            case "add":
                return f"({e(shape)} {op} {e(shape)})"
            case "mul":
                return f"({e(shape)} * {e(shape)})"
            case "scale":
                return f"({e(())} * {e(shape)})"
            case "neg":
                return f"-{e(shape)}"
            case "pow":
                return f"({e(shape)})^{self.draw(st.integers(2, 5))}"
            case "poly":
                return self.poly(self.leaf(shape))
            case "div":
                return f"({e(shape)} / {self.draw(st.sampled_from(['N', '2', '(M + 1)']))})"
            case "sum":
                func = self.draw(st.sampled_from(["sum", "mean"]))
                if shape == ():
                    whole = self.draw(st.sampled_from(SHAPES[1:]))
                    return f"{func}({e(whole)})"
                if shape == ("N", "M"):
                    return self.leaf(shape)
                axis = 1 if shape == ("N",) else 0
                return f"{func}({e(('N', 'M'))}, axis={axis})"
            case _:  # dot products and matrix-vector products
                if shape == ():
                    v = self.draw(st.sampled_from([("N",), ("M",)]))
                    return f"({e(v)} @ {e(v)})"
                if shape == ("M",):
                    return f"({e(('N',))} @ {e(('N', 'M'))})"
                return f"({e(('N', 'M'))} @ {e(('M',))})"


@st.composite
def programs(draw: st.DrawFn) -> str:
    lines = ["param N <= 64", "param M <= 32"]
    names: dict[str, Shape] = {}
    for i, shape in enumerate(SHAPES):
        dims = f"[{', '.join(shape)}]" if shape else ""
        lines.append(f"input s{i}: secret{dims} in {_domain(draw)}")
        names[f"s{i}"] = shape
        if draw(st.integers(0, 3)) == 0:
            lines.append(f"input p{i}: public{dims} in {_domain(draw)}")
            names[f"p{i}"] = shape
    writer = _Writer(draw, names)
    for i in range(draw(st.integers(0, 3))):
        shape = draw(st.sampled_from(SHAPES))
        lines.append(f"t{i} = {writer.expr(shape, draw(st.integers(1, 3)))}")
        names[f"t{i}"] = shape
    for i in range(draw(st.integers(1, 2))):
        shape = draw(st.sampled_from(SHAPES))
        lines.append(f"reveal r{i} = {writer.expr(shape, draw(st.integers(1, 3)))}")
    return "\n".join(lines) + "\n"


def _note(text: str) -> None:
    """hypothesis's note inside a property test; nothing in the plain reproducers below."""
    if currently_in_test_context():
        note(text)


def _tolerate_known(err: Exception) -> None:
    """Re-raise `err` unless it is a known failure owned by other work (noted, then ignored)."""
    known = _known(err)
    if known is None:
        raise err
    _note(f"known failure ({known.owner}): {err}")


def _check_program(text: str, seed: int) -> None:
    _note(text)
    try:
        checked = check(parse_program(text, "generated.hec"))
    except UserError as err:
        assert err.location is not None, str(err)
        return
    try:
        # Single-party compiles (as hec run): with decrypt's flooding budgeted the promised
        # bits approach what the simulator's own float64 arithmetic can check (2^-53).
        comp = run_pipeline(checked, Options(sizes=Sizes.parse(SIZES), flooding=False))
    except UserError as err:
        assert err.location is not None and err.location.line_text, f"unlocated: {err}"
        return
    except Exception as err:
        _tolerate_known(err)
        return
    sizes = sizes_for_run(comp)
    inputs = random_inputs(comp.program, sizes, seed=seed)
    rng = np.random.default_rng(seed)
    for name, b in checked.bindings.items():
        if b.kind == "input" and name not in inputs:  # declared, unused by the server
            shape = [d if isinstance(d, int) else sizes[d] for d in b.ty.shape]
            if isinstance(b.domain, FiniteSet):
                inputs[name] = rng.choice(np.array(b.domain.values), size=shape)
            else:
                assert b.domain is not None
                box = domain_interval(b.domain)
                inputs[name] = rng.uniform(box.lo, box.hi, size=shape)
    reference = evaluate(checked, sizes, inputs)
    try:
        exact = simulate(comp.program, sizes, inputs)
        noisy = simulate(comp.program, sizes, inputs, noisy=True, seed=seed + 1)
    except Exception as err:
        _tolerate_known(err)
        return
    for out in report_of(comp)["outputs"]:
        name = out["name"]
        want = np.asarray(reference.revealed[name], dtype=np.float64)
        span = max(abs(out["range"][0]), abs(out["range"][1]))
        assert np.all(np.abs(want) <= span * (1 + 1e-9) + 1e-300), f"{name} outside its range"
        scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-300)
        assert np.max(np.abs(exact.outputs[name] - want), initial=0.0) <= 1e-8 * scale, name
        if span == 0.0:
            continue  # identically zero (x - x): a bound relative to the range says nothing
        # The reference and the simulator compute in float64: their sums of up to 64 terms
        # may differ by 2 * 64 * 2^-53 of the range, which a bound promising more bits than
        # that cannot be checked below (the slow tier found `sum(p3, axis=1)` over ranges of
        # 1e11 promised to 2^-60 and differing by one float64 ulp).
        bound = span * max(2.0 ** -out["precision_bits"], 2.0**-46)
        err = float(np.max(np.abs(noisy.outputs[name] - want), initial=0.0))
        assert err <= bound, f"{name}: error {err:.3g} above the reported bound {bound:.3g}"


COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


@settings(max_examples=200, **COMMON)
@given(programs(), st.integers(0, 2**16))
def test_generated_programs_compile_or_fail_located_and_keep_their_bounds(
    text: str, seed: int
) -> None:
    _check_program(text, seed)


@pytest.mark.slow
@settings(max_examples=2000, **COMMON)
@given(programs(), st.integers(0, 2**16))
def test_generated_programs_slow_tier(text: str, seed: int) -> None:
    _check_program(text, seed)


def test_high_power_is_compiled_or_refused_located() -> None:
    """x^40 over [-1e6, 1e6] overflowed in noise.py (2^const_scale_bits beyond 2^1023, issue 19
    fact 2); with exact scales it is refused with a located message naming the output."""
    text = "param N <= 64\ninput x: secret[N] in [-1000000, 1000000]\nreveal p = x^40 + x\n"
    with pytest.raises(UserError) as info:
        run_pipeline(check(parse_program(text, "high.hec")), Options(sizes=Sizes.parse("N=6")))
    assert str(info.value).startswith("high.hec:3:1: error: no CKKS parameters")
    assert "the deepest output is p" in str(info.value)


def test_slot_sum_noise_within_its_bound() -> None:
    """`sum(s, axis=1)` exceeded its bound 1.5-6x: the noise model counted a slot sum as k
    terms and log2(k) key switches, while the rotation tree sums every slot (the padding's
    noise too) and each key switch is summed again by the later steps."""
    text = "param N <= 64\nparam M <= 32\ninput s: secret[N, M] in [-1, 1]\n"
    bounds = []
    for seed in range(4):
        checked = check(parse_program(text + "reveal r = sum(s, axis=1)\n", "sum.hec"))
        comp = run_pipeline(checked, Options(sizes=Sizes.parse(SIZES)))
        (out,) = report_of(comp)["outputs"]
        sizes = sizes_for_run(comp)
        inputs = random_inputs(comp.program, sizes, seed=seed)
        want = evaluate(checked, sizes, inputs).revealed["r"]
        got = simulate(comp.program, sizes, inputs, noisy=True, seed=seed + 1).outputs["r"]
        bounds.append(float(np.max(np.abs(got - want))) / 2.0 ** -out["precision_bits"])
    assert max(bounds) <= 1.0, f"errors up to {max(bounds):.2f} x the bound"


def test_encryption_at_the_range_edge_does_not_wrap() -> None:
    """The noisy simulation of an encryption of 1 at scale 2^36 under a 37-bit Q_0 wrapped
    (found by this test); the relational range analysis's bounds and the exact scales fixed it."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s0: secret in [0.05, 0.1]\n"
        "input s1: secret[N] in [0.0, 0.001]\ninput s2: secret[M] in [-10000.0, 10000.0]\n"
        "input s3: secret[N, M] in {1}\nt0 = (s0 + 300.0)\nreveal r0 = (M * s3)\n"
    )
    _check_program(text, 2)


def test_located_refusal_has_file_line_and_column() -> None:
    text = "param N <= 64\ninput x: secret[N] in [-1e12, 1e12]\nreveal p = x^16 + x\n"
    checked = check(parse_program(text, "big.hec"))
    with pytest.raises(UserError) as info:
        run_pipeline(checked, Options(sizes=Sizes.parse("N=6")))
    assert str(info.value).startswith("big.hec:3:1: error: no CKKS parameters")
    assert "the deepest output is p" in str(info.value)


def test_alignment_keeps_an_input_above_the_scale_floor() -> None:
    """Found by the property test after the merge of exact scales and relational ranges: a
    product of range ~1e66 added to a small input left an input of the product encrypted at
    scale 2^0 (check-scales refused it with an InternalError): the alignment moved the whole
    ratio of the two operands' scales (2^51 times a ratio of primes) into that input's
    encoding, where only the ratio of primes needed moving (a lift by 2^51 is exact)."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s0: secret in [-100000000000.0, 100000000000.0]\n"
        "input s1: secret[N] in [-0.01, 0.01]\ninput p1: public[N] in {-1}\n"
        "input s2: secret[M] in {1, 3}\n"
        "t0 = (((p1 @ s1) * (300.0 * s0)) * ((s0)^3 * (s0 * s2)))\nreveal r0 = (s2 + t0)\n"
    )
    comp = run_pipeline(check(parse_program(text, "floor.hec")), Options(sizes=Sizes.parse(SIZES)))
    scales = [ckks.ct_type(e.result).scale_bits for e in comp.program.encrypts()]
    assert min(scales) > 50.0, scales
    _check_program(text, 3)  # and it keeps its bounds in the noisy simulation


def test_wide_horner_keeps_its_rescales_above_the_floor() -> None:
    """Found by the slow tier: a degree-9 Horner form over [-1e6, 1e6] ended in InternalError
    (check-scales: ckks.rescale has scale 2^-2.0 < 2^8): scale alignment folded a large ratio
    into the higher operand's constant, lowering it below what its later rescales need."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s2: secret[M] in [-1000000.0, 1000000.0]\n"
        "reveal r0 = (10.0 + s2 * (0.0005 + s2 * (0.002 + s2 * (0.1 + s2 * (0.05 + s2 * "
        "(100.0 + s2 * (0.0001 + s2 * (0.1 + s2 * (0.1 + s2 * (500.0))))))))))\n"
    )
    _check_program(text, 65536)


def test_adj_of_a_small_matrix_minus_the_matrix_is_not_a_verify_error() -> None:
    """Found by the slow statistical test: `adj(x6) - x6` lowered the matrix twice, replicated
    for adj and packed for the subtraction, and the he verifier rejected the subtraction (an
    xDSL VerifyException traceback at compile). A small matrix is now replicated throughout."""
    text = (
        "param K <= 2\ninput x6: public[K, K] in {-1}\nt1 = (adj(x6) - x6)\n"
        "reveal r1 = (t1 / 0.5)\n"
    )
    checked = check(parse_program(text, "adjsub.hec"))
    comp = run_pipeline(checked, Options(sizes=Sizes.parse("K=2"), flooding=False))
    layouts = {ckks.ct_type(e.result).layout_name for e in comp.program.encrypts()}
    assert layouts == {"replicated"}, layouts
    sizes = sizes_for_run(comp)
    inputs = {"x6": -np.ones((2, 2))}
    want = evaluate(checked, sizes, inputs).revealed["r1"]
    assert np.array_equal(want, [[0.0, 4.0], [4.0, 0.0]])
    got = simulate(comp.program, sizes, inputs, noisy=True, seed=1).outputs["r1"]
    (out,) = report_of(comp)["outputs"]
    assert np.max(np.abs(got - want)) <= 4.0 * 2.0 ** -out["precision_bits"]


def test_precision_shortfall_after_the_retries_is_located() -> None:
    """Found by the slow tier: when the raised scale targets still fall short under the primes
    found, the refusal had no location (file, line and column of the output it names)."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s0: secret in {0, 2}\n"
        "input s1: secret[N] in [500.0, 1000.0]\n"
        "t1 = (0.002 + 100.0 * s1 + 0.2 * s1^2 + 0.5 * s1^3 + -1500.0 * s1^4 + 50.0 * s1^5"
        " + 0.02 * s1^6)\n"
        "reveal r0 = poly(t1, [0.2, 0.0001, 1000.0, 0.2])\nreveal r1 = (s0 * N)\n"
    )
    checked = check(parse_program(text, "short.hec"))
    with pytest.raises(UserError) as info:
        run_pipeline(checked, Options(sizes=Sizes.parse(SIZES), flooding=False))
    assert str(info.value).startswith("short.hec:6:1: error: no parameters keep the precision")
    assert info.value.location is not None and info.value.location.line_text


def test_a_public_sum_promised_beyond_float64_is_checked_to_float64() -> None:
    """Found by the slow tier: the reference and the simulator of `sum(p3, axis=1)` over
    values near 1e11 differed by one float64 ulp (3e-5) under a bound of 2.4e-6 (the report's
    2^-60 of the range): the check now stops at float64's resolution."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s0: secret in {2}\n"
        "input p3: public[N, M] in [-100000000000.0, 100000000000.0]\n"
        "reveal r0 = sum(p3, axis=1)\n"
        "reveal r1 = -((0.3 + s0 * (0.01 + s0 * (0.001 + s0 * (0.03 + s0 * (20.0 + s0 * 10.0)))))"
        " * mean(p3, axis=0))\n"
    )
    _check_program(text, 10496)


def test_scales_stay_below_what_the_runtime_holds() -> None:
    """Found by the slow tier: tiny values raised to a degree-8 polynomial were planned at scale
    2^1076, beyond a double (the runtime's scale became inf; the simulator refused it as a
    compiler/runtime mismatch). Plans over 2^1000 are discarded: compiled or refused, located."""
    text = (
        "param N <= 64\nparam M <= 32\ninput s1: secret[N] in [-1e-05, 1e-05]\n"
        "input s3: secret[N, M] in [-10000.0, 10000.0]\nt2 = (s1 / N)\n"
        "reveal r0 = -(t2)^3\n"
        "reveal r1 = (poly(t2, [0.01, 300.0, 0.2, 10.0, 300.0, -0.015, 0.003, -1500.0, 2000.0])"
        " @ (s3 - s3))\n"
    )
    _check_program(text, 1)
