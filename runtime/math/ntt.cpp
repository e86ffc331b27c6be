// Negacyclic NTT: table construction, the portable Harvey-butterfly kernels and run-time
// dispatch to the AVX-512 IFMA kernels (ntt_avx512.cpp). See ntt.h for the algorithms.
#include "math/ntt.h"

#include <algorithm>

#include <stdexcept>
#include <string>

#include "math/cpu_features.h"
#include "math/ntt_kernels.h"
#include "math/primes.h"

namespace hec::math {

std::size_t bit_reverse(std::size_t k, int bits) {
  std::size_t r = 0;
  for (int b = 0; b < bits; ++b) {
    r = (r << 1) | (k & 1);
    k >>= 1;
  }
  return r;
}

namespace {

u64 shoup52(u64 w, u64 q) { return static_cast<u64>((static_cast<u128>(w) << 52) / q); }

}  // namespace

NttTables::NttTables(std::size_t ring_dim, const Modulus& modulus)
    : n_(ring_dim), modulus_(modulus) {
  if (ring_dim == 0 || (ring_dim & (ring_dim - 1)) != 0 ||
      ring_dim < (std::size_t{1} << kMinLogRingDim) ||
      ring_dim > (std::size_t{1} << kMaxLogRingDim)) {
    throw std::invalid_argument("NttTables: ring dimension N = " + std::to_string(ring_dim) +
                                " must be a power of two in [2^" + std::to_string(kMinLogRingDim) +
                                ", 2^" + std::to_string(kMaxLogRingDim) + "]");
  }
  const u64 q = modulus.value();
  if (!is_prime(q)) {
    throw std::invalid_argument("NttTables: modulus q = " + std::to_string(q) + " is not prime");
  }
  if ((q - 1) % (2 * ring_dim) != 0) {
    throw std::invalid_argument("NttTables: modulus q = " + std::to_string(q) +
                                " is not 1 mod 2N = " + std::to_string(2 * ring_dim));
  }
  log_n_ = __builtin_ctzll(ring_dim);
  root_ = minimal_primitive_root(2 * ring_dim, q);
  const u64 root_inv = inverse_mod(root_, q);

  fwd_.resize(n_);
  fwd_shoup_.resize(n_);
  inv_.resize(n_);
  inv_shoup_.resize(n_);
  // Powers in natural order, then placed at their bit-reversed index.
  u64 power = 1, power_inv = 1;
  for (std::size_t i = 0; i < n_; ++i) {
    const std::size_t r = bit_reverse(i, log_n_);
    fwd_[r] = power;
    inv_[r] = power_inv;
    power = mul_mod(power, root_, modulus_);
    power_inv = mul_mod(power_inv, root_inv, modulus_);
  }
  for (std::size_t i = 0; i < n_; ++i) {
    fwd_shoup_[i] = shoup_precompute(fwd_[i], q);
    inv_shoup_[i] = shoup_precompute(inv_[i], q);
  }
  n_inv_ = inverse_mod(static_cast<u64>(n_), q);
  n_inv_shoup_ = shoup_precompute(n_inv_, q);
  last_scaled_ = mul_mod(inv_[1], n_inv_, modulus_);
  last_scaled_shoup_ = shoup_precompute(last_scaled_, q);

  ifma_capable_ = modulus.bit_count() <= kIfmaMaxModulusBits && n_ >= 16;
  avx512_capable_ = n_ >= 16 && q < (u64{1} << 61);
  if (avx512_capable_) {
    IfmaTables& t = ifma_;
    // Shoup constants of the vector kernels: beta = 2^52 (IFMA) below 2^50, else 2^64 (the
    // full-width tables above are used directly).
    auto shoup_v = [&](u64 w) { return ifma_capable_ ? shoup52(w, q) : shoup_precompute(w, q); };
    if (ifma_capable_) {
      t.fwd_shoup52.resize(n_);
      t.inv_shoup52.resize(n_);
      for (std::size_t i = 0; i < n_; ++i) {
        t.fwd_shoup52[i] = shoup52(fwd_[i], q);
        t.inv_shoup52[i] = shoup52(inv_[i], q);
      }
    }
    t.n_inv_shoup52 = shoup_v(n_inv_);
    t.last_twiddle_scaled_shoup52 = shoup_v(last_scaled_);
  }
}

namespace detail {

// Harvey's forward butterfly layer by layer (Longa-Naehrig Alg. 1 indexing).
// Invariant: every value is in [0, 4q) at the start of each layer.
void ntt_forward_lazy_portable(u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const u64 q = tables.modulus().value();
  const u64 two_q = 2 * q;
  const u64* w = tables.forward_twiddles();
  const u64* ws = tables.forward_twiddles_shoup();
  std::size_t t = n;
  for (std::size_t m = 1; m < n; m <<= 1) {
    t >>= 1;
    for (std::size_t i = 0; i < m; ++i) {
      const u64 wi = w[m + i], wsi = ws[m + i];
      u64* x = a + 2 * i * t;
      u64* y = x + t;
      for (std::size_t j = 0; j < t; ++j) {
        u64 xj = x[j];
        xj -= (xj >= two_q) ? two_q : 0;                 // [0, 2q)
        const u64 v = mul_shoup_lazy(y[j], wi, wsi, q);  // [0, 2q)
        x[j] = xj + v;                                   // [0, 4q)
        y[j] = xj - v + two_q;                           // [0, 4q)
      }
    }
  }
}

// Harvey's inverse (Gentleman-Sande) butterfly, Longa-Naehrig Alg. 2 indexing, with 1/N
// folded into the last layer. Invariant: values in [0, 2q) at the start of each layer.
void ntt_inverse_lazy_portable(u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const u64 q = tables.modulus().value();
  const u64 two_q = 2 * q;
  const u64* w = tables.inverse_twiddles();
  const u64* ws = tables.inverse_twiddles_shoup();
  std::size_t t = 1;
  for (std::size_t m = n; m > 2; m >>= 1) {
    const std::size_t h = m >> 1;
    for (std::size_t i = 0; i < h; ++i) {
      const u64 wi = w[h + i], wsi = ws[h + i];
      u64* x = a + 2 * i * t;
      u64* y = x + t;
      for (std::size_t j = 0; j < t; ++j) {
        const u64 xj = x[j], yj = y[j];
        u64 s = xj + yj;
        s -= (s >= two_q) ? two_q : 0;  // [0, 2q)
        x[j] = s;
        y[j] = mul_shoup_lazy(xj - yj + two_q, wi, wsi, q);  // [0, 2q)
      }
    }
    t <<= 1;
  }
  // Last layer (t = N/2): x' = (x + y) / N, y' = (x - y) * psi^(-bitrev(1)) / N.
  const u64 ni = tables.n_inverse(), nis = tables.n_inverse_shoup();
  const u64 wl = tables.last_twiddle_scaled(), wls = tables.last_twiddle_scaled_shoup();
  u64* x = a;
  u64* y = a + n / 2;
  for (std::size_t j = 0; j < n / 2; ++j) {
    const u64 xj = x[j], yj = y[j];
    x[j] = mul_shoup_lazy(xj + yj, ni, nis, q);
    y[j] = mul_shoup_lazy(xj - yj + two_q, wl, wls, q);
  }
}

}  // namespace detail

namespace {

// Debug builds (HEC_DEBUG) check the documented input range of each transform.
void check_input_range([[maybe_unused]] const char* what, [[maybe_unused]] const u64* a,
                       [[maybe_unused]] const NttTables& tables, [[maybe_unused]] u64 factor) {
#ifdef HEC_DEBUG
  const u64 bound = factor * tables.modulus().value();
  for (std::size_t i = 0; i < tables.ring_dim(); ++i) {
    if (a[i] >= bound) {
      throw std::invalid_argument(std::string(what) + ": input[" + std::to_string(i) +
                                  "] = " + std::to_string(a[i]) + " is not below " +
                                  std::to_string(factor) + "q = " + std::to_string(bound));
    }
  }
#endif
}

bool use_ifma(const NttTables& tables) {
  return tables.avx512_capable() && active_kernel_path() == KernelPath::kAvx512Ifma;
}

}  // namespace

void ntt_forward_lazy_inplace(u64* a, const NttTables& tables) {
  check_input_range("ntt_forward_lazy_inplace", a, tables, 4);
  if (use_ifma(tables)) {
    detail::ntt_forward_lazy_ifma(a, tables);
  } else {
    detail::ntt_forward_lazy_portable(a, tables);
  }
}

void ntt_forward_inplace(u64* a, const NttTables& tables) {
  check_input_range("ntt_forward_inplace", a, tables, 1);
  if (use_ifma(tables)) {
    detail::ntt_forward_ifma(a, tables);
    return;
  }
  detail::ntt_forward_lazy_portable(a, tables);
  const u64 q = tables.modulus().value(), two_q = 2 * q;
  const std::size_t n = tables.ring_dim();
  for (std::size_t i = 0; i < n; ++i) {
    u64 v = a[i];
    v -= (v >= two_q) ? two_q : 0;
    v -= (v >= q) ? q : 0;
    a[i] = v;
  }
}

void ntt_inverse_lazy_inplace(u64* a, const NttTables& tables) {
  check_input_range("ntt_inverse_lazy_inplace", a, tables, 2);
  if (use_ifma(tables)) {
    detail::ntt_inverse_lazy_ifma(a, tables);
  } else {
    detail::ntt_inverse_lazy_portable(a, tables);
  }
}

void ntt_inverse(const u64* in, u64* out, const NttTables& tables) {
  check_input_range("ntt_inverse", in, tables, 2);
  if (use_ifma(tables)) {
    detail::ntt_inverse_ifma(in, out, tables);
    return;
  }
  if (in != out) std::copy(in, in + tables.ring_dim(), out);
  ntt_inverse_inplace(out, tables);
}

void ntt_inverse_inplace(u64* a, const NttTables& tables) {
  check_input_range("ntt_inverse_inplace", a, tables, 2);
  if (use_ifma(tables)) {
    detail::ntt_inverse_ifma(a, tables);
    return;
  }
  detail::ntt_inverse_lazy_portable(a, tables);
  const u64 q = tables.modulus().value();
  const std::size_t n = tables.ring_dim();
  for (std::size_t i = 0; i < n; ++i) a[i] -= (a[i] >= q) ? q : 0;
}

}  // namespace hec::math
