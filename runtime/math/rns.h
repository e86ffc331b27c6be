// Residue number system bases, fast base conversion and CRT composition.
//
// A value x mod Q = q_0 ... q_{k-1} is held as its residues x_i = x mod q_i. Fast base
// conversion to P = p_0 ... p_{l-1} computes, per coefficient,
//   y_i = [x_i * (Q/q_i)^{-1}]_{q_i},   out_j = [sum_i y_i * (Q/q_i)]_{p_j}
// (Bajard-Eynard-Hasan-Zucca, "A full RNS variant of FV like somewhat homomorphic encryption
// schemes", SAC 2016, §2.2), which equals x + u*Q mod p_j for an integer 0 <= u < k: the
// "approximate" conversion of hybrid key switching. The exact conversion subtracts
// v*Q with v = round(sum_i y_i / q_i) computed in double precision (Halevi-Polyakov-Shoup,
// "An improved RNS variant of the BFV homomorphic encryption scheme", CT-RSA 2019, §2.2 and
// Lemma 2), which yields the centred representative [x]_Q in (-Q/2, Q/2] mod p_j.
//
// Layout of multi-limb arrays: limb-major, limb i of n coefficients at in + i * n.
// Kernel paths: AVX-512 IFMA when every modulus of both bases is below 2^50 and the CPU has
// it (active_kernel_path()), portable otherwise; the outputs are bit-identical.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "math/modarith.h"

namespace hec::math {

namespace detail {
struct ConvertTables;
struct WideConvertTables;
}  // namespace detail

class RnsBase {
 public:
  // Throws std::invalid_argument if the list is empty or the moduli are not pairwise
  // coprime (including repeated moduli).
  explicit RnsBase(std::vector<Modulus> moduli);
  explicit RnsBase(const std::vector<u64>& moduli);

  std::size_t size() const { return moduli_.size(); }
  const Modulus& operator[](std::size_t i) const { return moduli_[i]; }
  const std::vector<Modulus>& moduli() const { return moduli_; }

  // (Q/q_i)^{-1} mod q_i and its Shoup constant.
  u64 q_hat_inv_mod_q(std::size_t i) const { return q_hat_inv_[i]; }
  u64 q_hat_inv_mod_q_shoup(std::size_t i) const { return q_hat_inv_shoup_[i]; }
  // Q and Q/q_i as little-endian 64-bit words (length size()).
  const std::vector<u64>& product() const { return product_; }
  const std::vector<u64>& q_hat(std::size_t i) const { return q_hat_[i]; }

  // The base made of the first `count` moduli (1 <= count <= size()).
  RnsBase prefix(std::size_t count) const;

  // CRT composition of one value from its residues residues[i * stride], i < size():
  // x in [0, Q) as little-endian words (length size()).
  std::vector<u64> compose(const u64* residues, std::size_t stride = 1) const;
  // The centred representative of the same value, x - Q if x > Q/2, as a long double
  // (rounded; exact while |x| < 2^64).
  long double compose_centered(const u64* residues, std::size_t stride = 1) const;
  // The inverse of compose: residues of the non-negative integer `words` (little-endian,
  // any length) written to out[i * stride].
  void decompose(const std::vector<u64>& words, u64* out, std::size_t stride = 1) const;

 private:
  std::vector<Modulus> moduli_;
  std::vector<u64> q_hat_inv_, q_hat_inv_shoup_;
  std::vector<u64> product_;
  std::vector<std::vector<u64>> q_hat_;
};

// Converts n coefficients from base `from` (Q) to base `to` (P).
class BaseConverter {
 public:
  // Throws std::invalid_argument if from has more than 64 moduli (the 128-bit accumulator
  // bound). The bases normally share no modulus; that is not checked.
  BaseConverter(const RnsBase& from, const RnsBase& to);

  const RnsBase& from() const { return from_; }
  const RnsBase& to() const { return to_; }

  // Fast conversion without correction: in holds from().size() limbs, out receives
  // to().size() limbs (limb-major, n coefficients each; in and out must not overlap).
  // out_j = x + u*Q mod p_j with 0 <= u < from().size(), x in [0, Q) the input value.
  // Inputs must be in [0, q_i); outputs are in [0, p_j).
  void convert_approx(const u64* in, u64* out, std::size_t n) const;

  // Exact conversion of the centred representative: out_j = [x]_Q mod p_j with
  // [x]_Q in (-Q/2, Q/2]. v = round(sum_i y_i / q_i) is computed in double precision; each
  // term carries a rounding error below 3 * 2^-53 and the k-term sum adds at most
  // k^2 * 2^-53, so the result is exact whenever |[x]_Q| <= Q * (1/2 - (k^2 + 3k) * 2^-53)
  // (k = from().size() <= 64): only values within that relative band around +-Q/2 may come
  // out as the other representative, off by Q (HPS §2.2, Lemma 2). Inputs in [0, q_i).
  void convert_exact(const u64* in, u64* out, std::size_t n) const;

  // The same conversions writing target limb j to out_limbs[j] (n words each, anywhere; for
  // callers that place the converted limbs between others, e.g. ModUp's extended digits).
  void convert_approx(const u64* in, u64* const* out_limbs, std::size_t n) const;
  void convert_exact(const u64* in, u64* const* out_limbs, std::size_t n) const;

 private:
  template <bool exact>
  void convert(const u64* in, u64* const* out_limbs, std::size_t n) const;

  RnsBase from_, to_;
  // q_hat_mod_p_[j * k + i] = (Q/q_i) mod p_j; q_mod_p_[j] = Q mod p_j.
  std::vector<u64> q_hat_mod_p_;
  std::vector<u64> q_mod_p_;
  std::vector<double> q_inv_double_;  // 1 / q_i
  // Constants of the AVX-512 IFMA kernel; null unless every modulus is below 2^50.
  std::shared_ptr<const detail::ConvertTables> ifma_;
  // Constants of the AVX-512 kernel for wider moduli (up to 2^61); null when ifma_ is set.
  std::shared_ptr<const detail::WideConvertTables> wide_;
};

}  // namespace hec::math
