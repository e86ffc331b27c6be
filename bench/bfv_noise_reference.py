"""OpenFHE side of `bench/run bfv-noise` (runs under the reference interpreter: .venv-bench or
HEC_OPENFHE_PYTHON). BFVrns with the HPS multiplication technique, HYBRID key switching with
the given number of digits, 60-bit CRT primes, the given plaintext modulus and ring dimension,
public-key encryption (OpenFHE's defaults for everything else: uniform ternary secret,
sigma = 3.19, STANDARD encryption technique).

OpenFHE has no noise-budget call for BFV, so the noise is measured from the raw decryption:
the secret key s and the ciphertext elements are read from OpenFHE's own JSON serialization
(evaluation form, one tower per prime of Q), x = c_0 + c_1 s (+ c_2 s^2) is formed tower by
tower, taken back to coefficients by an inverse negacyclic NTT written here (OpenFHE's
evaluation order is bit-reversed, evaluation point psi^(2 bitrev(i) + 1) with psi the tower's
serialized root of unity; the convention is checked by requiring the decoded secret key to be
ternary, and every measurement checks that OpenFHE's own Decrypt gives the expected product),
recombined over Q by the CRT, and the budget is computed with exactly the formula of
bfv::Decryptor::noise_budget: log2(Q) - 1 - log2(max_c |[t x_c]_Q|) (the invariant noise
budget; decryption is correct while it is > 0).

Usage: python bfv_noise_reference.py '{"log_n": 14, "depth": 5, "t": 65537, "dnum": 2,
"seeds": 5}'. Prints {"params": {...}} (ring dimension, the primes of Q and of P read from the
relinearization key), then one {"seed": i, "fresh": bits, "mult_relin": bits} per run.
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any

import openfhe as o  # pyright: ignore[reportMissingImports]


def bit_reverse(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0


def inverse_negacyclic(values: list[int], q: int, psi: int) -> list[int]:
    """Coefficients a_k of a(X) mod (X^N + 1, q) from OpenFHE's evaluation-form tower."""
    n = len(values)
    bits = n.bit_length() - 1
    # Natural order: b[j] = a(psi^(2j+1)) = sum_k (a_k psi^k) omega^(jk), omega = psi^2.
    b = [values[bit_reverse(j, bits)] for j in range(n)]
    omega_inv = pow(psi * psi % q, q - 2, q)
    # Iterative inverse cyclic DFT (decimation in time on the bit-reversed copy).
    a = [b[bit_reverse(j, bits)] for j in range(n)]
    length = 2
    while length <= n:
        w_len = pow(omega_inv, n // length, q)
        half = length // 2
        ws = [1] * half
        for i in range(1, half):
            ws[i] = ws[i - 1] * w_len % q
        for start in range(0, n, length):
            for i in range(half):
                u = a[start + i]
                v = a[start + i + half] * ws[i] % q
                a[start + i] = (u + v) % q
                a[start + i + half] = (u - v) % q
        length *= 2
    n_inv = pow(n, q - 2, q)
    psi_inv = pow(psi, q - 2, q)
    out = []
    scale = n_inv
    for k in range(n):
        out.append(a[k] * scale % q)
        scale = scale * psi_inv % q
    return out


def towers(poly: dict[str, Any]) -> list[list[int]]:
    """The residue vectors of a serialized DCRTPoly (must be in evaluation form)."""
    if poly["f"] != 0:
        raise SystemExit(f"bfv_noise_reference: expected evaluation form, found format {poly['f']}")
    return [t["v"]["ptr_wrapper"]["data"]["v"] for t in poly["v"]]


def shared_objects(obj: Any, table: dict[int, Any]) -> dict[int, Any]:
    """id -> data of every cereal shared pointer in a serialized object (later occurrences of
    the same pointer carry only its id, without the high bit cereal sets on the first)."""
    if isinstance(obj, dict):
        wrapper = obj.get("ptr_wrapper")
        if isinstance(wrapper, dict) and "id" in wrapper and "data" in wrapper:
            table[int(wrapper["id"]) & 0x7FFFFFFF] = wrapper["data"]
        for v in obj.values():
            shared_objects(v, table)
    elif isinstance(obj, list):
        for v in obj:
            shared_objects(v, table)
    return table


def resolve(ptr: dict[str, Any], table: dict[int, Any]) -> Any:
    wrapper = ptr["ptr_wrapper"]
    return wrapper["data"] if "data" in wrapper else table[int(wrapper["id"]) & 0x7FFFFFFF]


def tower_params(poly: dict[str, Any], table: dict[int, Any]) -> list[tuple[int, int]]:
    """(modulus, root of unity) of every tower of a serialized DCRTPoly."""
    out = []
    for t in resolve(poly["p"], table)["p"]:
        d = resolve(t, table)
        d = d.get("value0", d)
        out.append((int(d["cm"]["v"]), int(d["ru"]["v"])))
    return out


def find_key(obj: Any, key: str) -> Any:
    """The first value stored under `key` in a nested JSON object (depth first)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = find_key(v, key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = find_key(v, key)
            if found is not None:
                return found
    return None


class Secret:
    """OpenFHE's secret key: its towers in evaluation form and their (modulus, root)."""

    def __init__(self, sk: Any) -> None:
        data = json.loads(o.Serialize(sk, o.JSON))
        s = data["value0"]["ptr_wrapper"]["data"]["s"]
        self.params = tower_params(s, shared_objects(data, {}))
        self.eval = towers(s)
        for (q, psi), v in zip(self.params, self.eval, strict=True):
            if any(x not in (0, 1, q - 1) for x in inverse_negacyclic(v, q, psi)):
                raise SystemExit(
                    "bfv_noise_reference: the decoded secret key is not ternary; OpenFHE's "
                    "evaluation-form convention is not the one assumed"
                )


def noise_budget(ct: Any, sk: Secret, t: int) -> float:
    """log2(Q) - 1 - log2(max_c |[t (c_0 + c_1 s + ...)_c]_Q|), as bfv::Decryptor::noise_budget."""
    data = json.loads(o.Serialize(ct, o.JSON))
    elements = find_key(data, "v")  # Ciphertext: the vector of DCRTPoly elements
    polys = [towers(e) for e in elements]
    k = len(polys[0])
    if k > len(sk.params):
        raise SystemExit(
            f"bfv_noise_reference: ciphertext has {k} towers, key has {len(sk.params)}"
        )
    residues = []
    for i in range(k):
        q, psi = sk.params[i]
        x = [0] * len(sk.eval[i])
        for poly in reversed(polys):  # Horner: (c_2 s + c_1) s + c_0
            x = [(xv * sv + cv) % q for xv, sv, cv in zip(x, sk.eval[i], poly[i], strict=True)]
        residues.append(inverse_negacyclic(x, q, psi))
    qs = [sk.params[i][0] for i in range(k)]
    big_q = math.prod(qs)
    hats = [big_q // q for q in qs]
    hat_invs = [pow(h % q, q - 2, q) for h, q in zip(hats, qs, strict=True)]
    worst = 1
    for c in range(len(residues[0])):
        v = sum(residues[i][c] * hat_invs[i] % qs[i] * hats[i] for i in range(k)) % big_q
        v = v * t % big_q
        worst = max(worst, min(v, big_q - v))
    return max(0.0, math.log2(big_q) - 1.0 - math.log2(worst))


def key_moduli(cc: Any, sk: Any) -> list[int]:
    """The primes of the relinearization key's towers (Q then P)."""
    data = json.loads(o.Serialize(cc.GetEvalMultKeyVector(sk.GetKeyTag())[0], o.JSON))
    table = shared_objects(data, {})
    b = find_key(data, "ak")
    if not b:
        raise SystemExit(
            "bfv_noise_reference: no 'ak' element in the serialized relinearization key"
        )
    return [q for q, _ in tower_params(b[0], table)]


def main() -> int:
    cfg = json.loads(sys.argv[1])
    params = o.CCParamsBFVRNS()
    params.SetPlaintextModulus(cfg["t"])
    params.SetMultiplicativeDepth(cfg["depth"])
    params.SetRingDim(1 << cfg["log_n"])
    params.SetScalingModSize(60)
    params.SetMultiplicationTechnique(o.HPS)
    params.SetKeySwitchTechnique(o.HYBRID)
    params.SetNumLargeDigits(cfg["dnum"])
    params.SetSecurityLevel(o.HEStd_128_classic)
    cc = o.GenCryptoContext(params)
    for feature in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE):
        cc.Enable(feature)
    n = cc.GetRingDimension()
    t = cfg["t"]
    rng = random.Random(cfg.get("data_seed", 1))
    for seed in range(cfg["seeds"]):
        keys = cc.KeyGen()
        cc.EvalMultKeyGen(keys.secretKey)
        sk = Secret(keys.secretKey)
        if seed == 0:
            q_moduli = [q for q, _ in sk.params]
            p_moduli = [q for q in key_moduli(cc, keys.secretKey) if q not in q_moduli]
            described = {"ring_dim": n, "t": t, "q": q_moduli, "p": p_moduli, "dnum": cfg["dnum"]}
            print(json.dumps({"params": described}), flush=True)
        x = [rng.randrange(t) for _ in range(n)]
        y = [rng.randrange(t) for _ in range(n)]
        a = cc.Encrypt(keys.publicKey, cc.MakePackedPlaintext(x))
        b = cc.Encrypt(keys.publicKey, cc.MakePackedPlaintext(y))
        fresh = noise_budget(a, sk, t)
        prod = cc.EvalMult(a, b)
        after = noise_budget(prod, sk, t)
        out = cc.Decrypt(keys.secretKey, prod)
        out.SetLength(n)
        got = [v % t for v in out.GetPackedValue()]
        want = [xi * yi % t for xi, yi in zip(x, y, strict=True)]
        if got != want:
            raise SystemExit("bfv_noise_reference: OpenFHE's product decrypted wrongly")
        print(json.dumps({"seed": seed, "fresh": fresh, "mult_relin": after}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
