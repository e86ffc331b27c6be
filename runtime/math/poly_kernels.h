// Internal: AVX-512 IFMA kernels behind the pointwise operations of poly.h, for one limb of
// n coefficients modulo q < 2^50 (multiply_accumulate_wide: any q < 2^61) (poly_avx512.cpp,
// compiled with the AVX-512 flags; callers check cpu_has_avx512_ifma() through
// active_kernel_path()). Inputs in [0, q), outputs in [0, q), so results equal the portable
// kernels' bit for bit.
#pragma once

#include <cstddef>

#include "math/modarith.h"

namespace hec::math::detail {

// x = x + y, x - y, -x mod q, for any q < 2^61 (AVX-512F only).
void add_avx512(u64* x, const u64* y, std::size_t n, u64 q);
void sub_avx512(u64* x, const u64* y, std::size_t n, u64 q);
void negate_avx512(u64* x, std::size_t n, u64 q);
// z = x + y mod q into a separate output (z may alias x or y).
void add_avx512(u64* z, const u64* x, const u64* y, std::size_t n, u64 q);
// out = the centred residue of x mod p, taken mod q: x mod q, minus p mod q when x > half =
// floor(p / 2); for x in [0, p), p <= 2q, q < 2^61, p_mod_q = p mod q (AVX-512F; the CKKS
// rescale's first step).
void centre_reduce_avx512(u64* out, const u64* x, std::size_t n, u64 q, u64 p_mod_q, u64 half);
// The same for any p and q < 2^61 with p / q < 2^51 (a 60-bit special prime lifted to a
// chain prime: key switching's ModDown with one special prime), by a double-precision
// quotient estimate and two corrections (AVX-512F/DQ).
void centre_reduce_wide_avx512(u64* out, const u64* x, std::size_t n, u64 q, u64 p_mod_q, u64 half);
// z = x * w mod q per coefficient, w_shoup[c] = floor(w[c] 2^64 / q), x and w in [0, q),
// q < 2^61 (AVX-512F/DQ, emulated 64-bit Shoup product: products by a prepared operand, such
// as BFV's multiply by a plaintext). z may alias x. w_shoup null: the constants are computed
// from w in registers (two products per 8 coefficients) instead of read from a table; the
// results are the same.
// stream: write z with streaming stores (an output too large to stay in cache; z 64-byte
// aligned, else ignored).
void multiply_shoup_avx512(u64* z, const u64* x, const u64* w, const u64* w_shoup, std::size_t n,
                           u64 q, bool stream = false);
// The same for two operands by one prepared w (z0 = x0 w, z1 = x1 w; each z may alias its x):
// w and its constants read (or computed) once for both, as BFV's multiply by a plaintext needs.
void multiply_shoup2_avx512(u64* z0, u64* z1, const u64* x0, const u64* x1, const u64* w,
                            const u64* w_shoup, std::size_t n, u64 q, bool stream = false);
// x = x * w mod q for x in [0, q), a scalar w < q < 2^61, w_shoup = floor(w 2^64 / q)
// (AVX-512F/DQ, emulated 64-bit Shoup product).
void multiply_scalar_avx512(u64* x, std::size_t n, u64 w, u64 w_shoup, u64 q);
// x = x - y * w mod q for x, y in [0, q), w < q < 2^61, w_shoup = floor(w * 2^64 / q)
// (AVX-512F/DQ, emulated 64-bit Shoup product: BFV's relinearization folds the multiply's
// coefficient-form outputs into the ModDown this way).
void multiply_sub_scalar_avx512(u64* x, const u64* y, std::size_t n, u64 w, u64 w_shoup, u64 q);
// x = (y - x) * w mod q for x, y in [0, q), w < q < 2^61, w_shoup = floor(w * 2^64 / q)
// (AVX-512F/DQ, emulated 64-bit Shoup product: the CKKS rescale's last step).
void sub_scale_avx512(u64* x, const u64* y, std::size_t n, u64 w, u64 w_shoup, u64 q);
// x = x * y mod q.
void multiply_ifma(u64* x, const u64* y, std::size_t n, u64 q);
// z = z + x * y mod q.
void multiply_add_ifma(u64* z, const u64* x, const u64* y, std::size_t n, u64 q);
// z = sum_k xs[k] * ys[k] mod q.
void multiply_accumulate_ifma(u64* z, const u64* const* xs, const u64* const* ys, std::size_t terms,
                              std::size_t n, u64 q);
// z = sum_k xs[k] * ys[k] mod q for any q < 2^61 (inputs in [0, q), output in [0, q)): the
// products summed in three 52-bit IFMA columns and reduced once (avx512_mul64.h). Any number
// of terms (the columns are reduced every 128). z may be one of the input arrays (each
// coefficient is read before it is written), so terms == 1 is the pointwise product.
void multiply_accumulate_wide(u64* z, const u64* const* xs, const u64* const* ys, std::size_t terms,
                              std::size_t n, u64 q);
// z = z + x * y mod q for any q < 2^61 (the same kernel with z added to the low column).
void multiply_add_wide(u64* z, const u64* x, const u64* y, std::size_t n, u64 q);

}  // namespace hec::math::detail
