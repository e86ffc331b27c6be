// The inner loops of one blind-rotation step, in a portable and an AVX-512 (F, DQ, VL)
// version chosen at run time by math::active_kernel_path() (the AVX-512 file is compiled
// with HEC_AVX512_FLAGS and only entered after CPU detection). Both give identical results.
//
// Contracts (n a multiple of 8, Q < 2^29, every residue in [0, Q)):
//  - decompose: (after rounding away the k dropped low bits, ties up) signed base-2^b digits
//    of the centred residues of `a` and `b` (d_g digits
//    each, all but the top one in [-2^(b-1), 2^(b-1))), written as residues in [0, Q) to
//    digits[(t * d_g + l) * n + j], t = 0 for a, 1 for b.
//  - mac: out_t[j] = sum_r digits[r][j] * key[r][t][j] mod Q, t = a, b, for `keys` RGSW
//    ciphertexts at once (key k's outputs at out + 2 k n); results in [0, Q). Keys are in
//    the blocked layout of bootstrap.h (RgswArray).
//  - monomial_combine: p[j] = p[j] (psi^(c odd_j) - 1) + m[j] (psi^(-c odd_j) - 1) mod Q, for
//    the pairs (pa, ma) and (pb, mb); results in [0, Q).
//  - mac3_monomial_sum: mac with three keys, then out_t[j] = sum_k P_k,t[j] (psi^(e_k odd_j) - 1)
//    mod Q for t = a, b (out and out + n): the products times X^(e_k) - 1 in evaluation form,
//    e_k in [0, 2N), fused so the products never leave registers; results in [0, Q).
//  - add_shifted_difference: acc += (X^c - 1) p in Z_Q[X]/(X^n + 1), c in [0, 2n), p and acc
//    in coefficient form; results in [0, Q).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hec::fhew::kernels {

struct RingConstants {
  std::uint64_t q;
  std::uint64_t barrett;      // floor((2^64 - 1) / Q)
  std::uint64_t two32_mod_q;  // 2^32 mod Q
  double q_inverse;           // 1.0 / Q
  std::size_t n;
  std::uint32_t gadget_log_base;
  std::uint32_t gadget_digits;
  std::uint32_t gadget_dropped_bits;
};

void decompose(const RingConstants& rc, const std::uint64_t* a, const std::uint64_t* b,
               std::uint64_t* digits);
void mac(const RingConstants& rc, const std::uint64_t* digits, const std::uint32_t* const* keys,
         std::size_t key_count, std::uint64_t* out);
void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, std::uint64_t* pa, std::uint64_t* pb,
                      const std::uint64_t* ma, const std::uint64_t* mb);
void add_shifted_difference(const RingConstants& rc, std::size_t c, const std::uint64_t* p,
                            std::uint64_t* acc);
void mac3_monomial_sum(const RingConstants& rc, const std::uint64_t* digits,
                       const std::uint32_t* const* keys, const std::uint32_t* psi_pow,
                       const std::uint32_t* odd, const std::size_t* exponents, std::uint64_t* out);

// Key switching: acc[i] -= table[rows[k] * row_len + i] (16-bit, wrapping) for every k.
void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count);

namespace avx512 {
void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count);
void decompose(const RingConstants& rc, const std::uint64_t* a, const std::uint64_t* b,
               std::uint64_t* digits);
void mac(const RingConstants& rc, const std::uint64_t* digits, const std::uint32_t* const* keys,
         std::size_t key_count, std::uint64_t* out);
void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, std::uint64_t* pa, std::uint64_t* pb,
                      const std::uint64_t* ma, const std::uint64_t* mb);
void add_shifted_difference(const RingConstants& rc, std::size_t c, const std::uint64_t* p,
                            std::uint64_t* acc);
void mac3_monomial_sum(const RingConstants& rc, const std::uint64_t* digits,
                       const std::uint32_t* const* keys, const std::uint32_t* psi_pow,
                       const std::uint32_t* odd, const std::size_t* exponents, std::uint64_t* out);
}  // namespace avx512

namespace portable {
void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count);
void decompose(const RingConstants& rc, const std::uint64_t* a, const std::uint64_t* b,
               std::uint64_t* digits);
void mac(const RingConstants& rc, const std::uint64_t* digits, const std::uint32_t* const* keys,
         std::size_t key_count, std::uint64_t* out);
void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, std::uint64_t* pa, std::uint64_t* pb,
                      const std::uint64_t* ma, const std::uint64_t* mb);
void add_shifted_difference(const RingConstants& rc, std::size_t c, const std::uint64_t* p,
                            std::uint64_t* acc);
void mac3_monomial_sum(const RingConstants& rc, const std::uint64_t* digits,
                       const std::uint32_t* const* keys, const std::uint32_t* psi_pow,
                       const std::uint32_t* odd, const std::size_t* exponents, std::uint64_t* out);
}  // namespace portable

}  // namespace hec::fhew::kernels
