// The Halevi-Polyakov-Shoup scale-and-round kernels (CT-RSA 2019, §4.2 "simple scaling" for
// decryption and §4.3 "complex scaling" for the multiply), with the fractional parts computed
// exactly: for each limb, x_i * r_i = quo_i * q_i + rem_i is split exactly by a Shoup
// multiplication, so only sum_i rem_i / q_i (each term in [0, 1)) goes through double
// precision. The rounding is exact unless t x / Q lies within k * 2^-51 of a half-integer
// (README §Bounds), where it may round the other way: an additive error of 1.
#pragma once

#include <vector>

#include "bfv/context.h"
#include "math/rns.h"

namespace hec::bfv {

// Decryption scaling: out[c] = round(t * x_c / Q) mod t for x given by its k residue limbs
// (limb-major, n = N coefficients each, values in [0, q_i)). Output in [0, t).
void hps_scale_round_to_plain(const BfvContext& ctx, const u64* x_q, u64* out);
// The same over Q_l, the first `limbs` primes of Q (after modulus switching).
void hps_scale_round_to_plain(const BfvContext& ctx, std::size_t limbs, const u64* x_q, u64* out);

// Multiply scaling: for x in Z_{Q P_mult} given by its Q limbs x_q (k limbs) and P_mult limbs
// x_p (l limbs), writes round(t * x / Q) mod p_j to out_p (l limbs, values in [0, p_j)).
// x_p and out_p may alias.
void hps_scale_round_to_p_mult(const BfvContext& ctx, const u64* x_q, const u64* x_p, u64* out_p);

// Exact conversion of the centred representative of x mod Q to P_mult (HPS Lemma 2) and back;
// n = N coefficients per limb.
void hps_extend_q_to_p_mult(const BfvContext& ctx, const u64* x_q, u64* out_p);
void hps_convert_p_mult_to_q(const BfvContext& ctx, const u64* x_p, u64* out_q);

// Base conversions with the contracts of math::BaseConverter (convert_exact: the centred
// representative, HPS §2.2 / Lemma 2; convert_approx: x + u Q with 0 <= u < k, BEHZ §2.2),
// restructured for the hot paths of multiply and key switching: coefficient blocks that stay
// in L1, no allocation per call, and the exact correction -v Q mod p_j looked up from a table
// indexed by v in [0, k]. Inputs in [0, q_i), outputs in [0, p_j); in and out must not overlap.
// On the AVX-512 kernel path the conversion runs in math::BaseConverter's vector kernels
// (52-bit IFMA columns, any moduli below 2^61): the same v (the same double operations in the
// same order) and fully reduced outputs, so the results are bit-identical to this portable loop.
class BlockedBaseConverter {
 public:
  BlockedBaseConverter(const math::RnsBase& from, const math::RnsBase& to);
  void convert(const u64* in, u64* out, std::size_t n) const { run(in, out, n, true); }
  void convert_approx(const u64* in, u64* out, std::size_t n) const { run(in, out, n, false); }

 private:
  std::size_t k_, l_;
  std::vector<math::Modulus> from_, to_;
  std::vector<u64> q_hat_inv_, q_hat_inv_shoup_;
  std::vector<double> inv_q_;
  std::vector<u64> q_hat_mod_p_;  // [j * k + i] = (Q / q_i) mod p_j
  std::vector<u64> neg_vq_;       // [j * (k + 1) + v] = -v Q mod p_j
  math::BaseConverter vector_;    // the AVX-512 kernels' tables
  void run(const u64* in, u64* out, std::size_t n, bool exact) const;
};

}  // namespace hec::bfv
