// RNS-CKKS homomorphic operations (see evaluator.h). All polynomials stay in NTT form; only
// rescale and key switching leave it (for one limb, resp. for base conversion).
#include "ckks/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "ckks/keyswitch.h"
#include "ckks/poly_ops.h"
#include "math/parallel.h"

namespace hec::ckks {
namespace {

// A ciphertext of a's ring, level, scale and key with the given degree, its words left
// uninitialized for an operation that writes every one (no zero fill, no first-touch pass).
Ciphertext unfilled_like(const Ciphertext& a, std::size_t degree) {
  Ciphertext r;
  reshape_unfilled(r, a.n, a.limbs, degree, a.level, a.scale, a.key_id);
  return r;
}

std::string level_str(Level l) { return std::to_string(l.value); }

void check_shape(const Context& ctx, const Ciphertext& a, const char* where) {
  const std::size_t limbs = ctx.params().limbs_at(a.level);
  if (a.n != ctx.n() || a.limbs != limbs || a.data.size() != a.size() * limbs * a.n) {
    throw std::invalid_argument(std::string(where) + ": ciphertext shape (n " +
                                std::to_string(a.n) + ", limbs " + std::to_string(a.limbs) + ", " +
                                std::to_string(a.data.size()) +
                                " words) does not match its level " + level_str(a.level));
  }
}

void check_pair(const Context& ctx, const Ciphertext& a, const Ciphertext& b, const char* where) {
  check_shape(ctx, a, where);
  check_shape(ctx, b, where);
  if (a.level != b.level) {
    throw std::invalid_argument(std::string(where) + ": levels differ (" + level_str(a.level) +
                                " vs " + level_str(b.level) + ")");
  }
  if (a.key_id != b.key_id) {
    throw std::invalid_argument(std::string(where) +
                                ": ciphertexts were made under different keys");
  }
}

void check_same_scale(double s, double t, const char* where) {
  if (std::fabs(s - t) > 1e-9 * std::max(std::fabs(s), std::fabs(t))) {
    throw std::invalid_argument(std::string(where) + ": scales differ (" + std::to_string(s) +
                                " vs " + std::to_string(t) + ")");
  }
}

void check_plain(const Context& ctx, const Ciphertext& a, const Plaintext& p, const char* where) {
  check_shape(ctx, a, where);
  if (p.level != a.level || p.limbs != a.limbs || p.n != a.n || p.data.size() != p.limbs * p.n) {
    throw std::invalid_argument(std::string(where) + ": plaintext level " + level_str(p.level) +
                                " does not match ciphertext level " + level_str(a.level));
  }
}

// round(value) mod each prime of the first `limbs` primes (exact via fmodl).
std::vector<u64> integer_residues(long double value, const Context::Impl& impl, std::size_t limbs) {
  std::vector<u64> r(limbs);
  for (std::size_t i = 0; i < limbs; ++i) {
    const long double q = static_cast<long double>(impl.moduli[i].value());
    long double m = std::fmod(value, q);
    if (m < 0) m += q;
    u64 v = static_cast<u64>(m);
    if (v >= impl.moduli[i].value()) v -= impl.moduli[i].value();
    r[i] = v;
  }
  return r;
}

}  // namespace

Evaluator::Evaluator(ContextPtr context) : context_(std::move(context)) {}

void Evaluator::add_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_pair(*context_, a, b, "Evaluator::add");
  check_same_scale(a.scale, b.scale, "Evaluator::add");
  if (b.degree > a.degree) {
    a.data.resize(b.size() * a.limbs * a.n, 0);
    a.degree = b.degree;
  }
  const Context::Impl& impl = context_->impl();
  // Limb by limb over the threads (memory-bound: two cores draw more bandwidth than one).
  math::parallel_for(
      b.size() * a.limbs,
      [&](std::size_t idx) {
        const std::size_t k = idx / a.limbs, i = idx % a.limbs;
        detail::add_limb(a.limb(k, i), b.limb(k, i), a.n, impl.moduli[i].value());
      },
      a.n);
}

