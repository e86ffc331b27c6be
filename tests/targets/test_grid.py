"""The grid layout (docs/layout.md, issue 21): the lowering's refusals, each a located user
error; the flag's; BFV's refusal of a layout it does not run yet; the C++ target's emission;
and small programs in the simulator under several grid shapes against their plaintext
reference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference
from tests.conftest import ROOT

LRA = ROOT / "examples" / "gwas" / "lra.hec"


def hec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


def _program(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.hec"
    path.write_text(text)
    return path


def _refusal(path: Path, sizes: str, rows: int, **options: object) -> UserError:
    with pytest.raises(UserError) as err:
        compile_file(path, Options(sizes=Sizes.parse(sizes), grid_rows=rows, **options))  # type: ignore[arg-type]
    return err.value


HEADER = """param N <= 1000
param M <= 1000
input S: secret[N, M] in {0, 1, 2}
"""
# Sums over the individuals of products, a constant-shifted value and per-SNP values broadcast
# back to the rows (also run encrypted by tests/targets/cpp_target/test_cpp_grid.py).
SUMS = (
    HEADER
    + """input y: secret[N] in {0, 1}
c = sum(y - 0.5)
n11 = y @ S
v = sum(S * (y - 0.5), axis=0)
reveal t = n11 * c
reveal r = sum(S * n11, axis=0)
reveal q = v * v
"""
)


def test_a_product_over_the_grid_columns_is_a_located_error(tmp_path: Path) -> None:
    path = _program(tmp_path, HEADER + "input b: secret[M] in [-1.0, 1.0]\nreveal s = S @ b\n")
    err = _refusal(path, "N=64,M=32", 8)
    assert "a matrix product over M (on the grid columns)" in err.message
    assert err.location is not None and (err.location.line, err.location.column) == (5, 12)


def test_a_sum_over_the_grid_columns_is_a_located_error(tmp_path: Path) -> None:
    path = _program(tmp_path, HEADER + "reveal s = sum(S, axis=1)\n")
    err = _refusal(path, "N=64,M=32", 8)
    assert "a sum over M (on the grid columns)" in err.message
    assert err.location is not None and err.location.line == 4


def test_the_cost_model_falls_back_to_the_corner_layouts_where_the_grid_cannot(
    tmp_path: Path,
) -> None:
    path = _program(tmp_path, HEADER + "reveal s = sum(S, axis=1)\n")
    comp = compile_file(path, Options(sizes=Sizes.parse("N=64,M=32"), grid_rows=0))
    g = report_of(comp)["grid"]
    assert g["rows"] == 1
    assert all("unavailable" in c for c in g["candidates"] if c["rows"] > 1)


def test_grid_rows_must_be_a_power_of_two() -> None:
    run = hec("report", str(LRA), "--size", "N=64,M=16,K=3", "--grid-rows", "3")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "--grid-rows 3: the grid rows must be a power of two" in run.stderr
    run = hec("report", str(LRA), "--size", "N=64,M=16,K=3", "--grid-rows", "many")
    assert run.returncode == 2 and "expected a number of rows" in run.stderr


def test_the_cpp_target_emits_the_grid(tmp_path: Path) -> None:
    """hec compile of a grid program describes each input's and output's grid and streams blocks
    of R rows (the encrypted runs: tests/targets/cpp_target/test_cpp_grid.py)."""
    run = hec(
        "compile", str(LRA), "--size", "N=64,M=16,K=3", "--no-flooding", "--grid-rows", "8",
        "-o", str(tmp_path / "out"), "--no-build",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    cpp = (tmp_path / "out" / "lra.cpp").read_text()
    assert "s.stream_block = 8;" in cpp
    assert "GridLayout{8, {GridRole::kRow, GridRole::kCol}}" in cpp  # S
    assert "fold_grid_rows(ops, " in cpp


def test_bfv_refuses_the_grid_at_the_input(tmp_path: Path) -> None:
    path = _program(tmp_path, HEADER + "input y: secret[N] in {0, 1}\nreveal t = y @ S\n")
    err = _refusal(path, "N=64,M=32", 8, scheme="bfv", owner_side=False, packed_counts=False)
    assert "--scheme bfv: input y is in the grid layout" in err.message
    assert "only the CKKS lowering has yet" in err.message
    assert err.location is not None and err.location.line == 4


@pytest.mark.parametrize("rows", [2, 8, 64])
def test_row_sums_and_broadcasts_in_the_simulator(tmp_path: Path, rows: int) -> None:
    """Sums over the individuals of products, a constant-shifted value (its padding rows are
    masked) and per-SNP values broadcast back to the rows, at N not a multiple of R and M
    spanning several column blocks at the smallest ring."""
    path = _program(tmp_path, SUMS)
    comp = compile_file(
        path, Options(sizes=Sizes.parse("N=77,M=300"), grid_rows=rows, flooding=False)
    )
    check = simulate_against_reference(comp, seed=3, noisy=True)
    for row in check["rows"]:
        bound = 1e-9 if row["mode"] == "exact" else 1e-3
        assert row["max_rel_error"] <= bound, row
    assert np.isfinite([r["max_rel_error"] for r in check["rows"]]).all()
