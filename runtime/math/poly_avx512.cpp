// AVX-512 IFMA pointwise kernels (poly_kernels.h), eight coefficients per register, for
// moduli q < 2^50 with L = bit length of q:
//  products x = a b < 2^(2L) as 52-bit halves (vpmadd52luq / vpmadd52huq), reduced by
//  Barrett's method with mu = floor(2^(2L) / q): t = ((x >> (L-1)) mu) >> (L+1) underestimates
//  floor(x / q) by at most 2, so x - t q < 3q < 2^52 and two conditional subtractions finish
//  (Barrett, CRYPTO 1986; the 52-bit form of Boemer et al., "Intel HEXL", WAHC 2021, §4);
//  sums of products kept as separate low / high halves and folded every 15 terms as
//  H (2^52 mod q) + L with Shoup multiplications, as in rns_avx512.cpp.
// multiply_accumulate_wide takes moduli up to 2^61: products in three 52-bit IFMA columns
// reduced once per output (avx512_mul64.h).
// GCC 12 warns that _mm512_min_epu64 passes an undefined pass-through vector; it is unused.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "math/aligned.h"
#include "math/avx512_mul64.h"
#include "math/poly_kernels.h"

namespace hec::math::detail {
namespace {

constexpr std::size_t kChunk = 15;  // products per low/high accumulation before folding

inline __m512i set1(u64 v) { return _mm512_set1_epi64(static_cast<long long>(v)); }

inline __m512i reduce_once(__m512i x, __m512i q) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, q));
}

struct Barrett52 {
  __m512i q, mu, mask52, shift_down_lo, shift_up_hi, shift_down_p, shift_up_p;
  explicit Barrett52(u64 modulus) {
    const int bits = 64 - __builtin_clzll(modulus);
    const u64 mu_value = static_cast<u64>((u128{1} << (2 * bits)) / modulus);
    q = set1(modulus);
    mu = set1(mu_value);
    mask52 = set1((u64{1} << 52) - 1);
    shift_down_lo = set1(static_cast<u64>(bits - 1));  // x >> (L-1) from (hi, lo)
    shift_up_hi = set1(static_cast<u64>(53 - bits));
    shift_down_p = set1(static_cast<u64>(bits + 1));  // P >> (L+1) from (P_hi, P_lo)
    shift_up_p = set1(static_cast<u64>(51 - bits));
  }
  // (hi 2^52 + lo) mod q for hi 2^52 + lo < 2^(2L), lo < 2^52.
  __m512i reduce(__m512i hi, __m512i lo) const {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i c = _mm512_or_si512(_mm512_sllv_epi64(hi, shift_up_hi),
                                      _mm512_srlv_epi64(lo, shift_down_lo));  // < 2^(L+1)
    const __m512i p_lo = _mm512_madd52lo_epu64(zero, c, mu);
    const __m512i p_hi = _mm512_madd52hi_epu64(zero, c, mu);
    const __m512i t =
        _mm512_or_si512(_mm512_sllv_epi64(p_hi, shift_up_p), _mm512_srlv_epi64(p_lo, shift_down_p));
    const __m512i tq = _mm512_madd52lo_epu64(zero, t, q);
    const __m512i r = _mm512_and_si512(_mm512_sub_epi64(lo, tq), mask52);  // < 3q
    return reduce_once(reduce_once(r, _mm512_add_epi64(q, q)), q);
  }
  // a b mod q for a, b in [0, q).
  __m512i mul(__m512i a, __m512i b) const {
    const __m512i zero = _mm512_setzero_si512();
    return reduce(_mm512_madd52hi_epu64(zero, a, b), _mm512_madd52lo_epu64(zero, a, b));
  }
};

inline __m512i mul_shoup52_lazy(__m512i x, __m512i w, __m512i wp, __m512i neg_q52, __m512i mask52) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i quotient = _mm512_madd52hi_epu64(zero, x, wp);
  __m512i r = _mm512_madd52lo_epu64(zero, x, w);
  r = _mm512_madd52lo_epu64(r, quotient, neg_q52);
  return _mm512_and_si512(r, mask52);
}

