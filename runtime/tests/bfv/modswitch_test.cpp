// BFV modulus switching (Evaluator::mod_switch_to_next_inplace): decryption stays exact at every
// level after fresh encryption and after multiply + relinearize; the noise budget follows the
// deterministic bound of scheme.h (|v' - v| <= t (1 + N) / (2 Q_{l-1})) and is kept when the
// noise dominates; every operation that runs below the top level (add, sub, plaintext
// operations, relinearization and rotation through the shared key switching) is exact there;
// a switched ciphertext survives serialization; misuse is refused with the values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bfv/encoder.h"
#include "bfv/scheme.h"
#include "bfv/serialize.h"
#include "math/sampling.h"

namespace hec::bfv {
namespace {

using math::u64;

struct Case {
  const char* name;
  int log_n;
  std::size_t q_limbs;
  int q_bits;
  std::size_t dnum;
  bool special;
};

const Case kCases[] = {
    {"n4096_q4x50_hybrid_dnum2", 12, 4, 50, 2, true},
    {"n2048_q3x45_digits", 11, 3, 45, 3, false},
    {"n2048_q4x40_hybrid_dnum1", 11, 4, 40, 1, true},
};

math::Seed seed(int v) {
  math::Seed s{};
  s[0] = static_cast<unsigned char>(v);
  s[1] = 0x5e;
  return s;
}

std::vector<u64> random_slots(math::Prng& prng, std::size_t n, u64 t) {
  std::vector<u64> v(n);
  for (auto& x : v) x = prng.uniform_below(t);
  return v;
}

u64 mulmod(u64 a, u64 b, u64 t) { return static_cast<u64>((static_cast<math::u128>(a) * b) % t); }

double log2_q(const BfvContext& ctx, std::size_t limbs) { return ctx.level(limbs).log2_q; }

// The largest |v| the budget B stands for: budget = -log2(2 max|v|).
double noise_of(double budget) { return std::exp2(-budget - 1.0); }

class BfvModSwitch : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    ctx_ = BfvContext::create(
        BfvParams::generate(c.log_n, 65537, c.q_limbs, c.q_bits, c.dnum, c.special, true));
  }
  std::shared_ptr<const BfvContext> ctx_;
};

TEST_P(BfvModSwitch, DecryptionIsExactAtEveryLevelAndTheBudgetFollowsTheBound) {
  const u64 t = ctx_->plain_modulus();
  const std::size_t n = ctx_->ring_dim(), k = ctx_->q_size();
  KeyGenerator keygen(ctx_, seed(1));
  const RelinKey rk = keygen.make_relin_key();
  Encoder encoder(ctx_);
  Encryptor enc(ctx_, keygen.make_public_key());
  Decryptor dec(ctx_, keygen.secret_key());
  Evaluator ev(ctx_);
  math::Prng prng(seed(2));
  const std::vector<u64> x = random_slots(prng, n, t), y = random_slots(prng, n, t);
  std::vector<u64> xy(n);
  for (std::size_t i = 0; i < n; ++i) xy[i] = mulmod(x[i], y[i], t);
  const Ciphertext fresh = enc.encrypt(encoder.encode_batch(x));
  // A product whose noise is large: x y, then squared while the budget allows, so that the
  // first switches keep the budget (noise above the rounding term).
  Ciphertext product = ev.multiply_relin(fresh, enc.encrypt(encoder.encode_batch(y)), rk);
  while (dec.noise_budget(product) > 40) {
    product = ev.multiply_relin(product, product, rk);
    for (auto& v : xy) v = mulmod(v, v, t);
  }
  for (const bool is_product : {false, true}) {
    Ciphertext ct = is_product ? product : fresh;
    const std::vector<u64>& want = is_product ? xy : x;
    double budget = dec.noise_budget(ct);
    bool kept_once = false;
    while (ct.limbs() > 1) {
      ev.mod_switch_to_next_inplace(ct);
      const std::size_t limbs = ct.limbs();
      ASSERT_EQ(ct.polys[0].num_limbs(), limbs);
      EXPECT_EQ(encoder.decode_batch(dec.decrypt(ct)), want) << "at " << limbs << " primes";
      const double after = dec.noise_budget(ct);
      ASSERT_GT(after, 0.0) << "at " << limbs << " primes";
      // |v'| <= |v| + t (1 + N) / (2 Q'), and |v'| >= |v| - the same (deterministic).
      const double rounding = static_cast<double>(t) * static_cast<double>(1 + n) / 2.0 *
                              std::exp2(-log2_q(*ctx_, limbs));
      EXPECT_LE(noise_of(after), (noise_of(budget) + rounding) * 1.001)
          << "budget " << budget << " -> " << after << " at " << limbs << " primes";
      EXPECT_GE(noise_of(after), (noise_of(budget) - rounding) * 0.999)
          << "budget " << budget << " -> " << after << " at " << limbs << " primes";
      if (noise_of(budget) > 8 * rounding) {
        // Noise dominates: the budget is kept (within the rounding term, here < 0.2 bits).
        EXPECT_NEAR(after, budget, 0.2) << "at " << limbs << " primes";
        kept_once = true;
      }
      budget = after;
    }
    EXPECT_EQ(ct.limbs(), std::size_t{1});
    if (is_product && k >= 3) {
      EXPECT_TRUE(kept_once) << "the product's noise never dominated the rounding";
    }
  }
}

