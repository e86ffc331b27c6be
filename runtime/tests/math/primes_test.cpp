// Tests for math/primes.h: primality against trial division and known primes, NTT prime
// generation (congruence, size, nearness, alternation, exclusion) and minimal roots.
#include "math/primes.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hec::math {
namespace {

bool is_prime_trial(u64 n) {
  if (n < 2) return false;
  for (u64 d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(Primes, MillerRabinMatchesTrialDivision) {
  for (u64 n = 0; n < 20000; ++n) ASSERT_EQ(is_prime(n), is_prime_trial(n)) << n;
  for (u64 n = (u64{1} << 40) - 2000; n < (u64{1} << 40); ++n) {
    ASSERT_EQ(is_prime(n), is_prime_trial(n)) << n;
  }
}

TEST(Primes, KnownLargeValues) {
  EXPECT_TRUE(is_prime((u64{1} << 61) - 1));
  EXPECT_TRUE(is_prime(18446744073709551557ULL));  // largest 64-bit prime, 2^64 - 59
  EXPECT_FALSE(is_prime(18446744073709551557ULL - 2));
  EXPECT_FALSE(is_prime(3215031751ULL));           // strong pseudoprime to bases 2, 3, 5, 7
  EXPECT_FALSE(is_prime(3825123056546413051ULL));  // strong pseudoprime to bases 2..23
  EXPECT_FALSE(is_prime(561));                     // Carmichael
}

TEST(Primes, NttPrimesAreNearestBelowPowerOfTwo) {
  const std::size_t n = 1 << 12;
  const std::vector<u64> primes = ntt_primes(50, 5, n);
  ASSERT_EQ(primes.size(), 5u);
  for (std::size_t i = 0; i < primes.size(); ++i) {
    EXPECT_TRUE(is_prime(primes[i]));
    EXPECT_EQ(primes[i] % (2 * n), 1u);
    EXPECT_EQ(64 - __builtin_clzll(primes[i]), 50);
    if (i > 0) {
      EXPECT_LT(primes[i], primes[i - 1]);
    }
  }
  // No NTT-friendly prime was skipped between 2^50 and the last one returned.
  std::size_t found = 0;
  for (u64 q = (u64{1} << 50) - 2 * n + 1; q >= primes.back(); q -= 2 * n) found += is_prime(q);
  EXPECT_EQ(found, primes.size());
}

TEST(Primes, AlternatingAboveAndBelowWithExclusion) {
  const std::size_t n = 1 << 13;
  const std::vector<u64> first = ntt_primes_alternating(40, 6, n);
  const u64 center = u64{1} << 40;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(is_prime(first[i]));
    EXPECT_EQ(first[i] % (2 * n), 1u);
    EXPECT_EQ(first[i] > center, i % 2 == 0) << i;
  }
  // The nearest above is the first candidate 2^40 + 1 + k 2N that is prime.
  u64 nearest_above = center + 1;
  while (!is_prime(nearest_above)) nearest_above += 2 * n;
  EXPECT_EQ(first[0], nearest_above);
  const std::vector<u64> second = ntt_primes_alternating(40, 4, n, first);
  for (u64 q : second) EXPECT_EQ(std::count(first.begin(), first.end(), q), 0);
  const std::vector<u64> one_sided = ntt_primes(40, 3, n, first);
  for (u64 q : one_sided) EXPECT_EQ(std::count(first.begin(), first.end(), q), 0);
}

TEST(Primes, RejectsBadRequests) {
  EXPECT_THROW(ntt_primes(62, 1, 1024), std::invalid_argument);
  EXPECT_THROW(ntt_primes(30, 1, 1000), std::invalid_argument);
  EXPECT_THROW(ntt_primes(12, 100, 1024), std::invalid_argument);  // too few exist
  EXPECT_THROW(ntt_primes_alternating(61, 1, 1024), std::invalid_argument);
  EXPECT_THROW(minimal_primitive_root(16, 7681 * 3), std::invalid_argument);
  EXPECT_THROW(minimal_primitive_root(7, 7681), std::invalid_argument);
}

TEST(Primes, MinimalPrimitiveRootByBruteForce) {
  for (u64 q : {7681ULL, 12289ULL, 65537ULL}) {
    for (u64 order : {16ULL, 256ULL, 512ULL}) {
      if ((q - 1) % order != 0) continue;
      const Modulus m(q);
      const u64 g = minimal_primitive_root(order, q);
      EXPECT_EQ(pow_mod(g, order / 2, m), q - 1) << q << " " << order;
      for (u64 x = 2; x < g; ++x) {
        ASSERT_NE(pow_mod(x, order / 2, m), q - 1) << "smaller root " << x << " mod " << q;
      }
    }
  }
}

}  // namespace
}  // namespace hec::math
