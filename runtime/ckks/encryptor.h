// Encryption and decryption for RNS-CKKS (Cheon-Kim-Kim-Song 2017; RNS form Cheon-Han-Kim-
// Kim-Song 2018). Public-key encryption: (v*b + e0 + m, v*a + e1) with v ternary, e0, e1
// discrete Gaussian (sigma = 3.2). Symmetric encryption: (-a*s + e + m, a) with a expanded
// from a fresh 32-byte seed by the math core's ChaCha20 generator, so the ciphertext can be
// stored as (c0, seed). Decryption of degree d: sum_{i<=d} c_i s^i (Horner), any level.
#pragma once

#include "ckks/ciphertext.h"
#include "ckks/context.h"
#include "ckks/keys.h"

namespace hec::ckks {

class Encryptor {
 public:
  Encryptor(ContextPtr context, PublicKey public_key);
  // Encrypts at the plaintext's level (the key is used modulo Q_level).
  Ciphertext encrypt(const Plaintext& plaintext) const;
  // The same into `out` (its storage reused when large enough).
  void encrypt(const Plaintext& plaintext, Ciphertext& out) const;

 private:
  ContextPtr context_;
  PublicKey public_key_;
};

class SymmetricEncryptor {
 public:
  SymmetricEncryptor(ContextPtr context, SecretKey secret_key);
  Ciphertext encrypt(const Plaintext& plaintext) const;
  CompactCiphertext encrypt_compact(const Plaintext& plaintext) const;

 private:
  ContextPtr context_;
  SecretKey secret_key_;
};

class Decryptor {
 public:
  Decryptor(ContextPtr context, SecretKey secret_key);
  // Any degree, any level; throws if the ciphertext's key id is not this key's.
  Plaintext decrypt(const Ciphertext& ciphertext) const;

 private:
  ContextPtr context_;
  SecretKey secret_key_;
};

}  // namespace hec::ckks
