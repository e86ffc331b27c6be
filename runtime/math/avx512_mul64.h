// Internal, AVX-512 translation units only (ntt_avx512.cpp, poly_avx512.cpp, rns_avx512.cpp):
// 64-bit Shoup multiplication for moduli up to 2^61 with AVX-512F/DQ. AVX-512 has no 64x64 ->
// 128-bit multiply; the high word of a * b is assembled exactly from four 32x32-bit vpmuludq
// partial products (the approach of Intel HEXL's AVX512DQ path for moduli above 2^50; Boemer
// et al., WAHC 2021), the low words come from vpmullq.
// Sums of products of values up to 2^61 (base conversion, key-switching inner product) are
// accumulated with IFMA in three 52-bit columns instead: with x = a + 2^52 b and
// y = c + 2^52 d (a, c < 2^52; b, d < 2^9),
//   x y = lo(ac) + 2^52 (hi(ac) + lo(ad) + lo(bc)) + 2^104 (hi(ad) + hi(bc) + bd),
// where lo / hi are the vpmadd52luq / vpmadd52huq halves of a 52x52-bit product; each
// column gains less than 2^52 per product, so hundreds of products fit before any reduction,
// and Columns52 reduces the three columns once at the end.
#pragma once

#include <immintrin.h>

#include "math/modarith.h"

namespace hec::math::detail {

// High 64 bits of the 64x64-bit products a * b (exact).
inline __m512i mulhi64_avx512(__m512i a, __m512i b) {
  const __m512i mask32 = _mm512_set1_epi64(0xffffffffLL);
  const __m512i a_hi = _mm512_srli_epi64(a, 32);
  const __m512i b_hi = _mm512_srli_epi64(b, 32);
  const __m512i lolo = _mm512_mul_epu32(a, b);
  const __m512i lohi = _mm512_mul_epu32(a, b_hi);
  const __m512i hilo = _mm512_mul_epu32(a_hi, b);
  const __m512i hihi = _mm512_mul_epu32(a_hi, b_hi);
  // Middle column: < 3 * 2^32, no overflow.
  const __m512i mid = _mm512_add_epi64(
      _mm512_add_epi64(_mm512_srli_epi64(lolo, 32), _mm512_and_si512(lohi, mask32)),
      _mm512_and_si512(hilo, mask32));
  return _mm512_add_epi64(
      _mm512_add_epi64(hihi, _mm512_srli_epi64(mid, 32)),
      _mm512_add_epi64(_mm512_srli_epi64(lohi, 32), _mm512_srli_epi64(hilo, 32)));
}

// floor(a * b / 2^64) minus 0, 1 or 2, for any 64-bit a, b: the high word without the low
// 32x32-bit partial product and the middle column's carries (that column is below 3 * 2^32).
// One vpmuludq and six other instructions fewer than mulhi64_avx512; for Shoup products whose
// caller can take a result below 4q (one conditional subtraction of 2q restores [0, 2q)).
inline __m512i mulhi64_approx_avx512(__m512i a, __m512i b) {
  const __m512i a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
  const __m512i lohi = _mm512_mul_epu32(a, b_hi);
  const __m512i hilo = _mm512_mul_epu32(a_hi, b);
  const __m512i hihi = _mm512_mul_epu32(a_hi, b_hi);
  return _mm512_add_epi64(
      hihi, _mm512_add_epi64(_mm512_srli_epi64(lohi, 32), _mm512_srli_epi64(hilo, 32)));
}

// y * w mod q in [0, 4q) for any 64-bit y, w < q < 2^62, wp = floor(w * 2^64 / q): Shoup with
// the quotient of mulhi64_approx_avx512 (at most 2 below the exact one, whose result is in
// [0, 2q)); the result is below 2^64, so only the low words count.
inline __m512i mul_shoup64_lazy4_avx512(__m512i y, __m512i w, __m512i wp, __m512i q) {
  const __m512i quotient = mulhi64_approx_avx512(y, wp);
  return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(quotient, q));
}

// y * w mod q in [0, 2q) for any 64-bit y, w < q < 2^63, wp = floor(w * 2^64 / q) (Shoup with
// beta = 2^64); the result fits 64 bits, so only the low words of y * w and quotient * q count.
inline __m512i mul_shoup64_lazy_avx512(__m512i y, __m512i w, __m512i wp, __m512i q) {
  const __m512i quotient = mulhi64_avx512(y, wp);
  return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(quotient, q));
}

