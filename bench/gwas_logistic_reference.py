"""The benchmark reference for `bench/run gwas-logistic`: gwas/programs/logistic.hec's algorithm
(the semi-parallel logistic regression with covariates, Sikorska et al. 2013; the LRA of Blatt et
al., PNAS 2020) written on the PyPI `openfhe` wheel as an expert would, on the same owner inputs.

Run with the Python 3.10 interpreter of `bench/setup-reference` (the only version the wheel
imports under), with OMP_NUM_THREADS=1; the parallelism is over individuals (`--workers`
processes, as bench/gwas_chisq_reference.py: Python threads would hold the interpreter lock).

The algorithm, as logistic.hec's compiled program runs it:
- every data owner holds r_i = y_i - p_i, w_i = p_i (1 - p_i) and V_i = w_i x_i (K values) from
  the public covariate-only fit, and its genotype row S_i; the plaintext-ciphertext products are
  formed by the owner before encryption: per SNP block it encrypts r_i S_i, w_i S_i^2 and S_i
  (SNPs in slots, real packing), and once the K values V_ik, each replicated in every slot;
- the server adds: score = sum_i r_i S_i, sws = sum_i w_i S_i^2, and vs_k = sum_i V_ik (x) S_i,
  the ciphertext products without relinearization (EvalMultNoRelin: no evaluation key is
  generated) and without rescaling, decrypted at degree 2;
- RNS-CKKS, FIXEDMANUAL, multiplicative depth 1 (two moduli: 60 bits and the scale), BV key
  switching (no special primes: none is ever switched), HEStd_128_classic, the ring dimension
  OpenFHE chooses for that modulus (2^13). The scale is the largest that keeps the degree-2
  vs (|vs| <= N / 2) inside Q = 2^(60 + scale): scale bits = min(50, 59 - log2(N / 2)).
- `--scale-bits B` instead: the scale 2^B (B = the scale hec's compiled program encodes at, for
  a comparison at matched precision) and as many B-bit moduli after the 60-bit first one as keep
  the degree-2 vs inside Q (OpenFHE's encoding scale is the scaling modulus's size, so a larger
  scale takes more moduli: at B = 57 and N = 1000 three, as many limbs as hec's three 42-bit
  primes).
- `--uploads`: the owners hand the server serialized ciphertexts (OpenFHE's BINARY format, in
  memory: what it would receive in a file or over the network, without the file system and
  without any integrity check) and the server deserializes each before folding it, inside the
  computation's time (whose deserializing share the JSON gives as `deserialize_seconds`): the
  server's work as hec's compute role does it, which reads every upload from its file.
- the server streams: individuals in chunks of CHUNK (their ciphertexts folded into the
  accumulators as they arrive, memory bounded by a chunk), SNP blocks of `slots` inside a chunk.
Encryption (the owners' encoding and encryption) and computation (the server's folding, the
merge of the workers' partial sums) are timed separately.

Output: one JSON object on stdout with the phase times (seconds), the peak resident set of each
phase (bytes), the parameters; the decrypted score, sws and vs go to --out (.npz).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import multiprocessing
import time

import numpy as np
import openfhe as fhe  # pyright: ignore[reportMissingImports] (only in .venv-bench)
from gwas_chisq_reference import Phases, peak_rss, reset_peak

CHUNK = 100
FIRST_MOD_BITS = 60
MAX_SCALE_BITS = 50


def scale_bits(n: int) -> int:
    """The largest scale (<= MAX_SCALE_BITS) at which vs, at degree 2 (scale^2) and at most
    N / 2 in magnitude, stays below Q / 2 = 2^(FIRST_MOD_BITS + scale - 1)."""
    return min(MAX_SCALE_BITS, FIRST_MOD_BITS - 1 - math.ceil(math.log2(max(2.0, n / 2))))


def matched_depth(n: int, scale: int) -> int:
    """The number of `scale`-bit moduli after the first that keep the degree-2 vs (scale^2,
    at most N / 2 in magnitude) below Q / 2."""
    need = 2 * scale + math.ceil(math.log2(max(2.0, n / 2))) + 1
    return max(1, math.ceil((need - FIRST_MOD_BITS) / scale))


def make_context(scale: int, depth: int) -> fhe.CryptoContext:
    params = fhe.CCParamsCKKSRNS()
    params.SetMultiplicativeDepth(depth)
    params.SetScalingModSize(scale)
    params.SetFirstModSize(FIRST_MOD_BITS)
    params.SetScalingTechnique(fhe.ScalingTechnique.FIXEDMANUAL)
    params.SetKeySwitchTechnique(fhe.KeySwitchTechnique.BV)
    params.SetSecurityLevel(fhe.SecurityLevel.HEStd_128_classic)
    cc = fhe.GenCryptoContext(params)
    cc.Enable(fhe.PKESchemeFeature.PKE)
    cc.Enable(fhe.PKESchemeFeature.LEVELEDSHE)
    return cc


# Set before the worker processes fork: they inherit the context, the public key and the data.
_SHARED: dict[str, object] = {}


def _accumulate(cc: fhe.CryptoContext, acc: list, index: int, ct: object) -> None:
    if acc[index] is None:
        acc[index] = ct
    else:
        cc.EvalAddInPlace(acc[index], ct)  # type: ignore[attr-defined]


def _worker(lo: int, hi: int) -> tuple[list[bytes], float, float, int, int, float]:
    """Data owners lo..hi-1 encrypt; the server folds their ciphertexts into partial sums.
    Returns the serialized partial sums (per SNP block: score, sws, vs_0..vs_K-1), the
    encryption and computation seconds and the peak resident set of each, and the seconds of
    the computation spent deserializing uploads (with `uploads`: each owner serializes every
    ciphertext it encrypts, OpenFHE's BINARY format, in memory, as it would send it, and the
    server deserializes each before folding it; 0 otherwise)."""
    cc = _SHARED["cc"]
    pk = _SHARED["pk"]
    r, w, V, S = (_SHARED[k] for k in ("r", "w", "V", "S"))
    slots = int(_SHARED["slots"])  # type: ignore[arg-type]
    assert isinstance(S, np.ndarray) and isinstance(V, np.ndarray)
    assert isinstance(r, np.ndarray) and isinstance(w, np.ndarray)
    k = V.shape[1]
    blocks = S.shape[1] // slots
    per_block = 2 + k
    acc: list = [None] * (blocks * per_block)
    enc_s = comp_s = load_s = 0.0
    enc_peak = comp_peak = 0
    uploads = bool(_SHARED.get("uploads"))

    def encrypt(values: np.ndarray) -> object:
        ct = cc.Encrypt(pk, cc.MakeCKKSPackedPlaintext(values.tolist()))  # type: ignore[attr-defined]
        return fhe.Serialize(ct, fhe.BINARY) if uploads else ct

    def receive(upload: object) -> object:
        """The server's copy of an upload (deserialized when uploads are serialized)."""
        nonlocal load_s
        if not uploads:
            return upload
        t = time.perf_counter()
        ct = fhe.DeserializeCiphertextString(upload, fhe.BINARY)
        load_s += time.perf_counter() - t
        return ct

    for a in range(lo, hi, CHUNK):
        b_ = min(a + CHUNK, hi)
        reset_peak()
        t0 = time.perf_counter()
        v_ct = [[encrypt(np.full(slots, V[i, j])) for j in range(k)] for i in range(a, b_)]
        enc_s += time.perf_counter() - t0
        for b in range(blocks):
            cols = slice(b * slots, (b + 1) * slots)
            t0 = time.perf_counter()
            cts = [
                (encrypt(r[i] * S[i, cols]), encrypt(w[i] * S[i, cols] ** 2), encrypt(S[i, cols]))
                for i in range(a, b_)
            ]
            t1 = time.perf_counter()
            enc_peak = max(enc_peak, peak_rss())
            base = b * per_block
            if b == 0:  # V arrives once per individual
                v_ct = [[receive(c) for c in row] for row in v_ct]
            for (rs, wss, s), vi in zip(cts, v_ct, strict=True):
                _accumulate(cc, acc, base, receive(rs))
                _accumulate(cc, acc, base + 1, receive(wss))
                s = receive(s)
                for j in range(k):
                    _accumulate(cc, acc, base + 2 + j, cc.EvalMultNoRelin(vi[j], s))  # type: ignore[attr-defined]
            del cts
            t2 = time.perf_counter()
            comp_peak = max(comp_peak, peak_rss())
            enc_s += t1 - t0
            comp_s += t2 - t1
        del v_ct
    t0 = time.perf_counter()
    blobs = [fhe.Serialize(ct, fhe.BINARY) for ct in acc]
    comp_s += time.perf_counter() - t0
    return blobs, enc_s, comp_s, enc_peak, comp_peak, load_s


