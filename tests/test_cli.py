"""The `hec` command line: version, help listing every subcommand, env facts, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hec import __version__
from hec.cli import COMMANDS, main


def run_hec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False
    )


def test_version_prints_package_version() -> None:
    result = run_hec("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"hec {__version__}"


def test_help_lists_each_subcommand_once() -> None:
    result = run_hec("--help")
    assert result.returncode == 0
    for command in COMMANDS:
        lines = [ln for ln in result.stdout.splitlines() if ln.strip().startswith(command.name)]
        assert len(lines) == 1, f"{command.name!r} should have exactly one help line"
        assert command.help[:30] in result.stdout


def test_no_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: hec" in capsys.readouterr().err


def test_unknown_subcommand_is_rejected() -> None:
    result = run_hec("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_env_json_reports_cpu_and_dependencies() -> None:
    result = run_hec("env", "--json")
    assert result.returncode == 0
    facts = json.loads(result.stdout)
    assert facts["hec"] == __version__
    assert facts["dependencies"]["lark"] is not None
    assert facts["ntt_path"] in {"avx512-ifma", "portable"}


def test_no_complex_packing_keeps_rows_in_real_slots(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["report", "examples/gwas/chisq_numerators.hec", "--size", "N=5000,M=16384", "--json"]
    reports = []
    for extra in ([], ["--no-complex-packing"]):
        assert main([*base, "--precision-bits", "40", *extra]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    packed, plain = reports
    assert packed["keys"]["conjugation"] and not plain["keys"]["conjugation"]
    layouts = {o["layout"] for o in plain["outputs"]}
    assert layouts == {"packed"}
    assert plain["sizes"]["upload_per_individual"] > packed["sizes"]["upload_per_individual"]


def test_error_confidence_default_is_the_compilers() -> None:
    """The CLI states the default failure probability without importing the compiler (start-up);
    it must be the one the compiler uses when the option is not given."""
    from compiler.analysis.noise import DEFAULT_FAILURE_LOG2
    from hec.cli import DEFAULT_ERROR_CONFIDENCE

    assert DEFAULT_ERROR_CONFIDENCE == DEFAULT_FAILURE_LOG2
