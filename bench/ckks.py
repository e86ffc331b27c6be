"""`bench/run ckks`: our RNS-CKKS runtime against OpenFHE (PyPI wheel) and Lattigo (Go,
bench/lattigo) in the same run.

For each parameter set both sides are configured with the same ring dimension, the same
first-prime and scaling-prime bit sizes and number of limbs, the same number of
key-switching digits (dnum) and special primes sized the way OpenFHE sizes them (60-bit
primes, enough to cover the largest digit); both are checked against the 128-bit HE Standard
bound (OpenFHE with HEStd_128_classic). The primes themselves are each library's own choice
of NTT-friendly primes of those sizes. Single thread on both sides (HEC_THREADS=1,
OMP_NUM_THREADS=1). Medians over repeats of the CPU time of the calling thread by default
(this machine's 2 cores are shared: wall time mostly measures waiting for a core; `--wall`
switches both sides to wall time). The OpenFHE times include Python call overhead (about a
microsecond per call, small against every row but `add`). "add" adds into an existing
ciphertext on every side (ours add_inplace, OpenFHE EvalAddInPlace, Lattigo Add into a
preallocated output): an allocating add measures page faults as much as additions.

Lattigo gets the same ring dimension, prime sizes and limbs; its hybrid key switching has
ceil(limbs / special primes) digits, so it is given ceil(limbs / dnum) special primes of 60
bits to have the same number of digits (one more special prime than OpenFHE and ours at
N = 2^16). GOMAXPROCS=1; its CPU clock is the process's (getrusage: includes Go's garbage
collector). Its rows also include the bare key switch (ApplyEvaluationKey), which our bench
binary does not time on its own (ours: -). A reference that cannot be set up or run shows
"not available (reason)" and the bench goes on; `ratio_fastest` = ours / fastest reference.

Usage: bench/run ckks [--quick] [--wall] [--only LOG_N]
  --quick: skip the N = 2^16 set; --only LOG_N: only the set with N = 2^LOG_N (13, 14 or 16;
  for iterating on one size, no fused-dot row).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    LATTIGO,
    ROOT,
    Row,
    lattigo_refs,
    lattigo_version,
    openfhe_version,
    print_rows,
    reference_python,
    run_lattigo,
    try_reference,
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


CLOCK = "cpu"


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
        "clock": CLOCK,
    }


def run_ours(cfg: dict, dot: int = 0) -> dict[str, float]:
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
    env = dict(os.environ, HEC_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    return {r["op"]: r["seconds"] for r in map(json.loads, out.stdout.splitlines())}


def run_reference(python: str | None, cfg: dict, dot: int = 0) -> dict[str, float]:
    """OpenFHE's medians; `python` None: the interpreter bench/setup-reference installs."""
    python = python or reference_python()
    script = ROOT / "bench" / "ckks_reference.py"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(
        [python, str(script), json.dumps(dict(cfg, dot=dot))],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return {r["op"]: r["seconds"] for r in map(json.loads, out.stdout.splitlines())}


def run_lattigo_ckks(cfg: dict, dot: int = 0) -> tuple[dict[str, float], str]:
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
    params, times = run_lattigo(lattigo_cfg, threads=1)
    note = (
        f"dnum {params['dnum']}, {params['special']} special primes, "
        f"log QP {params['log_qp']:.0f}, GOMAXPROCS=1"
    )
    return times, note


def main() -> int:
    global CLOCK
    quick = "--quick" in sys.argv[1:]
    if "--wall" in sys.argv[1:]:
        CLOCK = "wall"
    sets = [
        ("N=2^13 L=4", config(13, 45, 35, 4, 4, 15)),
        ("N=2^14 L=6", config(14, 50, 40, 6, 3, 9)),
    ]
    if not quick:
        sets.append(("N=2^16 L=25", config(16, 60, 50, 25, 3, 3)))
    only = None
    if "--only" in sys.argv[1:]:
        at = sys.argv.index("--only")
        known = {str(cfg["log_n"]) for _, cfg in sets}
        if at + 1 >= len(sys.argv) or sys.argv[at + 1] not in known:
            value = sys.argv[at + 1] if at + 1 < len(sys.argv) else "(missing)"
            print(
                f"bench/run ckks: --only {value}: expected one of {sorted(known)}", file=sys.stderr
            )
            return 2
        only = int(sys.argv[at + 1])
        sets = [(name, cfg) for name, cfg in sets if cfg["log_n"] == only]
    rows: list[Row] = []
    for name, cfg in sets:
        ours = run_ours(cfg)
        ref, ref_note = try_reference("openfhe", partial(run_reference, None, cfg))
        lattigo, lattigo_note = try_reference(LATTIGO, partial(run_lattigo_ckks, cfg))
        for op, label in OPS:
            refs = lattigo_refs(op, ref, ref_note, lattigo, lattigo_note)
            rows.append(Row("ckks", f"{name} {label}", ours[op] * 1e3, refs[0].value, "ms", refs))
        refs = lattigo_refs("keyswitch", None, "not measured", lattigo, lattigo_note)
        rows.append(Row("ckks", f"{name} key switch alone", None, None, "ms", refs))
    if only is None:
        dot_cfg = config(13, 45, 35, 3, 3, 5)
        pairs = 1000
        ours = run_ours(dot_cfg, dot=pairs)
        ref, ref_note = try_reference("openfhe", partial(run_reference, None, dot_cfg, pairs))
        lattigo, lattigo_note = try_reference(LATTIGO, partial(run_lattigo_ckks, dot_cfg, pairs))
        refs = lattigo_refs("dot", ref, ref_note, lattigo, lattigo_note)
        case = f"N=2^13 L=3 fused dot, {pairs} pairs (OpenFHE: EvalMultNoRelin+EvalAdd; "
        case += "Lattigo: MulThenAdd)"
        rows.append(Row("ckks", case, ours["dot"] * 1e3, refs[0].value, "ms", refs))
    what = "CPU" if CLOCK == "cpu" else "wall"
    print_rows(
        f"RNS-CKKS, ours vs OpenFHE {openfhe_version()} and Lattigo {lattigo_version()} "
        f"(1 thread each, median {what} ms; ratio_fastest = ours / fastest reference)",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
