"""Property-based tests (hypothesis): random well-formed programs parse, check, lower, verify
and round-trip through the MLIR text, and the lowered IR computes what the source says;
random bytes, token soup and truncated programs never crash the front end (they either pass
or raise a located `UserError`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from compiler.dialects import stat
from compiler.errors import UserError
from compiler.stat_numpy import run_program
from compiler.types import FiniteSet, Interval
from dsl.checker import CheckedProgram, check
from dsl.lower import lower, parse_ir, print_ir
from dsl.parser import parse_bytes, parse_program
from dsl.reference import evaluate
from tests.dsl.programs import TOKENS, Generated, programs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TEXTS = [p.read_text() for p in sorted((ROOT / "examples").rglob("*.hec"))]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(programs())
def test_random_programs_check_lower_and_round_trip(program: Generated) -> None:
    checked = check(parse_program(program.text, "random.hec"))
    module = lower(checked)
    text = print_ir(module)
    reparsed = parse_ir(text)
    assert reparsed.is_structurally_equivalent(module)
    assert print_ir(reparsed) == text
    generic = parse_ir(print_ir(module, generic=True))
    assert generic.is_structurally_equivalent(module)


def _random_inputs(
    checked: CheckedProgram, sizes: dict[str, int], rng: np.random.Generator
) -> dict[str, npt.NDArray[np.float64]]:
    inputs = {}
    for name, binding in checked.bindings.items():
        if binding.kind != "input":
            continue
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in binding.ty.shape)
        domain = binding.domain
        if isinstance(domain, FiniteSet):
            inputs[name] = rng.choice(np.asarray(domain.values), size=shape)
        else:
            assert isinstance(domain, Interval)
            inputs[name] = rng.uniform(domain.lo, domain.hi, size=shape)
    return inputs


def _close(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    finite = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        # Overflow to inf or nan at slightly different points is rounding, not meaning.
        return bool(np.all(np.abs(a[finite]) > 1e250) or np.all(~finite | (np.abs(a) > 1e250)))
    scale = max(1.0, float(np.max(np.abs(a[finite]), initial=0.0)))
    return bool(np.all(np.abs(a[finite] - b[finite]) <= 1e-7 * scale))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32 - 1))
def test_lowered_ir_computes_what_the_source_says(program: Generated, seed: int) -> None:
    # det/adj use different algorithms in the two evaluators (LU vs cofactors) and can differ
    # by rounding on ill-conditioned random matrices; test_reference covers them.
    assume(not program.uses_small_matrix)
    checked = check(parse_program(program.text, "random.hec"))
    rng = np.random.default_rng(seed)
    sizes = {
        name: int(rng.integers(1, min(bound, 5) + 1)) for name, bound in checked.params.items()
    }
    inputs = _random_inputs(checked, sizes, rng)
    reference = evaluate(checked, sizes, inputs)
    prog = lower(checked).ops.first
    assert isinstance(prog, stat.ProgramOp)
    ir = run_program(prog, sizes, inputs)
    for kind, ref, got in (
        ("revealed", reference.revealed, ir.revealed),
        ("client", reference.client, ir.client),
    ):
        assert ref.keys() == got.keys()
        for key in ref:
            assert _close(ref[key], got[key]), f"{kind} {key}: {ref[key]} != {got[key]}"


def _front_end(text: str) -> None:
    """Everything a `hec ir` run does; anything but a UserError is a crash."""
    try:
        module = lower(check(parse_program(text, "fuzz.hec")))
    except UserError as err:
        rendered = str(err)
        assert "error:" in rendered
        if err.location is not None:
            assert f"fuzz.hec:{err.location.line}:{err.location.column}" in rendered
        return
    parse_ir(print_ir(module))


@FAST
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(data: bytes) -> None:
    try:
        program = parse_bytes(data, "fuzz.hec")
    except UserError:
        return
    _front_end(program.source.text)


@FAST
@given(st.text(max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    _front_end(text)


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_never_crashes(tokens: list[str]) -> None:
    _front_end(" ".join(tokens))


@FAST
@given(st.sampled_from(EXAMPLE_TEXTS), st.data())
def test_truncated_examples_never_crash(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(text)))
    _front_end(text[:cut])


@FAST
@given(programs(), st.data())
def test_truncated_random_programs_never_crash(program: Generated, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(program.text)))
    _front_end(program.text[:cut])


@FAST
@given(st.sampled_from(EXAMPLE_TEXTS), st.data())
def test_mutated_examples_never_crash(text: str, data: st.DataObject) -> None:
    # Replace one token-sized slice by another piece of the language.
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 8)))
    _front_end(text[:start] + data.draw(st.sampled_from(TOKENS)) + text[end:])
