// Internal: constants and kernels behind BaseConverter (rns.h). The IFMA kernel lives in
// rns_avx512.cpp (compiled with the AVX-512 flags and -ffp-contract=off, so its double
// arithmetic rounds exactly like the portable code) and runs only when every modulus of both
// bases is below 2^50 and cpu_has_avx512_ifma().
#pragma once

#include <cstddef>
#include <vector>

#include "math/modarith.h"

namespace hec::math::detail {

// Coefficients per block: the k * kConvertBlock values y_i of a block stay in L1/L2 while
// the output limbs are produced from them.
inline constexpr std::size_t kConvertBlock = 256;
// Products of two values below 2^50 summed per 52-bit madd chunk before folding (the high
// halves stay below 15 * 2^48 + 15 < 2^52).
inline constexpr std::size_t kIfmaConvertChunk = 15;

struct ConvertTables {
  std::size_t k = 0, l = 0;
  std::vector<u64> from_q, hat_inv, hat_inv_shoup52;               // per source limb i
  std::vector<u64> to_p, q_hat_mod_p;                              // q_hat_mod_p[j * k + i]
  std::vector<u64> two52_mod_p, two52_mod_p_shoup52, one_shoup52;  // per target limb j
  std::vector<u64> q_mod_p, q_mod_p_shoup52;
  std::vector<double> q_inv;  // 1.0 / q_i
};

// Converts coefficients [start, start + len) (len <= kConvertBlock) of the limb-major
// arrays in (k limbs of n) to out (l limbs of n). `exact` adds the HPS correction.
void convert_block_ifma(const ConvertTables& t, bool exact, const u64* in, u64* out, std::size_t n,
                        std::size_t start, std::size_t len);

}  // namespace hec::math::detail