void Evaluator::sub_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_pair(*context_, a, b, "Evaluator::sub");
  check_same_scale(a.scale, b.scale, "Evaluator::sub");
  if (b.degree > a.degree) {
    a.data.resize(b.size() * a.limbs * a.n, 0);
    a.degree = b.degree;
  }
  const Context::Impl& impl = context_->impl();
  // Limb by limb over the threads (memory-bound: two cores draw more bandwidth than one).
  math::parallel_for(
      b.size() * a.limbs,
      [&](std::size_t idx) {
        const std::size_t k = idx / a.limbs, i = idx % a.limbs;
        detail::sub_limb(a.limb(k, i), b.limb(k, i), a.n, impl.moduli[i].value());
      },
      a.n);
}

namespace {

// out = a + b or a - b (same degree) in one pass: no copy of a first.
Ciphertext add_or_sub(const Context& ctx, const Ciphertext& a, const Ciphertext& b, bool subtract,
                      const char* where) {
  check_pair(ctx, a, b, where);
  check_same_scale(a.scale, b.scale, where);
  Ciphertext r = unfilled_like(a, a.degree);
  const Context::Impl& impl = ctx.impl();
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (std::size_t i = 0; i < a.limbs; ++i) {
      const u64 q = impl.moduli[i].value();
      const u64* x = a.limb(k, i);
      const u64* y = b.limb(k, i);
      u64* z = r.limb(k, i);
      if (detail::use_avx512()) {
        if (subtract) {
          std::copy(x, x + a.n, z);  // in cache: one limb
          math::detail::sub_avx512(z, y, a.n, q);
        } else {
          math::detail::add_avx512(z, x, y, a.n, q);
        }
        continue;
      }
      for (std::size_t t = 0; t < a.n; ++t) {
        if (subtract) {
          z[t] = x[t] >= y[t] ? x[t] - y[t] : x[t] + q - y[t];
        } else {
          const u64 s = x[t] + y[t];
          z[t] = s >= q ? s - q : s;
        }
      }
    }
  }
  return r;
}

}  // namespace

Ciphertext Evaluator::add(const Ciphertext& a, const Ciphertext& b) const {
  if (a.degree != b.degree) {
    Ciphertext r = a;
    add_inplace(r, b);
    return r;
  }
  return add_or_sub(*context_, a, b, false, "Evaluator::add");
}

Ciphertext Evaluator::sub(const Ciphertext& a, const Ciphertext& b) const {
  if (a.degree != b.degree) {
    Ciphertext r = a;
    sub_inplace(r, b);
    return r;
  }
  return add_or_sub(*context_, a, b, true, "Evaluator::sub");
}

void Evaluator::negate_inplace(Ciphertext& a) const {
  check_shape(*context_, a, "Evaluator::negate");
  const Context::Impl& impl = context_->impl();
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (std::size_t i = 0; i < a.limbs; ++i) {
      detail::negate_limb(a.limb(k, i), a.n, impl.moduli[i].value());
    }
  }
}

void Evaluator::add_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  check_plain(*context_, a, p, "Evaluator::add_plain");
  check_same_scale(a.scale, p.scale, "Evaluator::add_plain");
  const Context::Impl& impl = context_->impl();
  for (std::size_t i = 0; i < a.limbs; ++i) {
    detail::add_limb(a.limb(0, i), p.limb(i), a.n, impl.moduli[i].value());
  }
}

void Evaluator::sub_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  check_plain(*context_, a, p, "Evaluator::sub_plain");
  check_same_scale(a.scale, p.scale, "Evaluator::sub_plain");
  const Context::Impl& impl = context_->impl();
  for (std::size_t i = 0; i < a.limbs; ++i) {
    detail::sub_limb(a.limb(0, i), p.limb(i), a.n, impl.moduli[i].value());
  }
}

