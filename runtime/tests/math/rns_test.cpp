// Tests for math/rns.h: CRT compose/decompose round trips, centred composition, approximate
// base conversion within its bound (x + u Q with 0 <= u < k) and exact conversion.
#include "math/rns.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "math/cpu_features.h"
#include "math/primes.h"

namespace hec::math {
namespace {

// Residues of a random value x in [0, Q): limb-major, n coefficients.
std::vector<u64> random_residues(const RnsBase& base, std::size_t n, std::mt19937_64& rng) {
  std::vector<u64> v(base.size() * n);
  for (std::size_t i = 0; i < base.size(); ++i) {
    for (std::size_t c = 0; c < n; ++c) v[i * n + c] = rng() % base[i].value();
  }
  return v;
}

// conv's output for `in` (n coefficients) on the portable path and on the vector path this
// CPU selects, in that order.
std::pair<std::vector<u64>, std::vector<u64>> convert_on_both_paths(const BaseConverter& conv,
                                                                    const std::vector<u64>& in,
                                                                    std::size_t n, bool exact) {
  std::vector<u64> portable(conv.to().size() * n), vector(conv.to().size() * n);
  force_portable_path(true);
  exact ? conv.convert_exact(in.data(), portable.data(), n)
        : conv.convert_approx(in.data(), portable.data(), n);
  force_portable_path(false);
  exact ? conv.convert_exact(in.data(), vector.data(), n)
        : conv.convert_approx(in.data(), vector.data(), n);
  return {portable, vector};
}

// (x + u * Q) mod p for the multi-word x and Q.
u64 shifted_mod(const RnsBase& base, const std::vector<u64>& x, u64 u, const Modulus& p) {
  const RnsBase single(std::vector<Modulus>{p});
  u64 x_mod = 0, q_mod = 0;
  single.decompose(x, &x_mod);
  single.decompose(base.product(), &q_mod);
  return add_mod(x_mod, mul_mod(u % p.value(), q_mod, p), p.value());
}

TEST(RnsBase, ComposeDecomposeRoundTrip) {
  std::mt19937_64 rng(21);
  const RnsBase base(ntt_primes(60, 5, 1024));
  const std::size_t n = 200;
  const std::vector<u64> in = random_residues(base, n, rng);
  for (std::size_t c = 0; c < n; ++c) {
    const std::vector<u64> x = base.compose(in.data() + c, n);
    ASSERT_EQ(x.size(), base.size());
    std::vector<u64> back(base.size());
    base.decompose(x, back.data());
    for (std::size_t i = 0; i < base.size(); ++i) ASSERT_EQ(back[i], in[i * n + c]);
  }
  // Q itself decomposes to zeros; a known small value composes to itself.
  std::vector<u64> zeros(base.size());
  base.decompose(base.product(), zeros.data());
  for (u64 z : zeros) EXPECT_EQ(z, 0u);
  std::vector<u64> small(base.size());
  base.decompose({123456789}, small.data());
  EXPECT_EQ(base.compose(small.data())[0], 123456789u);
  EXPECT_EQ(base.compose_centered(small.data()), 123456789.0L);
}

TEST(RnsBase, ComposeCenteredGivesSignedValues) {
  const RnsBase base(ntt_primes(50, 3, 1024));
  for (long long v : {0LL, 1LL, -1LL, 42LL, -1000000007LL, (1LL << 62), -(1LL << 62)}) {
    std::vector<u64> r(base.size());
    for (std::size_t i = 0; i < base.size(); ++i) {
      const long long q = static_cast<long long>(base[i].value());
      r[i] = static_cast<u64>(((v % q) + q) % q);
    }
    EXPECT_EQ(base.compose_centered(r.data()), static_cast<long double>(v)) << v;
  }
}

TEST(RnsBase, RejectsBadModuli) {
  EXPECT_THROW(RnsBase(std::vector<u64>{}), std::invalid_argument);
  EXPECT_THROW(RnsBase(std::vector<u64>{97, 193, 97}), std::invalid_argument);
  EXPECT_THROW(RnsBase(std::vector<u64>{15, 21}), std::invalid_argument);
  const RnsBase base(std::vector<u64>{97, 193});
  const u64 bad[2] = {97, 0};
  EXPECT_THROW(base.compose(bad), std::invalid_argument);
}

TEST(BaseConverter, ApproximateIsOffByLessThanKTimesQ) {
  std::mt19937_64 rng(22);
  const std::vector<u64> all = ntt_primes(50, 9, 4096);
  const RnsBase from(std::vector<u64>(all.begin(), all.begin() + 5));
  const RnsBase to(std::vector<u64>(all.begin() + 5, all.end()));
  const BaseConverter conv(from, to);
  const std::size_t n = 256;
  const std::vector<u64> in = random_residues(from, n, rng);
  std::vector<u64> out(to.size() * n);
  conv.convert_approx(in.data(), out.data(), n);
  std::vector<int> seen(from.size(), 0);
  for (std::size_t c = 0; c < n; ++c) {
    const std::vector<u64> x = from.compose(in.data() + c, n);
    // One u in [0, k) must explain every output limb.
    int matching_u = -1;
    for (u64 u = 0; u < from.size() && matching_u < 0; ++u) {
      bool all_match = true;
      for (std::size_t j = 0; j < to.size(); ++j) {
        all_match = all_match && out[j * n + c] == shifted_mod(from, x, u, to[j]);
      }
      if (all_match) matching_u = static_cast<int>(u);
    }
    ASSERT_GE(matching_u, 0) << "coefficient " << c << " is not x + uQ with 0 <= u < k";
    ++seen[matching_u];
  }
  EXPECT_GT(seen[0] + seen[1] + seen[2] + seen[3] + seen[4], 0);
}

class ExactConversion : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Bits, ExactConversion, ::testing::Values(50, 60));

// 50-bit moduli take the IFMA kernel where the CPU has it, 60-bit the portable one.
TEST_P(ExactConversion, GivesCenteredRepresentative) {
  std::mt19937_64 rng(23);
  const std::vector<u64> all = ntt_primes(GetParam(), 7, 4096);
  const RnsBase from(std::vector<u64>(all.begin(), all.begin() + 4));
  const RnsBase to(std::vector<u64>(all.begin() + 4, all.end()));
  const BaseConverter conv(from, to);
  const std::size_t n = 512;
  std::vector<u64> in = random_residues(from, n, rng);
  // Also small signed values, where the approximate form would be off by Q multiples.
  for (std::size_t c = 0; c < 64; ++c) {
    const long long v = static_cast<long long>(c) - 32;
    for (std::size_t i = 0; i < from.size(); ++i) {
      const long long q = static_cast<long long>(from[i].value());
      in[i * n + c] = static_cast<u64>(((v % q) + q) % q);
    }
  }
  std::vector<u64> out(to.size() * n);
  conv.convert_exact(in.data(), out.data(), n);
  for (std::size_t c = 0; c < n; ++c) {
    const std::vector<u64> x = from.compose(in.data() + c, n);
    const long double centred = from.compose_centered(in.data() + c, n);
    // u = 0 when x <= Q/2, and x - Q = x + (p-1) Q mod p otherwise: check directly.
    const bool negative = centred < 0;
    for (std::size_t j = 0; j < to.size(); ++j) {
      const u64 p = to[j].value();
      const u64 x_mod = shifted_mod(from, x, 0, to[j]);
      u64 q_mod = 0;
      RnsBase(std::vector<Modulus>{to[j]}).decompose(from.product(), &q_mod);
      const u64 expected = negative ? sub_mod(x_mod, q_mod, p) : x_mod;
      ASSERT_EQ(out[j * n + c], expected) << "coefficient " << c << " limb " << j;
    }
  }
}

// Little-endian multi-word helpers for the boundary test.
std::vector<u64> shift_right(const std::vector<u64>& x, int bits) {
  std::vector<u64> out(x.size(), 0);
  const int words = bits / 64, rest = bits % 64;
  for (std::size_t i = 0; i + words < x.size(); ++i) {
    out[i] = x[i + words] >> rest;
    if (rest != 0 && i + words + 1 < x.size()) out[i] |= x[i + words + 1] << (64 - rest);
  }
  return out;
}

std::vector<u64> subtract(const std::vector<u64>& x, const std::vector<u64>& y) {
  std::vector<u64> out(x.size());
  u64 borrow = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const u128 d = static_cast<u128>(x[i]) - y[i] - borrow;
    out[i] = static_cast<u64>(d);
    borrow = static_cast<u64>(d >> 64) != 0 ? 1 : 0;
  }
  return out;
}

