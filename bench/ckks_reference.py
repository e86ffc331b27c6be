"""OpenFHE side of `bench/run ckks` (runs under .venv-bench's Python 3.10 with the pinned
`openfhe` wheel). Configured the way an OpenFHE user would write it: CKKS-RNS, FIXEDMANUAL
scaling, HYBRID key switching with an explicit number of digits, the same ring dimension,
first-prime and scaling-prime bit sizes and number of limbs as our driver, the HE Standard
128-bit security level, one thread (the caller sets OMP_NUM_THREADS=1).

Usage: python ckks_reference.py '{"log_n": 13, "first_bits": 45, "scale_bits": 35,
"levels": 3, "dnum": 4, "repeats": 7, "dot": 0, "clock": "cpu"}'. Prints one JSON object per
operation:
{"op": ..., "seconds": median}. Python call overhead is included (about a microsecond per
call, small against these operations except `add`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import openfhe as o  # pyright: ignore[reportMissingImports]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_of_repeats

CLOCK: Callable[[], float] = time.perf_counter


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    return median_of_repeats(fn, repeats, CLOCK)


def emit(op: str, seconds: float) -> None:
    print(json.dumps({"op": op, "seconds": seconds}), flush=True)


def main() -> int:
    global CLOCK
    cfg = json.loads(sys.argv[1])
    if cfg.get("clock") == "cpu":
        # CPU time of this thread: OpenFHE runs single-threaded in the calling thread here.
        CLOCK = time.thread_time
    params = o.CCParamsCKKSRNS()
    params.SetMultiplicativeDepth(cfg["levels"])
    params.SetScalingModSize(cfg["scale_bits"])
    params.SetFirstModSize(cfg["first_bits"])
    params.SetRingDim(1 << cfg["log_n"])
    params.SetBatchSize(1 << (cfg["log_n"] - 1))
    params.SetScalingTechnique(o.FIXEDMANUAL)
    params.SetKeySwitchTechnique(o.HYBRID)
    params.SetNumLargeDigits(cfg["dnum"])
    params.SetSecurityLevel(o.HEStd_128_classic)
    cc = o.GenCryptoContext(params)
    for feature in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE, o.ADVANCEDSHE):
        cc.Enable(feature)
    if cc.GetRingDimension() != 1 << cfg["log_n"]:
        raise SystemExit(f"OpenFHE chose ring dimension {cc.GetRingDimension()}")
    keys = cc.KeyGen()
    repeats = cfg["repeats"]
    slots = 1 << (cfg["log_n"] - 1)
    values = [0.5 + 0.001 * (i % 100) for i in range(slots)]
    pt = cc.MakeCKKSPackedPlaintext(values)

    if cfg.get("dot", 0) > 0:
        pairs = cfg["dot"]
        a = [cc.Encrypt(keys.publicKey, pt) for _ in range(pairs)]
        b = [cc.Encrypt(keys.publicKey, pt) for _ in range(pairs)]

        def dot() -> object:
            acc = cc.EvalMultNoRelin(a[0], b[0])
            for i in range(1, pairs):
                cc.EvalAddInPlace(acc, cc.EvalMultNoRelin(a[i], b[i]))
            return acc

        emit("dot", median_seconds(dot, repeats))
        return 0

    cc.EvalMultKeyGen(keys.secretKey)
    steps = list(range(1, 17))
    cc.EvalRotateKeyGen(keys.secretKey, steps)
    x = cc.Encrypt(keys.publicKey, pt)
    y = cc.Encrypt(keys.publicKey, pt)
    prod = cc.EvalMult(x, y)
    n = 2 << cfg["log_n"]

    def hoisted() -> object:
        pre = cc.EvalFastRotationPrecompute(x)
        return [cc.EvalFastRotation(x, s, n, pre) for s in steps]

    emit("encrypt", median_seconds(lambda: cc.Encrypt(keys.publicKey, pt), repeats))
    emit("mul_relin", median_seconds(lambda: cc.EvalMult(x, y), repeats))
    emit("mul_norelin", median_seconds(lambda: cc.EvalMultNoRelin(x, y), repeats))
    emit("rescale", median_seconds(lambda: cc.Rescale(prod), repeats))
    emit("rotate", median_seconds(lambda: cc.EvalRotate(x, 1), repeats))
    emit("hoisted16", median_seconds(hoisted, repeats))
    # Into an existing ciphertext (EvalAddInPlace), as ours and Lattigo's rows add.
    acc = cc.EvalAdd(x, y)
    emit("add", median_seconds(lambda: cc.EvalAddInPlace(acc, y), repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
