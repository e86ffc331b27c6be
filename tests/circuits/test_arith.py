"""BFV bit-slice arithmetic circuits (compiler/circuits/arith.py): every operation exhaustively
over 8-bit operands against numpy (each value checked against its proven range by
`evaluate`), random 16- and 64-bit operands, and the depths issue 23 asks for next to the
seed's GF(2) constructions."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.circuits import arith
from compiler.circuits.arith import ArithCircuit
from compiler.circuits.generators import seed_multiplier_depth_bound

A8, B8 = (x.ravel() for x in np.meshgrid(np.arange(256), np.arange(256)))


def binary(op, width: int = 8, **kw) -> ArithCircuit:
    c = ArithCircuit()
    a, b = c.input("a", width), c.input("b", width)
    out = op(c, a, b, **kw)
    c.output("c", out if isinstance(out, list) else [out])
    return c


REFERENCES = {
    "add": (lambda c, a, b: arith.add(c, a, b)[0], lambda a, b: (a + b) % 256),
    "sub": (arith.subtract, lambda a, b: (a - b) % 256),
    "lt": (arith.less_than, lambda a, b: a < b),
    "eq": (arith.equal, lambda a, b: a == b),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_operation_is_exact_on_every_8_bit_pair(name: str) -> None:
    build, want = REFERENCES[name]
    got = binary(build).evaluate({"a": A8, "b": B8})["c"]
    assert np.array_equal(got.astype(np.int64), want(A8, B8).astype(np.int64))


@pytest.mark.parametrize("rounds", [0, 1, 2, 3])
def test_multiplier_is_exact_on_every_8_bit_pair_for_every_round_count(rounds: int) -> None:
    got = binary(arith.multiply, rounds=rounds).evaluate({"a": A8, "b": B8})["c"]
    assert np.array_equal(got.astype(np.int64), (A8 * B8) % 256)


def test_signed_less_than_on_every_8_bit_pair() -> None:
    got = binary(arith.less_than, signed=True).evaluate({"a": A8, "b": B8})["c"]
    sa, sb = A8.astype(np.int8), B8.astype(np.int8)
    assert np.array_equal(got.astype(bool), sa < sb)


def test_popcount_select_and_bitwise_gates() -> None:
    c = ArithCircuit()
    a, b, s = c.input("a", 8), c.input("b", 8), c.input("s", 1)
    c.output("pop", arith.popcount(c, a))
    c.output("sel", arith.select(c, s[0], a, b))
    c.output("or", [c.or_(x, y) for x, y in zip(a, b, strict=True)])
    c.output("xor", [c.xor(x, y) for x, y in zip(a, b, strict=True)])
    c.output("not", [c.not_(x) for x in a])
    sel = np.arange(A8.size) % 2
    got = c.evaluate({"a": A8, "b": B8, "s": sel})
    assert np.array_equal(got["pop"].astype(np.int64), [bin(int(x)).count("1") for x in A8])
    assert np.array_equal(got["sel"].astype(np.int64), np.where(sel == 1, A8, B8))
    assert np.array_equal(got["or"].astype(np.int64), A8 | B8)
    assert np.array_equal(got["xor"].astype(np.int64), A8 ^ B8)
    assert np.array_equal(got["not"].astype(np.int64), 255 - A8)


def test_wide_words_on_random_operands() -> None:
    rng = np.random.default_rng(23)
    a16, b16 = rng.integers(0, 1 << 16, 4000), rng.integers(0, 1 << 16, 4000)
    got = binary(arith.multiply, 16, rounds=arith_rounds(16)).evaluate({"a": a16, "b": b16})
    assert np.array_equal(got["c"].astype(np.int64), (a16 * b16) % (1 << 16))
    a64 = rng.integers(0, 2**63, 2000, dtype=np.int64).astype(np.uint64) * np.uint64(2) + 1
    b64 = rng.integers(0, 2**63, 2000, dtype=np.int64).astype(np.uint64) * np.uint64(3)
    add = binary(lambda c, a, b: arith.add(c, a, b)[0], 64)
    got64 = add.evaluate({"a": a64.view(np.int64), "b": b64.view(np.int64)})["c"]
    assert np.array_equal(got64, a64 + b64)  # uint64 wraps like the circuit
    lt = binary(arith.less_than, 64).evaluate({"a": a64.view(np.int64), "b": b64.view(np.int64)})
    assert np.array_equal(lt["c"].astype(bool), a64 < b64)


def arith_rounds(width: int) -> int:
    return int(arith.choose("mul", width).variant.split("/")[1])


def test_a_value_outside_its_proven_range_is_caught() -> None:
    c = ArithCircuit()
    a, b = c.input("a", 1), c.input("b", 1)
    wrong = c.lin([(1, a[0]), (1, b[0])], 0, (0, 1))  # claims a bit, is a count
    c.output("c", [wrong])
    with pytest.raises(AssertionError, match="proven range"):
        c.evaluate({"a": np.array([1]), "b": np.array([1])})


def test_depths_issue_23_asks_for() -> None:
    """16-bit addition <= 5 and 64-bit <= 7 (the seed's CLA over GF(2): 7 and 11), 16-bit
    multiplication <= the seed's formula (13)."""
    assert arith.choose("add", 16).cost.depth <= 5 < arith.seed_cla_depth(16) == 7
    assert arith.choose("add", 64).cost.depth <= 7 < arith.seed_cla_depth(64) == 11
    assert seed_multiplier_depth_bound(16) == 13
    assert arith.choose("mul", 16).cost.depth <= 13


def test_the_choice_names_every_candidate() -> None:
    choice = arith.choose("mul", 8)
    assert [v for v, _ in choice.candidates] == list(arith.VARIANTS["mul"])
    for variant, cost in choice.candidates:
        assert f"{variant}: depth {cost.depth}, {cost.products} products" in choice.reason
    assert min(k.key() for _, k in choice.candidates) == choice.cost.key()


def test_sum_identity_makes_sum_bits_free() -> None:
    """An adder costs one product per column plus its prefix: the sum bits add no product and
    no depth over the carries."""
    c = binary(lambda c, a, b: arith.add(c, a, b)[0], 16)
    carry_only = ArithCircuit()
    a, b = carry_only.input("a", 16), carry_only.input("b", 16)
    carry_only.output("c", [arith.add(carry_only, a, b)[1]])
    assert c.depth() == carry_only.depth() == 5