void Evaluator::add_constant_inplace(Ciphertext& a, double c) const {
  check_shape(*context_, a, "Evaluator::add_constant");
  if (!std::isfinite(c)) throw std::invalid_argument("Evaluator::add_constant: c not finite");
  const Context::Impl& impl = context_->impl();
  const long double v = std::round(static_cast<long double>(c) * a.scale);
  const std::vector<u64> r = integer_residues(v, impl, a.limbs);
  for (std::size_t i = 0; i < a.limbs; ++i) {
    const u64 q = impl.moduli[i].value();
    u64* limb = a.limb(0, i);
    for (std::size_t t = 0; t < a.n; ++t) {
      const u64 s = limb[t] + r[i];
      limb[t] = s >= q ? s - q : s;
    }
  }
}

namespace {

// X^{N/2} in NTT form modulo the first `limbs` primes: limb i at out + i * N.
std::vector<u64> monomial_half_ntt(const Context::Impl& impl, std::size_t limbs) {
  std::vector<std::int64_t> coeffs(impl.n, 0);
  coeffs[impl.n / 2] = 1;
  std::vector<u64> out(limbs * impl.n);
  detail::small_to_ntt(impl, coeffs.data(), 0, limbs, out.data());
  return out;
}

}  // namespace

void Evaluator::add_complex_constant_inplace(Ciphertext& a, double re, double im) const {
  check_shape(*context_, a, "Evaluator::add_complex_constant");
  if (!std::isfinite(im)) throw std::invalid_argument("Evaluator::add_complex_constant: im");
  add_constant_inplace(a, re);
  const Context::Impl& impl = context_->impl();
  const long double v = std::round(static_cast<long double>(im) * a.scale);
  const std::vector<u64> r = integer_residues(v, impl, a.limbs);
  const std::vector<u64> mono = monomial_half_ntt(impl, a.limbs);
  for (std::size_t i = 0; i < a.limbs; ++i) {
    const u64 q = impl.moduli[i].value();
    std::vector<u64> term(mono.begin() + i * a.n, mono.begin() + (i + 1) * a.n);
    detail::mul_scalar_limb(term.data(), r[i], a.n, q);
    detail::add_limb(a.limb(0, i), term.data(), a.n, q);
  }
}

void Evaluator::multiply_by_i_inplace(Ciphertext& a) const {
  check_shape(*context_, a, "Evaluator::multiply_by_i");
  const Context::Impl& impl = context_->impl();
  const std::vector<u64> mono = monomial_half_ntt(impl, a.limbs);
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (std::size_t i = 0; i < a.limbs; ++i) {
      detail::mul_limb(a.limb(k, i), mono.data() + i * a.n, a.n, impl.moduli[i]);
    }
  }
}

namespace {

// Per-thread scratch (math::scratch).
thread_local std::vector<u64> tl_rescale_last, tl_rescale_limb, tl_relin;

}  // namespace

Ciphertext Evaluator::multiply(const Ciphertext& a, const Ciphertext& b) const {
  Ciphertext out;
  multiply(a, b, out);
  return out;
}

