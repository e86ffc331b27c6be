// Hybrid and digit-decomposition key switching (see keyswitch.h for the steps).
#include "bfv/keyswitch.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "math/parallel.h"

namespace hec::bfv {

using math::PolyForm;
using math::RnsPoly;

KeySwitchKey make_key_switch_key(const BfvContext& ctx, const SecretKey& sk,
                                 const RnsPoly& s_prime, math::Prng& prng) {
  const std::size_t k = ctx.q_size(), total = k + ctx.p_ks_size(), n = ctx.ring_dim();
  if (s_prime.form() != PolyForm::kEvaluation || s_prime.num_limbs() < k) {
    throw std::invalid_argument("make_key_switch_key: s' must be in evaluation form with >= " +
                                std::to_string(k) + " limbs, has " +
                                std::to_string(s_prime.num_limbs()));
  }
  const auto& kc = ctx.key_context();
  KeySwitchKey key;
  for (std::size_t d = 0; d < ctx.dnum(); ++d) {
    RnsPoly a(kc, total, PolyForm::kEvaluation);
    math::sample_uniform_mod(prng, kc->base(), n, a.data());
    RnsPoly b(kc, total, PolyForm::kCoefficient);
    const auto e = math::sample_gaussian(prng, n);
    b.set_signed(e);
    math::to_ntt_inplace(b);
    // b = e - a s + [i in D_d] (P_ks mod q_i) s'.
    RnsPoly as = a;
    math::multiply_inplace(as, sk.s);
    math::sub_inplace(b, as);
    for (std::size_t i = ctx.digit_begin(d); i < ctx.digit_end(d); ++i) {
      const math::Modulus& qi = kc->modulus(i);
      const u64 f = ctx.p_ks_mod_q(i);
      u64* bl = b.limb(i);
      const u64* sl = s_prime.limb(i);
      for (std::size_t c = 0; c < n; ++c) {
        bl[c] = math::add_mod(bl[c], math::mul_mod(sl[c], f, qi), qi.value());
      }
    }
    key.b.push_back(std::move(b));
    key.a.push_back(std::move(a));
  }
  return key;
}

void key_switch(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                const KeySwitchKey& key, RnsPoly& out0, RnsPoly& out1) {
  const std::size_t k = ctx.q_size(), s = ctx.p_ks_size(), total = k + s, n = ctx.ring_dim();
  const auto& kc = ctx.key_context();
  if (d.form() != PolyForm::kCoefficient || d.num_limbs() != k || d.context() != kc) {
    throw std::invalid_argument("key_switch: input must be a coefficient-form polynomial over Q (" +
                                std::to_string(k) + " limbs), has " +
                                std::to_string(d.num_limbs()));
  }
  if (key.b.size() != ctx.dnum() || key.a.size() != ctx.dnum()) {
    throw std::invalid_argument("key_switch: key has " + std::to_string(key.b.size()) +
                                " digits, parameters have dnum = " + std::to_string(ctx.dnum()));
  }
  std::vector<RnsPoly> raised;
  raised.reserve(ctx.dnum());
  for (std::size_t dig = 0; dig < ctx.dnum(); ++dig) {
    const std::size_t begin = ctx.digit_begin(dig), end = ctx.digit_end(dig);
    RnsPoly ext(kc, total, PolyForm::kEvaluation);
    // Step (1): fast conversion of the digit's limbs to the other limbs.
    if (end - begin < total) {
      math::AlignedU64Vector tmp((total - (end - begin)) * n);
      ctx.digit_mod_up(dig).convert_approx(d.limb(begin), tmp.data(), n);
      std::memcpy(ext.limb(0), tmp.data(), begin * n * sizeof(u64));
      std::memcpy(ext.limb(end), tmp.data() + begin * n, (total - end) * n * sizeof(u64));
    }
    // Step (2): NTT; the digit's own limbs are the input limbs themselves.
    math::parallel_for(total, [&](std::size_t i) {
      if (i >= begin && i < end) {
        if (d_eval != nullptr) {
          std::memcpy(ext.limb(i), d_eval->limb(i), n * sizeof(u64));
          return;
        }
        std::memcpy(ext.limb(i), d.limb(i), n * sizeof(u64));
      }
      math::ntt_forward_inplace(ext.limb(i), kc->ntt(i));
    });
    raised.push_back(std::move(ext));
  }
  // Step (3): inner products with the key, reduced once.
  std::vector<const RnsPoly*> lhs, kb, ka;
  for (std::size_t dig = 0; dig < ctx.dnum(); ++dig) {
    lhs.push_back(&raised[dig]);
    kb.push_back(&key.b[dig]);
    ka.push_back(&key.a[dig]);
  }
  RnsPoly acc0(kc, total, PolyForm::kEvaluation), acc1(kc, total, PolyForm::kEvaluation);
  math::multiply_accumulate(acc0, lhs, kb);
  math::multiply_accumulate(acc1, lhs, ka);
  if (s == 0) {
    out0 = std::move(acc0);
    out1 = std::move(acc1);
    return;
  }
  // Step (4): mod-down by P_ks.
  auto mod_down = [&](RnsPoly& acc, RnsPoly& out) {
    math::parallel_for(s, [&](std::size_t j) {
      math::ntt_inverse_inplace(acc.limb(k + j), kc->ntt(k + j));
    });
    RnsPoly conv(kc, k, PolyForm::kEvaluation);
    ctx.p_ks_to_q()->convert_approx(acc.limb(k), conv.data(), n);
    out = RnsPoly(kc, k, PolyForm::kEvaluation);
    math::parallel_for(k, [&](std::size_t i) {
      math::ntt_forward_inplace(conv.limb(i), kc->ntt(i));
      const math::Modulus& qi = kc->modulus(i);
      const u64 q = qi.value(), w = ctx.p_ks_inv_mod_q(i), ws = math::shoup_precompute(w, q);
      const u64* a = acc.limb(i);
      const u64* b = conv.limb(i);
      u64* o = out.limb(i);
      for (std::size_t c = 0; c < n; ++c) o[c] = math::mul_shoup(math::sub_mod(a[c], b[c], q), w, ws, q);
    });
  };
  mod_down(acc0, out0);
  mod_down(acc1, out1);
}

}  // namespace hec::bfv