def run(
    r: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    S: np.ndarray,
    workers: int,
    scale: int | None = None,
    uploads: bool = False,
) -> tuple[dict[str, np.ndarray], Phases, dict]:
    n, m = S.shape
    k = V.shape[1]
    ph = Phases()
    if scale is None:
        scale, depth = scale_bits(n), 1
    else:
        depth = matched_depth(n, scale)

    ph.start("keygen")
    cc = make_context(scale, depth)
    keys = cc.KeyGen()
    ph.stop()

    slots = cc.GetRingDimension() // 2
    blocks = math.ceil(m / slots)
    padded = np.zeros((n, blocks * slots))
    padded[:, :m] = S
    _SHARED.update(cc=cc, pk=keys.publicKey, r=r, w=w, V=V, S=padded, slots=slots, uploads=uploads)
    bounds = np.linspace(0, n, workers + 1).astype(int)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(
            _worker, [(int(bounds[j]), int(bounds[j + 1])) for j in range(workers)]
        )
    # The phase time is the slowest worker's, the phase memory the sum of the workers'.
    ph.seconds["encrypt"] = max(res[1] for res in results)
    ph.peak["encrypt"] = sum(res[3] for res in results)
    slowest = max(results, key=lambda res: res[2])
    ph.seconds["compute"] = slowest[2]
    ph.peak["compute"] = sum(res[4] for res in results)

    ph.start("compute")
    sums = [fhe.DeserializeCiphertextString(blob, fhe.BINARY) for blob in results[0][0]]
    for res in results[1:]:
        for j, blob in enumerate(res[0]):
            cc.EvalAddInPlace(sums[j], fhe.DeserializeCiphertextString(blob, fhe.BINARY))
    ph.stop()

    ph.start("decrypt")
    flat: list[np.ndarray] = []
    for ct in sums:
        pt = cc.Decrypt(ct, keys.secretKey)
        pt.SetLength(slots)
        flat.append(np.array(pt.GetRealPackedValue()))
    per_block = 2 + k
    score = np.concatenate([flat[b * per_block] for b in range(blocks)])[:m]
    sws = np.concatenate([flat[b * per_block + 1] for b in range(blocks)])[:m]
    vs = np.stack(
        [np.concatenate([flat[b * per_block + 2 + j] for b in range(blocks)])[:m] for j in range(k)]
    )
    ph.stop()
    info = {
        "ring_dim": cc.GetRingDimension(),
        "slots": slots,
        "depth": depth,
        "scale_bits": scale,
        "moduli_bits": [FIRST_MOD_BITS] + [scale] * depth,
        "key_switching": "BV (no evaluation key generated: no relinearization)",
        "chunk": CHUNK,
        "workers": workers,
        "uploads": uploads,
        # the slowest worker's share of its computation spent deserializing uploads
        "deserialize_seconds": slowest[5],
    }
    return {"score": score, "sws": sws, "vs": vs}, ph, info


