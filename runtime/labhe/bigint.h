// Big integers for the labeled-HE layer: a small RAII value type over GMP's mpz_t, uniform
// random integers from libsodium's CSPRNG, fixed-width byte encodings (for files and PRF
// inputs), and a modular ring helper. Only what runtime/labhe needs; no arithmetic of its own.
#pragma once
#include <gmp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace hec::labhe {

// An arbitrary-precision integer. Copyable and movable; the limbs are cleared on destruction
// (mpz_clear frees them; secrets are wiped first with `wipe()`).
class Int {
 public:
  Int() { mpz_init(v_); }
  Int(long value) { mpz_init_set_si(v_, value); }      // NOLINT: implicit from small constants
  static Int from_string(const std::string& decimal);  // throws std::invalid_argument
  Int(const Int& other) { mpz_init_set(v_, other.v_); }
  Int(Int&& other) noexcept {
    mpz_init(v_);
    mpz_swap(v_, other.v_);
  }
  Int& operator=(const Int& other) {
    if (this != &other) mpz_set(v_, other.v_);
    return *this;
  }
  Int& operator=(Int&& other) noexcept {
    mpz_swap(v_, other.v_);
    return *this;
  }
  ~Int() { mpz_clear(v_); }

  mpz_ptr get() { return v_; }
  mpz_srcptr get() const { return v_; }
  std::size_t bits() const { return mpz_sgn(v_) == 0 ? 0 : mpz_sizeinbase(v_, 2); }
  bool operator==(const Int& o) const { return mpz_cmp(v_, o.v_) == 0; }
  bool operator!=(const Int& o) const { return !(*this == o); }
  int sign() const { return mpz_sgn(v_); }
  std::string str() const;
  // Overwrites the limbs with zeros (for secret values) before they are freed.
  void wipe();

 private:
  mpz_t v_;
};

// Uniform in [0, bound) (rejection sampling over libsodium randombytes_buf); bound > 0.
Int random_below(const Int& bound);
// Uniform in [1, n) and coprime to n.
Int random_unit(const Int& n);
// A random integer of exactly `bits` bits (top bit set).
Int random_exact_bits(std::size_t bits);

// Big-endian, zero-padded to exactly `width` bytes; throws std::invalid_argument when the
// (non-negative) value does not fit.
std::string to_bytes(const Int& value, std::size_t width);
Int from_bytes(const std::string& bytes);
Int from_bytes(const std::uint8_t* data, std::size_t size);

// Residues modulo a fixed odd modulus: products reduce with one division.
class ModRing {
 public:
  explicit ModRing(Int modulus) : m_(std::move(modulus)) {}
  const Int& modulus() const { return m_; }
  // out = a * b mod m (out may alias a or b).
  void mul(Int& out, const Int& a, const Int& b) const {
    mpz_mul(out.get(), a.get(), b.get());
    mpz_tdiv_r(out.get(), out.get(), m_.get());
  }
  void sqr(Int& out, const Int& a) const { mul(out, a, a); }
  // a^e mod m with a public exponent e >= 0 (variable time).
  Int pow(const Int& a, const Int& e) const;
  // a^-1 mod m; throws std::domain_error when a is not invertible.
  Int inv(const Int& a) const;

 private:
  Int m_;
};

}  // namespace hec::labhe
