// Homomorphic operations of RNS-CKKS on ciphertexts in NTT form. Costs are per limb of
// Q_level (N words each); "NTT" means one length-N transform per limb.
//
// Preconditions checked on every public call (std::invalid_argument with the values): equal
// levels and key ids for binary operations; equal scales for additions (relative difference
// <= 1e-9: the compiler matches scales exactly); degree 2 for relinearize; level >= 1 for
// rescale; a key for every Galois element used. Scales are doubles and never assumed to be
// powers of two: a rescale at level l divides the scale by q_l exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/context.h"
#include "ckks/keys.h"

namespace hec::ckks {

class Evaluator {
 public:
  explicit Evaluator(ContextPtr context);
  const ContextPtr& context() const { return context_; }

  // --- additive (no NTT, O(degree * limbs * N)) ---
  void add_inplace(Ciphertext& a, const Ciphertext& b) const;  // degrees may differ
  void sub_inplace(Ciphertext& a, const Ciphertext& b) const;
  void negate_inplace(Ciphertext& a) const;
  void add_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  void sub_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Adds the constant c to every slot: round(c * a.scale) added to c_0 (exact scale match).
  void add_constant_inplace(Ciphertext& a, double c) const;
  // Adds re + i*im to every slot: round(re * scale) + round(im * scale) X^{N/2} added to c_0.
  void add_complex_constant_inplace(Ciphertext& a, double re, double im) const;
  // Multiplies every slot by i: the monomial X^{N/2} (zeta^{N/2} = i at every slot root
  // zeta^{5^j}). Exact: no level, no scale change, any degree.
  void multiply_by_i_inplace(Ciphertext& a) const;
  Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
  Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;

  // --- multiplicative ---
  // Tensor product without relinearization: degree d1 + d2, scale s1 * s2.
  Ciphertext multiply(const Ciphertext& a, const Ciphertext& b) const;
  // The same into `out` (its storage reused when large enough; out may be a or b).
  void multiply(const Ciphertext& a, const Ciphertext& b, Ciphertext& out) const;
  void multiply_inplace(Ciphertext& a, const Ciphertext& b) const;
  // Product by a plaintext at the same level: scale s * p.scale, degree unchanged.
  void multiply_plain_inplace(Ciphertext& a, const Plaintext& p) const;
  // Product by a real constant encoded as round(c * constant_scale): the scale becomes
  // s * constant_scale, and a rescale (one level) brings it back. The overload without
  // constant_scale uses q_level, so that the following rescale restores the scale exactly.
  void multiply_constant_inplace(Ciphertext& a, double c, double constant_scale) const;
  void multiply_constant_inplace(Ciphertext& a, double c) const;
  // Product by an integer: no scale change, no level consumed.
  void multiply_integer_inplace(Ciphertext& a, std::int64_t k) const;

  // Degree 2 -> 1 with the relinearization key (hybrid key switching: 2 * digits ModUp,
  // one ModDown). Throws for degree != 2.
  void relinearize_inplace(Ciphertext& a, const RelinKey& key) const;
  Ciphertext multiply_relin(const Ciphertext& a, const Ciphertext& b, const RelinKey& key) const;
  void multiply_relin(const Ciphertext& a, const Ciphertext& b, const RelinKey& key,
                      Ciphertext& out) const;

  // Divides by the last prime q_l: level l -> l - 1, scale s -> s / q_l (exact division of
  // the double), rounding error bounded by rescale_noise_bound() (encoder.h).
  void rescale_inplace(Ciphertext& a) const;
  // The same into `out` (its storage reused when large enough; out may be a).
  void rescale(const Ciphertext& a, Ciphertext& out) const;
  // Drops primes down to `level` without changing the scale (the message is unchanged).
  void drop_to_level_inplace(Ciphertext& a, Level level) const;
  void drop_to_level_inplace(Plaintext& p, Level level) const;

  // Rotates the slots left by `steps` (negative: right). Needs the key for 5^steps mod 2N.
  // Degree-1 ciphertexts only.
  void rotate_inplace(Ciphertext& a, int steps, const GaloisKeys& keys) const;
  // The same into `out` (its storage reused when large enough; out may be a).
  void rotate(const Ciphertext& a, int steps, const GaloisKeys& keys, Ciphertext& out) const;
  void conjugate_inplace(Ciphertext& a, const GaloisKeys& keys) const;
  void apply_galois_inplace(Ciphertext& a, std::uint64_t galois_element,
                            const GaloisKeys& keys) const;
  void apply_galois(const Ciphertext& a, std::uint64_t galois_element, const GaloisKeys& keys,
                    Ciphertext& out) const;
  // Hoisted rotations (Halevi-Shoup 2018, section 5): one digit decomposition (ModUp) of c_1
  // shared by every rotation; each rotation then costs a permutation, the key product and
  // one ModDown. Returns one ciphertext per entry of `steps` (0 allowed: a copy).
  std::vector<Ciphertext> rotate_hoisted(const Ciphertext& a, const std::vector<int>& steps,
                                         const GaloisKeys& keys) const;
  // The sum of the rotations of `a` by every entry of `steps` (0: `a` itself), doubly hoisted
  // (Bossuat et al., Eurocrypt 2021, section 4.2): one ModUp of c_1, the key products of all
  // rotations added over Q P, one ModDown. Each rotation beyond the first costs its key
  // product and permutations only (no NTT). Degree-1 ciphertexts only.
  Ciphertext rotate_sum_hoisted(const Ciphertext& a, const std::vector<int>& steps,
                                const GaloisKeys& keys) const;

 private:
  void rescale_into(const Ciphertext& a, u64* dst, std::size_t out_stride) const;
  ContextPtr context_;
};

}  // namespace hec::ckks
