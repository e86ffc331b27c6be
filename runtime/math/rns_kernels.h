// Internal: constants and kernels behind BaseConverter (rns.h). The AVX-512 kernels live in
// rns_avx512.cpp (compiled with the AVX-512 flags and -ffp-contract=off, so their double
// arithmetic rounds exactly like the portable code) and run only on the AVX-512 IFMA kernel
// path (active_kernel_path()): convert_block_ifma when every modulus of both bases is below
// 2^50, convert_block_wide otherwise (any moduli below 2^61).
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

// Constants of the wide kernel (moduli up to 2^61). Products y_i (Q/q_i mod p_j) are summed in
// 52-bit columns (avx512_mul64.h): y_i = a + 2^52 b, and the constant is given both as
// h = (Q/q_i mod p_j) = c + 2^52 d and as g = (2^52 Q/q_i mod p_j) = e + 2^52 f, so that
// y_i h = a h + b g (mod p_j) needs no product of two high parts.
struct WideConvertTables {
  std::size_t k = 0, l = 0;
  std::vector<u64> from_q, hat_inv, hat_inv_shoup;  // per source limb i (Shoup, beta = 2^64)
  std::vector<unsigned char> from_wide;             // q_i >= 2^52 (y_i may have a high part)
  // Every q_i below 2^43: y_i (Q/q_i mod p_j) < 2^104 for any p_j < 2^61, so the top column
  // of the sums stays zero (the high half of y_i times the top 9 bits of the factor is 0).
  bool narrow = false;
  std::vector<double> q_inv;  // 1.0 / q_i
  // per (j, i) at j * k + i:
  std::vector<u64> hat_lo, hat_hi, hat52_lo, hat52_hi;
  // per target limb j: (-Q) mod p_j split at 2^52 (the exact form's correction -v Q), and the
  // scalars of the final column reduction.
  std::vector<u64> neg_q_lo, neg_q_hi;
  // per target limb j, when k < 8: [j * 8 + v] = -v Q mod p_j for v in [0, k] (zero above):
  // the exact form's correction picked per lane by one vpermq instead of two or four IFMA
  // products of v.
  std::vector<u64> neg_vq;
  std::vector<u64> to_p, r52, r52_shoup, r104, r104_shoup, one_shoup;
};

// Converts coefficients [start, start + len) (len <= kConvertBlock) of the limb-major
// arrays in (k limbs of n) to out (l limbs of n). `exact` adds the HPS correction.
void convert_block_ifma(const ConvertTables& t, bool exact, const u64* in, u64* out, std::size_t n,
                        std::size_t start, std::size_t len);
// The same for moduli up to 2^61 on either side; out_limbs[j] is target limb j's row (the
// block is written at out_limbs[j] + start).
void convert_block_wide(const WideConvertTables& t, bool exact, const u64* in,
                        u64* const* out_limbs, std::size_t n, std::size_t start, std::size_t len);

}  // namespace hec::math::detail
