// Tests for math/sampling.h: seeded streams are reproducible and equal libsodium's ChaCha20
// keystream, OS-seeded streams differ, and sampler statistics fall within stated tolerances
// (each tolerance is at least 5 standard errors of the estimate, so a correct sampler fails
// with probability below 10^-6 per check).
#include "math/sampling.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "math/primes.h"

namespace hec::math {
namespace {

Seed seed_of(unsigned char b) {
  Seed s;
  s.fill(b);
  return s;
}

TEST(Prng, SeededStreamIsReproducibleAndIsChaCha20) {
  Prng a(seed_of(7)), b(seed_of(7)), c(seed_of(8)), d(seed_of(7), 1);
  std::vector<unsigned char> x(10000), y(10000), z(10000), w(10000);
  a.fill(x.data(), x.size());
  b.fill(y.data(), 5000);
  b.fill(y.data() + 5000, 5000);  // split reads give the same stream
  c.fill(z.data(), z.size());
  d.fill(w.data(), w.size());
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
  EXPECT_NE(x, w);
  // Same bytes as libsodium's ChaCha20-IETF keystream with nonce 0.
  std::vector<unsigned char> reference(10000);
  const Seed key = seed_of(7);
  unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
  crypto_stream_chacha20_ietf(reference.data(), reference.size(), nonce, key.data());
  EXPECT_EQ(x, reference);
}

TEST(Prng, OsSeededStreamsDiffer) {
  Prng a, b;
  EXPECT_NE(a.next_u64(), b.next_u64());
  EXPECT_NE(Prng::random_seed(), Prng::random_seed());
}

TEST(Sampling, UniformModIsBelowModulusWithUniformMean) {
  Prng prng(seed_of(1));
  const RnsBase base(ntt_primes(50, 2, 1024));
  const std::size_t n = 1 << 16;
  std::vector<u64> out(base.size() * n);
  sample_uniform_mod(prng, base, n, out.data());
  for (std::size_t i = 0; i < base.size(); ++i) {
    const double q = static_cast<double>(base[i].value());
    double mean = 0;
    for (std::size_t c = 0; c < n; ++c) {
      ASSERT_LT(out[i * n + c], base[i].value());
      mean += static_cast<double>(out[i * n + c]) / q;
    }
    mean /= n;
    // Standard error of the mean of U(0,1) is 1/sqrt(12 n) = 0.0011; tolerance 0.006.
    EXPECT_NEAR(mean, 0.5, 0.006) << "limb " << i;
  }
}

TEST(Sampling, TernaryFrequenciesAreOneThird) {
  Prng prng(seed_of(2));
  const std::size_t n = 300000;
  const std::vector<std::int64_t> t = sample_ternary(prng, n);
  std::map<std::int64_t, std::size_t> count;
  for (std::int64_t v : t) ++count[v];
  ASSERT_EQ(count.size(), 3u);
  for (std::int64_t v : {-1, 0, 1}) {
    // Standard error sqrt(2/9 / n) = 0.00086; tolerance 0.005.
    EXPECT_NEAR(static_cast<double>(count[v]) / n, 1.0 / 3, 0.005) << v;
  }
}

TEST(Sampling, TernaryHammingWeightIsExact) {
  Prng prng(seed_of(3));
  const std::vector<std::int64_t> t = sample_ternary_hamming(prng, 4096, 192);
  std::size_t nonzero = 0, plus = 0;
  for (std::int64_t v : t) {
    ASSERT_TRUE(v == -1 || v == 0 || v == 1);
    nonzero += v != 0;
    plus += v == 1;
  }
  EXPECT_EQ(nonzero, 192u);
  EXPECT_GT(plus, 50u);  // Binomial(192, 1/2): mean 96, sd 6.9
  EXPECT_LT(plus, 142u);
  EXPECT_THROW(sample_ternary_hamming(prng, 10, 11), std::invalid_argument);
}

TEST(Sampling, GaussianMeanVarianceAndTailCut) {
  Prng prng(seed_of(4));
  const std::size_t n = 400000;
  const std::vector<std::int64_t> g = sample_gaussian(prng, n);
  double sum = 0, sum_sq = 0;
  std::int64_t max_abs = 0;
  for (std::int64_t v : g) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
    max_abs = std::max<std::int64_t>(max_abs, std::llabs(v));
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  const double sigma = kDefaultGaussianSigma;
  // Standard errors: mean sigma/sqrt(n) = 0.005; variance sigma^2 sqrt(2/n) = 0.023 (0.22%).
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(variance, sigma * sigma, 0.015 * sigma * sigma);
  EXPECT_LE(max_abs, 19);  // tail cut floor(6 * 3.19) = 19
  EXPECT_GE(max_abs, 10);  // P(|x| >= 10) ~ 0.0017 per sample: certain to appear in 400000
  // Frequency of 0: rho(0) / sum rho = 1 / (sqrt(2 pi) sigma) to ~1e-12 at this sigma.
  const double zeros = static_cast<double>(std::count(g.begin(), g.end(), 0)) / n;
  EXPECT_NEAR(zeros, 1.0 / (std::sqrt(2 * M_PI) * sigma), 0.0025);
  EXPECT_THROW(sample_gaussian(prng, 1, 0.1), std::invalid_argument);
}

TEST(Sampling, SignedToRns) {
  const RnsBase base(std::vector<u64>{97, 193});
  const std::int64_t values[4] = {0, 1, -1, -200};
  u64 out[8];
  signed_to_rns(values, 4, base, out);
  const u64 expected[8] = {0, 1, 96, 97 - 200 % 97, 0, 1, 192, 193 - 7};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], expected[i]) << i;
}

}  // namespace
}  // namespace hec::math
