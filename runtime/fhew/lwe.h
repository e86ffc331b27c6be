// LWE ciphertexts of bits and the LWE-side operations of FHEW bootstrapping: encryption with
// a ternary secret, phase and decryption, modulus switching between power-of-two moduli, and
// key switching from the extracted ring key (dimension N) to the gate key (dimension n)
// with a table of encryptions of every digit value (Ducas-Micciancio, "FHEW", EUROCRYPT
// 2015, §5.4 and §5.5; Micciancio-Polyakov, WAHC 2021, Alg. 1).
//
// Convention: a ciphertext (a, b) mod m has phase b - <a, s> mod m. A bit x is encoded as
// x * m / 4 (so NOT is (0, m/4) - c and gates add ciphertexts with the constants of gates.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "math/sampling.h"

namespace hec::fhew {

// A vector of n small values in {-1, 0, 1}.
using TernaryKey = std::vector<std::int8_t>;

struct LweCiphertext {
  std::vector<std::uint32_t> a;
  std::uint32_t b = 0;
  std::uint32_t modulus = 0;  // a power of two, or the ring prime Q for extracted ones
};

// Phase b - <a, s> mod modulus in [0, modulus). Throws if the dimensions differ.
std::uint32_t lwe_phase(const LweCiphertext& ct, const TernaryKey& s);

// Encryption of `value` (already scaled) mod `modulus` with Gaussian error sigma.
LweCiphertext lwe_encrypt(math::Prng& prng, const TernaryKey& s, std::uint32_t value,
                          std::uint32_t modulus, double sigma);

// Rounds every coefficient x to round(x * to / ct.modulus) mod to, in place.
void lwe_mod_switch_inplace(LweCiphertext& ct, std::uint32_t to);

// Key-switching key from a source key z (dimension N) to s (dimension n) mod q_ks: for
// every source index j, digit position k and digit value v in [0, base), an LWE encryption
// (alpha, beta) under s of v * z_j * base^k. Stored as 16-bit words (q_ks <= 2^16),
// row-major: row ((j * digits + k) * base + v) holds alpha[0..n) then beta.
class KeySwitchKey {
 public:
  KeySwitchKey() = default;
  // Generates the key; the alpha vectors come from a ChaCha20 stream of `seed` (public), so
  // the key can be stored as seed + betas.
  KeySwitchKey(const TernaryKey& from, const TernaryKey& to, std::uint32_t modulus,
               std::uint32_t base, std::uint32_t digits, double sigma, math::Prng& prng);

  // Rebuilds the alphas from the seed and takes the betas (for deserialization).
  static KeySwitchKey from_seed(std::uint32_t from_dim, std::uint32_t to_dim, std::uint32_t modulus,
                                std::uint32_t base, std::uint32_t digits, const math::Seed& seed,
                                std::vector<std::uint16_t> betas);

  // (a, b) mod q_ks of dimension N -> dimension n, same phase up to the key-switching error.
  LweCiphertext apply(const LweCiphertext& ct) const;

  std::uint32_t from_dim() const { return from_dim_; }
  std::uint32_t to_dim() const { return to_dim_; }
  std::uint32_t modulus() const { return modulus_; }
  std::uint32_t base() const { return base_; }
  std::uint32_t digits() const { return digits_; }
  const math::Seed& seed() const { return seed_; }
  std::vector<std::uint16_t> betas() const;
  std::size_t memory_bytes() const { return table_.size() * sizeof(std::uint16_t); }

 private:
  void expand_alphas();
  std::uint32_t from_dim_ = 0, to_dim_ = 0, modulus_ = 0, base_ = 0, digits_ = 0;
  math::Seed seed_{};
  std::vector<std::uint16_t> table_;  // rows of to_dim + 1 words
};

// LWE public key under the gate key s (dimension n) mod `modulus` (the key-switching modulus
// q_ks): `rows` samples (A_j, beta_j = <A_j, s> + e_j), the square form of Lindner-Peikert
// ("Better key sizes (and attacks) for LWE-based encryption", CT-RSA 2011, §3) as OpenFHE's
// binfhe uses it in dimension N (README.md, "Public-key encryption"). Encryption of v draws r
// uniform ternary (one per row), e' (n values) and e'' Gaussian:
//   (a, b) = (sum_j r_j A_j + e', sum_j r_j beta_j + e'' + v)  mod `modulus`,
// phase v + <r, e> + e'' - <e', s>. Stored as 16-bit words (modulus <= 2^16), rows of n + 1
// words: A_j then beta_j; the A_j come from a ChaCha20 stream of a public seed, so the key is
// stored as seed + betas.
class LwePublicKey {
 public:
  LwePublicKey() = default;
  LwePublicKey(const TernaryKey& s, std::uint32_t modulus, std::uint32_t rows, double sigma,
               math::Prng& prng);

  // Rebuilds the A_j from the seed and takes the betas (for deserialization).
  static LwePublicKey from_seed(std::uint32_t dim, std::uint32_t rows, std::uint32_t modulus,
                                const math::Seed& seed, std::vector<std::uint16_t> betas);

  // Encryption of `value` (already scaled, < modulus) mod modulus(), errors of deviation
  // `sigma`. The combination runs over every row with r_j as a 16-bit multiplier, so its time
  // does not depend on r; r and the errors are wiped before returning.
  LweCiphertext encrypt(math::Prng& prng, std::uint32_t value, double sigma) const;

  std::uint32_t dim() const { return dim_; }
  std::uint32_t rows() const { return rows_; }
  std::uint32_t modulus() const { return modulus_; }
  const math::Seed& seed() const { return seed_; }
  std::vector<std::uint16_t> betas() const;
  // Row j as an LWE ciphertext (A_j, beta_j) of phase e_j (tests measure the key's errors).
  LweCiphertext sample(std::uint32_t j) const;
  std::size_t memory_bytes() const { return table_.size() * sizeof(std::uint16_t); }

 private:
  void expand_a();
  std::uint32_t dim_ = 0, rows_ = 0, modulus_ = 0;
  math::Seed seed_{};
  std::vector<std::uint16_t> table_;  // rows of dim + 1 words
};

}  // namespace hec::fhew