void Evaluator::multiply(const Ciphertext& a, const Ciphertext& b, Ciphertext& out) const {
  // Tensor product: out_k = sum_{i + j = k} a_i * b_j, per limb.
  check_pair(*context_, a, b, "Evaluator::multiply");
  if (&out == &a || &out == &b) {
    Ciphertext r;
    multiply(a, b, r);
    out = std::move(r);
    return;
  }
  const Context::Impl& impl = context_->impl();
  const bool linear = a.degree == 1 && b.degree == 1;
  // The degree-1 products write every word; higher degrees accumulate into zeros. out's
  // storage is reused when it is large enough (no page faults on fresh memory).
  reshape_unfilled(out, a.n, a.limbs, a.degree + b.degree, a.level, a.scale * b.scale, a.key_id);
  if (!linear) std::fill(out.data.begin(), out.data.end(), 0);
  const std::size_t n = a.n;
  math::parallel_for(a.limbs, [&](std::size_t i) {
    const math::Modulus& m = impl.moduli[i];
    if (a.degree == 1 && b.degree == 1 && detail::use_avx512() && !detail::use_ifma(m.value())) {
      // Moduli of 50 to 61 bits: the cross term as one two-product accumulation.
      const u64* const x01[2] = {a.limb(0, i), a.limb(1, i)};
      const u64* const y10[2] = {b.limb(1, i), b.limb(0, i)};
      math::detail::multiply_accumulate_wide(out.limb(1, i), x01, y10, 2, n, m.value());
      detail::mul_limb_to(out.limb(0, i), a.limb(0, i), b.limb(0, i), n, m);
      detail::mul_limb_to(out.limb(2, i), a.limb(1, i), b.limb(1, i), n, m);
      return;
    }
    if (a.degree == 1 && b.degree == 1 && detail::use_ifma(m.value())) {
      detail::mul_limb_to(out.limb(0, i), a.limb(0, i), b.limb(0, i), n, m);
      detail::mul_limb_to(out.limb(2, i), a.limb(1, i), b.limb(1, i), n, m);
      detail::mul_limb_to(out.limb(1, i), a.limb(0, i), b.limb(1, i), n, m);
      detail::mul_add_limb(out.limb(1, i), a.limb(1, i), b.limb(0, i), n, m);
      return;
    }
    if (a.degree == 1 && b.degree == 1) {
      const u64 *a0 = a.limb(0, i), *a1 = a.limb(1, i), *b0 = b.limb(0, i), *b1 = b.limb(1, i);
      u64 *c0 = out.limb(0, i), *c1 = out.limb(1, i), *c2 = out.limb(2, i);
      for (std::size_t t = 0; t < n; ++t) {
        c0[t] = math::mul_mod(a0[t], b0[t], m);
        c2[t] = math::mul_mod(a1[t], b1[t], m);
        const math::u128 cross =
            static_cast<math::u128>(a0[t]) * b1[t] + static_cast<math::u128>(a1[t]) * b0[t];
        c1[t] = math::barrett_reduce_128(cross, m);
      }
      return;
    }
    for (std::size_t x = 0; x < a.size(); ++x) {
      for (std::size_t y = 0; y < b.size(); ++y) {
        detail::mul_add_limb(out.limb(x + y, i), a.limb(x, i), b.limb(y, i), n, m);
      }
    }
  });
}

void Evaluator::multiply_inplace(Ciphertext& a, const Ciphertext& b) const { a = multiply(a, b); }

void Evaluator::multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const {
  check_plain(*context_, a, p, "Evaluator::multiply_plain");
  const Context::Impl& impl = context_->impl();
  math::parallel_for(a.limbs, [&](std::size_t i) {
    for (std::size_t k = 0; k < a.size(); ++k) {
      detail::mul_limb(a.limb(k, i), p.limb(i), a.n, impl.moduli[i]);
    }
  });
  a.scale *= p.scale;
}

void Evaluator::multiply_constant_inplace(Ciphertext& a, double c, double constant_scale) const {
  check_shape(*context_, a, "Evaluator::multiply_constant");
  if (!std::isfinite(c) || !std::isfinite(constant_scale) || constant_scale <= 0) {
    throw std::invalid_argument("Evaluator::multiply_constant: c = " + std::to_string(c) +
                                ", constant_scale = " + std::to_string(constant_scale) +
                                " (need finite values and a positive scale)");
  }
  const long double v = std::round(static_cast<long double>(c) * constant_scale);
  const Context::Impl& impl = context_->impl();
  const std::vector<u64> r = integer_residues(v, impl, a.limbs);
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (std::size_t i = 0; i < a.limbs; ++i) {
      detail::mul_scalar_limb(a.limb(k, i), r[i], a.n, impl.moduli[i].value());
    }
  }
  a.scale *= constant_scale;
}

void Evaluator::multiply_constant_inplace(Ciphertext& a, double c) const {
  check_shape(*context_, a, "Evaluator::multiply_constant");
  const std::size_t top = a.limbs - 1;
  multiply_constant_inplace(a, c, static_cast<double>(context_->params().chain()[top]));
}

