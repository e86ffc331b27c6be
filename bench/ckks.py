"""`bench/run ckks`: our RNS-CKKS runtime against OpenFHE (PyPI wheel) and Lattigo (Go,
bench/lattigo) in the same run.

For each parameter set both sides are configured with the same ring dimension, the same
first-prime and scaling-prime bit sizes and number of limbs, the same number of
key-switching digits (dnum) and special primes sized the way OpenFHE sizes them (60-bit
primes, enough to cover the largest digit); both are checked against the 128-bit HE Standard
bound (OpenFHE with HEStd_128_classic). The primes themselves are each library's own choice
of NTT-friendly primes of those sizes. One thread on every side by default (HEC_THREADS=1,
OMP_NUM_THREADS=1, GOMAXPROCS=1): medians over repeats of the CPU time of the calling thread
(this machine's 2 cores are shared: wall time mostly measures waiting for a core; `--wall`
switches every side to wall time). `--threads 1,2` also runs every set with two threads on
every side (HEC_THREADS, OMP_NUM_THREADS and GOMAXPROCS = 2), timed in wall seconds (a CPU
clock would add the threads up); those rows' cases end in "(2 threads)". Ours and OpenFHE
split one operation's limbs over the threads; Lattigo's evaluator runs one operation on one
goroutine whatever GOMAXPROCS is (its parallelism is across ciphertexts), and its rows say
so. The OpenFHE times include Python call overhead (about a microsecond per call, small
against every row but `add`). Ours and Lattigo write every operation into an existing output
(ours encrypt(pt, out), multiply(a, b, out), multiply_relin(a, b, key, out), rescale(a, out),
rotate(a, k, keys, out), add_inplace; Lattigo Encrypt(pt, ct), Mul, MulRelin, Rescale, Rotate
and Add into preallocated outputs); OpenFHE's API returns a new ciphertext (EvalAddInPlace for
"add"). A fresh output measures its page faults as much as the operation (at 2^16 a
ciphertext is 26 MB: a third of an encryption's time went to clearing new pages).

Lattigo gets the same ring dimension, prime sizes and limbs; its hybrid key switching has
ceil(limbs / special primes) digits, so it is given ceil(limbs / dnum) special primes of 60
bits to have the same number of digits (one more special prime than OpenFHE and ours at
N = 2^16). GOMAXPROCS=1; its CPU clock is the process's (getrusage: includes Go's garbage
collector). Its rows also include the bare key switch (ApplyEvaluationKey), which our bench
binary does not time on its own (ours: -). A reference that cannot be set up or run shows
"not available (reason)" and the bench goes on; `ratio_fastest` = ours / fastest reference.

The add rows also carry the memory floor (bench/common.py): our binary reads and writes the
same limbs with no arithmetic, same thread count and clock. An add is one pass over three
ciphertexts' worth of memory on every side, so half the fastest reference's time is below
the floor at one thread: the floor, not the arithmetic, bounds that row.

Every set runs in rounds (default 3, `--rounds R`): ours, OpenFHE and Lattigo one after
another, then again, each figure the median over rounds of each round's median over repeats.
Load on this shared machine comes in bursts of a few hundred milliseconds that slow whatever
runs then by up to 1.5x (seen: 13 consecutive repeats of one multiply at 13 ms against 9);
within one round such a burst moves every repeat of one implementation, across rounds it
moves one round's figure, which the median leaves out.

Usage: bench/run ckks [--quick] [--wall] [--only LOG_N] [--threads 1,2] [--rounds R]
  --quick: skip the N = 2^16 set; --only LOG_N: only the set with N = 2^LOG_N (13, 14 or 16;
  for iterating on one size, no fused-dot row); --threads LIST: thread counts (default 1);
  --rounds R: rounds of every set (default 3).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    LATTIGO,
    ROOT,
    Row,
    lattigo_of_rounds,
    lattigo_refs,
    lattigo_version,
    measure_rounds,
    median_of_rounds,
    openfhe_version,
    parse_rounds,
    print_rows,
    reference_python,
    run_lattigo,
)

OPS = [
    ("encrypt", "encrypt (public key)"),
    ("mul_relin", "ct x ct multiply + relinearize"),
    ("mul_norelin", "ct x ct multiply, no relinearization"),
    ("rescale", "rescale"),
    ("rotate", "rotate by 1"),
    ("hoisted16", "16 hoisted rotations"),
    ("add", "add"),
]

SPECIAL_BITS = 60
# Rounds of every set: ours, OpenFHE and Lattigo each run once a round, in turn (--rounds).
DEFAULT_ROUNDS = 3


def config(log_n: int, first: int, scale: int, limbs: int, dnum: int, repeats: int) -> dict:
    levels = limbs - 1
    bits = [first] + [scale] * levels
    alpha = math.ceil(limbs / dnum)
    largest_digit = max(sum(bits[i : i + alpha]) for i in range(0, limbs, alpha))
    return {
        "log_n": log_n,
        "first_bits": first,
        "scale_bits": scale,
        "levels": levels,
        "dnum": dnum,
        "special": math.ceil(largest_digit / SPECIAL_BITS),
        "special_bits": SPECIAL_BITS,
        "repeats": repeats,
        "clock": "cpu",
    }


def thread_env(threads: int) -> dict[str, str]:
    return dict(os.environ, HEC_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def run_ours(cfg: dict, dot: int = 0, threads: int = 1) -> dict[str, float]:
    binary = ROOT / "build" / "bench" / "hec_bench_ckks"
    args = [str(binary), "--clock", cfg["clock"]]
    for key in (
        "log_n",
        "first_bits",
        "scale_bits",
        "levels",
        "special",
        "special_bits",
        "dnum",
        "repeats",
    ):
        args += ["--" + key.replace("_", "-"), str(cfg[key])]
    if dot:
        args += ["--dot", str(dot)]
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=thread_env(threads))
    return {r["op"]: r["seconds"] for r in map(json.loads, out.stdout.splitlines())}


def run_reference(
    python: str | None, cfg: dict, dot: int = 0, threads: int = 1
) -> dict[str, float]:
    """OpenFHE's medians; `python` None: the interpreter bench/setup-reference installs."""
    python = python or reference_python()
    script = ROOT / "bench" / "ckks_reference.py"
    env = thread_env(threads)
    out = subprocess.run(
        [python, str(script), json.dumps(dict(cfg, dot=dot))],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return {r["op"]: r["seconds"] for r in map(json.loads, out.stdout.splitlines())}


def run_lattigo_ckks(cfg: dict, dot: int = 0, threads: int = 1) -> tuple[dict[str, float], str]:
    """Lattigo at the parameters of `cfg`: ({op: seconds}, a note on its parameters)."""
    limbs = cfg["levels"] + 1
    lattigo_cfg = {
        "scheme": "ckks",
        "log_n": cfg["log_n"],
        "log_q": [cfg["first_bits"]] + [cfg["scale_bits"]] * cfg["levels"],
        "log_p": [SPECIAL_BITS] * math.ceil(limbs / cfg["dnum"]),
        "log_scale": cfg["scale_bits"],
        "repeats": cfg["repeats"],
        "clock": cfg["clock"],
        "dot": dot,
    }
    params, times = run_lattigo(lattigo_cfg, threads=threads)
    note = (
        f"dnum {params['dnum']}, {params['special']} special primes, "
        f"log QP {params['log_qp']:.0f}, GOMAXPROCS={threads}"
    )
    if threads > 1:
        note += " (one operation runs on one goroutine)"
    return times, note


def parse_threads(argv: list[str]) -> list[int] | None:
    """--threads LIST (comma-separated positive integers; default [1]); None if malformed."""
    if "--threads" not in argv:
        return [1]
    at = argv.index("--threads")
    try:
        counts = [int(x) for x in argv[at + 1].split(",")]
    except (IndexError, ValueError):
        return None
    return counts if counts and all(c >= 1 for c in counts) else None


def measure_set(cfg: dict, threads: int, rounds: int, dot: int = 0) -> tuple[Any, ...]:
    """Ours, OpenFHE and Lattigo at `cfg`, `rounds` rounds interleaved (common.measure_rounds),
    each figure the median over rounds: (ours, openfhe, openfhe_note, lattigo, lattigo_note)
    with the references None (and their notes saying why) when unavailable."""
    got = measure_rounds(
        rounds,
        [
            ("ours", partial(run_ours, cfg, dot=dot, threads=threads), False),
            ("openfhe", partial(run_reference, None, cfg, dot, threads=threads), True),
            (LATTIGO, partial(run_lattigo_ckks, cfg, dot, threads=threads), True),
        ],
    )
    ours_runs = got["ours"][0]
    assert ours_runs is not None  # ours is not a reference: it is never dropped
    ours = median_of_rounds(ours_runs)
    ref_runs, ref_note = got["openfhe"]
    ref = median_of_rounds(ref_runs) if ref_runs else None
    lattigo_runs, lattigo_note = got[LATTIGO]
    return ours, ref, ref_note, lattigo_of_rounds(lattigo_runs), lattigo_note


def main() -> int:
    argv = sys.argv[1:]
    quick = "--quick" in argv
    wall = "--wall" in argv
    thread_counts = parse_threads(argv)
    if thread_counts is None:
        print(
            "bench/run ckks: --threads wants a list of positive integers, e.g. 1,2", file=sys.stderr
        )
        return 2
    rounds = parse_rounds(argv, DEFAULT_ROUNDS)
    if rounds is None:
        print("bench/run ckks: --rounds wants a positive integer", file=sys.stderr)
        return 2
    sets = [
        ("N=2^13 L=4", config(13, 45, 35, 4, 4, 15)),
        ("N=2^14 L=6", config(14, 50, 40, 6, 3, 9)),
    ]
    if not quick:
        sets.append(("N=2^16 L=25", config(16, 60, 50, 25, 3, 3)))
    only = None
    if "--only" in argv:
        at = argv.index("--only")
        known = {str(cfg["log_n"]) for _, cfg in sets}
        if at + 1 >= len(argv) or argv[at + 1] not in known:
            value = argv[at + 1] if at + 1 < len(argv) else "(missing)"
            print(
                f"bench/run ckks: --only {value}: expected one of {sorted(known)}", file=sys.stderr
            )
            return 2
        only = int(argv[at + 1])
        sets = [(name, cfg) for name, cfg in sets if cfg["log_n"] == only]
    rows: list[Row] = []
    for threads in thread_counts:
        # One thread: CPU time of the calling thread unless --wall; more: wall time.
        clock = "wall" if wall or threads > 1 else "cpu"
        suffix = "" if threads == 1 else f" ({threads} threads)"
        for name, base in sets:
            cfg = dict(base, clock=clock)
            ours, ref, ref_note, lattigo, lattigo_note = measure_set(cfg, threads, rounds)
            for op, label in OPS:
                refs = lattigo_refs(op, ref, ref_note, lattigo, lattigo_note)
                case = f"{name} {label}{suffix}"
                floor = ours.get(f"{op}_floor")
                rows.append(
                    Row(
                        "ckks",
                        case,
                        ours[op] * 1e3,
                        refs[0].value,
                        "ms",
                        refs,
                        floor=floor * 1e3 if floor is not None else None,
                    )
                )
            refs = lattigo_refs("keyswitch", None, "not measured", lattigo, lattigo_note)
            rows.append(Row("ckks", f"{name} key switch alone{suffix}", None, None, "ms", refs))
        if only is None:
            dot_cfg = dict(config(13, 45, 35, 3, 3, 5), clock=clock)
            pairs = 1000
            ours, ref, ref_note, lattigo, lattigo_note = measure_set(
                dot_cfg, threads, rounds, pairs
            )
            refs = lattigo_refs("dot", ref, ref_note, lattigo, lattigo_note)
            case = f"N=2^13 L=3 fused dot, {pairs} pairs (OpenFHE: EvalMultNoRelin+EvalAdd; "
            case += f"Lattigo: MulThenAdd){suffix}"
            rows.append(Row("ckks", case, ours["dot"] * 1e3, refs[0].value, "ms", refs))
    counts = ", ".join(str(t) for t in thread_counts)
    what = "CPU ms at 1 thread" if not wall else "wall ms"
    if not wall and max(thread_counts) > 1:
        what += ", wall ms at more"
    print_rows(
        f"RNS-CKKS, ours vs OpenFHE {openfhe_version()} and Lattigo {lattigo_version()} "
        f"({counts} threads each, median {what}, median of {rounds} interleaved rounds; "
        "ratio_fastest = ours / fastest reference)",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
