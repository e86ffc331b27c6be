// Tests for fhew/kernels.h: the AVX-512 kernels give bit-identical results to the portable
// ones on random inputs (skipped on CPUs without AVX-512 IFMA), the portable decomposition
// recomposes to the centred input, and the portable multiply-accumulate matches a direct
// computation with mul_mod.
#include "fhew/kernels.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "fhew/bootstrap.h"
#include "fhew/fhew.h"
#include "math/cpu_features.h"
#include "math/modarith.h"

namespace hec::fhew {
namespace {

struct Fixture {
  RingContext ring{Params::std128(BlindRotation::kGinx)};
  math::Prng prng{math::Seed{}, 5};
  std::vector<std::uint64_t> random_poly() {
    std::vector<std::uint64_t> v(ring.n());
    for (auto& x : v) x = prng.uniform_below(ring.q());
    return v;
  }
};

TEST(FhewKernels, DecompositionRecomposesToTheCentredValue) {
  Fixture f;
  const auto& rc = f.ring.constants();
  auto a = f.random_poly(), b = f.random_poly();
  a[0] = 0;
  a[1] = f.ring.q() - 1;
  a[2] = f.ring.q() / 2;
  a[3] = f.ring.q() / 2 + 1;
  std::vector<std::uint64_t> digits(2 * rc.gadget_digits * rc.n);
  kernels::portable::decompose(rc, a.data(), b.data(), digits.data());
  const std::int64_t q = static_cast<std::int64_t>(rc.q);
  for (int t = 0; t < 2; ++t) {
    const auto& x = t == 0 ? a : b;
    for (std::size_t j = 0; j < rc.n; ++j) {
      std::int64_t sum = 0;
      for (std::size_t l = 0; l < rc.gadget_digits; ++l) {
        std::int64_t d = static_cast<std::int64_t>(digits[(t * rc.gadget_digits + l) * rc.n + j]);
        if (d > q / 2) d -= q;
        if (l + 1 < rc.gadget_digits) {
          EXPECT_GE(d, -(1 << (rc.gadget_log_base - 1)));
          EXPECT_LT(d, 1 << (rc.gadget_log_base - 1));
        }
        sum += d << (rc.gadget_dropped_bits + rc.gadget_log_base * l);
      }
      std::int64_t centred = static_cast<std::int64_t>(x[j]);
      if (centred > q / 2) centred -= q;
      // Exact up to the rounded-away low bits: |x - sum| <= 2^(k-1).
      const std::int64_t half_drop =
          rc.gadget_dropped_bits == 0 ? 0 : std::int64_t{1} << (rc.gadget_dropped_bits - 1);
      ASSERT_LE(std::abs(sum - centred), half_drop) << "t " << t << " j " << j;
    }
  }
}

TEST(FhewKernels, MacMatchesDirectProducts) {
  Fixture f;
  const auto& rc = f.ring.constants();
  const std::size_t rows = 2 * rc.gadget_digits, n = rc.n;
  std::vector<std::uint64_t> digits;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto p = f.random_poly();
    digits.insert(digits.end(), p.begin(), p.end());
  }
  std::vector<std::uint32_t> row_major(rows * 2 * n), blocked(rows * 2 * n);
  for (auto& x : row_major) x = static_cast<std::uint32_t>(f.prng.uniform_below(rc.q));
  pack_rgsw(row_major.data(), rows, n, blocked.data());
  std::vector<std::uint32_t> back(rows * 2 * n);
  unpack_rgsw(blocked.data(), rows, n, back.data());
  ASSERT_EQ(back, row_major);
  const std::uint32_t* keys[1] = {blocked.data()};
  std::vector<std::uint64_t> out(2 * n);
  kernels::portable::mac(rc, digits.data(), keys, 1, out.data());
  for (std::size_t t = 0; t < 2; ++t) {
    for (std::size_t j = 0; j < n; ++j) {
      std::uint64_t expect = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        expect = math::add_mod(
            expect,
            math::mul_mod(digits[r * n + j], row_major[(r * 2 + t) * n + j], f.ring.modulus()),
            rc.q);
      }
      ASSERT_EQ(out[t * n + j], expect) << "t " << t << " j " << j;
    }
  }
}

