// BFV binding of core/keyswitch (see keyswitch.h).
#include "bfv/keyswitch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/keyswitch.h"
#include "math/galois.h"
#include "math/poly.h"

namespace hec::bfv {

using math::PolyForm;
using math::RnsPoly;

KeySwitchKey make_key_switch_key(const BfvContext& ctx, const SecretKey& sk, const RnsPoly& s_prime,
                                 math::Prng& prng) {
  const std::size_t k = ctx.q_size(), total = k + ctx.p_ks_size();
  if (s_prime.form() != PolyForm::kEvaluation || s_prime.num_limbs() < k) {
    throw std::invalid_argument(
        "make_key_switch_key: s' must be in evaluation form with >= " + std::to_string(k) +
        " limbs, has " + std::to_string(s_prime.num_limbs()));
  }
  const auto& kc = ctx.key_context();
  const core::HybridKeySwitch& ks = ctx.key_switch();
  KeySwitchKey key;
  for (std::size_t d = 0; d < ks.digit_count(k); ++d) {
    RnsPoly a(kc, total, PolyForm::kEvaluation);
    RnsPoly b(kc, total, PolyForm::kEvaluation);
    ks.make_key_digit(k, d, sk.s.data(), s_prime.data(), prng, b.data(), a.data());
    key.b.push_back(std::move(b));
    key.a.push_back(std::move(a));
  }
  return key;
}

namespace {

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

namespace {

// The shared part of key_switch and key_switch_add_coefficients: checks, then ModUp and the
// key product with ModDown under `output`.
void run_key_switch(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                    const KeySwitchKey& key, RnsPoly& out0, RnsPoly& out1, bool accumulate,
                    const core::HybridKeySwitch::Output& output);

}  // namespace

void key_switch(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                const KeySwitchKey& key, RnsPoly& out0, RnsPoly& out1, bool accumulate) {
  run_key_switch(ctx, d, d_eval, key, out0, out1, accumulate, {});
}

void key_switch_add_coefficients(const BfvContext& ctx, const RnsPoly& d, const KeySwitchKey& key,
                                 RnsPoly& out0, RnsPoly& out1) {
  const auto& kc = ctx.key_context();
  const std::size_t limbs = d.num_limbs();
  for (const RnsPoly* c : {&out0, &out1}) {
    if (c->context() != kc || c->num_limbs() != limbs || c->form() != PolyForm::kCoefficient) {
      throw std::invalid_argument(
          "key_switch_add_coefficients: addends must be coefficient-form over Q_l (" +
          std::to_string(limbs) + " limbs)");
    }
  }
  if (ctx.p_ks_size() == 0) {
    // No ModDown to ride along: transform, then accumulate.
    math::to_ntt_inplace(out0);
    math::to_ntt_inplace(out1);
    run_key_switch(ctx, d, nullptr, key, out0, out1, true, {});
    return;
  }
  core::HybridKeySwitch::Output output;
  output.coef_add[0] = out0.data();
  output.coef_add[1] = out1.data();
  out0.set_form(PolyForm::kEvaluation);
  out1.set_form(PolyForm::kEvaluation);
  run_key_switch(ctx, d, nullptr, key, out0, out1, false, output);
}

void key_switch_add(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                    const KeySwitchKey& key, const RnsPoly& add0, RnsPoly& out0, RnsPoly& out1) {
  if (add0.context() != ctx.key_context() || add0.num_limbs() != d.num_limbs() ||
      add0.form() != PolyForm::kEvaluation || &add0 == &out0 || &add0 == &out1) {
    throw std::invalid_argument("key_switch_add: the addend must be evaluation-form over Q_l (" +
                                std::to_string(d.num_limbs()) + " limbs) and not an output");
  }
  core::HybridKeySwitch::Output output;
  output.add0 = add0.data();
  run_key_switch(ctx, d, d_eval, key, out0, out1, false, output);
}

void key_switch_galois(const BfvContext& ctx, const RnsPoly& d, const RnsPoly& d_eval,
                       const KeySwitchKey& key, const std::vector<std::uint32_t>& perm,
                       const RnsPoly& c0, RnsPoly& out0, RnsPoly& out1) {
  if (c0.context() != ctx.key_context() || c0.num_limbs() != d.num_limbs() ||
      c0.form() != PolyForm::kEvaluation || perm.size() != ctx.ring_dim()) {
    throw std::invalid_argument("key_switch_galois: c_0 must be evaluation-form over Q_l (" +
                                std::to_string(d.num_limbs()) +
                                " limbs) and the permutation have N entries");
  }
  core::HybridKeySwitch::Output output;
  output.perm = perm.data();
  output.add0 = c0.data();
  run_key_switch(ctx, d, &d_eval, key, out0, out1, false, output);
}

void permute_galois_key(KeySwitchKey& key, const std::vector<std::uint32_t>& by) {
  for (auto* polys : {&key.b, &key.a}) {
    for (RnsPoly& poly : *polys) {
      math::permute_limbs_inplace(poly.data(), poly.num_limbs() * poly.ring_dim(), poly.ring_dim(),
                                  by);
    }
  }
}

namespace {

void run_key_switch(const BfvContext& ctx, const RnsPoly& d, const RnsPoly* d_eval,
                    const KeySwitchKey& key, RnsPoly& out0, RnsPoly& out1, bool accumulate,
                    const core::HybridKeySwitch::Output& output) {
  const std::size_t k = ctx.q_size(), s = ctx.p_ks_size(), limbs = d.num_limbs();
  const auto& kc = ctx.key_context();
  if (d.form() != PolyForm::kCoefficient || limbs < 1 || limbs > k || d.context() != kc) {
    throw std::invalid_argument(
        "key_switch: input must be a coefficient-form polynomial over Q_l (1 to " +
        std::to_string(k) + " limbs), has " + std::to_string(limbs));
  }
  if (d_eval != nullptr && (d_eval->num_limbs() != limbs ||
                            d_eval->form() != PolyForm::kEvaluation || d_eval->context() != kc)) {
    throw std::invalid_argument("key_switch: the evaluation form of the input has another shape");
  }
  if (accumulate && (out0.context() != kc || out0.num_limbs() != limbs || out1.context() != kc ||
                     out1.num_limbs() != limbs || out0.form() != PolyForm::kEvaluation ||
                     out1.form() != PolyForm::kEvaluation)) {
    throw std::invalid_argument(
        "key_switch: accumulating outputs must be evaluation-form over Q_l");
  }
  const core::HybridKeySwitch& ks = ctx.key_switch();
  if (key.b.size() != ctx.dnum() || key.a.size() != ctx.dnum()) {
    throw std::invalid_argument("key_switch: key has " + std::to_string(key.b.size()) +
                                " digits, parameters have dnum = " + std::to_string(ctx.dnum()));
  }
  core::KeyView view;
  view.key_limbs = k;
  for (std::size_t j = 0; j < key.b.size(); ++j) {
    if (key.b[j].num_limbs() != k + s || key.a[j].num_limbs() != k + s) {
      throw std::invalid_argument("key_switch: key digit " + std::to_string(j) + " has " +
                                  std::to_string(key.b[j].num_limbs()) + " limbs, needs " +
                                  std::to_string(k + s));
    }
    view.b.push_back(key.b[j].data());
    view.a.push_back(key.a[j].data());
  }
  const core::ModUpDigits ext =
      ks.mod_up(d_eval != nullptr ? d_eval->data() : nullptr, d.data(), limbs);
  if (!accumulate) {
    ensure_shape(out0, kc, limbs);
    ensure_shape(out1, kc, limbs);
  }
  const core::HybridKeySwitch::KeyTerm term{&view, nullptr};
  if (accumulate) {
    ks.key_products_mod_down(ext, {term}, out0.data(), out1.data(), true);
  } else {
    ks.key_products_mod_down(ext, {term}, out0.data(), out1.data(), output);
  }
}

}  // namespace

}  // namespace hec::bfv
