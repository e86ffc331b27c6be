// BFV binding of the shared hybrid key switching (core/keyswitch.h): digits are balanced
// ranges of Q (sizes differ by at most one), the special primes are P_ks (with none, the keys
// carry the CRT idempotent of each digit times s' and the key product is the result: digit
// decomposition over RNS digits, the RNS form of Brakerski-Vaikuntanathan key switching).
// Keys are made for the full Q; a ciphertext at a lower level (after mod_switch_to_next) uses
// the key's first digits and limbs. ModDown by P_ks is core's exact one (round(acc / P_ks));
// ModUp is exact (centred) unless P_ks exceeds the digit by >= 16 bits.
//
// Result of key_switch: out_0 + out_1 s = d s' + e_ks mod Q_l with |e_ks| bounded in README
// §Bounds.
#pragma once

#include <cstdint>
#include <vector>

#include "bfv/ciphertext.h"
#include "bfv/context.h"
#include "math/sampling.h"

namespace hec::bfv {

// A key switching key from s_prime (evaluation form, at least q_size() limbs of the key
// context; only the Q limbs are read) to sk.
KeySwitchKey make_key_switch_key(const BfvContext& ctx, const SecretKey& sk,
                                 const math::RnsPoly& s_prime, math::Prng& prng);

// out_0 + out_1 s = d s' (+ small error) mod Q_l. d: coefficient form over the first l + 1
// limbs of the key context (any level); d_eval (optional): the same polynomial in evaluation
// form, which saves the forward NTTs of the digit limbs. With accumulate = false, out_0 and
// out_1 are overwritten (evaluation form over Q_l; reallocated only if they have another
// shape); with accumulate = true the result is added to them. d and d_eval must not alias the
// outputs.
void key_switch(const BfvContext& ctx, const math::RnsPoly& d, const math::RnsPoly* d_eval,
                const KeySwitchKey& key, math::RnsPoly& out0, math::RnsPoly& out1,
                bool accumulate = false);

// The same with addends in coefficient form: on entry out_0 and out_1 hold polynomials c_0,
// c_1 in coefficient form over Q_l (the HPS multiply's outputs); on return they hold NTT(c_h)
// plus the key switch, in evaluation form. With special primes the addends go through the
// ModDown's own NTT (core Output::coef_add: 2 |Q_l| forward NTTs fewer than transforming them
// first); the result is the same residues either way.
void key_switch_add_coefficients(const BfvContext& ctx, const math::RnsPoly& d,
                                 const KeySwitchKey& key, math::RnsPoly& out0, math::RnsPoly& out1);

// out_0 = add0 + (key switch)_0, out_1 = (key switch)_1 in evaluation form over Q_l, without
// zero-filling out_1 or reading it back (a rotation: add0 = sigma(c_0)); the addend is added
// as each limb of the ModDown is finished. d, d_eval as for key_switch; add0 (evaluation form,
// |Q_l| limbs) must not alias the outputs.
void key_switch_add(const BfvContext& ctx, const math::RnsPoly& d, const math::RnsPoly* d_eval,
                    const KeySwitchKey& key, const math::RnsPoly& add0, math::RnsPoly& out0,
                    math::RnsPoly& out1);

// A Galois automorphism's key switch with the key in its in-memory layout (ciphertext.h
// GaloisKeys): out_0 = p(c_0 + ks_0), out_1 = p(ks_1) for the key switch ks of d (the
// UNPERMUTED c_1: coefficient form, d_eval its evaluation form) under the permuted key, p the
// element's NTT-domain permutation (out[t] = x[p[t]]). This is the textbook p(c_0) +
// ks(p(c_1)). c0 and d_eval may be out0 and out1 (each limb is read before it is written).
void key_switch_galois(const BfvContext& ctx, const math::RnsPoly& d, const math::RnsPoly& d_eval,
                       const KeySwitchKey& key, const std::vector<std::uint32_t>& perm,
                       const math::RnsPoly& c0, math::RnsPoly& out0, math::RnsPoly& out1);

// key[t] <- key[by[t]] in every limb of every digit (in place).
void permute_galois_key(KeySwitchKey& key, const std::vector<std::uint32_t>& by);

}  // namespace hec::bfv
