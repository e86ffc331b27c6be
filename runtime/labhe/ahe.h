// The linearly homomorphic public-key schemes under labeled HE:
//  - Joye-Libert (M. Joye, B. Libert, "Efficient cryptosystems from 2^k-th power residue
//    symbols", EUROCRYPT 2013): N = pq with p, q = 1 mod 2^k, y with Legendre symbols
//    (y/p) = (y/q) = -1; Enc(m) = y^m x^(2^k) mod N for m in Z_(2^k); decryption computes the
//    2^k-th power residue symbol c^((p-1)/2^k) mod p and reads m off bit by bit.
//  - Paillier (EUROCRYPT 1999) with g = N + 1: Enc(m) = (1 + mN) r^N mod N^2, m in Z_N.
// Both are additively homomorphic: Enc(m1) Enc(m2) = Enc(m1 + m2), Enc(m)^c = Enc(c m).
// Security: the modulus is 3072 bits by default (128 bits, NIST SP 800-57 for factoring);
// 2048 bits (112 bits) only when asked for explicitly. For Joye-Libert, k <= |N|/4 - 128 (a
// factor of N that is 1 mod 2^k with 2^k near N^(1/4) falls to Coppersmith's method).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "labhe/bigint.h"

namespace hec::labhe {

enum class Scheme : std::uint8_t { kJoyeLibert = 1, kPaillier = 2 };

std::string scheme_name(Scheme s);                 // "jl" or "paillier"
Scheme scheme_from_name(const std::string& name);  // throws std::invalid_argument

// Security in bits of a factoring modulus of `modulus_bits` (NIST SP 800-57 Part 1 Table 2):
// 2048 -> 112, 3072 -> 128, 7680 -> 192; 0 for anything smaller than 2048.
int modulus_security_bits(std::size_t modulus_bits);

struct PublicKey {
  Scheme scheme = Scheme::kJoyeLibert;
  std::uint32_t modulus_bits = 0;
  std::uint32_t message_bits = 0;  // Joye-Libert: k; Paillier: the bit length of N
  Int n;
  Int y;  // Joye-Libert only
  // Derived by finish(): the ring of ciphertexts (N or N^2) and the message modulus (2^k or N).
  Int ct_modulus;
  Int msg_modulus;
  void finish();
  // Bytes of one ciphertext and of one message (fixed widths in files).
  std::size_t ciphertext_bytes() const { return (ct_modulus.bits() + 7) / 8; }
  std::size_t message_bytes() const { return (msg_modulus.bits() + 7) / 8; }
};

struct SecretKey {
  Int p, q;
  Int exp;  // Joye-Libert: (p - 1) / 2^k; Paillier: lambda = lcm(p - 1, q - 1)
  Int aux;  // Joye-Libert: y^(-(p-1)/2^k) mod p; Paillier: lambda^-1 mod N
  void wipe();
  ~SecretKey() { wipe(); }
};

struct KeyPair {
  PublicKey pk;
  SecretKey sk;
};

// Generates a key pair; `message_bits` is k for Joye-Libert (ignored for Paillier). Throws
// std::invalid_argument for a modulus below 2048 bits, an odd modulus size, or k out of range.
KeyPair keygen(Scheme scheme, std::uint32_t modulus_bits, std::uint32_t message_bits);

// Enc(m) with fresh randomness, m in [0, msg_modulus); constant time in m (m is secret).
Int encrypt(const PublicKey& pk, const Int& m);
// The deterministic encoding Enc(m; 1) (y^m or 1 + mN): for values the server knows.
Int encode_public(const PublicKey& pk, const Int& m);
// Dec(c) in [0, msg_modulus). Throws std::invalid_argument for c outside [1, ct_modulus).
Int decrypt(const PublicKey& pk, const SecretKey& sk, const Int& c);

// Encryption with a fixed-base table for y (Joye-Libert) built once per public key: y^m is
// read 4 bits of m at a time from a table of y^(j 16^i), each entry chosen by a constant-time
// scan of its 16 candidates and multiplied in; then k squarings of a fresh random x. Every
// product is a side-channel-silent Montgomery product (GMP's mpn_sec_mul / mpn_sec_sqr, a
// branch-free reduction; Montgomery in bigint.h), the table held in Montgomery form. About
// k/4 + k products instead of the 2.2 k of a square-and-multiply y^m. For Paillier it calls
// encrypt().
class Encryptor {
 public:
  explicit Encryptor(const PublicKey& pk);
  Int encrypt(const Int& m) const;

 private:
  const PublicKey& pk_;
  std::size_t limbs_ = 0;
  std::size_t windows_ = 0;
  std::vector<mp_limb_t> table_;  // windows_ x 16 entries of limbs_ limbs, Montgomery form
  std::optional<Montgomery> mont_;
};

// Checks that `sk` belongs to `pk` (N = pq); throws std::invalid_argument otherwise.
void check_key_pair(const PublicKey& pk, const SecretKey& sk);

}  // namespace hec::labhe
