"""Shared pieces of the benchmarks: medians over repeats, the human table and the JSON rows.

Every benchmark ends by printing one JSON object per measured row with the keys `bench`,
`case`, `ours`, `reference`, `ratio`, `unit` (`reference` and `ratio` null where there is
no reference), after its human-readable table, and `ratio_fastest` (ours / the fastest
available reference). Benchmarks with several reference libraries (ckks, bfv, fhew) also give
`references` (per library: name, version, value or null, note — the parameters, or why the
library is not available) and, where tfhe-rs is one of them, `ratio_tfhe`; `reference` and
`ratio` stay the OpenFHE figure; `ours_note` states our parameters' security where a row
compares it. `ours` is null on a row only a reference measures.

A memory-bound row (add, BFV's multiply by a plaintext) also carries its memory floor, measured
in the same run by our bench binary (runtime/bench/memory_floor.h: the same words read and
written as the operation, split over the same threads, with no arithmetic): `memory_floor` is
the least traffic any implementation of the operation needs (its operands read, its output
written), `memory_floor_ours` the traffic of our kernel where it reads more (a table of
constants), `ratio_floor` = ours / memory_floor, and `target_below_floor` is true when half the
fastest reference's time is below the floor: no implementation reaches the 0.5 target on this
machine.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


@dataclass(frozen=True)
class Reference:
    """One reference library's figure in a row: `value` is None when the library is not
    available (`note` says why) or does not measure that case."""

    name: str
    version: str
    value: float | None
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "value": self.value, "note": self.note}


@dataclass(frozen=True)
class Row:
    bench: str
    case: str
    ours: float | None
    reference: float | None
    unit: str
    refs: tuple[Reference, ...] = ()
    ours_note: str = ""
    floor: float | None = None
    floor_ours: float | None = None

    @property
    def ratio(self) -> float | None:
        return _ratio(self.ours, self.reference)

    @property
    def ratio_fastest(self) -> float | None:
        values = [r.value for r in self.refs if r.value]
        if not self.refs and self.reference:
            values = [self.reference]
        return _ratio(self.ours, min(values)) if values else None

    @property
    def ratio_floor(self) -> float | None:
        return _ratio(self.ours, self.floor)

    @property
    def target_below_floor(self) -> bool | None:
        """True when half the fastest reference's time is below the memory floor."""
        values = [r.value for r in self.refs if r.value] or (
            [self.reference] if self.reference else []
        )
        if self.floor is None or not values:
            return None
        return 0.5 * min(values) < self.floor

    @property
    def ratio_tfhe(self) -> float | None:
        return next((_ratio(self.ours, r.value) for r in self.refs if r.name == "tfhe-rs"), None)

    def as_json(self) -> str:
        row: dict[str, object] = {
            "bench": self.bench,
            "case": self.case,
            "ours": self.ours,
            "reference": self.reference,
            "ratio": self.ratio,
            "unit": self.unit,
        }
        row["ratio_fastest"] = self.ratio_fastest
        if self.ours_note:
            row["ours_note"] = self.ours_note
        if self.floor is not None:
            row["memory_floor"] = self.floor
            if self.floor_ours is not None:
                row["memory_floor_ours"] = self.floor_ours
            row["ratio_floor"] = self.ratio_floor
            row["target_below_floor"] = self.target_below_floor
        if self.refs:
            row["references"] = [r.as_dict() for r in self.refs]
            if any(r.name == "tfhe-rs" for r in self.refs):
                row["ratio_tfhe"] = self.ratio_tfhe
        return json.dumps(row)


def _ratio(ours: float | None, reference: float | None) -> float | None:
    if ours is None or not reference:
        return None
    return ours / reference


# The repeat rule of every timing loop, ours (runtime/bench/repeats.h) and the references'
# (the OpenFHE scripts through another_repeat, bench/lattigo/main.go, bench/tfhers): at least
# `repeats` runs, and more while they add up to less than MIN_MEASURED_SECONDS (at most
# MAX_REPEATS).
MIN_MEASURED_SECONDS = 0.25
MAX_REPEATS = 1000


def another_repeat(done: int, repeats: int, total: float) -> bool:
    """Whether to time one more run after `done` runs totalling `total` seconds."""
    return done < repeats or (total < MIN_MEASURED_SECONDS and done < MAX_REPEATS)


def median_of_repeats(fn: Callable[[], object], repeats: int, clock: Callable[[], float]) -> float:
    """Median `clock` time of `fn()` after one unmeasured run, under the repeat rule above."""
    fn()
    times: list[float] = []
    total = 0.0
    while another_repeat(len(times), repeats, total):
        start = clock()
        fn()
        times.append(clock() - start)
        total += times[-1]
    return statistics.median(times)


def _cell(value: float | None, width: int, fmt: str) -> str:
    return f"{value:{width}{fmt}}" if value is not None else f"{'-':>{width}}"


