"""The `stat` dialect: types and attributes print and parse, Python accessors read shapes and
attributes, and the verifier rejects each malformed program with a message naming the problem."""

# ruff: noqa: E501  (tables of source lines and MLIR text read best unwrapped)

from __future__ import annotations

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from compiler.dialects import stat
from compiler.types import FiniteSet, Interval
from dsl.lower import parse_ir, print_ir, stat_context

PRELUDE = """builtin.module {
  stat.program "t" {
    stat.param "N" {bound = 100 : i64}
    stat.param "K" {bound = 3 : i64}
    %s = stat.input "s" {domain = #stat.interval<-1.5, 2.0>} : !stat.tensor<[N], secret>
    %m = stat.input "m" {domain = #stat.set<0.0, 1.0, 2.0>} : !stat.tensor<[N, K], secret>
    %p = stat.input "p" : !stat.tensor<[N], public>
"""
EPILOGUE = """  }
}
"""


def program(body: str) -> str:
    return PRELUDE + body + EPILOGUE


def test_valid_program_round_trips_and_exposes_attributes() -> None:
    text = program(
        """    %0 = stat.matmul %s, %m : !stat.tensor<[N], secret>, !stat.tensor<[N, K], secret> -> !stat.tensor<[K], secret>
    %1 = stat.poly %0 {coefficients = array<f64: 0.5, 0.15625>} : !stat.tensor<[K], secret> -> !stat.tensor<[K], secret>
    %2 = stat.sum %m {axes = array<i64: 0, 1>} : !stat.tensor<[N, K], secret> -> !stat.tensor<[], secret>
    %3 = stat.reveal "r" %1 : !stat.tensor<[K], secret> -> !stat.tensor<[K], public>
    stat.client {
      %4 = stat.chi2_sf %3 {df = 2 : i64} : !stat.tensor<[K], public> -> !stat.tensor<[K], public>
      stat.output "q" %4 : !stat.tensor<[K], public>
    }
"""
    )
    module = parse_ir(text)
    assert parse_ir(print_ir(module)).is_structurally_equivalent(module)
    prog = module.ops.first
    assert isinstance(prog, stat.ProgramOp)
    assert prog.params() == {"N": 100, "K": 3}
    s, m, p = prog.inputs()
    assert s.domain_value == Interval(-1.5, 2.0)
    assert m.domain_value == FiniteSet((0.0, 1.0, 2.0))
    assert p.domain_value is None
    ty = stat.tensor_type(m.result)
    assert ty.dims == ("N", "K") and ty.is_secret and ty.rank == 2
    ops = list(prog.server_ops())
    poly = next(op for op in ops if isinstance(op, stat.PolyOp))
    assert poly.coefficient_values == (0.5, 0.15625)
    total = next(op for op in ops if isinstance(op, stat.SumOp))
    assert total.axes_tuple == (0, 1)
    assert [r.sym_value for r in prog.reveals()] == ["r"]
    client = prog.client()
    assert client is not None
    (out,) = client.outputs()
    assert out.sym_value == "q"
    chi2 = next(op for op in client.block.ops if isinstance(op, stat.Chi2SfOp))
    assert chi2.df_value == 2


def test_types_and_attributes_print_as_expected() -> None:
    assert str(stat.TensorType.get(("N", 3), True)) == "!stat.tensor<[N, 3], secret>"
    assert str(stat.TensorType.get((), False)) == "!stat.tensor<[], public>"
    assert str(stat.SetAttr.get([0, 1, 2])) == "#stat.set<0.0, 1.0, 2.0>"
    assert str(stat.IntervalAttr.get(-4, 1e30)) == "#stat.interval<-4.0, 1.0e+30>"
    assert stat.format_float(1e-300) == "1.0e-300"
    with pytest.raises(ValueError, match="non-finite"):
        stat.format_float(float("inf"))


