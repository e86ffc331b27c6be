// Tests for math/ntt.h on both kernel paths: known answers from the O(N^2) definition,
// INTT(NTT(a)) = a, NTT products against schoolbook negacyclic products for every N from
// 2^10 to 2^17, documented lazy ranges, and bit-identical results of the AVX-512 IFMA and
// portable paths (skipped when the CPU lacks IFMA).
#include "math/ntt.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "math/cpu_features.h"
#include "math/primes.h"

namespace hec::math {
namespace {

// Test inputs only (not secret): a fixed-seed generator keeps failures reproducible.
std::vector<u64> random_vector(std::size_t n, u64 bound, std::mt19937_64& rng) {
  std::vector<u64> v(n);
  for (u64& x : v) x = rng() % bound;
  return v;
}

// c = a * b mod (X^N + 1, q), coefficient k only: sum_{i+j=k} a_i b_j - sum_{i+j=k+N} a_i b_j.
u64 negacyclic_coefficient(const std::vector<u64>& a, const std::vector<u64>& b, std::size_t k,
                           const Modulus& m) {
  const std::size_t n = a.size();
  const u64 q = m.value();
  u64 sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = (k + n - i) % n;
    const u64 p = mul_mod(a[i], b[j], m);
    sum = (i <= k) ? add_mod(sum, p, q) : sub_mod(sum, p, q);
  }
  return sum;
}

// Runs each test on the portable path and (if present) on the IFMA path.
class NttPathTest : public ::testing::TestWithParam<KernelPath> {
 protected:
  void SetUp() override {
    if (GetParam() == KernelPath::kAvx512Ifma && !cpu_has_avx512_ifma()) {
      GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
    }
    force_portable_path(GetParam() == KernelPath::kPortable);
  }
  void TearDown() override { force_portable_path(false); }
};

INSTANTIATE_TEST_SUITE_P(Paths, NttPathTest,
                         ::testing::Values(KernelPath::kPortable, KernelPath::kAvx512Ifma),
                         [](const auto& info) {
                           return info.param == KernelPath::kPortable ? "Portable" : "Ifma";
                         });

TEST_P(NttPathTest, KnownAnswerFromDefinition) {
  std::mt19937_64 rng(11);
  for (std::size_t n : {16u, 64u, 1024u}) {
    for (int bits : {30, 50, 60}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const NttTables tables(n, m);
      const std::vector<u64> a = random_vector(n, m.value(), rng);
      std::vector<u64> out = a;
      ntt_forward_inplace(out.data(), tables);
      const int log_n = tables.log_ring_dim();
      for (std::size_t j = 0; j < n; ++j) {
        // Slot j holds a(psi^(2 bitrev(j) + 1)).
        const u64 point = pow_mod(tables.root(), 2 * bit_reverse(j, log_n) + 1, m);
        u64 value = 0;
        for (std::size_t k = n; k-- > 0;)
          value = add_mod(mul_mod(value, point, m), a[k], m.value());
        ASSERT_EQ(out[j], value) << "N=" << n << " bits=" << bits << " slot " << j;
      }
    }
  }
}

TEST_P(NttPathTest, SmallKnownVector) {
  // N = 16, q = 97 (= 1 mod 32). The minimal primitive 32nd root is 19 (19^16 = -1 mod 97,
  // and 2..18 are not). Expected values computed independently (Python, pow(19, e, 97)):
  // a = 1 + 2X + 3X^2 evaluated at 19^(2 bitrev4(j) + 1) for slots j = 0..15.
  const Modulus m(97);
  const NttTables tables(16, m);
  EXPECT_EQ(tables.root(), 19u);
  std::vector<u64> a(16, 0);
  a[0] = 1;
  a[1] = 2;
  a[2] = 3;
  const std::vector<u64> original = a;
  const std::vector<u64> expected = {55, 76, 22, 45, 94, 77, 69, 55, 66, 81, 45, 6, 68, 42, 49, 39};
  ntt_forward_inplace(a.data(), tables);
  EXPECT_EQ(a, expected);
  ntt_inverse_inplace(a.data(), tables);
  EXPECT_EQ(a, original);
}

TEST_P(NttPathTest, InverseOfForwardIsIdentityAtEverySize) {
  std::mt19937_64 rng(12);
  for (int log_n = kMinLogRingDim; log_n <= kMaxLogRingDim; ++log_n) {
    const std::size_t n = std::size_t{1} << log_n;
    for (int bits : {30, 50, 61}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const NttTables tables(n, m);
      const std::vector<u64> a = random_vector(n, m.value(), rng);
      std::vector<u64> b = a;
      ntt_forward_inplace(b.data(), tables);
      for (u64 x : b) ASSERT_LT(x, m.value());
      ntt_inverse_inplace(b.data(), tables);
      ASSERT_EQ(a, b) << "N=2^" << log_n << " bits=" << bits;
    }
  }
}

// ntt_inverse(in, out) equals the in-place transform and leaves in unchanged; in == out too.
TEST_P(NttPathTest, OutOfPlaceInverseEqualsInPlace) {
  std::mt19937_64 rng(17);
  for (std::size_t n : {16u, 4096u}) {
    for (int bits : {40, 60}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const NttTables tables(n, m);
      const std::vector<u64> in = random_vector(n, 2 * m.value(), rng);  // [0, 2q)
      std::vector<u64> want = in, got(n), copy = in;
      ntt_inverse_inplace(want.data(), tables);
      ntt_inverse(in.data(), got.data(), tables);
      EXPECT_EQ(got, want) << "N=" << n << " bits=" << bits;
      ntt_inverse(copy.data(), copy.data(), tables);
      EXPECT_EQ(copy, want) << "aliased, N=" << n << " bits=" << bits;
    }
  }
}

TEST_P(NttPathTest, LazyOutputsStayInDocumentedRanges) {
  std::mt19937_64 rng(13);
  for (std::size_t n : {16u, 4096u}) {
    for (int bits : {50, 61}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const u64 q = m.value();
      const NttTables tables(n, m);
      std::vector<u64> a = random_vector(n, 4 * q, rng);  // lazy input in [0, 4q)
      std::vector<u64> reduced = a;
      for (u64& x : reduced) x %= q;
      ntt_forward_lazy_inplace(a.data(), tables);
      ntt_forward_inplace(reduced.data(), tables);
      for (std::size_t j = 0; j < n; ++j) {
        ASSERT_LT(a[j], 4 * q);
        ASSERT_EQ(a[j] % q, reduced[j]);
      }
      std::vector<u64> b = random_vector(n, 2 * q, rng);  // inverse lazy input in [0, 2q)
      std::vector<u64> b_reduced = b;
      for (u64& x : b_reduced) x %= q;
      ntt_inverse_lazy_inplace(b.data(), tables);
      ntt_inverse_inplace(b_reduced.data(), tables);
      for (std::size_t j = 0; j < n; ++j) {
        ASSERT_LT(b[j], 2 * q);
        ASSERT_EQ(b[j] % q, b_reduced[j]);
      }
    }
  }
}

TEST_P(NttPathTest, ProductEqualsSchoolbookNegacyclic) {
  std::mt19937_64 rng(14);
  for (int log_n = 10; log_n <= kMaxLogRingDim; ++log_n) {
    const std::size_t n = std::size_t{1} << log_n;
    const Modulus m(ntt_primes(50, 1, n)[0]);
    const NttTables tables(n, m);
    const std::vector<u64> a = random_vector(n, m.value(), rng);
    const std::vector<u64> b = random_vector(n, m.value(), rng);
    std::vector<u64> fa = a, fb = b;
    ntt_forward_inplace(fa.data(), tables);
    ntt_forward_inplace(fb.data(), tables);
    for (std::size_t j = 0; j < n; ++j) fa[j] = mul_mod(fa[j], fb[j], m);
    ntt_inverse_inplace(fa.data(), tables);
    // Schoolbook is O(N^2): all coefficients up to 2^11, then 16 random ones plus the ends.
    std::vector<std::size_t> check;
    if (n <= 2048) {
      for (std::size_t k = 0; k < n; ++k) check.push_back(k);
    } else {
      check = {0, 1, n - 1};
      for (int r = 0; r < 16; ++r) check.push_back(rng() % n);
    }
    for (std::size_t k : check) {
      ASSERT_EQ(fa[k], negacyclic_coefficient(a, b, k, m)) << "N=2^" << log_n << " k=" << k;
    }
  }
}

TEST_P(NttPathTest, SlowFullSchoolbookProductsUpTo2To13) {
  std::mt19937_64 rng(16);
  for (int log_n = 10; log_n <= 13; ++log_n) {
    const std::size_t n = std::size_t{1} << log_n;
    for (int bits : {30, 50, 61}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const NttTables tables(n, m);
      const std::vector<u64> a = random_vector(n, m.value(), rng);
      const std::vector<u64> b = random_vector(n, m.value(), rng);
      std::vector<u64> fa = a, fb = b;
      ntt_forward_inplace(fa.data(), tables);
      ntt_forward_inplace(fb.data(), tables);
      for (std::size_t j = 0; j < n; ++j) fa[j] = mul_mod(fa[j], fb[j], m);
      ntt_inverse_inplace(fa.data(), tables);
      for (std::size_t k = 0; k < n; ++k) {
        ASSERT_EQ(fa[k], negacyclic_coefficient(a, b, k, m))
            << "N=2^" << log_n << " bits=" << bits << " k=" << k;
      }
    }
  }
}

TEST(NttPaths, IfmaAndPortableAgreeBitForBit) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(15);
  for (int log_n = kMinLogRingDim; log_n <= kMaxLogRingDim; ++log_n) {
    const std::size_t n = std::size_t{1} << log_n;
    for (int bits : {20, 36, 49, 50}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const NttTables tables(n, m);
      ASSERT_TRUE(tables.ifma_capable());
      std::vector<u64> a = random_vector(n, m.value(), rng);
      if (log_n % 3 == 0) std::fill(a.begin(), a.end(), m.value() - 1);  // extreme inputs
      if (log_n % 3 == 1) {
        for (std::size_t i = 0; i < n; i += 2) a[i] = 0;
      }
      std::vector<u64> portable = a, ifma = a;
      force_portable_path(true);
      ntt_forward_inplace(portable.data(), tables);
      force_portable_path(false);
      ASSERT_EQ(active_kernel_path(), KernelPath::kAvx512Ifma);
      ntt_forward_inplace(ifma.data(), tables);
      ASSERT_EQ(portable, ifma) << "forward, N=2^" << log_n << " bits=" << bits;
      force_portable_path(true);
      ntt_inverse_inplace(portable.data(), tables);
      force_portable_path(false);
      ntt_inverse_inplace(ifma.data(), tables);
      ASSERT_EQ(portable, ifma) << "inverse, N=2^" << log_n << " bits=" << bits;
      ASSERT_EQ(ifma, a);
    }
  }
}

