// Tests for math/poly.h and math/parallel.h: RNS polynomial arithmetic against per-limb
// reference arithmetic, NTT products against schoolbook products, lazy multiply-accumulate
// over more terms than one 128-bit run holds, limb dropping, validation messages, the thread
// cap and exception capture in parallel regions.
#include "math/poly.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "math/parallel.h"
#include "math/primes.h"
#include "math/sampling.h"

namespace hec::math {
namespace {

RnsPoly random_poly(const std::shared_ptr<const RnsContext>& ctx, std::size_t limbs,
                    std::mt19937_64& rng, PolyForm form = PolyForm::kCoefficient) {
  RnsPoly p(ctx, limbs, form);
  for (std::size_t i = 0; i < limbs; ++i) {
    for (std::size_t c = 0; c < p.ring_dim(); ++c) p.limb(i)[c] = rng() % p.modulus(i).value();
  }
  return p;
}

TEST(RnsPoly, LayoutIsAlignedAndLimbMajor) {
  const auto ctx = RnsContext::create(64, ntt_primes(50, 3, 64));
  RnsPoly p(ctx, 3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.data()) % 64, 0u);
  EXPECT_EQ(p.limb(2), p.data() + 128);
  EXPECT_EQ(p.form(), PolyForm::kCoefficient);
  for (std::size_t k = 0; k < 3 * 64; ++k) EXPECT_EQ(p.data()[k], 0u);
  EXPECT_THROW(RnsPoly(ctx, 4), std::invalid_argument);
  EXPECT_THROW(RnsPoly(ctx, 0), std::invalid_argument);
}

TEST(RnsPoly, AddSubNegateMatchReference) {
  std::mt19937_64 rng(31);
  const auto ctx = RnsContext::create(256, ntt_primes(60, 3, 256));
  const RnsPoly a = random_poly(ctx, 3, rng), b = random_poly(ctx, 3, rng);
  RnsPoly sum = a, diff = a, neg = a;
  add_inplace(sum, b);
  sub_inplace(diff, b);
  negate_inplace(neg);
  for (std::size_t i = 0; i < 3; ++i) {
    const u64 q = ctx->modulus(i).value();
    for (std::size_t c = 0; c < 256; ++c) {
      ASSERT_EQ(sum.limb(i)[c], (a.limb(i)[c] + b.limb(i)[c]) % q);
      ASSERT_EQ(diff.limb(i)[c], (a.limb(i)[c] + q - b.limb(i)[c]) % q);
      ASSERT_EQ(neg.limb(i)[c], (q - a.limb(i)[c]) % q);
    }
  }
}

TEST(RnsPoly, NttProductEqualsSchoolbookPerLimb) {
  std::mt19937_64 rng(32);
  const std::size_t n = 1024;
  const auto ctx = RnsContext::create(n, ntt_primes(55, 2, n));
  RnsPoly a = random_poly(ctx, 2, rng), b = random_poly(ctx, 2, rng);
  const RnsPoly a0 = a, b0 = b;
  to_ntt_inplace(a);
  to_ntt_inplace(b);
  EXPECT_EQ(a.form(), PolyForm::kEvaluation);
  multiply_inplace(a, b);
  from_ntt_inplace(a);
  for (std::size_t i = 0; i < 2; ++i) {
    const Modulus& m = ctx->modulus(i);
    for (std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{517}, n - 1}) {
      u64 expected = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t l = (k + n - j) % n;
        const u64 p = mul_mod(a0.limb(i)[j], b0.limb(i)[l], m);
        expected = j <= k ? add_mod(expected, p, m.value()) : sub_mod(expected, p, m.value());
      }
      ASSERT_EQ(a.limb(i)[k], expected) << "limb " << i << " k " << k;
    }
  }
}

