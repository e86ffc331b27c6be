"""Every generator against Python integer arithmetic in the simulator: exhaustively for 8-bit
operands (all 65,536 pairs), on random operands for 16, 32 and 64 bits; and its bad parameters
rejected with a clear error."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from compiler.circuits import generators as gen
from compiler.circuits.netlist import Circuit
from compiler.errors import UserError

RNG = np.random.default_rng(23)


def operands(width: int) -> tuple[np.ndarray, np.ndarray]:
    """All pairs for 8 bits, 2,000 random pairs (with the extremes) otherwise."""
    if width <= 8:
        v = np.arange(1 << width, dtype=object)
        return np.repeat(v, 1 << width), np.tile(v, 1 << width)
    edge = [0, 1, (1 << width) - 1, 1 << (width - 1), (1 << (width - 1)) - 1]
    rand = [int.from_bytes(RNG.bytes(8), "little") % (1 << width) for _ in range(4000)]
    a = np.array(edge * len(edge) + rand[:2000], dtype=object)
    b = np.array([e for e in edge for _ in edge] + rand[2000:], dtype=object)
    return a, b


def signed(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) else v


def check(c: Circuit, width: int, ref: Callable[[int, int], dict[str, int]]) -> None:
    a, b = operands(width)
    got = c.simulate({"a": a, "b": b})
    for name in got:
        want = [ref(int(x), int(y))[name] for x, y in zip(a, b, strict=True)]
        assert [int(v) for v in got[name]] == want, name


WIDTHS = [8, 16, 32, 64]
ADDERS = [("ripple", 4), ("cla", 1), ("cla", 2), ("cla", 4), ("cla", 8)] + [
    (p, 4) for p in gen.PREFIX
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("adder", "block"), ADDERS)
def test_adders(width: int, adder: str, block: int) -> None:
    m = (1 << width) - 1
    check(gen.build_adder(width, adder, block), width, lambda x, y: {"c": (x + y) & m})


@pytest.mark.parametrize("width", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("adder", ["ripple", *gen.PREFIX])
def test_adders_of_odd_widths_exhaustively(width: int, adder: str) -> None:
    m = (1 << width) - 1
    check(gen.build_adder(width, adder), width, lambda x, y: {"c": (x + y) & m})


@pytest.mark.parametrize("network", gen.PREFIX)
def test_adder_with_carry_in_and_out(network: str) -> None:
    c = Circuit()
    a, b, cin = c.input("a", 8), c.input("b", 8), c.input("cin", 1)
    s, cout = gen.prefix_add(c, a, b, network, cin=cin[0], carry_out=True)
    c.output("c", [*s, cout])
    x, y = operands(8)
    for carry in (0, 1):
        got = c.simulate({"a": x, "b": y, "cin": np.full(len(x), carry)})["c"]
        assert [int(v) for v in got] == [int(p) + int(q) + carry for p, q in zip(x, y, strict=True)]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", gen.MULTIPLIERS)
@pytest.mark.parametrize("full", [False, True])
def test_multipliers(width: int, kind: str, full: bool) -> None:
    m = (1 << (2 * width if full else width)) - 1
    check(gen.build_multiplier(width, kind, full), width, lambda x, y: {"c": (x * y) & m})


@pytest.mark.parametrize("adder", ["ripple", "sklansky", "brent-kung", "cla"])
@pytest.mark.parametrize("kind", ["wallace", "dadda"])
def test_tree_multipliers_with_each_final_adder(kind: str, adder: str) -> None:
    check(gen.build_multiplier(8, kind, True, adder, 4), 8, lambda x, y: {"c": x * y})


@pytest.mark.parametrize("width", [8, 16, 64])
@pytest.mark.parametrize("op", gen.COMPARISONS)
@pytest.mark.parametrize("is_signed", [False, True])
@pytest.mark.parametrize("structure", gen.COMPARATORS)
def test_comparators(width: int, op: str, is_signed: bool, structure: str) -> None:
    fns = {
        "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y,
        "gt": lambda x, y: x > y,
        "ge": lambda x, y: x >= y,
        "eq": lambda x, y: x == y,
        "ne": lambda x, y: x != y,
    }

    def ref(x: int, y: int) -> dict[str, int]:
        if is_signed:
            x, y = signed(x, width), signed(y, width)
        return {"c": int(fns[op](x, y))}

    check(gen.build_comparator(width, op, is_signed, structure), width, ref)


@pytest.mark.parametrize("width", [8, 32])
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("is_signed", [False, True])
def test_min_max(width: int, op: str, is_signed: bool) -> None:
    def ref(x: int, y: int) -> dict[str, int]:
        if not is_signed:
            return {"c": min(x, y) if op == "min" else max(x, y)}
        sx, sy = signed(x, width), signed(y, width)
        pick = min(sx, sy) if op == "min" else max(sx, sy)
        return {"c": x if pick == sx else y}

    for structure in gen.COMPARATORS:
        check(gen.build_minmax(width, op, is_signed, structure), width, ref)


def test_select() -> None:
    c = gen.build_select(8)
    a, b = operands(8)
    for bit in (0, 1):
        s = np.full(len(a), bit)
        got = c.simulate({"s": s, "a": a, "b": b})["c"]
        assert [int(v) for v in got] == [int(x if bit else y) for x, y in zip(a, b, strict=True)]


def test_carry_save_tree_of_three_6_bit_operands_exhaustively() -> None:
    c = gen.build_multi_adder(6, 3, "sklansky")
    v = np.arange(1 << 18)
    x = {"x0": v & 63, "x1": (v >> 6) & 63, "x2": v >> 12}
    got = c.simulate(x)["c"]
    assert np.array_equal(got, (x["x0"] + x["x1"] + x["x2"]) & 63)


@pytest.mark.parametrize("adder", ["ripple", "kogge-stone"])
def test_carry_save_tree_of_two_8_bit_operands_exhaustively(adder: str) -> None:
    c = gen.build_multi_adder(8, 2, adder)
    a, b = operands(8)
    got = c.simulate({"x0": a, "x1": b})["c"]
    assert [int(v) for v in got] == [(int(x) + int(y)) & 255 for x, y in zip(a, b, strict=True)]


@pytest.mark.parametrize("width", [8, 16, 32, 64])
@pytest.mark.parametrize("algorithm", gen.DIVIDERS)
def test_dividers(width: int, algorithm: str) -> None:
    top = (1 << width) - 1

    def ref(x: int, y: int) -> dict[str, int]:
        return {"q": x // y, "r": x % y} if y else {"q": top, "r": x}

    check(gen.build_divider(width, "ripple", algorithm), width, ref)


@pytest.mark.parametrize("algorithm", gen.DIVIDERS)
def test_dividers_with_a_prefix_adder(algorithm: str) -> None:
    def ref(x: int, y: int) -> dict[str, int]:
        return {"q": x // y, "r": x % y} if y else {"q": 255, "r": x}

    check(gen.build_divider(8, "sklansky", algorithm), 8, ref)


@pytest.mark.parametrize("width", [1, 2, 3, 7, 8, 16, 64])
def test_popcount(width: int) -> None:
    c = gen.build_popcount(width)
    a, _ = operands(width)
    got = c.simulate({"a": a})["c"]
    assert len(c.outputs["c"]) == width.bit_length()
    assert [int(v) for v in got] == [bin(int(x)).count("1") for x in a]


@pytest.mark.parametrize("width", [8, 64])
@pytest.mark.parametrize("kind", gen.SHIFTS)
def test_shifts_and_rotations(width: int, kind: str) -> None:
    m = (1 << width) - 1
    refs: dict[str, Callable[[int, int], int]] = {
        "shl": lambda x, k: (x << k) & m,
        "lshr": lambda x, k: x >> k,
        "ashr": lambda x, k: (signed(x, width) >> k) & m,
        "rotl": lambda x, k: ((x << k) | (x >> (width - k))) & m,
        "rotr": lambda x, k: ((x >> k) | (x << (width - k))) & m,
    }
    a, _ = operands(width)
    for k in (0, 1, 3, width - 1):
        c = gen.build_shift(width, kind, k)
        assert not c.live_nodes()  # wires only
        got = c.simulate({"a": a})["c"]
        assert [int(v) for v in got] == [refs[kind](int(x), k) for x in a], (kind, k)


@pytest.mark.parametrize(("width", "operands_count"), [(8, 3), (8, 4), (16, 5), (32, 9)])
@pytest.mark.parametrize("adder", ["ripple", "kogge-stone"])
def test_carry_save_trees(width: int, operands_count: int, adder: str) -> None:
    c = gen.build_multi_adder(width, operands_count, adder)
    values = {
        f"x{i}": np.array(
            [int(v) for v in RNG.integers(0, 1 << width, 3000, dtype=np.uint64)], dtype=object
        )
        for i in range(operands_count)
    }
    got = c.simulate(values)["c"]
    want = [
        sum(int(values[f"x{i}"][j]) for i in range(operands_count)) % (1 << width)
        for j in range(3000)
    ]
    assert [int(v) for v in got] == want


# ---- bad parameters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: gen.build_adder(0), "width 0 is out of range"),
        (lambda: gen.build_adder(-3), "width -3 is out of range"),
        (lambda: gen.build_adder(8.0), "width must be an integer"),  # type: ignore[arg-type]
        (lambda: gen.build_adder(gen.MAX_WIDTH + 1), "out of range"),
        (lambda: gen.build_adder(10, "cla", 4), "block size 4 does not divide the width 10"),
        (lambda: gen.build_adder(8, "cla", 0), "block size must be a positive integer"),
        (lambda: gen.build_adder(8, "carry-skip"), "unknown adder 'carry-skip'"),
        (lambda: gen.build_multiplier(8, "booth"), "unknown multiplier 'booth'"),
        (lambda: gen.build_multiplier(0), "width 0"),
        (lambda: gen.build_comparator(8, "lte"), "unknown comparison 'lte'"),
        (lambda: gen.build_comparator(8, "lt", False, "flat"), "unknown comparator structure"),
        (lambda: gen.build_minmax(8, "median"), "unknown operation 'median'"),
        (lambda: gen.build_shift(8, "shl", 8), r"shift amount 8 is out of range .* \[0, 8\)"),
        (lambda: gen.build_shift(8, "rotr", -1), "shift amount -1 is out of range"),
        (lambda: gen.build_shift(8, "spin", 1), "unknown shift 'spin'"),
        (lambda: gen.build_multi_adder(8, 1), "at least 2 operands"),
        (lambda: gen.build_divider(0), "width 0"),
        (lambda: gen.build_divider(8, "ripple", "srt"), "unknown divider 'srt'"),
        (lambda: gen.build_popcount(0), "width 0"),
    ],
)
def test_bad_parameters_are_user_errors(build: Callable[[], object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        build()


def test_mismatched_operand_widths_are_rejected() -> None:
    c = Circuit()
    a, b = c.input("a", 8), c.input("b", 4)
    with pytest.raises(UserError, match="operand widths differ"):
        gen.ripple_add(c, a, b)
    with pytest.raises(UserError, match="operand widths differ"):
        gen.multiply(c, a, b)
    with pytest.raises(UserError, match="operand widths differ"):
        gen.carry_save_sum(c, [a, a, b])


def test_unknown_prefix_network_is_rejected() -> None:
    c = Circuit()
    a, b = c.input("a", 4), c.input("b", 4)
    with pytest.raises(UserError, match="unknown prefix network 'ladner-fischer'"):
        gen.prefix_add(c, a, b, "ladner-fischer")
