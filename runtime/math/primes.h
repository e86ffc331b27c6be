// NTT-friendly primes and roots of unity: deterministic Miller-Rabin for 64-bit integers,
// primes q = 1 mod 2N near a power of two (one-sided, or alternating above and below 2^k as
// the CKKS rescale needs so that the scale stays near 2^k, Blatt et al. PNAS 2020 supplement;
// Cheon-Han-Kim-Kim-Song, "A full RNS variant of approximate HE", SAC 2018, §3), and the
// minimal primitive 2N-th root of unity mod q.
#pragma once

#include <cstddef>
#include <vector>

#include "math/modarith.h"

namespace hec::math {

// Deterministic primality test for every 64-bit n (Miller-Rabin with the first 12 prime
// bases, which is exact below 3.18 * 10^23 by Sorenson-Webster 2017).
bool is_prime(u64 n);

// `count` distinct primes q with q = 1 mod 2*ring_dim and 2^(bits-1) < q < 2^bits, the
// largest such primes first (as close to 2^bits as possible from below, so each has exactly
// `bits` bits). Primes in `exclude` are skipped. ring_dim must be a power of two >= 2;
// 2 <= bits <= 61. Throws std::invalid_argument with the values if not enough exist.
std::vector<u64> ntt_primes(int bits, std::size_t count, std::size_t ring_dim,
                            const std::vector<u64>& exclude = {});

// `count` distinct primes q = 1 mod 2*ring_dim taken alternately just above and just below
// 2^bits (first above), each the nearest unused one on its side, skipping `exclude`. The
// product of a consecutive pair stays close to 2^(2*bits), which keeps the CKKS scale near
// 2^bits across rescales. 2 <= bits <= 60 (so that the primes above stay below 2^61).
std::vector<u64> ntt_primes_alternating(int bits, std::size_t count, std::size_t ring_dim,
                                        const std::vector<u64>& exclude = {});

// The smallest primitive `order`-th root of unity mod the prime q (order a power of two
// dividing q - 1; for the negacyclic NTT order = 2N). Throws if order does not divide q - 1.
u64 minimal_primitive_root(u64 order, u64 q);

}  // namespace hec::math
