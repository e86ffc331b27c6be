// Big integers for the labeled-HE layer: a small RAII value type over GMP's mpz_t, uniform
// random integers from libsodium's CSPRNG, fixed-width byte encodings (for files and PRF
// inputs), and a modular ring helper. Only what runtime/labhe needs; no arithmetic of its own.
#pragma once
#include <gmp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// Montgomery arithmetic modulo a fixed odd modulus m of s limbs (P. L. Montgomery, "Modular
// multiplication without trial division", Math. Comp. 44, 1985): a residue x is held as
// x R mod m, R = 2^(GMP_NUMB_BITS s), in exactly s limbs; a product is one mpn_mul_n (or
// mpn_sqr) and a word-by-word reduction of s mpn_addmul_1 passes, with no division (GMP's
// mpz_mul + mpz_tdiv_r spends more on the schoolbook division than on the product). Variable
// time (the final subtraction depends on the data): for the server's public values only.
class Montgomery {
 public:
  explicit Montgomery(const Int& modulus);  // throws std::invalid_argument for an even modulus
  std::size_t limbs() const { return m_.size(); }
  const Int& modulus() const { return modulus_; }
  // out (s limbs) = x R mod m, for any x >= 0.
  void to(mp_limb_t* out, const Int& x) const;
  // The residue x / R mod m of a Montgomery-form value, as an integer in [0, m).
  Int from(const mp_limb_t* x) const;
  // out (s limbs) = x itself, zero-padded, for 0 <= x < m (no conversion: a product of k such
  // values by mul() is their product times R^-(k-1), which `unscale` corrects).
  void load(mp_limb_t* out, const Int& x) const;
  // x (s limbs) times R^(k-1) mod m, as an integer in [0, m): the product of k loaded values.
  Int unscale(const mp_limb_t* x, std::size_t k) const;
  // out = R mod m (the Montgomery form of 1).
  void one(mp_limb_t* out) const;
  // out = a b / R mod m (the Montgomery form of the product). out may alias a or b; scratch
  // holds 2 s limbs and must not alias anything else.
  void mul(mp_limb_t* out, const mp_limb_t* a, const mp_limb_t* b, mp_limb_t* scratch) const;
  void sqr(mp_limb_t* out, const mp_limb_t* a, mp_limb_t* scratch) const;

  // Side-channel-silent variants, for secret values (the encryption's message and randomness):
  // GMP's mpn_sec_mul / mpn_sec_sqr, the same branch-free reduction passes (mpn_addmul_1) and a
  // branch-free final subtraction (mpn_cnd_sub_n). Operands in [0, m); scratch holds
  // silent_scratch_limbs() limbs.
  std::size_t silent_scratch_limbs() const;
  void mul_silent(mp_limb_t* out, const mp_limb_t* a, const mp_limb_t* b, mp_limb_t* scratch) const;
  void sqr_silent(mp_limb_t* out, const mp_limb_t* a, mp_limb_t* scratch) const;
  // out = x R mod m (Montgomery form) for x in [0, m) given in s limbs.
  void to_silent(mp_limb_t* out, const mp_limb_t* x, mp_limb_t* scratch) const;
  // out = x / R mod m (the ordinary residue of a Montgomery-form x).
  void from_silent(mp_limb_t* out, const mp_limb_t* x, mp_limb_t* scratch) const;

 private:
  // out = t / R mod m for t < m R (2 s limbs, destroyed).
  void redc(mp_limb_t* out, mp_limb_t* t) const;
  void redc_silent(mp_limb_t* out, mp_limb_t* t) const;
  std::vector<mp_limb_t> r2_;  // R^2 mod m
  Int modulus_;
  std::vector<mp_limb_t> m_;
  std::vector<mp_limb_t> one_;
  mp_limb_t minv_ = 0;  // -m^(-1) mod 2^GMP_NUMB_BITS
};

}  // namespace hec::labhe
