"""Owner-side precomputation and packed counts: the verifiers refuse what no single owner can
compute, and on random programs the passes never move a reduction over the individuals or a
value that combines two owners' rows, and never change what a program computes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from compiler.dialects import stat
from compiler.owner_expr import parse
from compiler.stat_numpy import run_program
from compiler.types import FiniteSet
from dsl.checker import check
from dsl.lower import lower
from dsl.parser import parse_program
from passes.owner_side import OwnerSidePass, row_axis
from passes.packed_counts import PackedCountsPass
from passes.range_analysis import RangeAnalysisPass
from tests.dsl.programs import Generated, programs
from tests.dsl.test_properties import _random_inputs

SIZES = {"N": 7, "M": 5, "K": 3}


def _module(text: str) -> ModuleOp:
    module = lower(check(parse_program(text, "t.hec")))
    RangeAnalysisPass(sizes="N=7,M=5,K=3").apply(Context(), module)
    return module


def _program(module: ModuleOp) -> stat.ProgramOp:
    op = module.body.block.first_op
    assert isinstance(op, stat.ProgramOp)
    return op


def _reveals(module: ModuleOp, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return run_program(_program(module), SIZES, inputs).revealed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_moves_keep_meaning_and_never_cross_rows(program: Generated) -> None:
    checked = check(parse_program(program.text, "random.hec"))
    before = _module(program.text)
    after = before.clone()
    # Every candidate moved (not only those the cost model keeps), then packed counts.
    OwnerSidePass().run(_program(after))
    PackedCountsPass(sizes="N=7,M=5,K=3").apply(Context(), after)
    after.verify()
    prog = _program(after)
    row = row_axis(prog)
    for op in prog.walk():
        if isinstance(op, stat.OwnerComputeOp):
            for src in op.sources():  # only the owner's own input rows, never a reduction
                ty = stat.tensor_type(src.result)
                assert ty.is_secret and ty.dims[0] == row
            assert "sum" not in op.expr_value and "mean" not in op.expr_value
    rng = np.random.default_rng(5)
    inputs = _random_inputs(checked, SIZES, rng)
    want, got = _reveals(before, inputs), _reveals(after, inputs)
    for name, w in want.items():
        g = got[name]
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
        assert np.all(np.isnan(g) == np.isnan(w)), name
        assert float(np.nanmax(np.abs(g - w), initial=0.0)) <= 1e-9 * scale, name


CHISQ = """
param N <= 100
param M <= 50
input y: secret[N] in {0, 1}
input S: secret[N, M] in {0, 1, 2}
input x: secret[N] in [0.0, 1.0]
reveal n11 = y @ S
reveal m = sum(x - mean(x))
"""


def test_owner_value_of_a_cross_row_value_is_refused() -> None:
    """Regression guard for the verifier: an owner-side value whose operand is a mean (a value
    of every row) would let one owner compute with the others' data."""
    module = _module(CHISQ)
    prog = _program(module)
    spread = next(
        op
        for op in prog.walk()
        if isinstance(op, stat.BroadcastOp) and isinstance(op.input.owner, stat.MeanOp)
    )  # mean(x) in every row: a value of all rows
    ty = stat.tensor_type(spread.result)
    bad = stat.OwnerComputeOp("bad", [spread.result], "x", FiniteSet((0.0,)), ty)
    prog.block.insert_op_after(bad, spread)
    with pytest.raises(VerifyException, match="not an input of the data owner"):
        module.verify()


def test_owner_value_on_another_row_axis_is_refused() -> None:
    module = _module(CHISQ)
    prog = _program(module)
    S = next(op for op in prog.inputs() if op.sym_value == "S")
    ty = stat.TensorType.get(("M", "N"), True)
    bad = stat.OwnerComputeOp("bad", [S.result], "S", FiniteSet((0.0,)), ty)
    prog.block.insert_op_after(bad, S)
    with pytest.raises(VerifyException, match="row"):
        module.verify()


def test_owner_expression_must_name_its_operands() -> None:
    module = _module(CHISQ)
    prog = _program(module)
    S = next(op for op in prog.inputs() if op.sym_value == "S")
    bad = stat.OwnerComputeOp(
        "bad", [S.result], "(mul y S)", FiniteSet((0.0,)), stat.tensor_type(S.result)
    )
    prog.block.insert_op_after(bad, S)
    with pytest.raises(VerifyException, match="uses"):
        module.verify()


def test_packed_sum_radix_must_exceed_one() -> None:
    module = _module(CHISQ)
    prog = _program(module)
    S = next(op for op in prog.inputs() if op.sym_value == "S")
    bad = stat.PackedSumOp([S.result], [1])
    prog.block.insert_op_after(bad, S)
    with pytest.raises(VerifyException, match="radix"):
        module.verify()


def test_owner_expressions_round_trip_and_evaluate() -> None:
    e = parse("(mul y (sub 2 (pow S 2)))")
    assert parse(e.text()) == e
    assert e.sources() == ["y", "S"]
    y = np.array([1.0, 0.0])
    S = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
    assert np.array_equal(e.evaluate({"y": y, "S": S}, 2), y[:, None] * (2 - S**2))
    dom = e.domain({"y": FiniteSet((0.0, 1.0)), "S": FiniteSet((0.0, 1.0, 2.0))})
    assert dom == FiniteSet((-2.0, 0.0, 1.0, 2.0))
    for bad in ("(mul y)", "(frob y S)", "(mul y S", "(pow S)"):
        with pytest.raises(ValueError):
            parse(bad)
