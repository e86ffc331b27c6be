// The AVX-512 VBMI unpacking of math/pack.h: 8 residues of w <= 56 bits take exactly w bytes,
// so every block of 8 starts on a byte; one byte permute puts each residue's 8-byte window in
// its lane, one variable shift and one mask finish it. Compiled for AVX-512 (F, BW, VBMI) and
// entered only after run-time detection (math/pack.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hec::math::detail {

std::size_t unpack_residues_avx512(const std::uint8_t* in, std::size_t n, unsigned bits,
                                   std::uint64_t q, std::uint64_t* out) {
  alignas(64) std::uint8_t index[64];
  alignas(64) std::uint64_t shift[8];
  for (unsigned j = 0; j < 8; ++j) {
    const unsigned bit = j * bits;
    for (unsigned b = 0; b < 8; ++b) index[8 * j + b] = static_cast<std::uint8_t>(bit / 8 + b);
    shift[j] = bit % 8;
  }
  const __m512i idx = _mm512_load_si512(index);
  const __m512i sh = _mm512_load_si512(shift);
  const __m512i mask = _mm512_set1_epi64(static_cast<long long>((std::uint64_t{1} << bits) - 1));
  const __m512i modulus = _mm512_set1_epi64(static_cast<long long>(q));
  // A block's permute reads its w bytes and the windows' tails (at most 8 more bytes), never
  // past the limb's packed bytes (n * w / 8): the load is masked to what is left there.
  const std::size_t total = n / 8 * bits;
  __mmask8 bad = 0;
  std::size_t first_bad = n;
  for (std::size_t k = 0; k < n / 8; ++k) {
    // Loaded whole before the store: the store may cover this block's own packed bytes, never
    // a later block's (math/pack.h).
    const std::size_t len = std::min<std::size_t>(bits + 8, total - k * bits);
    const __mmask64 m = len >= 64 ? ~__mmask64{0} : (__mmask64{1} << len) - 1;
    const __m512i bytes = _mm512_maskz_loadu_epi8(m, in + k * bits);
    __m512i v = _mm512_permutexvar_epi8(idx, bytes);
    v = _mm512_and_si512(_mm512_srlv_epi64(v, sh), mask);
    const __mmask8 over = _mm512_cmpge_epu64_mask(v, modulus);
    if (over != 0 && bad == 0) first_bad = k * 8 + static_cast<std::size_t>(__builtin_ctz(over));
    bad |= over;
    _mm512_storeu_si512(out + 8 * k, v);
  }
  return first_bad;
}

}  // namespace hec::math::detail
