// AVX-512 (F, DQ, VL) versions of the blind-rotation kernels (contracts in kernels.h), eight
// 64-bit lanes per instruction. Products use vpmuludq (both factors below 2^32). Sums below
// 2^57 are reduced by folding the high 32 bits (x = h 2^32 + l -> h (2^32 mod Q) + l < 2^53)
// and a double-precision quotient estimate, exact up to +-1, then two min-based corrections.
#include <immintrin.h>

#include "fhew/kernels.h"

namespace hec::fhew::kernels::avx512 {

using u64 = std::uint64_t;

namespace {

struct VecConstants {
  __m512i q, two32, low32;
  __m512d q_inverse;
  explicit VecConstants(const RingConstants& rc)
      : q(_mm512_set1_epi64(static_cast<long long>(rc.q))),
        two32(_mm512_set1_epi64(static_cast<long long>(rc.two32_mod_q))),
        low32(_mm512_set1_epi64(0xffffffffLL)),
        q_inverse(_mm512_set1_pd(rc.q_inverse)) {}
};

// x < 2^57 -> x mod Q in [0, Q).
inline __m512i reduce(__m512i x, const VecConstants& k) {
  const __m512i y = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), k.two32),
                                     _mm512_and_si512(x, k.low32));  // < 2^53, = x mod Q
  const __m512d quotient = _mm512_mul_pd(_mm512_cvtepu64_pd(y), k.q_inverse);
  const __m512i qt = _mm512_cvttpd_epu64(quotient);
  __m512i r = _mm512_sub_epi64(y, _mm512_mullo_epi64(qt, k.q));  // in (-Q, 2Q)
  r = _mm512_min_epu64(r, _mm512_add_epi64(r, k.q));
  r = _mm512_min_epu64(r, _mm512_sub_epi64(r, k.q));
  return r;
}

inline __m512i load_u32(const std::uint32_t* p) {
  return _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

}  // namespace

void decompose(const RingConstants& rc, const u64* a, const u64* b, u64* digits) {
  const std::size_t n = rc.n, dg = rc.gadget_digits;
  const unsigned log_b = rc.gadget_log_base;
  const __m512i q = _mm512_set1_epi64(static_cast<long long>(rc.q));
  const __m512i q_half = _mm512_set1_epi64(static_cast<long long>(rc.q / 2));
  const __m512i mask = _mm512_set1_epi64((1LL << log_b) - 1);
  const __m512i half = _mm512_set1_epi64(1LL << (log_b - 1));
  const __m512i base = _mm512_set1_epi64(1LL << log_b);
  const __m512i zero = _mm512_setzero_si512();
  const unsigned drop = rc.gadget_dropped_bits;
  const __m512i round_half = _mm512_set1_epi64(drop == 0 ? 0 : 1LL << (drop - 1));
  const u64* polys[2] = {a, b};
  for (std::size_t t = 0; t < 2; ++t) {
    u64* out = digits + t * dg * n;
    for (std::size_t j = 0; j < n; j += 8) {
      __m512i v = _mm512_loadu_si512(polys[t] + j);
      v = _mm512_mask_sub_epi64(v, _mm512_cmpgt_epi64_mask(v, q_half), v, q);  // centred
      v = _mm512_srai_epi64(_mm512_add_epi64(v, round_half), drop);
      for (std::size_t l = 0; l + 1 < dg; ++l) {
        __m512i d = _mm512_and_si512(v, mask);
        d = _mm512_mask_sub_epi64(d, _mm512_cmpge_epi64_mask(d, half), d, base);
        v = _mm512_srai_epi64(_mm512_sub_epi64(v, d), log_b);
        d = _mm512_mask_add_epi64(d, _mm512_cmplt_epi64_mask(d, zero), d, q);
        _mm512_storeu_si512(out + l * n + j, d);
      }
      v = _mm512_mask_add_epi64(v, _mm512_cmplt_epi64_mask(v, zero), v, q);
      _mm512_storeu_si512(out + (dg - 1) * n + j, v);
    }
  }
}

