"""Every example passes `hec check` and `hec ir`, and its printed IR parses back to the same
IR (custom and generic MLIR forms)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsl.checker import check
from dsl.lower import lower, parse_ir, print_ir
from dsl.parser import parse_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.hec"))
NAMES = [str(p.relative_to(ROOT / "examples")) for p in EXAMPLES]
# Integer programs (examples/circuits) compile to Boolean circuits, not to the stat IR:
# tests/targets/test_fhew_programs.py covers them.
REAL = [p for p in EXAMPLES if p.parent.name != "circuits"]
REAL_NAMES = [str(p.relative_to(ROOT / "examples")) for p in REAL]


def run_hec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


def test_the_four_examples_exist() -> None:
    assert set(NAMES) >= {
        "gwas/chisq_numerators.hec",
        "gwas/lra.hec",
        "stats/meancov.hec",
        "stats/grs.hec",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=NAMES)
def test_example_passes_hec_check(path: Path) -> None:
    result = run_hec("check", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and ": ok: " in lines[0]
    assert result.stderr == ""


@pytest.mark.parametrize("path", REAL, ids=REAL_NAMES)
def test_example_ir_parses_back_to_the_same_ir(path: Path) -> None:
    result = run_hec("ir", str(path))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "stat.program" in text and "stat.reveal" in text
    module = lower(check(parse_file(path)))
    assert text == print_ir(module)
    reparsed = parse_ir(text)
    assert reparsed.is_structurally_equivalent(module)
    assert print_ir(reparsed) == text
    generic = print_ir(module, generic=True)
    assert '"stat.program"() <{' in generic
    assert parse_ir(generic).is_structurally_equivalent(module)


def test_ir_size_does_not_depend_on_the_size_bounds(tmp_path: Path) -> None:
    """Principle 1 of the design: N = 10 and N = 200000 give the same IR but for the bound."""
    source = (ROOT / "examples/gwas/chisq_numerators.hec").read_text()
    small = tmp_path / "small.hec"
    small.write_text(source.replace("200000", "10").replace("1000000", "7"))
    big_ir = print_ir(
        lower(check(parse_file(ROOT / "examples/gwas/chisq_numerators.hec")), name="p")
    )
    small_ir = print_ir(lower(check(parse_file(small)), name="p"))
    assert (
        small_ir.replace("bound = 10 ", "bound = 200000 ").replace("bound = 7 ", "bound = 1000000 ")
        == big_ir
    )


def test_hec_check_reports_errors_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hec"
    bad.write_text("param N <= 10\ninput y: secret[N] in {0, 1}\nreveal r = y / sum(y)\n")
    result = run_hec("check", str(bad))
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"{bad}:3:16: error: division by a secret value" in result.stderr
    assert "reveal r = y / sum(y)" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_hec("ir", str(bad))
    assert result.returncode == 1 and "division by a secret value" in result.stderr


def test_hec_check_on_a_syntax_error_and_a_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hec"
    bad.write_text("param N <=\n")
    result = run_hec("check", str(bad))
    assert result.returncode == 1
    assert f"{bad}:1:11: error: unexpected end of file" in result.stderr
    result = run_hec("check", str(tmp_path / "nope.hec"))
    assert result.returncode == 1 and "cannot read" in result.stderr
    assert "Traceback" not in result.stderr


def test_hec_ir_generic_flag() -> None:
    result = run_hec("ir", "--generic", "examples/stats/grs.hec")
    assert result.returncode == 0
    assert '"stat.matmul"(' in result.stdout


def test_hec_ir_prints_an_integer_programs_bit_slices_and_ckks_refuses_it_located() -> None:
    path = ROOT / "examples" / "circuits" / "add8.hec"
    result = run_hec("ir", str(path))
    assert result.returncode == 0, result.stderr
    assert 'stat.input "a__b7"' in result.stdout and 'stat.reveal "c"' in result.stdout
    refused = run_hec("report", str(path), "--scheme", "ckks")
    assert refused.returncode != 0
    assert f"{path}:6:1: error: 'a' is a u8 value" in refused.stderr, refused.stderr
    assert "--scheme fhew" in refused.stderr and "--scheme bfv" in refused.stderr
