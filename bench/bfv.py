"""`bench/run bfv`: our BFV (HPS RNS variant) against OpenFHE's BFVrns (HPS) and Lattigo's
BFV (bench/lattigo) in the same run.

Main table, at (N = 2^13, 2 limbs), (2^14, 4 limbs), (2^15, 8 limbs) of 60-bit primes,
t = 65537 (batching), hybrid key switching with dnum = 2 and 60-bit special primes on both
sides: median milliseconds of multiply + relinearize, multiply by a (prepared) plaintext,
row rotation by one, public-key encryption. OpenFHE is configured by multiplicative depth
(1, 5, 12) so that its own parameter generation gives exactly those limb counts; the driver
checks OpenFHE's ring dimension and limb count and uses the same on our side.

Grid in the style of the HPS paper's Table 1 (multiplication time over depth L and ring
dimension n): t = 2, L in {1, 5, 10, 20, 30}, n the smallest ring dimension OpenFHE finds
128-bit secure for that depth; our side uses OpenFHE's n and limb count (60-bit primes).
Rows: multiply (no relinearization) and multiply + relinearize.

Single thread on every side by default (HEC_THREADS=1, OMP_NUM_THREADS=1, GOMAXPROCS=1).
Medians of `--repeats` runs (default 7) after one warm-up, in process CPU time on every side,
and of the main table's `--rounds` rounds (default 3: OpenFHE, ours and Lattigo one after
another, then again; each figure the median over rounds: a burst of load on this shared
machine, which can slow all the repeats of one operation by up to 1.5x, then moves one
round's figure instead of the row)
(single-threaded runs; on a machine shared with other builds wall time mostly measures the
scheduler). `--threads 1,2` also runs the main table with two threads on every side
(HEC_THREADS, OMP_NUM_THREADS, GOMAXPROCS = 2) in wall seconds (process CPU time would add the
threads up); those cases end in "(2 threads)". Ours and OpenFHE split an operation's limbs
over the threads; Lattigo's evaluator runs one operation on one goroutine (its rows say so).
Absolute times are hints, the ratios (ours / OpenFHE, same run) are the result.
Target: ratio <= 0.5.

Lattigo (the bgv package's scale-invariant evaluator, Lattigo's BFV) gets the same ring
dimension, limbs of 60 bits and t, and ceil(limbs / dnum) special primes of 60 bits (Lattigo's
digit count is ceil(limbs / special primes)); GOMAXPROCS=1, process CPU time (getrusage,
garbage collection included). Its "rotate rows by 1" is RotateColumns(1) (Lattigo's name for
the rotation inside each half of the slots, OpenFHE's EvalRotate(1)). Lattigo rejects t = 2
(it needs a plaintext modulus with a cyclotomic order >= 16), so the grid rows say so. The
bare key switch (ApplyEvaluationKey) is a Lattigo-only row (ours: -). "add" is ours into an
existing ciphertext (add_inplace) against Lattigo's Add into a preallocated output: the same
bytes read and written (OpenFHE: not measured). A reference
that cannot be set up or run shows "not available (reason)" and the bench goes on;
`ratio_fastest` = ours / fastest reference.

The add and multiply-by-plaintext rows also carry their memory floors (bench/common.py): our
binary reads and writes the same limbs with no arithmetic, same threads and clock; for the
product the least traffic (ciphertext and plaintext read, output written), which is ours too
(its Shoup constants are computed in registers, not read from a table; a binary that still
emits `multiply_plain_floor_table` gets it as `memory_floor_ours`).
"""

from __future__ import annotations

import argparse
import json
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
    parse_op_lines,
    print_rows,
    reference_python,
    run_lattigo,
    try_reference,
)

MAIN_CASES = ((13, 2, 1), (14, 4, 5), (15, 8, 12))  # (log N, limbs, OpenFHE depth)
GRID_DEPTHS = (1, 5, 10, 20, 30)
PLAIN_MODULUS = 65537
DNUM = 2
OPS = (
    ("multiply_relin", "multiply+relin"),
    ("multiply", "multiply (no relin)"),
    ("multiply_plain", "multiply by plaintext"),
    ("rotate", "rotate rows by 1"),
    ("encrypt", "encrypt (public key)"),
    ("add", "add"),
)