inline __mmask8 tail_mask(std::size_t remaining) {
  return remaining >= 8 ? static_cast<__mmask8>(0xFF)
                        : static_cast<__mmask8>((1u << remaining) - 1);
}

}  // namespace

void add_avx512(u64* x, const u64* y, std::size_t n, u64 q) {
  const __m512i qv = set1(q);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i s =
        _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, x + c), _mm512_maskz_loadu_epi64(m, y + c));
    _mm512_mask_storeu_epi64(x + c, m, reduce_once(s, qv));
  }
}

// Limbs of at least this many words (512 KiB) are written with non-temporal stores by the
// 3-operand add: a result that large leaves the cache before it is read again anyway, and
// streaming stores skip reading the destination lines first (write-allocate), a third of
// the memory traffic of the pass.
constexpr std::size_t kStreamWords = std::size_t{1} << 16;

void add_avx512(u64* z, const u64* x, const u64* y, std::size_t n, u64 q) {
  const __m512i qv = set1(q);
  std::size_t c = 0;
  if (n >= kStreamWords) {
    // Head up to a 64-byte boundary of z, then full aligned streaming stores.
    const std::size_t head =
        ((kCacheLineBytes - reinterpret_cast<std::uintptr_t>(z) % kCacheLineBytes) %
         kCacheLineBytes) /
        sizeof(u64);
    if (head > 0) {
      const __mmask8 m = tail_mask(head);
      const __m512i s =
          _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, x), _mm512_maskz_loadu_epi64(m, y));
      _mm512_mask_storeu_epi64(z, m, reduce_once(s, qv));
    }
    c = head;
    for (; c + 8 <= n; c += 8) {
      const __m512i s = _mm512_add_epi64(_mm512_loadu_si512(x + c), _mm512_loadu_si512(y + c));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(z + c), reduce_once(s, qv));
    }
    _mm_sfence();
  }
  for (; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i s =
        _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, x + c), _mm512_maskz_loadu_epi64(m, y + c));
    _mm512_mask_storeu_epi64(z + c, m, reduce_once(s, qv));
  }
}

void centre_reduce_avx512(u64* out, const u64* x, std::size_t n, u64 q, u64 p_mod_q, u64 half) {
  const __m512i qv = set1(q), pv = set1(p_mod_q), hv = set1(half);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i xv = _mm512_maskz_loadu_epi64(m, x + c);
    const __m512i r = reduce_once(xv, qv);  // x < p <= 2q
    const __m512i d = _mm512_sub_epi64(r, pv);
    const __m512i neg = _mm512_min_epu64(d, _mm512_add_epi64(d, qv));  // r - p mod q
    const __mmask8 above = _mm512_cmpgt_epu64_mask(xv, hv);
    _mm512_mask_storeu_epi64(out + c, m, _mm512_mask_blend_epi64(above, r, neg));
  }
}

void centre_reduce_wide_avx512(u64* out, const u64* x, std::size_t n, u64 q, u64 p_mod_q,
                               u64 half) {
  const __m512i qv = set1(q), pv = set1(p_mod_q), hv = set1(half);
  const __m512d q_inv = _mm512_set1_pd(1.0 / static_cast<double>(q));
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i xv = _mm512_maskz_loadu_epi64(m, x + c);
    // floor(x / q) estimated in double precision: x / q < 2^51, so the estimate is within 1
    // of the quotient and x - t q lies in (-q, 2q) (as unsigned: two min-based corrections).
    const __m512i t = _mm512_cvttpd_epu64(_mm512_mul_pd(_mm512_cvtepu64_pd(xv), q_inv));
    __m512i r = _mm512_sub_epi64(xv, _mm512_mullo_epi64(t, qv));
    r = _mm512_min_epu64(r, _mm512_add_epi64(r, qv));
    r = _mm512_min_epu64(r, _mm512_sub_epi64(r, qv));
    const __m512i d = _mm512_sub_epi64(r, pv);
    const __m512i neg = _mm512_min_epu64(d, _mm512_add_epi64(d, qv));  // r - p mod q
    const __mmask8 above = _mm512_cmpgt_epu64_mask(xv, hv);
    _mm512_mask_storeu_epi64(out + c, m, _mm512_mask_blend_epi64(above, r, neg));
  }
}

