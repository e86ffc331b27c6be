"""`bench/flooding_precision.py`: the precision promise with noise flooding, measured (issue 25).

For each program: compile with flooding budgeted (the default of `hec compile`), build, run
keygen, encrypt (one data owner), compute, then decrypt twice: with flooding (the default) and
with `--no-flooding`. Prints per output the promised bits (`--precision-bits`, default 19), the
bits the compiler's error bound gives after flooding, and the bits measured: log2(range bound /
max |decrypted - reference|), the same quantity the promise is about (docs/precision.md).

Usage: PYTHONPATH=. python bench/flooding_precision.py [--n 5000] [--snps 64] [--columns 16]
           [--program chisq_numerators|meancov]...
Mind the disk: flooded meancov uploads 21 MiB per individual at N = 5000 (`hec report`), so
N = 5000 needs 106 GB; chisq_numerators about 2.5 MiB per individual.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.run import build_cpp
from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import evaluate

ROOT = Path(__file__).resolve().parents[1]


def _role(binary: Path, *args: str) -> str:
    done = subprocess.run(
        [str(binary), *args], capture_output=True, text=True, env={**os.environ, "HEC_QUIET": "1"}
    )
    if done.returncode != 0:
        raise SystemExit(f"{binary.name} {args[0]} failed: {done.stderr.strip()}")
    return done.stderr


def measure(
    program: str,
    sizes: dict[str, int],
    inputs: dict[str, np.ndarray],
    work: Path,
    options: Options | None = None,
    kinds: tuple[str, ...] = ("flooded", "plain"),
) -> list:
    """Compile `program` (default options unless given), run every role encrypted with one data
    owner, decrypt once per kind ("flooded": the default; "plain": --no-flooding), and return
    per revealed output the promised bits, the bound's bits and the bits measured per kind,
    with the largest error against the error bound (`bound_ratio`, <= 1 when the bound holds)."""
    opts = replace(options or Options(), sizes=Sizes.of(sizes))
    comp = compile_file(ROOT / program, opts)
    report = report_of(comp)
    built = build_cpp(comp, ROOT / program, work / "build")
    b = built.binary
    n = next(iter(inputs.values())).shape[0]
    _role(b, "signkey", "--out", str(work / "A.sign"))
    _role(b, "signkey", "--out", str(work / "server.sign"))
    keys = work / "keys"
    owner_key, server_key = f"A={work / 'A.sign'}.pub", f"{work / 'server.sign'}.pub"
    _role(b, "keygen", "--out", str(keys), "--owner", f"A=0:{n}",
          "--owner-key", owner_key, "--server-key", server_key)  # fmt: skip
    args = []
    for name, arr in inputs.items():
        np.save(work / f"{name}.npy", arr)
        args += ["--input", f"{name}={work / (name + '.npy')}"]
    _role(b, "encrypt", "--pk", str(keys / "public"), "--owner", "A",
          "--sign", str(work / "A.sign"), *args, "--out", str(work / "ct"))  # fmt: skip
    _role(b, "compute", "--eval", str(keys / "eval"), "--sign", str(work / "server.sign"),
          "--in", str(work / "ct"), "--out", str(work / "res"))  # fmt: skip
    dec = ["decrypt", "--sk", str(keys / "secret"), "--in", str(work / "res")]
    for kind in kinds:
        _role(b, *dec, "--out", str(work / kind), *(["--no-flooding"] if kind == "plain" else []))
    checked = check(parse_file(str(ROOT / program)))
    want = evaluate(checked, sizes, inputs).revealed
    rows = []
    for o in report["outputs"]:
        name = o["name"]
        bound = max(abs(o["range"][0]), abs(o["range"][1]))
        ref = np.asarray(want[name], dtype=np.float64)
        bits = o.get("flooded_precision_bits", o["precision_bits"])
        row = {"program": Path(program).stem, "output": name, "promised": opts.precision_bits,
               "exact": bool(o.get("exact")), "bound_bits": o["precision_bits"],
               "flooded_bound_bits": bits}  # fmt: skip
        for kind in kinds:
            got = np.load(work / kind / f"{name}.npy").astype(np.float64)
            err = float(np.max(np.abs(got - ref)))
            row[kind] = math.log2(bound) - math.log2(err) if err > 0 else math.inf
            allowed = bound * 2.0 ** -(bits if kind == "flooded" else o["precision_bits"])
            row[f"{kind}_bound_ratio"] = err / allowed
        rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--snps", type=int, default=64)
    ap.add_argument("--columns", type=int, default=16)
    ap.add_argument("--program", action="append", default=[], help="only these (file stems)")
    a = ap.parse_args()
    rng = np.random.default_rng(25)
    n = a.n
    cases = [
        ("examples/gwas/chisq_numerators.hec", {"N": n, "M": a.snps},
         {"y": rng.integers(0, 2, n).astype(np.float64),
          "S": rng.integers(0, 3, (n, a.snps)).astype(np.float64)}),
        ("examples/stats/meancov.hec", {"N": n, "D": a.columns},
         {"X": rng.uniform(-10, 10, (n, a.columns))}),
    ]  # fmt: skip
    rows = []
    print(f"{'program':<18} {'N':>6} {'output':<10} {'promised':>8} {'bound':>7} {'bound+fl':>8} "
          f"{'measured+fl':>11} {'measured':>8}", flush=True)  # fmt: skip
    for program, sizes, inputs in cases:
        if a.program and Path(program).stem not in a.program:
            continue
        with tempfile.TemporaryDirectory(prefix="hec-flood-") as tmp:
            got = measure(program, sizes, inputs, Path(tmp))
        for r in got:
            r["N"] = n
            print(f"{r['program']:<18} {n:>6} {r['output']:<10} {r['promised']:>8.1f} "
                  f"{r['bound_bits']:>7.2f} {r['flooded_bound_bits']:>8.2f} {r['flooded']:>11.2f} "
                  f"{r['plain']:>8.2f}", flush=True)  # fmt: skip
        rows += got
    print("RESULT " + json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