// Moduli of 50 to 61 bits take the AVX-512 kernels with the emulated 64-bit Shoup multiplier
// (ntt_avx512.cpp); fully reduced outputs must match the portable path bit for bit, lazy
// outputs must be congruent and in range.
TEST(NttPaths, WideModulusAvx512AndPortableAgree) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(16);
  for (int log_n = kMinLogRingDim; log_n <= kMaxLogRingDim; ++log_n) {
    const std::size_t n = std::size_t{1} << log_n;
    for (int bits : {50, 51, 55, 60, 61}) {
      const Modulus m(ntt_primes(bits, 1, n)[0]);
      const u64 q = m.value();
      const NttTables tables(n, m);
      ASSERT_TRUE(tables.avx512_capable());
      ASSERT_EQ(tables.ifma_capable(), bits <= kIfmaMaxModulusBits);
      std::vector<u64> a = random_vector(n, q, rng);
      if (log_n % 3 == 0) std::fill(a.begin(), a.end(), q - 1);  // extreme inputs
      if (log_n % 3 == 1) {
        for (std::size_t i = 0; i < n; i += 2) a[i] = 0;
      }
      std::vector<u64> portable = a, vec = a;
      force_portable_path(true);
      ntt_forward_inplace(portable.data(), tables);
      force_portable_path(false);
      ASSERT_EQ(active_kernel_path(), KernelPath::kAvx512Ifma);
      ntt_forward_inplace(vec.data(), tables);
      ASSERT_EQ(portable, vec) << "forward, N=2^" << log_n << " bits=" << bits;
      force_portable_path(true);
      ntt_inverse_inplace(portable.data(), tables);
      force_portable_path(false);
      ntt_inverse_inplace(vec.data(), tables);
      ASSERT_EQ(portable, vec) << "inverse, N=2^" << log_n << " bits=" << bits;
      ASSERT_EQ(vec, a);

      // Lazy transforms on inputs up to 4q - 1 (forward) and 2q - 1 (inverse).
      std::vector<u64> big(n);
      for (std::size_t i = 0; i < n; ++i) big[i] = a[i] + (i % 4) * q;
      std::vector<u64> lazy = big, full = a;
      ntt_forward_lazy_inplace(lazy.data(), tables);
      ntt_forward_inplace(full.data(), tables);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_LT(lazy[i], 4 * q) << "forward lazy, bits=" << bits << " i=" << i;
        ASSERT_EQ(lazy[i] % q, full[i]) << "forward lazy, bits=" << bits << " i=" << i;
      }
      for (std::size_t i = 0; i < n; ++i) lazy[i] = full[i] + (i % 2) * q;
      ntt_inverse_lazy_inplace(lazy.data(), tables);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_LT(lazy[i], 2 * q) << "inverse lazy, bits=" << bits << " i=" << i;
        ASSERT_EQ(lazy[i] % q, a[i]) << "inverse lazy, bits=" << bits << " i=" << i;
      }
    }
  }
}
// The wide kernels keep forward values in [0, 8q) and inverse ones in [0, 4q) between layers,
// with products left in the [0, 4q) of their approximate quotient; 8q < 2^64 holds only for
// q < 2^61. At the largest 61-bit primes, on inputs at the top of the documented ranges
// (every coefficient 4q - 1 resp. 2q - 1, or alternating with 0, the words that make the
// butterflies' sums largest), the transforms still agree with the portable path mod q.
TEST(NttPaths, WideKernelsHoldAtTheTopOfTheirRanges) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  for (int log_n : {4, 5, 10, 14}) {
    const std::size_t n = std::size_t{1} << log_n;
    for (const u64 prime : ntt_primes(61, 2, n)) {
      const Modulus m(prime);
      const u64 q = m.value();
      const NttTables tables(n, m);
      ASSERT_FALSE(tables.ifma_capable());
      for (int pattern = 0; pattern < 3; ++pattern) {
        const auto top = [&](std::size_t i, u64 bound) {
          return pattern == 0 || (pattern == 1 && i % 2 == 0) || (pattern == 2 && i % 2 == 1)
                     ? bound - 1
                     : u64{0};
        };
        std::vector<u64> lazy(n), want(n);
        for (std::size_t i = 0; i < n; ++i) {
          lazy[i] = top(i, 4 * q);
          want[i] = lazy[i] % q;
        }
        ntt_forward_lazy_inplace(lazy.data(), tables);
        force_portable_path(true);
        ntt_forward_inplace(want.data(), tables);
        force_portable_path(false);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_LT(lazy[i], 4 * q) << "forward, N=2^" << log_n << " pattern " << pattern;
          ASSERT_EQ(lazy[i] % q, want[i]) << "forward, N=2^" << log_n << " pattern " << pattern;
        }
        std::vector<u64> inv(n), inv_lazy(n), inv_want(n);
        for (std::size_t i = 0; i < n; ++i) {
          inv[i] = inv_lazy[i] = top(i, 2 * q);
          inv_want[i] = inv[i] % q;
        }
        ntt_inverse_inplace(inv.data(), tables);
        ntt_inverse_lazy_inplace(inv_lazy.data(), tables);
        force_portable_path(true);
        ntt_inverse_inplace(inv_want.data(), tables);
        force_portable_path(false);
        ASSERT_EQ(inv, inv_want) << "inverse, N=2^" << log_n << " pattern " << pattern;
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_LT(inv_lazy[i], 2 * q) << "inverse lazy, N=2^" << log_n;
          ASSERT_EQ(inv_lazy[i] % q, inv_want[i]) << "inverse lazy, N=2^" << log_n;
        }
      }
    }
  }
}