// Values just inside the documented exactness range, |x| = Q/2 - Q 2^-40 (the band is
// (k^2 + 3k) 2^-53 Q < Q 2^-45 for k = 4): the exact conversion must give x and -x.
TEST_P(ExactConversion, ExactJustInsideTheDocumentedBand) {
  const std::vector<u64> all = ntt_primes(GetParam(), 6, 4096);
  const RnsBase from(std::vector<u64>(all.begin(), all.begin() + 4));
  const RnsBase to(std::vector<u64>(all.begin() + 4, all.end()));
  const BaseConverter conv(from, to);
  const std::vector<u64>& q = from.product();
  const std::vector<u64> x = subtract(shift_right(q, 1), shift_right(q, 40));  // Q/2 - Q/2^40
  const std::vector<u64> neg_x = subtract(q, x);                               // Q - x = -x mod Q
  const std::size_t n = 2;
  std::vector<u64> in(from.size() * n), out(to.size() * n);
  from.decompose(x, in.data(), n);
  from.decompose(neg_x, in.data() + 1, n);
  conv.convert_exact(in.data(), out.data(), n);
  for (std::size_t j = 0; j < to.size(); ++j) {
    const u64 p = to[j].value();
    u64 x_mod = 0;
    RnsBase(std::vector<Modulus>{to[j]}).decompose(x, &x_mod);
    EXPECT_EQ(out[j * n], x_mod) << "+x, limb " << j;
    EXPECT_EQ(out[j * n + 1], negate_mod(x_mod, p)) << "-x, limb " << j;
  }
}

