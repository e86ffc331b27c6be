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

// Pearson chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::vector<double>& observed, const std::vector<double>& expected_p,
                  double total) {
  double stat = 0;
  for (std::size_t b = 0; b < observed.size(); ++b) {
    const double e = expected_p[b] * total;
    stat += (observed[b] - e) * (observed[b] - e) / e;
  }
  return stat;
}

// Acceptance bound for d degrees of freedom: mean + 6 standard deviations (d + 6 sqrt(2d));
// a correct sampler exceeds it with probability below 10^-5.
double chi_square_bound(std::size_t dof) {
  return static_cast<double>(dof) + 6 * std::sqrt(2.0 * static_cast<double>(dof));
}

TEST(SamplingSlow, GaussianGoodnessOfFit) {
  Prng prng(seed_of(5));
  const std::size_t n = 10000000;
  const std::vector<std::int64_t> g = sample_gaussian(prng, n);
  // Bins: x = -9 .. 9 one each, then x <= -10 and x >= 10; expected from the tail-cut
  // distribution rho(x) / sum_{|y| <= 19} rho(y).
  const double sigma = kDefaultGaussianSigma;
  auto rho = [&](int x) { return std::exp(-static_cast<double>(x) * x / (2 * sigma * sigma)); };
  double total_mass = 0;
  for (int x = -19; x <= 19; ++x) total_mass += rho(x);
  std::vector<double> expected(21, 0), observed(21, 0);
  auto bin = [](std::int64_t x) {
    return x <= -10 ? 0 : (x >= 10 ? 20 : static_cast<int>(x) + 10);
  };
  for (int x = -19; x <= 19; ++x) expected[bin(x)] += rho(x) / total_mass;
  for (std::int64_t v : g) observed[bin(v)] += 1;
  EXPECT_LT(chi_square(observed, expected, static_cast<double>(n)), chi_square_bound(20));
}

TEST(SamplingSlow, TernaryAndUniformGoodnessOfFit) {
  Prng prng(seed_of(6));
  const std::size_t n = 3000000;
  const std::vector<std::int64_t> t = sample_ternary(prng, n);
  std::vector<double> observed(3, 0);
  for (std::int64_t v : t) observed[v + 1] += 1;
  EXPECT_LT(chi_square(observed, {1.0 / 3, 1.0 / 3, 1.0 / 3}, static_cast<double>(n)),
            chi_square_bound(2));
  // Uniform mod q in 64 equal-probability buckets (q = 1 mod 64 is not needed: bucket
  // b holds [b q / 64, (b+1) q / 64), probabilities from the exact bucket sizes).
  const RnsBase base(ntt_primes(45, 1, 1024));
  const u64 q = base[0].value();
  std::vector<u64> u(n);
  sample_uniform_mod(prng, base, n, u.data());
  std::vector<double> buckets(64, 0), probs(64, 0);
  auto lower = [&](u64 b) { return static_cast<u64>(static_cast<u128>(b) * q / 64); };
  for (u64 b = 0; b < 64; ++b) {
    probs[b] = static_cast<double>(lower(b + 1) - lower(b)) / static_cast<double>(q);
  }
  for (u64 v : u) {
    u64 b = static_cast<u64>(static_cast<u128>(v) * 64 / q);
    while (v < lower(b)) --b;
    while (v >= lower(b + 1)) ++b;
    buckets[b] += 1;
  }
  EXPECT_LT(chi_square(buckets, probs, static_cast<double>(n)), chi_square_bound(63));
}

}  // namespace
}  // namespace hec::math
