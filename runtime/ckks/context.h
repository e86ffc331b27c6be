// The precomputed state of an RNS-CKKS parameter set: NTT tables for every prime of Q_L and
// P, the constants of rescaling (q_l^{-1} mod q_i), of hybrid key switching (base
// conversions Q_digit -> Q_l P and P -> Q_l, P^{-1} mod q_i), and the NTT-domain permutations
// of the Galois automorphisms X -> X^{5^k} (slot rotations) and X -> X^{-1} (conjugation).
// Build one Context per parameter set and share it (it is immutable and thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/params.h"

namespace hec::ckks {

class Context {
 public:
  explicit Context(Parameters params);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Parameters& params() const { return params_; }
  std::size_t n() const { return params_.n(); }
  std::size_t slots() const { return params_.slots(); }

  // The Galois element of a left rotation by `steps` slots (negative: right): 5^steps mod 2N.
  std::uint64_t galois_element(int steps) const;
  // The Galois element of complex conjugation: 2N - 1.
  std::uint64_t conjugation_element() const { return 2 * n() - 1; }
  // g^-1 mod 2N for an odd element g (the group of units mod 2N has order N: g^(N-1)).
  std::uint64_t inverse_galois_element(std::uint64_t g) const;

  // Zero-valued objects with the right shape (used by the evaluator and by readers).
  Ciphertext make_ciphertext(Level level, std::size_t degree, double scale) const;
  Plaintext make_plaintext(Level level, double scale) const;

  // Expands a compact (seeded) ciphertext into a Ciphertext (regenerates a from the seed).
  Ciphertext expand(const CompactCiphertext& compact) const;

  struct Impl;  // math-core tables; defined in ckks/context_impl.h (runtime internals)
  const Impl& impl() const { return *impl_; }

 private:
  Parameters params_;
  std::unique_ptr<Impl> impl_;
};

using ContextPtr = std::shared_ptr<const Context>;

inline ContextPtr make_context(Parameters params) {
  return std::make_shared<const Context>(std::move(params));
}

}  // namespace hec::ckks