def thread_env(threads: int = 1) -> dict[str, str]:
    return dict(os.environ, HEC_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def clock(threads: int) -> str:
    """Process CPU time for single-threaded runs, wall time for more threads."""
    return "cpu" if threads == 1 else "wall"


def run_reference(cfg: dict[str, Any], threads: int = 1) -> tuple[Any, dict[str, float]]:
    cfg = dict(cfg, clock=clock(threads))
    out = subprocess.run(
        [reference_python(), str(ROOT / "bench" / "bfv_reference.py"), json.dumps(cfg)],
        check=True,
        capture_output=True,
        text=True,
        env=thread_env(threads),
    )
    return parse_op_lines(out.stdout)


def run_ours(
    log_n: int, limbs: int, t: int, dnum: int, repeats: int, ops: str, threads: int = 1
) -> tuple[Any, dict[str, float]]:
    binary = ROOT / "build" / "bench" / "hec_bench_bfv"
    if not binary.exists():
        raise SystemExit(f"bench/bfv: {binary} is missing; build the runtime with preset 'bench'")
    args = [str(binary), "--log-n", str(log_n), "--limbs", str(limbs), "--q-bits", "60"]
    args += ["--t", str(t), "--dnum", str(dnum), "--special", "1"]
    args += ["--repeats", str(repeats), "--ops", ops, "--clock", clock(threads)]
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=thread_env(threads))
    return parse_op_lines(out.stdout)


