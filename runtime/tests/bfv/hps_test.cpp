// The HPS kernels against references: the blocked base converter against math::BaseConverter
// (exact and approximate, same outputs), and decryption scaling against the CRT composition
// for values small enough to compose exactly; plus the evaluator's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "bfv/encoder.h"
#include "bfv/hps.h"
#include "bfv/keyswitch.h"
#include "bfv/scheme.h"
#include "math/cpu_features.h"
#include "math/poly.h"
#include "math/primes.h"
#include "math/sampling.h"

namespace hec::bfv {
namespace {

math::Seed seed(int v) {
  math::Seed s{};
  s[0] = static_cast<unsigned char>(v);
  s[3] = 0x49;
  return s;
}

TEST(BfvHps, BlockedConverterMatchesTheMathConverter) {
  const std::size_t n = 1000;  // not a multiple of the block size
  for (auto [from_bits, from_count, to_bits, to_count] :
       std::vector<std::array<int, 4>>{{60, 3, 50, 5}, {50, 6, 60, 4}, {36, 1, 40, 2}}) {
    const auto q = math::ntt_primes(from_bits, static_cast<std::size_t>(from_count), 1024);
    const auto p = math::ntt_primes(to_bits, static_cast<std::size_t>(to_count), 1024, q);
    const math::RnsBase from(q), to(p);
    const math::BaseConverter reference(from, to);
    const BlockedBaseConverter blocked(from, to);
    math::Prng prng(seed(from_count));
    std::vector<u64> in(q.size() * n);
    math::sample_uniform_mod(prng, from, n, in.data());
    std::vector<u64> want(p.size() * n), got(p.size() * n);
    // The reference on the portable path; the blocked converter on both paths (its own
    // scalar loop, and math::BaseConverter's vector kernels when the CPU has AVX-512 IFMA).
    for (const bool portable : {true, false}) {
      math::force_portable_path(true);
      reference.convert_exact(in.data(), want.data(), n);
      math::force_portable_path(portable);
      blocked.convert(in.data(), got.data(), n);
      EXPECT_EQ(got, want) << "exact, " << from_count << " x " << from_bits << " bits, portable "
                           << portable;
      math::force_portable_path(true);
      reference.convert_approx(in.data(), want.data(), n);
      math::force_portable_path(portable);
      blocked.convert_approx(in.data(), got.data(), n);
      EXPECT_EQ(got, want) << "approx, " << from_count << " x " << from_bits << " bits, portable "
                           << portable;
    }
    math::force_portable_path(false);
  }
}

// The multiply's vector kernels (tensor product, HPS scaling, conversions) and the fused
// relinearization give the portable path's ciphertexts bit for bit, at 60-bit Q primes (the
// 52-bit column kernels) and at 40-bit ones (IFMA throughout); so does a rotation. And the
// fused multiply + relinearize equals multiply followed by relinearize_inplace bit for bit.
TEST(BfvHps, MultiplyAndRotationAreBitIdenticalOnBothKernelPaths) {
  if (!math::cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  for (const int q_bits : {60, 40}) {
    const auto ctx = BfvContext::create(BfvParams::generate(11, 65537, 4, q_bits, 2, true, true));
    KeyGenerator keygen(ctx, seed(20 + q_bits));
    Encoder encoder(ctx);
    Encryptor enc(ctx, keygen.secret_key());
    Evaluator ev(ctx);
    Decryptor dec(ctx, keygen.secret_key());
    const RelinKey rk = keygen.make_relin_key();
    const std::vector<long long> steps = {1};
    const GaloisKeys gk = keygen.make_galois_keys(steps, false);
    math::Prng prng(seed(30 + q_bits));
    std::vector<u64> x(ctx->ring_dim()), y(ctx->ring_dim());
    for (auto& v : x) v = prng.uniform_below(65537);
    for (auto& v : y) v = prng.uniform_below(65537);
    const Ciphertext a = enc.encrypt(encoder.encode_batch(x));
    const Ciphertext b = enc.encrypt(encoder.encode_batch(y));
    std::vector<Ciphertext> results[2];
    for (const bool portable : {true, false}) {
      math::force_portable_path(portable);
      auto& out = results[portable ? 0 : 1];
      out.push_back(ev.multiply(a, b));
      out.push_back(ev.multiply_relin(a, b, rk));
      out.push_back(ev.multiply_relin(a, a, rk));  // the squaring path
      Ciphertext relin = out[0];
      ev.relinearize_inplace(relin, rk);
      out.push_back(relin);
      Ciphertext rotated = a;
      ev.rotate_rows_inplace(rotated, 1, gk);
      out.push_back(rotated);
    }
    math::force_portable_path(false);
    ASSERT_EQ(results[0].size(), results[1].size());
    for (std::size_t r = 0; r < results[0].size(); ++r) {
      const Ciphertext &want = results[0][r], &got = results[1][r];
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t p = 0; p < want.size(); ++p) {
        const std::size_t words = want.polys[p].num_limbs() * want.polys[p].ring_dim();
        EXPECT_TRUE(
            std::equal(got.polys[p].data(), got.polys[p].data() + words, want.polys[p].data()))
            << "result " << r << ", polynomial " << p << ", " << q_bits << "-bit primes";
      }
    }
    // multiply_relin folds the NTT of c_0, c_1 into the ModDown (core Output::coef_add);
    // multiply then relinearize_inplace transforms first and accumulates: same residues.
    for (const auto& path : results) {
      for (std::size_t p = 0; p < 2; ++p) {
        const std::size_t words = path[1].polys[p].num_limbs() * path[1].polys[p].ring_dim();
        EXPECT_TRUE(std::equal(path[1].polys[p].data(), path[1].polys[p].data() + words,
                               path[3].polys[p].data()))
            << "fused relinearization, polynomial " << p << ", " << q_bits << "-bit primes";
      }
    }
    std::vector<u64> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i] % 65537;
    EXPECT_EQ(encoder.decode_batch(dec.decrypt(results[1][1])), want);
  }
}

// A rotation with the Galois key in its in-memory layout (permuted, ciphertext.h) equals the
// textbook one bit for bit: permute c_0 and c_1, key-switch the permuted c_1 with the key in
// the plain (serialized) layout, add. Both kernel paths, two levels of key switching.
TEST(BfvHps, RotationWithPermutedKeysEqualsTheTextbookRotation) {
  for (const bool portable : {true, false}) {
    if (!portable && !math::cpu_has_avx512_ifma()) continue;
    math::force_portable_path(portable);
    const auto ctx = BfvContext::create(BfvParams::generate(11, 65537, 4, 60, 2, true, true));
    KeyGenerator keygen(ctx, seed(40));
    Encoder encoder(ctx);
    Encryptor enc(ctx, keygen.secret_key());
    Evaluator ev(ctx);
    const std::vector<long long> steps = {1, 5};
    const GaloisKeys gk = keygen.make_galois_keys(steps, true);
    math::Prng prng(seed(41));
    std::vector<u64> x(ctx->ring_dim());
    for (auto& v : x) v = prng.uniform_below(65537);
    const Ciphertext a = enc.encrypt(encoder.encode_batch(x));
    for (const auto& [g, key] : gk.keys) {
      Ciphertext got = a;
      ev.apply_galois_inplace(got, g, gk);
      KeySwitchKey plain = key;
      permute_galois_key(plain, ctx->galois_permutation(g));
      const auto& perm = ctx->galois_permutation(g);
      const std::size_t n = ctx->ring_dim(), limbs = a.limbs();
      Ciphertext want = a;
      for (std::size_t p = 0; p < 2; ++p) {
        for (std::size_t i = 0; i < limbs; ++i) {
          for (std::size_t t = 0; t < n; ++t) {
            want.polys[p].limb(i)[t] = a.polys[p].limb(i)[perm[t]];
          }
        }
      }
      math::RnsPoly c1_coeff = want.polys[1];
      math::from_ntt_inplace(c1_coeff);
      const math::RnsPoly c1 = want.polys[1];
      want.polys[1].set_zero();
      key_switch(*ctx, c1_coeff, &c1, plain, want.polys[0], want.polys[1], true);
      for (std::size_t p = 0; p < 2; ++p) {
        EXPECT_TRUE(
            std::equal(got.polys[p].data(), got.polys[p].data() + limbs * n, want.polys[p].data()))
            << "element " << g << ", polynomial " << p << ", portable " << portable;
      }
    }
  }
  math::force_portable_path(false);
}

// round(t x / Q) mod t for x = Delta m + e with small centred e, composed independently.
TEST(BfvHps, DecryptionScalingRecoversTheMessageUpToTheNoiseBound) {
  const auto ctx = BfvContext::create(BfvParams::generate(10, 65537, 3, 50, 1, true, true));
  const std::size_t n = ctx->ring_dim(), k = ctx->q_size();
  const u64 t = ctx->plain_modulus();
  math::Prng prng(seed(9));
  std::vector<u64> m(n);
  std::vector<std::int64_t> e(n);
  for (std::size_t c = 0; c < n; ++c) {
    m[c] = prng.uniform_below(t);
    // |e| up to 2^40, far below Delta / 2 ~ 2^133.
    e[c] = static_cast<std::int64_t>(prng.uniform_below(u64{1} << 41)) - (std::int64_t{1} << 40);
  }
  std::vector<u64> x(k * n);
  math::signed_to_rns(e.data(), n, ctx->q_base(), x.data());
  for (std::size_t i = 0; i < k; ++i) {
    const math::Modulus& qi = ctx->q_base()[i];
    for (std::size_t c = 0; c < n; ++c) {
      x[i * n + c] = math::add_mod(
          x[i * n + c], math::mul_mod(m[c] % qi.value(), ctx->delta_mod_q(i), qi), qi.value());
    }
  }
  std::vector<u64> out(n);
  hps_scale_round_to_plain(*ctx, x.data(), out.data());
  EXPECT_EQ(out, m);
}

TEST(BfvEvaluator, RefusalsNameTheProblem) {
  const auto ctx = BfvContext::create(BfvParams::generate(10, 65537, 2, 50, 1, true, true));
  KeyGenerator keygen(ctx, seed(10)), other(ctx, seed(11));
  Encoder encoder(ctx);
  Encryptor enc(ctx, keygen.secret_key());
  Encryptor enc_other(ctx, other.secret_key());
  Evaluator ev(ctx);
  Decryptor dec(ctx, keygen.secret_key());
  const Ciphertext a = enc.encrypt(encoder.encode_scalar(3));
  const Ciphertext b = enc_other.encrypt(encoder.encode_scalar(4));
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Ciphertext c = a;
  EXPECT_NE(message([&] { ev.add_inplace(c, b); }).find("key id"), std::string::npos);
  EXPECT_NE(message([&] { (void)dec.decrypt(b); }).find("key id"), std::string::npos);
  const Ciphertext three = ev.multiply(a, a);
  EXPECT_NE(message([&] { (void)ev.multiply(three, a); }).find("relinearize first"),
            std::string::npos);
  const std::vector<long long> steps = {1};
  const GaloisKeys gk = keygen.make_galois_keys(steps, false);
  c = a;
  EXPECT_NE(message([&] { ev.rotate_columns_inplace(c, gk); }).find("no Galois key"),
            std::string::npos);
  const std::vector<u64> too_big = {65537};
  EXPECT_NE(message([&] { (void)encoder.encode_batch(too_big); }).find("not below t = 65537"),
            std::string::npos);
  const RelinKey rk_other = other.make_relin_key();
  EXPECT_NE(message([&] { (void)ev.multiply_relin(a, a, rk_other); }).find("key id"),
            std::string::npos);
  Plaintext bad;
  bad.coeffs.assign(5, 0);
  EXPECT_NE(message([&] { (void)enc.encrypt(bad); }).find("5 coefficients"), std::string::npos);
}

}  // namespace
}  // namespace hec::bfv
