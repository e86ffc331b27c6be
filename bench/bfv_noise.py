"""`bench/run bfv-noise`: BFV noise budget after multiply + relinearize, ours against OpenFHE's
BFVrns with the same parameters, in the same run (issue 18's acceptance point: within 1 bit).

Parameters: N = 2^14, t = 65537 (batching), OpenFHE configured by multiplicative depth
(`--depth`, default 5: four 60-bit primes of Q), HPS multiplication, HYBRID key switching with
`--dnum` digits (default 2), 128-bit HE Standard. OpenFHE generates the primes; the driver reads
the primes of Q and of the special modulus P from OpenFHE's serialized secret and
relinearization keys and gives exactly those primes to our side (hec_bench_bfv --q-primes
--p-ks-primes), so both sides use the same Q, P, t, N and dnum.

Each side runs `--seeds` independent key sets (fresh secret, public and relinearization keys;
two public-key encryptions of uniformly random batched vectors; one multiply + relinearize) and
reports the invariant noise budget log2(Q) - 1 - log2(max_c |[t (c_0 + c_1 s)]_Q|) of the fresh
ciphertext and of the product. Ours: bfv::Decryptor::noise_budget. OpenFHE (no such call for
BFV): the same formula on OpenFHE's raw decryption c_0 + c_1 s, computed from its serialized
secret key and ciphertext (bench/bfv_noise_reference.py). Both sides check that the product
decrypts to the plaintext product. The table gives medians over the seeds; ratio column =
ours / OpenFHE, and the difference in bits is printed below it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows, reference_python

LOG_N = 14
PLAIN_MODULUS = 65537


def single_thread_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HEC_THREADS": "1", "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"})
    return env


def parse(out: str) -> tuple[Any, list[dict[str, float]]]:
    params: Any = None
    runs: list[dict[str, float]] = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "params" in obj:
            params = obj["params"]
        else:
            runs.append(obj)
    return params, runs


def run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, env=single_thread_env())
    if done.returncode != 0:
        raise SystemExit(f"bench/bfv-noise: {args[0]} failed:\n{done.stderr}")
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description="BFV noise budget: ours vs OpenFHE BFVrns")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=5, help="OpenFHE multiplicative depth")
    parser.add_argument("--dnum", type=int, default=2)
    args = parser.parse_args()
    cfg = {"log_n": LOG_N, "depth": args.depth, "t": PLAIN_MODULUS, "dnum": args.dnum}
    cfg["seeds"] = args.seeds
    ref_params, ref = parse(
        run([reference_python(), str(ROOT / "bench" / "bfv_noise_reference.py"), json.dumps(cfg)])
    )
    if ref_params["ring_dim"] != 1 << LOG_N:
        raise SystemExit(f"bench/bfv-noise: OpenFHE chose N = {ref_params['ring_dim']}")
    binary = ROOT / "build" / os.environ.get("HEC_PRESET", "bench") / "hec_bench_bfv"
    if not binary.exists():
        raise SystemExit(
            f"bench/bfv-noise: {binary} is missing; build the runtime with preset 'bench'"
        )
    ours_cmd = [str(binary), "--log-n", str(LOG_N), "--t", str(PLAIN_MODULUS)]
    ours_cmd += ["--dnum", str(args.dnum), "--ops", "noise", "--seeds", str(args.seeds)]
    ours_cmd += ["--q-primes", ",".join(map(str, ref_params["q"]))]
    ours_cmd += ["--p-ks-primes", ",".join(map(str, ref_params["p"]))]
    ours_params, ours = parse(run(ours_cmd))
    rows: list[Row] = []
    q_bits = [p.bit_length() for p in ref_params["q"]]
    p_bits = [p.bit_length() for p in ref_params["p"]]
    shape = f"N=2^{LOG_N} t={PLAIN_MODULUS} Q={len(q_bits)}x{max(q_bits)} dnum={args.dnum}"
    diffs = {}
    for key, label in (("fresh", "fresh encryption"), ("mult_relin", "multiply+relin")):
        mine = statistics.median(r[key] for r in ours)
        theirs = statistics.median(r[key] for r in ref)
        diffs[label] = mine - theirs
        rows.append(Row("bfv-noise", f"{shape} {label}", mine, theirs, "bits"))
    print_rows(
        f"BFV invariant noise budget (bits), median of {args.seeds} key sets; "
        "reference = OpenFHE BFVrns, same Q and P primes",
        rows,
    )
    for label, d in diffs.items():
        print(f"{label}: ours - OpenFHE = {d:+.2f} bits", file=sys.stderr)
    print(
        f"primes: Q {ref_params['q']} ({q_bits} bits), P {ref_params['p']} ({p_bits} bits)",
        file=sys.stderr,
    )
    print(f"ours: {ours_params}", file=sys.stderr)
    print(
        "per seed, ours:",
        [(round(r["fresh"], 2), round(r["mult_relin"], 2)) for r in ours],
        file=sys.stderr,
    )
    print(
        "per seed, OpenFHE:",
        [(round(r["fresh"], 2), round(r["mult_relin"], 2)) for r in ref],
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