TEST(NttTables, RejectsBadParameters) {
  EXPECT_THROW(NttTables(1000, Modulus(12289)), std::invalid_argument);     // not 2^k
  EXPECT_THROW(NttTables(1 << 18, Modulus(ntt_primes(50, 1, 1 << 18)[0])),  // too large
               std::invalid_argument);
  EXPECT_THROW(NttTables(8, Modulus(17)), std::invalid_argument);         // too small
  EXPECT_THROW(NttTables(4096, Modulus(12289)), std::invalid_argument);   // 12289 != 1 mod 8192
  EXPECT_THROW(NttTables(16, Modulus(97 * 193)), std::invalid_argument);  // not prime
  EXPECT_FALSE(NttTables(1024, Modulus(ntt_primes(55, 1, 1024)[0])).ifma_capable());
  EXPECT_TRUE(NttTables(1024, Modulus(ntt_primes(50, 1, 1024)[0])).ifma_capable());
}

#ifdef HEC_DEBUG
TEST(NttDebugChecks, RejectInputsOutsideTheDocumentedRange) {
  const Modulus m(ntt_primes(50, 1, 64)[0]);
  const NttTables tables(64, m);
  std::vector<u64> a(64, 0);
  a[5] = m.value();  // fine for the lazy forward and the inverse, not for ntt_forward_inplace
  EXPECT_THROW(ntt_forward_inplace(a.data(), tables), std::invalid_argument);
  a[5] = 2 * m.value();
  EXPECT_THROW(ntt_inverse_inplace(a.data(), tables), std::invalid_argument);
  a[5] = 4 * m.value();
  EXPECT_THROW(ntt_forward_lazy_inplace(a.data(), tables), std::invalid_argument);
}
#endif

}  // namespace
}  // namespace hec::math
