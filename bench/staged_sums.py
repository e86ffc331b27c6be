"""`bench/run staged-sums [--rows N] [--cols M] [--repeats R]`: the server role of a program
that sums slots once per row (`score = G @ b`: N rows of M columns, one `sum_slots` each), with
the slot sums in doubly hoisted stages (passes/rotation_keys.py, the default) against the
rotate-and-add tree (`--no-staged-sums`), in the same run.

Both programs are compiled for the same sizes (same parameters, 128-bit secure), built, keyed
and encrypted once each (their Galois key sets differ); then `compute` runs alternately,
`repeats` times each, and the medians of its wall time are compared (ours: staged, reference:
the tree). The decrypted scores of both are checked against numpy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, print_rows

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.roles import RoleSequence
from driver.run import build_cpp

PROGRAM = """param N <= 100000
param M <= 100000
input G: secret[N, M] in {0, 1, 2}
input b: secret[M] in [-1.0, 1.0]
reveal score = G @ b
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--cols", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hec-staged-") as tmp:
        root = Path(tmp)
        source = root / "rowsum.hec"
        source.write_text(PROGRAM)
        rng = np.random.default_rng(1)
        g = rng.integers(0, 3, (args.rows, args.cols)).astype(np.int8)
        b = rng.uniform(-1, 1, args.cols)
        np.save(root / "G.npy", g)
        np.save(root / "b.npy", b)
        inputs = {"G": root / "G.npy", "b": root / "b.npy"}
        roles: dict[bool, RoleSequence] = {}
        plans: dict[bool, str] = {}
        for staged in (True, False):
            sizes = Sizes.parse(f"N={args.rows},M={args.cols}")
            comp = compile_file(source, Options(sizes=sizes, staged_sums=staged))
            keys = report_of(comp)["keys"]
            plan = keys.get("sum_plan", {})
            plans[staged] = (
                f"stages {plan.get('radices')}, {len(keys['rotations'])} rotation keys"
                if staged
                else f"tree, {len(keys['rotations'])} rotation keys"
            )
            work = root / ("staged" if staged else "tree")
            built = build_cpp(comp, source, work / "build")
            seq = RoleSequence(built.binary, work, signed=False)
            seq.keygen(stream_rows=args.rows)
            seq.encrypt(inputs, work / "ct")
            roles[staged] = seq
        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.repeats + 1):  # the first round warms the page cache, unmeasured
            for staged in (True, False):
                work = root / ("staged" if staged else "tree")
                out = work / f"res{i}"
                began = time.perf_counter()
                roles[staged].compute(work / "ct", out)
                if i:
                    times[staged].append(time.perf_counter() - began)
        for staged in (True, False):
            work = root / ("staged" if staged else "tree")
            got = roles[staged].decrypt(work / "res1", work / "dec", flooding=False)["score"]
            err = float(np.max(np.abs(np.asarray(got) - g.astype(np.float64) @ b)))
            print(f"{plans[staged]}: max |error| {err:.3g}; compute times {times[staged]}")
            assert err < 1e-3, err
        staged_s, tree_s = statistics.median(times[True]), statistics.median(times[False])
        print_rows(
            f"staged slot sums vs the rotate-and-add tree: compute role, N = {args.rows} sums, "
            f"median of {args.repeats}",
            [Row("staged-sums", f"compute N={args.rows} M={args.cols}", staged_s, tree_s, "s")],
        )


if __name__ == "__main__":
    main()