// add_shifted_difference is acc + X^c p - p in Z_Q[X]/(X^N + 1): X^c x^i = x^(i+c), with
// x^N = -1, written out coefficient by coefficient.
TEST(FhewKernels, ShiftedDifferenceIsTheNegacyclicProduct) {
  Fixture f;
  const auto& rc = f.ring.constants();
  const std::size_t n = rc.n;
  const std::uint64_t q = rc.q;
  for (std::size_t c : {std::size_t{0}, std::size_t{3}, std::size_t{511}, std::size_t{1024},
                        std::size_t{1500}, std::size_t{2047}}) {
    const auto p = f.random_poly(), acc = f.random_poly();
    std::vector<std::uint64_t> want(acc);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t e = (i + c) % (2 * n);
      const std::uint64_t v = e < n ? p[i] : (q - p[i]) % q;
      want[e % n] = (want[e % n] + v) % q;
      want[i] = (want[i] + q - p[i]) % q;
    }
    auto got = acc;
    kernels::portable::add_shifted_difference(rc, c, p.data(), got.data());
    ASSERT_EQ(got, want) << "c " << c;
  }
}

// mac3_monomial_sum is sum_k P_k * NTT(X^(e_k) - 1), slot by slot, with P_k the three keys'
// multiply-accumulates: checked against mac and the forward NTT of X^e - 1 written out in
// coefficients (e >= N wraps to -X^(e - N)).
TEST(FhewKernels, MonomialSumIsTheProductWithTheTransformedMonomials) {
  Fixture f;
  const auto& rc = f.ring.constants();
  const std::size_t n = rc.n, rows = 2 * rc.gadget_digits;
  const std::uint64_t q = rc.q;
  const std::size_t exponents[3] = {1500, 0, 77};
  std::vector<std::uint64_t> digits(rows * n);
  for (auto& x : digits) x = f.prng.uniform_below(q);
  std::vector<std::vector<std::uint32_t>> k(3, std::vector<std::uint32_t>(rows * 2 * n));
  for (auto& key : k)
    for (auto& x : key) x = static_cast<std::uint32_t>(f.prng.uniform_below(q));
  const std::uint32_t* keys[3] = {k[0].data(), k[1].data(), k[2].data()};
  std::vector<std::uint64_t> prod(6 * n);
  kernels::portable::mac(rc, digits.data(), keys, 3, prod.data());
  std::vector<std::uint64_t> want(2 * n, 0);
  for (std::size_t t = 0; t < 3; ++t) {
    std::vector<std::uint64_t> mono(n, 0);
    const std::size_t e = exponents[t];
    mono[e % n] = e < n ? 1 : q - 1;
    mono[0] = (mono[0] + q - 1) % q;
    math::ntt_forward_inplace(mono.data(), f.ring.ntt());
    for (std::size_t j = 0; j < 2 * n; ++j) {
      const std::uint64_t p = math::mul_mod(prod[2 * t * n + j], mono[j % n], f.ring.modulus());
      want[j] = (want[j] + p) % q;
    }
  }
  std::vector<std::uint64_t> got(2 * n);
  kernels::portable::mac3_monomial_sum(rc, digits.data(), keys, f.ring.psi_powers().data(),
                                       f.ring.odd_exponents().data(), exponents, got.data());
  EXPECT_EQ(got, want);
}

