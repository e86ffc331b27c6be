// RNS-CKKS keys: a ternary secret s, the public key (b, a) = (-a*s + e, a) mod Q_L, and
// key-switching keys for hybrid key switching with special primes P and dnum digits (Han-Ki,
// "Better bootstrapping for approximate homomorphic encryption", CT-RSA 2020, section 3;
// Bossuat et al., Eurocrypt 2021, section 2.3). The chain Q_L is split into digits of
// alpha = ceil(|Q_L| / dnum) consecutive primes; the key for s' has, for digit j, the pair
//   (b_j, a_j) = (-a_j*s + e_j + P * [i in digit j] * s', a_j) modulo each prime q_i of Q_L
// and (-a_j*s + e_j, a_j) modulo each special prime, so sum_j [c]_{digit j} * key_j
// = P*c*s' + small mod Q_l*P for every level l (the CRT idempotents of the digits are 1 on
// their own primes and 0 on the others). The relinearization key switches from s^2, a
// Galois key for element g from s(X^g). Keys are generated at a level (default L) and can
// be trimmed to a lower one (dropping the primes above it and the digits that vanish).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ckks/context.h"
#include "core/serialize.h"
#include "core/wipe.h"

namespace hec::ckks {

// The secret key: s in NTT form modulo every prime of Q_L and P ((|Q_L| + |P|) * N words).
// The words are wiped (sodium_memzero) when the key is destroyed or assigned over, so freed
// key memory that malloc keeps for reuse (math/aligned.cpp) holds no secret.
struct SecretKey : core::WipedOnReassign<SecretKey> {
  std::vector<u64> data;
  core::KeyId key_id{};

  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey(SecretKey&&) noexcept = default;
  SecretKey& operator=(const SecretKey&) = default;
  SecretKey& operator=(SecretKey&&) noexcept = default;
  ~SecretKey() { wipe(); }
  void wipe() { core::wipe(data); }
};

// (b, a) in NTT form modulo Q_L: 2 * |Q_L| * N words (b first).
struct PublicKey {
  std::vector<u64> data;
  Level level{0};
  core::KeyId key_id{};
};

// Hybrid key-switching key at `level`: digits[j] holds (b_j, a_j), each modulo the primes of
// Q_level then P, in NTT form: 2 * (limbs_at(level) + |P|) * N words.
struct KeySwitchKey {
  std::vector<std::vector<u64>> digits;
  Level level{0};
  core::KeyId key_id{};
};

struct RelinKey {
  KeySwitchKey key;
};

// Galois keys by Galois element (5^k mod 2N for a rotation by k, 2N - 1 for conjugation).
// In memory every limb of a Galois key is stored permuted by the inverse of the element's
// NTT-domain permutation p (key'[p[t]] = key[t]): the automorphism then moves from the
// digits of the key product (one gather a digit and prime) to its result (two gathers a
// prime): sum_j p(ext_j) key_j = p(sum_j ext_j key'_j), and the exact ModDown commutes with
// p. Files keep the plain layout: io.cpp permutes on save and load (permute_galois_key).

struct GaloisKeys {
  std::map<std::uint64_t, KeySwitchKey> keys;
  Level level{0};
  core::KeyId key_id{};
  bool has(std::uint64_t galois_element) const { return keys.count(galois_element) != 0; }
};

namespace detail {
// Every limb (N words) of every digit of `key`, in place: key[t] <- key[by[t]].
void permute_galois_key(KeySwitchKey& key, const std::vector<std::uint32_t>& by, std::size_t n);
}  // namespace detail

class KeyGenerator {
 public:
  explicit KeyGenerator(ContextPtr context);

  // Uniform ternary secret from the libsodium-backed sampler; a fresh random key id.
  SecretKey secret_key() const;
  PublicKey public_key(const SecretKey& sk) const;
  RelinKey relin_key(const SecretKey& sk) const;
  RelinKey relin_key(const SecretKey& sk, Level level) const;
  // Keys for left rotations by each of `steps` (negative = right) and, if asked, conjugation.
  GaloisKeys galois_keys(const SecretKey& sk, const std::vector<int>& steps,
                         bool conjugation = false) const;
  GaloisKeys galois_keys(const SecretKey& sk, const std::vector<int>& steps, bool conjugation,
                         Level level) const;

 private:
  KeySwitchKey switch_key(const SecretKey& sk, const std::vector<u64>& new_secret_qp,
                          Level level) const;
  ContextPtr context_;
};

// Drop the primes above `level` (and the digits above it). Throws if level > key level.
KeySwitchKey trim(const KeySwitchKey& key, const Parameters& params, Level level);
RelinKey trim(const RelinKey& key, const Parameters& params, Level level);
GaloisKeys trim(const GaloisKeys& keys, const Parameters& params, Level level);

}  // namespace hec::ckks
