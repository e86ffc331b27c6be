// Galois automorphisms of Z[X]/(X^N + 1) shared by the schemes: the inverse of an element and
// the in-place permutation of limbs by an NTT-domain index map (keys stored permuted, CKKS
// ckks/keys.h and BFV bfv/ciphertext.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hec::math {

// g^-1 mod 2N for an odd Galois element g < 2N (n = N a power of two).
inline std::uint64_t inverse_galois_element(std::uint64_t g, std::size_t n) {
  const std::uint64_t two_n = 2 * static_cast<std::uint64_t>(n);
  if (g % 2 == 0 || g >= two_n) {
    throw std::invalid_argument("inverse_galois_element: " + std::to_string(g) +
                                " is not an odd number below 2N = " + std::to_string(two_n));
  }
  // Newton's iteration x <- x (2 - g x) doubles the correct low bits of g^-1 mod 2^64 (x = g is
  // right mod 8); 2N divides 2^64.
  std::uint64_t x = g;
  for (int i = 0; i < 5; ++i) x *= 2 - g * x;
  return x & (two_n - 1);
}

// limb[t] <- limb[by[t]] for every length-n limb of data[0, words) (words a multiple of n).
inline void permute_limbs_inplace(std::uint64_t* data, std::size_t words, std::size_t n,
                                  const std::vector<std::uint32_t>& by) {
  std::vector<std::uint64_t> tmp(n);
  for (std::size_t off = 0; off + n <= words; off += n) {
    std::uint64_t* limb = data + off;
    for (std::size_t t = 0; t < n; ++t) tmp[t] = limb[by[t]];
    std::copy(tmp.begin(), tmp.end(), limb);
  }
}

}  // namespace hec::math