def print_rows(title: str, rows: list[Row]) -> None:
    """The table for people (with a column per reference library when the rows have them, and
    the reasons a library is not available below it), then the JSON lines for tools."""
    print(title)
    names = list(dict.fromkeys(ref.name for r in rows for ref in r.refs))
    floors = any(r.floor is not None for r in rows)
    if names:
        header = f"{'case':<44} {'ours':>10}" + "".join(f" {n[:10]:>10}" for n in names)
        header += f" {'ratio_fastest':>13}" + (f" {'mem. floor':>11}" if floors else "") + "  unit"
    else:
        header = f"{'case':<44} {'ours':>12} {'reference':>12} {'ratio':>7}  unit"
    print(header)
    print("-" * len(header))
    for r in rows:
        if names:
            by_name = {ref.name: ref.value for ref in r.refs}
            cells = "".join(f" {_cell(by_name.get(n), 10, '.4g')}" for n in names)
            line = f"{r.case:<44} {_cell(r.ours, 10, '.4g')}{cells}"
            line += f" {_cell(r.ratio_fastest, 13, '.3f')}"
            if floors:
                mark = "*" if r.target_below_floor else " "
                line += f" {_cell(r.floor, 10, '.4g')}{mark}"
            print(f"{line}  {r.unit}")
        else:
            ref, ratio = _cell(r.reference, 12, ".4g"), _cell(r.ratio, 7, ".3f")
            print(f"{r.case:<44} {_cell(r.ours, 12, '.4g')} {ref} {ratio}  {r.unit}")
    if floors:
        print(
            "mem. floor: the operation's words read and written with no arithmetic, same run and"
            " threads (our binary); *: half the fastest reference is below it, so no"
            " implementation reaches 0.5 here"
        )
    versions = {(ref.name, ref.version) for r in rows for ref in r.refs}
    if versions:
        print("references: " + ", ".join(f"{n} {v}" for n, v in sorted(versions)))
    notes = dict.fromkeys(
        f"{ref.name}: {ref.note}"
        for r in rows
        for ref in r.refs
        if ref.value is None and ref.note.startswith("not available")
    )
    for note in notes:
        print(note)
    print()
    for r in rows:
        print(r.as_json())


class ReferenceUnavailableError(Exception):
    """A reference library could not be installed, built or run; the message says why."""


def reference_tool(which: str) -> str:
    """`bench/setup-reference WHICH` (openfhe, lattigo or tfhers): installs or builds that
    reference and returns the path it prints last (an interpreter or a binary)."""
    try:
        out = subprocess.run(
            [str(ROOT / "bench" / "setup-reference"), which],
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as e:
        raise ReferenceUnavailableError(failure_reason(e)) from e
    return out.stdout.strip().splitlines()[-1]


def failure_reason(e: BaseException) -> str:
    """One line saying why a reference's subprocess failed: the last line of its stderr."""
    if isinstance(e, subprocess.CalledProcessError):
        lines = (e.stderr or "").strip().splitlines()
        # The last line, without the source path a C++ library puts in front of its message.
        last = re.sub(r"/\S+:l\.\d+:", "", lines[-1]).strip() if lines else ""
        return f"exit {e.returncode}: {last}" if last else f"exit {e.returncode}"
    return str(e) or type(e).__name__


def try_reference(name: str, fn: Callable[[], T]) -> tuple[T | None, str]:
    """Runs one reference's measurement; on failure returns (None, 'not available (why)') so
    the benchmark prints that in the reference's cells and goes on with the others."""
    try:
        return fn(), ""
    except (ReferenceUnavailableError, subprocess.CalledProcessError, OSError, ValueError) as e:
        reason = failure_reason(e)
        print(f"bench: {name}: not available ({reason})", file=sys.stderr)
        return None, f"not available ({reason})"


def measure_rounds(
    rounds: int, steps: list[tuple[str, Callable[[], Any], bool]]
) -> dict[str, tuple[list[Any] | None, str]]:
    """Runs every step `rounds` times, interleaved (each step once, in order, then again), so
    that a burst of load on the machine lands in one round of one implementation rather than in
    all the repeats of one of them. A step is (name, fn, is_reference); a reference that fails
    once is left out of the later rounds (try_reference). Returns name -> (the results of every
    round, or None for a reference that failed, and its note)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    results: dict[str, tuple[list[Any] | None, str]] = {name: ([], "") for name, _, _ in steps}
    for _ in range(rounds):
        for name, fn, is_reference in steps:
            runs, _ = results[name]
            if runs is None:
                continue
            if not is_reference:
                runs.append(fn())
                continue
            value, note = try_reference(name, fn)
            if value is None:
                results[name] = (None, note)
            else:
                runs.append(value)
    return results


def median_of_rounds(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Per operation, the median over rounds of each round's figure (operations every round
    measured)."""
    keys = set(rounds[0]).intersection(*rounds[1:])
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0] if k in keys}


