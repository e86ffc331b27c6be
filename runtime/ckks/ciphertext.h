// The data types of RNS-CKKS: Plaintext and Ciphertext. Both hold polynomials in evaluation
// (NTT) form, one residue polynomial ("limb") per prime of Q_level, stored contiguously:
// polynomial k, limb j, coefficient t is data[(k * limbs + j) * N + t]. Limb j is the j-th
// prime of Parameters::chain() (output primes first, then q_1..q_level).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ckks/params.h"
#include "core/serialize.h"
#include "math/aligned.h"

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

// Ciphertext storage: 64-byte aligned words that resize() and the sized constructor leave
// uninitialized (every producer writes all of them; Context::make_ciphertext zero-fills
// explicitly, and resize(n, value) / assign(n, value) still set values). Value-initializing
// a fresh result before an operation overwrites it was a quarter of a ciphertext add's memory
// traffic.
template <class T>
struct UninitializedAllocator : math::AlignedAllocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) {
  }  // NOLINT(google-explicit-constructor)
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialization: no zero fill
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const UninitializedAllocator<U>&) const {
    return true;
  }
};
using Words = std::vector<u64, UninitializedAllocator<u64>>;

// A ciphertext (c_0, ..., c_d) of degree d: decrypts to sum_i c_i s^i = Delta*m + e mod Q_l.
// Fresh and relinearized ciphertexts have degree 1; a product without relinearization of
// degrees d1 and d2 has degree d1 + d2.
struct Ciphertext {
  Words data;  // (degree + 1) * limbs * N words
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

// Gives `ct` this shape and these attributes, its words (degree + 1) * limbs * n left
// unspecified for an operation that writes every one: its storage is reused when large
// enough (no zero fill, no fresh pages).
inline void reshape_unfilled(Ciphertext& ct, std::size_t n, std::size_t limbs, std::size_t degree,
                             Level level, double scale, const core::KeyId& key_id) {
  ct.data.resize((degree + 1) * limbs * n);
  ct.n = n;
  ct.limbs = limbs;
  ct.degree = degree;
  ct.level = level;
  ct.scale = scale;
  ct.key_id = key_id;
}

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