namespace {

// z_k = x_k w mod q for K operands sharing one prepared w (each block of w and its Shoup
// constants loaded, or computed, once for all K: BFV's two ciphertext components). With
// w_shoup null (Table false) the constants are computed from w.
template <std::size_t K, bool Table>
void multiply_shoup_k(u64* const* z, const u64* const* x, const u64* w, const u64* w_shoup,
                      std::size_t n, u64 q, bool stream) {
  const __m512i qv = set1(q), q2 = set1(2 * q);
  // Shoup's constant floor(w 2^64 / q) computed rather than read (a table of them is a sixth
  // of the traffic of BFV's two-component pass). With 2^64 / q = k + f / 2^64 + e (k, f integers,
  // 0 <= e < 2^-64), wp' = w k + mulhi64_approx(w, f) lies in (w 2^64 / q - 4, w 2^64 / q]
  // and below 2^64 (w < q). For x < q < 2^61 the quotient mulhi64_approx(x, wp') is then at
  // most 3 below floor(x w / q) and not above it (x wp' / 2^64 > x w / q - 4 x / 2^64, and
  // 4 x / 2^64 < 1/2): the product lies in [0, 4q), as with the exact constant and the
  // approximate quotient, and the same two conditional subtractions finish it.
  __m512i kv = _mm512_setzero_si512(), fv = kv;
  if constexpr (!Table) {
    kv = set1(~u64{0} / q);  // floor(2^64 / q): q is odd, so it does not divide 2^64
    fv = set1(static_cast<u64>((static_cast<u128>((u128{1} << 64) % q) << 64) / q));
  }
  const auto constants = [&](__m512i wv, std::size_t c, __mmask8 m) {
    if constexpr (Table) {
      return _mm512_maskz_loadu_epi64(m, w_shoup + c);
    } else {
      return _mm512_add_epi64(_mm512_mullo_epi64(wv, kv), mulhi64_approx_avx512(wv, fv));
    }
  };
  // The approximate quotient (one vpmuludq fewer): the product lies in [0, 4q) (q < 2^61).
  const auto product = [&](__m512i xv, __m512i wv, __m512i wsv) {
    return reduce_once(reduce_once(mul_shoup64_lazy4_avx512(xv, wv, wsv, qv), q2), qv);
  };
  bool aligned = true;
  for (std::size_t j = 0; j < K; ++j) {
    aligned = aligned && reinterpret_cast<std::uintptr_t>(z[j]) % kCacheLineBytes == 0;
  }
  std::size_t c = 0;
  if (stream && aligned) {
    // Streaming stores skip reading the destination lines first (write-allocate): a
    // quarter of the pass's memory traffic.
    for (; c + 8 <= n; c += 8) {
      const __m512i wv = _mm512_loadu_si512(w + c);
      const __m512i wsv = constants(wv, c, 0xFF);
      for (std::size_t j = 0; j < K; ++j) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(z[j] + c),
                            product(_mm512_loadu_si512(x[j] + c), wv, wsv));
      }
    }
    _mm_sfence();
  }
  for (; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i wv = _mm512_maskz_loadu_epi64(m, w + c);
    const __m512i wsv = constants(wv, c, m);
    for (std::size_t j = 0; j < K; ++j) {
      _mm512_mask_storeu_epi64(z[j] + c, m,
                               product(_mm512_maskz_loadu_epi64(m, x[j] + c), wv, wsv));
    }
  }
}

}  // namespace

