"""The plaintext meaning of every example in upstream MLIR, executed: `hec ir --upstream`
(func/arith/math/tensor/linalg) lowered to LLVM by mlir-opt-19 and run by mlir-cpu-runner-19
agrees with the plaintext reference (dsl/reference.py) within 1e-9 relative, value by value:
a fourth check of every example, computed by MLIR's lowering and LLVM's code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import evaluate
from targets.mlir import tools
from targets.mlir.upstream import (
    LOWER_TO_LLVM,
    harness,
    lower_to_upstream,
    parse_printed,
    sample_inputs,
)
from tests.mlir.common import EXAMPLES, HERE, NAMES, need, run_hec, small_sizes, stat_module

RTOL = 1e-9
PROGRAMS = [*EXAMPLES, HERE / "client-functions.hec", HERE / "small-matrix-language.hec"]
PROGRAM_IDS = [*NAMES, "client-functions.hec", "small-matrix-language.hec"]


def run_upstream(
    path: Path, sizes: dict[str, int], seed: int, *, heir: bool = False
) -> tuple[dict, dict]:
    """The program's results as MLIR executes them, and the reference's. With `heir`, the
    form given to HEIR (the server's part, flat vectors: targets/mlir/upstream.py)."""
    module = stat_module(path)
    program = lower_to_upstream(module, sizes, client=not heir, mark_secret=heir)
    inputs = sample_inputs(module, sizes, seed=seed)
    given = {name: np.reshape(inputs[name], shape) for name, shape in program.inputs}
    llvm = tools.run_tool(tools.mlir_opt(), "mlir-opt", LOWER_TO_LLVM, harness(program, given))
    libs = tools.runner_libraries()
    assert libs is not None, "libmlir-19 (the runner libraries) is missing: run scripts/setup"
    printed = tools.run_tool(
        need(tools.mlir_cpu_runner(), "mlir-cpu-runner-19"),
        "mlir-cpu-runner",
        ["-e", "main", "-entry-point-result=void", "-shared-libs=" + ",".join(libs)],
        llvm,
    )
    reference = evaluate(check(parse_file(path)), sizes, inputs)
    want = {**reference.revealed, **({} if heir else reference.client)}
    got = parse_printed(printed, program)
    return {k: np.reshape(v, np.shape(want[k])) for k, v in got.items()}, want


def assert_close(name: str, got: npt.NDArray[np.float64], want: npt.NDArray[np.float64]) -> None:
    """|got - want| <= 1e-9 |want| entry by entry (an entry that is 0 is measured against the
    largest |want|); NaN where and only where the reference is NaN."""
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, name
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{name}: NaN in different places"
    finite = ~nan
    scale = np.where(want != 0.0, np.abs(want), np.max(np.abs(want[finite]), initial=1.0) or 1.0)
    rel = np.abs(got - want)[finite] / scale[finite]
    assert rel.size == 0 or rel.max() <= RTOL, f"{name}: relative error {rel.max():.3e}"


@pytest.mark.parametrize("path", PROGRAMS, ids=PROGRAM_IDS)
def test_upstream_lowering_executes_and_matches_the_reference(path: Path) -> None:
    sizes = small_sizes(path)
    got, want = run_upstream(path, sizes, seed=7)
    assert set(got) == set(want)
    for name, value in want.items():
        assert_close(name, got[name], value)


SMALL = HERE / "small-matrix-language.hec"


@pytest.mark.parametrize("path", [*EXAMPLES, SMALL], ids=[*NAMES, SMALL.name])
def test_the_heir_form_executes_and_matches_the_reference(path: Path) -> None:
    """What `--compare-heir` gives heir-opt (flat vectors, data movement as products with
    public 0/1 matrices) means the program: executed by MLIR, its results are the revealed
    values of the reference."""
    sizes = small_sizes(path)
    got, want = run_upstream(path, sizes, seed=5, heir=True)
    assert set(got) == set(want)
    for name, value in want.items():
        assert_close(name, got[name], value)


def test_the_tails_reach_small_p_values() -> None:
    """The client-function program exercises tails down to ~1e-12 (so 1 - erf would fail)."""
    got, want = run_upstream(HERE / "client-functions.hec", {"N": 64}, seed=3)
    assert float(np.min(want["c1"])) < 1e-9
    assert_close("c1", got["c1"], want["c1"])


def test_hec_ir_upstream_is_valid_upstream_mlir() -> None:
    result = run_hec("ir", "examples/gwas/chisq.hec", "--upstream", "--size", "N=4,M=3")
    assert result.returncode == 0, result.stderr
    assert "func.func @chisq(%y: tensor<4xf64>, %S: tensor<4x3xf64>)" in result.stdout
    opt = need(tools.mlir_opt(), "mlir-opt-19")
    tools.run_tool(opt, "mlir-opt", ["--verify-each"], result.stdout)
    assert "stat." not in tools.run_tool(opt, "mlir-opt", [], result.stdout)


def test_upstream_refuses_sizes_beyond_the_bounds() -> None:
    result = run_hec("ir", "examples/gwas/chisq.hec", "--upstream", "--size", "N=300000")
    assert result.returncode == 1
    assert "N=300000 is outside [1, 200000]" in result.stderr
