// Tests for ckks/encoder.h: the special FFT against a direct evaluation of the canonical
// embedding, encode/decode round trips within the reported bound at every level and at
// non-power-of-two scales, large coefficients beyond 2^64, and input validation.
#include "ckks/encoder.h"

#include <gtest/gtest.h>

#include <numbers>

#include "test_util.h"

namespace hec::ckks {
namespace {

using testing::max_error;
using testing::random_slots;
using testing::small_params;

TEST(CkksEncoder, SpecialFftMatchesDirectEmbedding) {
  // N = 2^10 (insecure is irrelevant here): slot j must equal m(zeta^{5^j}).
  const auto ctx =
      make_context(Parameters::from_bit_sizes(LogN(10), {50}, 40, 1, {50}, 2, Security::kInsecure));
  Encoder enc(ctx);
  const std::size_t n = ctx->n();
  const auto z = random_slots(n / 2, 1.0, 1);
  std::vector<long double> m;
  enc.slots_to_coefficients(z, m);
  ASSERT_EQ(m.size(), n);
  std::uint64_t g = 1;
  double worst = 0;
  for (std::size_t j = 0; j < n / 2; ++j) {
    std::complex<long double> acc = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const long double angle =
          std::numbers::pi_v<long double> * static_cast<long double>((g * k) % (2 * n)) / n;
      acc += m[k] * std::complex<long double>(std::cos(angle), std::sin(angle));
    }
    worst = std::max(
        worst,
        static_cast<double>(std::abs(acc - std::complex<long double>(z[j].real(), z[j].imag()))));
    g = g * 5 % (2 * n);
  }
  EXPECT_LT(worst, 1e-12);
  std::vector<std::complex<double>> back;
  enc.coefficients_to_slots(m, back);
  EXPECT_LT(max_error(back, z), 1e-12);
}

TEST(CkksEncoder, RoundTripAtEveryLevelWithinBound) {
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  const auto z = random_slots(ctx->slots(), 10.0, 2);
  for (int l = 0; l <= ctx->params().max_level(); ++l) {
    for (double scale : {std::pow(2.0, 30), 1234567.891 * 1024, std::pow(2.0, 40) * 1.37}) {
      double bound = 0;
      const Plaintext pt = enc.encode(z, Level(l), scale, &bound);
      const DecodeResult r = enc.decode(pt);
      const double err = max_error(r.values, z);
      EXPECT_LE(err, bound + r.error_bound) << "level " << l << " scale " << scale;
      EXPECT_GT(bound, 0);
      EXPECT_LT(bound,
                ctx->n() / scale);  // the rigorous bound is below the worst case N/(2 Delta) * 2
    }
  }
}

TEST(CkksEncoder, DoubleAndLongDoublePathsAgree) {
  // Tolerance 0 forces the long double FFT, a huge one the double FFT: both decode within
  // their reported bounds, the double one's bound is the larger, and at scale 2^54 with
  // values in {0, 1, 2} (the GWAS genotypes) the double path is within the fresh-noise
  // tolerance the encrypting roles use.
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  std::vector<double> z(ctx->slots());
  for (std::size_t j = 0; j < z.size(); ++j) z[j] = static_cast<double>((j * 7 + j / 3) % 3);
  const double scale = std::pow(2.0, 54);
  double b_long = 0, b_double = 0;
  const Plaintext p_long = enc.encode(z, Level(3), scale, &b_long, 0.0);
  const Plaintext p_double = enc.encode(z, Level(3), scale, &b_double, 1e300);
  std::vector<std::complex<double>> zc(z.begin(), z.end());
  const DecodeResult r_long = enc.decode(p_long), r_double = enc.decode(p_double);
  EXPECT_LE(max_error(r_long.values, zc), b_long + r_long.error_bound);
  EXPECT_LE(max_error(r_double.values, zc), b_double + r_double.error_bound);
  EXPECT_GT(b_double, b_long);
  // The two plaintexts differ by the double path's floating-point error only: a few units
  // per coefficient at most, far below the bound.
  EXPECT_LT(max_error(r_long.values, r_double.values), b_double + b_long);
  double chosen = 0;
  enc.encode(z, Level(3), scale, &chosen, enc.fresh_noise_tolerance());
  EXPECT_EQ(chosen, b_double);  // the double path was taken (same rounding, same bound)
  EXPECT_NEAR(enc.fresh_noise_tolerance(),
              3.19 * std::sqrt(1 + 4.0 * static_cast<double>(ctx->n()) / 3), 1e-9);
}

TEST(CkksEncoder, CoefficientsBeyond64Bits) {
  // scale 2^55 times values 2^20: coefficients near 2^75, kept exact to 2^-64 relative.
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  auto z = random_slots(ctx->slots(), std::pow(2.0, 20), 3);
  double bound = 0;
  const Plaintext pt = enc.encode(z, Level(3), std::pow(2.0, 55), &bound);
  const DecodeResult r = enc.decode(pt);
  EXPECT_LE(max_error(r.values, z), bound + r.error_bound);
  EXPECT_LT(max_error(r.values, z), 1e-6);
}

TEST(CkksEncoder, RealVectorAndShortInput) {
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  const std::vector<double> x = {1.5, -2.25, 3.0};
  const DecodeResult r = enc.decode(enc.encode(x, Level(1), std::pow(2.0, 35)));
  for (std::size_t i = 0; i < ctx->slots(); ++i) {
    const double want = i < x.size() ? x[i] : 0.0;
    EXPECT_NEAR(r.values[i].real(), want, 1e-8);
    EXPECT_NEAR(r.values[i].imag(), 0.0, 1e-8);
  }
}

TEST(CkksEncoder, ConstantEncoding) {
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  const DecodeResult r = enc.decode(enc.encode_constant(-3.75, Level(2), std::pow(2.0, 38)));
  for (const auto& v : r.values) {
    EXPECT_NEAR(v.real(), -3.75, 1e-9);
    EXPECT_NEAR(v.imag(), 0.0, 1e-9);
  }
}

TEST(CkksEncoder, RejectsBadInput) {
  const auto ctx = make_context(small_params());
  Encoder enc(ctx);
  const std::vector<double> too_many(ctx->slots() + 1, 1.0);
  EXPECT_THROW(enc.encode(too_many, Level(0), 1e9), std::invalid_argument);
  const std::vector<double> one = {1.0};
  EXPECT_THROW(enc.encode(one, Level(0), -1.0), std::invalid_argument);
  EXPECT_THROW(enc.encode(one, Level(0), std::nan("")), std::invalid_argument);
  EXPECT_THROW(enc.encode(one, Level(4), 1e9), std::invalid_argument);
  // Q_0 is 55 bits: 2^50 * 2^10 would wrap.
  const std::vector<double> big = {1024.0};
  EXPECT_THROW(enc.encode(big, Level(0), std::pow(2.0, 50)), std::invalid_argument);
}

}  // namespace
}  // namespace hec::ckks
