"""Integer and Boolean values in the language (issue #23): the types, the operators, the
reference evaluator's wrap-around semantics, and a negative test for every message the checker
gives about them (file:line:column, the culprit underlined, what to do)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import UserError
from dsl.checker import BOOL, INT_TYPES, IntType, ProgramErrors, check
from dsl.lower import lower
from dsl.parser import parse_program
from dsl.reference import evaluate

HEADER = """param N <= 100
input a: secret[N] u8
input b: secret[N] u8
input s: secret[N] i8
input w: secret[N] u16
input f: secret[N] bool
input x: secret[N] in [0, 1]
input m: secret[N, N] u8
"""
FIRST = HEADER.count("\n") + 1

# (program tail, column, text under the caret, message part, hint part)
CASES = [
    ("c = a + 300\n", 9, "300", "the constant 300 does not fit in u8 (0..255)", "u16(x)"),
    ("c = s * -129\n", 9, "-129", "does not fit in i8 (-128..127)", "i16(x)"),
    ("c = a + 1.5\n", 9, "1.5", "is not a whole number", "real(x)"),
    ("c = a == 256\n", 10, "256", "does not fit in u8", ""),
    ("c = a ^ 256\n", 9, "256", "does not fit in u8", ""),
    ("c = a << 8\n", 10, "8", "shift by 8 is beyond the width of u8: amounts are 0..7", "u16(x)"),
    ("c = s >> 9\n", 10, "9", "shift by 9 is beyond the width of i8", ""),
    ("c = rotl(w, 16)\n", 13, "16", "shift by 16 is beyond the width of u16", ""),
    ("c = a << b\n", 10, "b", "the amount of '<<' must be a constant whole number", "constants"),
    ("c = a / 0\n", 9, "0", "division by a constant zero", "non-zero"),
    ("c = a % 0\n", 9, "0", "division by a constant zero", ""),
    ("c = s / s\n", 5, "s / s", "'/' on signed i8 values is not supported yet", "u8(x)"),
    ("c = a + x\n", 5, "a + x", "mixing integer and real values needs an explicit conversion", ""),
    ("c = x * a\n", 5, "x * a", "one side is secret [N], the other secret [N] u8", "real(x)"),
    ("c = a + w\n", 5, "a + w", "mixing u8 and u16 needs an explicit conversion", "u16(x)"),
    ("c = min(a, s)\n", 5, "min(a, s)", "mixing u8 and i8", ""),
    ("c = x < x\n", 5, "x < x", "'<', defined on integer and bool values", "integer type"),
    ("c = x ^ x\n", 5, "x ^ x", "'^' with a non-literal right side is XOR", "x ^ 2"),
    ("c = ~x\n", 5, "~x", "'~' is bitwise NOT", "bool"),
    ("c = -f\n", 5, "-f", "'-' on a bool value", "~b"),
    ("c = f + f\n", 5, "f + f", "'+' on bool values", "u8(b)"),
    ("c = select(a, a, b)\n", 12, "a", "the condition of select() must be a bool", "a < b"),
    ("c = select(f, 1, 2)\n", 5, "select(f, 1, 2)", "both are constants", "u8(1)"),
    ("c = popcount(x)\n", 5, "popcount(x)", "popcount() is defined on integer and bool", ""),
    ("c = sum(a)\n", 9, "a", "sum() is defined on real values, but this is secret [N] u8", ""),
    ("c = m.T\n", 5, "m", "'.T' is defined on real values", "real(x)"),
    ("c = m @ a\n", 5, "m @ a", "'@' is defined on real values", "elementwise"),
    ("c = m + a\n", 5, "m + a", "integer values combine elementwise", "one shape"),
    ("c = u8(x)\n", 8, "x", "u8() converts integer values or constants", "as `u8`"),
    ("c = real(a)\n", 10, "a", "real() of a secret integer", "client block"),
    ("c = real(x)\n", 10, "x", "real() converts an integer", ""),
    ("c = u8(256)\n", 8, "256", "does not fit in u8", ""),
    ("u8 = a\n", 1, "u8", "'u8' is a reserved word", "another name"),
]


@pytest.mark.parametrize(("tail", "column", "under", "message", "hint"), CASES)
def test_integer_error_is_located(
    tail: str, column: int, under: str, message: str, hint: str
) -> None:
    with pytest.raises(UserError) as info:
        check(parse_program(HEADER + tail, "prog.hec"))
    err = info.value.errors[0] if isinstance(info.value, ProgramErrors) else info.value
    text = str(err)
    assert message in err.message, text
    assert hint in err.hint, text
    assert err.location is not None
    assert (err.location.line, err.location.column) == (FIRST, column), text
    if isinstance(info.value, ProgramErrors):
        _, source_line, caret_line, *_ = text.split("\n")
        start = caret_line.index("^")
        assert source_line[start : start + len(under)] == under, text


def test_client_block_needs_real_to_mix() -> None:
    program = HEADER + "reveal c = a + b\nreveal x\nclient {\n  d = c * x\n}\n"
    with pytest.raises(ProgramErrors, match="mixing integer and real values"):
        check(parse_program(program, "prog.hec"))
    program = HEADER + "reveal c = a + b\nclient {\n  d = c * 0.5\n}\n"
    with pytest.raises(ProgramErrors, match="not a whole number") as info:
        check(parse_program(program, "prog.hec"))
    assert "real(x)" in info.value.hint
    ok = HEADER + "reveal c = a + b\nclient {\n  d = real(c) * 0.5\n}\n"
    checked = check(parse_program(ok, "prog.hec"))
    assert checked.bindings["d"].ty.int_type is None


def test_the_stat_lowering_refuses_integers_where_they_are_defined() -> None:
    checked = check(parse_program(HEADER + "reveal c = a + b\n", "prog.hec"))
    with pytest.raises(UserError, match="'a' is a u8 value") as info:
        lower(checked)
    assert info.value.location is not None and info.value.location.line == 2
    assert "--scheme fhew" in info.value.hint


def test_types() -> None:
    assert INT_TYPES["u8"] == IntType(False, 8) and INT_TYPES["bool"] is BOOL
    assert (INT_TYPES["i16"].lo, INT_TYPES["i16"].hi) == (-32768, 32767)
    assert INT_TYPES["u64"].hi == 2**64 - 1
    checked = check(
        parse_program(
            HEADER + "c = a < b\nd = select(c, a, b)\ne = u16(s)\ng = popcount(w)\nh = a ^ 3\n",
            "p.hec",
        )
    )
    types = {n: checked.bindings[n].ty.int_type for n in "cdegh"}
    assert types == {
        "c": BOOL,
        "d": INT_TYPES["u8"],
        "e": INT_TYPES["u16"],
        "g": INT_TYPES["u16"],
        "h": INT_TYPES["u8"],
    }
    # `^` on a real value is still a power.
    checked = check(parse_program(HEADER + "p = x ^ 2\n", "p.hec"))
    assert checked.bindings["p"].ty.int_type is None


OPERATIONS = """param N <= 300
input a: secret[N] u8
input b: secret[N] u8
input s: secret[N] i8
input t: secret[N] i8
reveal add = a + b
reveal sub = a - b
reveal neg = -a
reveal mul = a * b
reveal quo = a / b
reveal rem = a % b
reveal lt = a < b
reveal sle = s <= t
reveal sgt = s > t
reveal ne = a != b
reveal lo = min(s, t)
reveal hi = max(a, b)
reveal sel = select(a < 100, a, b)
reveal bits = (a & b) | (~a ^ 5)
reveal shl = a << 3
reveal ashr = s >> 2
reveal lshr = a >> 2
reveal rl = rotl(a, 3)
reveal rr = rotr(a, 3)
reveal pc = popcount(a)
reveal wide = u16(s) + 1000
reveal narrow = i8(a)
reveal nz = bool(a)
client {
  half = real(add) / 2
}
"""


def test_reference_semantics_wrap_around() -> None:
    checked = check(parse_program(OPERATIONS, "ops.hec"))
    a = np.array([0, 1, 200, 255, 17, 128], dtype=np.uint8)
    b = np.array([0, 255, 100, 255, 3, 0], dtype=np.uint8)
    s = np.array([-128, 127, -1, 5, -7, 0], dtype=np.int8)
    t = np.array([127, -128, -1, 6, 2, 0], dtype=np.int8)
    out = evaluate(checked, {"N": 6}, {"a": a, "b": b, "s": s, "t": t})
    r = {k: [int(v) for v in np.asarray(x).flat] for k, x in out.revealed.items()}
    ai, bi, si, ti = (x.astype(int) for x in (a, b, s, t))
    assert r["add"] == list((ai + bi) % 256)
    assert r["sub"] == list((ai - bi) % 256)
    assert r["neg"] == list(-ai % 256)
    assert r["mul"] == list((ai * bi) % 256)
    assert r["quo"] == [x // y if y else 255 for x, y in zip(ai, bi, strict=True)]
    assert r["rem"] == [x % y if y else x for x, y in zip(ai, bi, strict=True)]
    assert r["lt"] == list((ai < bi).astype(int))
    assert r["sle"] == list((si <= ti).astype(int))
    assert r["sgt"] == list((si > ti).astype(int))
    assert r["lo"] == list(np.minimum(si, ti))
    assert r["sel"] == [x if x < 100 else y for x, y in zip(ai, bi, strict=True)]
    assert r["bits"] == list(((ai & bi) | ((255 - ai) ^ 5)) % 256)
    assert r["shl"] == list((ai << 3) % 256)
    assert r["ashr"] == list(si >> 2)
    assert r["lshr"] == list(ai >> 2)
    assert r["rl"] == list(((ai << 3) | (ai >> 5)) % 256)
    assert r["rr"] == list(((ai >> 3) | (ai << 5)) % 256)
    assert r["pc"] == [bin(x).count("1") for x in ai]
    assert r["wide"] == list((si % 65536 + 1000) % 65536)
    assert r["narrow"] == [x - 256 if x > 127 else x for x in ai]
    assert r["nz"] == list((ai != 0).astype(int))
    assert list(out.client["half"]) == list(((ai + bi) % 256) / 2)


def test_reference_refuses_out_of_range_inputs() -> None:
    checked = check(parse_program(OPERATIONS, "ops.hec"))
    good = np.zeros(2, dtype=np.int64)
    with pytest.raises(UserError, match=r"input 'a' has value 256 at \(1,\), outside u8"):
        evaluate(checked, {"N": 2}, {"a": np.array([1, 256]), "b": good, "s": good, "t": good})
    with pytest.raises(UserError, match="not whole numbers"):
        evaluate(checked, {"N": 2}, {"a": np.array([1.5, 2]), "b": good, "s": good, "t": good})


SYNTAX = [
    ("param N <= 4\ninput a: secret[N] u9\nreveal c = a\n", 2, 20, "unknown element type 'u9'"),
    ("input a: public bool8\nb = a\n", 1, 17, "unknown element type 'bool8'"),
    ("param N <= 4\ninput a: secret[N] u8\nc = a < 3 < 4\n", 3, 11, "comparisons do not chain"),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), SYNTAX)
def test_integer_syntax_errors_are_located(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(UserError) as info:
        parse_program(text, "bad.hec")
    err = info.value
    assert message in err.message, str(err)
    assert err.location is not None
    assert (err.location.line, err.location.column) == (line, column), str(err)
    assert err.hint
