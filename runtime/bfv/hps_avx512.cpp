// AVX-512 kernel of the HPS multiply scaling (hps_kernels.h), eight coefficients per register:
//  (a) per Q limb: quo_i, rem_i of x_i r_i = quo_i q_i + rem_i by a 64-bit Shoup product
//      (avx512_mul64.h), quo summed in 64 bits, rem_i / q_i summed in double precision with
//      the portable loop's operations in its order (multiply, then add; no fused rounding);
//  (b) per P_mult limb: the sum x_p beta + sum_i x_i a_ji + base in 52-bit IFMA columns
//      (x_i = lo + 2^52 hi, hi < 2^9, with 2^52 a_ji mod p_j precomputed so no product has two
//      high parts), reduced once by Columns52.
// The output is fully reduced, so it equals the portable loop's Barrett reduction of the
// 128-bit sum bit for bit.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "bfv/hps_kernels.h"
#include "math/avx512_mul64.h"

namespace hec::bfv::detail {
namespace {

// Coefficients per call (the caller's block), and the largest k the block buffers hold.
constexpr std::size_t kMaxBlock = 128, kMaxLimbs = 15;

inline __m512i set1(u64 v) { return _mm512_set1_epi64(static_cast<long long>(v)); }

}  // namespace

void scale_round_to_p_mult_avx512(const ScaleToPMultTables& t, const u64* x_q, const u64* x_p,
                                  u64* out_p, std::size_t n, std::size_t c0, std::size_t len) {
  const std::size_t k = t.k, l = t.l;
  // x_i of the block split at 2^52, and the integer part base (one buffer each: the block's
  // limbs N words apart would share cache sets).
  alignas(64) u64 x_lo[kMaxLimbs * kMaxBlock], x_hi[kMaxLimbs * kMaxBlock];
  alignas(64) u64 base[kMaxBlock];
  const std::size_t vectors = (len + 7) / 8;
  const __mmask8 tail = static_cast<__mmask8>(len % 8 == 0 ? 0xFF : (1u << (len % 8)) - 1);
  auto mask_of = [&](std::size_t vec) -> __mmask8 { return vec + 1 == vectors ? tail : 0xFF; };
  const __m512i mask52 = set1((u64{1} << 52) - 1), one = set1(1);
  // (a) base = sum_i quo_i + round(sum_i rem_i / q_i).
  for (std::size_t vec = 0; vec < vectors; ++vec) {
    __m512i sum = _mm512_setzero_si512();
    __m512d frac = _mm512_setzero_pd();
    for (std::size_t i = 0; i < k; ++i) {
      const __m512i q = set1(t.q[i]);
      const __m512i x = _mm512_maskz_loadu_epi64(mask_of(vec), x_q + i * n + c0 + 8 * vec);
      __m512i quo = math::detail::mulhi64_avx512(x, set1(t.r_shoup[i]));
      __m512i rem =
          _mm512_sub_epi64(_mm512_mullo_epi64(x, set1(t.r[i])), _mm512_mullo_epi64(quo, q));
      const __mmask8 fix = _mm512_cmpge_epu64_mask(rem, q);
      rem = _mm512_mask_sub_epi64(rem, fix, rem, q);
      quo = _mm512_mask_add_epi64(quo, fix, quo, one);
      sum = _mm512_add_epi64(sum, quo);
      frac =
          _mm512_add_pd(frac, _mm512_mul_pd(_mm512_cvtepu64_pd(rem), _mm512_set1_pd(t.inv_q[i])));
      _mm512_store_si512(x_lo + i * kMaxBlock + 8 * vec, _mm512_and_si512(x, mask52));
      _mm512_store_si512(x_hi + i * kMaxBlock + 8 * vec, _mm512_srli_epi64(x, 52));
    }
    const __m512i rnd = _mm512_cvttpd_epu64(_mm512_add_pd(frac, _mm512_set1_pd(0.5)));
    _mm512_store_si512(base + 8 * vec, _mm512_add_epi64(sum, rnd));
  }
  // (b) per target prime, the columns of base + x_p beta + sum_i x_i a_ji.
  for (std::size_t j = 0; j < l; ++j) {
    const math::detail::Columns52 reducer(math::detail::Columns52::scalars(t.p[j]));
    const u64* a = t.a + j * k;
    const u64* a52 = t.a52 + j * k;
    const __m512i beta = set1(t.beta[j]);
    const u64* xp = x_p + j * n + c0;
    u64* op = out_p + j * n + c0;
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      const __m512i b = _mm512_load_si512(base + 8 * vec);
      __m512i col1 = _mm512_and_si512(b, mask52), col52 = _mm512_srli_epi64(b, 52);
      const __m512i xpv = _mm512_maskz_loadu_epi64(mask_of(vec), xp + 8 * vec);
      col1 = _mm512_madd52lo_epu64(col1, xpv, beta);
      col52 = _mm512_madd52hi_epu64(col52, xpv, beta);
      for (std::size_t i = 0; i < k; ++i) {
        const __m512i lo = _mm512_load_si512(x_lo + i * kMaxBlock + 8 * vec);
        const __m512i hi = _mm512_load_si512(x_hi + i * kMaxBlock + 8 * vec);
        const __m512i ai = set1(a[i]), a52i = set1(a52[i]);
        col1 = _mm512_madd52lo_epu64(col1, lo, ai);
        col52 = _mm512_madd52hi_epu64(col52, lo, ai);
        col1 = _mm512_madd52lo_epu64(col1, hi, a52i);
        col52 = _mm512_madd52hi_epu64(col52, hi, a52i);
      }
      _mm512_mask_storeu_epi64(op + 8 * vec, mask_of(vec), reducer.reduce(col1, col52));
    }
  }
}

}  // namespace hec::bfv::detail
