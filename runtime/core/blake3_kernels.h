// Internal to blake3.cpp and blake3_avx512.cpp: BLAKE3's constants (specification section 2)
// and the two bulk operations a kernel provides, many chunks and many parents at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace hec::core::blake3_detail {

// The initial chaining value, also the key of the plain hash mode: SHA-256's IV.
inline constexpr std::uint32_t kIv[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                                         0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};

// Domain flags (section 2.1, table 3).
inline constexpr std::uint32_t kChunkStart = 1;
inline constexpr std::uint32_t kChunkEnd = 2;
inline constexpr std::uint32_t kParent = 4;
inline constexpr std::uint32_t kRoot = 8;

inline constexpr std::size_t kBlockLen = 64;
inline constexpr std::size_t kChunkLen = 1024;
inline constexpr std::size_t kBlocksPerChunk = kChunkLen / kBlockLen;
inline constexpr int kRounds = 7;

// The message word permutation applied between rounds (section 2.2, table 2).
inline constexpr std::array<int, 16> kPermutation = {2, 6,  3,  10, 7, 0,  4,  13,
                                                     1, 11, 12, 5,  9, 14, 15, 8};

// kSchedule[r][i]: the message word that round r uses in position i (the permutation applied
// r times), so the kernels index the message instead of moving it.
inline constexpr std::array<std::array<int, 16>, kRounds> kSchedule = [] {
  std::array<std::array<int, 16>, kRounds> s{};
  for (int i = 0; i < 16; ++i) s[0][i] = i;
  for (int r = 1; r < kRounds; ++r) {
    for (int i = 0; i < 16; ++i) s[r][i] = s[r - 1][kPermutation[i]];
  }
  return s;
}();

// Chaining values are 8 words; `cvs` arrays hold them back to back.
//
// hash_chunks: the chaining values of `count` whole 1024-byte chunks at `data` (contiguous),
// chunk i with counter first_counter + i, none of them the root.
// hash_parents: the chaining values of `count` parents whose children's chaining values are
// `children` (16 words per parent, left then right), none of them the root. `out` may not
// overlap `children`.
void hash_chunks_portable(const std::uint8_t* data, std::size_t count, std::uint64_t first_counter,
                          std::uint32_t* cvs);
void hash_parents_portable(const std::uint32_t* children, std::size_t count, std::uint32_t* out);
void hash_chunks_avx512(const std::uint8_t* data, std::size_t count, std::uint64_t first_counter,
                        std::uint32_t* cvs);
void hash_parents_avx512(const std::uint32_t* children, std::size_t count, std::uint32_t* out);

}  // namespace hec::core::blake3_detail
