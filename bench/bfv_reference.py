"""OpenFHE side of `bench/run bfv` (runs under .venv-bench's Python 3.10 with the pinned
`openfhe` wheel). Configured the way an OpenFHE user would write it: BFVrns with the HPS
multiplication technique, HYBRID key switching with an explicit number of digits, 60-bit
CRT primes (SetScalingModSize(60)), the plaintext modulus and ring dimension given, and the
multiplicative depth chosen so that OpenFHE's own parameter generation yields the wanted
number of limbs; HEStd_128_classic security (OpenFHE raises N if the set is not secure, which
the driver reports). The caller sets OMP_NUM_THREADS; times are process CPU time (as on our
side) unless the configuration says "clock": "wall" (the driver's runs with more threads).

Usage: python bfv_reference.py '{"log_n": 13, "depth": 1, "t": 65537, "dnum": 2,
"repeats": 7, "ops": "all"}'. log_n 0 lets OpenFHE choose the smallest secure ring dimension.
Prints {"params": {...}} (ring dimension, log2 Q, limbs) and one {"op", "seconds"} per
operation: multiply_relin (EvalMult with the relinearization key), multiply (EvalMultNoRelin),
multiply_plain (EvalMult by a packed plaintext), rotate (EvalRotate by 1), encrypt (public key).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import openfhe as o  # pyright: ignore[reportMissingImports]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_of_repeats

CLOCK: Callable[[], float] = time.process_time


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    return median_of_repeats(fn, repeats, CLOCK)


def emit(op: str, seconds: float) -> None:
    print(json.dumps({"op": op, "seconds": seconds}), flush=True)


def main() -> int:
    global CLOCK
    cfg = json.loads(sys.argv[1])
    if cfg.get("clock") == "wall":
        CLOCK = time.perf_counter
    params = o.CCParamsBFVRNS()
    params.SetPlaintextModulus(cfg["t"])
    params.SetMultiplicativeDepth(cfg["depth"])
    if cfg["log_n"]:
        params.SetRingDim(1 << cfg["log_n"])
    params.SetScalingModSize(60)
    params.SetMultiplicationTechnique(o.HPS)
    params.SetKeySwitchTechnique(o.HYBRID)
    params.SetSecurityLevel(o.HEStd_128_classic)
    dnum = cfg["dnum"]
    params.SetNumLargeDigits(dnum)
    try:
        cc = o.GenCryptoContext(params)
    except RuntimeError as e:
        # OpenFHE refuses more digits than limbs (depth 1 at t = 2 has one limb): one digit.
        if "digits" not in str(e):
            raise
        dnum = 1
        params.SetNumLargeDigits(dnum)
        cc = o.GenCryptoContext(params)
    for feature in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE):
        cc.Enable(feature)
    n = cc.GetRingDimension()
    log_q = math.log2(float(cc.GetModulus()))
    print(
        json.dumps(
            {"params": {"ring_dim": n, "log_q": log_q, "limbs": round(log_q / 60), "dnum": dnum}}
        ),
        flush=True,
    )
    keys = cc.KeyGen()
    cc.EvalMultKeyGen(keys.secretKey)
    repeats = cfg["repeats"]
    t = cfg["t"]
    values = [(i * 31 + 7) % t for i in range(n)]
    batching = t % (2 * n) == 1
    pt = cc.MakePackedPlaintext(values) if batching else cc.MakeCoefPackedPlaintext(values)
    a = cc.Encrypt(keys.publicKey, pt)
    b = cc.Encrypt(keys.publicKey, pt)
    emit("multiply_relin", median_seconds(lambda: cc.EvalMult(a, b), repeats))
    emit("multiply", median_seconds(lambda: cc.EvalMultNoRelin(a, b), repeats))
    if cfg.get("ops", "all") == "mult":
        return 0
    emit("multiply_plain", median_seconds(lambda: cc.EvalMult(a, pt), repeats))
    if batching:
        cc.EvalRotateKeyGen(keys.secretKey, [1])
        emit("rotate", median_seconds(lambda: cc.EvalRotate(a, 1), repeats))
    emit("encrypt", median_seconds(lambda: cc.Encrypt(keys.publicKey, pt), repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
