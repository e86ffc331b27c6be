"""Shared pieces of the benchmarks: medians over repeats, the human table and the JSON rows.

Every benchmark ends by printing one JSON object per measured row with the keys `bench`,
`case`, `ours`, `reference`, `ratio`, `unit` (`reference` and `ratio` null where there is
no reference), after its human-readable table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    bench: str
    case: str
    ours: float
    reference: float | None
    unit: str

    @property
    def ratio(self) -> float | None:
        if self.reference is None or self.reference == 0:
            return None
        return self.ours / self.reference

    def as_json(self) -> str:
        return json.dumps(
            {
                "bench": self.bench,
                "case": self.case,
                "ours": self.ours,
                "reference": self.reference,
                "ratio": self.ratio,
                "unit": self.unit,
            }
        )


def median_seconds(fn: Callable[[], object], repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of `fn()` over `repeats` runs after `warmup` unmeasured runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def print_rows(title: str, rows: list[Row]) -> None:
    """The table for people, then the JSON lines for tools."""
    print(title)
    header = f"{'case':<44} {'ours':>12} {'reference':>12} {'ratio':>7}  unit"
    print(header)
    print("-" * len(header))
    for r in rows:
        ref = f"{r.reference:12.4g}" if r.reference is not None else f"{'-':>12}"
        ratio = f"{r.ratio:7.3f}" if r.ratio is not None else f"{'-':>7}"
        print(f"{r.case:<44} {r.ours:12.4g} {ref} {ratio}  {r.unit}")
    print()
    for r in rows:
        print(r.as_json())


def reference_python() -> str:
    """Path of the Python 3.10 interpreter that has the pinned `openfhe` wheel, or
    HEC_OPENFHE_PYTHON (an interpreter with another `openfhe` wheel, to compare versions)."""
    override = os.environ.get("HEC_OPENFHE_PYTHON")
    if override:
        return override
    out = subprocess.run(
        [str(ROOT / "bench" / "setup-reference")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]
