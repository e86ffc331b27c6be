# ruff: noqa: E501  (the cases are lines of MLIR text, kept whole to stay readable)
"""The `ckks` dialect: MLIR text round trips, and the verifier rejects IR that breaks the
scheme's rules (each case names the rule)."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from compiler.analysis.sizes import Sizes
from compiler.dialects.ckks import Ckks
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
            "    %r = ckks.rescale %d {divisor = 3.0e+01 : f64} : !ckks.tensor<[N, M], packed, "
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
