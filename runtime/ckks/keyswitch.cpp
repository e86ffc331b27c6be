// Hybrid key switching: ModUp of the digits, key product, ModDown (see keyswitch.h).
#include "ckks/keyswitch.h"

#include <stdexcept>

#include "ckks/context_impl.h"
#include "ckks/poly_ops.h"
#include "math/parallel.h"

namespace hec::ckks::detail {

ModUpDigits mod_up(const Context& ctx, const u64* c, Level level) {
  const Context::Impl& impl = ctx.impl();
  const std::size_t n = impl.n;
  const KeySwitchLevel& ks = impl.key_switch.at(static_cast<std::size_t>(level.value));
  const std::size_t limbs = ks.limbs;
  const std::size_t total = limbs + impl.special_size;
  auto ctx_index = [&](std::size_t k) { return k < limbs ? k : impl.chain_size + (k - limbs); };
  // Step (1): coefficient form of c.
  std::vector<u64> coef(c, c + limbs * n);
  math::parallel_for(limbs, [&](std::size_t i) {
    math::ntt_inverse_inplace(coef.data() + i * n, impl.ntt[i]);
  });
  ModUpDigits out;
  out.level = level;
  const std::size_t digits = ks.digit_begin.size();
  out.digits.assign(digits, std::vector<u64>(total * n));
  // Step (2): base conversion of each digit to the complement primes.
  std::vector<std::vector<u64>> converted(digits);
  math::parallel_for(digits, [&](std::size_t j) {
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    converted[j].resize((total - (end - begin)) * n);
    ks.mod_up[j]->convert_approx(coef.data() + begin * n, converted[j].data(), n);
  });
  // Step (3): place limbs, NTT the converted ones (parallel over digit x limb).
  math::parallel_for(digits * total, [&](std::size_t idx) {
    const std::size_t j = idx / total, k = idx % total;
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    u64* dst = out.digits[j].data() + k * n;
    if (k >= begin && k < end) {
      std::copy(c + k * n, c + (k + 1) * n, dst);
      return;
    }
    const std::size_t slot = k < begin ? k : k - (end - begin);
    const u64* src = converted[j].data() + slot * n;
    std::copy(src, src + n, dst);
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
  // Step (1): acc = sum_j ext_j * key_j, 128-bit lazy sums reduced every 8 digits.
  std::vector<u64> acc0(total * n), acc1(total * n);
  const std::size_t digits = ext.digits.size();
  math::parallel_for(total, [&](std::size_t k) {
    const math::Modulus& m = impl.moduli[ctx_index(k)];
    const std::size_t kk = key_index(k);
    std::vector<math::u128> s0(n, 0), s1(n, 0);
    for (std::size_t j = 0; j < digits; ++j) {
      const u64* e = ext.digits[j].data() + k * n;
      const u64* b = key.digits[j].data() + kk * n;
      const u64* a = key.digits[j].data() + (key_total + kk) * n;
      if (perm) {
        const std::uint32_t* p = perm->data();
        for (std::size_t t = 0; t < n; ++t) {
          const u64 x = e[p[t]];
          s0[t] += static_cast<math::u128>(x) * b[t];
          s1[t] += static_cast<math::u128>(x) * a[t];
        }
      } else {
        for (std::size_t t = 0; t < n; ++t) {
          s0[t] += static_cast<math::u128>(e[t]) * b[t];
          s1[t] += static_cast<math::u128>(e[t]) * a[t];
        }
      }
      if ((j + 1) % 8 == 0 && j + 1 < digits) {
        for (std::size_t t = 0; t < n; ++t) {
          s0[t] = math::barrett_reduce_128(s0[t], m);
          s1[t] = math::barrett_reduce_128(s1[t], m);
        }
      }
    }
    u64* d0 = acc0.data() + k * n;
    u64* d1 = acc1.data() + k * n;
    for (std::size_t t = 0; t < n; ++t) {
      d0[t] = math::barrett_reduce_128(s0[t], m);
      d1[t] = math::barrett_reduce_128(s1[t], m);
    }
  });
  // Step (2): ModDown both halves: INTT the P limbs, convert to Q_l, NTT, subtract, * P^-1.
  std::vector<u64> conv(2 * limbs * n);
  math::parallel_for(2 * special, [&](std::size_t idx) {
    const std::size_t h = idx / special, p = idx % special;
    u64* limb = (h == 0 ? acc0 : acc1).data() + (limbs + p) * n;
    math::ntt_inverse_inplace(limb, impl.ntt[impl.chain_size + p]);
  });
  math::parallel_for(2, [&](std::size_t h) {
    const u64* p_part = (h == 0 ? acc0 : acc1).data() + limbs * n;
    ks.mod_down->convert_approx(p_part, conv.data() + h * limbs * n, n);
  });
  math::parallel_for(2 * limbs, [&](std::size_t idx) {
    const std::size_t h = idx / limbs, i = idx % limbs;
    u64* cv = conv.data() + (h * limbs + i) * n;
    math::ntt_forward_inplace(cv, impl.ntt[i]);
    const u64* a = (h == 0 ? acc0 : acc1).data() + i * n;
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
