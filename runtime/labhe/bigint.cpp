// Big integers over GMP: random sampling from libsodium, byte encodings, modular helpers.
#include "labhe/bigint.h"

#include <sodium.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace hec::labhe {

Int Int::from_string(const std::string& decimal) {
  Int out;
  if (decimal.empty() || mpz_set_str(out.get(), decimal.c_str(), 10) != 0) {
    throw std::invalid_argument("not a decimal integer: '" + decimal + "'");
  }
  return out;
}

std::string Int::str() const {
  std::string s(mpz_sizeinbase(v_, 10) + 2, '\0');
  mpz_get_str(s.data(), 10, v_);
  s.resize(std::char_traits<char>::length(s.c_str()));
  return s;
}

void Int::wipe() {
  std::size_t limbs = mpz_size(v_);
  if (limbs > 0)
    sodium_memzero(mpz_limbs_modify(v_, static_cast<mp_size_t>(limbs)), limbs * sizeof(mp_limb_t));
  mpz_set_ui(v_, 0);
}

namespace {

Int random_bits(std::size_t bits) {
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialize");
  std::vector<std::uint8_t> buf((bits + 7) / 8);
  randombytes_buf(buf.data(), buf.size());
  if (bits % 8 != 0) buf[0] &= static_cast<std::uint8_t>((1u << (bits % 8)) - 1);
  Int out = from_bytes(buf.data(), buf.size());
  sodium_memzero(buf.data(), buf.size());
  return out;
}

}  // namespace

Int random_below(const Int& bound) {
  if (bound.sign() <= 0) throw std::invalid_argument("random_below: bound must be positive");
  Int bm1;
  mpz_sub_ui(bm1.get(), bound.get(), 1);
  std::size_t bits = bm1.bits();
  if (bits == 0) return Int(0);
  for (;;) {  // accepts with probability > 1/2 per draw
    Int r = random_bits(bits);
    if (mpz_cmp(r.get(), bound.get()) < 0) return r;
  }
}

Int random_unit(const Int& n) {
  Int g;
  for (;;) {
    Int r = random_below(n);
    if (r.sign() == 0) continue;
    mpz_gcd(g.get(), r.get(), n.get());
    if (mpz_cmp_ui(g.get(), 1) == 0) return r;
  }
}

Int random_exact_bits(std::size_t bits) {
  if (bits == 0) throw std::invalid_argument("random_exact_bits: bits must be positive");
  Int r = random_bits(bits);
  mpz_setbit(r.get(), bits - 1);
  return r;
}

std::string to_bytes(const Int& value, std::size_t width) {
  if (value.sign() < 0) throw std::invalid_argument("to_bytes: negative value");
  std::size_t need = (value.bits() + 7) / 8;
  if (need > width) {
    throw std::invalid_argument("to_bytes: a " + std::to_string(value.bits()) +
                                "-bit value does not fit " + std::to_string(width) + " bytes");
  }
  std::string out(width, '\0');
  std::size_t count = 0;
  mpz_export(out.data() + (width - need), &count, 1, 1, 1, 0, value.get());
  return out;
}

Int from_bytes(const std::uint8_t* data, std::size_t size) {
  Int out;
  if (size > 0) mpz_import(out.get(), size, 1, 1, 1, 0, data);
  return out;
}