TEST_P(BfvModSwitch, OperationsBelowTheTopLevelAreExact) {
  const u64 t = ctx_->plain_modulus();
  const std::size_t n = ctx_->ring_dim(), k = ctx_->q_size();
  KeyGenerator keygen(ctx_, seed(3));
  const RelinKey rk = keygen.make_relin_key();
  const std::vector<long long> steps = {1, 5};
  const GaloisKeys gk = keygen.make_galois_keys(steps, true);
  Encoder encoder(ctx_);
  Encryptor enc(ctx_, keygen.make_public_key());
  Decryptor dec(ctx_, keygen.secret_key());
  Evaluator ev(ctx_);
  math::Prng prng(seed(4));
  const std::vector<u64> x = random_slots(prng, n, t), y = random_slots(prng, n, t);
  const std::vector<u64> p = random_slots(prng, n, t);
  const std::size_t half = n / 2;
  // Down to two primes: at one prime of 40-50 bits the budget left after the rounding
  // (about log2(q_0 / (t N))) does not hold a plaintext product or a key switch without
  // special primes; decryption there is checked by the test above.
  for (std::size_t limbs = k - 1; limbs >= 2; --limbs) {
    Ciphertext a = enc.encrypt(encoder.encode_batch(x));
    Ciphertext b = enc.encrypt(encoder.encode_batch(y));
    // The product computed at the top, relinearized below it.
    Ciphertext prod = ev.multiply(a, b);
    ev.mod_switch_to_inplace(prod, limbs);
    ev.relinearize_inplace(prod, rk);
    ev.mod_switch_to_inplace(a, limbs);
    ev.mod_switch_to_inplace(b, limbs);
    std::vector<u64> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = mulmod(x[i], y[i], t);
    EXPECT_EQ(encoder.decode_batch(dec.decrypt(prod)), want) << "relinearize at " << limbs;
    // Linear and plaintext operations.
    Ciphertext s = a;
    ev.add_inplace(s, b);
    ev.sub_plain_inplace(s, encoder.encode_batch(p));
    ev.multiply_plain_inplace(s, encoder.encode_batch(p));
    for (std::size_t i = 0; i < n; ++i) want[i] = mulmod((x[i] + y[i] + t - p[i]) % t, p[i], t);
    EXPECT_EQ(encoder.decode_batch(dec.decrypt(s)), want) << "add/plain ops at " << limbs;
    // Rotation (Galois key switching at this level) and the row swap.
    Ciphertext r = a;
    ev.rotate_rows_inplace(r, 5, gk);
    ev.rotate_columns_inplace(r, gk);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t row = i / half, col = i % half;
      want[i] = x[(1 - row) * half + (col + 5) % half];
    }
    EXPECT_EQ(encoder.decode_batch(dec.decrypt(r)), want) << "rotation at " << limbs;
    // Serialization keeps the level.
    const Ciphertext back = ciphertext_from_bytes(ctx_, to_bytes(*ctx_, r), "test");
    EXPECT_EQ(back.limbs(), limbs);
    EXPECT_EQ(encoder.decode_batch(dec.decrypt(back)), want) << "serialized at " << limbs;
  }
}

TEST_P(BfvModSwitch, MisuseIsRefusedWithTheValues) {
  KeyGenerator keygen(ctx_, seed(5));
  Encoder encoder(ctx_);
  Encryptor enc(ctx_, keygen.make_public_key());
  Evaluator ev(ctx_);
  const std::vector<u64> x(ctx_->ring_dim(), 3);
  Ciphertext a = enc.encrypt(encoder.encode_batch(x));
  const Ciphertext top = a;
  ev.mod_switch_to_next_inplace(a);
  // Operands at different levels.
  Ciphertext s = a;
  try {
    ev.add_inplace(s, top);
    FAIL() << "add at two levels was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("different levels"), std::string::npos) << e.what();
  }
  // The HPS multiply runs at the top level only.
  try {
    (void)ev.multiply(a, a);
    FAIL() << "multiply below the top level was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("top level"), std::string::npos) << e.what();
  }
  // Below the last prime.
  ev.mod_switch_to_inplace(a, 1);
  EXPECT_THROW(ev.mod_switch_to_next_inplace(a), std::invalid_argument);
  EXPECT_THROW(ev.mod_switch_to_inplace(a, 2), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Params, BfvModSwitch, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hec::bfv
