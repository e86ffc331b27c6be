// Multi-exponentiation against separate exponentiations, for the Straus and Pippenger paths,
// zero and repeated exponents, and the window choice.
#include <gtest/gtest.h>

#include "labhe/multiexp.h"

namespace hec::labhe {
namespace {

Int naive(const ModRing& ring, const std::vector<Int>& g, const std::vector<Int>& e) {
  Int acc(1);
  for (std::size_t i = 0; i < g.size(); ++i) ring.mul(acc, acc, ring.pow(g[i], e[i]));
  return acc;
}

void check(std::size_t n, std::size_t bits) {
  Int m = random_exact_bits(1024);
  mpz_setbit(m.get(), 0);
  ModRing ring(m);
  std::vector<Int> g(n), e(n);
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = random_below(m);
    e[i] = random_exact_bits(bits);
    if (i % 7 == 3) e[i] = Int(0);
    if (i % 11 == 5) e[i] = Int(1);
  }
  std::vector<const Int*> gp, ep;
  for (std::size_t i = 0; i < n; ++i) {
    gp.push_back(&g[i]);
    ep.push_back(&e[i]);
  }
  EXPECT_EQ(multiexp(ring, gp, ep), naive(ring, g, e)) << "n=" << n << " bits=" << bits;
}

TEST(Multiexp, MatchesSeparateExponentiations) {
  check(0, 8);
  check(1, 64);
  check(2, 70);
  check(8, 33);
  check(9, 64);
  check(300, 96);
  check(1500, 65);
}

TEST(Multiexp, WindowGrowsWithBases) {
  EXPECT_LE(pippenger_window(16, 64), pippenger_window(1 << 20, 64));
  EXPECT_GE(pippenger_window(1 << 20, 64), 10u);
}

TEST(Montgomery, ProductsMatchGmp) {
  for (std::size_t bits : {64u, 1024u, 2048u, 3072u}) {
    Int m = random_exact_bits(bits);
    mpz_setbit(m.get(), 0);
    const Montgomery mont(m);
    ModRing ring(m);
    const std::size_t s = mont.limbs();
    std::vector<mp_limb_t> a(s), b(s), out(s), scratch(2 * s);
    Int top = m;
    mpz_sub_ui(top.get(), top.get(), 1);
    for (int trial = 0; trial < 50; ++trial) {
      Int x = trial == 0 ? top : random_below(m), y = trial == 1 ? Int(0) : random_below(m);
      if (trial == 2) y = top;
      mont.to(a.data(), x);
      mont.to(b.data(), y);
      EXPECT_EQ(mont.from(a.data()), x);
      mont.mul(out.data(), a.data(), b.data(), scratch.data());
      Int want;
      ring.mul(want, x, y);
      EXPECT_EQ(mont.from(out.data()), want) << bits << " bits, trial " << trial;
      mont.sqr(out.data(), a.data(), scratch.data());
      ring.mul(want, x, x);
      EXPECT_EQ(mont.from(out.data()), want);
      // Raw (unconverted) values: the product of k of them times R^(k-1).
      mont.load(a.data(), x);
      mont.load(b.data(), y);
      mont.mul(out.data(), a.data(), b.data(), scratch.data());
      mont.mul(out.data(), out.data(), a.data(), scratch.data());
      ring.mul(want, x, y);
      ring.mul(want, want, x);
      EXPECT_EQ(mont.unscale(out.data(), 3), want);
    }
    mont.one(a.data());
    EXPECT_EQ(mont.from(a.data()), Int(1));
  }
}

TEST(Montgomery, RefusesEvenModuliAndValuesOutOfRange) {
  EXPECT_THROW(Montgomery(Int(100)), std::invalid_argument);
  const Montgomery mont(Int(101));
  std::vector<mp_limb_t> out(mont.limbs());
  EXPECT_THROW(mont.load(out.data(), Int(101)), std::invalid_argument);
  EXPECT_THROW(mont.load(out.data(), Int(-1)), std::invalid_argument);
}

TEST(Multiexp, RefusesNegativeExponents) {
  ModRing ring(Int(101));
  Int g(3), e(-1);
  EXPECT_THROW(multiexp(ring, {&g}, {&e}), std::invalid_argument);
}

}  // namespace
}  // namespace hec::labhe