void multiply_shoup_avx512(u64* z, const u64* x, const u64* w, const u64* w_shoup, std::size_t n,
                           u64 q, bool stream) {
  if (w_shoup != nullptr) return multiply_shoup_k<1, true>(&z, &x, w, w_shoup, n, q, stream);
  multiply_shoup_k<1, false>(&z, &x, w, w_shoup, n, q, stream);
}

void multiply_shoup2_avx512(u64* z0, u64* z1, const u64* x0, const u64* x1, const u64* w,
                            const u64* w_shoup, std::size_t n, u64 q, bool stream) {
  u64* const z[2] = {z0, z1};
  const u64* const x[2] = {x0, x1};
  if (w_shoup != nullptr) return multiply_shoup_k<2, true>(z, x, w, w_shoup, n, q, stream);
  multiply_shoup_k<2, false>(z, x, w, w_shoup, n, q, stream);
}

void multiply_scalar_avx512(u64* x, std::size_t n, u64 w, u64 w_shoup, u64 q) {
  const __m512i qv = set1(q), q2 = set1(2 * q), wv = set1(w), wpv = set1(w_shoup);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i p = mul_shoup64_lazy4_avx512(_mm512_maskz_loadu_epi64(m, x + c), wv, wpv, qv);
    _mm512_mask_storeu_epi64(x + c, m, reduce_once(reduce_once(p, q2), qv));
  }
}

void multiply_sub_scalar_avx512(u64* x, const u64* y, std::size_t n, u64 w, u64 w_shoup, u64 q) {
  const __m512i qv = set1(q), wv = set1(w), wpv = set1(w_shoup);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    // y w in [0, q) after one correction; x - y w + q in [1, 2q), reduced once.
    const __m512i p =
        reduce_once(mul_shoup64_lazy_avx512(_mm512_maskz_loadu_epi64(m, y + c), wv, wpv, qv), qv);
    const __m512i d = _mm512_add_epi64(_mm512_sub_epi64(_mm512_maskz_loadu_epi64(m, x + c), p), qv);
    _mm512_mask_storeu_epi64(x + c, m, reduce_once(d, qv));
  }
}

void sub_scale_avx512(u64* x, const u64* y, std::size_t n, u64 w, u64 w_shoup, u64 q) {
  const __m512i qv = set1(q), wv = set1(w), wpv = set1(w_shoup);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    // y - x + q in [1, 2q), reduced once, then Shoup-multiplied and reduced once.
    const __m512i d =
        reduce_once(_mm512_add_epi64(_mm512_sub_epi64(_mm512_maskz_loadu_epi64(m, y + c),
                                                      _mm512_maskz_loadu_epi64(m, x + c)),
                                     qv),
                    qv);
    _mm512_mask_storeu_epi64(x + c, m, reduce_once(mul_shoup64_lazy_avx512(d, wv, wpv, qv), qv));
  }
}

void sub_avx512(u64* x, const u64* y, std::size_t n, u64 q) {
  const __m512i qv = set1(q);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    // x - y + q in [1, 2q), then one conditional subtraction.
    const __m512i d = _mm512_add_epi64(
        _mm512_sub_epi64(_mm512_maskz_loadu_epi64(m, x + c), _mm512_maskz_loadu_epi64(m, y + c)),
        qv);
    _mm512_mask_storeu_epi64(x + c, m, reduce_once(d, qv));
  }
}

void negate_avx512(u64* x, std::size_t n, u64 q) {
  const __m512i qv = set1(q), zero = _mm512_setzero_si512();
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i v = _mm512_maskz_loadu_epi64(m, x + c);
    // q - v, except 0 stays 0.
    const __mmask8 nonzero = _mm512_cmpneq_epi64_mask(v, zero);
    _mm512_mask_storeu_epi64(x + c, m, _mm512_maskz_sub_epi64(nonzero, qv, v));
  }
}

