// AVX-512 kernels of the negacyclic NTT (see ntt.h): eight Harvey butterflies per instruction
// sequence, lazy corrections by unsigned minimum (min(x, x - 2q)). Two multiplier variants
// share the layer code (template parameter `Wide`):
//  - moduli q < 2^50: Shoup multiplication in 52-bit limbs with vpmadd52luq/vpmadd52huq
//    (Boemer et al., "Intel HEXL", WAHC 2021, §4), values in [0, 4q) < 2^52 between layers;
//  - moduli 2^50 <= q < 2^61: Shoup multiplication with beta = 2^64 (avx512_mul64.h: high
//    words from vpmuludq partial products, low words by vpmullq); values in [0, 4q) < 2^63
//    between layers.
// The layers with butterfly distance t >= 8 work on whole registers; the layers with t = 4, 2,
// 1 gather the X and Y halves of two registers with vpermt2q, run the butterflies, and
// scatter back. This file is compiled with ${HEC_AVX512_FLAGS} and only entered after
// run-time detection (cpu_features.h).
// GCC 12 warns that _mm512_min_epu64 passes an undefined pass-through vector; it is unused.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "math/avx512_mul64.h"
#include "math/ntt_kernels.h"

namespace hec::math::detail {
namespace {

struct Consts {
  __m512i q, two_q, neg_q52, mask52;
  explicit Consts(u64 modulus)
      : q(_mm512_set1_epi64(static_cast<long long>(modulus))),
        two_q(_mm512_set1_epi64(static_cast<long long>(2 * modulus))),
        neg_q52(_mm512_set1_epi64(static_cast<long long>((u64{1} << 52) - modulus))),
        mask52(_mm512_set1_epi64(static_cast<long long>((u64{1} << 52) - 1))) {}
};

// y * w mod q in [0, 2q) for y < 2^52, w < q, wp = floor(w * 2^52 / q): Shoup with beta = 2^52.
inline __m512i mul_shoup52_lazy(__m512i y, __m512i w, __m512i wp, const Consts& c) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i quotient = _mm512_madd52hi_epu64(zero, y, wp);
  __m512i r = _mm512_madd52lo_epu64(zero, y, w);
  r = _mm512_madd52lo_epu64(r, quotient, c.neg_q52);  // + lo52(-quotient * q)
  return _mm512_and_si512(r, c.mask52);
}

// y * w mod q in [0, 2q) for y < 2^63, w < q < 2^61, wp = floor(w * 2^64 / q): Shoup with
// beta = 2^64 and a quotient estimate that skips the low 32x32 partial product and the middle
// column's carries, hence one vpmuludq and six other instructions fewer than
// mulhi64_avx512. The middle column is below 3 * 2^32, so the estimate is the exact
// floor(y wp / 2^64) minus 0, 1 or 2, and y w - estimate * q lies in [0, 2q + 2q) (the exact
// quotient leaves [0, 2q)) below 2^63: one conditional subtraction of 2q restores [0, 2q).
// The butterflies' ranges, and every output, are unchanged.
inline __m512i mul_shoup64_ntt(__m512i y, __m512i w, __m512i wp, const Consts& c) {
  const __m512i y_hi = _mm512_srli_epi64(y, 32), wp_hi = _mm512_srli_epi64(wp, 32);
  const __m512i lohi = _mm512_mul_epu32(y, wp_hi);
  const __m512i hilo = _mm512_mul_epu32(y_hi, wp);
  const __m512i hihi = _mm512_mul_epu32(y_hi, wp_hi);
  const __m512i quotient = _mm512_add_epi64(
      hihi, _mm512_add_epi64(_mm512_srli_epi64(lohi, 32), _mm512_srli_epi64(hilo, 32)));
  const __m512i r = _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(quotient, c.q));
  return _mm512_min_epu64(r, _mm512_sub_epi64(r, c.two_q));
}

template <bool Wide>
inline __m512i mul_shoup(__m512i y, __m512i w, __m512i wp, const Consts& c) {
  if constexpr (Wide) {
    return mul_shoup64_ntt(y, w, wp, c);
  } else {
    return mul_shoup52_lazy(y, w, wp, c);
  }
}

// x in [0, 2k) -> [0, k) for k = q or 2q.
inline __m512i reduce_once(__m512i x, __m512i k) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, k));
}

// Forward (Cooley-Tukey) Harvey butterfly: x, y in [0, 4q) -> [0, 4q).
template <bool Wide>
inline void forward_butterfly(__m512i& x, __m512i& y, __m512i w, __m512i wp, const Consts& c) {
  const __m512i xr = reduce_once(x, c.two_q);
  const __m512i v = mul_shoup<Wide>(y, w, wp, c);
  x = _mm512_add_epi64(xr, v);
  y = _mm512_add_epi64(_mm512_sub_epi64(xr, v), c.two_q);
}

