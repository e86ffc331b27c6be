"""End-to-end: the diagonal (Halevi-Shoup) matrix-vector product in the C++ target
(docs/layout.md, "Diagonal layout"). Matrix-vector chains compiled with `ckks.diag_matvec`,
built, and run by the four roles on encrypted data (`driver.run.run_encrypted`), checked against
numpy and against the simulator: a square chain `A @ B @ v` at a power-of-two size and at a
padded one, and a rectangular pair (tall and wide matrices, a cyclic vector computed before the
product and one added after it), and a product computed once in a program that streams other
rows. And the refusal: a diagonal matrix is one owner's, encrypted
whole, so `encrypt --rows` with it is a usage error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from cpp_target_common import rel_error

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from driver.pipeline import Options, compile_file
from driver.roles import RoleSequence
from driver.run import compile_cpp, run_encrypted, run_sim

SQUARE = """\
param C <= 64
input A: secret[C, C] in [-1.0, 1.0]
input B: secret[C, C] in [-1.0, 1.0]
input v: secret[C] in [-1.0, 1.0]
reveal r = A @ B @ v
"""

RECT = """\
param R <= 64
param C <= 64
input A: secret[R, C] in [-1.0, 1.0]
input B: secret[C, R] in [-1.0, 1.0]
input w: secret[C] in [-1.0, 1.0]
input v: secret[C] in [-1.0, 1.0]
reveal r = B @ (A @ (w * w + 1.0)) + 2.0 * v
"""

Arrays = dict[str, npt.NDArray[np.float64]]


def _save(directory: Path, arrays: Arrays) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, a in arrays.items():
        paths[name] = directory / f"{name}.npy"
        np.save(paths[name], a)
    return paths


def _diagonal_layouts(source: Path, sizes: str) -> list[str]:
    """The matrix layouts of the program's diagonal products (the order the compiler chose
    must be the diagonal one, or this file tests nothing new)."""
    comp = compile_file(source, Options(sizes=Sizes.parse(sizes)))
    return [
        ckks.ct_type(op.lhs).layout_name
        for op in comp.program.walk()
        if isinstance(op, ckks.DiagMatvecOp)
    ]


def _check(tmp_path: Path, text: str, arrays: Arrays, sizes: str, want: npt.ArrayLike) -> None:
    source = tmp_path / "prog.hec"
    source.write_text(text)
    layouts = _diagonal_layouts(source, sizes)
    assert len(layouts) == 2, layouts
    paths = _save(tmp_path / "in", arrays)
    got = np.asarray(run_encrypted(source, paths, tmp_path / "out").revealed["r"])
    sim = np.asarray(run_sim(source, paths, tmp_path / "sim").revealed["r"])
    want = np.asarray(want)
    assert got.shape == want.shape == sim.shape
    assert rel_error(got, want) <= 1e-3, (got, want)
    assert rel_error(got, sim) <= 1e-3, (got, sim)


@pytest.mark.parametrize("c", [8, 5])
def test_square_chain(tmp_path: Path, c: int) -> None:
    """`A @ B @ v`: two diagonal products (the inner one's cyclic result feeds the outer), at
    C = 8 (no padding) and C = 5 (the diagonals padded to 8 x 8)."""
    rng = np.random.default_rng(40 + c)
    arrays = {
        "A": rng.uniform(-1, 1, (c, c)),
        "B": rng.uniform(-1, 1, (c, c)),
        "v": rng.uniform(-1, 1, c),
    }
    want = arrays["A"] @ (arrays["B"] @ arrays["v"])
    _check(tmp_path, SQUARE, arrays, f"C={c}", want)


@pytest.mark.parametrize(("r", "c"), [(5, 12), (12, 5)], ids=["wide-then-tall", "tall-then-wide"])
def test_rectangular_pair(tmp_path: Path, r: int, c: int) -> None:
    """`B @ (A @ (w * w + 1.0)) + 2.0 * v`: A [R, C] and B [C, R], one of them wide (P < Q: the
    partial sums folded) and the other tall; the vector `w * w + 1.0` is computed in the cyclic
    layout (its padding slots hold 1, which the zero padding columns cancel)."""
    rng = np.random.default_rng(7 * r + c)
    arrays = {
        "A": rng.uniform(-1, 1, (r, c)),
        "B": rng.uniform(-1, 1, (c, r)),
        "w": rng.uniform(-1, 1, c),
        "v": rng.uniform(-1, 1, c),
    }
    want = arrays["B"] @ (arrays["A"] @ (arrays["w"] ** 2 + 1.0)) + 2.0 * arrays["v"]
    _check(tmp_path, RECT, arrays, f"R={r},C={c}", want)


MIXED = """\
param N <= 64
param C <= 64
input X: secret[N, C] in [-1.0, 1.0]
input A: secret[C, C] in [-1.0, 1.0]
input v: secret[C] in [-1.0, 1.0]
reveal s = sum(X, axis=0)
reveal r = A @ v
"""


def test_global_product_in_a_streamed_program(tmp_path: Path) -> None:
    """A program that streams the rows of X (a sum over them) and computes `A @ v` once, as a
    global value before the pass: the product's operands are whole arrays, read with
    `server.load`."""
    source = tmp_path / "prog.hec"
    source.write_text(MIXED)
    assert _diagonal_layouts(source, "N=20,C=6") == ["diagonal<8, 8, 4>"]
    rng = np.random.default_rng(11)
    arrays = {
        "X": rng.uniform(-1, 1, (20, 6)),
        "A": rng.uniform(-1, 1, (6, 6)),
        "v": rng.uniform(-1, 1, 6),
    }
    work = tmp_path / "work"
    result = run_encrypted(source, _save(tmp_path / "in", arrays), tmp_path / "out", work=work)
    (cpp,) = (work / "build").glob("*.cpp")
    assert "server.stream(" in cpp.read_text()
    assert rel_error(result.revealed["r"], arrays["A"] @ arrays["v"]) <= 1e-3
    assert rel_error(result.revealed["s"], arrays["X"].sum(axis=0)) <= 1e-3


def test_rows_of_a_diagonal_matrix_refused(tmp_path: Path) -> None:
    """`encrypt --rows` with a diagonal input: a usage error (exit 2) naming the input and the
    layout, and nothing written."""
    source = tmp_path / "prog.hec"
    source.write_text(SQUARE)
    built = compile_cpp(source, tmp_path / "build", Options(sizes=Sizes.parse("C=4")))
    roles = RoleSequence(built.binary, tmp_path / "run")
    roles.keygen()
    rng = np.random.default_rng(3)
    paths = _save(tmp_path / "in", {"A": rng.uniform(-1, 1, (4, 4))})
    out = tmp_path / "run" / "ct"
    done = subprocess.run(
        [
            str(built.binary),
            "encrypt",
            "--pk",
            str(roles.keys / "public"),
            "--sign",
            str(roles.owner_sign),
            "--input",
            f"A={paths['A']}",
            "--rows",
            "0:2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HEC_QUIET": "1"},
    )
    assert done.returncode == 2, done.stderr
    assert "'A'" in done.stderr and "diagonal" in done.stderr and "--rows" in done.stderr
    assert not out.exists()


CONVERSIONS = """\
param N <= 64
param C <= 64
input S: secret[N, C] in {0, 1, 2}
input A: secret[C, C] in [-1.0, 1.0]
input u: secret[C] in [-1.0, 1.0]
t = A @ sum(S, axis=0)
reveal s = sum(t)
reveal q = u @ t
"""


def test_both_conversions_encrypted(tmp_path: Path) -> None:
    """packed -> cyclic (`replicate_period`: the column sums of S repeated every 8 slots) before
    the product, cyclic -> packed (a mask) after it, for a slot sum and an inner product."""
    source = tmp_path / "prog.hec"
    source.write_text(CONVERSIONS)
    comp = compile_file(source, Options(sizes=Sizes.parse("N=10,C=6")))
    converts = [op for op in comp.program.walk() if isinstance(op, ckks.ConvertOp)]
    assert sorted(op.to_layout for op in converts) == ["cyclic<8>", "packed"]
    rng = np.random.default_rng(5)
    arrays = {
        "S": rng.integers(0, 3, (10, 6)).astype(np.float64),
        "A": rng.uniform(-1, 1, (6, 6)),
        "u": rng.uniform(-1, 1, 6),
    }
    paths = _save(tmp_path / "in", arrays)
    result = run_encrypted(source, paths, tmp_path / "out")
    t = arrays["A"] @ arrays["S"].sum(axis=0)
    assert rel_error(result.revealed["s"], t.sum()) <= 1e-3
    assert rel_error(result.revealed["q"], arrays["u"] @ t) <= 1e-3