Int from_bytes(const std::string& bytes) {
  return from_bytes(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

Int ModRing::pow(const Int& a, const Int& e) const {
  if (e.sign() < 0) throw std::invalid_argument("ModRing::pow: negative exponent");
  Int out;
  mpz_powm(out.get(), a.get(), e.get(), m_.get());
  return out;
}

Int ModRing::inv(const Int& a) const {
  Int out;
  if (mpz_invert(out.get(), a.get(), m_.get()) == 0) {
    throw std::domain_error("value is not invertible modulo the ciphertext modulus");
  }
  return out;
}

Montgomery::Montgomery(const Int& modulus) : modulus_(modulus) {
  if (modulus.sign() <= 0 || mpz_even_p(modulus.get())) {
    throw std::invalid_argument("Montgomery: the modulus must be odd and positive");
  }
  const std::size_t s = mpz_size(modulus.get());
  m_.assign(mpz_limbs_read(modulus.get()), mpz_limbs_read(modulus.get()) + s);
  // Newton's iteration for m^(-1) mod 2^64: each step doubles the correct low bits (m is its
  // own inverse mod 8, 3 bits; 3 -> 6 -> 12 -> 24 -> 48 -> 96).
  mp_limb_t inv = m_[0];
  for (int i = 0; i < 5; ++i) inv *= 2 - m_[0] * inv;
  minv_ = -inv;
  one_.resize(s);
  to(one_.data(), Int(1));
  r2_.resize(s);
  Int r;
  mpz_set_ui(r.get(), 1);
  mpz_mul_2exp(r.get(), r.get(), GMP_NUMB_BITS * s);
  to(r2_.data(), r);
}

void Montgomery::to(mp_limb_t* out, const Int& x) const {
  const std::size_t s = m_.size();
  Int t;
  mpz_mul_2exp(t.get(), x.get(), GMP_NUMB_BITS * s);
  mpz_mod(t.get(), t.get(), modulus_.get());
  const std::size_t used = mpz_size(t.get());
  std::copy(mpz_limbs_read(t.get()), mpz_limbs_read(t.get()) + used, out);
  std::fill(out + used, out + s, mp_limb_t{0});
}

Int Montgomery::from(const mp_limb_t* x) const {
  const std::size_t s = m_.size();
  std::vector<mp_limb_t> t(2 * s, 0), r(s);
  std::copy(x, x + s, t.begin());
  redc(r.data(), t.data());
  Int out;
  mp_limb_t* w = mpz_limbs_write(out.get(), static_cast<mp_size_t>(s));
  std::copy(r.begin(), r.end(), w);
  mpz_limbs_finish(out.get(), static_cast<mp_size_t>(s));  // normalizes the size
  return out;
}

void Montgomery::load(mp_limb_t* out, const Int& x) const {
  const std::size_t s = m_.size();
  if (x.sign() < 0 || mpz_cmp(x.get(), modulus_.get()) >= 0) {
    throw std::invalid_argument("Montgomery::load: value outside [0, m)");
  }
  const std::size_t used = mpz_size(x.get());
  std::copy(mpz_limbs_read(x.get()), mpz_limbs_read(x.get()) + used, out);
  std::fill(out + used, out + s, mp_limb_t{0});
}

Int Montgomery::unscale(const mp_limb_t* x, std::size_t k) const {
  const std::size_t s = m_.size();
  Int v, r;
  mp_limb_t* w = mpz_limbs_write(v.get(), static_cast<mp_size_t>(s));
  std::copy(x, x + s, w);
  mpz_limbs_finish(v.get(), static_cast<mp_size_t>(s));
  if (k <= 1) return v;
  // R^(k-1) mod m.
  Int e(static_cast<long>(k - 1));
  mpz_set_ui(r.get(), 1);
  mpz_mul_2exp(r.get(), r.get(), GMP_NUMB_BITS * s);
  mpz_powm(r.get(), r.get(), e.get(), modulus_.get());
  mpz_mul(v.get(), v.get(), r.get());
  mpz_mod(v.get(), v.get(), modulus_.get());
  return v;
}

void Montgomery::one(mp_limb_t* out) const { std::copy(one_.begin(), one_.end(), out); }

void Montgomery::redc(mp_limb_t* out, mp_limb_t* t) const {
  const auto s = static_cast<mp_size_t>(m_.size());
  // Pass i clears limb i (q = t_i (-m^-1) mod 2^64 makes t + q m 2^(64 i) vanish there) and
  // leaves the pass's carry, which belongs to limb i + s, in the cleared limb; the carries are
  // added in once at the end.
  for (mp_size_t i = 0; i < s; ++i) {
    const mp_limb_t q = t[i] * minv_;
    t[i] = mpn_addmul_1(t + i, m_.data(), s, q);
  }
  // (t + Q m) / R < 2 m: one conditional subtraction.
  const mp_limb_t carry = mpn_add_n(out, t + s, t, s);
  if (carry != 0 || mpn_cmp(out, m_.data(), s) >= 0) mpn_sub_n(out, out, m_.data(), s);
}

void Montgomery::redc_silent(mp_limb_t* out, mp_limb_t* t) const {
  const auto s = static_cast<mp_size_t>(m_.size());
  for (mp_size_t i = 0; i < s; ++i) {
    const mp_limb_t q = t[i] * minv_;
    t[i] = mpn_addmul_1(t + i, m_.data(), s, q);
  }
  const mp_limb_t carry = mpn_add_n(out, t + s, t, s);
  // Subtract m when the sum carried out or is >= m (no borrow), without branching on it; the
  // low half of t (the carries, now added in) holds the trial difference.
  const mp_limb_t borrow = mpn_sub_n(t, out, m_.data(), s);
  mpn_cnd_sub_n(carry | (borrow ^ 1), out, out, m_.data(), s);
}

std::size_t Montgomery::silent_scratch_limbs() const {
  const auto s = static_cast<mp_size_t>(m_.size());
  return 2 * m_.size() +
         static_cast<std::size_t>(std::max(mpn_sec_mul_itch(s, s), mpn_sec_sqr_itch(s)));
}

void Montgomery::mul_silent(mp_limb_t* out, const mp_limb_t* a, const mp_limb_t* b,
                            mp_limb_t* scratch) const {
  const auto s = static_cast<mp_size_t>(m_.size());
  mpn_sec_mul(scratch, a, s, b, s, scratch + 2 * s);
  redc_silent(out, scratch);
}

void Montgomery::sqr_silent(mp_limb_t* out, const mp_limb_t* a, mp_limb_t* scratch) const {
  const auto s = static_cast<mp_size_t>(m_.size());
  mpn_sec_sqr(scratch, a, s, scratch + 2 * s);
  redc_silent(out, scratch);
}

void Montgomery::to_silent(mp_limb_t* out, const mp_limb_t* x, mp_limb_t* scratch) const {
  mul_silent(out, x, r2_.data(), scratch);
}

void Montgomery::from_silent(mp_limb_t* out, const mp_limb_t* x, mp_limb_t* scratch) const {
  const std::size_t s = m_.size();
  std::copy(x, x + s, scratch);
  std::fill(scratch + s, scratch + 2 * s, mp_limb_t{0});
  redc_silent(out, scratch);
}

void Montgomery::mul(mp_limb_t* out, const mp_limb_t* a, const mp_limb_t* b,
                     mp_limb_t* scratch) const {
  const auto s = static_cast<mp_size_t>(m_.size());
  if (a == b) {
    mpn_sqr(scratch, a, s);
  } else {
    mpn_mul_n(scratch, a, b, s);
  }
  redc(out, scratch);
}

void Montgomery::sqr(mp_limb_t* out, const mp_limb_t* a, mp_limb_t* scratch) const {
  mpn_sqr(scratch, a, static_cast<mp_size_t>(m_.size()));
  redc(out, scratch);
}

}  // namespace hec::labhe
