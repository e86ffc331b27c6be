// Tests for math/poly.h and math/parallel.h: RNS polynomial arithmetic against per-limb
// reference arithmetic, NTT products against schoolbook products, lazy multiply-accumulate
// over more terms than one 128-bit run holds, limb dropping, validation messages, the thread
// cap and exception capture in parallel regions.
#include "math/poly.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "math/aligned.h"
#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"
#include "math/primes.h"
#include "math/sampling.h"

namespace hec::math {
namespace {

RnsPoly random_poly(const std::shared_ptr<const RnsContext>& ctx, std::size_t limbs,
                    std::mt19937_64& rng, PolyForm form = PolyForm::kCoefficient) {
  RnsPoly p(ctx, limbs, form);
  for (std::size_t i = 0; i < limbs; ++i) {
    for (std::size_t c = 0; c < p.ring_dim(); ++c) p.limb(i)[c] = rng() % p.modulus(i).value();
  }
  return p;
}

TEST(RnsPoly, LayoutIsAlignedAndLimbMajor) {
  const auto ctx = RnsContext::create(64, ntt_primes(50, 3, 64));
  RnsPoly p(ctx, 3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.data()) % 64, 0u);
  EXPECT_EQ(p.limb(2), p.data() + 128);
  EXPECT_EQ(p.form(), PolyForm::kCoefficient);
  for (std::size_t k = 0; k < 3 * 64; ++k) EXPECT_EQ(p.data()[k], 0u);
  EXPECT_THROW(RnsPoly(ctx, 4), std::invalid_argument);
  EXPECT_THROW(RnsPoly(ctx, 0), std::invalid_argument);
}

TEST(RnsPoly, AddSubNegateMatchReference) {
  std::mt19937_64 rng(31);
  const auto ctx = RnsContext::create(256, ntt_primes(60, 3, 256));
  const RnsPoly a = random_poly(ctx, 3, rng), b = random_poly(ctx, 3, rng);
  RnsPoly sum = a, diff = a, neg = a;
  add_inplace(sum, b);
  sub_inplace(diff, b);
  negate_inplace(neg);
  for (std::size_t i = 0; i < 3; ++i) {
    const u64 q = ctx->modulus(i).value();
    for (std::size_t c = 0; c < 256; ++c) {
      ASSERT_EQ(sum.limb(i)[c], (a.limb(i)[c] + b.limb(i)[c]) % q);
      ASSERT_EQ(diff.limb(i)[c], (a.limb(i)[c] + q - b.limb(i)[c]) % q);
      ASSERT_EQ(neg.limb(i)[c], (q - a.limb(i)[c]) % q);
    }
  }
}

TEST(RnsPoly, NttProductEqualsSchoolbookPerLimb) {
  std::mt19937_64 rng(32);
  const std::size_t n = 1024;
  const auto ctx = RnsContext::create(n, ntt_primes(55, 2, n));
  RnsPoly a = random_poly(ctx, 2, rng), b = random_poly(ctx, 2, rng);
  const RnsPoly a0 = a, b0 = b;
  to_ntt_inplace(a);
  to_ntt_inplace(b);
  EXPECT_EQ(a.form(), PolyForm::kEvaluation);
  multiply_inplace(a, b);
  from_ntt_inplace(a);
  for (std::size_t i = 0; i < 2; ++i) {
    const Modulus& m = ctx->modulus(i);
    for (std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{517}, n - 1}) {
      u64 expected = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t l = (k + n - j) % n;
        const u64 p = mul_mod(a0.limb(i)[j], b0.limb(i)[l], m);
        expected = j <= k ? add_mod(expected, p, m.value()) : sub_mod(expected, p, m.value());
      }
      ASSERT_EQ(a.limb(i)[k], expected) << "limb " << i << " k " << k;
    }
  }
}

