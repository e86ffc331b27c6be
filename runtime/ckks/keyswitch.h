// Hybrid key switching (runtime internals of ckks/), split so rotations can be hoisted
// (Halevi-Shoup 2018, section 5; Bossuat et al. 2021, section 2.3):
//   (1) mod_up: INTT c; per digit j, approximate base conversion of [c]_{digit j} to the
//       other primes of Q_l and to P; NTT of the converted limbs. Result: one polynomial of
//       |Q_l| + |P| limbs per digit, in NTT form.
//   (2) key_product_mod_down: acc_0 = sum_j ext_j * b_j, acc_1 = sum_j ext_j * a_j over Q_l P
//       (an NTT-domain Galois permutation of ext_j may be applied on the fly), then ModDown:
//       out = (acc - [acc]_P) * P^{-1} mod each q_i, with the centred [acc]_P converted to
//       Q_l EXACTLY (math::BaseConverter::convert_exact). The approximate conversion would
//       add u*P with 0 <= u < |P|: after division, an error -u*(1 + s) whose mean (|P|-1)/2
//       is not zero, and a constant-mean polynomial has canonical norm up to ~2N/pi times its
//       mean (its embedding 2/(1 - zeta^j) is large near zeta^j = 1). Measured at N = 2^16,
//       |P| = 8: rotation noise 1.7e-8 with the approximate ModDown, 1.2e-9 (the fresh
//       encryption level) with the exact one.
#pragma once

#include <cstdint>
#include <vector>

#include "ckks/context.h"
#include "ckks/keys.h"

namespace hec::ckks::detail {

struct ModUpDigits {
  std::vector<std::vector<u64>> digits;  // each (|Q_l| + |P|) * N, NTT form
  Level level{0};
};

ModUpDigits mod_up(const Context& ctx, const u64* c, Level level);

// out0, out1: |Q_l| limbs each (overwritten). perm: optional NTT-domain permutation.
void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1);

}  // namespace hec::ckks::detail
