// Key switching for BFV ciphertext components: hybrid key switching with special primes
// (Han-Ki, "Better bootstrapping for approximate homomorphic encryption", CT-RSA 2020, §3:
// digits of Q raised to Q u P_ks by fast base conversion, products with the key, division by
// P_ks), and, with no special primes, digit decomposition over RNS digits (the RNS form of
// Brakerski-Vaikuntanathan key switching: c = sum_d [c]_{Q_d} * g_d mod Q with g_d the CRT
// idempotent of digit d, keys carrying g_d * s' directly).
//
// This duplicates what runtime/core/ is designed to provide (core/ has no key switching yet);
// it is written against BfvContext only so it can move to core/ unchanged in substance.
//
// Procedure of key_switch (d in coefficient form over Q):
//   (1) for each digit D_d: take the limbs of d in D_d, raise them to the other Q limbs and
//       to P_ks by fast base conversion (value [d]_{Q_d} + u Q_d, 0 <= u < |D_d|);
//   (2) forward NTT of the raised digit on all k + s limbs;
//   (3) acc_0 = sum_d raised_d * b_d, acc_1 = sum_d raised_d * a_d (lazy 128-bit sums);
//   (4) mod-down (s > 0 only): out_i = (acc_i - FastConv_{P_ks -> Q}([acc]_{P_ks})) * P_ks^{-1}
//       mod q_i; with s = 0, out = acc.
// Result: out_0 + out_1 s = d s' + e_ks mod Q with |e_ks| bounded in README §Bounds.
#pragma once

#include "bfv/ciphertext.h"
#include "bfv/context.h"
#include "math/sampling.h"

namespace hec::bfv {

// A key switching key from s_prime (evaluation form, at least q_size() limbs of the key
// context; only the Q limbs are read) to sk.
KeySwitchKey make_key_switch_key(const BfvContext& ctx, const SecretKey& sk,
                                 const math::RnsPoly& s_prime, math::Prng& prng);

// out_0 + out_1 s = d s' (+ small error) mod Q. d: coefficient form over the first q_size()
// limbs of the key context; d_eval (optional): the same polynomial in evaluation form, which
// saves the forward NTTs of the digit limbs. With accumulate = false, out_0 and out_1 are
// overwritten (evaluation form over Q; reallocated only if they have another shape); with
// accumulate = true the result is added to them. d and d_eval must not alias the outputs.
void key_switch(const BfvContext& ctx, const math::RnsPoly& d, const math::RnsPoly* d_eval,
                const KeySwitchKey& key, math::RnsPoly& out0, math::RnsPoly& out1,
                bool accumulate = false);

}  // namespace hec::bfv