TEST(RnsPoly, MultiplyAccumulateOverManyTermsEqualsRepeatedMultiplyAdd) {
  std::mt19937_64 rng(33);
  // 61-bit primes: one 128-bit run holds only 64 terms, so 150 terms fold twice.
  const auto ctx = RnsContext::create(512, ntt_primes(61, 2, 512));
  std::vector<RnsPoly> as, bs;
  for (int k = 0; k < 150; ++k) {
    as.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
    bs.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
  }
  std::vector<const RnsPoly*> pa, pb;
  RnsPoly expected(ctx, 2, PolyForm::kEvaluation);
  for (int k = 0; k < 150; ++k) {
    pa.push_back(&as[k]);
    pb.push_back(&bs[k]);
    multiply_add_inplace(expected, as[k], bs[k]);
  }
  RnsPoly out(ctx, 2, PolyForm::kEvaluation);
  multiply_accumulate(out, pa, pb);
  EXPECT_EQ(out, expected);
}

TEST(RnsPoly, ScalarMultiplyAndDropLimb) {
  std::mt19937_64 rng(34);
  const auto ctx = RnsContext::create(64, ntt_primes(40, 3, 64));
  RnsPoly a = random_poly(ctx, 3, rng);
  const RnsPoly a0 = a;
  const std::vector<u64> s = {3, 5, 7};
  multiply_scalar_inplace(a, s);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t c = 0; c < 64; ++c) {
      ASSERT_EQ(a.limb(i)[c], mul_mod(a0.limb(i)[c], s[i], ctx->modulus(i)));
    }
  }
  a.drop_last_limb();
  EXPECT_EQ(a.num_limbs(), 2u);
  a.drop_last_limb();
  EXPECT_THROW(a.drop_last_limb(), std::invalid_argument);
  EXPECT_THROW(multiply_scalar_inplace(a, s), std::invalid_argument);
}

TEST(RnsPoly, SetSignedWritesEveryLimb) {
  const auto ctx = RnsContext::create(16, std::vector<u64>{97, 193});
  RnsPoly p(ctx, 2, PolyForm::kEvaluation);
  std::vector<std::int64_t> v(16, 0);
  v[0] = -1;
  v[3] = 5;
  p.set_signed(v);
  EXPECT_EQ(p.form(), PolyForm::kCoefficient);
  EXPECT_EQ(p.limb(0)[0], 96u);
  EXPECT_EQ(p.limb(1)[0], 192u);
  EXPECT_EQ(p.limb(1)[3], 5u);
}

TEST(RnsPoly, ValidationNamesTheMismatch) {
  std::mt19937_64 rng(35);
  const auto ctx = RnsContext::create(64, ntt_primes(50, 3, 64));
  const auto other = RnsContext::create(64, ntt_primes(50, 3, 64));
  RnsPoly a = random_poly(ctx, 3, rng), b = random_poly(ctx, 2, rng);
  try {
    add_inplace(a, b);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("3 and 2 limbs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(add_inplace(a, RnsPoly(other, 3)), std::invalid_argument);
  EXPECT_THROW(multiply_inplace(a, RnsPoly(ctx, 3)), std::invalid_argument);  // coefficient form
  EXPECT_THROW(from_ntt_inplace(a), std::invalid_argument);
  EXPECT_THROW(RnsContext(64, std::vector<u64>{97}), std::invalid_argument);  // 97 != 1 mod 128
}

TEST(RnsPoly, IfmaAndPortablePointwiseKernelsAgreeBitForBit) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(36);
  // Up to 50 bits the IFMA kernels; 51 to 61 bits the 52-bit-column multiply kernels (52 and
  // 53 straddle the bound where operands get a high part).
  for (int bits : {17, 30, 45, 49, 50, 51, 52, 53, 55, 60, 61}) {
    const auto ctx = RnsContext::create(256, ntt_primes(bits, 2, 256));
    std::vector<RnsPoly> xs, ys;
    for (int k = 0; k < 40; ++k) {  // 40 terms: three 15-product chunks in the IFMA kernel
      xs.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
      ys.push_back(random_poly(ctx, 2, rng, PolyForm::kEvaluation));
    }
    // Extreme values too: q - 1 everywhere in the first operands.
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t c = 0; c < 256; ++c)
        xs[0].limb(i)[c] = ys[0].limb(i)[c] = ctx->modulus(i).value() - 1;
    }
    std::vector<const RnsPoly*> px, py;
    for (int k = 0; k < 40; ++k) {
      px.push_back(&xs[k]);
      py.push_back(&ys[k]);
    }
    auto run = [&](bool portable) {
      force_portable_path(portable);
      RnsPoly product = xs[0], fma = xs[1], acc(ctx, 2, PolyForm::kEvaluation);
      multiply_inplace(product, ys[0]);
      multiply_add_inplace(fma, xs[2], ys[2]);
      multiply_accumulate(acc, px, py);
      RnsPoly sum = xs[3], diff = xs[4], neg = xs[5];
      add_inplace(sum, ys[3]);
      sub_inplace(diff, ys[4]);
      RnsPoly neg_zero = xs[6];
      sub_inplace(neg_zero, xs[6]);  // zeros: negation must keep them
      negate_inplace(neg);
      negate_inplace(neg_zero);
      force_portable_path(false);
      return std::vector<RnsPoly>{product, fma, acc, sum, diff, neg, neg_zero};
    };
    const std::vector<RnsPoly> portable = run(true), ifma = run(false);
    for (int r = 0; r < 7; ++r) EXPECT_EQ(portable[r], ifma[r]) << "bits=" << bits << " op " << r;
    // And the portable results are right: spot-check against mul_mod.
    const Modulus& m = ctx->modulus(0);
    EXPECT_EQ(portable[0].limb(0)[7], mul_mod(xs[0].limb(0)[7], ys[0].limb(0)[7], m));
  }
}

