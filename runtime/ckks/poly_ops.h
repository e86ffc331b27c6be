// Limb-wise polynomial kernels on NTT-form residues (runtime internals of ckks/): pointwise
// add/sub/negate/multiply over one limb of N words, and small-integer polynomials lifted to
// NTT form. Inputs and outputs in [0, q) unless a name says _lazy. Where the CPU has them,
// the math core's AVX-512 kernels (math/poly_kernels.h: add/sub/negate for any q, IFMA
// multiply for q < 2^50, the 52-bit-column multiply for q up to 2^61) run instead of the
// scalar loops; both give identical results.
// TODO(#3): math/poly.h exposes these only on RnsPoly; a public per-limb pointer API would
// let ckks/ stop reaching into math::detail.
#pragma once

#include <cstdint>
#include <vector>

#include "ckks/context_impl.h"
#include "math/cpu_features.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/poly_kernels.h"
#include "math/rns.h"

namespace hec::ckks::detail {

using math::u128;

inline bool use_avx512() { return math::active_kernel_path() == math::KernelPath::kAvx512Ifma; }
inline bool use_ifma(u64 q) { return q < (u64{1} << 50) && use_avx512(); }

inline void add_limb(u64* a, const u64* b, std::size_t n, u64 q) {
  if (use_avx512()) return math::detail::add_avx512(a, b, n, q);
  for (std::size_t t = 0; t < n; ++t) {
    const u64 s = a[t] + b[t];
    a[t] = s >= q ? s - q : s;
  }
}
inline void sub_limb(u64* a, const u64* b, std::size_t n, u64 q) {
  if (use_avx512()) return math::detail::sub_avx512(a, b, n, q);
  for (std::size_t t = 0; t < n; ++t) a[t] = a[t] >= b[t] ? a[t] - b[t] : a[t] + q - b[t];
}
inline void negate_limb(u64* a, std::size_t n, u64 q) {
  if (use_avx512()) return math::detail::negate_avx512(a, n, q);
  for (std::size_t t = 0; t < n; ++t) a[t] = a[t] == 0 ? 0 : q - a[t];
}
// a <- a * b mod q (Barrett).
inline void mul_limb(u64* a, const u64* b, std::size_t n, const math::Modulus& m) {
  if (use_ifma(m.value())) return math::detail::multiply_ifma(a, b, n, m.value());
  if (use_avx512()) {
    const u64* const as[1] = {a};
    return math::detail::multiply_accumulate_wide(a, as, &b, 1, n, m.value());
  }
  for (std::size_t t = 0; t < n; ++t) a[t] = math::mul_mod(a[t], b[t], m);
}
// out <- a * b mod q.
inline void mul_limb_to(u64* out, const u64* a, const u64* b, std::size_t n,
                        const math::Modulus& m) {
  if (use_ifma(m.value())) {
    if (out != a) std::copy(a, a + n, out);
    return math::detail::multiply_ifma(out, b, n, m.value());
  }
  if (use_avx512()) return math::detail::multiply_accumulate_wide(out, &a, &b, 1, n, m.value());
  for (std::size_t t = 0; t < n; ++t) out[t] = math::mul_mod(a[t], b[t], m);
}
// a <- a + b * c mod q.
inline void mul_add_limb(u64* a, const u64* b, const u64* c, std::size_t n,
                         const math::Modulus& m) {
  if (use_ifma(m.value())) return math::detail::multiply_add_ifma(a, b, c, n, m.value());
  if (use_avx512()) return math::detail::multiply_add_wide(a, b, c, n, m.value());
  const u64 q = m.value();
  for (std::size_t t = 0; t < n; ++t) {
    const u64 p = math::mul_mod(b[t], c[t], m);
    const u64 s = a[t] + p;
    a[t] = s >= q ? s - q : s;
  }
}
// z <- sum_k xs[k] * ys[k] mod q over `terms` pairs of limbs (z may not alias the inputs).
inline void mul_acc_limbs(u64* z, const u64* const* xs, const u64* const* ys, std::size_t terms,
                          std::size_t n, const math::Modulus& m) {
  if (use_ifma(m.value()))
    return math::detail::multiply_accumulate_ifma(z, xs, ys, terms, n, m.value());
  if (use_avx512()) return math::detail::multiply_accumulate_wide(z, xs, ys, terms, n, m.value());
  const u64 q = m.value();
  for (std::size_t t = 0; t < n; ++t) {
    u64 s = 0;
    for (std::size_t k = 0; k < terms; ++k) {
      const u64 p = math::mul_mod(xs[k][t], ys[k][t], m);
      s += p;
      s = s >= q ? s - q : s;
    }
    z[t] = s;
  }
}

// x mod q for x < bound (bound <= 2^61): one conditional subtraction when bound <= 2q (primes
// of similar size), Barrett otherwise. Callers hoist `small` = (bound <= 2q) out of loops.
inline u64 reduce_below(u64 x, const math::Modulus& m, bool small) {
  const u64 q = m.value();
  if (small) return x >= q ? x - q : x;
  return x >= q ? math::barrett_reduce_128(x, m) : x;
}

// a <- a * w mod q for a constant w (Shoup).
inline void mul_scalar_limb(u64* a, u64 w, std::size_t n, u64 q) {
  const u64 ws = math::shoup_precompute(w, q);
  if (use_avx512()) return math::detail::multiply_scalar_avx512(a, n, w, ws, q);
  for (std::size_t t = 0; t < n; ++t) a[t] = math::mul_shoup(a[t], w, ws, q);
}

// Writes the small signed polynomial `values` (N entries, each |v| < q) into limbs
// [first, first + count) of the context's index space, in NTT form: out + i * n, i < count.
inline void small_to_ntt(const Context::Impl& impl, const std::int64_t* values, std::size_t first,
                         std::size_t count, u64* out) {
  const std::size_t n = impl.n;
  for (std::size_t i = 0; i < count; ++i) {
    const u64 q = impl.moduli[first + i].value();
    u64* limb = out + i * n;
    for (std::size_t t = 0; t < n; ++t) {
      // |v| < q for every small polynomial the schemes sample (ternary, Gaussian tail-cut).
      const std::int64_t v = values[t];
      limb[t] = v >= 0 ? static_cast<u64>(v) : q - static_cast<u64>(-v);
    }
    math::ntt_forward_inplace(limb, impl.ntt[first + i]);
  }
}

}  // namespace hec::ckks::detail
