// Tests for fhew/: every gate's truth table under encryption (GINX at STD128, AP on the
// insecure small-n test set in the fast tier and at STD128 in the slow tier), NOT and MUX,
// batched evaluation, input validation, and the measured noise after blind rotation and after
// a full bootstrap against the analytic variances of params.cpp.
#include "fhew/fhew.h"
#include "tests/fhew/keys.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <map>
#include <memory>

namespace hec::fhew {
namespace {

using test_keys::Keys;
using test_keys::keys_for;

bool plain(Gate g, bool x, bool y) {
  switch (g) {
    case Gate::kAnd:
      return x && y;
    case Gate::kOr:
      return x || y;
    case Gate::kNand:
      return !(x && y);
    case Gate::kNor:
      return !(x || y);
    case Gate::kXor:
      return x != y;
    case Gate::kXnor:
      return x == y;
    default:
      break;
  }
  throw std::logic_error("plain: not a binary gate");
}

constexpr Gate kBinaryGates[] = {Gate::kAnd, Gate::kOr,  Gate::kNand,
                                 Gate::kNor, Gate::kXor, Gate::kXnor};

void check_truth_tables(const Params& p) {
  const Keys& k = keys_for(p);
  const Context& ctx = *k.ctx;
  for (Gate g : kBinaryGates) {
    for (int x = 0; x < 2; ++x) {
      for (int y = 0; y < 2; ++y) {
        const Ciphertext cx = ctx.encrypt(k.sk, x), cy = ctx.encrypt(k.sk, y);
        const Ciphertext out = ctx.eval(k.ek, g, cx, cy);
        EXPECT_EQ(ctx.decrypt(k.sk, out), plain(g, x, y))
            << p.name << " " << gate_name(g) << "(" << x << ", " << y << ")";
        // A bootstrapped output feeds another gate: chain once more with a fresh input.
        const Ciphertext again = ctx.eval(k.ek, g, out, cy);
        EXPECT_EQ(ctx.decrypt(k.sk, again), plain(g, plain(g, x, y), y))
            << p.name << " chained " << gate_name(g);
      }
    }
  }
  for (int x = 0; x < 2; ++x) {
    EXPECT_EQ(ctx.decrypt(k.sk, ctx.eval_not(ctx.encrypt(k.sk, x))), !x);
  }
  for (int s = 0; s < 2; ++s) {
    for (int t = 0; t < 2; ++t) {
      for (int f = 0; f < 2; ++f) {
        const Ciphertext out =
            ctx.eval_mux(k.ek, ctx.encrypt(k.sk, s), ctx.encrypt(k.sk, t), ctx.encrypt(k.sk, f));
        EXPECT_EQ(ctx.decrypt(k.sk, out), s ? t : f) << p.name << " MUX" << s << t << f;
      }
    }
  }
}

TEST(FhewGates, TruthTablesGinxStd128) { check_truth_tables(Params::std128(BlindRotation::kGinx)); }

TEST(FhewGates, TruthTablesApToyInsecure) {
  check_truth_tables(Params::toy_insecure(BlindRotation::kAp));
}

TEST(FhewGates, TruthTablesApStd128Slow) { check_truth_tables(Params::std128(BlindRotation::kAp)); }

TEST(FhewGates, EncryptDecryptAndNot) {
  const Keys& k = keys_for(Params::std128(BlindRotation::kGinx));
  for (int i = 0; i < 64; ++i) {
    const bool bit = (i * 7 + 3) % 5 < 2;
    const Ciphertext c = k.ctx->encrypt(k.sk, bit);
    EXPECT_EQ(k.ctx->decrypt(k.sk, c), bit);
    EXPECT_EQ(k.ctx->decrypt(k.sk, k.ctx->eval_not(c)), !bit);
  }
}

TEST(FhewGates, RejectsForeignAndMalformedInputs) {
  const Keys& k = keys_for(Params::std128(BlindRotation::kGinx));
  const Keys& other = keys_for(Params::toy_insecure(BlindRotation::kGinx));
  const Ciphertext good = k.ctx->encrypt(k.sk, true);
  Ciphertext foreign_key = good;
  foreign_key.key_id[0] ^= 1;
  EXPECT_THROW(k.ctx->eval(k.ek, Gate::kAnd, good, foreign_key), std::invalid_argument);
  const Ciphertext wrong_dim = other.ctx->encrypt(other.sk, true);
  Ciphertext relabelled = wrong_dim;
  relabelled.key_id = k.ek.key_id;
  try {
    k.ctx->eval(k.ek, Gate::kOr, good, relabelled);
    FAIL() << "expected a dimension error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(k.ctx->eval(k.ek, Gate::kNot, good, good), std::invalid_argument);
  EXPECT_THROW(k.ctx->decrypt(other.sk, good), std::invalid_argument);
}

TEST(FhewBatch, MatchesSequentialAndRethrowsErrors) {
  const Keys& k = keys_for(Params::std128(BlindRotation::kGinx));
  const Context& ctx = *k.ctx;
  std::vector<Ciphertext> in;
  std::vector<bool> bits;
  for (int i = 0; i < 8; ++i) {
    bits.push_back(i % 3 == 0);
    in.push_back(ctx.encrypt(k.sk, bits.back()));
  }
  std::vector<Context::GateOp> ops;
  std::vector<bool> expect;
  for (int i = 0; i < 8; ++i) {
    const Gate g = i == 6 ? Gate::kNot : (i == 7 ? Gate::kMux : kBinaryGates[i % 6]);
    ops.push_back({g, &in[i], &in[(i + 1) % 8], &in[(i + 2) % 8]});
    if (g == Gate::kNot) {
      expect.push_back(!bits[i]);
    } else if (g == Gate::kMux) {
      expect.push_back(bits[i] ? bits[(i + 1) % 8] : bits[(i + 2) % 8]);
    } else {
      expect.push_back(plain(g, bits[i], bits[(i + 1) % 8]));
    }
  }
  const auto out = ctx.eval_batch(k.ek, ops);
  ASSERT_EQ(out.size(), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ctx.decrypt(k.sk, out[i]), expect[i]) << "gate " << i;
  }
  // A malformed gate inside the batch surfaces as an exception after the parallel region.
  Ciphertext bad = in[0];
  bad.lwe.a.pop_back();
  ops[3].in1 = &bad;
  EXPECT_THROW(ctx.eval_batch(k.ek, ops), std::invalid_argument);
  ops[3].in1 = nullptr;
  EXPECT_THROW(ctx.eval_batch(k.ek, ops), std::invalid_argument);
}

// Measured variance of the accumulator error (all N coefficients of several blind
// rotations) and of the final gate output against noise_model(). Tolerances are 5 standard
// errors of a variance estimate from m samples of a near-Gaussian error: 5 * sqrt(2 / m).
void check_noise(const Params& p, int rotations, int gates) {
  const Keys& k = keys_for(p);
  const Context& ctx = *k.ctx;
  const NoiseModel model = noise_model(p);
  const std::uint64_t Q = ctx.ring().q();
  Workspace ws(ctx.ring());
  double sum_sq = 0;
  std::size_t samples = 0;
  for (int r = 0; r < rotations; ++r) {
    const Ciphertext c = ctx.encrypt(k.sk, r % 2);
    ctx.blind_rotate(k.ek, c.lwe, ws);
    const auto phase = accumulator_phase(ctx.ring(), k.sk.ring, ws);
    // Expected accumulator: X^{-k} tv with every coefficient +-round(Q/8).
    for (std::size_t j = 0; j < phase.size(); ++j) {
      const double tv = static_cast<double>(ctx.test_value());
      const double v = static_cast<double>(phase[j]);
      const double e = v > 0 ? v - tv : v + tv;
      sum_sq += e * e;
      ++samples;
    }
  }
  (void)Q;
  const double br_var = sum_sq / static_cast<double>(samples);
  // Coefficients of one rotation are not independent; count rotations * 64 effective samples.
  const double br_tol = 5 * std::sqrt(2.0 / (rotations * 64.0));
  EXPECT_NEAR(br_var / model.blind_rotation_variance, 1.0, br_tol)
      << p.name << " blind rotation: measured " << br_var << " analytic "
      << model.blind_rotation_variance;

  const std::uint32_t q = p.lwe_modulus;
  double out_sq = 0;
  for (int g = 0; g < gates; ++g) {
    const bool x = g % 2, y = (g / 2) % 2;
    const Ciphertext out = ctx.eval(k.ek, Gate::kOr, ctx.encrypt(k.sk, x), ctx.encrypt(k.sk, y));
    const std::int64_t expect = (x || y) ? q / 4 : 0;
    std::int64_t e = static_cast<std::int64_t>(ctx.phase(k.sk, out)) - expect;
    if (e > static_cast<std::int64_t>(q / 2)) e -= q;
    if (e < -static_cast<std::int64_t>(q / 2)) e += q;
    out_sq += static_cast<double>(e * e);
  }
  const double out_var = out_sq / gates;
  EXPECT_NEAR(out_var / model.bootstrapped_variance, 1.0, 5 * std::sqrt(2.0 / gates))
      << p.name << " bootstrapped: measured " << out_var << " analytic "
      << model.bootstrapped_variance;
  ::testing::Test::RecordProperty("blind_rotation_variance_ratio",
                                  std::to_string(br_var / model.blind_rotation_variance));
  ::testing::Test::RecordProperty("bootstrapped_variance_ratio",
                                  std::to_string(out_var / model.bootstrapped_variance));
  std::printf(
      "%s: BR variance %.4g (analytic %.4g), output variance %.4g (analytic %.4g), "
      "failure 2^%.1f\n",
      p.name.c_str(), br_var, model.blind_rotation_variance, out_var, model.bootstrapped_variance,
      model.failure_log2);
}

TEST(FhewNoise, GinxMatchesAnalyticVariance) {
  check_noise(Params::std128(BlindRotation::kGinx), 8, 200);
}

TEST(FhewNoise, ApToyMatchesAnalyticVariance) {
  check_noise(Params::toy_insecure(BlindRotation::kAp), 8, 200);
}

TEST(FhewNoise, Std128FailureProbabilityBelow2ToMinus40) {
  for (auto m : {BlindRotation::kGinx, BlindRotation::kAp}) {
    const NoiseModel model = noise_model(Params::std128(m));
    EXPECT_LT(model.failure_log2, -40) << blind_rotation_name(m);
    std::printf(
        "STD128 %s: fresh %.4g, blind rotation %.4g (mod Q), after Q->q_ks %.4g, key "
        "switch %.4g, bootstrapped %.4g (mod q), margin %.2f sigma, failure 2^%.1f\n",
        blind_rotation_name(m), model.fresh_variance, model.blind_rotation_variance,
        model.after_ring_ms_variance, model.key_switch_variance, model.bootstrapped_variance,
        model.gate_margin_sigmas, model.failure_log2);
  }
}

TEST(FhewParams, ValidationNamesTheField) {
  Params p = Params::std128(BlindRotation::kGinx);
  p.lwe_modulus = 1000;
  try {
    p.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lwe_modulus q = 1000"), std::string::npos);
  }
  Params r = Params::std128(BlindRotation::kGinx);
  r.ring_modulus = 12289 * 2 + 1;
  EXPECT_THROW(r.validate(), std::invalid_argument);
  EXPECT_NE(Params::std128(BlindRotation::kAp).digest(),
            Params::std128(BlindRotation::kGinx).digest());
  EXPECT_TRUE(Params::toy_insecure(BlindRotation::kAp).insecure);
  EXPECT_NE(Params::toy_insecure(BlindRotation::kAp).name.find("INSECURE"), std::string::npos);
}

// SecretKey::wipe (run by the destructor and the assignments) zeroes every secret word: the LWE
// key, the ring key and its NTT form; a copy assigned over keeps working.
TEST(FhewKeys, WipeZeroesEverySecretWord) {
  const Keys& k = keys_for(Params::std128(BlindRotation::kGinx));
  SecretKey copy = k.sk;
  auto nonzero = [](const auto& v) {
    return std::any_of(v.begin(), v.end(), [](auto x) { return x != 0; });
  };
  ASSERT_TRUE(nonzero(copy.lwe) && nonzero(copy.ring.z) && nonzero(copy.ring.z_ntt));
  copy.wipe();
  EXPECT_FALSE(nonzero(copy.lwe));
  EXPECT_FALSE(nonzero(copy.ring.z));
  EXPECT_FALSE(nonzero(copy.ring.z_ntt));
  EXPECT_EQ(copy.lwe.size(), k.sk.lwe.size());
  copy = k.sk;
  EXPECT_EQ(copy.lwe, k.sk.lwe);
  EXPECT_TRUE(k.ctx->decrypt(copy, k.ctx->encrypt(k.sk, true)));
}

}  // namespace
}  // namespace hec::fhew
