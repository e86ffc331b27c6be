// Tests for ckks/flooding.h: the Li-Micciancio key-recovery attack on a shared CKKS result
// (decrypted values and the ciphertext they came from) succeeds without flooding and fails with
// it, at small insecure parameters (N = 2^10, one 60-bit prime, scale 2^20); the flooding noise
// has the stated standard deviation; bad sigmas are refused.
#include "ckks/flooding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/keys.h"
#include "test_util.h"

namespace hec::ckks {
namespace {

using testing::random_slots;
using Vec = std::vector<std::complex<double>>;

u64 mul_mod(u64 a, u64 b, u64 q) {
  return static_cast<u64>(static_cast<unsigned __int128>(a) * b % q);
}

u64 inverse_mod(u64 a, u64 q) {  // q prime: a^(q-2)
  u64 result = 1, base = a % q;
  for (u64 e = q - 2; e != 0; e >>= 1) {
    if (e & 1) result = mul_mod(result, base, q);
    base = mul_mod(base, base, q);
  }
  return result;
}

// The attack (Li and Micciancio 2021, section 4): re-encode the shared decrypted values at the
// ciphertext's scale, which gives back c0 + c1 s (= Delta m + e) exactly when nothing was added
// after decryption, then solve the linear system c1 s = p - c0 for s. In the NTT domain, where
// the runtime keeps ciphertexts and keys, the system is diagonal: s_j = (p_j - c0_j) / c1_j mod q.
// Returns how many of the N NTT coefficients of the recovered key equal the secret key's.
std::size_t recovered_coefficients(const ContextPtr& ctx, const Ciphertext& ct, const Vec& shared,
                                   const SecretKey& sk) {
  Encoder enc(ctx);
  const Plaintext p = enc.encode(shared, Level(0), ct.scale);
  const u64 q = ctx->params().output_moduli()[0];
  std::size_t equal = 0;
  for (std::size_t j = 0; j < ctx->n(); ++j) {
    const u64 c0 = ct.limb(0, 0)[j], c1 = ct.limb(1, 0)[j];
    if (c1 == 0) continue;  // probability N/q
    const u64 s = mul_mod((p.limb(0)[j] + q - c0) % q, inverse_mod(c1, q), q);
    equal += static_cast<std::size_t>(s == sk.data[j]);
  }
  return equal;
}

struct SharedResult {
  ContextPtr ctx;
  SecretKey sk;
  Ciphertext ct;
  Vec decoded;  // what the decryptor would reveal without flooding
};

SharedResult shared_result() {
  SharedResult r;
  r.ctx =
      make_context(Parameters::from_bit_sizes(LogN(10), {60}, 20, 0, {}, 1, Security::kInsecure));
  KeyGenerator gen(r.ctx);
  r.sk = gen.secret_key();
  Encoder enc(r.ctx);
  Encryptor encryptor(r.ctx, gen.public_key(r.sk));
  r.ct = encryptor.encrypt(enc.encode(random_slots(r.ctx->slots(), 1.0, 7), Level(0), 1 << 20));
  r.decoded = enc.decode(Decryptor(r.ctx, r.sk).decrypt(r.ct)).values;
  return r;
}

TEST(CkksFlooding, KeyRecoveryFromSharedResultSucceedsWithoutFlooding) {
  const SharedResult r = shared_result();
  EXPECT_EQ(recovered_coefficients(r.ctx, r.ct, r.decoded, r.sk), r.ctx->n());
}

TEST(CkksFlooding, KeyRecoveryFailsWithFlooding) {
  const SharedResult r = shared_result();
  // The compiler's size for these values (compiler/analysis/flooding.py): the slot error of a
  // fresh public-key encryption, sigma_e = sqrt(N * 3.19^2 * (1 + 4N/3)) / Delta (2^-6.3 here),
  // times 2^(s/2) sqrt(B/2) with s = 40 statistical bits and a budget of B = 2^24 values.
  const double n = static_cast<double>(r.ctx->n());
  const double error_sigma = std::sqrt(n * 3.19 * 3.19 * (1 + 4 * n / 3)) / (1 << 20);
  const double sigma = error_sigma * std::pow(2.0, 20) * std::sqrt(std::pow(2.0, 23));
  Vec flooded = r.decoded;
  math::Prng prng;
  flood_slots(flooded, sigma, prng);
  EXPECT_LT(recovered_coefficients(r.ctx, r.ct, flooded, r.sk), 3u);
  // Even a flood 2^-30 times that size leaves the re-encoding off by more than the rounding
  // the attack needs exact, so no coefficient of the key comes out.
  Vec lightly = r.decoded;
  flood_slots(lightly, sigma * std::pow(2.0, -30), prng);
  EXPECT_LT(recovered_coefficients(r.ctx, r.ct, lightly, r.sk), 3u);
}

TEST(CkksFlooding, NoiseHasTheStatedStandardDeviation) {
  // 2^15 complex slots: the sample standard deviation of each part is within 2% of sigma
  // (its relative standard error is 1/sqrt(2 * 2^15) = 0.4%), and the mean within 5 sigma /
  // sqrt(2^15) of 0.
  constexpr std::size_t kCount = 1 << 15;
  constexpr double kSigma = 1234.5;
  Vec slots(kCount, {10.0, -3.0});
  math::Prng prng;
  flood_slots(slots, kSigma, prng);
  double sum_re = 0, sum_im = 0, sq_re = 0, sq_im = 0;
  for (const auto& z : slots) {
    sum_re += z.real() - 10.0;
    sum_im += z.imag() + 3.0;
    sq_re += (z.real() - 10.0) * (z.real() - 10.0);
    sq_im += (z.imag() + 3.0) * (z.imag() + 3.0);
  }
  const double count = static_cast<double>(kCount);
  EXPECT_LT(std::abs(sum_re / count), 5 * kSigma / std::sqrt(count));
  EXPECT_LT(std::abs(sum_im / count), 5 * kSigma / std::sqrt(count));
  EXPECT_NEAR(std::sqrt(sq_re / count), kSigma, 0.02 * kSigma);
  EXPECT_NEAR(std::sqrt(sq_im / count), kSigma, 0.02 * kSigma);
}

TEST(CkksFlooding, ZeroSigmaChangesNothingAndBadSigmasAreRefused) {
  Vec slots(8, {1.5, 2.5});
  math::Prng prng;
  flood_slots(slots, 0.0, prng);
  for (const auto& z : slots) EXPECT_EQ(z, std::complex<double>(1.5, 2.5));
  EXPECT_THROW(flood_slots(slots, -1.0, prng), std::invalid_argument);
  EXPECT_THROW(flood_slots(slots, std::nan(""), prng), std::invalid_argument);
  EXPECT_THROW(flood_slots(slots, INFINITY, prng), std::invalid_argument);
}

}  // namespace
}  // namespace hec::ckks