void Evaluator::multiply_integer_inplace(Ciphertext& a, std::int64_t k) const {
  check_shape(*context_, a, "Evaluator::multiply_integer");
  const Context::Impl& impl = context_->impl();
  const std::vector<u64> r = integer_residues(static_cast<long double>(k), impl, a.limbs);
  for (std::size_t x = 0; x < a.size(); ++x) {
    for (std::size_t i = 0; i < a.limbs; ++i) {
      detail::mul_scalar_limb(a.limb(x, i), r[i], a.n, impl.moduli[i].value());
    }
  }
}

void Evaluator::relinearize_inplace(Ciphertext& a, const RelinKey& key) const {
  check_shape(*context_, a, "Evaluator::relinearize");
  if (a.degree != 2) {
    throw std::invalid_argument("Evaluator::relinearize: degree " + std::to_string(a.degree) +
                                ", expected 2");
  }
  if (key.key.key_id != a.key_id) {
    throw std::invalid_argument("Evaluator::relinearize: relinearization key is for another key");
  }
  if (key.key.level.value < a.level.value) {
    throw std::invalid_argument("Evaluator::relinearize: ciphertext level " + level_str(a.level) +
                                " exceeds key level " + level_str(key.key.level));
  }
  const std::size_t words = a.limbs * a.n;
  // Overwritten by the key product (per-thread scratch: no page faults on fresh memory).
  u64* const d0 = math::scratch(tl_relin, 2 * words);
  u64* const d1 = d0 + words;
  const detail::ModUpDigits ext = detail::mod_up(*context_, a.poly(2), a.level);
  detail::key_product_mod_down(*context_, ext, key.key, nullptr, d0, d1);
  const Context::Impl& impl = context_->impl();
  for (std::size_t i = 0; i < a.limbs; ++i) {
    const u64 q = impl.moduli[i].value();
    detail::add_limb(a.limb(0, i), d0 + i * a.n, a.n, q);
    detail::add_limb(a.limb(1, i), d1 + i * a.n, a.n, q);
  }
  a.data.resize(2 * words);
  a.degree = 1;
}

Ciphertext Evaluator::multiply_relin(const Ciphertext& a, const Ciphertext& b,
                                     const RelinKey& key) const {
  Ciphertext r = multiply(a, b);
  relinearize_inplace(r, key);
  return r;
}

void Evaluator::multiply_relin(const Ciphertext& a, const Ciphertext& b, const RelinKey& key,
                               Ciphertext& out) const {
  multiply(a, b, out);
  relinearize_inplace(out, key);
}

