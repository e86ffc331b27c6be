"""The benchmark reference for `bench/run gwas-chisq`: PNAS Algorithm 2 (Blatt, Gusev, Polyakov,
Goldwasser, PNAS 2020: the allelic chi-square test and odds ratio on encrypted genotypes)
written on the PyPI `openfhe` wheel, the way the paper's PALISADE prototype organizes it.

Run with the Python 3.10 interpreter of `bench/setup-reference` (the only version the wheel
imports under); OMP_NUM_THREADS fixes OpenFHE's thread count and must be set before start.

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
One change for memory: the server folds the individuals' ciphertexts into its sums in chunks
of CHUNK individuals as they arrive, so memory is bounded by a chunk rather than by N (the
prototype holds all N x blocks ciphertexts: 10 GB at N = 5000, M = 16384). Encryption and
computation are timed separately all the same.

Output: one JSON object on stdout with the phase times (seconds), the peak resident set of
each phase (bytes), the parameters; the decrypted statistics go to --out (.npz).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
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


def run(S: np.ndarray, y: np.ndarray) -> tuple[dict[str, np.ndarray], Phases, dict]:
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
    n11_parts: list[list] = [[] for _ in range(blocks)]
    c1_parts: list[list] = [[] for _ in range(blocks)]
    y_parts: list = []
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        # Data owners: each encrypts its genotype blocks and its phenotype (replicated).
        ph.start("encrypt")
        s_ct = [
            [
                cc.Encrypt(
                    keys.publicKey,
                    cc.MakeCKKSPackedPlaintext(padded[i, b * SLOTS : (b + 1) * SLOTS].tolist()),
                )
                for b in range(blocks)
            ]
            for i in range(lo, hi)
        ]
        y_ct = [
            cc.Encrypt(keys.publicKey, cc.MakeCKKSPackedPlaintext([float(y[i])] * SLOTS))
            for i in range(lo, hi)
        ]
        ph.stop()
        # Server: Alg. 2 line 8 (products without relinearization) and the sums of lines 5, 9.
        ph.start("compute")
        for b in range(blocks):
            prods = [cc.EvalMultNoRelin(s_ct[k][b], y_ct[k]) for k in range(hi - lo)]
            n11_parts[b].append(tree_sum(cc, prods))
            c1_parts[b].append(tree_sum(cc, [row[b] for row in s_ct]))
        y_parts.append(tree_sum(cc, y_ct))
        ph.stop()
        del s_ct, y_ct

    ph.start("compute")
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
    }
    return revealed, ph, info


def main() -> None:
    parser = argparse.ArgumentParser(description="PNAS Alg. 2 on OpenFHE (bench reference)")
    parser.add_argument("--data", required=True, help=".npz with S (N x M) and y (N)")
    parser.add_argument("--out", required=True, help=".npz for the decrypted statistics")
    args = parser.parse_args()
    data = np.load(args.data)
    S = np.asarray(data["S"], dtype=np.float64)
    y = np.asarray(data["y"], dtype=np.float64)
    revealed, ph, info = run(S, y)
    n = S.shape[0]
    d = 2.0 * n
    with np.errstate(divide="ignore", invalid="ignore"):
        # The gamma factors cancel: chi2 = d * num / den; OR = num / den.
        chi2 = np.maximum(d * revealed["chi2_num"] / revealed["chi2_den"], 0.0)
        odds = revealed["or_num"] / revealed["or_den"]
    arrays = {"chi2": chi2, "odds": odds, **revealed}
    np.savez(args.out, **arrays)
    print(json.dumps({"seconds": ph.seconds, "peak_rss": ph.peak, "params": info}))


if __name__ == "__main__":
    main()