void mac(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
         std::size_t key_count, u64* out) {
  const std::size_t n = rc.n, rows = 2 * static_cast<std::size_t>(rc.gadget_digits);
  const VecConstants k(rc);
  std::size_t key = 0;
  // Two keys at a time (GINX: BK+ and BK-): each digit vector is loaded once for both.
  for (; key + 2 <= key_count; key += 2) {
    const std::uint32_t* k0 = keys[key];
    const std::uint32_t* k1 = keys[key + 1];
    u64* o = out + 2 * key * n;
    for (std::size_t j = 0; j < n; j += 8) {
      __m512i a0 = _mm512_setzero_si512(), b0 = a0, a1 = a0, b1 = a0;
      const std::uint32_t* blk0 = k0 + j * rows * 2;  // (j / 8) * rows * 2 * 8
      const std::uint32_t* blk1 = k1 + j * rows * 2;
      _mm_prefetch(reinterpret_cast<const char*>(blk0 + 4 * rows * 2 * 8), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(blk1 + 4 * rows * 2 * 8), _MM_HINT_T0);
      for (std::size_t r = 0; r < rows; ++r) {
        const __m512i d = _mm512_loadu_si512(digits + r * n + j);
        a0 = _mm512_add_epi64(a0, _mm512_mul_epu32(d, load_u32(blk0 + r * 16)));
        b0 = _mm512_add_epi64(b0, _mm512_mul_epu32(d, load_u32(blk0 + r * 16 + 8)));
        a1 = _mm512_add_epi64(a1, _mm512_mul_epu32(d, load_u32(blk1 + r * 16)));
        b1 = _mm512_add_epi64(b1, _mm512_mul_epu32(d, load_u32(blk1 + r * 16 + 8)));
      }
      _mm512_storeu_si512(o + j, reduce(a0, k));
      _mm512_storeu_si512(o + n + j, reduce(b0, k));
      _mm512_storeu_si512(o + 2 * n + j, reduce(a1, k));
      _mm512_storeu_si512(o + 3 * n + j, reduce(b1, k));
    }
  }
  for (; key < key_count; ++key) {
    const std::uint32_t* k0 = keys[key];
    u64* o = out + 2 * key * n;
    for (std::size_t j = 0; j < n; j += 8) {
      __m512i a0 = _mm512_setzero_si512(), b0 = a0;
      const std::uint32_t* blk0 = k0 + j * rows * 2;
      _mm_prefetch(reinterpret_cast<const char*>(blk0 + 4 * rows * 2 * 8), _MM_HINT_T0);
      for (std::size_t r = 0; r < rows; ++r) {
        const __m512i d = _mm512_loadu_si512(digits + r * n + j);
        a0 = _mm512_add_epi64(a0, _mm512_mul_epu32(d, load_u32(blk0 + r * 16)));
        b0 = _mm512_add_epi64(b0, _mm512_mul_epu32(d, load_u32(blk0 + r * 16 + 8)));
      }
      _mm512_storeu_si512(o + j, reduce(a0, k));
      _mm512_storeu_si512(o + n + j, reduce(b0, k));
    }
  }
}

void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, u64* pa, u64* pb, const u64* ma,
                      const u64* mb) {
  const std::size_t n = rc.n;
  const VecConstants k(rc);
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(2 * n - 1));
  const __m256i cp = _mm256_set1_epi32(static_cast<int>(c));
  const __m256i cm = _mm256_set1_epi32(static_cast<int>((2 * n - c) & (2 * n - 1)));
  const __m512i q_minus_1 = _mm512_set1_epi64(static_cast<long long>(rc.q - 1));
  for (std::size_t j = 0; j < n; j += 8) {
    const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + j));
    // Exponents c * odd_j mod 2N (32-bit products: c, odd_j < 2N <= 2^13).
    const __m256i ep = _mm256_and_si256(_mm256_mullo_epi32(o, cp), mask);
    const __m256i em = _mm256_and_si256(_mm256_mullo_epi32(o, cm), mask);
    const __m512i plus = _mm512_add_epi64(
        _mm512_cvtepu32_epi64(_mm256_i32gather_epi32(reinterpret_cast<const int*>(psi_pow), ep, 4)),
        q_minus_1);  // psi^e - 1 + Q in [0, 2Q)
    const __m512i minus = _mm512_add_epi64(
        _mm512_cvtepu32_epi64(_mm256_i32gather_epi32(reinterpret_cast<const int*>(psi_pow), em, 4)),
        q_minus_1);
    const __m512i xa = _mm512_add_epi64(_mm512_mul_epu32(_mm512_loadu_si512(pa + j), plus),
                                        _mm512_mul_epu32(_mm512_loadu_si512(ma + j), minus));
    const __m512i xb = _mm512_add_epi64(_mm512_mul_epu32(_mm512_loadu_si512(pb + j), plus),
                                        _mm512_mul_epu32(_mm512_loadu_si512(mb + j), minus));
    _mm512_storeu_si512(pa + j, reduce(xa, k));
    _mm512_storeu_si512(pb + j, reduce(xb, k));
  }
}

