"""`bench/run bitslice`: integer operations on BFV bit slices, encrypted, a full batch (issue 23).

For each case, the program `reveal c = a OP b` on two secret arrays of the case's type is
compiled for BFV bit slices (dsl/bitslice.py) at N = the slots of its ring (one full batch) and
run by `hec run` (keygen, encrypt, compute, decrypt, one process each, random operands,
decrypted and checked against numpy). The row's figure is the compute role's wall seconds at
the given thread count, and the amortized milliseconds per slot (one operation on one
element); the seed's HElib times (H. Chen's slides, single thread, as issue 23 quotes them)
are printed beside them. There is no same-run reference: neither OpenFHE's wheel, Lattigo nor
tfhe-rs has a bit-sliced integer API, so the row's ratio is empty.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, print_rows

CASES = {
    # name: (type, operator, numpy reference, the seed's single-thread HElib time)
    "add16": ("u16", "+", np.add, "16-bit CLA addition 2.53 s"),
    "lt16": ("u16", "<", np.less, "-"),
    "add64": ("u64", "+", np.add, "-"),
    "mul16": ("u16", "*", np.multiply, "16-bit multiplication 21-46 s"),
}


def run_case(name: str, threads: int, seed: int) -> tuple[float, int, int]:
    """(compute seconds, slots, depth) of one encrypted full-batch run."""
    from compiler.analysis.sizes import Sizes
    from driver.pipeline import Options, compile_file, report_of
    from driver.run import run_encrypted

    ty, op, reference, _ = CASES[name]
    with tempfile.TemporaryDirectory(prefix="hec-bitslice-") as tmp:
        src = Path(tmp) / f"{name}.hec"
        src.write_text(
            f"param N <= 65536\ninput a: secret[N] {ty}\ninput b: secret[N] {ty}\n"
            f"reveal c = a {op} b\n"
        )
        probe = compile_file(src, Options(scheme="bfv", sizes=Sizes.parse("N=1")))
        params = probe.bfv_program.parameters()
        assert params is not None
        slots = params.slots
        depth = report_of(probe)["bitslice"]["compiled_depth"]
        rng = np.random.default_rng(seed)
        dtype = np.dtype(np.uint64 if ty == "u64" else np.uint16)
        hi = np.iinfo(dtype).max
        a = rng.integers(0, hi, slots, dtype=dtype, endpoint=True)
        b = rng.integers(0, hi, slots, dtype=dtype, endpoint=True)
        np.save(Path(tmp) / "a.npy", a)
        np.save(Path(tmp) / "b.npy", b)
        os.environ["HEC_THREADS"] = str(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        result = run_encrypted(
            src,
            {"a": Path(tmp) / "a.npy", "b": Path(tmp) / "b.npy"},
            Path(tmp) / "out",
            Options(scheme="bfv"),
        )
        with np.errstate(over="ignore"):
            want = reference(a, b)
        if not np.array_equal(result.revealed["c"].astype(want.dtype), want):
            raise SystemExit(f"bench/bitslice: {name} decrypted wrong values")
        seconds = result.summary["compute_seconds"]
        assert isinstance(seconds, (int, float))
        return float(seconds), slots, int(depth)


def main() -> int:
    parser = argparse.ArgumentParser(description="bench/run bitslice: BFV bit-slice integers")
    parser.add_argument("--cases", default="add16,lt16,add64,mul16")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rows: list[Row] = []
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        if name not in CASES:
            raise SystemExit(f"bench/bitslice: unknown case {name!r}; use {', '.join(CASES)}")
        seconds, slots, depth = run_case(name, args.threads, seed=23)
        seed = CASES[name][3]
        note = f"depth {depth}, {slots} slots; seed (HElib, 1 thread): {seed}"
        rows.append(
            Row("bitslice", f"{name} compute, {args.threads} thr", seconds, None, "s", (), note)
        )
        rows.append(
            Row("bitslice", f"{name} per slot", seconds / slots * 1e3, None, "ms", (), note)
        )
    print_rows(
        f"BFV bit slices, one full batch, compute role wall time at {args.threads} threads "
        f"(load {os.getloadavg()[0]:.1f}); no same-run reference has bit-sliced integers",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
