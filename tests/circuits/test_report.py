"""docs/circuits.md's tables are the output of compiler/circuits/report.py, not typed in."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.circuits import report

DOC = Path(__file__).resolve().parents[2] / "docs" / "circuits.md"


def section(name: str) -> str:
    text = DOC.read_text()
    start = text.index(report.begin_marker(name)) + len(report.begin_marker(name))
    return text[start : text.index(report.end_marker(name))].strip()


def test_metrics_table_is_up_to_date() -> None:
    assert section("metrics") == report.metrics_table(), (
        "docs/circuits.md is out of date: run python -m compiler.circuits.report --write"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chooser", "abc"])
def test_chooser_and_abc_tables_are_up_to_date(name: str) -> None:
    assert section(name) == report.SECTIONS[name](), (
        "docs/circuits.md is out of date: run python -m compiler.circuits.report --write"
    )
