// AVX-512 IFMA kernel of fast base conversion (rns.h; Bajard et al. SAC 2016 §2.2, HPS
// CT-RSA 2019 §2.2) for moduli below 2^50, eight coefficients per register:
//  y_i = x_i (Q/q_i)^{-1} by 52-bit Shoup multiplication (Boemer et al., WAHC 2021, §4);
//  sum_i y_i (Q/q_i mod p_j) accumulated as separate low and high 52-bit halves with
//  vpmadd52luq / vpmadd52huq, folded every 15 terms as H * (2^52 mod p) + L;
//  the exact form subtracts v (Q mod p) with v = floor(sum_i y_i / q_i + 1/2) computed with
//  the same double operations, in the same order, as the portable code.
// convert_block_wide does the same for moduli up to 2^61: y_i by a 64-bit Shoup product, the
// sums in three 52-bit IFMA columns (avx512_mul64.h) reduced once per output.
// Every output is fully reduced, so results equal the portable path's bit for bit.
// GCC 12 warns that _mm512_min_epu64 passes an undefined pass-through vector; it is unused.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "math/avx512_mul64.h"
#include "math/rns_kernels.h"

namespace hec::math::detail {
namespace {

const __m512i kMask52 = _mm512_set1_epi64((1LL << 52) - 1);

inline __m512i set1(u64 v) { return _mm512_set1_epi64(static_cast<long long>(v)); }

// x * w mod p in [0, 2p) for x < 2^52, w < p < 2^50, wp = floor(w 2^52 / p).
inline __m512i mul_shoup52_lazy(__m512i x, __m512i w, __m512i wp, __m512i neg_p52) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i quotient = _mm512_madd52hi_epu64(zero, x, wp);
  __m512i r = _mm512_madd52lo_epu64(zero, x, w);
  r = _mm512_madd52lo_epu64(r, quotient, neg_p52);
  return _mm512_and_si512(r, kMask52);
}

inline __m512i reduce_once(__m512i x, __m512i p) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, p));
}

}  // namespace

void convert_block_ifma(const ConvertTables& t, bool exact, const u64* in, u64* out, std::size_t n,
                        std::size_t start, std::size_t len) {
  const std::size_t k = t.k, l = t.l;
  alignas(64) u64 y[64 * kConvertBlock];
  alignas(64) u64 v[kConvertBlock];
  const std::size_t vectors = (len + 7) / 8;
  const __mmask8 tail = static_cast<__mmask8>(len % 8 == 0 ? 0xFF : (1u << (len % 8)) - 1);
  auto mask_of = [&](std::size_t vec) -> __mmask8 { return vec + 1 == vectors ? tail : 0xFF; };
  // Step (1): y_i in [0, q_i).
  for (std::size_t i = 0; i < k; ++i) {
    const __m512i q = set1(t.from_q[i]), w = set1(t.hat_inv[i]), wp = set1(t.hat_inv_shoup52[i]);
    const __m512i neg_q = set1((u64{1} << 52) - t.from_q[i]);
    const u64* x = in + i * n + start;
    u64* yi = y + i * kConvertBlock;
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      const __m512i xv = _mm512_maskz_loadu_epi64(mask_of(vec), x + 8 * vec);
      _mm512_store_si512(yi + 8 * vec, reduce_once(mul_shoup52_lazy(xv, w, wp, neg_q), q));
    }
  }
  // Step (2): v = floor(sum_i y_i * (1/q_i) + 1/2), multiply then add (no fused rounding).
  if (exact) {
    const __m512d half = _mm512_set1_pd(0.5);
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      __m512d s = _mm512_setzero_pd();
      for (std::size_t i = 0; i < k; ++i) {
        const __m512d yd = _mm512_cvtepu64_pd(_mm512_load_si512(y + i * kConvertBlock + 8 * vec));
        s = _mm512_add_pd(s, _mm512_mul_pd(yd, _mm512_set1_pd(t.q_inv[i])));
      }
      _mm512_store_si512(v + 8 * vec, _mm512_cvttpd_epu64(_mm512_add_pd(s, half)));
    }
  }
  // Step (3): per target limb, chunks of up to 15 products, folded and summed mod p.
  for (std::size_t j = 0; j < l; ++j) {
    const u64 pj = t.to_p[j];
    const __m512i p = set1(pj), neg_p = set1((u64{1} << 52) - pj);
    const __m512i r = set1(t.two52_mod_p[j]), rp = set1(t.two52_mod_p_shoup52[j]);
    const __m512i one = set1(1), one_p = set1(t.one_shoup52[j]);
    const u64* hat = &t.q_hat_mod_p[j * k];
    u64* oj = out + j * n + start;
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      __m512i total = _mm512_setzero_si512();
      for (std::size_t i0 = 0; i0 < k; i0 += kIfmaConvertChunk) {
        const std::size_t i1 = std::min(k, i0 + kIfmaConvertChunk);
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        for (std::size_t i = i0; i < i1; ++i) {
          const __m512i yv = _mm512_load_si512(y + i * kConvertBlock + 8 * vec);
          const __m512i h = set1(hat[i]);
          lo = _mm512_madd52lo_epu64(lo, yv, h);
          hi = _mm512_madd52hi_epu64(hi, yv, h);
        }
        // sum = H 2^52 + L with H = hi + (lo >> 52) < 2^52 and L = lo mod 2^52.
        const __m512i big = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));
        const __m512i low = _mm512_and_si512(lo, kMask52);
        __m512i part = _mm512_add_epi64(mul_shoup52_lazy(big, r, rp, neg_p),
                                        mul_shoup52_lazy(low, one, one_p, neg_p));  // [0, 4p)
        part = reduce_once(reduce_once(part, _mm512_add_epi64(p, p)), p);
        total = reduce_once(_mm512_add_epi64(total, part), p);
      }
      if (exact) {
        const __m512i vv = _mm512_load_si512(v + 8 * vec);
        const __m512i correction = reduce_once(
            mul_shoup52_lazy(vv, set1(t.q_mod_p[j]), set1(t.q_mod_p_shoup52[j]), neg_p), p);
        total = reduce_once(_mm512_add_epi64(_mm512_sub_epi64(total, correction), p), p);
      }
      _mm512_mask_storeu_epi64(oj + 8 * vec, mask_of(vec), total);
    }
  }
}

}  // namespace hec::math::detail