void multiply_ifma(u64* x, const u64* y, std::size_t n, u64 q) {
  const Barrett52 b(q);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i xv = _mm512_maskz_loadu_epi64(m, x + c);
    const __m512i yv = _mm512_maskz_loadu_epi64(m, y + c);
    _mm512_mask_storeu_epi64(x + c, m, b.mul(xv, yv));
  }
}

void multiply_add_ifma(u64* z, const u64* x, const u64* y, std::size_t n, u64 q) {
  const Barrett52 b(q);
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    const __m512i xv = _mm512_maskz_loadu_epi64(m, x + c);
    const __m512i yv = _mm512_maskz_loadu_epi64(m, y + c);
    const __m512i zv = _mm512_maskz_loadu_epi64(m, z + c);
    _mm512_mask_storeu_epi64(z + c, m, reduce_once(_mm512_add_epi64(b.mul(xv, yv), zv), b.q));
  }
}

void multiply_accumulate_ifma(u64* z, const u64* const* xs, const u64* const* ys, std::size_t terms,
                              std::size_t n, u64 q) {
  const __m512i qv = set1(q), two_q = set1(2 * q), neg_q = set1((u64{1} << 52) - q);
  const __m512i mask52 = set1((u64{1} << 52) - 1);
  const u64 two52 = static_cast<u64>((u128{1} << 52) % q);
  const __m512i r = set1(two52);
  const __m512i rp = set1(static_cast<u64>((static_cast<u128>(two52) << 52) / q));
  const __m512i one = set1(1), one_p = set1(static_cast<u64>((u128{1} << 52) / q));
  for (std::size_t c = 0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    __m512i total = _mm512_setzero_si512();
    for (std::size_t k0 = 0; k0 < terms; k0 += kChunk) {
      const std::size_t k1 = std::min(terms, k0 + kChunk);
      __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
      for (std::size_t k = k0; k < k1; ++k) {
        const __m512i xv = _mm512_maskz_loadu_epi64(m, xs[k] + c);
        const __m512i yv = _mm512_maskz_loadu_epi64(m, ys[k] + c);
        lo = _mm512_madd52lo_epu64(lo, xv, yv);
        hi = _mm512_madd52hi_epu64(hi, xv, yv);
      }
      const __m512i big = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));  // < 2^52
      const __m512i low = _mm512_and_si512(lo, mask52);
      __m512i part = _mm512_add_epi64(mul_shoup52_lazy(big, r, rp, neg_q, mask52),
                                      mul_shoup52_lazy(low, one, one_p, neg_q, mask52));
      part = reduce_once(reduce_once(part, two_q), qv);
      total = reduce_once(_mm512_add_epi64(total, part), qv);
    }
    _mm512_mask_storeu_epi64(z + c, m, total);
  }
}

