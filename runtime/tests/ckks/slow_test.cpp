// Slow tier (ctest label "slow"): the CKKS pipeline at production sizes with 128-bit secure
// parameters -- N = 2^16 with 25 limbs (depth 24, first prime 60 bits, scaling primes around
// 2^50, dnum 3, eight 60-bit special primes: log2 QP = 1740 <= 1747), and N = 2^15 for the
// GWAS-shaped dot product. Checks the same properties as the fast tier.
#include <gtest/gtest.h>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/evaluator.h"
#include "ckks/kernels.h"
#include "ckks/keys.h"
#include "test_util.h"

namespace hec::ckks {
namespace {

using testing::max_error;
using testing::random_slots;
using Vec = std::vector<std::complex<double>>;

TEST(CkksSlow, ProductionChainN65536Depth24) {
  const auto ctx =
      make_context(Parameters::from_bit_sizes(LogN(16), {60}, 50, 24, std::vector<int>(8, 60), 3));
  ASSERT_FALSE(ctx->params().insecure());
  Encoder enc(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  Encryptor encryptor(ctx, gen.public_key(sk));
  Decryptor decryptor(ctx, sk);
  Evaluator eval(ctx);
  const RelinKey rk = gen.relin_key(sk);
  const GaloisKeys gk = gen.galois_keys(sk, {1, -7}, true);
  const Vec x = random_slots(ctx->slots(), 1.0, 1), y = random_slots(ctx->slots(), 1.0, 2);
  const Level top(24);
  const double scale = static_cast<double>(ctx->params().moduli().back());
  double bound = 0;
  const Ciphertext cx = encryptor.encrypt(enc.encode(x, top, scale, &bound));
  const Ciphertext cy = encryptor.encrypt(enc.encode(y, top, scale));
  const DecodeResult fresh = enc.decode(decryptor.decrypt(cx));
  EXPECT_LE(max_error(fresh.values, x),
            bound + fresh.error_bound + fresh_public_key_noise_bound(ctx->params(), scale));

  // A chain of squarings down several levels, rescaling each time.
  Ciphertext c = cx;
  Vec want = x;
  for (int round = 0; round < 4; ++round) {
    c = eval.multiply_relin(c, c, rk);
    eval.rescale_inplace(c);
    for (auto& v : want) v *= v;
  }
  EXPECT_EQ(c.level.value, 20);
  double largest = 0;
  for (const auto& v : want) largest = std::max(largest, std::abs(v));
  // Each squaring doubles the relative error; four of them stay below 1e-8 relative.
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(c)).values, want), 1e-8 * largest);

  Ciphertext r = cy;
  eval.rotate_inplace(r, -7, gk);
  Vec rot(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) rot[i] = y[(i + y.size() - 7) % y.size()];
  // Key switching adds less noise than a fresh encryption holds (exact ModDown).
  const double ks_bound = 2 * fresh_public_key_noise_bound(ctx->params(), scale);
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(r)).values, rot), ks_bound);
  Ciphertext cj = cy;
  eval.conjugate_inplace(cj, gk);
  for (std::size_t i = 0; i < y.size(); ++i) rot[i] = std::conj(y[i]);
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(cj)).values, rot), ks_bound);
}

TEST(CkksSlow, GwasShapedDotN32768) {
  // 200 individuals: genotype x phenotype products summed with the fused kernel, equal bit
  // for bit to separate products, then relinearized and rescaled.
  const auto ctx =
      make_context(Parameters::from_bit_sizes(LogN(15), {60}, 45, 8, std::vector<int>(3, 60), 3));
  Encoder enc(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  SymmetricEncryptor encryptor(ctx, sk);
  Decryptor decryptor(ctx, sk);
  Evaluator eval(ctx);
  const RelinKey rk = gen.relin_key(sk);
  const double scale = static_cast<double>(ctx->params().moduli().back());
  const std::size_t count = 200;
  std::vector<Ciphertext> g, y;
  Vec want(ctx->slots(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    const Vec gv = random_slots(ctx->slots(), 2.0, 100 + i),
              yv = random_slots(ctx->slots(), 1.0, 900 + i);
    for (std::size_t j = 0; j < want.size(); ++j) want[j] += gv[j] * yv[j];
    g.push_back(encryptor.encrypt(enc.encode(gv, Level(8), scale)));
    y.push_back(encryptor.encrypt(enc.encode(yv, Level(8), scale)));
  }
  Ciphertext fused = dot(ctx, g, y);
  Ciphertext reference = eval.multiply(g[0], y[0]);
  for (std::size_t i = 1; i < count; ++i) eval.add_inplace(reference, eval.multiply(g[i], y[i]));
  EXPECT_EQ(fused.data, reference.data);
  eval.relinearize_inplace(fused, rk);
  eval.rescale_inplace(fused);
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(fused)).values, want), 1e-5);
}

}  // namespace
}  // namespace hec::ckks
