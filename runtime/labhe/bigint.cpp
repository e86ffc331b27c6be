// Big integers over GMP: random sampling from libsodium, byte encodings, modular helpers.
#include "labhe/bigint.h"

#include <sodium.h>

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

}  // namespace hec::labhe
