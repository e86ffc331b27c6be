"""A negative test for every user-facing message of the parser and the checker: each must
name the file, line and column, show the line with a caret under the culprit, and say what
to do."""

from __future__ import annotations

import pytest

from compiler.errors import UserError
from dsl.checker import ProgramErrors, check
from dsl.parser import parse_program

HEADER = """param N <= 1000
param M <= 50
param K <= 4
input y: secret[N] in {0, 1}
input S: secret[N, M] in {0, 1, 2}
input X: secret[N, K] in [-4.0, 4.0]
input Q: secret[N, N] in [0, 1]
input z: public[N]
"""
FIRST = HEADER.count("\n") + 1  # line number of the first line after HEADER

# (program tail, line offset from FIRST, column, text under the caret, message part, hint part)
CASES = [
    # unknown names, with a suggestion
    ("n = y @ SS\n", 0, 9, "SS", "unknown name 'SS'", "did you mean 'S'?"),
    ("n = sun(S, axis=0)\n", 0, 5, "sun", "unknown function 'sun'", "did you mean 'sum'?"),
    ("input T: secret[P] in [0, 1]\n", 0, 17, "P", "unknown size parameter 'P'", "param"),
    # shape mismatch, stating both shapes
    (
        "n = y + sum(S, axis=0)\n",
        0,
        5,
        "y + sum(S, axis=0)",
        "left is secret [N], right is secret [M]",
        "equal shapes",
    ),
    ("n = S @ y\n", 0, 5, "S @ y", "left is secret [N, M], right is secret [N]", "transpose"),
    ("n = S.T @ X @ y\n", 0, 5, "S.T @ X @ y", "inner sizes K and N differ", "'.T'"),
    ("n = y.T\n", 0, 5, "y.T", "'.T' needs a matrix, but the operand is secret [N]", "row(v)"),
    ("n = 2 @ y\n", 0, 5, "2 @ y", "'@' needs vectors or matrices", "'*'"),
    ("n = sum(S, axis=2)\n", 0, 17, "2", "axis 2 is out of range for secret [N, M]", "0..1"),
    # ambiguous broadcasting
    ("n = Q * y\n", 0, 5, "Q * y", "ambiguous broadcast in '*'", "row(v)"),
    # division of secrets, and public-only functions
    (
        "n = sum(S, axis=0) / sum(y)\n",
        0,
        22,
        "sum(y)",
        "division by a secret value",
        "reveal the numerator and the denominator",
    ),
    (
        "n = sqrt(sum(y))\n",
        0,
        10,
        "sum(y)",
        "sqrt() needs a public value, but its argument is secret",
        "client block",
    ),
    ("n = chi2_sf(y, df=1)\n", 0, 13, "y", "chi2_sf() needs a public value", "reveal"),
    # secret values without a finite domain
    (
        "input W: secret[N]\n",
        0,
        1,
        "input W: secret[N]",
        "secret input 'W' has no value domain",
        "in [lo, hi]",
    ),
    ("n = y * z\n", 0, 5, "y * z", "no finite bound ('z' has no domain)", "domain"),
    (
        "n = y / (N - 1)\n",
        0,
        5,
        "y / (N - 1)",
        "the divisor can be zero: its range is [0, 999]",
        "cannot be zero",
    ),
    # reveal twice
    (
        "reveal n = sum(y)\nreveal n\n",
        1,
        8,
        "n",
        "'n' is already revealed (line 9)",
        "reveal each value once",
    ),
    ("reveal N\n", 0, 8, "N", "'N' is a size parameter", ""),
    # the client block
    (
        "n = sum(y)\nclient { r = n / 2 }\n",
        1,
        14,
        "n",
        "the client block cannot use 'n': it is secret and was not revealed",
        "reveal n",
    ),
    (
        "reveal n = sum(y)\nclient { r = n }\nm = 2\n",
        2,
        1,
        "m = 2",
        "statement after the client block",
        "move this statement",
    ),
    # definitions
    ("n = 1\nn = 2\n", 1, 1, "n", "'n' is already defined (line 9)", "choose another name"),
    ("sum = 1\n", 0, 1, "sum", "'sum' is the name of a function", ""),
    ("param P <= 2.5\n", 0, 12, "2.5", "must be a whole number >= 1", "param P <= 100000"),
    # regressions (found by test_mutated_examples_never_crash on examples/gwas/qc.hec): a bound
    # that overflows to infinity crashed int(); one beyond i64 crashed the IR attribute
    ("param P <= 1e400\n", 0, 12, "1e400", "got inf", "param P <= 100000"),
    ("param P <= 2e100\n", 0, 12, "2e100", "<= 2^62, got 2e+100", "param P <= 100000"),
    (
        "input T: secret[N, 0] in [0, 1]\n",
        0,
        20,
        "0",
        "a dimension must be a size parameter or a whole number >= 1",
        "",
    ),
    (
        "input T: secret[N, N, N] in [0, 1]\n",
        0,
        1,
        "input T: secret[N, N, N] in [0, 1]",
        "has 3 dimensions; at most 2",
        "matrices",
    ),
    ("input T: secret[N] in [2, 1]\n", 0, 20, "in [2, 1]", "empty interval [2, 1]", "[1, 2]"),
    # functions
    ("n = y^0.5\n", 0, 7, "0.5", "the exponent must be a whole number >= 1, got 0.5", "x^2"),
    (
        "n = poly(y, [1, sum(y)])\n",
        0,
        17,
        "sum(y)",
        "poly() coefficients must be constants",
        "c0 + c1*x",
    ),
    ("n = poly(y, 3)\n", 0, 13, "3", "must be a non-empty list of constants", ""),
    ("n = [1, 2]\n", 0, 5, "[1, 2]", "a list [...] is only allowed as the coefficients", ""),
    ("n = sum(S, axs=0)\n", 0, 12, "axs=0", "sum() has no argument 'axs'", "axis"),
    ("n = det(S)\n", 0, 9, "S", "det() needs a square k x k matrix, got secret [N, M]", "k <= 6"),
    ("n = adj(Q)\n", 0, 9, "Q", "adj() needs k <= 6, but the matrix is N x N with N <= 1000", "k!"),
    ("n = row(S)\n", 0, 9, "S", "row() needs a vector, got secret [N, M]", "1 x n"),
    # eye(K): a small dimension, given by a size parameter or a constant
    ("n = eye(N)\n", 0, 9, "N", "eye() is for small matrices, k <= 6, but it is N x N", "small"),
    ("n = eye(7)\n", 0, 9, "7", "eye() is for small matrices, k <= 6, but it is 7 x 7", ""),
    ("n = eye(y)\n", 0, 9, "y", "eye() needs a size parameter or a constant whole", "eye(K)"),
    ("n = eye(1.5)\n", 0, 9, "1.5", "eye() needs a size parameter or a constant whole", ""),
    ("n = eye(K, K)\n", 0, 5, "eye(K, K)", "eye() takes 1 argument, got 2", "identity"),
    ("n = X + eye(K)\n", 0, 5, "X + eye(K)", "left is secret [N, K], right is public [K, K]", ""),
    # indexing and slicing: small axes only, constant and in range
    ("n = S[0, 1]\n", 0, 7, "0", "axis 0 of secret [N, M] has size N <= 1000, which is", "':'"),
    ("n = X[:, 0] + X[3, :]\n", 0, 17, "3", "axis 0 of secret [N, K] has size N", "sum(x"),
    ("n = X[:, 4]\n", 0, 10, "4", "index 4 is out of range for axis 1 of size K <= 4", "0..3"),
    ("n = X[:, K]\n", 0, 10, "K", "an index must be a constant whole number >= 0", ""),
    ("n = X[:, sum(y)]\n", 0, 10, "sum(y)", "an index must be a constant whole", "data-dep"),
    ("n = X[:, 0.5]\n", 0, 10, "0.5", "an index must be a constant whole number", ""),
    ("n = X[:, 1:]\n", 0, 10, "1:", "a slice of axis 1 (size K) needs its end", "1:b"),
    ("n = X[:, 2:2]\n", 0, 10, "2:2", "slice 2:2 is empty or out of range for axis 1", ""),
    ("n = X[:, 1:5]\n", 0, 10, "1:5", "slice 1:5 is empty or out of range", "b <= 4"),
    ("n = X[0]\n", 0, 5, "X[0]", "1 subscripts for secret [N, K]: give one per axis", ""),
    ("n = sum(y)[0]\n", 0, 5, "sum(y)[0]", "a scalar cannot be indexed", "drop"),
    ("n = y[:][1]\n", 0, 10, "1", "axis 0 of secret [N] has size N <= 1000", ""),
    ("n = det(X.T @ X, X)\n", 0, 5, "det(X.T @ X, X)", "det() takes 1 argument, got 2", ""),
    ("n = sum(y, axis=N)\n", 0, 17, "N", "the axis must be a constant whole number", ""),
    (
        "reveal n = sum(y)\nclient { r = chi2_sf(n) }\n",
        1,
        14,
        "chi2_sf(n)",
        "chi2_sf() needs its degrees of freedom",
        "df=1",
    ),
    (
        "reveal n = sum(y)\nclient { r = chi2_sf(n, df=0) }\n",
        1,
        28,
        "0",
        "df must be >= 1, got 0",
        "",
    ),
    (
        "reveal n = sum(y)\nclient { r = log(n) }\nclient { t = 1 }\n",
        2,
        1,
        "client { t = 1 }",
        "statement after the client block",
        "",
    ),
]