TEST(BaseConverter, IfmaAndPortableAgreeBitForBit) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(24);
  for (int bits : {30, 45, 50}) {
    const std::vector<u64> all = ntt_primes(bits, 24, 1024);
    // k = 20 exercises the 15-product chunks of the IFMA kernel; odd n the masked tails.
    for (std::size_t k : {1u, 5u, 20u}) {
      for (std::size_t l : {1u, 4u}) {
        const RnsBase from(std::vector<u64>(all.begin(), all.begin() + k));
        const RnsBase to(std::vector<u64>(all.begin() + k, all.begin() + k + l));
        const BaseConverter conv(from, to);
        for (std::size_t n : {1u, 13u, 256u, 1000u}) {
          const std::vector<u64> in = random_residues(from, n, rng);
          for (bool exact : {false, true}) {
            const auto [portable, ifma] = convert_on_both_paths(conv, in, n, exact);
            ASSERT_EQ(portable, ifma)
                << "bits=" << bits << " k=" << k << " l=" << l << " n=" << n << " exact=" << exact;
          }
        }
      }
    }
  }
}

// The AVX-512 kernel for moduli up to 2^61 (any base that is not entirely below 2^50) against
// the portable path: mixed sizes on both sides (IFMA-sized, just above 2^50 and 2^52, 60 and 61
// bits), extreme residues (0 and q - 1), the largest source base (k = 64) and masked tails.
TEST(BaseConverter, WideAndPortableAgreeBitForBit) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(61);
  std::vector<u64> pool;
  for (int bits : {61, 60, 53, 52, 51, 50, 45, 36}) {
    for (u64 q : ntt_primes(bits, 10, 1024)) pool.push_back(q);
  }
  std::shuffle(pool.begin(), pool.end(), rng);
  struct Shape {
    std::size_t k, l;
  };
  for (const Shape& shape : {Shape{1, 1}, Shape{2, 7}, Shape{9, 25}, Shape{8, 3}, Shape{64, 2}}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::shuffle(pool.begin(), pool.end(), rng);
      const RnsBase from(std::vector<u64>(pool.begin(), pool.begin() + shape.k));
      const RnsBase to(std::vector<u64>(pool.begin() + shape.k, pool.begin() + shape.k + shape.l));
      const BaseConverter conv(from, to);
      for (std::size_t n : {5u, 256u, 771u}) {
        std::vector<u64> in = random_residues(from, n, rng);
        for (std::size_t i = 0; i < shape.k; ++i) {
          in[i * n] = 0;
          in[i * n + 1] = from[i].value() - 1;
        }
        for (bool exact : {false, true}) {
          const std::size_t l = shape.l;
          std::vector<u64> gapped(2 * l * n);
          std::vector<u64*> rows(l);
          for (std::size_t j = 0; j < l; ++j) rows[j] = gapped.data() + (2 * j + 1) * n;
          const auto [portable, wide] = convert_on_both_paths(conv, in, n, exact);
          exact ? conv.convert_exact(in.data(), rows.data(), n)
                : conv.convert_approx(in.data(), rows.data(), n);
          ASSERT_EQ(portable, wide) << "k=" << shape.k << " l=" << l << " n=" << n
                                    << " exact=" << exact << " trial=" << trial;
          for (std::size_t j = 0; j < l; ++j) {
            ASSERT_TRUE(std::equal(rows[j], rows[j] + n, wide.data() + j * n))
                << "limb " << j << " written through out_limbs";
          }
        }
      }
    }
  }
}

