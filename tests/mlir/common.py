"""Helpers of the MLIR interchange tests: the examples at small sizes, their stat and ckks
modules, and MLIR's and HEIR's tools (missing tools fail the tests: scripts/setup installs
them, so a machine without them is set up wrongly, not a reason to pass)."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file
from dsl.checker import check
from dsl.lower import lower
from dsl.parser import parse_file
from targets.mlir import tools
from targets.mlir.irdl import IRDL_FILE

ROOT = Path(__file__).resolve().parents[2]
# Integer programs (examples/circuits) compile to Boolean circuits, whose layer is the bool
# dialect (CIRCUITS); every other example goes through the stat and scheme layers.
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.hec") if p.parent.name != "circuits")
CIRCUITS = sorted((ROOT / "examples" / "circuits").glob("*.hec"))
NAMES = [str(p.relative_to(ROOT / "examples")) for p in EXAMPLES]
HERE = Path(__file__).resolve().parent

# Small sizes: a few individuals, a few columns, k x k matrices of 3.
_SMALL = {"N": 24, "K": 3}

# Compiled single-party (Options.flooding=False, `--no-flooding`): with the decrypt role's noise
# flooding budgeted, lra's degree-8 chain has no parameters ("no parameters" UserError); single
# party, as hec run and hec gwas use it, it compiles, in 85-95 s even at small sizes (its
# parameter search), so its scheme-layer cases are in the slow tier.
SINGLE_PARTY = {"lra.hec"}


def scheme_cases(paths: list[Path], ids: list[str]) -> list[object]:
    """`paths` as pytest params, those that compile for minutes marked slow."""
    return [
        pytest.param(p, id=i, marks=[pytest.mark.slow] if p.name in SINGLE_PARTY else [])
        for p, i in zip(paths, ids, strict=True)
    ]


def flooding_flags(path: Path) -> list[str]:
    return ["--no-flooding"] if path.name in SINGLE_PARTY else []


def small_sizes(path: Path) -> dict[str, int]:
    params = check(parse_file(path)).params
    return {name: min(bound, _SMALL.get(name, 6)) for name, bound in params.items()}


def size_text(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


@functools.cache
def stat_module(path: Path) -> ModuleOp:
    return lower(check(parse_file(path)))


@functools.cache
def ckks_module(path: Path, complex_packing: bool = True) -> ModuleOp:
    """The compiled ckks module at small sizes; UserError when hec cannot compile it."""
    options = Options(
        sizes=Sizes.parse(size_text(small_sizes(path))),
        complex_packing=complex_packing,
        flooding=path.name not in SINGLE_PARTY,
    )
    return compile_file(path, options).module


def layer_module(path: Path, layer: str) -> ModuleOp:
    return stat_module(path) if layer == "stat" else ckks_module(path)


def need(tool: str | None, what: str) -> str:
    assert tool is not None, f"{what} is missing: scripts/setup installs it"
    return tool


def mlir_opt(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """mlir-opt-19 with hec's IRDL dialects loaded, verifying after each pass; never
    --allow-unregistered-dialect."""
    tool = need(tools.mlir_opt(), "mlir-opt-19 (Debian mlir-19-tools)")
    return subprocess.run(
        [tool, f"--irdl-file={IRDL_FILE}", "--verify-each", *args],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )


def heir_opt(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    tool = need(tools.heir_opt(), "heir-opt (PyPI heir-py)")
    return subprocess.run(
        [tool, *args], input=text, capture_output=True, text=True, check=False, timeout=600
    )


def run_hec(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