// Inverse (Gentleman-Sande) Harvey butterfly: x, y in [0, 2q) -> [0, 2q).
template <bool Wide>
inline void inverse_butterfly(__m512i& x, __m512i& y, __m512i w, __m512i wp, const Consts& c) {
  const __m512i s = _mm512_add_epi64(x, y);
  const __m512i d = _mm512_add_epi64(_mm512_sub_epi64(x, y), c.two_q);
  x = reduce_once(s, c.two_q);
  y = mul_shoup<Wide>(d, w, wp, c);
}

// Lane permutations for a 16-element block held in two registers (v0 = elements 0..7,
// v1 = elements 8..15): gather[X|Y] collects the X (resp. Y) operands of the 8 butterflies
// with distance t, scatter[0|1] puts X, Y back into v0, v1.
struct Shuffle {
  __m512i gather_x, gather_y, scatter_0, scatter_1;
};

Shuffle make_shuffle(int t) {
  alignas(64) long long gx[8], gy[8], s0[8], s1[8];
  // Butterfly l (0..7) pairs elements e and e + t with e = 2t * (l / t) + l % t.
  for (int l = 0; l < 8; ++l) {
    const int e = 2 * t * (l / t) + l % t;
    gx[l] = e;
    gy[l] = e + t;
  }
  // Element e of the block: index into the concatenation (X lanes 0..7, Y lanes 8..15).
  long long where[16];
  for (int l = 0; l < 8; ++l) {
    where[gx[l]] = l;
    where[gy[l]] = 8 + l;
  }
  for (int e = 0; e < 8; ++e) {
    s0[e] = where[e];
    s1[e] = where[8 + e];
  }
  return {_mm512_load_si512(gx), _mm512_load_si512(gy), _mm512_load_si512(s0),
          _mm512_load_si512(s1)};
}

const Shuffle& shuffle_for(int t) {
  static const Shuffle s4 = make_shuffle(4), s2 = make_shuffle(2), s1 = make_shuffle(1);
  return t == 4 ? s4 : (t == 2 ? s2 : s1);
}

// One forward layer with distance t in {4, 2, 1} over the whole array; lane twiddles come
// from w / wp (8 per 16-element block). With `final_reduce` the outputs go to [0, q).
template <bool Wide, bool final_reduce>
void forward_small_layer(u64* a, std::size_t n, int t, const u64* w, const u64* wp,
                         const Consts& c) {
  const Shuffle& s = shuffle_for(t);
  for (std::size_t b = 0; b < n / 16; ++b) {
    u64* p = a + 16 * b;
    const __m512i v0 = _mm512_loadu_si512(p);
    const __m512i v1 = _mm512_loadu_si512(p + 8);
    __m512i x = _mm512_permutex2var_epi64(v0, s.gather_x, v1);
    __m512i y = _mm512_permutex2var_epi64(v0, s.gather_y, v1);
    forward_butterfly<Wide>(x, y, _mm512_loadu_si512(w + 8 * b), _mm512_loadu_si512(wp + 8 * b), c);
    if constexpr (final_reduce) {
      x = reduce_once(reduce_once(x, c.two_q), c.q);
      y = reduce_once(reduce_once(y, c.two_q), c.q);
    }
    _mm512_storeu_si512(p, _mm512_permutex2var_epi64(x, s.scatter_0, y));
    _mm512_storeu_si512(p + 8, _mm512_permutex2var_epi64(x, s.scatter_1, y));
  }
}

template <bool Wide>
void inverse_small_layer(u64* a, std::size_t n, int t, const u64* w, const u64* wp,
                         const Consts& c) {
  const Shuffle& s = shuffle_for(t);
  for (std::size_t b = 0; b < n / 16; ++b) {
    u64* p = a + 16 * b;
    const __m512i v0 = _mm512_loadu_si512(p);
    const __m512i v1 = _mm512_loadu_si512(p + 8);
    __m512i x = _mm512_permutex2var_epi64(v0, s.gather_x, v1);
    __m512i y = _mm512_permutex2var_epi64(v0, s.gather_y, v1);
    inverse_butterfly<Wide>(x, y, _mm512_loadu_si512(w + 8 * b), _mm512_loadu_si512(wp + 8 * b), c);
    _mm512_storeu_si512(p, _mm512_permutex2var_epi64(x, s.scatter_0, y));
    _mm512_storeu_si512(p + 8, _mm512_permutex2var_epi64(x, s.scatter_1, y));
  }
}