namespace {

// Adds x y to the 52-bit columns (avx512_mul64.h) for x, y < 2^61 (Wide) or < 2^52.
template <bool Wide>
inline void accumulate_product(__m512i& col1, __m512i& col52, __m512i& col104, __m512i x, __m512i y,
                               __m512i mask52) {
  if constexpr (Wide) {
    const __m512i a = _mm512_and_si512(x, mask52), b = _mm512_srli_epi64(x, 52);
    const __m512i c = _mm512_and_si512(y, mask52), d = _mm512_srli_epi64(y, 52);
    col1 = _mm512_madd52lo_epu64(col1, a, c);
    col52 = _mm512_madd52hi_epu64(col52, a, c);
    col52 = _mm512_madd52lo_epu64(col52, a, d);
    col52 = _mm512_madd52lo_epu64(col52, b, c);
    col104 = _mm512_madd52hi_epu64(col104, a, d);
    col104 = _mm512_madd52hi_epu64(col104, b, c);
    col104 = _mm512_madd52lo_epu64(col104, b, d);  // b d < 2^18
  } else {
    col1 = _mm512_madd52lo_epu64(col1, x, y);
    col52 = _mm512_madd52hi_epu64(col52, x, y);
  }
}

// Products per column pass: each adds below 3 * 2^52 to a column, so 128 stay below 2^61
// (plus an addend below 2^61 in the low column).
constexpr std::size_t kColumnTerms = 128;

// z = addend + sum_k xs[k] ys[k] mod q (addend optional, in [0, q)).
template <bool Wide>
void multiply_accumulate_columns(u64* z, const u64* const* xs, const u64* const* ys,
                                 std::size_t terms, std::size_t n, u64 q, const u64* addend) {
  const Columns52 reducer(Columns52::scalars(q));
  const __m512i mask52 = set1((u64{1} << 52) - 1), qv = set1(q);
  std::size_t c0 = 0;
  if (terms <= kColumnTerms && addend == nullptr) {
    // Two vectors a pass while whole pairs remain: their column sums and reductions are
    // independent chains (the reduction's emulated 64-bit product is a long one), so the core
    // overlaps them. Same operations per vector, same results.
    for (; c0 + 16 <= n; c0 += 16) {
      __m512i col1[2], col52[2], col104[2];
      for (int u = 0; u < 2; ++u) {
        col1[u] = _mm512_setzero_si512();
        col52[u] = col1[u];
        col104[u] = col1[u];
      }
      for (std::size_t k = 0; k < terms; ++k) {
        for (int u = 0; u < 2; ++u) {
          accumulate_product<Wide>(col1[u], col52[u], col104[u],
                                   _mm512_loadu_si512(xs[k] + c0 + 8 * u),
                                   _mm512_loadu_si512(ys[k] + c0 + 8 * u), mask52);
        }
      }
      for (int u = 0; u < 2; ++u) {
        const __m512i part =
            Wide ? reducer.reduce(col1[u], col52[u], col104[u]) : reducer.reduce(col1[u], col52[u]);
        _mm512_storeu_si512(z + c0 + 8 * u, reduce_once(part, qv));
      }
    }
  }
  for (std::size_t c = c0; c < n; c += 8) {
    const __mmask8 m = tail_mask(n - c);
    __m512i total = _mm512_setzero_si512();
    for (std::size_t k0 = 0; k0 < terms; k0 += kColumnTerms) {
      const std::size_t k1 = std::min(terms, k0 + kColumnTerms);
      __m512i col1 = _mm512_setzero_si512(), col52 = col1, col104 = col1;
      if (k0 == 0 && addend != nullptr) col1 = _mm512_maskz_loadu_epi64(m, addend + c);
      for (std::size_t k = k0; k < k1; ++k) {
        accumulate_product<Wide>(col1, col52, col104, _mm512_maskz_loadu_epi64(m, xs[k] + c),
                                 _mm512_maskz_loadu_epi64(m, ys[k] + c), mask52);
      }
      const __m512i part = Wide ? reducer.reduce(col1, col52, col104) : reducer.reduce(col1, col52);
      total = reduce_once(_mm512_add_epi64(total, part), qv);
    }
    _mm512_mask_storeu_epi64(z + c, m, total);
  }
}

}  // namespace

void multiply_accumulate_wide(u64* z, const u64* const* xs, const u64* const* ys, std::size_t terms,
                              std::size_t n, u64 q) {
  q >= (u64{1} << 52) ? multiply_accumulate_columns<true>(z, xs, ys, terms, n, q, nullptr)
                      : multiply_accumulate_columns<false>(z, xs, ys, terms, n, q, nullptr);
}

void multiply_add_wide(u64* z, const u64* x, const u64* y, std::size_t n, u64 q) {
  const u64* const xs[1] = {x};
  const u64* const ys[1] = {y};
  q >= (u64{1} << 52) ? multiply_accumulate_columns<true>(z, xs, ys, 1, n, q, z)
                      : multiply_accumulate_columns<false>(z, xs, ys, 1, n, q, z);
}

}  // namespace hec::math::detail
