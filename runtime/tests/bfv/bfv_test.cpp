// BFV tests (fast tier, N <= 2^12): every operation against plaintext arithmetic mod t at
// several (N, Q, t) and both key-switching methods, rotations by every generated key, the
// multiplicative depth against the noise analysis of README §Bounds, parameter validation.
#include <gtest/gtest.h>

#include <algorithm>

#include <array>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "bfv/encoder.h"
#include "bfv/noise.h"
#include "bfv/scheme.h"
#include "math/cpu_features.h"
#include "math/sampling.h"

namespace hec::bfv {
namespace {

using math::u64;

struct Case {
  const char* name;
  int log_n;
  u64 t;  // 0: batching prime of t_bits
  int t_bits;
  std::size_t q_limbs;
  int q_bits;
  std::size_t dnum;
  bool special;
};

const Case kCases[] = {
    {"n1024_t65537_q2x50_hybrid", 10, 65537, 0, 2, 50, 1, true},
    {"n2048_t20bit_q3x45_digits", 11, 0, 20, 3, 45, 3, false},
    {"n2048_t30bit_q3x55_hybrid_dnum2", 11, 0, 30, 3, 55, 2, true},
    {"n4096_t65537_q3x36_digits_secure", 12, 65537, 0, 3, 36, 3, false},
};

std::shared_ptr<const BfvContext> make_context(const Case& c) {
  const u64 t = c.t ? c.t : batching_plain_modulus(c.t_bits, std::size_t{1} << c.log_n);
  const bool secure_expected = std::string(c.name).find("secure") != std::string::npos;
  return BfvContext::create(
      BfvParams::generate(c.log_n, t, c.q_limbs, c.q_bits, c.dnum, c.special, !secure_expected));
}

math::Seed test_seed(int v) {
  math::Seed s{};
  s[0] = static_cast<unsigned char>(v);
  s[1] = 0xbf;
  return s;
}

std::vector<u64> random_slots(math::Prng& prng, std::size_t n, u64 t) {
  std::vector<u64> v(n);
  for (auto& x : v) x = prng.uniform_below(t);
  return v;
}

u64 mulmod(u64 a, u64 b, u64 t) { return static_cast<u64>((static_cast<math::u128>(a) * b) % t); }

class BfvOps : public ::testing::TestWithParam<Case> {};

TEST_P(BfvOps, EveryOperationMatchesPlaintextArithmetic) {
  const auto ctx = make_context(GetParam());
  const u64 t = ctx->plain_modulus();
  const std::size_t n = ctx->ring_dim();
  ASSERT_TRUE(ctx->batching());
  KeyGenerator keygen(ctx, test_seed(1));
  const PublicKey pk = keygen.make_public_key();
  const RelinKey rk = keygen.make_relin_key();
  Encoder encoder(ctx);
  Encryptor enc_pk(ctx, pk);
  Encryptor enc_sk(ctx, keygen.secret_key());
  Decryptor dec(ctx, keygen.secret_key());
  Evaluator ev(ctx);
  math::Prng prng(test_seed(2));
  const auto x = random_slots(prng, n, t), y = random_slots(prng, n, t),
             z = random_slots(prng, n, t);
  const Ciphertext cx = enc_pk.encrypt(encoder.encode_batch(x));
  const Ciphertext cy = enc_sk.encrypt(encoder.encode_batch(y));
  const Plaintext pz = encoder.encode_batch(z);

  EXPECT_EQ(encoder.decode_batch(dec.decrypt(cx)), x);
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(cy)), y);
  EXPECT_GT(dec.noise_budget(cx), 0.0);

