// CKKS binding of core/keyswitch (see keyswitch.h).
#include "ckks/keyswitch.h"

#include <stdexcept>
#include <string>

#include "ckks/context_impl.h"

namespace hec::ckks::detail {

ModUpDigits mod_up(const Context& ctx, const u64* c, Level level) {
  return ctx.impl().key_switch->mod_up(c, nullptr, ctx.params().limbs_at(level));
}

core::KeyView key_view(const Context& ctx, const KeySwitchKey& key) {
  const Parameters& params = ctx.params();
  core::KeyView view;
  view.key_limbs = params.limbs_at(key.level);
  const std::size_t words = (view.key_limbs + params.special_moduli().size()) * params.n();
  for (const std::vector<u64>& d : key.digits) {
    if (d.size() != 2 * words) {
      throw std::invalid_argument("key switching: a key digit has " + std::to_string(d.size()) +
                                  " words, its level needs " + std::to_string(2 * words));
    }
    view.b.push_back(d.data());
    view.a.push_back(d.data() + words);
  }
  return view;
}

namespace {

void check_key_level(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key) {
  const std::size_t limbs = ext.limbs;
  if (ctx.params().limbs_at(key.level) < limbs) {
    throw std::invalid_argument("key switching: the ciphertext's level (" + std::to_string(limbs) +
                                " primes) exceeds key level " + std::to_string(key.level.value) +
                                " (" + std::to_string(ctx.params().limbs_at(key.level)) +
                                " primes)");
  }
}

}  // namespace

void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1) {
  check_key_level(ctx, ext, key);
  ctx.impl().key_switch->key_product_mod_down(ext, key_view(ctx, key), perm, out0, out1);
}

void galois_key_switch(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                       const std::vector<std::uint32_t>& perm, const u64* c0, u64* out0,
                       u64* out1) {
  check_key_level(ctx, ext, key);
  const core::KeyView view = key_view(ctx, key);
  ctx.impl().key_switch->key_products_mod_down(
      ext, {core::HybridKeySwitch::KeyTerm{&view, nullptr}}, out0, out1, {perm.data(), c0});
}

void key_products_mod_down(const Context& ctx, const ModUpDigits& ext,
                           const std::vector<const KeySwitchKey*>& keys,
                           const std::vector<const std::vector<std::uint32_t>*>& perms, u64* out0,
                           u64* out1) {
  std::vector<core::KeyView> views;
  views.reserve(keys.size());
  for (const KeySwitchKey* key : keys) {
    check_key_level(ctx, ext, *key);
    views.push_back(key_view(ctx, *key));
  }
  std::vector<core::HybridKeySwitch::KeyTerm> terms;
  for (std::size_t g = 0; g < views.size(); ++g) terms.push_back({&views[g], perms[g], true});
  ctx.impl().key_switch->key_products_mod_down(ext, terms, out0, out1);
}

}  // namespace hec::ckks::detail
