"""OpenFHE side of `bench/run fhew` (runs under the Python 3.10 interpreter of .venv-bench).

For each method given on the command line (GINX, AP), builds the PyPI `openfhe` wheel's
binfhe context at its STD128 parameter set for that method (STD128 for GINX, STD128_AP for
AP), generates the secret key and the bootstrapping keys (BTKeyGen: refreshing key and
key-switching key), and times EvalBinGate(NAND) on freshly encrypted bits: wall time and
process CPU time per gate, median over the repeats after one warm-up gate (the repeat rule of
bench/common.py: at least the repeats asked for, more until the timed gates fill a quarter
second); every result is decrypted and checked. The wheel cannot serialize binfhe keys, so
the key size is the growth of the resident set during BTKeyGen. Prints one JSON object per
method.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import openfhe as o  # pyright: ignore[reportMissingImports]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import another_repeat


def rss_bytes() -> int:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def run(method: str, repeats: int) -> dict[str, object]:
    paramset, m = (o.STD128, o.GINX) if method == "GINX" else (o.STD128_AP, o.AP)
    cc = o.BinFHEContext()
    cc.GenerateBinFHEContext(paramset, m)
    t0 = time.perf_counter()
    sk = cc.KeyGen()
    r0 = rss_bytes()
    cc.BTKeyGen(sk)
    keygen_s = time.perf_counter() - t0
    key_rss = rss_bytes() - r0
    wall, cpu = [], []
    correct = True
    r, total = 0, 0.0
    while r == 0 or another_repeat(len(wall), repeats, total):
        x, y = r % 2, (r // 2) % 2
        c1, c2 = cc.Encrypt(sk, x), cc.Encrypt(sk, y)
        w0, p0 = time.perf_counter(), time.process_time()
        out = cc.EvalBinGate(o.NAND, c1, c2)
        w, p = time.perf_counter() - w0, time.process_time() - p0
        if r > 0:  # the first gate warms caches and pages in the key
            wall.append(w * 1e3)
            cpu.append(p * 1e3)
            total += w
        correct = correct and cc.Decrypt(sk, out) == 1 - (x & y)
        r += 1
    return {
        "method": method,
        "n": cc.Getn(),
        "q": cc.Getq(),
        "keygen_s": keygen_s,
        "eval_key_rss_bytes": key_rss,
        "repeats": len(wall),
        "nand_ms_median": statistics.median(wall),
        "nand_cpu_ms_median": statistics.median(cpu),
        "correct": correct,
    }


def main() -> None:
    repeats = int(sys.argv[1])
    for method in sys.argv[2:]:
        print(json.dumps(run(method, repeats)), flush=True)


if __name__ == "__main__":
    main()