  auto expect = [&](const Ciphertext& ct, auto fn, const char* what) {
    const auto got = encoder.decode_batch(dec.decrypt(ct));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += got[i] != fn(i);
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " slots wrong";
  };
  Ciphertext s = cx;
  ev.add_inplace(s, cy);
  expect(
      s, [&](std::size_t i) { return (x[i] + y[i]) % t; }, "add");
  s = cx;
  ev.sub_inplace(s, cy);
  expect(
      s, [&](std::size_t i) { return (x[i] + t - y[i]) % t; }, "sub");
  s = cx;
  ev.negate_inplace(s);
  expect(
      s, [&](std::size_t i) { return (t - x[i]) % t; }, "negate");
  s = cx;
  ev.add_plain_inplace(s, pz);
  expect(
      s, [&](std::size_t i) { return (x[i] + z[i]) % t; }, "add_plain");
  s = cx;
  ev.sub_plain_inplace(s, pz);
  expect(
      s, [&](std::size_t i) { return (x[i] + t - z[i]) % t; }, "sub_plain");
  s = cx;
  ev.multiply_plain_inplace(s, pz);
  expect(
      s, [&](std::size_t i) { return mulmod(x[i], z[i], t); }, "multiply_plain");
  {
    // Out of place into a fresh output, then into the same output again (storage reused):
    // the words equal the in-place product's.
    const PlaintextNtt prepared = ev.prepare_plain(pz);
    Ciphertext out;
    ev.multiply_plain(cx, prepared, out);
    expect(
        out, [&](std::size_t i) { return mulmod(x[i], z[i], t); }, "multiply_plain into out");
    const u64* storage = out.polys[0].data();
    ev.multiply_plain(cy, prepared, out);
    EXPECT_EQ(out.polys[0].data(), storage);
    expect(
        out, [&](std::size_t i) { return mulmod(y[i], z[i], t); }, "multiply_plain reused out");
    Ciphertext in_place = cy;
    ev.multiply_plain_inplace(in_place, prepared);
    for (std::size_t k = 0; k < out.size(); ++k) {
      EXPECT_TRUE(std::equal(out.polys[k].data(),
                             out.polys[k].data() + out.limbs() * out.polys[k].ring_dim(),
                             in_place.polys[k].data()));
    }
  }
  // A scalar (the constant plaintext polynomial) multiplies limb by limb; its words equal the
  // prepared plaintext product's, for a small value, a negative one (above t/2) and zero.
  for (const u64 v : {u64{7}, t - 3, u64{0}, t / 2, t / 2 + 1}) {
    Ciphertext by_scalar = cx, by_plain = cx;
    ev.multiply_scalar_inplace(by_scalar, v);
    ev.multiply_plain_inplace(by_plain, ev.prepare_plain(encoder.encode_scalar(v)));
    for (std::size_t k = 0; k < by_plain.size(); ++k) {
      EXPECT_TRUE(
          std::equal(by_plain.polys[k].data(),
                     by_plain.polys[k].data() + by_plain.limbs() * by_plain.polys[k].ring_dim(),
                     by_scalar.polys[k].data()))
          << "value " << v;
    }
  }
  EXPECT_THROW(ev.multiply_scalar_inplace(s, t), std::invalid_argument);
  s = cx;
  ev.multiply_plain_inplace(s, encoder.encode_scalar(7));
  expect(
      s, [&](std::size_t i) { return mulmod(x[i], 7, t); }, "multiply_plain scalar");

  Ciphertext m3 = ev.multiply(cx, cy);
  ASSERT_EQ(m3.size(), 3u);
  expect(
      m3, [&](std::size_t i) { return mulmod(x[i], y[i], t); }, "multiply (size 3)");
  ev.relinearize_inplace(m3, rk);
  ASSERT_EQ(m3.size(), 2u);
  expect(
      m3, [&](std::size_t i) { return mulmod(x[i], y[i], t); }, "relinearize");
  const Ciphertext m2 = ev.multiply_relin(cx, cy, rk);
  expect(
      m2, [&](std::size_t i) { return mulmod(x[i], y[i], t); }, "multiply_relin");
  const Ciphertext sq = ev.multiply_relin(cx, cx, rk);
  expect(
      sq, [&](std::size_t i) { return mulmod(x[i], x[i], t); }, "square");
  // (x y) * z + x: a second level mixing every kind of operand.
  Ciphertext mix = ev.multiply_relin(m2, enc_pk.encrypt(pz), rk);
  ev.add_inplace(mix, cx);
  expect(
      mix, [&](std::size_t i) { return (mulmod(mulmod(x[i], y[i], t), z[i], t) + x[i]) % t; },
      "x*y*z + x");
}

