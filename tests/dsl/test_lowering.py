"""Golden tests of the lowering to `stat` (FileCheck): each `tests/dsl/lowering/*.hec` holds
a program and the CHECK lines its `hec ir` output must match."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = sorted((HERE / "lowering").glob("*.hec"))
FILECHECK = shutil.which("filecheck") or str(Path(sys.executable).with_name("filecheck"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowering_golden(case: Path) -> None:
    ir = subprocess.run(
        [sys.executable, "-m", "hec", "ir", str(case)], capture_output=True, text=True, check=False
    )
    assert ir.returncode == 0, ir.stderr
    check = subprocess.run(
        [FILECHECK, str(case)], input=ir.stdout, capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr + "\n" + ir.stdout


def test_filecheck_can_fail(tmp_path: Path) -> None:
    # The golden test above must be able to fail: a wrong CHECK line is reported.
    wrong = tmp_path / "wrong.hec"
    wrong.write_text("# CHECK: stat.this_op_does_not_exist\n")
    check = subprocess.run(
        [FILECHECK, str(wrong)], input="stat.add\n", capture_output=True, text=True, check=False
    )
    assert check.returncode != 0
