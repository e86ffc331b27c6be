// AVX-512F BLAKE3 kernels (contracts in blake3_kernels.h): 16 compressions at once, one per
// 32-bit lane (the "many inputs in parallel" SIMD strategy of the BLAKE3 paper, section 5.3).
// Each of the 16 state words is a vector holding that word of 16 chunks (or parents);
// rotations are vprord. The message block of every lane is loaded as one 64-byte row and the
// 16 x 16 word matrix transposed in registers (64 shuffles), so vector i holds message word i
// of every lane; no gathers.
#include <immintrin.h>

#include <algorithm>

#include "core/blake3_kernels.h"

namespace hec::core::blake3_detail {

namespace {

template <int R>
inline __m512i rotr(__m512i x) {
  return _mm512_ror_epi32(x, R);
}

inline void g(__m512i& a, __m512i& b, __m512i& c, __m512i& d, __m512i x, __m512i y) {
  a = _mm512_add_epi32(_mm512_add_epi32(a, b), x);
  d = rotr<16>(_mm512_xor_si512(d, a));
  c = _mm512_add_epi32(c, d);
  b = rotr<12>(_mm512_xor_si512(b, c));
  a = _mm512_add_epi32(_mm512_add_epi32(a, b), y);
  d = rotr<8>(_mm512_xor_si512(d, a));
  c = _mm512_add_epi32(c, d);
  b = rotr<7>(_mm512_xor_si512(b, c));
}

// One round (columns, then diagonals) with round R's message schedule; the indices are
// compile-time constants, so the message vectors can stay in registers.
template <int R>
inline void round(__m512i v[16], const __m512i m[16]) {
  constexpr auto s = kSchedule[R];
  g(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
  g(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
  g(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
  g(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
  g(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
  g(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
  g(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
  g(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
}

// h <- the chaining values of 16 compressions of message m under h.
inline void compress16(__m512i h[8], const __m512i m[16], __m512i counter_lo, __m512i counter_hi,
                       __m512i block_len, __m512i flags) {
  __m512i v[16];
  for (int i = 0; i < 8; ++i) v[i] = h[i];
  for (int i = 0; i < 4; ++i) v[8 + i] = _mm512_set1_epi32(static_cast<int>(kIv[i]));
  v[12] = counter_lo;
  v[13] = counter_hi;
  v[14] = block_len;
  v[15] = flags;
  round<0>(v, m);
  round<1>(v, m);
  round<2>(v, m);
  round<3>(v, m);
  round<4>(v, m);
  round<5>(v, m);
  round<6>(v, m);
  for (int i = 0; i < 8; ++i) h[i] = _mm512_xor_si512(v[i], v[i + 8]);
}

// m[i] <- word i of the 64-byte rows rows[0..15] (lane l from rows[l] + offset).
// Step (1): 32-bit interleaves of row pairs; step (2): 64-bit interleaves, after which 128-bit
// lane k of u[4g + j] holds word 4k + j of rows 4g..4g+3; step (3): a 4 x 4 transpose of
// 128-bit lanes puts word 4k + j of all 16 rows into m[4k + j].
inline void load_transposed(const std::uint8_t* const rows[16], std::size_t offset, __m512i m[16]) {
  __m512i r[16], t[16], u[16];
  for (int l = 0; l < 16; ++l) r[l] = _mm512_loadu_si512(rows[l] + offset);
  for (int i = 0; i < 8; ++i) {  // Step (1)
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int g4 = 0; g4 < 4; ++g4) {  // Step (2)
    const int b = 4 * g4;
    u[b + 0] = _mm512_unpacklo_epi64(t[b + 0], t[b + 2]);
    u[b + 1] = _mm512_unpackhi_epi64(t[b + 0], t[b + 2]);
    u[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
    u[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // Step (3)
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xEE);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xEE);
    m[j] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    m[4 + j] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
    m[8 + j] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    m[12 + j] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
  }
}

// The chaining values of `lanes` (1..16) inputs of `blocks` blocks each, input l at
// base + l * stride, lane l's counter first_counter + l (or first_counter for all when
// !increment), `flags` on every block, start_flag on the first and end_flag on the last;
// stored as 8 words per input at out. Lanes past `lanes` recompute the last input.
void hash16(const std::uint8_t* base, std::size_t stride, std::size_t lanes, std::size_t blocks,
            std::uint64_t first_counter, bool increment, std::uint32_t flags,
            std::uint32_t start_flag, std::uint32_t end_flag, std::uint32_t* out) {
  const std::uint8_t* rows[16];
  for (std::size_t l = 0; l < 16; ++l) rows[l] = base + std::min(l, lanes - 1) * stride;
  __m512i h[8];
  for (int i = 0; i < 8; ++i) h[i] = _mm512_set1_epi32(static_cast<int>(kIv[i]));
  const __m512i lane_index =
      increment ? _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                : _mm512_setzero_si512();
  const __m512i base_lo = _mm512_set1_epi32(static_cast<int>(first_counter));
  const __m512i counter_lo = _mm512_add_epi32(base_lo, lane_index);
  // The high word takes the carry of lanes whose low word wrapped around.
  const __mmask16 carry = _mm512_cmplt_epu32_mask(counter_lo, base_lo);
  const __m512i base_hi = _mm512_set1_epi32(static_cast<int>(first_counter >> 32));
  const __m512i counter_hi = _mm512_mask_add_epi32(base_hi, carry, base_hi, _mm512_set1_epi32(1));
  const __m512i block_len = _mm512_set1_epi32(static_cast<int>(kBlockLen));
  for (std::size_t b = 0; b < blocks; ++b) {
    __m512i m[16];
    load_transposed(rows, b * kBlockLen, m);
    const std::uint32_t f = flags | (b == 0 ? start_flag : 0) | (b + 1 == blocks ? end_flag : 0);
    compress16(h, m, counter_lo, counter_hi, block_len, _mm512_set1_epi32(static_cast<int>(f)));
  }
  alignas(64) std::uint32_t words[8][16];
  for (int i = 0; i < 8; ++i) _mm512_store_si512(words[i], h[i]);
  for (std::size_t l = 0; l < lanes; ++l) {
    for (int i = 0; i < 8; ++i) out[8 * l + i] = words[i][l];
  }
}

}  // namespace

void hash_chunks_avx512(const std::uint8_t* data, std::size_t count, std::uint64_t first_counter,
                        std::uint32_t* cvs) {
  for (std::size_t s = 0; s < count; s += 16) {
    hash16(data + s * kChunkLen, kChunkLen, std::min<std::size_t>(16, count - s), kBlocksPerChunk,
           first_counter + s, true, 0, kChunkStart, kChunkEnd, cvs + 8 * s);
  }
}

void hash_parents_avx512(const std::uint32_t* children, std::size_t count, std::uint32_t* out) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(children);
  for (std::size_t s = 0; s < count; s += 16) {
    hash16(bytes + s * kBlockLen, kBlockLen, std::min<std::size_t>(16, count - s), 1, 0, false,
           kParent, 0, 0, out + 8 * s);
  }
}

}  // namespace hec::core::blake3_detail
