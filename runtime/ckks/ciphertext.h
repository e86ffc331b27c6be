// The data types of RNS-CKKS: Plaintext and Ciphertext. Both hold polynomials in evaluation
// (NTT) form, one residue polynomial ("limb") per prime of Q_level, stored contiguously:
// polynomial k, limb j, coefficient t is data[(k * limbs + j) * N + t]. Limb j is the j-th
// prime of Parameters::chain() (output primes first, then q_1..q_level).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ckks/params.h"
#include "core/serialize.h"

namespace hec::ckks {

// An encoded message m (Delta-scaled) at a level, in NTT form.
struct Plaintext {
  std::vector<u64> data;  // limbs * N words
  std::size_t n = 0;
  std::size_t limbs = 0;
  Level level{0};
  double scale = 1.0;

  u64* limb(std::size_t j) { return data.data() + j * n; }
  const u64* limb(std::size_t j) const { return data.data() + j * n; }
};

// A ciphertext (c_0, ..., c_d) of degree d: decrypts to sum_i c_i s^i = Delta*m + e mod Q_l.
// Fresh and relinearized ciphertexts have degree 1; a product without relinearization of
// degrees d1 and d2 has degree d1 + d2.
struct Ciphertext {
  std::vector<u64> data;  // (degree + 1) * limbs * N words
  std::size_t n = 0;
  std::size_t limbs = 0;
  std::size_t degree = 1;
  Level level{0};
  double scale = 1.0;
  core::KeyId key_id{};  // the key set that made it (checked by operations and readers)

  std::size_t size() const { return degree + 1; }  // number of polynomials
  u64* poly(std::size_t k) { return data.data() + k * limbs * n; }
  const u64* poly(std::size_t k) const { return data.data() + k * limbs * n; }
  u64* limb(std::size_t k, std::size_t j) { return data.data() + (k * limbs + j) * n; }
  const u64* limb(std::size_t k, std::size_t j) const { return data.data() + (k * limbs + j) * n; }
};

// A symmetric-key ciphertext stored compactly: c_0 and the 32-byte seed that `a = c_1`
// expands from (half the size of a Ciphertext). Context::expand() restores a Ciphertext.
struct CompactCiphertext {
  std::vector<u64> c0;  // limbs * N words, NTT form
  std::array<std::uint8_t, 32> seed{};
  std::size_t n = 0;
  std::size_t limbs = 0;
  Level level{0};
  double scale = 1.0;
  core::KeyId key_id{};
};

}  // namespace hec::ckks
