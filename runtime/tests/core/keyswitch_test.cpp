// core/keyswitch: the ModDown is the exact rounding round(acc / P) (regression: BFV's used the
// fast conversion, which is off by u in [0, |P|)), and ModUp lifts a digit centred when P does
// not exceed it by the margin. Checked against 128-bit integer arithmetic on a key whose
// product is known: a_j = 0, b_j = 1 (the constant polynomial, all ones in NTT form) on every
// limb, so acc_0 = sum_j [c]_{digit j} coefficient-wise and out_0 must be round(acc_0 / P),
// out_1 = 0. Both kernel paths; digits of two 30-bit primes, P of two 31-bit primes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/keyswitch.h"
#include "math/cpu_features.h"
#include "math/ntt.h"
#include "math/primes.h"
#include "math/sampling.h"

namespace hec::core {
namespace {

using math::u128;
__extension__ typedef __int128 i128;

// The centred value of x mod q0 q1 from its two residues (|value| < q0 q1 / 2).
i128 centred_crt(u64 r0, u64 r1, u64 q0, u64 q1) {
  // x = r0 + q0 * ((r1 - r0) q0^{-1} mod q1)
  const math::Modulus m1(q1);
  const u64 inv = math::inverse_mod(q0 % q1, q1);
  const u64 k = math::mul_mod(math::sub_mod(r1 % q1, r0 % q1, q1), inv, m1);
  const i128 big = static_cast<i128>(q0) * q1;
  i128 x = static_cast<i128>(r0) + static_cast<i128>(q0) * k;
  if (x > big / 2) x -= big;
  return x;
}

// round(a / b) for b > 0, halves away from zero (ties cannot occur: P is odd).
i128 round_div(i128 a, i128 b) { return a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b); }

u64 mod(i128 x, u64 q) {
  const i128 r = x % static_cast<i128>(q);
  return static_cast<u64>(r < 0 ? r + static_cast<i128>(q) : r);
}

// Restores the default kernel path when a check returns (also on a failed ASSERT).
struct PathGuard {
  explicit PathGuard(bool portable) { math::force_portable_path(portable); }
  ~PathGuard() { math::force_portable_path(false); }
};

void check_exact_mod_down(bool portable) {
  const PathGuard guard(portable);
  constexpr std::size_t n = 64;
  const std::vector<u64> chain = math::ntt_primes(30, 4, n, {});
  std::vector<u64> used = chain;
  const std::vector<u64> special = math::ntt_primes(31, 2, n, used);
  std::vector<math::Modulus> moduli;
  std::vector<math::NttTables> tables;
  for (u64 q : chain) moduli.emplace_back(q);
  for (u64 p : special) moduli.emplace_back(p);
  tables.reserve(moduli.size());
  for (const auto& m : moduli) tables.emplace_back(n, m);
  std::vector<const math::NttTables*> ntt;
  for (const auto& t : tables) ntt.push_back(&t);
  const HybridKeySwitch ks(n, moduli, ntt, chain.size(), {{0, 2}, {2, 4}}, {2, 4});
  for (const std::size_t limbs : {std::size_t{4}, std::size_t{2}}) {
    // The key: 4 chain limbs + P in its layout, b = all ones, a = zero (NTT form).
    const std::size_t key_words = (chain.size() + special.size()) * n;
    std::vector<u64> b(key_words, 1), a(key_words, 0);
    KeyView view;
    view.key_limbs = chain.size();
    view.b = {b.data(), b.data()};
    view.a = {a.data(), a.data()};
    math::Prng prng;
    std::vector<u64> c_coef(limbs * n);
    for (std::size_t i = 0; i < limbs; ++i) {
      for (std::size_t t = 0; t < n; ++t) c_coef[i * n + t] = prng.uniform_below(chain[i]);
    }
    const ModUpDigits ext = ks.mod_up(nullptr, c_coef.data(), limbs);
    std::vector<u64> out0(limbs * n, 7), out1(limbs * n, 7);
    ks.key_product_mod_down(ext, view, nullptr, out0.data(), out1.data());
    for (std::size_t i = 0; i < limbs; ++i) {
      math::ntt_inverse_inplace(out0.data() + i * n, tables[i]);
      math::ntt_inverse_inplace(out1.data() + i * n, tables[i]);
    }
    const i128 p = static_cast<i128>(special[0]) * special[1];
    for (std::size_t t = 0; t < n; ++t) {
      i128 acc = 0;
      for (std::size_t d = 0; d < limbs / 2; ++d) {
        acc += centred_crt(c_coef[2 * d * n + t], c_coef[(2 * d + 1) * n + t], chain[2 * d],
                           chain[2 * d + 1]);
      }
      const i128 want = round_div(acc, p);
      for (std::size_t i = 0; i < limbs; ++i) {
        ASSERT_EQ(out0[i * n + t], mod(want, chain[i]))
            << "coefficient " << t << " limb " << i << " at " << limbs << " limbs ("
            << (portable ? "portable" : "default") << " path)";
        ASSERT_EQ(out1[i * n + t], 0u);
      }
    }
  }
}

TEST(HybridKeySwitch, ModDownIsTheExactRoundingAndModUpIsCentred) {
  check_exact_mod_down(false);
  check_exact_mod_down(true);
}

TEST(HybridKeySwitch, RefusesKeysWithFewerPrimesOrDigitsAndBadDigits) {
  constexpr std::size_t n = 64;
  const std::vector<u64> chain = math::ntt_primes(30, 2, n, {});
  std::vector<math::Modulus> moduli(chain.begin(), chain.end());
  std::vector<math::NttTables> tables;
  tables.reserve(moduli.size());
  for (const auto& m : moduli) tables.emplace_back(n, m);
  std::vector<const math::NttTables*> ntt{&tables[0], &tables[1]};
  EXPECT_THROW(HybridKeySwitch(n, moduli, ntt, 2, {{0, 1}}, {2}), std::invalid_argument);
  EXPECT_THROW(HybridKeySwitch(n, moduli, ntt, 2, {{0, 1}, {2, 2}}, {2}), std::invalid_argument);
  const HybridKeySwitch ks(n, moduli, ntt, 2, {{0, 1}, {1, 2}}, {2});
  std::vector<u64> c(2 * n, 1), out0(2 * n), out1(2 * n);
  const ModUpDigits ext = ks.mod_up(c.data(), nullptr, 2);
  std::vector<u64> key(2 * n, 0);
  KeyView short_key;
  short_key.key_limbs = 1;  // fewer primes than the ciphertext
  short_key.b = {key.data(), key.data()};
  short_key.a = {key.data(), key.data()};
  EXPECT_THROW(ks.key_product_mod_down(ext, short_key, nullptr, out0.data(), out1.data()),
               std::invalid_argument);
  KeyView one_digit;
  one_digit.key_limbs = 2;
  one_digit.b = {key.data()};
  one_digit.a = {key.data()};
  EXPECT_THROW(ks.key_product_mod_down(ext, one_digit, nullptr, out0.data(), out1.data()),
               std::invalid_argument);
  EXPECT_THROW((void)ks.mod_up(c.data(), nullptr, 1), std::invalid_argument);  // no tables
}

// Released digits go back to the pool and the next ModUp of the same size takes them (no
// fresh pages per key switch), with every word rewritten: the second ModUp of another input
// equals a ModUp into fresh memory.
TEST(HybridKeySwitch, ModUpReusesReleasedDigitsAndRewritesThem) {
  constexpr std::size_t n = 64;
  const std::vector<u64> chain = math::ntt_primes(30, 4, n, {});
  const std::vector<u64> special = math::ntt_primes(31, 2, n, chain);
  std::vector<math::Modulus> moduli(chain.begin(), chain.end());
  for (u64 p : special) moduli.emplace_back(p);
  std::vector<math::NttTables> tables;
  tables.reserve(moduli.size());
  for (const auto& m : moduli) tables.emplace_back(n, m);
  std::vector<const math::NttTables*> ntt;
  for (const auto& t : tables) ntt.push_back(&t);
  const HybridKeySwitch ks(n, moduli, ntt, 4, {{0, 2}, {2, 4}}, {4});
  std::vector<u64> a(4 * n), b(4 * n);
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t t = 0; t < n; ++t) {
      a[i * n + t] = (t * 7 + i) % chain[i];
      b[i * n + t] = (t * t + 3 * i + 1) % chain[i];
    }
  }
  std::vector<const u64*> released;
  std::vector<std::vector<u64>> want;
  {
    const ModUpDigits first = ks.mod_up(nullptr, a.data(), 4);
    for (const auto& d : first.digits) released.push_back(d.data());
  }
  {
    // Held while the next ModUp runs: it cannot take these buffers.
    const ModUpDigits held = ks.mod_up(nullptr, b.data(), 4);
    for (const auto& d : held.digits) want.emplace_back(d.data(), d.data() + 6 * n);
    const ModUpDigits again = ks.mod_up(nullptr, b.data(), 4);
    for (std::size_t j = 0; j < again.digits.size(); ++j) {
      EXPECT_EQ(std::vector<u64>(again.digits[j].data(), again.digits[j].data() + 6 * n), want[j]);
    }
  }
  const ModUpDigits reused = ks.mod_up(nullptr, b.data(), 4);
  bool any = false;
  for (const auto& d : reused.digits) {
    any |= std::find(released.begin(), released.end(), d.data()) != released.end();
  }
  EXPECT_TRUE(any) << "no released digit buffer was taken again";
  for (std::size_t j = 0; j < reused.digits.size(); ++j) {
    EXPECT_EQ(std::vector<u64>(reused.digits[j].data(), reused.digits[j].data() + 6 * n), want[j]);
  }
}

}  // namespace
}  // namespace hec::core