template <bool Wide, bool final_reduce>
void forward_avx512(u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const Consts c(tables.modulus().value());
  const u64* w = tables.forward_twiddles();
  const NttTables::IfmaTables& it = tables.ifma();
  const u64* wp = Wide ? tables.forward_twiddles_shoup() : it.fwd_shoup52.data();
  // Layers with t >= 8: group i has twiddle index m + i and spans [2it, 2it + 2t).
  std::size_t t = n;
  for (std::size_t m = 1; t > 8; m <<= 1) {
    t >>= 1;
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i wi = _mm512_set1_epi64(static_cast<long long>(w[m + i]));
      const __m512i wpi = _mm512_set1_epi64(static_cast<long long>(wp[m + i]));
      u64* x = a + 2 * i * t;
      u64* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i xv = _mm512_loadu_si512(x + j);
        __m512i yv = _mm512_loadu_si512(y + j);
        forward_butterfly<Wide>(xv, yv, wi, wpi, c);
        _mm512_storeu_si512(x + j, xv);
        _mm512_storeu_si512(y + j, yv);
      }
    }
  }
  forward_small_layer<Wide, false>(a, n, 4, it.fwd_t4.data(), it.fwd_t4_shoup52.data(), c);
  forward_small_layer<Wide, false>(a, n, 2, it.fwd_t2.data(), it.fwd_t2_shoup52.data(), c);
  forward_small_layer<Wide, final_reduce>(a, n, 1, w + n / 2, wp + n / 2, c);
}

template <bool Wide, bool final_reduce>
void inverse_avx512(u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const Consts c(tables.modulus().value());
  const u64* w = tables.inverse_twiddles();
  const NttTables::IfmaTables& it = tables.ifma();
  const u64* wp = Wide ? tables.inverse_twiddles_shoup() : it.inv_shoup52.data();
  inverse_small_layer<Wide>(a, n, 1, w + n / 2, wp + n / 2, c);
  inverse_small_layer<Wide>(a, n, 2, it.inv_t2.data(), it.inv_t2_shoup52.data(), c);
  inverse_small_layer<Wide>(a, n, 4, it.inv_t4.data(), it.inv_t4_shoup52.data(), c);
  // Layers with 8 <= t <= N/4: h = N/(2t) groups, twiddle index h + i.
  for (std::size_t t = 8; t <= n / 4; t <<= 1) {
    const std::size_t h = n / (2 * t);
    for (std::size_t i = 0; i < h; ++i) {
      const __m512i wi = _mm512_set1_epi64(static_cast<long long>(w[h + i]));
      const __m512i wpi = _mm512_set1_epi64(static_cast<long long>(wp[h + i]));
      u64* x = a + 2 * i * t;
      u64* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i xv = _mm512_loadu_si512(x + j);
        __m512i yv = _mm512_loadu_si512(y + j);
        inverse_butterfly<Wide>(xv, yv, wi, wpi, c);
        _mm512_storeu_si512(x + j, xv);
        _mm512_storeu_si512(y + j, yv);
      }
    }
  }
  // Last layer (t = N/2) with 1/N folded in.
  const __m512i ni = _mm512_set1_epi64(static_cast<long long>(tables.n_inverse()));
  const __m512i nip =
      _mm512_set1_epi64(static_cast<long long>(Wide ? tables.n_inverse_shoup() : it.n_inv_shoup52));
  const __m512i wl = _mm512_set1_epi64(static_cast<long long>(tables.last_twiddle_scaled()));
  const __m512i wlp = _mm512_set1_epi64(static_cast<long long>(
      Wide ? tables.last_twiddle_scaled_shoup() : it.last_twiddle_scaled_shoup52));
  u64* x = a;
  u64* y = a + n / 2;
  for (std::size_t j = 0; j < n / 2; j += 8) {
    const __m512i xv = _mm512_loadu_si512(x + j);
    const __m512i yv = _mm512_loadu_si512(y + j);
    const __m512i s = _mm512_add_epi64(xv, yv);
    const __m512i d = _mm512_add_epi64(_mm512_sub_epi64(xv, yv), c.two_q);
    __m512i xo = mul_shoup<Wide>(s, ni, nip, c);
    __m512i yo = mul_shoup<Wide>(d, wl, wlp, c);
    if constexpr (final_reduce) {
      xo = reduce_once(xo, c.q);
      yo = reduce_once(yo, c.q);
    }
    _mm512_storeu_si512(x + j, xo);
    _mm512_storeu_si512(y + j, yo);
  }
}

}  // namespace

// Each entry point picks the multiplier by the tables' Shoup width (ntt.cpp builds the
// lane tables with beta = 2^52 for q < 2^50, 2^64 otherwise).
void ntt_forward_lazy_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? forward_avx512<false, false>(a, tables)
                        : forward_avx512<true, false>(a, tables);
}
void ntt_forward_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? forward_avx512<false, true>(a, tables)
                        : forward_avx512<true, true>(a, tables);
}
void ntt_inverse_lazy_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? inverse_avx512<false, false>(a, tables)
                        : inverse_avx512<true, false>(a, tables);
}
void ntt_inverse_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? inverse_avx512<false, true>(a, tables)
                        : inverse_avx512<true, true>(a, tables);
}

}  // namespace hec::math::detail
