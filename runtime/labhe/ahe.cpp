// Joye-Libert and Paillier key generation, encryption and decryption (see ahe.h).
#include "labhe/ahe.h"

#include <sodium.h>

#include <algorithm>
#include <stdexcept>

namespace hec::labhe {

std::string scheme_name(Scheme s) { return s == Scheme::kJoyeLibert ? "jl" : "paillier"; }

Scheme scheme_from_name(const std::string& name) {
  if (name == "jl" || name == "joye-libert") return Scheme::kJoyeLibert;
  if (name == "paillier") return Scheme::kPaillier;
  throw std::invalid_argument("unknown scheme '" + name + "' (expected jl or paillier)");
}

int modulus_security_bits(std::size_t modulus_bits) {
  if (modulus_bits >= 7680) return 192;
  if (modulus_bits >= 3072) return 128;
  if (modulus_bits >= 2048) return 112;
  return 0;
}

void PublicKey::finish() {
  if (scheme == Scheme::kJoyeLibert) {
    ct_modulus = n;
    mpz_set_ui(msg_modulus.get(), 0);
    mpz_setbit(msg_modulus.get(), message_bits);
  } else {
    mpz_mul(ct_modulus.get(), n.get(), n.get());
    msg_modulus = n;
    message_bits = static_cast<std::uint32_t>(n.bits());
  }
}

void SecretKey::wipe() {
  p.wipe();
  q.wipe();
  exp.wipe();
  aux.wipe();
}

namespace {

constexpr int kPrimeReps = 40;  // Miller-Rabin rounds of mpz_probab_prime_p (error < 4^-40)

// A prime of exactly `bits` bits with its two top bits set, of the form 2^k t + 1 (k >= 1) or
// a random odd prime (k = 0), so that the product of two has exactly 2 * bits bits.
Int prime_1_mod_2k(std::size_t bits, std::uint32_t k) {
  for (;;) {
    Int t = random_exact_bits(bits - k);
    mpz_setbit(t.get(), bits - k - 2);
    Int p;
    if (k == 0) {
      p = t;
      mpz_setbit(p.get(), 0);
    } else {
      mpz_mul_2exp(p.get(), t.get(), k);
      mpz_add_ui(p.get(), p.get(), 1);
    }
    if (mpz_probab_prime_p(p.get(), kPrimeReps) > 0) return p;
  }
}

void check_sizes(Scheme scheme, std::uint32_t modulus_bits, std::uint32_t message_bits) {
  if (modulus_bits < 2048 || modulus_bits % 2 != 0) {
    throw std::invalid_argument("modulus of " + std::to_string(modulus_bits) +
                                " bits: expected an even size of at least 2048 (3072 for 128-bit "
                                "security)");
  }
  if (scheme == Scheme::kJoyeLibert) {
    std::uint32_t max_k = modulus_bits / 4 - 128;
    if (message_bits < 1 || message_bits > max_k) {
      throw std::invalid_argument("Joye-Libert message space 2^" + std::to_string(message_bits) +
                                  ": k must lie in [1, " + std::to_string(max_k) + "] for a " +
                                  std::to_string(modulus_bits) + "-bit modulus");
    }
  }
}

}  // namespace

KeyPair keygen(Scheme scheme, std::uint32_t modulus_bits, std::uint32_t message_bits) {
  check_sizes(scheme, modulus_bits, message_bits);
  KeyPair kp;
  PublicKey& pk = kp.pk;
  SecretKey& sk = kp.sk;
  pk.scheme = scheme;
  pk.modulus_bits = modulus_bits;
  std::size_t half = modulus_bits / 2;
  if (scheme == Scheme::kJoyeLibert) {
    pk.message_bits = message_bits;
    // Step (1): p, q = 1 mod 2^k, distinct.
    do {
      sk.p = prime_1_mod_2k(half, message_bits);
      sk.q = prime_1_mod_2k(half, message_bits);
    } while (sk.p == sk.q);
    mpz_mul(pk.n.get(), sk.p.get(), sk.q.get());
    // Step (2): y with (y/p) = (y/q) = -1, i.e. in J_N \ QR_N; then y^((p-1)/2^k) mod p has
    // order exactly 2^k (its 2^(k-1)-th power is (y/p) = -1).
    for (;;) {
      pk.y = random_unit(pk.n);
      if (mpz_legendre(pk.y.get(), sk.p.get()) == -1 &&
          mpz_legendre(pk.y.get(), sk.q.get()) == -1) {
        break;
      }
    }
    // Step (3): the decryption constants p' = (p-1)/2^k and D = y^-p' mod p.
    mpz_sub_ui(sk.exp.get(), sk.p.get(), 1);
    mpz_tdiv_q_2exp(sk.exp.get(), sk.exp.get(), message_bits);
    Int eta;
    mpz_powm_sec(eta.get(), pk.y.get(), sk.exp.get(), sk.p.get());
    if (mpz_invert(sk.aux.get(), eta.get(), sk.p.get()) == 0) {
      throw std::logic_error("Joye-Libert keygen: y^p' is not invertible mod p");
    }
  } else {
    Int g, pm1, qm1, phi;
    for (;;) {
      sk.p = prime_1_mod_2k(half, 0);
      sk.q = prime_1_mod_2k(half, 0);
      if (sk.p == sk.q) continue;
      mpz_mul(pk.n.get(), sk.p.get(), sk.q.get());
      mpz_sub_ui(pm1.get(), sk.p.get(), 1);
      mpz_sub_ui(qm1.get(), sk.q.get(), 1);
      mpz_mul(phi.get(), pm1.get(), qm1.get());
      mpz_gcd(g.get(), pk.n.get(), phi.get());
      if (mpz_cmp_ui(g.get(), 1) == 0) break;
    }
    mpz_lcm(sk.exp.get(), pm1.get(), qm1.get());
    if (mpz_invert(sk.aux.get(), sk.exp.get(), pk.n.get()) == 0) {
      throw std::logic_error("Paillier keygen: lambda is not invertible mod N");
    }
  }
  pk.finish();
  return kp;
}

Int encrypt(const PublicKey& pk, const Int& m) {
  if (m.sign() < 0 || mpz_cmp(m.get(), pk.msg_modulus.get()) >= 0) {
    throw std::invalid_argument("encrypt: message outside [0, " + pk.msg_modulus.str() + ")");
  }
  Int c;
  if (pk.scheme == Scheme::kJoyeLibert) {
    // c = y^m * x^(2^k) mod N: the exponent m is secret (mpz_powm_sec); x^(2^k) is k squarings.
    Int x = random_unit(pk.n);
    for (std::uint32_t i = 0; i < pk.message_bits; ++i) {
      mpz_mul(x.get(), x.get(), x.get());
      mpz_tdiv_r(x.get(), x.get(), pk.n.get());
    }
    if (m.sign() == 0) return x;
    mpz_powm_sec(c.get(), pk.y.get(), m.get(), pk.n.get());
    mpz_mul(c.get(), c.get(), x.get());
    mpz_tdiv_r(c.get(), c.get(), pk.n.get());
    x.wipe();
  } else {
    // c = (1 + m N) r^N mod N^2 (the exponent N is public).
    Int r = random_unit(pk.n);
    mpz_powm(c.get(), r.get(), pk.n.get(), pk.ct_modulus.get());
    Int gm;
    mpz_mul(gm.get(), m.get(), pk.n.get());
    mpz_add_ui(gm.get(), gm.get(), 1);
    mpz_mul(c.get(), c.get(), gm.get());
    mpz_tdiv_r(c.get(), c.get(), pk.ct_modulus.get());
    r.wipe();
  }
  return c;
}

Int encode_public(const PublicKey& pk, const Int& m) {
  Int c;
  if (pk.scheme == Scheme::kJoyeLibert) {
    mpz_powm(c.get(), pk.y.get(), m.get(), pk.n.get());
  } else {
    Int r;
    mpz_mod(r.get(), m.get(), pk.n.get());
    mpz_mul(c.get(), r.get(), pk.n.get());
    mpz_add_ui(c.get(), c.get(), 1);
    mpz_tdiv_r(c.get(), c.get(), pk.ct_modulus.get());
  }
  return c;
}

Int decrypt(const PublicKey& pk, const SecretKey& sk, const Int& c) {
  if (c.sign() <= 0 || mpz_cmp(c.get(), pk.ct_modulus.get()) >= 0) {
    throw std::invalid_argument("decrypt: ciphertext outside [1, modulus)");
  }
  Int m;
  if (pk.scheme == Scheme::kJoyeLibert) {
    // Step (1): C = c^p' mod p = eta^m with eta = y^p' of order 2^k.
    Int big_c, z, d = sk.aux;
    mpz_powm_sec(big_c.get(), c.get(), sk.exp.get(), sk.p.get());
    // Step (2): bit j of m is 1 iff C^(2^(k-j)) = -1 after the lower bits are removed
    // (C <- C * eta^(-2^(j-1))). k(k-1)/2 squarings modulo p.
    const std::uint32_t k = pk.message_bits;
    for (std::uint32_t j = 1; j <= k; ++j) {
      z = big_c;
      for (std::uint32_t s = 0; s < k - j; ++s) {
        mpz_mul(z.get(), z.get(), z.get());
        mpz_tdiv_r(z.get(), z.get(), sk.p.get());
      }
      if (mpz_cmp_ui(z.get(), 1) != 0) {
        mpz_setbit(m.get(), j - 1);
        mpz_mul(big_c.get(), big_c.get(), d.get());
        mpz_tdiv_r(big_c.get(), big_c.get(), sk.p.get());
      }
      mpz_mul(d.get(), d.get(), d.get());
      mpz_tdiv_r(d.get(), d.get(), sk.p.get());
    }
    big_c.wipe();
    d.wipe();
  } else {
    // m = L(c^lambda mod N^2) * lambda^-1 mod N, L(u) = (u - 1) / N.
    Int u;
    mpz_powm_sec(u.get(), c.get(), sk.exp.get(), pk.ct_modulus.get());
    mpz_sub_ui(u.get(), u.get(), 1);
    Int rem;
    mpz_tdiv_qr(u.get(), rem.get(), u.get(), pk.n.get());
    if (rem.sign() != 0) {
      throw std::invalid_argument("decrypt: not a Paillier ciphertext of this key");
    }
    mpz_mul(m.get(), u.get(), sk.aux.get());
    mpz_mod(m.get(), m.get(), pk.n.get());
    u.wipe();
  }
  return m;
}

namespace {

// n-limb copy of x (0 <= x < 2^(64 n)).
void to_limbs(mp_limb_t* out, const Int& x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = mpz_getlimbn(x.get(), static_cast<mp_size_t>(i));
}

}  // namespace

Encryptor::Encryptor(const PublicKey& pk) : pk_(pk) {
  if (pk.scheme != Scheme::kJoyeLibert) return;
  limbs_ = mpz_size(pk.n.get());
  windows_ = (pk.message_bits + 3) / 4;
  table_.assign(windows_ * 16 * limbs_, 0);
  mont_.emplace(pk.n);
  Int base = pk.y, power;
  for (std::size_t i = 0; i < windows_; ++i) {
    power = Int(1);
    for (unsigned j = 0; j < 16; ++j) {
      mont_->to(&table_[(i * 16 + j) * limbs_], power);  // public values: plain conversion
      mpz_mul(power.get(), power.get(), base.get());
      mpz_mod(power.get(), power.get(), pk.n.get());
    }
    base = power;  // y^(16^(i+1))
  }
}

Int Encryptor::encrypt(const Int& m) const {
  if (pk_.scheme != Scheme::kJoyeLibert) return hec::labhe::encrypt(pk_, m);
  if (m.sign() < 0 || mpz_cmp(m.get(), pk_.msg_modulus.get()) >= 0) {
    throw std::invalid_argument("encrypt: message outside [0, " + pk_.msg_modulus.str() + ")");
  }
  const std::size_t n = limbs_;
  const auto sn = static_cast<mp_size_t>(n);
  const Montgomery& mt = *mont_;
  std::vector<mp_limb_t> scratch(mt.silent_scratch_limbs()), acc(n), sel(n), x(n);
  mt.one(acc.data());  // Montgomery form of 1
  // Step (1): y^m, one table entry per 4-bit digit of m, selected without branches.
  for (std::size_t i = 0; i < windows_; ++i) {
    const mp_limb_t d = (mpz_getlimbn(m.get(), static_cast<mp_size_t>(4 * i / GMP_NUMB_BITS)) >>
                         (4 * i % GMP_NUMB_BITS)) &
                        15;
    std::fill(sel.begin(), sel.end(), 0);
    for (mp_limb_t j = 0; j < 16; ++j) {
      const mp_limb_t mask = static_cast<mp_limb_t>(0) - static_cast<mp_limb_t>(j == d);
      const mp_limb_t* e = &table_[(i * 16 + j) * n];
      for (std::size_t l = 0; l < n; ++l) sel[l] |= e[l] & mask;
    }
    mt.mul_silent(acc.data(), acc.data(), sel.data(), scratch.data());
  }
  // Step (2): times x^(2^k) for a fresh random unit x (k squarings in Montgomery form).
  Int xr = random_unit(pk_.n);
  to_limbs(x.data(), xr, n);
  xr.wipe();
  mt.to_silent(x.data(), x.data(), scratch.data());
  for (std::uint32_t i = 0; i < pk_.message_bits; ++i) {
    mt.sqr_silent(x.data(), x.data(), scratch.data());
  }
  mt.mul_silent(acc.data(), acc.data(), x.data(), scratch.data());
  mt.from_silent(acc.data(), acc.data(), scratch.data());
  Int c;
  mp_limb_t* dst = mpz_limbs_write(c.get(), sn);
  std::copy(acc.begin(), acc.end(), dst);
  mp_size_t used = sn;
  while (used > 0 && acc[used - 1] == 0) --used;  // the ciphertext is public
  mpz_limbs_finish(c.get(), used);
  for (auto* v : {&acc, &sel, &x, &scratch}) {
    sodium_memzero(v->data(), v->size() * sizeof(mp_limb_t));
  }
  return c;
}

void check_key_pair(const PublicKey& pk, const SecretKey& sk) {
  Int n;
  mpz_mul(n.get(), sk.p.get(), sk.q.get());
  if (n != pk.n) throw std::invalid_argument("the secret key does not belong to this public key");
}

}  // namespace hec::labhe