TEST_P(BfvOps, RotationsByEveryGeneratedKey) {
  const auto ctx = make_context(GetParam());
  const u64 t = ctx->plain_modulus();
  const std::size_t n = ctx->ring_dim(), half = n / 2;
  KeyGenerator keygen(ctx, test_seed(3));
  const GaloisKeys gk = keygen.make_galois_keys_power_of_two();
  Encoder encoder(ctx);
  Encryptor enc(ctx, keygen.secret_key());
  Decryptor dec(ctx, keygen.secret_key());
  Evaluator ev(ctx);
  math::Prng prng(test_seed(4));
  const auto x = random_slots(prng, n, t);
  const Ciphertext cx = enc.encrypt(encoder.encode_batch(x));
  auto rotated = [&](long long steps) {
    std::vector<u64> r(n);
    const long long h = static_cast<long long>(half);
    for (std::size_t row = 0; row < 2; ++row) {
      for (long long c = 0; c < h; ++c) {
        r[row * half + c] = x[row * half + static_cast<std::size_t>((((c + steps) % h) + h) % h)];
      }
    }
    return r;
  };
  std::size_t checked = 0;
  for (const auto& [g, key] : gk.keys) {
    (void)key;
    Ciphertext c = cx;
    ev.apply_galois_inplace(c, g, gk);
    const auto got = encoder.decode_batch(dec.decrypt(c));
    if (g == ctx->galois_element_row_swap()) {
      std::vector<u64> want(n);
      for (std::size_t i = 0; i < n; ++i) want[i] = x[(i + half) % n];
      EXPECT_EQ(got, want) << "row swap";
    } else {
      long long steps = -1;
      for (long long s = 0; s < static_cast<long long>(half); ++s) {
        if (ctx->galois_element_for_row_rotation(s) == g) steps = s;
      }
      ASSERT_GE(steps, 0) << "element " << g << " is no row rotation";
      EXPECT_EQ(got, rotated(steps)) << "rotation by " << steps << " (element " << g << ")";
    }
    ++checked;
  }
  // Steps +-1 ... +-N/4 (+N/4 and -N/4 coincide) and the row swap.
  EXPECT_EQ(checked, 2 * static_cast<std::size_t>(std::log2(half)));
  // A composite step (no key of its own) and a negative one.
  Ciphertext c = cx;
  ev.rotate_rows_inplace(c, 5, gk);
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(c)), rotated(5));
  c = cx;
  ev.rotate_rows_inplace(c, -3, gk);
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(c)), rotated(-3));
  c = cx;
  ev.rotate_columns_inplace(c, gk);
  ev.rotate_rows_inplace(c, 1, gk);
  std::vector<u64> want(n);
  for (std::size_t row = 0; row < 2; ++row) {
    for (std::size_t col = 0; col < half; ++col) {
      want[row * half + col] = x[(1 - row) * half + (col + 1) % half];
    }
  }
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(c)), want);
}