// Reduction of col1 + 2^52 col52 + 2^104 col104 modulo p < 2^61 to [0, p), for columns
// col1 < 2^63 - 2^52, col52 < 2^62, col104 < 2^43 (each a sum of vpmadd52 halves): col104
// folded into the lower two by IFMA products with 2^104 mod p, then the carry of col1
// moves to col52, then each column is multiplied by 2^(52 i) mod p with a Shoup product
// (the low one only for p < 2^50; above, conditional subtractions suffice).
class Columns52 {
 public:
  // Scalar constants (precomputed once per modulus by callers that reduce often).
  struct Scalars {
    u64 p, r52, r52_shoup, r104, r104_shoup, one_shoup;
  };
  static Scalars scalars(u64 p) {
    const u64 r52 = static_cast<u64>((u128{1} << 52) % p);
    const u64 r104 = static_cast<u64>((static_cast<u128>(r52) << 52) % p);
    return {
        p, r52, shoup_precompute(r52, p), r104, shoup_precompute(r104, p), shoup_precompute(1, p)};
  }

  __m512i p, two_p, four_p, r52, r52_shoup, r104_lo, r104_hi, one, one_shoup, mask52;
  bool wide;    // p >= 2^52: the low column after the carry is already below p
  bool medium;  // 2^50 <= p < 2^52: it is below 4p (one conditional subtraction of 2p)

  explicit Columns52(const Scalars& s)
      : p(set(s.p)),
        two_p(set(2 * s.p)),
        four_p(set(4 * s.p)),
        r52(set(s.r52)),
        r52_shoup(set(s.r52_shoup)),
        r104_lo(set(s.r104 & ((u64{1} << 52) - 1))),
        r104_hi(set(s.r104 >> 52)),
        one(set(1)),
        one_shoup(set(s.one_shoup)),
        mask52(set((u64{1} << 52) - 1)),
        wide(s.p >= (u64{1} << 52)),
        medium(!wide && s.p >= (u64{1} << 50)) {}

  static __m512i set(u64 v) { return _mm512_set1_epi64(static_cast<long long>(v)); }
  static __m512i reduce_once(__m512i x, __m512i k) {
    return _mm512_min_epu64(x, _mm512_sub_epi64(x, k));
  }

  // col104 < 2^43 (every caller's top column is a sum of at most a few hundred products of a
  // 52-bit part and a 9-bit one). Its weight 2^104 = r104 = e + 2^52 f (mod p, e < 2^52,
  // f < 2^9) is folded into the lower columns with three IFMA products (col104 e's low half
  // into col1, its high half and col104 f < 2^52 into col52) instead of a third emulated
  // 64-bit Shoup product (about twenty instructions): the reduction was most of the cost of
  // a 60-bit base conversion or key product with few terms. The value mod p is unchanged.
  __m512i reduce(__m512i col1, __m512i col52, __m512i col104) const {
    col1 = _mm512_madd52lo_epu64(col1, col104, r104_lo);
    col52 = _mm512_madd52hi_epu64(col52, col104, r104_lo);
    col52 = _mm512_madd52lo_epu64(col52, col104, r104_hi);
    return finish(partial(col1, col52));
  }
  // The same when col104 is zero (every operand below 2^52).
  __m512i reduce(__m512i col1, __m512i col52) const { return finish(partial(col1, col52)); }

 private:
  // col1 + 2^52 col52 mod p as a value in [0, 6p): the middle column's product by the
  // cheaper quotient estimate ([0, 4p), mulhi64_approx_avx512), the low column below 2p.
  __m512i partial(__m512i col1, __m512i col52) const {
    __m512i low = _mm512_and_si512(col1, mask52);                              // < 2^52
    const __m512i mid = _mm512_add_epi64(col52, _mm512_srli_epi64(col1, 52));  // < 2^63
    if (medium) low = reduce_once(low, two_p);                                 // [0, 2p)
    if (!wide && !medium) low = mul_shoup64_lazy_avx512(low, one, one_shoup, p);
    return _mm512_add_epi64(mul_shoup64_lazy4_avx512(mid, r52, r52_shoup, p), low);
  }
  // x in [0, 6p) (6p < 2^64 for p < 2^61) -> [0, p).
  __m512i finish(__m512i x) const {
    return reduce_once(reduce_once(reduce_once(x, four_p), two_p), p);
  }
};

}  // namespace hec::math::detail