// The 52-bit-column multiply-accumulate for moduli up to 2^61 against 128-bit scalar
// arithmetic: 300 terms (three column passes of at most 128), every operand q - 1 in one
// coefficient (the largest column sums), n not a multiple of 8, z aliasing an input.
TEST(RnsPoly, WideMultiplyAccumulateMatchesScalar) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(52);
  for (int bits : {36, 50, 51, 52, 53, 58, 61}) {
    const Modulus m(ntt_primes(bits, 1, 1024)[0]);
    const u64 q = m.value();
    constexpr std::size_t kTerms = 300, kN = 21;
    std::vector<std::vector<u64>> x(kTerms, std::vector<u64>(kN)), y = x;
    std::vector<const u64*> px, py;
    for (std::size_t k = 0; k < kTerms; ++k) {
      for (std::size_t t = 0; t < kN; ++t) {
        x[k][t] = t == 3 ? q - 1 : rng() % q;
        y[k][t] = t == 3 ? q - 1 : rng() % q;
      }
      px.push_back(x[k].data());
      py.push_back(y[k].data());
    }
    for (std::size_t terms :
         {std::size_t{1}, std::size_t{2}, std::size_t{128}, std::size_t{129}, kTerms}) {
      std::vector<u64> z(kN);
      detail::multiply_accumulate_wide(z.data(), px.data(), py.data(), terms, kN, q);
      for (std::size_t t = 0; t < kN; ++t) {
        u64 want = 0;
        for (std::size_t k = 0; k < terms; ++k) {
          want = add_mod(want, mul_mod(x[k][t], y[k][t], m), q);
        }
        ASSERT_EQ(z[t], want) << "bits=" << bits << " terms=" << terms << " t=" << t;
      }
    }
    std::vector<u64> z = x[0], fma = x[1];
    detail::multiply_accumulate_wide(z.data(), px.data(), py.data(), 2, kN, q);  // z is xs[0]
    detail::multiply_add_wide(fma.data(), x[2].data(), y[2].data(), kN, q);
    for (std::size_t t = 0; t < kN; ++t) {
      ASSERT_EQ(z[t], add_mod(mul_mod(x[0][t], y[0][t], m), mul_mod(x[1][t], y[1][t], m), q));
      ASSERT_EQ(fma[t], add_mod(x[1][t], mul_mod(x[2][t], y[2][t], m), q)) << "bits=" << bits;
    }
  }
}