// Sources all below 2^43 (the special primes of a ModDown) into wide targets: the kernel
// leaves out the top column there (rns_kernels.h WideConvertTables::narrow). The largest
// primes below 2^43 and every residue q - 1 put y_i and the factors at the top of their
// ranges; the portable path is the reference.
TEST(BaseConverter, NarrowSourcesIntoWideTargetsAgreeBitForBit) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(43);
  std::vector<u64> narrow, wide;
  for (int bits : {43, 40, 36}) {
    for (u64 q : ntt_primes(bits, 12, 1024)) narrow.push_back(q);
  }
  for (int bits : {61, 60, 53}) {
    for (u64 q : ntt_primes(bits, 6, 1024)) wide.push_back(q);
  }
  struct Shape {
    std::size_t k, l;
  };
  for (const Shape& shape : {Shape{3, 4}, Shape{1, 2}, Shape{12, 5}, Shape{7, 8}}) {
    for (int trial = 0; trial < 3; ++trial) {
      // Trial 0: the largest 43-bit primes; then shuffled sizes.
      if (trial > 0) std::shuffle(narrow.begin(), narrow.end(), rng);
      std::shuffle(wide.begin(), wide.end(), rng);
      const RnsBase from(std::vector<u64>(narrow.begin(), narrow.begin() + shape.k));
      const RnsBase to(std::vector<u64>(wide.begin(), wide.begin() + shape.l));
      const BaseConverter conv(from, to);
      const std::size_t n = 259;
      std::vector<u64> in = random_residues(from, n, rng);
      for (std::size_t i = 0; i < shape.k; ++i) {
        for (std::size_t c = 0; c < 64; ++c) in[i * n + c] = from[i].value() - 1;
        in[i * n + 64] = 0;
      }
      for (bool exact : {false, true}) {
        const auto [portable, vector] = convert_on_both_paths(conv, in, n, exact);
        ASSERT_EQ(portable, vector)
            << "k=" << shape.k << " l=" << shape.l << " exact=" << exact << " trial=" << trial;
      }
    }
  }
}

// Exact conversion near the centre boundary +-Q/2 (where v = round(sum y_i / q_i) flips) on
// 60-bit moduli: both paths give the same representative for x = (Q -+ d)/2.
TEST(BaseConverter, WideExactAgreesNearHalfQ) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  const std::vector<u64> all = ntt_primes(60, 12, 1024);
  const RnsBase from(std::vector<u64>(all.begin(), all.begin() + 8));
  const RnsBase to(std::vector<u64>(all.begin() + 8, all.end()));
  const BaseConverter conv(from, to);
  const std::vector<u64> half = shift_right(from.product(), 1);
  std::vector<u64> in;
  std::size_t n = 0;
  std::vector<std::vector<u64>> values;
  for (u64 d = 0; d < 40; ++d) {
    std::vector<u64> offset(half.size(), 0), above = half;
    offset[0] = d;
    for (std::size_t i = 0, carry = d; carry != 0 && i < above.size(); ++i) {
      above[i] += carry;
      carry = above[i] < carry ? 1 : 0;
    }
    const std::vector<u64> below = subtract(half, offset);
    values.push_back(below);
    values.push_back(above);
  }
  n = values.size();
  in.assign(from.size() * n, 0);
  for (std::size_t c = 0; c < n; ++c) from.decompose(values[c], in.data() + c, n);
  std::vector<u64> portable(to.size() * n), wide(to.size() * n);
  force_portable_path(true);
  conv.convert_exact(in.data(), portable.data(), n);
  force_portable_path(false);
  conv.convert_exact(in.data(), wide.data(), n);
  EXPECT_EQ(portable, wide);
}

}  // namespace
}  // namespace hec::math