namespace hec::math::detail {
namespace {

// Block scratch of the wide kernel: low and high parts of y (k rows of kConvertBlock each),
// the double sums and v of the exact form.
struct WideScratch {
  std::vector<u64> y_lo, y_hi;
  alignas(64) double s[kConvertBlock];
  alignas(64) u64 v[kConvertBlock];
};
thread_local WideScratch tl_wide;

// Adds y h for one source limb to the columns, h = c + 2^52 d (d = 0 unless p >= 2^52) and
// g = 2^52 h mod p = e + 2^52 f; y = a + 2^52 b. Narrow: a < 2^43, so a d < 2^52 and its
// high half (the top column's only term) is zero.
template <bool PWide, bool Narrow>
inline void accumulate_term(__m512i& col1, __m512i& col52, __m512i& col104, __m512i a,
                            const __m512i* b, const u64* h4) {
  const __m512i c = set1(h4[0]);
  col1 = _mm512_madd52lo_epu64(col1, a, c);
  col52 = _mm512_madd52hi_epu64(col52, a, c);
  if constexpr (PWide) {
    const __m512i d = set1(h4[1]);
    col52 = _mm512_madd52lo_epu64(col52, a, d);
    if constexpr (!Narrow) col104 = _mm512_madd52hi_epu64(col104, a, d);
  }
  if (b != nullptr) {
    const __m512i e = set1(h4[2]);
    col1 = _mm512_madd52lo_epu64(col1, *b, e);
    col52 = _mm512_madd52hi_epu64(col52, *b, e);
    if constexpr (PWide) col52 = _mm512_madd52lo_epu64(col52, *b, set1(h4[3]));  // b f < 2^18
  }
}

template <bool PWide, bool Narrow>
void convert_target_wide(const WideConvertTables& t, bool exact, std::size_t j, u64* oj,
                         std::size_t len) {
  const std::size_t k = t.k;
  const Columns52 reducer(Columns52::Scalars{t.to_p[j], t.r52[j], t.r52_shoup[j], t.r104[j],
                                             t.r104_shoup[j], t.one_shoup[j]});
  const std::size_t vectors = (len + 7) / 8;
  const __mmask8 tail = static_cast<__mmask8>(len % 8 == 0 ? 0xFF : (1u << (len % 8)) - 1);
  const u64* y_lo = tl_wide.y_lo.data();
  const u64* y_hi = tl_wide.y_hi.data();
  const __m512i neg_vq =
      t.neg_vq.empty() ? _mm512_setzero_si512() : _mm512_loadu_si512(t.neg_vq.data() + 8 * j);
  for (std::size_t vec = 0; vec < vectors; ++vec) {
    __m512i col1 = _mm512_setzero_si512(), col52 = col1, col104 = col1;
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t at = j * k + i;
      const u64 h4[4] = {t.hat_lo[at], t.hat_hi[at], t.hat52_lo[at], t.hat52_hi[at]};
      const __m512i a = _mm512_loadu_si512(y_lo + i * kConvertBlock + 8 * vec);
      if (t.from_wide[i]) {
        const __m512i b = _mm512_loadu_si512(y_hi + i * kConvertBlock + 8 * vec);
        accumulate_term<PWide, Narrow>(col1, col52, col104, a, &b, h4);
      } else {
        accumulate_term<PWide, Narrow>(col1, col52, col104, a, nullptr, h4);
      }
    }
    if (exact && !t.neg_vq.empty()) {
      // - v Q mod p looked up per lane (v <= k < 8): a value below p < 2^61 added to the low
      // column, which stays below 2^62.
      col1 = _mm512_add_epi64(
          col1, _mm512_permutexvar_epi64(_mm512_load_si512(tl_wide.v + 8 * vec), neg_vq));
    } else if (exact) {
      // - v Q = v ((-Q) mod p) with v <= k < 2^7: one more term without a high part.
      const u64 h4[4] = {t.neg_q_lo[j], t.neg_q_hi[j], 0, 0};
      accumulate_term<PWide, Narrow>(col1, col52, col104, _mm512_load_si512(tl_wide.v + 8 * vec),
                                     nullptr, h4);
    }
    _mm512_mask_storeu_epi64(
        oj + 8 * vec, vec + 1 == vectors ? tail : 0xFF,
        PWide && !Narrow ? reducer.reduce(col1, col52, col104) : reducer.reduce(col1, col52));
  }
}

}  // namespace

