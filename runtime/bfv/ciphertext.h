// BFV data types: plaintexts (coefficients mod t, and their lift to Q in evaluation form for
// plaintext products), ciphertexts (2 or 3 polynomials over Q in evaluation form) and keys.
// A secret key lives over Q u P_ks; public, relinearization and Galois keys carry the
// 16-byte key id of the secret key they were made from (checked by every operation).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "bfv/context.h"
#include "core/serialize.h"
#include "core/wipe.h"
#include "math/poly.h"

namespace hec::bfv {

// The 16-byte key identifier of core/serialize.h.
using KeyId = core::KeyId;

// m(X) = sum_c coeffs[c] X^c with coeffs in [0, t).
struct Plaintext {
  std::vector<u64> coeffs;
};

// A plaintext prepared for multiply_plain: its centred lift [m]_t to Q, evaluation form, and
// the Shoup constants floor(w 2^64 / q_i) of every value (products by a fixed operand), except
// where the AVX-512 product computes them in registers (ciphertexts of a MiB or more, whose
// products are bound by memory traffic: `shoup` empty; Evaluator::prepare_plain).
struct PlaintextNtt {
  math::RnsPoly poly;
  math::AlignedU64Vector shoup;
};

// c_0 + c_1 s (+ c_2 s^2) = Delta_l m + e mod Q_l; every polynomial in evaluation form over the
// first limbs() limbs of the key context: q_size() after encryption, fewer after modulus
// switching (level l = limbs() - 1).
struct Ciphertext {
  std::vector<math::RnsPoly> polys;
  KeyId key_id{};
  std::size_t size() const { return polys.size(); }
  std::size_t limbs() const { return polys.empty() ? 0 : polys[0].num_limbs(); }
};

// The secret key. Its words are wiped (sodium_memzero) when the key is destroyed or assigned
// over, as ckks::SecretKey's are, so freed key memory that malloc keeps for reuse
// (math/aligned.cpp) holds no secret.
struct SecretKey : core::WipedOnReassign<SecretKey> {
  math::RnsPoly s;  // ternary, evaluation form over Q u P_ks
  KeyId key_id{};

  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey(SecretKey&&) noexcept = default;
  SecretKey& operator=(const SecretKey&) = default;
  SecretKey& operator=(SecretKey&&) noexcept = default;
  ~SecretKey() { wipe(); }
  // Zeroes every word of s in place (the destructor and the assignments call it).
  void wipe();
};

struct PublicKey {
  math::RnsPoly b, a;  // b = -a s + e over Q, evaluation form
  KeyId key_id{};
};

// Switches a ciphertext component from s' to s: one (b_d, a_d) pair per digit over Q u P_ks
// in evaluation form, b_d = -a_d s + e_d + [i in digit d] * (P_ks mod q_i) * s'.
struct KeySwitchKey {
  std::vector<math::RnsPoly> b, a;
};

struct RelinKey {
  KeySwitchKey key;  // s' = s^2
  KeyId key_id{};
};

// In memory every limb of a Galois key is stored permuted by the inverse of its element's
// NTT-domain permutation p (key'[p[t]] = key[t]; keyswitch.h permute_galois_key): a rotation
// then switches the unpermuted c_1 and applies p once to the result, limb by limb in cache
// (sum_j p(ext_j) key_j = p(sum_j ext_j key'_j), and the exact ModDown commutes with p),
// instead of a pass permuting c_0 and c_1 first. Serialized keys keep the plain layout.
struct GaloisKeys {
  std::map<u64, KeySwitchKey> keys;  // Galois element g -> key for s' = s(X^g)
  KeyId key_id{};
  bool has(u64 galois_element) const { return keys.count(galois_element) != 0; }
};

}  // namespace hec::bfv