@pytest.mark.parametrize(("tail", "offset", "column", "under", "message", "hint"), CASES)
def test_checker_error_is_located(
    tail: str, offset: int, column: int, under: str, message: str, hint: str
) -> None:
    with pytest.raises(ProgramErrors) as info:
        check(parse_program(HEADER + tail, "prog.hec"))
    err = info.value.errors[0]
    text = str(err)
    assert message in err.message, text
    assert hint in err.hint, text
    assert err.location is not None
    assert (err.location.line, err.location.column) == (FIRST + offset, column), text
    assert text.startswith(f"prog.hec:{FIRST + offset}:{column}: error: ")
    # The caret line underlines exactly the offending text.
    _, source_line, caret_line, *_ = text.split("\n")
    start = caret_line.index("^")
    assert source_line[start : start + len(under)] == under, text
    assert caret_line.strip() == "^" * err.location.length
    assert err.location.length == len(under)


def test_every_error_of_a_program_is_reported_once() -> None:
    program = HEADER + "a = y @ Nope\nb = a + 1\nc = sqrt(sum(y))\nd = y + sum(S, axis=0)\n"
    with pytest.raises(ProgramErrors) as info:
        check(parse_program(program, "prog.hec"))
    messages = [e.message for e in info.value.errors]
    # 'b' uses the failed 'a': no second error for it.
    assert len(messages) == 3, messages
    assert "unknown name 'Nope'" in messages[0]
    assert "sqrt()" in messages[1]
    assert "shape mismatch" in messages[2]
    assert str(info.value).endswith("3 errors")