// Rescale of `a` (level >= 1) into the storage at `dst` (limb i of polynomial k at
// dst + (k * out_limbs + i) * n, out_limbs = a.limbs - 1). dst may be a.data itself with
// out_limbs = a.limbs (in place: each limb is read before it is written, and only by its
// own task).
void Evaluator::rescale_into(const Ciphertext& a, u64* dst, std::size_t out_stride) const {
  // Step (1): last limb to coefficient form. Step (2): per remaining limb, its centred
  // residues mod q_i, NTT. Step (3): c_i <- (c_i - [c]_{q_top}) * q_top^{-1} mod q_i.
  const Context::Impl& impl = context_->impl();
  const std::size_t n = a.n;
  const std::size_t top = a.limbs - 1;
  const u64 q_top = impl.moduli[top].value();
  const std::size_t l = static_cast<std::size_t>(a.level.value);
  // The last limbs in coefficient form; the caller's thread owns this scratch for the call
  // (the loops below read it from other threads only while this call runs).
  u64* const last = math::scratch(tl_rescale_last, a.size() * n);
  math::parallel_for(a.size(), [&](std::size_t k) {
    math::ntt_inverse(a.limb(k, top), last + k * n, impl.ntt[top]);
  });
  const u64 half = q_top / 2;
  math::parallel_for(a.size() * top, [&](std::size_t idx) {
    const std::size_t k = idx / top, i = idx % top;
    const math::Modulus& m = impl.moduli[i];
    const u64 q = m.value();
    const u64* lk = last + k * n;
    u64* const out = dst + (k * out_stride + i) * n;
    const u64* src = a.limb(k, i);
    // The correction: in out itself when out is not the source limb, else in a scratch limb.
    u64* const conv = out == src ? math::scratch(tl_rescale_limb, n) : out;
    const u64 q_top_mod = q_top % q;
    const bool small = q_top <= 2 * q;
    if (small && detail::use_avx512()) {
      math::detail::centre_reduce_avx512(conv, lk, n, q, q_top_mod, half);
    } else if (detail::use_avx512() && q_top / q < (u64{1} << 51)) {
      // A top prime much larger than q_i (60 over 54 bits): the wide kernel's quotient
      // estimate (was a scalar 128-bit reduction per coefficient: 29% of a meancov server).
      math::detail::centre_reduce_wide_avx512(conv, lk, n, q, q_top_mod, half);
    } else {
      for (std::size_t t = 0; t < n; ++t) {
        const u64 x = lk[t];
        // centred: x - q_top when x > q_top / 2
        const u64 r = detail::reduce_below(x, m, small);
        conv[t] = x > half ? (r >= q_top_mod ? r - q_top_mod : r + q - q_top_mod) : r;
      }
    }
    math::ntt_forward_inplace(conv, impl.ntt[i]);
    const u64 w = impl.rescale_inv[l][i], ws = impl.rescale_inv_shoup[l][i];
    if (detail::use_avx512()) {
      // conv <- (src - conv) * w, then into out when they differ.
      math::detail::sub_scale_avx512(conv, src, n, w, ws, q);
      if (conv != out) std::copy(conv, conv + n, out);
      return;
    }
    for (std::size_t t = 0; t < n; ++t) {
      const u64 d = src[t] >= conv[t] ? src[t] - conv[t] : src[t] + q - conv[t];
      out[t] = math::mul_shoup(d, w, ws, q);
    }
  });
}

namespace {

void check_rescalable(const Context& ctx, const Ciphertext& a) {
  check_shape(ctx, a, "Evaluator::rescale");
  if (a.level.value < 1) {
    throw std::invalid_argument("Evaluator::rescale: ciphertext at level 0 has no prime to drop");
  }
}

}  // namespace

void Evaluator::rescale_inplace(Ciphertext& a) const {
  check_rescalable(*context_, a);
  // In place, limb positions kept (no fresh allocation: at 2^16 a ciphertext is 26 MB of
  // page faults), then the polynomials after the first moved down over the dropped limbs.
  rescale_into(a, a.data.data(), a.limbs);
  const std::size_t top = a.limbs - 1;
  for (std::size_t k = 1; k < a.size(); ++k) {
    std::memmove(a.data.data() + k * top * a.n, a.limb(k, 0), top * a.n * sizeof(u64));
  }
  a.data.resize(a.size() * top * a.n);
  a.limbs = top;
  a.level = Level(a.level.value - 1);
  a.scale /= static_cast<double>(context_->impl().moduli[top].value());
}

void Evaluator::rescale(const Ciphertext& a, Ciphertext& out) const {
  if (&a == &out) {
    rescale_inplace(out);
    return;
  }
  check_rescalable(*context_, a);
  const std::size_t top = a.limbs - 1;
  const double q_top = static_cast<double>(context_->impl().moduli[top].value());
  reshape_unfilled(out, a.n, top, a.degree, Level(a.level.value - 1), a.scale / q_top, a.key_id);
  rescale_into(a, out.data.data(), top);
}

void Evaluator::drop_to_level_inplace(Ciphertext& a, Level level) const {
  check_shape(*context_, a, "Evaluator::drop_to_level");
  if (level.value > a.level.value || level.value < 0) {
    throw std::invalid_argument("Evaluator::drop_to_level: target level " + level_str(level) +
                                " outside [0, " + level_str(a.level) + "]");
  }
  const std::size_t limbs = context_->params().limbs_at(level);
  Words out(a.size() * limbs * a.n);
  for (std::size_t k = 0; k < a.size(); ++k) {
    std::copy(a.limb(k, 0), a.limb(k, 0) + limbs * a.n, out.data() + k * limbs * a.n);
  }
  a.data = std::move(out);
  a.limbs = limbs;
  a.level = level;
}