void convert_block_wide(const WideConvertTables& t, bool exact, const u64* in,
                        u64* const* out_limbs, std::size_t n, std::size_t start, std::size_t len) {
  const std::size_t k = t.k, l = t.l;
  WideScratch& w = tl_wide;
  if (w.y_lo.size() < k * kConvertBlock) {
    w.y_lo.resize(k * kConvertBlock);
    w.y_hi.resize(k * kConvertBlock);
  }
  const std::size_t vectors = (len + 7) / 8;
  const __mmask8 tail = static_cast<__mmask8>(len % 8 == 0 ? 0xFF : (1u << (len % 8)) - 1);
  auto mask_of = [&](std::size_t vec) -> __mmask8 { return vec + 1 == vectors ? tail : 0xFF; };
  // Step (1): y_i = x_i (Q/q_i)^{-1} mod q_i in [0, q_i), split at 2^52; Step (2) (exact):
  // s += y_i * (1/q_i) in the portable code's order (multiply, then add; no fused rounding).
  const __m512i mask52 = set1((u64{1} << 52) - 1);
  if (exact) {
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      _mm512_store_pd(w.s + 8 * vec, _mm512_setzero_pd());
    }
  }
  for (std::size_t i = 0; i < k; ++i) {
    const __m512i q = set1(t.from_q[i]), wv = set1(t.hat_inv[i]), wp = set1(t.hat_inv_shoup[i]);
    const __m512d inv = _mm512_set1_pd(t.q_inv[i]);
    const u64* x = in + i * n + start;
    u64* lo = w.y_lo.data() + i * kConvertBlock;
    u64* hi = w.y_hi.data() + i * kConvertBlock;
    const bool wide = t.from_wide[i] != 0;
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      const __m512i xv = _mm512_maskz_loadu_epi64(mask_of(vec), x + 8 * vec);
      const __m512i y = reduce_once(mul_shoup64_lazy_avx512(xv, wv, wp, q), q);
      _mm512_storeu_si512(lo + 8 * vec, _mm512_and_si512(y, mask52));
      if (wide) _mm512_storeu_si512(hi + 8 * vec, _mm512_srli_epi64(y, 52));
      if (exact) {
        const __m512d s = _mm512_load_pd(w.s + 8 * vec);
        _mm512_store_pd(w.s + 8 * vec, _mm512_add_pd(s, _mm512_mul_pd(_mm512_cvtepu64_pd(y), inv)));
      }
    }
  }
  if (exact) {
    const __m512d half = _mm512_set1_pd(0.5);
    for (std::size_t vec = 0; vec < vectors; ++vec) {
      _mm512_store_si512(w.v + 8 * vec,
                         _mm512_cvttpd_epu64(_mm512_add_pd(_mm512_load_pd(w.s + 8 * vec), half)));
    }
  }
  // Step (3): per target limb, the columns of sum_i y_i (Q/q_i) - v Q, reduced once.
  for (std::size_t j = 0; j < l; ++j) {
    u64* oj = out_limbs[j] + start;
    if (t.to_p[j] < (u64{1} << 52)) {
      convert_target_wide<false, false>(t, exact, j, oj, len);
    } else if (t.narrow) {
      convert_target_wide<true, true>(t, exact, j, oj, len);
    } else {
      convert_target_wide<true, false>(t, exact, j, oj, len);
    }
  }
}

}  // namespace hec::math::detail