// The wide-modulus AVX-512 kernels (3-operand add, rescale's subtract-and-scale) against the
// scalar formulas, for 30- to 61-bit primes and lengths that are not multiples of 8.
TEST(RnsPoly, WideModulusAvx512KernelsMatchScalar) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(23);
  for (int bits : {30, 35, 50, 51, 55, 60, 61}) {
    const u64 q = ntt_primes(bits, 1, 1024)[0];
    // Streaming-store path of the 3-operand add from 2^16 words on, at every misalignment.
    for (std::size_t offset = 0; offset < 8; offset += 3) {
      const std::size_t n = (std::size_t{1} << 16) + 5;
      std::vector<u64> x(n), y(n), z(n + offset);
      for (std::size_t t = 0; t < n; ++t) {
        x[t] = rng() % q;
        y[t] = rng() % q;
      }
      detail::add_avx512(z.data() + offset, x.data(), y.data(), n, q);
      for (std::size_t t = 0; t < n; ++t) {
        ASSERT_EQ(z[offset + t], (x[t] + y[t]) % q) << "bits=" << bits << " t=" << t;
      }
    }
    for (std::size_t n : {std::size_t{1}, std::size_t{13}, std::size_t{1024}}) {
      std::vector<u64> x(n), y(n);
      for (std::size_t t = 0; t < n; ++t) {
        x[t] = rng() % q;
        y[t] = rng() % q;
      }
      x[0] = q - 1;  // extremes
      y[0] = 0;
      const u64 w = rng() % q, ws = shoup_precompute(w, q);
      std::vector<u64> sum(n), scaled = x;
      detail::add_avx512(sum.data(), x.data(), y.data(), n, q);
      detail::sub_scale_avx512(scaled.data(), y.data(), n, w, ws, q);
      // Centred residues mod p (a prime with p <= 2q, above or below q) taken mod q.
      std::vector<u64> ps = {ntt_primes(bits, 2, 1024)[1]};
      if (bits <= 60) ps.push_back(ntt_primes_alternating(bits, 1, 1024)[0]);
      for (const u64 p : ps) {
        std::vector<u64> xp(n), centred(n);
        for (std::size_t t = 0; t < n; ++t) xp[t] = rng() % p;
        xp[0] = p - 1;
        if (n > 1) xp[1] = p / 2;
        if (n > 2) xp[2] = p / 2 + 1;
        detail::centre_reduce_avx512(centred.data(), xp.data(), n, q, p % q, p / 2);
        for (std::size_t t = 0; t < n; ++t) {
          const u64 r = xp[t] % q, pm = p % q;
          const u64 want = xp[t] > p / 2 ? (r + q - pm) % q : r;
          ASSERT_EQ(centred[t], want) << "bits=" << bits << " p=" << p << " t=" << t;
        }
      }
      // A wider p (60-bit special primes lifted to smaller chain primes, p / q < 2^51).
      for (const int pbits : {bits, 60, 61}) {
        const u64 p = ntt_primes(pbits, 1, 1024)[0];
        if (p / q >= (u64{1} << 51)) continue;
        std::vector<u64> xp(n), centred(n);
        for (std::size_t t = 0; t < n; ++t) xp[t] = rng() % p;
        xp[0] = p - 1;
        if (n > 1) xp[1] = p / 2;
        if (n > 2) xp[2] = p / 2 + 1;
        if (n > 3) xp[3] = q * (p / q);  // a multiple of q, and one below it
        if (n > 4) xp[4] = q * (p / q) - 1;
        detail::centre_reduce_wide_avx512(centred.data(), xp.data(), n, q, p % q, p / 2);
        for (std::size_t t = 0; t < n; ++t) {
          const u64 r = xp[t] % q, pm = p % q;
          const u64 want = xp[t] > p / 2 ? (r + q - pm) % q : r;
          ASSERT_EQ(centred[t], want) << "wide, bits=" << bits << " p=" << p << " t=" << t;
        }
      }
      for (std::size_t t = 0; t < n; ++t) {
        ASSERT_EQ(sum[t], (x[t] + y[t]) % q) << "bits=" << bits << " t=" << t;
        const u64 d = y[t] >= x[t] ? y[t] - x[t] : y[t] + q - x[t];
        ASSERT_EQ(scaled[t], static_cast<u64>(static_cast<u128>(d) * w % q))
            << "bits=" << bits << " t=" << t;
      }
    }
  }
}