void Evaluator::drop_to_level_inplace(Plaintext& p, Level level) const {
  if (level.value > p.level.value || level.value < 0) {
    throw std::invalid_argument("Evaluator::drop_to_level: target level " + level_str(level) +
                                " outside [0, " + level_str(p.level) + "]");
  }
  p.limbs = context_->params().limbs_at(level);
  p.data.resize(p.limbs * p.n);
  p.level = level;
}

namespace {

const KeySwitchKey& galois_key(const GaloisKeys& keys, std::uint64_t g, const Ciphertext& a,
                               const char* where) {
  auto it = keys.keys.find(g);
  if (it == keys.keys.end()) {
    throw std::invalid_argument(std::string(where) + ": no Galois key for element " +
                                std::to_string(g));
  }
  if (keys.key_id != a.key_id) {
    throw std::invalid_argument(std::string(where) + ": Galois keys are for another key");
  }
  if (it->second.level.value < a.level.value) {
    throw std::invalid_argument(std::string(where) + ": ciphertext level " + level_str(a.level) +
                                " exceeds Galois key level " + level_str(it->second.level));
  }
  return it->second;
}

}  // namespace

void Evaluator::apply_galois(const Ciphertext& a, std::uint64_t g, const GaloisKeys& keys,
                             Ciphertext& out) const {
  check_shape(*context_, a, "Evaluator::rotate");
  if (a.degree != 1) {
    throw std::invalid_argument("Evaluator::rotate: degree " + std::to_string(a.degree) +
                                ", relinearize first");
  }
  if (g == 1) {
    if (&out != &a) out = a;
    return;
  }
  const KeySwitchKey& key = galois_key(keys, g, a, "Evaluator::rotate");
  const detail::ModUpDigits ext = detail::mod_up(*context_, a.poly(1), a.level);
  // The key is stored as key o perm^-1 (keys.h): switch the unpermuted c_1, then perm(c_0 +
  // r_0) and perm(r_1) limb by limb into the result (c_0 is read while it is written, so
  // in place the result goes to a fresh array first).
  const std::vector<std::uint32_t>& perm = context_->impl().galois_permutation(g);
  if (&out == &a) {
    // Into this thread's spare storage, then swapped with a's: a's former storage is the
    // spare of the next in-place rotation (no fresh pages in steady state).
    thread_local Words spare;
    Words& r = spare;  // named here: inside the key switch's loops `spare` is each worker's
    r.resize(2 * a.limbs * a.n);
    u64* const r0 = r.data();
    detail::galois_key_switch(*context_, ext, key, perm, a.poly(0), r0, r0 + a.limbs * a.n);
    std::swap(out.data, r);
    return;
  }
  reshape_unfilled(out, a.n, a.limbs, 1, a.level, a.scale, a.key_id);  // every word written
  detail::galois_key_switch(*context_, ext, key, perm, a.poly(0), out.poly(0), out.poly(1));
}

void Evaluator::apply_galois_inplace(Ciphertext& a, std::uint64_t g, const GaloisKeys& keys) const {
  apply_galois(a, g, keys, a);
}

void Evaluator::rotate(const Ciphertext& a, int steps, const GaloisKeys& keys,
                       Ciphertext& out) const {
  apply_galois(a, context_->galois_element(steps), keys, out);
}

void Evaluator::rotate_inplace(Ciphertext& a, int steps, const GaloisKeys& keys) const {
  apply_galois_inplace(a, context_->galois_element(steps), keys);
}

void Evaluator::conjugate_inplace(Ciphertext& a, const GaloisKeys& keys) const {
  apply_galois_inplace(a, context_->conjugation_element(), keys);
}

