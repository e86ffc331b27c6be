// CKKS binding of the shared hybrid key switching (core/keyswitch.h): a ciphertext level is
// the prefix Q_l of the chain, keys are ckks::KeySwitchKey (possibly generated at a lower
// key_level, then usable at every level up to theirs). The steps, the exact ModDown and the
// choice between approximate and exact ModUp are core's; this file only maps levels to limb
// counts and the key layout to core::KeyView. BV (KeySwitching::kBv) is the same
// computation with one prime per digit and no P.
#pragma once

#include <cstdint>
#include <vector>

#include "ckks/context.h"
#include "ckks/keys.h"
#include "core/keyswitch.h"

namespace hec::ckks::detail {

using core::ExtendedDigit;
using core::ModUpDigits;

// ModUp of c (NTT form, |Q_level| limbs).
ModUpDigits mod_up(const Context& ctx, const u64* c, Level level);

// out0, out1: |Q_l| limbs each (overwritten). perm: optional NTT-domain permutation.
void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1);

// out0, out1 = the key switch of sum_g perm_g(c) under key_g, with one ModDown (double
// hoisting: core::HybridKeySwitch::key_products_mod_down).
void key_products_mod_down(const Context& ctx, const ModUpDigits& ext,
                           const std::vector<const KeySwitchKey*>& keys,
                           const std::vector<const std::vector<std::uint32_t>*>& perms, u64* out0,
                           u64* out1);

// The view core reads a key through: digit j's b at digits[j], a after its (|Q_k| + |P|) limbs.
core::KeyView key_view(const Context& ctx, const KeySwitchKey& key);

}  // namespace hec::ckks::detail