// Products by a prepared operand and by a scalar (approximate Shoup quotient, results in
// [0, 4q) reduced twice), with and without streaming stores, against 128-bit arithmetic, for
// 30- to 61-bit primes and words at the extremes.
TEST(RnsPoly, ShoupProductKernelsMatchScalar) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(29);
  for (int bits : {30, 50, 51, 60, 61}) {
    const u64 q = ntt_primes(bits, 1, 1024)[0];
    for (std::size_t n : {std::size_t{13}, std::size_t{4096} + 3}) {
      std::vector<u64> x(n), w(n), ws(n);
      for (std::size_t t = 0; t < n; ++t) {
        x[t] = rng() % q;
        w[t] = rng() % q;
      }
      x[0] = q - 1;
      w[0] = q - 1;
      x[1 % n] = 0;
      for (std::size_t t = 0; t < n; ++t) ws[t] = shoup_precompute(w[t], q);
      AlignedU64Vector z(n), zs(n);  // 64-byte aligned: the streaming path runs
      detail::multiply_shoup_avx512(z.data(), x.data(), w.data(), ws.data(), n, q, false);
      detail::multiply_shoup_avx512(zs.data(), x.data(), w.data(), ws.data(), n, q, true);
      // The constants computed from w instead of read (ws null), streamed and not.
      AlignedU64Vector zc(n), zcs(n);
      detail::multiply_shoup_avx512(zc.data(), x.data(), w.data(), nullptr, n, q, false);
      detail::multiply_shoup_avx512(zcs.data(), x.data(), w.data(), nullptr, n, q, true);
      // Two operands by one w (BFV's two components), with the table and with computed
      // constants, streamed and not; the second operand is x reversed, and one pair of
      // outputs aliases its inputs.
      std::vector<u64> y(x.rbegin(), x.rend());
      AlignedU64Vector z0(n), z1(n), s0(n), s1(n), c0(n), c1(n);
      detail::multiply_shoup2_avx512(z0.data(), z1.data(), x.data(), y.data(), w.data(), ws.data(),
                                     n, q, false);
      detail::multiply_shoup2_avx512(s0.data(), s1.data(), x.data(), y.data(), w.data(), ws.data(),
                                     n, q, true);
      detail::multiply_shoup2_avx512(c0.data(), c1.data(), x.data(), y.data(), w.data(), nullptr, n,
                                     q, true);
      std::vector<u64> ax = x, ay = y;
      detail::multiply_shoup2_avx512(ax.data(), ay.data(), ax.data(), ay.data(), w.data(), nullptr,
                                     n, q, false);
      const u64 c = q - 2, cs = shoup_precompute(c, q);
      std::vector<u64> scaled = x;
      detail::multiply_scalar_avx512(scaled.data(), n, c, cs, q);
      for (std::size_t t = 0; t < n; ++t) {
        const u64 want = static_cast<u64>(static_cast<u128>(x[t]) * w[t] % q);
        ASSERT_EQ(z[t], want) << "bits=" << bits << " t=" << t;
        ASSERT_EQ(zs[t], want) << "streamed, bits=" << bits << " t=" << t;
        const u64 want_y = static_cast<u64>(static_cast<u128>(y[t]) * w[t] % q);
        ASSERT_EQ(z0[t], want) << "two operands, bits=" << bits << " t=" << t;
        ASSERT_EQ(z1[t], want_y) << "two operands, bits=" << bits << " t=" << t;
        ASSERT_EQ(s0[t], want) << "two operands streamed, bits=" << bits << " t=" << t;
        ASSERT_EQ(s1[t], want_y) << "two operands streamed, bits=" << bits << " t=" << t;
        ASSERT_EQ(zc[t], want) << "computed constants, bits=" << bits << " t=" << t;
        ASSERT_EQ(zcs[t], want) << "computed constants streamed, bits=" << bits << " t=" << t;
        ASSERT_EQ(c0[t], want) << "two operands computed, bits=" << bits << " t=" << t;
        ASSERT_EQ(c1[t], want_y) << "two operands computed, bits=" << bits << " t=" << t;
        ASSERT_EQ(ax[t], want) << "two operands in place, bits=" << bits << " t=" << t;
        ASSERT_EQ(ay[t], want_y) << "two operands in place, bits=" << bits << " t=" << t;
        ASSERT_EQ(scaled[t], static_cast<u64>(static_cast<u128>(x[t]) * c % q)) << bits;
      }
    }
  }
}

