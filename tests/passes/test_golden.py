"""Golden tests of the passes (FileCheck). Each `tests/passes/<pass-name>*.hec` holds a small
program, a `# PASS: <name>` line naming the pass whose output is checked, optional
`# OPTIONS: key=value ...` (fields of `driver.pipeline.Options`), and CHECK lines. The pipeline
runs up to and including that pass and the IR it prints is matched: only what the pass
decides is checked."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file

HERE = Path(__file__).resolve().parent
CASES = sorted(HERE.glob("*.hec"))
FILECHECK = shutil.which("filecheck") or str(Path(sys.executable).with_name("filecheck"))


def header(path: Path, key: str) -> list[str]:
    return [
        line.split(":", 1)[1].strip()
        for line in path.read_text().splitlines()
        if line.startswith(f"# {key}:")
    ]


def ir_after(path: Path) -> str:
    (name,) = header(path, "PASS")
    fields: dict[str, object] = {}
    for opts in header(path, "OPTIONS"):
        for item in opts.split():
            key, _, value = item.partition("=")
            current = getattr(Options(), key)
            if isinstance(current, Sizes):
                fields[key] = Sizes.parse(value)
            elif isinstance(current, bool):
                fields[key] = value == "1"
            else:
                fields[key] = type(current)(value)
    buffer = io.StringIO()
    compile_file(path, Options(print_ir_after=(name,), **fields), out=buffer)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pass_golden(case: Path) -> None:
    ir = ir_after(case)
    check = subprocess.run(
        [FILECHECK, str(case)], input=ir, capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr + "\n" + ir


def test_every_pass_has_a_golden_test() -> None:
    from driver.pipeline import PASS_NAMES

    covered = {header(c, "PASS")[0] for c in CASES}
    missing = [p for p in PASS_NAMES if p not in covered and not p.startswith("check-")]
    assert not missing, f"passes without a golden test: {missing}"
