"""The benchmark reference for `bench/run gwas-chisq`: PNAS Algorithm 2 (Blatt, Gusev, Polyakov,
Goldwasser, PNAS 2020: the allelic chi-square test and odds ratio on encrypted genotypes)
written on the PyPI `openfhe` wheel, the way the paper's PALISADE prototype organizes it.

Run with the Python 3.10 interpreter of `bench/setup-reference` (the only version the wheel
imports under), with OMP_NUM_THREADS=1: the parallelism is the prototype's, over individuals
(`--workers` processes, since Python threads would hold the interpreter lock), not OpenFHE's
OpenMP inside each operation (at ring dimension 2^13 with 4 moduli that was measured here to be
slower with 2 threads than with 1).

The paper's design, kept:
- RNS-CKKS, ring dimension 2^13 (4096 slots), multiplicative depth 3 (4 moduli), manual
  rescaling, BV key switching (no special primes: log2 Q = 60 + 3 x 52 = 216 <= 218, the
  HE Standard's 128-bit bound at 2^13); no evaluation key at all, as in the paper: every
  ciphertext product is EvalMultNoRelin and the coordinator decrypts degree-2..4 ciphertexts;
- SNPs in slots: one ciphertext per individual and SNP block for S, one per individual for
  y (replicated in every slot);
- n11 = sum_i EvalMultNoRelin(S_i, Y_i) then one rescale; c1 = sum_i S_i; r1 = 2 sum_i Y_i
  (sums as binary trees, EvalAddMany);
- the scaling factor gamma of the paper keeps every revealed value inside the last modulus:
  the paper fixed 2.5e-6 for its 200-individual demo; here gamma = 1 / d^2 (d = 2N), the
  largest power-of-two-free choice that bounds every revealed value by a small constant
  for any allele counts (|chi2 numerator| <= gamma^2 d^4 / 4, denominators <= gamma^2 d^4 / 16);
- the revealed numerators and denominators of Alg. 2 lines 11-15; chi2, P and OR on the
  client.
Two changes: the data owners and the server's sums run in `--workers` processes, each over a
share of the individuals, whose partial sums are serialized back (a few ciphertexts); and, for
memory, the server folds the individuals' ciphertexts into its sums in chunks
of CHUNK individuals as they arrive, so memory is bounded by a chunk rather than by N (the
prototype holds all N x blocks ciphertexts: 10 GB at N = 5000, M = 16384). Encryption and
computation are timed separately all the same.

Output: one JSON object on stdout with the phase times (seconds), the peak resident set of
each phase (bytes), the parameters; the decrypted statistics go to --out (.npz).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import math
import multiprocessing
import time
from pathlib import Path

import numpy as np
import openfhe as fhe  # pyright: ignore[reportMissingImports] (only in .venv-bench)

CHUNK = 250
RING_DIM = 1 << 13
SLOTS = RING_DIM // 2
FIRST_MOD_BITS = 60
SCALE_BITS = 52
DEPTH = 3


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


class Phases:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.peak: dict[str, int] = {}
        self._name = ""
        self._start = 0.0

    def start(self, name: str) -> None:
        reset_peak()
        self._name = name
        self._start = time.perf_counter()

    def stop(self) -> None:
        name = self._name
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - self._start
        self.peak[name] = max(self.peak.get(name, 0), peak_rss())


def make_context() -> fhe.CryptoContext:
    params = fhe.CCParamsCKKSRNS()
    params.SetMultiplicativeDepth(DEPTH)
    params.SetScalingModSize(SCALE_BITS)
    params.SetFirstModSize(FIRST_MOD_BITS)
    params.SetRingDim(RING_DIM)
    params.SetBatchSize(SLOTS)
    params.SetScalingTechnique(fhe.ScalingTechnique.FIXEDMANUAL)
    params.SetKeySwitchTechnique(fhe.KeySwitchTechnique.BV)
    params.SetSecurityLevel(fhe.SecurityLevel.HEStd_128_classic)
    cc = fhe.GenCryptoContext(params)
    cc.Enable(fhe.PKESchemeFeature.PKE)
    cc.Enable(fhe.PKESchemeFeature.LEVELEDSHE)
    cc.Enable(fhe.PKESchemeFeature.ADVANCEDSHE)  # EvalAddMany
    return cc


def tree_sum(cc: fhe.CryptoContext, cts: list) -> object:
    return cts[0] if len(cts) == 1 else cc.EvalAddMany(cts)


# Set before the worker processes fork: they inherit the context, the public key and the data.
_SHARED: dict[str, object] = {}


def _worker(lo: int, hi: int) -> tuple[list[bytes], float, float, int, int]:
    """Data owners lo..hi-1 encrypt their rows; the server folds them into partial sums (Alg. 2
    lines 5, 8, 9 restricted to these individuals). Returns the serialized partial sums (n11
    and c1 per block, then sum y), the encryption and computation seconds, and the peak
    resident set of each."""
    cc = _SHARED["cc"]
    pk = _SHARED["pk"]
    padded = _SHARED["padded"]
    y = _SHARED["y"]
    blocks = int(_SHARED["blocks"])  # type: ignore[arg-type]
    assert isinstance(padded, np.ndarray) and isinstance(y, np.ndarray)
    enc_s = comp_s = 0.0
    enc_peak = comp_peak = 0
    n11: list[list] = [[] for _ in range(blocks)]
    c1: list[list] = [[] for _ in range(blocks)]
    ys: list = []
    for a in range(lo, hi, CHUNK):
        b_ = min(a + CHUNK, hi)
        reset_peak()
        t0 = time.perf_counter()
        s_ct = [
            [
                cc.Encrypt(  # type: ignore[attr-defined]
                    pk,
                    cc.MakeCKKSPackedPlaintext(  # type: ignore[attr-defined]
                        padded[i, b * SLOTS : (b + 1) * SLOTS].tolist()
                    ),
                )
                for b in range(blocks)
            ]
            for i in range(a, b_)
        ]
        y_ct = [
            cc.Encrypt(pk, cc.MakeCKKSPackedPlaintext([float(y[i])] * SLOTS))  # type: ignore[attr-defined]
            for i in range(a, b_)
        ]
        t1 = time.perf_counter()
        enc_peak = max(enc_peak, peak_rss())
        reset_peak()
        for b in range(blocks):
            prods = [cc.EvalMultNoRelin(row[b], yc) for row, yc in zip(s_ct, y_ct, strict=True)]  # type: ignore[attr-defined]
            n11[b].append(tree_sum(cc, prods))
            c1[b].append(tree_sum(cc, [row[b] for row in s_ct]))
        ys.append(tree_sum(cc, y_ct))
        del s_ct, y_ct
        t2 = time.perf_counter()
        comp_peak = max(comp_peak, peak_rss())
        enc_s += t1 - t0
        comp_s += t2 - t1
    t0 = time.perf_counter()
    parts = [tree_sum(cc, n11[b]) for b in range(blocks)]
    parts += [tree_sum(cc, c1[b]) for b in range(blocks)]
    parts.append(tree_sum(cc, ys))
    blobs = [fhe.Serialize(ct, fhe.BINARY) for ct in parts]
    comp_s += time.perf_counter() - t0
    return blobs, enc_s, comp_s, enc_peak, comp_peak


def run(S: np.ndarray, y: np.ndarray, workers: int) -> tuple[dict[str, np.ndarray], Phases, dict]:
    n, m = S.shape
    blocks = math.ceil(m / SLOTS)
    d = 2.0 * n
    gamma = 1.0 / (d * d)
    ph = Phases()

    ph.start("keygen")
    cc = make_context()
    keys = cc.KeyGen()
    ph.stop()

    padded = np.zeros((n, blocks * SLOTS))
    padded[:, :m] = S
    _SHARED.update(cc=cc, pk=keys.publicKey, padded=padded, y=y, blocks=blocks)
    # The data owners and the server's folding run in `workers` processes, each over a
    # contiguous share of the individuals (the prototype's `omp parallel for` over i); the
    # phase time is that of the slowest worker, the phase memory the sum of the workers'.
    bounds = np.linspace(0, n, workers + 1).astype(int)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(
            _worker, [(int(bounds[k]), int(bounds[k + 1])) for k in range(workers)]
        )
    ph.seconds["encrypt"] = max(r[1] for r in results)
    ph.peak["encrypt"] = sum(r[3] for r in results)
    ph.seconds["compute"] = max(r[2] for r in results)
    ph.peak["compute"] = sum(r[4] for r in results)

    ph.start("compute")
    partial = [[fhe.DeserializeCiphertextString(b, fhe.BINARY) for b in r[0]] for r in results]
    n11_parts = [[p[b] for p in partial] for b in range(blocks)]
    c1_parts = [[p[blocks + b] for p in partial] for b in range(blocks)]
    y_parts = [p[2 * blocks] for p in partial]
    d_scaled = cc.MakeCKKSPackedPlaintext([d * gamma] * SLOTS)
    y_sum = tree_sum(cc, y_parts)
    r1 = cc.EvalAdd(y_sum, y_sum)  # line 5
    r1_scaled = cc.ModReduce(cc.EvalMult(r1, gamma))  # line 6
    out_ct: dict[str, list] = {"chi2_num": [], "chi2_den": [], "or_num": [], "or_den": []}
    for b in range(blocks):
        n11 = cc.ModReduce(tree_sum(cc, n11_parts[b]))  # line 8
        c1 = tree_sum(cc, c1_parts[b])  # line 9
        c1_scaled = cc.ModReduce(cc.EvalMult(c1, gamma))  # line 10
        # line 11: (n11 d gamma - c1 r1 gamma)^2
        chi_n1 = cc.ModReduce(
            cc.EvalSub(cc.EvalMult(n11, d_scaled), cc.EvalMultNoRelin(c1, r1_scaled))
        )
        out_ct["chi2_num"].append(cc.EvalMultNoRelin(chi_n1, chi_n1))
        # line 12: c1 (d gamma - c1 gamma) r1 (d gamma - r1 gamma)
        chi_d1 = cc.ModReduce(cc.EvalMultNoRelin(c1, cc.EvalSub(d_scaled, c1_scaled)))
        chi_d2 = cc.ModReduce(cc.EvalMultNoRelin(r1, cc.EvalSub(d_scaled, r1_scaled)))
        out_ct["chi2_den"].append(cc.EvalMultNoRelin(chi_d1, chi_d2))
        # lines 14-15: odds ratio numerator n11 (n11 - r1 - c1 + d) gamma and denominator
        # (c1 - n11)(r1 - n11) gamma
        n11_scaled = cc.ModReduce(cc.EvalMult(n11, gamma))
        or3 = cc.EvalSub(r1_scaled, n11_scaled)
        out_ct["or_den"].append(cc.EvalMultNoRelin(cc.EvalSub(c1, n11), or3))
        or1 = cc.EvalAdd(cc.EvalSub(cc.EvalSub(n11_scaled, r1_scaled), c1_scaled), d_scaled)
        out_ct["or_num"].append(cc.EvalMultNoRelin(n11, or1))
    ph.stop()

    # Coordinator.
    ph.start("decrypt")
    revealed: dict[str, np.ndarray] = {}
    for name, cts in out_ct.items():
        parts = []
        for ct in cts:
            pt = cc.Decrypt(ct, keys.secretKey)
            pt.SetLength(SLOTS)
            parts.append(np.array(pt.GetRealPackedValue()))
        revealed[name] = np.concatenate(parts)[:m]
    ph.stop()
    info = {
        "ring_dim": cc.GetRingDimension(),
        "slots": SLOTS,
        "depth": DEPTH,
        "moduli_bits": [FIRST_MOD_BITS] + [SCALE_BITS] * DEPTH,
        "key_switching": "BV (no evaluation key generated: no relinearization)",
        "gamma": gamma,
        "chunk": CHUNK,
        "workers": workers,
    }
    return revealed, ph, info


def main() -> None:
    parser = argparse.ArgumentParser(description="PNAS Alg. 2 on OpenFHE (bench reference)")
    parser.add_argument("--data", required=True, help=".npz with S (N x M) and y (N)")
    parser.add_argument("--out", required=True, help=".npz for the decrypted statistics")
    parser.add_argument("--workers", type=int, default=1, help="processes over individuals")
    args = parser.parse_args()
    data = np.load(args.data)
    S = np.asarray(data["S"], dtype=np.float64)
    y = np.asarray(data["y"], dtype=np.float64)
    revealed, ph, info = run(S, y, args.workers)
    n = S.shape[0]
    d = 2.0 * n
    with np.errstate(divide="ignore", invalid="ignore"):
        # The gamma factors cancel: chi2 = d * num / den; OR = num / den.
        chi2 = np.maximum(d * revealed["chi2_num"] / revealed["chi2_den"], 0.0)
        odds = revealed["or_num"] / revealed["or_den"]
    arrays = {"chi2": chi2, "odds": odds, **revealed}
    np.savez(args.out, **arrays)
    version = importlib.metadata.version("openfhe")
    print(
        json.dumps({"seconds": ph.seconds, "peak_rss": ph.peak, "params": info, "openfhe": version})
    )


if __name__ == "__main__":
    main()