// The Shoup constants computed in registers (multiply_shoup_avx512 with no table): the
// estimate w k + mulhi_approx(w, f) is up to 4 below w 2^64 / q, which the range argument in
// poly_avx512.cpp absorbs; checked against 128-bit arithmetic for primes of 20 to 61 bits,
// words at the extremes (0, 1, q - 1, around q / 2) and random ones.
TEST(RnsPoly, ComputedShoupConstantsGiveExactProducts) {
  if (!cpu_has_avx512_ifma()) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
  std::mt19937_64 rng(48);
  for (int bits = 20; bits <= 61; bits += 1) {
    for (const u64 q : ntt_primes(bits, 2, 1024)) {
      const std::size_t n = 2048;
      AlignedU64Vector x(n), y(n), w(n), z0(n), z1(n);
      const u64 edge[] = {0, 1, 2, q / 2, q / 2 + 1, q - 2, q - 1};
      for (std::size_t t = 0; t < n; ++t) {
        x[t] = t < 49 ? edge[t % 7] : rng() % q;
        w[t] = t < 49 ? edge[t / 7] : rng() % q;
        y[t] = q - 1 - x[t];
      }
      detail::multiply_shoup2_avx512(z0.data(), z1.data(), x.data(), y.data(), w.data(), nullptr, n,
                                     q, (bits % 2) == 0);
      for (std::size_t t = 0; t < n; ++t) {
        ASSERT_EQ(z0[t], static_cast<u64>(static_cast<u128>(x[t]) * w[t] % q))
            << "q=" << q << " x=" << x[t] << " w=" << w[t];
        ASSERT_EQ(z1[t], static_cast<u64>(static_cast<u128>(y[t]) * w[t] % q))
            << "q=" << q << " y=" << y[t] << " w=" << w[t];
      }
    }
  }
}

TEST(Parallel, ThreadCapAndExceptionCapture) {
  const int before = thread_cap();
  EXPECT_GE(before, 1);
  set_thread_cap(2);
  EXPECT_EQ(thread_cap(), 2);
  EXPECT_THROW(set_thread_cap(0), std::invalid_argument);
  std::vector<int> hits(100, 0);
  parallel_for(100, [&](std::size_t i) { hits[i] += 1; });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_THROW(parallel_for(100,
                            [&](std::size_t i) {
                              if (i == 57) throw std::runtime_error("limb 57 failed");
                            }),
               std::runtime_error);
  set_thread_cap(before);
}

TEST(Parallel, ParsesHecThreads) {
  EXPECT_EQ(parse_thread_cap("3"), 3);
  EXPECT_GE(parse_thread_cap(nullptr), 1);
  EXPECT_GE(parse_thread_cap(""), 1);
  for (const char* bad : {"0", "-2", "two", "4x", "100000"}) {
    try {
      parse_thread_cap(bad);
      ADD_FAILURE() << "accepted HEC_THREADS=" << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("HEC_THREADS"), std::string::npos) << e.what();
    }
  }
}

// Child half of the re-execution test: passes only when run with the policy set.
TEST(Parallel, ReexecChildSeesPassivePolicy) {
  if (std::getenv("HEC_TEST_REEXEC_CHILD") == nullptr) GTEST_SKIP() << "run by the parent test";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  ASSERT_NE(policy, nullptr);
  EXPECT_STREQ(policy, "passive");
}

// Runs in the death-test child: clears the policy, then re-executes this test binary running
// only the child half above; that run's exit code is the verdict.
[[noreturn]] void reexec_into_child_check() {
  unsetenv("OMP_WAIT_POLICY");
  setenv("HEC_TEST_REEXEC_CHILD", "1", 1);
  std::string self = "hec_runtime_tests";
  std::string filter = "--gtest_filter=Parallel.ReexecChildSeesPassivePolicy";
  char* argv[] = {self.data(), filter.data(), nullptr};
  reexec_with_passive_openmp_wait(argv);
  std::exit(3);  // not re-executed
}

TEST(Parallel, ReexecSetsPassiveWaitPolicy) {
  EXPECT_EXIT(reexec_into_child_check(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace hec::math