std::vector<Ciphertext> Evaluator::rotate_hoisted(const Ciphertext& a,
                                                  const std::vector<int>& steps,
                                                  const GaloisKeys& keys) const {
  check_shape(*context_, a, "Evaluator::rotate_hoisted");
  if (a.degree != 1) {
    throw std::invalid_argument("Evaluator::rotate_hoisted: degree " + std::to_string(a.degree) +
                                ", relinearize first");
  }
  std::vector<std::uint64_t> elements;
  for (int s : steps) {
    const std::uint64_t g = context_->galois_element(s);
    if (g != 1) galois_key(keys, g, a, "Evaluator::rotate_hoisted");
    elements.push_back(g);
  }
  const Context::Impl& impl = context_->impl();
  const detail::ModUpDigits ext = detail::mod_up(*context_, a.poly(1), a.level);
  std::vector<Ciphertext> out;
  out.reserve(steps.size());
  for (std::uint64_t g : elements) {
    if (g == 1) {
      out.push_back(a);
      continue;
    }
    // Stored keys are key o perm^-1 (keys.h): the product of the unpermuted digits, then
    // perm(c_0 + r_0), perm(r_1).
    Ciphertext r = unfilled_like(a, 1);  // every word written by the key switch
    detail::galois_key_switch(*context_, ext, keys.keys.at(g), impl.galois_permutation(g),
                              a.poly(0), r.poly(0), r.poly(1));
    out.push_back(std::move(r));
  }
  return out;
}

Ciphertext Evaluator::rotate_sum_hoisted(const Ciphertext& a, const std::vector<int>& steps,
                                         const GaloisKeys& keys) const {
  check_shape(*context_, a, "Evaluator::rotate_sum_hoisted");
  if (a.degree != 1) {
    throw std::invalid_argument("Evaluator::rotate_sum_hoisted: degree " +
                                std::to_string(a.degree) + ", relinearize first");
  }
  if (steps.empty()) throw std::invalid_argument("Evaluator::rotate_sum_hoisted: no steps");
  const Context::Impl& impl = context_->impl();
  const std::size_t n = a.n;
  // Step (1): the terms: rotation 0 is `a` itself (added at the end), every other one a
  // Galois element with its key and NTT-domain permutation.
  bool identity = false;
  std::vector<const KeySwitchKey*> term_keys;
  std::vector<const std::vector<std::uint32_t>*> perms;
  for (int s : steps) {
    const std::uint64_t g = context_->galois_element(s);
    if (g == 1) {
      if (identity) {
        throw std::invalid_argument("Evaluator::rotate_sum_hoisted: step " + std::to_string(s) +
                                    " repeats the identity");
      }
      identity = true;
      continue;
    }
    term_keys.push_back(&galois_key(keys, g, a, "Evaluator::rotate_sum_hoisted"));
    perms.push_back(&impl.galois_permutation(g));
  }
  if (term_keys.empty()) return a;
  Ciphertext r = unfilled_like(a, 1);  // every word written by the key products
  // Step (2): one ModUp, the key products summed, one ModDown.
  const detail::ModUpDigits ext = detail::mod_up(*context_, a.poly(1), a.level);
  detail::key_products_mod_down(*context_, ext, term_keys, perms, r.poly(0), r.poly(1));
  // Step (3): the c_0 parts, permuted in the NTT domain, and `a` itself for step 0.
  for (std::size_t i = 0; i < a.limbs; ++i) {
    const u64* src = a.limb(0, i);
    u64* dst = r.limb(0, i);
    const u64 q = impl.moduli[i].value();
    for (const std::vector<std::uint32_t>* perm : perms) {
      const std::uint32_t* p = perm->data();
      for (std::size_t t = 0; t < n; ++t) {
        const u64 s = dst[t] + src[p[t]];
        dst[t] = s >= q ? s - q : s;
      }
    }
    if (identity) {
      detail::add_limb(dst, src, n, q);
      detail::add_limb(r.limb(1, i), a.limb(1, i), n, q);
    }
  }
  return r;
}

}  // namespace hec::ckks
