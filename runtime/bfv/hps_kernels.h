// Internal: the AVX-512 kernel of HPS multiply scaling (hps.h, hps_scale_round_to_p_mult),
// in hps_avx512.cpp (compiled with the AVX-512 flags and -ffp-contract=off, so its double
// arithmetic rounds exactly like the portable loop in multiply.cpp). Callers run it only on
// the AVX-512 IFMA kernel path (math::active_kernel_path()).
#pragma once

#include <cstddef>

#include "math/modarith.h"

namespace hec::bfv::detail {

using math::u64;

// Everything the kernel reads besides the data: k source primes q_i < 2^61 (k <= 15, so that
// sum_i floor(x_i r_i / q_i) + k fits 64 bits), l target primes p_j < 2^50.
struct ScaleToPMultTables {
  std::size_t k = 0, l = 0;
  const u64* q = nullptr;         // q_i
  const u64* r = nullptr;         // r_i = t (Q/q_i)^-1 mod q_i
  const u64* r_shoup = nullptr;   // floor(r_i 2^64 / q_i)
  const double* inv_q = nullptr;  // 1.0 / q_i
  const u64* p = nullptr;         // p_j
  const u64* a = nullptr;         // [j * k + i]: the integer weight of x_i mod p_j (< p_j)
  const u64* a52 = nullptr;       // [j * k + i]: 2^52 a mod p_j
  const u64* beta = nullptr;      // weight of x_p mod p_j (< p_j)
};

// Coefficients [c0, c0 + len) of the scaling: out_p[j] = [sum_i (x_i a_ji + floor(x_i r_i /
// q_i)) + round(sum_i rem_i / q_i) + x_p[j] beta_j]_{p_j}, the same value as the portable
// loop; x_p and out_p may alias. n: words per limb.
void scale_round_to_p_mult_avx512(const ScaleToPMultTables& t, const u64* x_q, const u64* x_p,
                                  u64* out_p, std::size_t n, std::size_t c0, std::size_t len);

}  // namespace hec::bfv::detail
