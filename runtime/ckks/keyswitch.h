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

// out0, out1: |Q_l| limbs each (overwritten). perm: optional NTT-domain permutation of ext
// (a key in its file layout; Galois keys in memory are applied with perm = null and the
// output permuted, see Evaluator::apply_galois_inplace).
void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1);

// A Galois automorphism with its key in the in-memory form (keys.h): out0 = perm(c_0 +
// r_0), out1 = perm(r_1) for the key switch (r_0, r_1) of ext (the unpermuted c_1), finished
// limb by limb in cache (core::HybridKeySwitch::Output). c0: |Q_l| limbs, may not alias out0.
void galois_key_switch(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                       const std::vector<std::uint32_t>& perm, const u64* c0, u64* out0, u64* out1);

// out0, out1 = the key switch of sum_g perm_g(c) under key_g, with one ModDown (double
// hoisting: core::HybridKeySwitch::key_products_mod_down). The keys are Galois keys in their
// in-memory form (ckks/keys.h: stored permuted), so each permutation applies to its product.
void key_products_mod_down(const Context& ctx, const ModUpDigits& ext,
                           const std::vector<const KeySwitchKey*>& keys,
                           const std::vector<const std::vector<std::uint32_t>*>& perms, u64* out0,
                           u64* out1);

// The view core reads a key through: digit j's b at digits[j], a after its (|Q_k| + |P|) limbs.
core::KeyView key_view(const Context& ctx, const KeySwitchKey& key);

}  // namespace hec::ckks::detail
