// Hybrid and digit-decomposition key switching (see keyswitch.h for the steps).
#include "bfv/keyswitch.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "bfv/hps.h"
#include "math/parallel.h"

namespace hec::bfv {

using math::PolyForm;
using math::RnsPoly;

KeySwitchKey make_key_switch_key(const BfvContext& ctx, const SecretKey& sk, const RnsPoly& s_prime,
                                 math::Prng& prng) {
  const std::size_t k = ctx.q_size(), total = k + ctx.p_ks_size(), n = ctx.ring_dim();
  if (s_prime.form() != PolyForm::kEvaluation || s_prime.num_limbs() < k) {
    throw std::invalid_argument(
        "make_key_switch_key: s' must be in evaluation form with >= " + std::to_string(k) +
        " limbs, has " + std::to_string(s_prime.num_limbs()));
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

namespace {

struct KeySwitchScratch {
  std::vector<RnsPoly> raised;
  RnsPoly acc0, acc1, conv;
  math::AlignedU64Vector tmp;
};

// p as an evaluation-form polynomial of `limbs` limbs of kc, reallocated only if its shape
// differs (its content is not cleared).
RnsPoly& ensure_shape(RnsPoly& p, const std::shared_ptr<const math::RnsContext>& kc,
                      std::size_t limbs) {
  if (p.context() != kc || p.num_limbs() != limbs) {
    p = RnsPoly(kc, limbs, PolyForm::kEvaluation);
  }
  p.set_form(PolyForm::kEvaluation);
  return p;
}

}  // namespace

void key_switch(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                const KeySwitchKey& key, RnsPoly& out0, RnsPoly& out1, bool accumulate) {
  const std::size_t k = ctx.q_size(), s = ctx.p_ks_size(), total = k + s, n = ctx.ring_dim();
  const auto& kc = ctx.key_context();
  if (d.form() != PolyForm::kCoefficient || d.num_limbs() != k || d.context() != kc) {
    throw std::invalid_argument("key_switch: input must be a coefficient-form polynomial over Q (" +
                                std::to_string(k) + " limbs), has " +
                                std::to_string(d.num_limbs()));
  }
  if (accumulate && (out0.context() != kc || out0.num_limbs() != k || out1.context() != kc ||
                     out1.num_limbs() != k || out0.form() != PolyForm::kEvaluation ||
                     out1.form() != PolyForm::kEvaluation)) {
    throw std::invalid_argument("key_switch: accumulating outputs must be evaluation-form over Q");
  }
  if (key.b.size() != ctx.dnum() || key.a.size() != ctx.dnum()) {
    throw std::invalid_argument("key_switch: key has " + std::to_string(key.b.size()) +
                                " digits, parameters have dnum = " + std::to_string(ctx.dnum()));
  }
  // Scratch reused across calls on this thread: no allocation or zeroing per key switch.
  thread_local KeySwitchScratch scratch;
  auto& raised = scratch.raised;
  if (raised.size() < ctx.dnum()) raised.resize(ctx.dnum());
  for (std::size_t dig = 0; dig < ctx.dnum(); ++dig) {
    const std::size_t begin = ctx.digit_begin(dig), end = ctx.digit_end(dig);
    RnsPoly& ext = ensure_shape(raised[dig], kc, total);
    // Step (1): fast conversion of the digit's limbs to the other limbs.
    if (end - begin < total) {
      scratch.tmp.resize((total - (end - begin)) * n);
      ctx.digit_mod_up(dig).convert_approx(d.limb(begin), scratch.tmp.data(), n);
      std::memcpy(ext.limb(0), scratch.tmp.data(), begin * n * sizeof(u64));
      std::memcpy(ext.limb(end), scratch.tmp.data() + begin * n, (total - end) * n * sizeof(u64));
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
  }
  // Step (3): inner products with the key, reduced once.
  std::vector<const RnsPoly*> lhs, kb, ka;
  for (std::size_t dig = 0; dig < ctx.dnum(); ++dig) {
    lhs.push_back(&raised[dig]);
    kb.push_back(&key.b[dig]);
    ka.push_back(&key.a[dig]);
  }
  RnsPoly& acc0 = ensure_shape(scratch.acc0, kc, total);
  RnsPoly& acc1 = ensure_shape(scratch.acc1, kc, total);
  math::multiply_accumulate(acc0, lhs, kb);
  math::multiply_accumulate(acc1, lhs, ka);
  if (!accumulate) {
    ensure_shape(out0, kc, k);
    ensure_shape(out1, kc, k);
  }
  // Step (4): mod-down by P_ks (with s = 0: out = acc), written or added to out.
  auto mod_down = [&](RnsPoly& acc, RnsPoly& out) {
    if (s > 0) {
      math::parallel_for(
          s, [&](std::size_t j) { math::ntt_inverse_inplace(acc.limb(k + j), kc->ntt(k + j)); });
    }
    RnsPoly& conv = ensure_shape(scratch.conv, kc, k);
    if (s > 0) ctx.p_ks_to_q()->convert_approx(acc.limb(k), conv.data(), n);
    math::parallel_for(k, [&](std::size_t i) {
      const math::Modulus& qi = kc->modulus(i);
      const u64 q = qi.value();
      const u64* a = acc.limb(i);
      u64* o = out.limb(i);
      if (s == 0) {
        for (std::size_t c = 0; c < n; ++c) o[c] = accumulate ? math::add_mod(o[c], a[c], q) : a[c];
        return;
      }
      math::ntt_forward_inplace(conv.limb(i), kc->ntt(i));
      const u64 w = ctx.p_ks_inv_mod_q(i), ws = math::shoup_precompute(w, q);
      const u64* b = conv.limb(i);
      for (std::size_t c = 0; c < n; ++c) {
        const u64 r = math::mul_shoup(math::sub_mod(a[c], b[c], q), w, ws, q);
        o[c] = accumulate ? math::add_mod(o[c], r, q) : r;
      }
    });
  };
  mod_down(acc0, out0);
  mod_down(acc1, out1);
}

}  // namespace hec::bfv
