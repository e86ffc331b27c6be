#include "math/pack.h"

#include "math/cpu_features.h"

#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace hec::math {
namespace detail {
std::size_t unpack_residues_avx512(const std::uint8_t* in, std::size_t n, unsigned bits,
                                   std::uint64_t q, std::uint64_t* out);
}  // namespace detail

namespace {

using u64 = std::uint64_t;

// 64 residues of BITS bits <-> BITS 64-bit words. BITS and every residue's position are
// constants (a fold over the 64 positions), so each residue is two or three shifts and ORs
// with fixed amounts and no loop.
template <unsigned BITS, unsigned J>
inline void put_one(const u64* in, u64* words) {
  constexpr unsigned bit = J * BITS, w = bit / 64, s = bit % 64;
  constexpr u64 mask = (u64{1} << BITS) - 1;
  const u64 v = in[J] & mask;
  words[w] |= v << s;
  if constexpr (s + BITS > 64) words[w + 1] |= v >> (64 - s);
}

template <unsigned BITS, unsigned J>
inline u64 get_one(const u64* words) {
  constexpr unsigned bit = J * BITS, w = bit / 64, s = bit % 64;
  constexpr u64 mask = (u64{1} << BITS) - 1;
  if constexpr (s + BITS > 64) {
    return ((words[w] >> s) | (words[w + 1] << (64 - s))) & mask;
  } else {
    return (words[w] >> s) & mask;
  }
}

template <unsigned BITS, std::size_t... J>
void pack64_at(const u64* in, u64* words, std::index_sequence<J...>) {
  for (unsigned w = 0; w < BITS; ++w) words[w] = 0;
  (put_one<BITS, static_cast<unsigned>(J)>(in, words), ...);
}

template <unsigned BITS, std::size_t... J>
void unpack64_at(const u64* words, u64* out, std::index_sequence<J...>) {
  ((out[J] = get_one<BITS, static_cast<unsigned>(J)>(words)), ...);
}

template <unsigned BITS>
void pack64(const u64* in, u64* words) {
  pack64_at<BITS>(in, words, std::make_index_sequence<64>{});
}

template <unsigned BITS>
void unpack64(const u64* words, u64* out) {
  unpack64_at<BITS>(words, out, std::make_index_sequence<64>{});
}

using PackFn = void (*)(const u64*, u64*);
using UnpackFn = void (*)(const u64*, u64*);

template <std::size_t... B>
constexpr std::array<PackFn, sizeof...(B)> pack_table(std::index_sequence<B...>) {
  return {&pack64<static_cast<unsigned>(B) + 1>...};
}
template <std::size_t... B>
constexpr std::array<UnpackFn, sizeof...(B)> unpack_table(std::index_sequence<B...>) {
  return {&unpack64<static_cast<unsigned>(B) + 1>...};
}

constexpr auto kPack = pack_table(std::make_index_sequence<kMaxPackedBits>{});
constexpr auto kUnpack = unpack_table(std::make_index_sequence<kMaxPackedBits>{});

void check_shape(std::size_t n, unsigned bits, const char* what) {
  if (n % 64 != 0) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                " residues, not a multiple of 64");
  }
  if (bits == 0 || (bits > kMaxPackedBits && bits != 64)) {
    throw std::invalid_argument(std::string(what) + ": width " + std::to_string(bits) +
                                " bits is not packable");
  }
}

}  // namespace

unsigned packed_bits(std::uint64_t q) {
  const unsigned bits = static_cast<unsigned>(std::bit_width(q - 1));
  return bits > kMaxPackedBits ? 64 : std::max(bits, 1u);
}

void pack_residues(const std::uint64_t* in, std::size_t n, unsigned bits, std::uint8_t* out) {
  check_shape(n, bits, "pack_residues");
  if (bits == 64) {
    std::memcpy(out, in, n * 8);
    return;
  }
  const PackFn f = kPack[bits - 1];
  std::array<u64, 64> words{};
  for (std::size_t g = 0; g < n / 64; ++g) {
    f(in + g * 64, words.data());
    std::memcpy(out + g * 8 * bits, words.data(), 8 * bits);  // little-endian words
  }
}

std::size_t unpack_residues(const std::uint8_t* in, std::size_t n, unsigned bits, std::uint64_t q,
                            std::uint64_t* out) {
  check_shape(n, bits, "unpack_residues");
  if (bits != 64 && active_kernel_path() == KernelPath::kAvx512Ifma && cpu_features().avx512bw &&
      cpu_features().avx512vbmi) {
    return detail::unpack_residues_avx512(in, n, bits, q, out);
  }
  if (bits == 64) {
    std::memmove(out, in, n * 8);
  } else {
    const UnpackFn f = kUnpack[bits - 1];
    std::array<u64, 64> words{};
    for (std::size_t g = 0; g < n / 64; ++g) {
      // The group's packed bytes into a local copy first: its words may overwrite them.
      std::memcpy(words.data(), in + g * 8 * bits, 8 * bits);
      f(words.data(), out + g * 64);
    }
  }
  u64 bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad |= static_cast<u64>(out[i] >= q);
  if (bad == 0) return n;
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i] >= q) return i;
  }
  return n;
}

}  // namespace hec::math