def run_lattigo_bfv(
    log_n: int, limbs: int, t: int, dnum: int, repeats: int, ops: str, threads: int = 1
) -> tuple[dict[str, float], str]:
    """Lattigo's BFV at these parameters: ({op: seconds}, a note on its parameters)."""
    cfg = {"scheme": "bfv", "log_n": log_n, "log_q": [60] * limbs, "t": t, "ops": ops}
    cfg.update({"log_p": [60] * -(-limbs // dnum), "repeats": repeats, "clock": clock(threads)})
    params, times = run_lattigo(cfg, threads=threads)
    note = f"dnum {params['dnum']}, {params['special']} special primes, log QP "
    note += f"{params['log_qp']:.0f}, GOMAXPROCS={threads}"
    return times, note + (" (one operation runs on one goroutine)" if threads > 1 else "")


def measure_main_case(
    cfg: dict[str, Any], log_n: int, limbs: int, threads: int, repeats: int, rounds: int
) -> tuple[Any, ...]:
    """One main-table case, `rounds` rounds interleaved (common.measure_rounds: OpenFHE, ours,
    Lattigo, then again), each figure the median over rounds. Ours and Lattigo take the limb
    count OpenFHE's parameter generation chose in its first round (`limbs` without OpenFHE).
    Returns (OpenFHE's (params, times) or None, its note, our params, our times, Lattigo's
    (times, note) or None, its note)."""
    chosen = {"limbs": limbs}

    def openfhe() -> tuple[dict[str, Any], dict[str, float]]:
        params, times = run_reference(cfg, threads)
        chosen["limbs"] = params["limbs"]
        return params, times

    def ours() -> tuple[Any, dict[str, float]]:
        return run_ours(log_n, chosen["limbs"], PLAIN_MODULUS, DNUM, repeats, "all", threads)

    def lattigo() -> tuple[dict[str, float], str]:
        return run_lattigo_bfv(log_n, chosen["limbs"], PLAIN_MODULUS, DNUM, repeats, "all", threads)

    got = measure_rounds(
        rounds, [("openfhe", openfhe, True), ("ours", ours, False), (LATTIGO, lattigo, True)]
    )
    ref_runs, ref_note = got["openfhe"]
    measured = None
    if ref_runs:
        measured = (ref_runs[0][0], median_of_rounds([times for _, times in ref_runs]))
    ours_runs, _ = got["ours"]
    assert ours_runs is not None  # ours is not a reference: it is never dropped
    ours_times = median_of_rounds([times for _, times in ours_runs])
    lattigo_runs, lattigo_note = got[LATTIGO]
    lattigo_times = lattigo_of_rounds(lattigo_runs)
    return measured, ref_note, ours_runs[0][0], ours_times, lattigo_times, lattigo_note


def main() -> int:
    parser = argparse.ArgumentParser(description="BFV (HPS) vs OpenFHE BFVrns HPS")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of every main-table case: OpenFHE, ours and Lattigo in turn, then again; "
        "each figure the median over rounds (default 3)",
    )
    parser.add_argument("--skip-grid", action="store_true", help="only the main table")
    parser.add_argument("--max-log-n", type=int, default=15, help="skip larger main cases")
    parser.add_argument(
        "--threads",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1],
        help="thread counts for the main table, e.g. 1,2 (default 1; the grid runs at 1)",
    )
    args = parser.parse_args()
    if any(t < 1 for t in args.threads):
        parser.error("--threads: positive integers")
    if args.rounds < 1:
        parser.error("--rounds: a positive integer")
    rows: list[Row] = []
    notes: list[str] = []
    for threads in args.threads:
        suffix = "" if threads == 1 else f" ({threads} threads)"
        for log_n, limbs, depth in MAIN_CASES:
            if log_n > args.max_log_n:
                continue
            cfg: dict[str, Any] = {"log_n": log_n, "depth": depth, "t": PLAIN_MODULUS}
            cfg.update({"dnum": DNUM, "repeats": args.repeats, "ops": "all"})
            measured, ref_note, ours_params, ours, lattigo, lattigo_note = measure_main_case(
                cfg, log_n, limbs, threads, args.repeats, args.rounds
            )
            ref_params, ref = measured if measured else ({"limbs": limbs}, None)
            if ref and (ref_params["ring_dim"] != 1 << log_n or ref_params["limbs"] != limbs):
                notes.append(f"N=2^{log_n}: OpenFHE chose {ref_params}, wanted {limbs} limbs")
            limbs = ref_params["limbs"]
            notes.append(f"N=2^{log_n}{suffix}: ours {ours_params}; OpenFHE {ref_params}")
            for op, label in OPS:
                if op in ours:
                    case = f"N=2^{log_n} Q={limbs}x60 {label}{suffix}"
                    refs = lattigo_refs(op, ref, ref_note, lattigo, lattigo_note)
                    floor, floor_ours = ours.get(f"{op}_floor"), ours.get(f"{op}_floor_table")
                    rows.append(
                        Row(
                            "bfv",
                            case,
                            ours[op] * 1e3,
                            refs[0].value,
                            "ms",
                            refs,
                            floor=floor * 1e3 if floor is not None else None,
                            floor_ours=floor_ours * 1e3 if floor_ours is not None else None,
                        )
                    )
            for op, label in (("keyswitch", "key switch alone"),):
                refs = lattigo_refs(op, None, "not measured", lattigo, lattigo_note)
                case = f"N=2^{log_n} Q={limbs}x60 {label}{suffix}"
                rows.append(Row("bfv", case, None, None, "ms", refs))
    if not args.skip_grid:
        for depth in GRID_DEPTHS:
            cfg = {"log_n": 0, "depth": depth, "t": 2, "dnum": DNUM, "repeats": args.repeats}
            cfg["ops"] = "mult"  # multiply timings only
            measured, ref_note = try_reference("openfhe", partial(run_reference, cfg))
            if measured is None:
                notes.append(f"grid L={depth}: skipped, OpenFHE chooses its ring ({ref_note})")
                continue
            ref_params, ref = measured
            n = int(ref_params["ring_dim"])
            log_n = n.bit_length() - 1
            limbs = int(ref_params["limbs"])
            dnum = int(ref_params["dnum"])
            ours_params, ours = run_ours(log_n, limbs, 2, dnum, args.repeats, "mult")
            lattigo, lattigo_note = try_reference(
                LATTIGO, partial(run_lattigo_bfv, log_n, limbs, 2, dnum, args.repeats, "mult")
            )
            notes.append(f"grid L={depth}: ours {ours_params}; OpenFHE {ref_params}")
            for op, label in OPS[:2]:
                case = f"grid L={depth} n=2^{log_n} Q={limbs}x60 t=2 {label}"
                refs = lattigo_refs(op, ref, ref_note, lattigo, lattigo_note)
                rows.append(Row("bfv", case, ours[op] * 1e3, refs[0].value, "ms", refs))
    print_rows(
        f"BFV (HPS) vs OpenFHE {openfhe_version()} BFVrns HPS and Lattigo {lattigo_version()} "
        f"BFV, {','.join(map(str, args.threads))} threads, median CPU ms at 1 thread, wall ms at "
        f"more, main table median of {args.rounds} interleaved rounds (ratio_fastest = ours / "
        "fastest reference; target <= 0.5)",
        rows,
    )
    for note in notes:
        print(note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
