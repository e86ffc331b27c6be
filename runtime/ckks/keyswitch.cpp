// Hybrid key switching: ModUp of the digits, key product, ModDown (see keyswitch.h).
#include "ckks/keyswitch.h"

#include <stdexcept>

#include "ckks/context_impl.h"
#include "ckks/poly_ops.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"

namespace hec::ckks::detail {
namespace {

// Per-thread scratch reused across calls (a fresh multi-megabyte vector per key switch costs
// page faults on every first touch). Contents are unspecified on entry.
u64* scratch(std::vector<u64>& buffer, std::size_t words) {
  if (buffer.size() < words) buffer.resize(words);
  return buffer.data();
}
thread_local std::vector<u64> tl_coef, tl_acc, tl_conv, tl_perm;

}  // namespace

ModUpDigits mod_up(const Context& ctx, const u64* c, Level level) {
  const Context::Impl& impl = ctx.impl();
  const std::size_t n = impl.n;
  const KeySwitchLevel& ks = impl.key_switch.at(static_cast<std::size_t>(level.value));
  const std::size_t limbs = ks.limbs;
  const std::size_t total = limbs + impl.special_size;
  auto ctx_index = [&](std::size_t k) { return k < limbs ? k : impl.chain_size + (k - limbs); };
  // Step (1): coefficient form of c.
  u64* coef = scratch(tl_coef, limbs * n);
  std::copy(c, c + limbs * n, coef);
  math::parallel_for(limbs,
                     [&](std::size_t i) { math::ntt_inverse_inplace(coef + i * n, impl.ntt[i]); });
  ModUpDigits out;
  out.level = level;
  const std::size_t digits = ks.digit_begin.size();
  out.digits.resize(digits);
  for (ExtendedDigit& d : out.digits) d.words.reset(new u64[total * n]);
  // Step (2): base conversion of each digit to the complement primes, written straight into
  // the digit's rows of those primes (coefficient form for now).
  math::parallel_for(digits, [&](std::size_t j) {
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    u64* const dst = out.digits[j].data();
    if (end - begin == 1) {
      // One-prime digit (BV, or hybrid with alpha = 1): the centred lift of [c]_{q_j}, so the
      // digit has mean zero. An uncentred lift in [0, q_j) has mean q_j / 2, and a constant-
      // mean polynomial times the key noise e has canonical norm ~N times larger (the same
      // effect as in ModDown): measured 7x more BV key-switching noise at N = 2^12.
      const u64 qj = impl.moduli[begin].value();
      const u64* x = coef + begin * n;
      for (std::size_t k = 0; k < total; ++k) {
        if (k == begin) continue;
        const math::Modulus& m = impl.moduli[ctx_index(k)];
        const u64 p = m.value();
        const u64 qj_mod_p = qj >= p ? math::barrett_reduce_128(qj, m) : qj;
        const bool small = qj <= 2 * p;
        u64* o = dst + k * n;
        for (std::size_t t = 0; t < n; ++t) {
          const u64 r = detail::reduce_below(x[t], m, small);
          o[t] = x[t] > qj / 2 ? (r >= qj_mod_p ? r - qj_mod_p : r + p - qj_mod_p) : r;
        }
      }
      return;
    }
    if (!ks.mod_up[j]) return;
    std::vector<u64*> rows;
    rows.reserve(total - (end - begin));
    for (std::size_t k = 0; k < total; ++k) {
      if (k < begin || k >= end) rows.push_back(dst + k * n);
    }
    if (ks.exact_mod_up[j]) {
      ks.mod_up[j]->convert_exact(coef + begin * n, rows.data(), n);
    } else {
      ks.mod_up[j]->convert_approx(coef + begin * n, rows.data(), n);
    }
  });
  // Step (3): copy the digit's own limbs (already NTT form), NTT the converted ones (parallel
  // over digit x limb).
  math::parallel_for(digits * total, [&](std::size_t idx) {
    const std::size_t j = idx / total, k = idx % total;
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    u64* dst = out.digits[j].data() + k * n;
    if (k >= begin && k < end) {
      std::copy(c + k * n, c + (k + 1) * n, dst);
      return;
    }
    math::ntt_forward_inplace(dst, impl.ntt[ctx_index(k)]);
  });
  return out;
}

void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1) {
  const Context::Impl& impl = ctx.impl();
  const Parameters& params = ctx.params();
  const std::size_t n = impl.n;
  const KeySwitchLevel& ks = impl.key_switch.at(static_cast<std::size_t>(ext.level.value));
  const std::size_t limbs = ks.limbs;
  const std::size_t special = impl.special_size;
  const std::size_t total = limbs + special;
  const std::size_t key_limbs = params.limbs_at(key.level);
  const std::size_t key_total = key_limbs + special;
  if (key.level.value < ext.level.value || key.digits.size() < ext.digits.size()) {
    throw std::invalid_argument("key switching: ciphertext level " +
                                std::to_string(ext.level.value) + " exceeds key level " +
                                std::to_string(key.level.value));
  }
  auto ctx_index = [&](std::size_t k) { return k < limbs ? k : impl.chain_size + (k - limbs); };
  auto key_index = [&](std::size_t k) { return k < limbs ? k : key_limbs + (k - limbs); };
  // Step (1): acc = sum_j ext_j * key_j per coefficient in 128-bit registers, reduced once
  // (every 8 digits when there are more: 8 products of 61-bit values stay below 2^125).
  u64* const acc0 = scratch(tl_acc, 2 * total * n);
  u64* const acc1 = acc0 + total * n;
  const std::size_t digits = ext.digits.size();
  math::parallel_for(total, [&](std::size_t k) {
    const math::Modulus& m = impl.moduli[ctx_index(k)];
    const std::size_t kk = key_index(k);
    u64* d0 = acc0 + k * n;
    u64* d1 = acc1 + k * n;
    if (detail::use_avx512()) {
      // AVX-512 path: permute the digits first if needed, then the math core's
      // multiply-accumulate (IFMA for q < 2^50, 52-bit columns up to 2^61).
      std::vector<const u64*> xs(digits), bs(digits), as(digits);
      u64* const permuted = perm ? scratch(tl_perm, digits * n) : nullptr;
      for (std::size_t j = 0; j < digits; ++j) {
        const u64* e = ext.digits[j].data() + k * n;
        if (perm) {
          u64* dst = permuted + j * n;
          const std::uint32_t* p = perm->data();
          for (std::size_t t = 0; t < n; ++t) dst[t] = e[p[t]];
          e = dst;
        }
        xs[j] = e;
        bs[j] = key.digits[j].data() + kk * n;
        as[j] = key.digits[j].data() + (key_total + kk) * n;
      }
      if (detail::use_ifma(m.value())) {
        math::detail::multiply_accumulate_ifma(d0, xs.data(), bs.data(), digits, n, m.value());
        math::detail::multiply_accumulate_ifma(d1, xs.data(), as.data(), digits, n, m.value());
      } else {
        math::detail::multiply_accumulate_wide(d0, xs.data(), bs.data(), digits, n, m.value());
        math::detail::multiply_accumulate_wide(d1, xs.data(), as.data(), digits, n, m.value());
      }
      return;
    }
    constexpr std::size_t kGroup = 8;
    for (std::size_t j0 = 0; j0 < digits; j0 += kGroup) {
      const std::size_t j1 = std::min(digits, j0 + kGroup);
      const u64* e[kGroup];
      const u64* b[kGroup];
      const u64* a[kGroup];
      for (std::size_t j = j0; j < j1; ++j) {
        e[j - j0] = ext.digits[j].data() + k * n;
        b[j - j0] = key.digits[j].data() + kk * n;
        a[j - j0] = key.digits[j].data() + (key_total + kk) * n;
      }
      const std::size_t g = j1 - j0;
      const std::uint32_t* p = perm ? perm->data() : nullptr;
      for (std::size_t t = 0; t < n; ++t) {
        const std::size_t src = p ? p[t] : t;
        math::u128 s0 = j0 == 0 ? 0 : d0[t], s1 = j0 == 0 ? 0 : d1[t];
        for (std::size_t j = 0; j < g; ++j) {
          const u64 x = e[j][src];
          s0 += static_cast<math::u128>(x) * b[j][t];
          s1 += static_cast<math::u128>(x) * a[j][t];
        }
        d0[t] = math::barrett_reduce_128(s0, m);
        d1[t] = math::barrett_reduce_128(s1, m);
      }
    }
  });
  if (special == 0) {
    // BV: no special primes, the key product is the result.
    std::copy(acc0, acc0 + limbs * n, out0);
    std::copy(acc1, acc1 + limbs * n, out1);
    return;
  }
  // Step (2): ModDown both halves: INTT the P limbs, convert the centred value exactly to
  // Q_l, NTT, subtract, multiply by P^-1.
  u64* const conv = scratch(tl_conv, 2 * limbs * n);
  math::parallel_for(2 * special, [&](std::size_t idx) {
    const std::size_t h = idx / special, p = idx % special;
    u64* limb = (h == 0 ? acc0 : acc1) + (limbs + p) * n;
    math::ntt_inverse_inplace(limb, impl.ntt[impl.chain_size + p]);
  });
  math::parallel_for(2, [&](std::size_t h) {
    const u64* p_part = (h == 0 ? acc0 : acc1) + limbs * n;
    u64* out = conv + h * limbs * n;
    if (special == 1) {
      // One special prime: the centred lift of x mod p is x or x - p, exactly.
      const u64 p = impl.moduli[impl.chain_size].value();
      for (std::size_t i = 0; i < limbs; ++i) {
        const math::Modulus& m = impl.moduli[i];
        const u64 q = m.value();
        const u64 p_mod_q = p % q;
        const bool small = p <= 2 * q;
        u64* o = out + i * n;
        for (std::size_t t = 0; t < n; ++t) {
          const u64 x = p_part[t];
          const u64 r = detail::reduce_below(x, m, small);
          o[t] = x > p / 2 ? (r >= p_mod_q ? r - p_mod_q : r + q - p_mod_q) : r;
        }
      }
      return;
    }
    ks.mod_down->convert_exact(p_part, out, n);
  });
  math::parallel_for(2 * limbs, [&](std::size_t idx) {
    const std::size_t h = idx / limbs, i = idx % limbs;
    u64* cv = conv + (h * limbs + i) * n;
    math::ntt_forward_inplace(cv, impl.ntt[i]);
    const u64* a = (h == 0 ? acc0 : acc1) + i * n;
    u64* out = (h == 0 ? out0 : out1) + i * n;
    const u64 q = impl.moduli[i].value();
    const u64 w = ks.p_inv[i], ws = ks.p_inv_shoup[i];
    for (std::size_t t = 0; t < n; ++t) {
      const u64 d = a[t] >= cv[t] ? a[t] - cv[t] : a[t] + q - cv[t];
      out[t] = math::mul_shoup(d, w, ws, q);
    }
  });
}

}  // namespace hec::ckks::detail