def lattigo_of_rounds(
    runs: list[tuple[dict[str, float], str]] | None,
) -> tuple[dict[str, float], str] | None:
    """A Lattigo reference's rounds ((times, note) each, as run_lattigo_ckks / run_lattigo_bfv
    return them) as one (median times, note), or None when it was not available."""
    if not runs:
        return None
    return median_of_rounds([times for times, _ in runs]), runs[0][1]


def parse_rounds(argv: list[str], default: int) -> int | None:
    """The value of `--rounds R` (a positive integer) in argv, `default` without it, None when
    malformed."""
    if "--rounds" not in argv:
        return default
    at = argv.index("--rounds")
    try:
        value = int(argv[at + 1])
    except (IndexError, ValueError):
        return None
    return value if value >= 1 else None


def cargo_lock_version(lock: Path, package: str) -> str:
    """The version Cargo.lock pins for `package` ('unknown' if not there)."""
    if lock.exists():
        for block in lock.read_text().split("[[package]]"):
            lines = [line.strip() for line in block.strip().splitlines()]
            if lines[:1] == [f'name = "{package}"'] and lines[1].startswith("version = "):
                return lines[1].split('"')[1]
    return "unknown"


def go_mod_version(mod: Path, module: str) -> str:
    """The version go.mod requires for `module` ('unknown' if not there)."""
    if mod.exists():
        for line in mod.read_text().splitlines():
            words = line.replace("require", "").split()
            if len(words) >= 2 and words[0] == module:
                return words[1]
    return "unknown"


def reference_python() -> str:
    """Path of the Python 3.10 interpreter that has the pinned `openfhe` wheel, or
    HEC_OPENFHE_PYTHON (an interpreter with another `openfhe` wheel, to compare versions)."""
    override = os.environ.get("HEC_OPENFHE_PYTHON")
    if override:
        return override
    return reference_tool("openfhe")


LATTIGO = "lattigo"
TFHERS = "tfhe-rs"


def openfhe_version() -> str:
    """The OpenFHE release bench/setup-reference pins (its wheel version's first three parts)."""
    for line in (ROOT / "bench" / "setup-reference").read_text().splitlines():
        if "OPENFHE_VERSION=" in line:
            return ".".join(line.split('OPENFHE_VERSION="')[1].split('"')[0].split(".")[:3])
    return "unknown"


def lattigo_version() -> str:
    return go_mod_version(
        ROOT / "bench" / "lattigo" / "go.mod", "github.com/tuneinsight/lattigo/v6"
    )


def tfhers_version() -> str:
    return cargo_lock_version(ROOT / "bench" / "tfhers" / "Cargo.lock", "tfhe")


def run_lattigo(cfg: dict[str, object], threads: int = 1) -> tuple[dict, dict[str, float]]:
    """Runs the Lattigo reference (bench/lattigo, built by `bench/setup-reference lattigo`)
    with GOMAXPROCS = threads: returns its parameter description and {op: median seconds}."""
    binary = reference_tool("lattigo")
    env = dict(os.environ, GOMAXPROCS=str(threads))
    out = subprocess.run(
        [binary, json.dumps(cfg)], check=True, capture_output=True, text=True, env=env
    )
    params, times = parse_op_lines(out.stdout)
    return params or {}, times


def parse_op_lines(out: str) -> tuple[Any, dict[str, float]]:
    """A reference's JSON lines (ours, OpenFHE's, Lattigo's): {"params": ...} once, then
    {"op": name, "seconds": median} per operation; other lines are skipped."""
    params: Any = None
    times: dict[str, float] = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "params" in obj:
            params = obj["params"]
        else:
            times[obj["op"]] = float(obj["seconds"])
    return params, times


def lattigo_refs(
    op: str,
    openfhe: dict[str, float] | None,
    openfhe_note: str,
    lattigo: tuple[dict[str, float], str] | None,
    lattigo_note: str,
) -> tuple[Reference, ...]:
    """A CKKS/BFV row's OpenFHE and Lattigo cells in ms from their {op: seconds} (Lattigo's
    with its parameter note), or why they are missing (the `*_note` of try_reference)."""
    openfhe_ms = openfhe[op] * 1e3 if openfhe and op in openfhe else None
    lattigo_ms = lattigo[0][op] * 1e3 if lattigo and op in lattigo[0] else None
    if not openfhe_note:
        openfhe_note = "" if openfhe_ms is not None else "not measured"
    if not lattigo_note:
        lattigo_note = lattigo[1] if lattigo and lattigo_ms is not None else "not measured"
    return (
        Reference("openfhe", openfhe_version(), openfhe_ms, openfhe_note),
        Reference(LATTIGO, lattigo_version(), lattigo_ms, lattigo_note),
    )
