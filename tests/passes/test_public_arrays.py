"""Public inputs in encrypted products (issue 19, fact 6) and located lowering refusals.

Was: `w: public[M]` passed `hec check`, then compilation failed with "a product with a public
matrix is not supported by ckks yet" and no line or column. Public inputs (arrays and scalars)
now lower as ciphertexts their owner encrypts, in elementwise products, reductions and dot
products of either orientation; what the lowering still refuses names file:line:column."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, simulate_against_reference

PUBLIC = """param N <= 1000
param M <= 64
param K <= 4
input S: secret[N, M] in {0, 1, 2}
input y: secret[N] in {0, 1}
input w: public[M] in WEIGHTS
input v: public[N] in [0.0, 2.0]
input P: public[N, K] in [-1.0, 1.0]
input c: public in [0.5, 2.0]
reveal grs = S @ w
reveal t = sum(S, axis=0) * w
reveal u = v @ S
reveal q = sum(y * v)
reveal r = y @ P
reveal s = sum(S * c, axis=0)
reveal z = w @ sum(S, axis=0)
"""

SIZES = Sizes.parse("N=20,M=8,K=3")


def _write(tmp_path: Path, text: str, name: str = "p.hec") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_public_arrays_and_scalars_in_products_compile_and_keep_their_meaning(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, PUBLIC.replace("WEIGHTS", "[-1.0, 1.0]"))
    comp = compile_file(path, Options(sizes=SIZES))
    encoded = {op.sym_value for op in comp.program.encrypts() for op in [op.source()]}
    assert {"w", "v", "P", "c"} <= encoded
    rows = simulate_against_reference(comp, seed=5)["rows"]
    assert {r["name"] for r in rows} == {"grs", "t", "u", "q", "r", "s", "z"}
    assert all(r["max_rel_error"] < 1e-9 for r in rows), rows


def test_integer_public_weights_are_exact_under_bfv(tmp_path: Path) -> None:
    text = PUBLIC.replace("WEIGHTS", "{0, 1, 2, 3}").replace("[0.0, 2.0]", "{0, 1}")
    text = text.replace("[-1.0, 1.0]", "{-1, 0, 1}").replace("[0.5, 2.0]", "{1, 2}")
    comp = compile_file(_write(tmp_path, text), Options(sizes=SIZES, scheme="bfv"))
    rows = simulate_against_reference(comp, seed=2)["rows"]
    assert all(r["max_rel_error"] == 0.0 for r in rows), rows


def test_real_public_weights_under_bfv_are_refused_at_the_input(tmp_path: Path) -> None:
    path = _write(tmp_path, PUBLIC.replace("WEIGHTS", "[-1.0, 1.0]"))
    with pytest.raises(UserError) as info:
        compile_file(path, Options(sizes=SIZES, scheme="bfv"))
    text = str(info.value)
    assert text.startswith(f"{path}:6:1: error: --scheme bfv: input w has domain [-1, 1]")
    assert "input w: public[M]" in text  # the line, with a caret under it


@pytest.mark.parametrize(
    ("body", "where", "what"),
    [
        # a public function of public data is not evaluated under encryption (range analysis
        # has no rule for it and refuses first)
        ("reveal g = S @ log(w + 2)", ":5:16:", "range analysis does not handle stat.log"),
        # a revealed compile-time constant is not encrypted
        ("reveal g = sum(S, axis=0)\nreveal h = 2 * N", ":6:1:", "public value"),
    ],
)
def test_what_the_lowering_refuses_is_located(
    tmp_path: Path, body: str, where: str, what: str
) -> None:
    head = (
        "param N <= 100\nparam M <= 8\ninput S: secret[N, M] in {0, 1, 2}\n"
        "input w: public[M] in [0.0, 1.0]\n"
    )
    path = _write(tmp_path, head + body + "\n")
    with pytest.raises(UserError) as info:
        compile_file(path, Options(sizes=Sizes.parse("N=10,M=8")))
    assert where in str(info.value) and what in str(info.value), str(info.value)
