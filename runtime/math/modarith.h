// 64-bit modular arithmetic for moduli q < 2^61: addition, Barrett and Shoup multiplication
// and their lazy variants, exponentiation and inversion.
//
// References: P. Barrett, "Implementing the RSA public key encryption algorithm on a standard
// digital signal processor", CRYPTO 1986; V. Shoup's precomputed-quotient multiplication as
// used by D. Harvey, "Faster arithmetic for number-theoretic transforms", J. Symb. Comp. 2014
// (Alg. 2 and its lazy form).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hec::math {

using u64 = std::uint64_t;
__extension__ typedef unsigned __int128 u128;  // GCC/Clang extension

// Largest modulus bit size the runtime supports: lazy forms keep values below 4q < 2^63.
inline constexpr int kMaxModulusBits = 61;

// A modulus q with its Barrett constant floor(2^128 / q) (as two 64-bit words).
class Modulus {
 public:
  Modulus() = default;
  explicit Modulus(u64 q) : q_(q) {
    if (q < 2 || (q >> kMaxModulusBits) != 0) {
      throw std::invalid_argument("Modulus: q = " + std::to_string(q) +
                                  " must satisfy 2 <= q < 2^61");
    }
    // floor(2^128 / q) computed as floor((2^128 - 1) / q), exact because q is not a power
    // of two or, if it is, the difference only matters when q divides 2^128.
    const u128 all_ones = ~static_cast<u128>(0);
    u128 ratio = all_ones / q;
    if ((q & (q - 1)) == 0) ratio += 1;  // q a power of two: 2^128 / q exactly
    barrett_hi_ = static_cast<u64>(ratio >> 64);
    barrett_lo_ = static_cast<u64>(ratio);
  }

  u64 value() const { return q_; }
  u64 barrett_hi() const { return barrett_hi_; }
  u64 barrett_lo() const { return barrett_lo_; }
  int bit_count() const { return 64 - __builtin_clzll(q_); }

 private:
  u64 q_ = 0;
  u64 barrett_hi_ = 0;
  u64 barrett_lo_ = 0;
};

// a + b mod q for a, b in [0, q).
// Constant time (issue 25): the conditional subtractions are masks from a comparison, never a
// branch on the (possibly secret) operands.
inline u64 add_mod(u64 a, u64 b, u64 q) {
  const u64 s = a + b;
  return s - (q & (u64{0} - static_cast<u64>(s >= q)));
}

// a - b mod q for a, b in [0, q).
inline u64 sub_mod(u64 a, u64 b, u64 q) { return a - b + (q & (u64{0} - static_cast<u64>(a < b))); }

// -a mod q for a in [0, q).
inline u64 negate_mod(u64 a, u64 q) { return (q - a) & (u64{0} - static_cast<u64>(a != 0)); }

// x mod q for any 128-bit x by Barrett reduction with the 128-bit constant.
inline u64 barrett_reduce_128(u128 x, const Modulus& m) {
  const u64 x_lo = static_cast<u64>(x);
  const u64 x_hi = static_cast<u64>(x >> 64);
  // Estimate floor(x * floor(2^128/q) / 2^128) from the three significant partial products.
  const u128 lo_hi = static_cast<u128>(x_lo) * m.barrett_hi();
  const u128 hi_lo = static_cast<u128>(x_hi) * m.barrett_lo();
  const u128 lo_lo_carry = (static_cast<u128>(x_lo) * m.barrett_lo()) >> 64;
  const u128 middle = lo_hi + hi_lo + lo_lo_carry;  // < 3 * 2^128 / 2^64 fits in u128
  const u64 quotient = static_cast<u64>(x_hi) * m.barrett_hi() + static_cast<u64>(middle >> 64);
  u64 r = x_lo - quotient * m.value();
  // The estimate is at most 2 below the true quotient.
  while (r >= m.value()) r -= m.value();
  return r;
}

// a * b mod q for a, b in [0, q) by Barrett reduction.
inline u64 mul_mod(u64 a, u64 b, const Modulus& m) {
  return barrett_reduce_128(static_cast<u128>(a) * b, m);
}

// Shoup's precomputation for a fixed multiplicand w in [0, q): floor(w * 2^64 / q).
inline u64 shoup_precompute(u64 w, u64 q) {
  return static_cast<u64>((static_cast<u128>(w) << 64) / q);
}

// a * w mod q, lazy: for any a < 2^64 returns a value in [0, 2q) congruent to a * w.
// (Harvey 2014, Alg. 2 without the final correction.)
inline u64 mul_shoup_lazy(u64 a, u64 w, u64 w_shoup, u64 q) {
  const u64 quotient = static_cast<u64>((static_cast<u128>(a) * w_shoup) >> 64);
  return a * w - quotient * q;
}

// a * w mod q in [0, q) for any a < 2^64.
inline u64 mul_shoup(u64 a, u64 w, u64 w_shoup, u64 q) {
  const u64 r = mul_shoup_lazy(a, w, w_shoup, q);
  return r >= q ? r - q : r;
}

// base^exponent mod q.
inline u64 pow_mod(u64 base, u64 exponent, const Modulus& m) {
  u64 result = 1 % m.value();
  base %= m.value();
  while (exponent != 0) {
    if (exponent & 1) result = mul_mod(result, base, m);
    base = mul_mod(base, base, m);
    exponent >>= 1;
  }
  return result;
}

// a^{-1} mod q by the extended Euclidean algorithm; throws if gcd(a, q) != 1.
inline u64 inverse_mod(u64 a, u64 q) {
  __extension__ typedef __int128 i128;
  i128 old_r = a % q, r = q, old_s = 1, s = 0;
  while (r != 0) {
    const i128 quotient = old_r / r;
    i128 tmp = old_r - quotient * r;
    old_r = r;
    r = tmp;
    tmp = old_s - quotient * s;
    old_s = s;
    s = tmp;
  }
  if (old_r != 1) {
    throw std::invalid_argument("inverse_mod: " + std::to_string(a) + " is not invertible mod " +
                                std::to_string(q));
  }
  i128 inv = old_s % static_cast<i128>(q);
  if (inv < 0) inv += q;
  return static_cast<u64>(inv);
}

}  // namespace hec::math
