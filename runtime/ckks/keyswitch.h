// Hybrid key switching (runtime internals of ckks/), split so rotations can be hoisted
// (Halevi-Shoup 2018, section 5; Bossuat et al. 2021, section 2.3):
//   (1) mod_up: INTT c; per digit j, base conversion of [c]_{digit j} to the other primes
//       of Q_l and to P -- approximate when P exceeds the digit by >= 16 bits, exact
//       (centred) otherwise, and a digit of one prime lifted centred -- then NTT of the
//       converted limbs. Result: one polynomial of |Q_l| + |P| limbs per digit, NTT form.
//   (2) key_product_mod_down: acc_0 = sum_j ext_j * b_j, acc_1 = sum_j ext_j * a_j over Q_l P
//       (an NTT-domain Galois permutation of ext_j may be applied on the fly), then ModDown:
//       out = (acc - [acc]_P) * P^{-1} mod each q_i, with the centred [acc]_P converted to
//       Q_l EXACTLY (math::BaseConverter::convert_exact). The approximate conversion would
//       add u*P with 0 <= u < |P|: after division, an error -u*(1 + s) whose mean (|P|-1)/2
//       is not zero, and a constant-mean polynomial has canonical norm up to ~2N/pi times its
//       mean (its embedding 2/(1 - zeta^j) is large near zeta^j = 1). Measured at N = 2^16,
//       |P| = 8: rotation noise 1.7e-8 with the approximate ModDown, 1.2e-9 (the fresh
//       encryption level) with the exact one.
// BV (KeySwitching::kBv) is the same computation with one prime per digit and no P: ModUp
// lifts each residue [c]_{q_j} to the other primes and the key product is the result.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ckks/context.h"
#include "ckks/keys.h"

namespace hec::ckks::detail {

// One extended digit: (|Q_l| + |P|) * N words in NTT form. Allocated without zero-filling
// (mod_up writes every word; at N = 2^16 a key switch's digits are ~50 MB).
struct ExtendedDigit {
  std::unique_ptr<u64[]> words;
  u64* data() { return words.get(); }
  const u64* data() const { return words.get(); }
};

struct ModUpDigits {
  std::vector<ExtendedDigit> digits;
  Level level{0};
};

ModUpDigits mod_up(const Context& ctx, const u64* c, Level level);

// out0, out1: |Q_l| limbs each (overwritten). perm: optional NTT-domain permutation.
void key_product_mod_down(const Context& ctx, const ModUpDigits& ext, const KeySwitchKey& key,
                          const std::vector<std::uint32_t>* perm, u64* out0, u64* out1);

}  // namespace hec::ckks::detail