def main() -> None:
    parser = argparse.ArgumentParser(description="logistic.hec's algorithm on OpenFHE")
    parser.add_argument("--data", required=True, help=".npz with r, w (N), V (N x K), S (N x M)")
    parser.add_argument("--out", required=True, help=".npz for the decrypted score, sws, vs")
    parser.add_argument("--workers", type=int, default=1, help="processes over individuals")
    parser.add_argument(
        "--scale-bits", type=int, default=None,
        help="encode at 2^B with B-bit moduli (default: the largest scale two moduli hold)",
    )  # fmt: skip
    parser.add_argument(
        "--uploads", action="store_true",
        help="owners serialize every ciphertext and the server deserializes it before use",
    )  # fmt: skip
    args = parser.parse_args()
    data = np.load(args.data)
    r, w, V, S = (np.asarray(data[key], dtype=np.float64) for key in ("r", "w", "V", "S"))
    revealed, ph, info = run(r, w, V, S, args.workers, args.scale_bits, args.uploads)
    np.savez(args.out, score=revealed["score"], sws=revealed["sws"], vs=revealed["vs"])
    version = importlib.metadata.version("openfhe")
    print(
        json.dumps({"seconds": ph.seconds, "peak_rss": ph.peak, "params": info, "openfhe": version})
    )


if __name__ == "__main__":
    main()
