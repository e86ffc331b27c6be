// Tests for math/modarith.h: known answers, and random cases against 128-bit reference
// arithmetic for moduli of 2 to 61 bits.
#include "math/modarith.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace hec::math {
namespace {

const std::vector<u64> kModuli = {2,
                                  3,
                                  17,
                                  65537,
                                  1ULL << 20,
                                  1152921504606830593ULL /* 2^60 - 2^14 + 1, prime */,
                                  (1ULL << 61) - 1 /* Mersenne prime */,
                                  1125899906826241ULL /* 50-bit prime */,
                                  576460752303423489ULL /* 2^59 + ... */};

TEST(Modulus, RejectsOutOfRange) {
  EXPECT_THROW(Modulus(0), std::invalid_argument);
  EXPECT_THROW(Modulus(1), std::invalid_argument);
  EXPECT_THROW(Modulus(1ULL << 61), std::invalid_argument);
  EXPECT_NO_THROW(Modulus((1ULL << 61) - 1));
}

TEST(ModArith, KnownAnswers) {
  const Modulus m(17);
  EXPECT_EQ(mul_mod(5, 7, m), 1u);
  EXPECT_EQ(add_mod(16, 16, 17), 15u);
  EXPECT_EQ(sub_mod(3, 5, 17), 15u);
  EXPECT_EQ(negate_mod(0, 17), 0u);
  EXPECT_EQ(pow_mod(3, 16, m), 1u);  // Fermat
  EXPECT_EQ(inverse_mod(5, 17), 7u);
  EXPECT_THROW(inverse_mod(6, 12), std::invalid_argument);
}

TEST(ModArith, RandomAgainstReference) {
  std::mt19937_64 rng(12345);  // test data only; not key material
  for (u64 q : kModuli) {
    const Modulus m(q);
    std::uniform_int_distribution<u64> uniform(0, q - 1);
    for (int i = 0; i < 20000; ++i) {
      const u64 a = uniform(rng), b = uniform(rng);
      const u64 expected = static_cast<u64>((static_cast<u128>(a) * b) % q);
      ASSERT_EQ(mul_mod(a, b, m), expected) << "q=" << q << " a=" << a << " b=" << b;
      const u64 b_shoup = shoup_precompute(b, q);
      ASSERT_EQ(mul_shoup(a, b, b_shoup, q), expected);
      const u64 lazy = mul_shoup_lazy(a, b, b_shoup, q);
      ASSERT_LT(lazy, 2 * q) << "lazy Shoup output range is [0, 2q)";
      ASSERT_EQ(lazy % q, expected);
      ASSERT_EQ(add_mod(a, b, q), static_cast<u64>((static_cast<u128>(a) + b) % q));
      ASSERT_EQ(add_mod(sub_mod(a, b, q), b, q), a);
      const u128 wide = (static_cast<u128>(rng()) << 64) | rng();
      ASSERT_EQ(barrett_reduce_128(wide, m), static_cast<u64>(wide % q));
    }
  }
}

TEST(ModArith, ShoupLazyAcceptsAnyWord) {
  // The lazy Shoup product takes any 64-bit a (callers feed values up to 4q unreduced).
  const u64 q = 1125899906826241ULL;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const u64 a = rng(), w = rng() % q;
    const u64 r = mul_shoup_lazy(a, w, shoup_precompute(w, q), q);
    ASSERT_LT(r, 2 * q);
    ASSERT_EQ(r % q, static_cast<u64>((static_cast<u128>(a) * w) % q));
  }
}

TEST(ModArith, InverseRoundTrip) {
  std::mt19937_64 rng(99);
  const Modulus m(1152921504606830593ULL);
  for (int i = 0; i < 1000; ++i) {
    const u64 a = 1 + rng() % (m.value() - 1);
    ASSERT_EQ(mul_mod(a, inverse_mod(a, m.value()), m), 1u);
  }
}

}  // namespace
}  // namespace hec::math