INSTANTIATE_TEST_SUITE_P(Params, BfvOps, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Coefficient encoding with a t that allows no batching: products are negacyclic
// convolutions mod t.
// A product by a plaintext whose ciphertext is a MiB or more computes its Shoup constants in
// registers (prepare_plain makes no table: half a prepared plaintext's memory, a sixth of the
// product's traffic); a smaller one keeps the table. Either way the words equal the portable
// loop's, with a table and without one (a plaintext prepared on the AVX-512 path), and
// decrypt to the slot products.
TEST(BfvPlainProduct, LargeProductsComputeTheirShoupConstants) {
  if (!math::cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  struct Size {
    int log_n;
    std::size_t limbs;
    bool table;
  };
  for (const Size size : {Size{12, 3, true}, Size{13, 8, false}}) {
    const auto ctx =
        BfvContext::create(BfvParams::generate(size.log_n, 65537, size.limbs, 50, 2, true, true));
    const u64 t = ctx->plain_modulus();
    KeyGenerator keygen(ctx, test_seed(7));
    Encoder encoder(ctx);
    Encryptor enc(ctx, keygen.secret_key());
    Decryptor dec(ctx, keygen.secret_key());
    Evaluator ev(ctx);
    math::Prng prng(test_seed(8));
    const auto x = random_slots(prng, ctx->ring_dim(), t),
               z = random_slots(prng, ctx->ring_dim(), t);
    const Ciphertext cx = enc.encrypt(encoder.encode_batch(x));
    const Plaintext pz = encoder.encode_batch(z);
    const PlaintextNtt prepared = ev.prepare_plain(pz);
    EXPECT_EQ(prepared.shoup.empty(), !size.table) << "N = 2^" << size.log_n;
    Ciphertext got;
    ev.multiply_plain(cx, prepared, got);
    math::force_portable_path(true);
    const PlaintextNtt prepared_portable = ev.prepare_plain(pz);
    EXPECT_FALSE(prepared_portable.shoup.empty());
    Ciphertext want, want_untabled;
    ev.multiply_plain(cx, prepared_portable, want);
    ev.multiply_plain(cx, prepared, want_untabled);
    math::force_portable_path(false);
    for (std::size_t k = 0; k < got.size(); ++k) {
      const std::size_t words = got.limbs() * got.polys[k].ring_dim();
      EXPECT_TRUE(
          std::equal(got.polys[k].data(), got.polys[k].data() + words, want.polys[k].data()))
          << "N = 2^" << size.log_n << ", component " << k;
      EXPECT_TRUE(std::equal(want_untabled.polys[k].data(), want_untabled.polys[k].data() + words,
                             want.polys[k].data()))
          << "N = 2^" << size.log_n << ", component " << k;
    }
    const auto slots = encoder.decode_batch(dec.decrypt(got));
    for (std::size_t i = 0; i < slots.size(); ++i) {
      ASSERT_EQ(slots[i], mulmod(x[i], z[i], t)) << "N = 2^" << size.log_n << " slot " << i;
    }
  }
}

TEST(BfvCoefficients, NonBatchingPlainModulus) {
  for (u64 t : {u64{256}, u64{1000}, u64{3}}) {
    const auto ctx = BfvContext::create(BfvParams::generate(10, t, 2, 50, 2, false, true));
    ASSERT_FALSE(ctx->batching());
    const std::size_t n = ctx->ring_dim();
    KeyGenerator keygen(ctx, test_seed(5));
    const RelinKey rk = keygen.make_relin_key();
    Encoder encoder(ctx);
    Encryptor enc(ctx, keygen.make_public_key());
    Decryptor dec(ctx, keygen.secret_key());
    Evaluator ev(ctx);
    math::Prng prng(test_seed(6));
    const auto a = random_slots(prng, n, t), b = random_slots(prng, n, t);
    const Ciphertext ca = enc.encrypt(encoder.encode_coefficients(a));
    const Ciphertext cb = enc.encrypt(encoder.encode_coefficients(b));
    std::vector<u64> want(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const u64 p = mulmod(a[i], b[j], t);
        const std::size_t k = (i + j) % n;
        want[k] = (i + j < n) ? (want[k] + p) % t : (want[k] + t - p) % t;
      }
    }
    EXPECT_EQ(encoder.decode_coefficients(dec.decrypt(ev.multiply_relin(ca, cb, rk))), want)
        << "t = " << t;
    Ciphertext s = ca;
    ev.add_inplace(s, cb);
    std::vector<u64> sum(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = (a[i] + b[i]) % t;
    EXPECT_EQ(encoder.decode_coefficients(dec.decrypt(s)), sum) << "t = " << t;
    EXPECT_THROW(encoder.encode_batch(a), std::invalid_argument);
  }
}

// Squares a fresh encryption until decryption fails; the number of correct levels must match
// the analytic depth of README §Bounds within one level, and the measured budget must track
// the predicted one while it is positive.
struct DepthCase {
  const char* name;
  int log_n;
  std::size_t q_limbs;
  int q_bits;
  std::size_t dnum;
  bool special;
};

class BfvDepth : public ::testing::TestWithParam<DepthCase> {};

TEST_P(BfvDepth, MeasuredDepthMatchesTheNoiseAnalysis) {
  const auto& c = GetParam();
  const auto ctx = BfvContext::create(
      BfvParams::generate(c.log_n, 65537, c.q_limbs, c.q_bits, c.dnum, c.special, true));
  const u64 t = ctx->plain_modulus();
  const std::size_t n = ctx->ring_dim();
  const NoiseEstimate est = estimate_squaring_chain(*ctx, 12);
  KeyGenerator keygen(ctx, test_seed(7));
  const RelinKey rk = keygen.make_relin_key();
  Encoder encoder(ctx);
  Encryptor enc(ctx, keygen.make_public_key());
  Decryptor dec(ctx, keygen.secret_key());
  Evaluator ev(ctx);
  math::Prng prng(test_seed(8));
  std::vector<u64> x = random_slots(prng, n, t);
  Ciphertext ct = enc.encrypt(encoder.encode_batch(x));
  int measured = -1;
  std::string table;
  for (int level = 0; level <= est.depth + 2; ++level) {
    if (level > 0) {
      ct = ev.multiply_relin(ct, ct, rk);
      for (auto& v : x) v = mulmod(v, v, t);
    }
    const double budget = dec.noise_budget(ct);
    const bool ok = encoder.decode_batch(dec.decrypt(ct)) == x;
    table += "level " + std::to_string(level) + ": measured " + std::to_string(budget) +
             " bits, predicted " + std::to_string(est.budget[static_cast<std::size_t>(level)]) +
             (ok ? "" : " (decryption wrong)") + "\n";
    if (!ok) break;
    measured = level;
    if (budget > 20 && est.budget[static_cast<std::size_t>(level)] > 20) {
      EXPECT_NEAR(budget, est.budget[static_cast<std::size_t>(level)], 10.0)
          << "level " << level << "\n"
          << table;
    }
  }
  EXPECT_LE(std::abs(measured - est.depth), 1)
      << "measured depth " << measured << ", predicted " << est.depth << "\n"
      << table;
  std::cout << c.name << ": measured depth " << measured << ", predicted " << est.depth << "\n"
            << table;
}

const DepthCase kDepthCases[] = {
    {"n2048_q4x50_hybrid", 11, 4, 50, 2, true},
    {"n2048_q4x50_digits", 11, 4, 50, 4, false},
    {"n4096_q5x40_hybrid_dnum1", 12, 5, 40, 1, true},
};

INSTANTIATE_TEST_SUITE_P(Params, BfvDepth, ::testing::ValuesIn(kDepthCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BfvParams, InsecureParametersAreRefusedWithTheValues) {
  try {
    BfvContext ctx(BfvParams::generate(10, 65537, 2, 50, 1, true, false));
    FAIL() << "2 x 50-bit Q at N = 2^10 was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("exceeds the 128-bit HE Standard bound 27"), std::string::npos) << msg;
  }
  const auto ctx = BfvContext::create(BfvParams::generate(10, 65537, 2, 50, 1, true, true));
  EXPECT_FALSE(ctx->is_secure());
  EXPECT_NE(ctx->describe().find("INSECURE"), std::string::npos);
  const auto secure = BfvContext::create(BfvParams::generate(12, 65537, 3, 36, 3, false));
  EXPECT_TRUE(secure->is_secure());
  EXPECT_THROW(BfvParams::generate(10, 65537, 2, 61, 1, true), std::invalid_argument);
  BfvParams p = BfvParams::generate(10, 65537, 2, 50, 1, true, true);
  p.p_mult.pop_back();
  EXPECT_THROW(BfvContext{p}, std::invalid_argument);
  p = BfvParams::generate(10, 65537, 2, 50, 1, true, true);
  p.q[1] = p.q[0];
  EXPECT_THROW(BfvContext{p}, std::invalid_argument);
}

// SecretKey::wipe (run by the destructor and the assignments) zeroes every word of s; a copy
// assigned over decrypts again.
TEST(BfvKeys, WipeZeroesEverySecretWord) {
  const auto ctx = make_context(kCases[0]);
  KeyGenerator keygen(ctx, test_seed(3));
  SecretKey copy = keygen.secret_key();
  const std::size_t words = copy.s.num_limbs() * copy.s.ring_dim();
  ASSERT_GT(words, 0u);
  ASSERT_TRUE(std::any_of(copy.s.data(), copy.s.data() + words, [](u64 x) { return x != 0; }));
  copy.wipe();
  EXPECT_TRUE(std::all_of(copy.s.data(), copy.s.data() + words, [](u64 x) { return x == 0; }));
  copy = keygen.secret_key();
  EXPECT_TRUE(copy.s == keygen.secret_key().s);
}

}  // namespace
}  // namespace hec::bfv

namespace hec::bfv {
namespace {

// Slow tier: the parameter sets of `bench/run bfv` (60-bit primes, hybrid dnum = 2, 128-bit
// secure), so that what is timed is also checked: multiply + relinearize, plaintext product,
// rotation, against plaintext arithmetic.
class BfvSlow : public ::testing::TestWithParam<std::array<int, 2>> {};

TEST_P(BfvSlow, BenchmarkParametersComputeCorrectly) {
  const auto [log_n, limbs] = GetParam();
  const auto ctx = BfvContext::create(
      BfvParams::generate(log_n, 65537, static_cast<std::size_t>(limbs), 60, 2, true));
  ASSERT_TRUE(ctx->is_secure()) << ctx->describe();
  const u64 t = ctx->plain_modulus();
  const std::size_t n = ctx->ring_dim(), half = n / 2;
  KeyGenerator keygen(ctx, test_seed(20));
  const RelinKey rk = keygen.make_relin_key();
  const std::vector<long long> steps = {1};
  const GaloisKeys gk = keygen.make_galois_keys(steps, false);
  Encoder encoder(ctx);
  Encryptor enc(ctx, keygen.make_public_key());
  Decryptor dec(ctx, keygen.secret_key());
  Evaluator ev(ctx);
  math::Prng prng(test_seed(21));
  const auto x = random_slots(prng, n, t), y = random_slots(prng, n, t);
  Ciphertext c = ev.multiply_relin(enc.encrypt(encoder.encode_batch(x)),
                                   enc.encrypt(encoder.encode_batch(y)), rk);
  ev.multiply_plain_inplace(c, ev.prepare_plain(encoder.encode_batch(y)));
  ev.rotate_rows_inplace(c, 1, gk);
  std::vector<u64> want(n);
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t col = 0; col < half; ++col) {
      const std::size_t s = r * half + (col + 1) % half;
      want[r * half + col] = mulmod(mulmod(x[s], y[s], t), y[s], t);
    }
  }
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(c)), want);
  EXPECT_GT(dec.noise_budget(c), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Params, BfvSlow,
                         ::testing::Values(std::array<int, 2>{13, 2}, std::array<int, 2>{14, 4},
                                           std::array<int, 2>{15, 8}),
                         [](const auto& info) {
                           return "n2e" + std::to_string(info.param[0]) + "_q" +
                                  std::to_string(info.param[1]) + "x60";
                         });

}  // namespace
}  // namespace hec::bfv