SYNTAX = [
    ("param N <= \n", 1, 12, "unexpected end of file; expected a number"),
    ("input y: secret[N in {0, 1}\n", 1, 19, "unexpected 'in'; expected ',', ']'"),
    ("x = 3 +\n\n", 1, 8, "unexpected end of file"),
    ("x = $\n", 1, 5, "unexpected character '$'"),
    ("x = y @ @ z\n", 1, 9, "unexpected '@'"),
    ("reveal = 3\n", 1, 8, "unexpected '='; expected a name"),
    ("x = (1 + 2\ny = 3\n", 2, 1, "unexpected 'y'; expected ')'"),
    ("input y: hidden[N]\n", 1, 10, "expected 'secret' or 'public'"),
    ("x = 1\n  }\n", 2, 3, "unexpected '}'"),
    ("client {\n  reveal x\n}\n", 2, 10, "unexpected 'x'; expected '='"),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), SYNTAX)
def test_syntax_error_is_located(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(UserError) as info:
        parse_program(text, "bad.hec")
    err = info.value
    assert message in err.message, str(err)
    assert err.location is not None
    assert (err.location.line, err.location.column) == (line, column), str(err)
    assert str(err).startswith(f"bad.hec:{line}:{column}: error: ")
    assert "^" in str(err)
    if "reveal x" in text:
        assert "'reveal' cannot start a statement here" in err.hint


def test_non_utf8_file_is_a_user_error(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    from dsl.parser import parse_file

    path = Path(str(tmp_path)) / "bin.hec"
    path.write_bytes(b"x = 1\n\xff\xfe")
    with pytest.raises(UserError, match="not UTF-8"):
        parse_file(path)
    with pytest.raises(UserError, match="cannot read"):
        parse_file(Path(str(tmp_path)) / "missing.hec")


def test_deeply_nested_expressions_are_refused_or_handled() -> None:
    with pytest.raises(UserError, match="nested 3000 levels deep; at most 1000") as info:
        parse_program("x = " + " + ".join(["1"] * 3000) + "\n", "deep.hec")
    assert str(info.value).startswith("deep.hec:1:5: error:")
    # Just under the limit, the whole front end copes (no RecursionError).
    text = "param N <= 5\ninput y: secret[N] in [0, 1]\nreveal x = " + " + ".join(["y"] * 999)
    from dsl.lower import lower

    lower(check(parse_program(text)))
    # Parentheses alone do not nest expressions.
    check(parse_program("x = " + "(" * 3000 + "1" + ")" * 3000))


def test_regression_infinite_bound_is_an_error_not_a_crash() -> None:
    """A bound that overflows to infinity (`param N <= 1e400`, found by the mutation property
    test) raised OverflowError in the checker (int(inf) before the finiteness test); it is
    the same located error as any bound that is not a whole number."""
    text = "param N <= 1e400\ninput x: secret[N] in [0.0, 1.0]\nreveal s = sum(x)\n"
    with pytest.raises(ProgramErrors) as info:
        check(parse_program(text, "big.hec"))
    err = info.value.errors[0]
    assert str(err).startswith("big.hec:1:12: error: the bound of size parameter 'N' must be")
    assert "got inf" in err.message


def test_regression_a_constant_power_that_overflows_is_not_a_crash() -> None:
    """`1e200^2` (found by the atheris front-end fuzzer at 10^6 executions): Python's float
    power raises OverflowError instead of giving inf, and the checker's constant folding let
    it escape as a traceback. The constant is now left unfolded; a secret value it makes
    unbounded is refused with a located error by the compiler's range analysis."""
    from driver.pipeline import Options, run_pipeline

    text = "param N <= 10\ninput x: secret[N] in [0.0, 1.0]\na = 1e200^2\nreveal s = sum(x) * a\n"
    checked = check(parse_program(text, "ovf.hec"))
    with pytest.raises(UserError) as info:
        run_pipeline(checked, Options())
    assert str(info.value).startswith("ovf.hec:4:12: error: the secret value s has no finite")