TEST(FhewKernels, Avx512MatchesPortable) {
  if (!math::cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  Fixture f;
  const auto& rc = f.ring.constants();
  const std::size_t rows = 2 * rc.gadget_digits, n = rc.n;
  const auto a = f.random_poly(), b = f.random_poly();
  std::vector<std::uint64_t> d1(rows * n), d2(rows * n);
  kernels::portable::decompose(rc, a.data(), b.data(), d1.data());
  kernels::avx512::decompose(rc, a.data(), b.data(), d2.data());
  ASSERT_EQ(d1, d2);
  std::vector<std::uint32_t> k0(rows * 2 * n), k1(rows * 2 * n);
  for (auto& x : k0) x = static_cast<std::uint32_t>(f.prng.uniform_below(rc.q));
  for (auto& x : k1) x = static_cast<std::uint32_t>(f.prng.uniform_below(rc.q));
  const std::uint32_t* keys[2] = {k0.data(), k1.data()};
  for (std::size_t count : {1, 2}) {
    std::vector<std::uint64_t> o1(2 * count * n), o2(2 * count * n);
    kernels::portable::mac(rc, d1.data(), keys, count, o1.data());
    kernels::avx512::mac(rc, d1.data(), keys, count, o2.data());
    ASSERT_EQ(o1, o2) << count << " keys";
  }
  for (std::size_t c : {std::size_t{1}, std::size_t{5}, std::size_t{1023}, std::size_t{2047}}) {
    auto pa = f.random_poly(), pb = f.random_poly(), ma = f.random_poly(), mb = f.random_poly();
    auto qa = pa, qb = pb;
    kernels::portable::monomial_combine(rc, f.ring.psi_powers().data(),
                                        f.ring.odd_exponents().data(), c, pa.data(), pb.data(),
                                        ma.data(), mb.data());
    kernels::avx512::monomial_combine(rc, f.ring.psi_powers().data(), f.ring.odd_exponents().data(),
                                      c, qa.data(), qb.data(), ma.data(), mb.data());
    ASSERT_EQ(pa, qa) << "c " << c;
    ASSERT_EQ(pb, qb) << "c " << c;
  }
  // The fused three-key multiply-accumulate and monomial sum, exponents on and off 0 and N.
  for (const std::size_t e0 :
       {std::size_t{0}, std::size_t{3}, std::size_t{1024}, std::size_t{2047}}) {
    std::vector<std::uint32_t> k2(rows * 2 * n);
    for (auto& x : k2) x = static_cast<std::uint32_t>(f.prng.uniform_below(rc.q));
    const std::uint32_t* three[3] = {k0.data(), k1.data(), k2.data()};
    const std::size_t exponents[3] = {e0, 1500, 77};
    std::vector<std::uint64_t> fused_p(2 * n), fused_v(2 * n);
    kernels::portable::mac3_monomial_sum(rc, d1.data(), three, f.ring.psi_powers().data(),
                                         f.ring.odd_exponents().data(), exponents, fused_p.data());
    kernels::avx512::mac3_monomial_sum(rc, d1.data(), three, f.ring.psi_powers().data(),
                                       f.ring.odd_exponents().data(), exponents, fused_v.data());
    ASSERT_EQ(fused_p, fused_v) << "e0 " << e0;
  }
  // acc += (X^c - 1) p for shifts on and off the 8-lane grid, both halves of [0, 2N), and
  // zero coefficients in p (whose negation is 0, not Q).
  for (std::size_t c :
       {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{13}, std::size_t{1023},
        std::size_t{1024}, std::size_t{1031}, std::size_t{2047}}) {
    auto p = f.random_poly(), acc = f.random_poly();
    for (std::size_t j = 0; j < n; j += 7) p[j] = 0;
    auto acc2 = acc;
    kernels::portable::add_shifted_difference(rc, c, p.data(), acc.data());
    kernels::avx512::add_shifted_difference(rc, c, p.data(), acc2.data());
    ASSERT_EQ(acc, acc2) << "c " << c;
  }
  // Key-switching rows of 557 words (not a multiple of 32: exercises the masked tail).
  const std::size_t row_len = 557;
  std::vector<std::uint16_t> table(64 * row_len);
  for (auto& x : table) x = static_cast<std::uint16_t>(f.prng.next_u64());
  std::vector<std::uint32_t> ks_rows;
  for (int k = 0; k < 40; ++k)
    ks_rows.push_back(static_cast<std::uint32_t>(f.prng.uniform_below(64)));
  std::vector<std::uint16_t> acc1(row_len, 7), acc2(row_len, 7);
  kernels::portable::subtract_rows_u16(acc1.data(), table.data(), row_len, ks_rows.data(),
                                       ks_rows.size());
  kernels::avx512::subtract_rows_u16(acc2.data(), table.data(), row_len, ks_rows.data(),
                                     ks_rows.size());
  ASSERT_EQ(acc1, acc2);
}

TEST(FhewKernels, PortablePathBootstrapsCorrectly) {
  const Params p = Params::toy_insecure(BlindRotation::kGinx);
  const Context ctx(p);
  const SecretKey sk = ctx.keygen_secret();
  const EvalKey ek = ctx.keygen_eval(sk);
  math::force_portable_path(true);
  bool ok = true;
  for (int x = 0; x < 2; ++x) {
    for (int y = 0; y < 2; ++y) {
      const Ciphertext out = ctx.eval(ek, Gate::kNand, ctx.encrypt(sk, x), ctx.encrypt(sk, y));
      ok = ok && ctx.decrypt(sk, out) == !(x && y);
    }
  }
  math::force_portable_path(false);
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace hec::fhew