TEST(RnsPoly, MultiplyAccumulateOverManyTermsEqualsRepeatedMultiplyAdd) {
  std::mt19937_64 rng(33);
  // 61-bit primes: one 128-bit run holds only 64 terms, so 150 terms fold twice.
  const auto ctx = RnsContext::create(512, ntt_primes(61, 2, 512));
  std::vector<RnsPoly> as, bs;
  for (int k = 0; k < 150; ++k) {
    as.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
    bs.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
  }
  std::vector<const RnsPoly*> pa, pb;
  RnsPoly expected(ctx, 2, PolyForm::kEvaluation);
  for (int k = 0; k < 150; ++k) {
    pa.push_back(&as[k]);
    pb.push_back(&bs[k]);
    multiply_add_inplace(expected, as[k], bs[k]);
  }
  RnsPoly out(ctx, 2, PolyForm::kEvaluation);
  multiply_accumulate(out, pa, pb);
  EXPECT_EQ(out, expected);
}

TEST(RnsPoly, ScalarMultiplyAndDropLimb) {
  std::mt19937_64 rng(34);
  const auto ctx = RnsContext::create(64, ntt_primes(40, 3, 64));
  RnsPoly a = random_poly(ctx, 3, rng);
  const RnsPoly a0 = a;
  const std::vector<u64> s = {3, 5, 7};
  multiply_scalar_inplace(a, s);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t c = 0; c < 64; ++c) {
      ASSERT_EQ(a.limb(i)[c], mul_mod(a0.limb(i)[c], s[i], ctx->modulus(i)));
    }
  }
  a.drop_last_limb();
  EXPECT_EQ(a.num_limbs(), 2u);
  a.drop_last_limb();
  EXPECT_THROW(a.drop_last_limb(), std::invalid_argument);
  EXPECT_THROW(multiply_scalar_inplace(a, s), std::invalid_argument);
}

TEST(RnsPoly, SetSignedWritesEveryLimb) {
  const auto ctx = RnsContext::create(16, std::vector<u64>{97, 193});
  RnsPoly p(ctx, 2, PolyForm::kEvaluation);
  std::vector<std::int64_t> v(16, 0);
  v[0] = -1;
  v[3] = 5;
  p.set_signed(v);
  EXPECT_EQ(p.form(), PolyForm::kCoefficient);
  EXPECT_EQ(p.limb(0)[0], 96u);
  EXPECT_EQ(p.limb(1)[0], 192u);
  EXPECT_EQ(p.limb(1)[3], 5u);
}

TEST(RnsPoly, ValidationNamesTheMismatch) {
  std::mt19937_64 rng(35);
  const auto ctx = RnsContext::create(64, ntt_primes(50, 3, 64));
  const auto other = RnsContext::create(64, ntt_primes(50, 3, 64));
  RnsPoly a = random_poly(ctx, 3, rng), b = random_poly(ctx, 2, rng);
  try {
    add_inplace(a, b);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3 and 2 limbs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(add_inplace(a, RnsPoly(other, 3)), std::invalid_argument);
  EXPECT_THROW(multiply_inplace(a, RnsPoly(ctx, 3)), std::invalid_argument);  // coefficient form
  EXPECT_THROW(from_ntt_inplace(a), std::invalid_argument);
  EXPECT_THROW(RnsContext(64, std::vector<u64>{97}), std::invalid_argument);  // 97 != 1 mod 128
}

TEST(Parallel, ThreadCapAndExceptionCapture) {
  const int before = thread_cap();
  EXPECT_GE(before, 1);
  set_thread_cap(2);
  EXPECT_EQ(thread_cap(), 2);
  EXPECT_THROW(set_thread_cap(0), std::invalid_argument);
  std::vector<int> hits(100, 0);
  parallel_for(100, [&](std::size_t i) { hits[i] += 1; });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_THROW(parallel_for(100,
                            [&](std::size_t i) {
                              if (i == 57) throw std::runtime_error("limb 57 failed");
                            }),
               std::runtime_error);
  set_thread_cap(before);
}

}  // namespace
}  // namespace hec::math