void mac3_monomial_sum(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
                       const std::uint32_t* psi_pow, const std::uint32_t* odd,
                       const std::size_t* exponents, u64* out) {
  const std::size_t n = rc.n, rows = 2 * static_cast<std::size_t>(rc.gadget_digits);
  const VecConstants k(rc);
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(2 * n - 1));
  const __m512i q_minus_1 = _mm512_set1_epi64(static_cast<long long>(rc.q - 1));
  __m256i e[3];
  for (int t = 0; t < 3; ++t) e[t] = _mm256_set1_epi32(static_cast<int>(exponents[t]));
  for (std::size_t j = 0; j < n; j += 8) {
    __m512i a[3], b[3];
    const std::uint32_t* blk[3];
    for (int t = 0; t < 3; ++t) {
      a[t] = b[t] = _mm512_setzero_si512();
      blk[t] = keys[t] + j * rows * 2;  // (j / 8) * rows * 2 * 8
      _mm_prefetch(reinterpret_cast<const char*>(blk[t] + 4 * rows * 2 * 8), _MM_HINT_T0);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const __m512i d = _mm512_loadu_si512(digits + r * n + j);
      for (int t = 0; t < 3; ++t) {
        a[t] = _mm512_add_epi64(a[t], _mm512_mul_epu32(d, load_u32(blk[t] + r * 16)));
        b[t] = _mm512_add_epi64(b[t], _mm512_mul_epu32(d, load_u32(blk[t] + r * 16 + 8)));
      }
    }
    const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + j));
    __m512i xa = _mm512_setzero_si512(), xb = _mm512_setzero_si512();
    for (int t = 0; t < 3; ++t) {
      const __m256i ex = _mm256_and_si256(_mm256_mullo_epi32(o, e[t]), mask);
      const __m512i f = _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm256_i32gather_epi32(
                                             reinterpret_cast<const int*>(psi_pow), ex, 4)),
                                         q_minus_1);
      xa = _mm512_add_epi64(xa, _mm512_mul_epu32(reduce(a[t], k), f));
      xb = _mm512_add_epi64(xb, _mm512_mul_epu32(reduce(b[t], k), f));
    }
    _mm512_storeu_si512(out + j, reduce(xa, k));
    _mm512_storeu_si512(out + n + j, reduce(xb, k));
  }
}

namespace {

// acc[j] += (minus ? -v : v) - p[j] mod Q for j in [j0, j1), v = src[j - j0].
inline void shifted_range(std::size_t j0, std::size_t j1, const u64* src, const u64* p, u64* acc,
                          bool minus, __m512i q) {
  for (std::size_t j = j0; j < j1; j += 8) {
    const __mmask8 m = j1 - j >= 8 ? 0xff : static_cast<__mmask8>((1u << (j1 - j)) - 1);
    const __m512i v = _mm512_maskz_loadu_epi64(m, src + (j - j0));
    const __m512i t = minus ? _mm512_sub_epi64(q, v) : v;  // in [0, Q]
    __m512i x = _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, acc + j), t);
    x = _mm512_min_epu64(x, _mm512_sub_epi64(x, q));
    x = _mm512_add_epi64(x, _mm512_sub_epi64(q, _mm512_maskz_loadu_epi64(m, p + j)));
    x = _mm512_min_epu64(x, _mm512_sub_epi64(x, q));
    _mm512_mask_storeu_epi64(acc + j, m, x);
  }
}

}  // namespace

void add_shifted_difference(const RingConstants& rc, std::size_t c, const u64* p, u64* acc) {
  const std::size_t n = rc.n;
  const bool negate = c >= n;
  const std::size_t s = negate ? c - n : c;
  const __m512i q = _mm512_set1_epi64(static_cast<long long>(rc.q));
  // (X^c p)[j] = p[j - s] for j >= s and -p[j - s + n] below it, negated again when c >= n.
  shifted_range(0, s, p + n - s, p, acc, !negate, q);
  shifted_range(s, n, p, p, acc, negate, q);
}

void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count) {
  // The rows are scattered over a table of hundreds of MiB: prefetch a few rows ahead.
  constexpr std::size_t kAhead = 4;
  const std::size_t full = row_len / 32 * 32;
  const __mmask32 tail = static_cast<__mmask32>((1ull << (row_len - full)) - 1);
  for (std::size_t k = 0; k < count; ++k) {
    if (k + kAhead < count) {
      const char* next = reinterpret_cast<const char*>(
          table + static_cast<std::size_t>(rows[k + kAhead]) * row_len);
      for (std::size_t b = 0; b < row_len * 2; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
    }
    const std::uint16_t* w = table + static_cast<std::size_t>(rows[k]) * row_len;
    std::size_t i = 0;
    for (; i < full; i += 32) {
      const __m512i x = _mm512_loadu_si512(acc + i);
      _mm512_storeu_si512(acc + i, _mm512_sub_epi16(x, _mm512_loadu_si512(w + i)));
    }
    if (tail != 0) {
      const __m512i x = _mm512_maskz_loadu_epi16(tail, acc + i);
      const __m512i y = _mm512_maskz_loadu_epi16(tail, w + i);
      _mm512_mask_storeu_epi16(acc + i, tail, _mm512_sub_epi16(x, y));
    }
  }
}

}  // namespace hec::fhew::kernels::avx512
