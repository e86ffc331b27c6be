// Internal, AVX-512 translation units only (ntt_avx512.cpp, poly_avx512.cpp): 64-bit Shoup
// multiplication for moduli up to 2^61 with AVX-512F/DQ. AVX-512 has no 64x64 -> 128-bit
// multiply; the high word of a * b is assembled exactly from four 32x32-bit vpmuludq partial
// products (the approach of Intel HEXL's AVX512DQ path for moduli above 2^50; Boemer et al.,
// WAHC 2021), the low words come from vpmullq.
#pragma once

#include <immintrin.h>

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

// y * w mod q in [0, 2q) for any 64-bit y, w < q < 2^63, wp = floor(w * 2^64 / q) (Shoup with
// beta = 2^64); the result fits 64 bits, so only the low words of y * w and quotient * q count.
inline __m512i mul_shoup64_lazy_avx512(__m512i y, __m512i w, __m512i wp, __m512i q) {
  const __m512i quotient = mulhi64_avx512(y, wp);
  return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(quotient, q));
}

}  // namespace hec::math::detail