BAD = [
    # elementwise ops need equal shapes
    (
        "%0 = stat.add %s, %p : !stat.tensor<[N], secret>, !stat.tensor<[N], public> -> !stat.tensor<[N], public>",
        "result must be secret",
    ),
    (
        "%0 = stat.mul %s, %m : !stat.tensor<[N], secret>, !stat.tensor<[N, K], secret> -> !stat.tensor<[N], secret>",
        "rhs has shape [N, K], expected [N]",
    ),
    # division by a secret, public-only functions
    (
        "%0 = stat.div %p, %s : !stat.tensor<[N], public>, !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "the divisor of stat.div must be public",
    ),
    (
        "%0 = stat.sqrt %s : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "the operand of stat.sqrt must be public",
    ),
    # matmul, reductions, broadcast, transpose, small matrices
    (
        "%0 = stat.matmul %m, %s : !stat.tensor<[N, K], secret>, !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "cannot multiply [N, K] @ [N]",
    ),
    (
        "%0 = stat.sum %m {axes = array<i64: 2>} : !stat.tensor<[N, K], secret> -> !stat.tensor<[N, K], secret>",
        "axes [2] must be distinct, sorted, < 2",
    ),
    (
        "%0 = stat.broadcast %s {dims = array<i64: 1>} : !stat.tensor<[N], secret> -> !stat.tensor<[N, K], secret>",
        "operand axis 0 (N) cannot broadcast to result axis 1 (K)",
    ),
    (
        "%0 = stat.transpose %s : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "transpose needs a matrix",
    ),
    (
        "%0 = stat.det %m : !stat.tensor<[N, K], secret> -> !stat.tensor<[], secret>",
        "needs a k x k matrix, got [N, K]",
    ),
    (
        "%0 = stat.pow %s {exponent = 0 : i64} : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "exponent must be >= 1",
    ),
    (
        "%0 = stat.poly %s {coefficients = array<f64>} : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "poly needs at least one coefficient",
    ),
    # program-level invariants
    (
        '%0 = stat.input "z" : !stat.tensor<[N], secret>',
        "secret input z has no value domain",
    ),
    (
        '%0 = stat.input "z" {domain = #stat.interval<0.0, 1.0>} : !stat.tensor<[Q], secret>',
        "dimension Q is not a declared stat.param",
    ),
    ('%0 = stat.size "Q" : !stat.tensor<[], public>', "stat.size of undeclared parameter Q"),
    ('stat.param "N" {bound = 5 : i64}', "name 'N' is declared twice"),
    (
        "%0 = stat.mul %m, %m : !stat.tensor<[N, K], secret>, !stat.tensor<[N, K], secret> -> !stat.tensor<[N, K], secret>\n"
        '    %1 = stat.input "big" {domain = #stat.interval<0.0, 1.0>} : !stat.tensor<[N, N], secret>\n'
        "    %2 = stat.det %1 : !stat.tensor<[N, N], secret> -> !stat.tensor<[], secret>",
        "needs N <= 6, but its bound is 100",
    ),
    (
        '%0 = stat.reveal "r" %s : !stat.tensor<[N], secret> -> !stat.tensor<[N], public>\n'
        "    %1 = stat.add %0, %p : !stat.tensor<[N], public>, !stat.tensor<[N], public> -> !stat.tensor<[N], public>",
        "revealed value 'r' is used outside stat.client",
    ),
    (
        "stat.client {\n"
        "      %0 = stat.neg %s : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>\n"
        "    }",
        "must be public",
    ),
    (
        "stat.client {\n"
        '      stat.output "o" %p : !stat.tensor<[N], public>\n'
        "    }\n"
        "    %0 = stat.neg %s : !stat.tensor<[N], secret> -> !stat.tensor<[N], secret>",
        "at most one stat.client, and it must be the last op",
    ),
    ('stat.output "o" %p : !stat.tensor<[N], public>', "expects parent op 'stat.client'"),
]


@pytest.mark.parametrize(("body", "message"), BAD)
def test_verifier_rejects(body: str, message: str) -> None:
    with pytest.raises(VerifyException, match=None) as info:
        parse_ir(program("    " + body + "\n"))
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!stat.tensor<[N, M, K], secret>", "rank at most 2"),
        ("!stat.tensor<[N], hidden>", "secret"),
        ("!stat.tensor<[0], public>", "literal dimension must be >= 1"),
        ("#stat.interval<2.0, 1.0>", "empty interval"),
        ("#stat.set<1.0, 0.0>", "sorted and distinct"),
    ],
)
def test_malformed_types_and_attributes(text: str, message: str) -> None:
    ir = f'builtin.module {{\n  "test.op"() {{a = {text}}} : () -> ()\n}}\n'
    ctx = stat_context()
    ctx.allow_unregistered = True
    with pytest.raises((VerifyException, ParseError)) as info:
        Parser(ctx, ir).parse_module().verify()
    assert message in str(info.value), str(info.value)


def test_empty_program_and_region_round_trip() -> None:
    module = parse_ir('builtin.module {\n  stat.program "e" {\n  }\n}\n')
    prog = module.ops.first
    assert isinstance(prog, stat.ProgramOp)
    assert prog.params() == {} and prog.client() is None
    assert parse_ir(print_ir(module)).is_structurally_equivalent(module)
