"""Noise flooding of revealed CKKS outputs: the standard deviation the decrypt role adds, and
what it costs in precision (issue 25; docs/security.md, "Noise flooding").

Why. A CKKS decryption gives Delta·m + e, and e depends on the secret key: Li and Micciancio
("On the security of homomorphic encryption on approximate numbers", EUROCRYPT 2021) recover the
key from one decrypted result and its ciphertext, since re-encoding the revealed values gives
c0 + c1·s exactly, a linear system in s (runtime/tests/ckks/flooding_test.cpp runs the attack).
So the decrypt role adds to every revealed value x_j + e_j an independent Gaussian f_j of
standard deviation sigma_f (runtime/ckks/flooding.h), and the size of sigma_f is derived here.

Derivation. Compare the real view y_j = x_j + e_j + f_j with an ideal view y'_j = x_j + f_j that
does not depend on the errors at all (hence not on the key beyond what the values themselves
say). Both are Gaussian with the same sigma_f, shifted by e_j, so over the D values revealed
under one key the Kullback-Leibler divergence is KL = sum_j e_j^2 / (2 sigma_f^2), and by
Pinsker's inequality the statistical distance of the two views is at most sqrt(KL / 2). The
errors e_j have standard deviation sigma_e (the noise analysis, compiler/analysis/noise.py,
in value units); their squares sum to at most 2·D·sigma_e^2 except with probability
exp(-D/8)-ish (chi-square concentration), so KL <= D sigma_e^2 / sigma_f^2 and

    distance <= sigma_e · sqrt(D / 2) / sigma_f.

s bits of statistical security in the sense of Micciancio and Walter ("On the bit security of
cryptographic primitives", EUROCRYPT 2018), where a distinguishing advantage eps costs
log2(1/eps^2) bits, need distance <= 2^(-s/2):

    sigma_f = 2^(s/2) · sqrt(D / 2) · sigma_e.

This is the 2^(s/2) growth of Li, Micciancio, Schultz and Sorrell ("Securing approximate
homomorphic encryption using differential privacy", CRYPTO 2022) and of OpenFHE's
NOISE_FLOODING_DECRYPT mode, with the number of revealed values inside the square root. D is
bounded by a stated budget of values revealed under one key, REVEAL_BUDGET = 2^24 (hec makes a
new key for every run; a GWAS of 10^6 SNPs reveals 4·10^6 values).

Cost. The revealed value's error becomes sqrt(sigma_e^2 + sigma_f^2), so an output loses
log2(sqrt(1 + 2^s · D / 2)) bits of precision: 31.5 bits at s = 40 and D = 2^24, the same for
every output. Exact outputs (packed counts, decoded by rounding to integers; BFV) reveal no
error and are not flooded.
"""

from __future__ import annotations

import math

DEFAULT_STATISTICAL_BITS = 40
REVEAL_BUDGET_LOG2 = 24


def flooding_factor(statistical_bits: float = DEFAULT_STATISTICAL_BITS) -> float:
    """sigma_f / sigma_e: 2^(s/2) · sqrt(D / 2) with D the reveal budget."""
    return 2.0 ** (statistical_bits / 2.0) * math.sqrt(2.0 ** (REVEAL_BUDGET_LOG2 - 1))


def flooding_sigma(error_sigma: float, statistical_bits: float = DEFAULT_STATISTICAL_BITS) -> float:
    """The standard deviation the decrypt role adds to a revealed value whose error has
    standard deviation `error_sigma` (value units)."""
    return flooding_factor(statistical_bits) * error_sigma


def flooding_cost_bits(statistical_bits: float = DEFAULT_STATISTICAL_BITS) -> float:
    """Bits of precision flooding costs every output: log2 sqrt(1 + (sigma_f / sigma_e)^2)."""
    return 0.5 * math.log2(1.0 + flooding_factor(statistical_bits) ** 2)
