"""128-bit security for RLWE parameters, and NTT-friendly primes for the modulus chain.

The table is the Homomorphic Encryption Standard (Albrecht et al., HomomorphicEncryption.org,
v1.1, 2018), Table 1: the largest log2(Q·P) for a ring dimension n at 128-bit classical
security with a ternary secret and error sigma = 3.2 (the same numbers SEAL ships in
`hestdparms.h`: 27, 54, 109, 218, 438, 881). The standard stops at n = 2^15; for 2^16 and
2^17 we take the more conservative of the values we were given (1761, 3524) and those of
the 2024 FHE security guidelines (gong-cr/FHE-Security-Guidelines, lattice-estimator based:
1747, 3523). A parameter set is secure when its total modulus bits, special primes included,
are at most the entry for its n.

Primes: RNS-CKKS needs q = 1 (mod 2n) so the negacyclic NTT of size n exists; a prime is
taken as the one of that form closest to the wanted size (deterministic Miller-Rabin on
64-bit-and-larger integers with the first 12 primes as bases is exact below 3.3e24).
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

from compiler.errors import InternalError

# log2(n) -> max log2(QP) at 128-bit security, ternary secret, sigma = 3.2, and the smallest
# ring the runtime accepts as secure: read from the runtime's one copy (runtime/core/
# security.h), so the compiler never certifies what the runtime would refuse, or the reverse.
SECURITY_HEADER = Path(__file__).resolve().parents[2] / "runtime" / "core" / "security.h"


def _read_security_header(path: Path) -> tuple[dict[int, int], int]:
    try:
        text = path.read_text()
    except OSError as e:
        raise InternalError(f"{path}: the security table is missing ({e})") from None
    first = re.search(r"kHeStandardMinLogN = (\d+);", text)
    table = re.search(r"kHeStandard128\[\] = \{([\d, ]+)\};", text)
    secure = re.search(r"kMinSecureLogN = (\d+);", text)
    if not (first and table and secure):
        raise InternalError(f"{path}: the security table is not in the expected form")
    bounds = [int(x) for x in table.group(1).split(",")]
    start = int(first.group(1))
    return {start + k: bound for k, bound in enumerate(bounds)}, int(secure.group(1))


HE_STANDARD_128, MIN_SECURE_LOG_N = _read_security_header(SECURITY_HEADER)
MIN_LOG_N = min(HE_STANDARD_128)
MAX_LOG_N = max(HE_STANDARD_128)
# The error distribution of the standard (and of our runtime).
ERROR_SIGMA = 3.2
# The largest prime size the runtime's 64-bit modular arithmetic takes.
MAX_PRIME_BITS = 60
MIN_PRIME_BITS = 20


def max_log_qp(log_n: int) -> int:
    return HE_STANDARD_128[log_n]


def smallest_secure_log_n(log_qp: float) -> int | None:
    """The smallest ring dimension (log2) whose 128-bit bound holds log_qp bits."""
    for log_n in sorted(HE_STANDARD_128):
        if log_n >= MIN_SECURE_LOG_N and log_qp <= HE_STANDARD_128[log_n]:
            return log_n
    return None


def security_bits(log_n: int, log_qp: float) -> int:
    """128 when the parameters are within the table and the ring is one the runtime accepts as
    secure (n >= 2^12), else 0 (not certified)."""
    if log_n < MIN_SECURE_LOG_N:
        return 0
    return 128 if log_n in HE_STANDARD_128 and log_qp <= HE_STANDARD_128[log_n] else 0


_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in _MR_BASES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def ntt_primes(bits: float, log_n: int, count: int, avoid: set[int] | None = None) -> list[int]:
    """`count` distinct primes q = 1 (mod 2n), alternately just above and just below 2^bits
    (so that a chain of rescales by them keeps the scale close to its nominal value)."""
    avoid = set(avoid or ())
    step = 2 << log_n
    target = round(2.0**bits)
    centre = target - (target % step) + 1
    found: list[int] = []
    up, down = centre, centre - step
    take_up = True
    while len(found) < count:
        if take_up:
            candidate, up = up, up + step
        else:
            candidate, down = down, down - step
        if candidate > 2 and candidate not in avoid and is_prime(candidate):
            found.append(candidate)
            avoid.add(candidate)
            take_up = not take_up
        if down < step and up > 4 * target:
            raise ValueError(f"no NTT-friendly primes near 2^{bits} for n = 2^{log_n}")
    return found


def composite_primes(
    bits: float, log_n: int, levels: int, group: int, input_scale: float
) -> list[int]:
    """Rescale primes q_1..q_levels for composite scaling (`group` primes per multiplicative
    level, each near 2^bits): at every level, from the top down, the group whose product
    brings the exact scale S^2 / (q ··· q') closest to its nominal value. NTT-friendly primes
    of 30-40 bits lie 2^-10 to 2^-20 of their size apart, and a scale's relative deviation
    doubles at every squaring, so primes merely alternating around 2^bits (ntt_primes) let
    the exact scales of a deep chain drift by whole bits; choosing each group against the
    scale it must restore keeps them within a tiny fraction of a bit of nominal.
    Returned in chain order: q_levels is dropped first."""
    if levels % group:
        raise ValueError(f"{levels} levels are not whole groups of {group}")
    pool = ntt_primes(bits, log_n, 48 * group)
    exact = input_scale  # log2 of the exact scale at the current level
    nominal = input_scale
    chosen: list[int] = []  # top first
    for _ in range(levels // group):
        nominal = 2.0 * nominal - group * bits
        want = 2.0 * exact - nominal  # log2 of the product that restores the nominal scale
        best: tuple[float, tuple[int, ...]] | None = None
        for combo in itertools.combinations(pool, group):
            miss = abs(log2_product(combo) - want)
            if best is None or miss < best[0]:
                best = (miss, combo)
        assert best is not None
        for q in best[1]:
            pool.remove(q)
        chosen.extend(best[1])
        exact = 2.0 * exact - log2_product(best[1])
    return chosen[::-1]


def log2_product(values: list[int] | tuple[int, ...]) -> float:
    return sum(math.log2(v) for v in values)


def largest_ntt_primes(bits: int, log_n: int, count: int) -> list[int]:
    """The `count` largest primes q < 2^bits with q = 1 (mod 2n), largest first."""
    step = 2 << log_n
    q = ((1 << bits) - 1) // step * step + 1
    out: list[int] = []
    while len(out) < count and q > step:
        if q < (1 << bits) and is_prime(q):
            out.append(q)
        q -= step
    return out
