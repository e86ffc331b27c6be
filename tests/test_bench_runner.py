"""`bench/run`: lists benchmarks, refuses unknown names, prints the JSON row format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from common import Row, print_rows  # noqa: E402


def test_list_names_benchmarks() -> None:
    out = subprocess.run(
        [str(ROOT / "bench" / "run"), "--list"], capture_output=True, text=True, check=True
    )
    assert "modarith" in out.stdout.split()


def test_unknown_benchmark_is_refused() -> None:
    out = subprocess.run(
        [str(ROOT / "bench" / "run"), "no-such-bench"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2
    assert "no benchmark named 'no-such-bench'" in out.stderr


def test_rows_end_with_one_json_object_each(capsys) -> None:
    rows = [Row("ntt", "forward N=2^14", 2.0, 4.0, "us"), Row("ntt", "x", 1.0, None, "us")]
    print_rows("title", rows)
    lines = capsys.readouterr().out.strip().splitlines()
    objs = [json.loads(line) for line in lines[-2:]]
    assert objs[0] == {
        "bench": "ntt",
        "case": "forward N=2^14",
        "ours": 2.0,
        "reference": 4.0,
        "ratio": 0.5,
        "unit": "us",
        "ratio_fastest": 0.5,
    }
    assert objs[1]["reference"] is None and objs[1]["ratio"] is None
