"""The security table and the NTT-friendly primes behind parameter-selection."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from compiler.analysis.security import (
    HE_STANDARD_128,
    MIN_SECURE_LOG_N,
    is_prime,
    ntt_primes,
    security_bits,
    smallest_secure_log_n,
)


def test_table_matches_the_he_standard_v1_1() -> None:
    # HomomorphicEncryption.org standard v1.1, Table 1, 128-bit classical, ternary secret.
    assert [HE_STANDARD_128[k] for k in range(10, 16)] == [27, 54, 109, 218, 438, 881]


@pytest.mark.parametrize(("log_n", "bits"), [(13, 218), (14, 438)])
def test_security_is_granted_up_to_the_bound_and_not_beyond(log_n: int, bits: int) -> None:
    assert security_bits(log_n, bits) == 128
    assert security_bits(log_n, bits + 0.01) == 0
    assert smallest_secure_log_n(bits) == log_n
    assert smallest_secure_log_n(bits + 1) == log_n + 1


def test_rings_below_2_12_are_not_certified() -> None:
    # The runtime's CKKS refuses n < 2^12 unless insecure (runtime/ckks/params.cpp); the
    # compiler agrees, so a tiny program gets n = 2^12, not a ring its keygen would refuse.
    assert security_bits(11, 40) == 0 and security_bits(10, 20) == 0
    assert smallest_secure_log_n(40) == 12
    assert MIN_SECURE_LOG_N == 12


def test_one_table_for_compiler_and_runtime() -> None:
    """Issue 18: the HE Standard table was written three times (Python, CKKS, BFV) and the two
    C++ copies disagreed outside the table (-1 against 0). runtime/core/security.h is now the
    only copy: both schemes include it and the compiler reads it."""
    runtime = Path(__file__).resolve().parents[2] / "runtime"
    header = (runtime / "core" / "security.h").read_text()
    assert "kHeStandard128[] = {27, 54, 109, 218, 438, 881, 1747, 3523};" in header
    bounds = [27, 54, 109, 218, 438, 881, 1747, 3523]
    assert dict(zip(range(10, 18), bounds, strict=True)) == HE_STANDARD_128
    for source in ("ckks/params.cpp", "bfv/context.cpp"):
        text = (runtime / source).read_text()
        assert '#include "core/security.h"' in text, source
        assert "1747" not in text and "3523" not in text, f"{source} repeats the table"
    assert "kMinSecureLogN = " not in (runtime / "ckks" / "params.cpp").read_text()


def test_is_prime_against_trial_division() -> None:
    def slow(n: int) -> bool:
        return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))

    assert [n for n in range(2000) if is_prime(n)] == [n for n in range(2000) if slow(n)]
    assert is_prime(2**61 - 1) and not is_prime(2**61 + 1)


@pytest.mark.parametrize(("bits", "log_n", "count"), [(60, 13, 3), (36, 14, 4), (50, 16, 2)])
def test_ntt_primes_are_distinct_ntt_friendly_and_near_the_size(
    bits: int, log_n: int, count: int
) -> None:
    primes = ntt_primes(bits, log_n, count)
    assert len(set(primes)) == count
    for q in primes:
        assert is_prime(q) and q % (2 << log_n) == 1
        assert abs(math.log2(q) - bits) < 1e-3
