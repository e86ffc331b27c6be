// Joye-Libert, Paillier and the PRF: known answers (small hand-built keys and values computed
// independently with Python's pow and hashlib.blake2b), round trips, homomorphic properties,
// and refusals (sizes, wrong keys).
#include <gtest/gtest.h>

#include "labhe/ahe.h"
#include "labhe/prf.h"

namespace hec::labhe {
namespace {

// p = 17, q = 97 (both 1 mod 2^4), y = 5: (5/17) = (5/97) = -1.
void tiny_jl(PublicKey& pk, SecretKey& sk) {
  pk.scheme = Scheme::kJoyeLibert;
  pk.modulus_bits = 11;
  pk.message_bits = 4;
  pk.n = Int(17 * 97);
  pk.y = Int(5);
  pk.finish();
  sk.p = Int(17);
  sk.q = Int(97);
  sk.exp = Int(1);  // (17 - 1) / 2^4
  sk.aux = Int(7);  // (5^1)^-1 mod 17
}

TEST(JoyeLibert, KnownAnswerDecrypt) {
  PublicKey pk;
  SecretKey sk;
  tiny_jl(pk, sk);
  // c = 5^11 * 123^16 mod 1649 = 1201 (Python).
  EXPECT_EQ(decrypt(pk, sk, Int(1201)), Int(11));
  for (long m = 0; m < 16; ++m) EXPECT_EQ(decrypt(pk, sk, encode_public(pk, Int(m))), Int(m));
}

TEST(JoyeLibert, RoundTripAndHomomorphism) {
  KeyPair kp = keygen(Scheme::kJoyeLibert, 2048, 64);
  EXPECT_EQ(kp.pk.n.bits(), 2048u);
  ModRing ring(kp.pk.ct_modulus);
  Int m1 = random_below(kp.pk.msg_modulus), m2 = random_below(kp.pk.msg_modulus);
  Int c1 = encrypt(kp.pk, m1), c2 = encrypt(kp.pk, m2);
  EXPECT_EQ(decrypt(kp.pk, kp.sk, c1), m1);
  EXPECT_NE(encrypt(kp.pk, m1), c1);  // randomized
  Int sum, want;
  ring.mul(sum, c1, c2);
  mpz_add(want.get(), m1.get(), m2.get());
  mpz_fdiv_r_2exp(want.get(), want.get(), 64);
  EXPECT_EQ(decrypt(kp.pk, kp.sk, sum), want);
  Int scaled = ring.pow(c1, Int(12345));
  mpz_mul_ui(want.get(), m1.get(), 12345);
  mpz_fdiv_r_2exp(want.get(), want.get(), 64);
  EXPECT_EQ(decrypt(kp.pk, kp.sk, scaled), want);
}

TEST(JoyeLibert, FixedBaseEncryptorRoundTrips) {
  for (std::uint32_t k : {7u, 64u, 130u}) {
    KeyPair kp = keygen(Scheme::kJoyeLibert, 2048, k);
    Encryptor enc(kp.pk);
    for (int rep = 0; rep < 5; ++rep) {
      Int m = rep == 0 ? Int(0) : random_below(kp.pk.msg_modulus);
      if (rep == 1) mpz_sub_ui(m.get(), kp.pk.msg_modulus.get(), 1);
      Int c = enc.encrypt(m);
      EXPECT_EQ(decrypt(kp.pk, kp.sk, c), m) << "k=" << k;
      EXPECT_NE(enc.encrypt(m), c);  // fresh randomness
    }
    EXPECT_THROW(enc.encrypt(kp.pk.msg_modulus), std::invalid_argument);
  }
}

TEST(JoyeLibert, WrongKeyDoesNotDecrypt) {
  KeyPair a = keygen(Scheme::kJoyeLibert, 2048, 32);
  KeyPair b = keygen(Scheme::kJoyeLibert, 2048, 32);
  EXPECT_THROW(check_key_pair(a.pk, b.sk), std::invalid_argument);
  Int m(1234567);
  Int c = encrypt(a.pk, m);
  // Decrypting under another key: either out of range for its modulus, or another value.
  try {
    EXPECT_NE(decrypt(b.pk, b.sk, c), m);
  } catch (const std::invalid_argument&) {
  }
}

TEST(JoyeLibert, RefusesInsecureSizes) {
  EXPECT_THROW(keygen(Scheme::kJoyeLibert, 1024, 32), std::invalid_argument);
  EXPECT_THROW(keygen(Scheme::kJoyeLibert, 2048, 2048 / 4 - 127), std::invalid_argument);
  EXPECT_THROW(keygen(Scheme::kJoyeLibert, 2048, 0), std::invalid_argument);
  EXPECT_EQ(modulus_security_bits(3072), 128);
  EXPECT_EQ(modulus_security_bits(2048), 112);
}

TEST(Paillier, RoundTripAndHomomorphism) {
  KeyPair kp = keygen(Scheme::kPaillier, 2048, 0);
  ModRing ring(kp.pk.ct_modulus);
  Int m1 = random_below(kp.pk.n), m2(42);
  Int c1 = encrypt(kp.pk, m1), c2 = encrypt(kp.pk, m2);
  EXPECT_EQ(decrypt(kp.pk, kp.sk, c1), m1);
  Int sum, want;
  ring.mul(sum, c1, c2);
  mpz_add(want.get(), m1.get(), m2.get());
  mpz_mod(want.get(), want.get(), kp.pk.n.get());
  EXPECT_EQ(decrypt(kp.pk, kp.sk, sum), want);
  EXPECT_EQ(decrypt(kp.pk, kp.sk, encode_public(kp.pk, Int(99))), Int(99));
  EXPECT_THROW(encrypt(kp.pk, kp.pk.n), std::invalid_argument);
}

TEST(Prf, KnownAnswers) {
  PrfKey key{};
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i);
  Int two64;
  mpz_setbit(two64.get(), 64);
  // BLAKE2b-512(key, label || 0) first 8 bytes, big-endian (Python hashlib).
  EXPECT_EQ(prf_mask(key, {"X", 3, 1}, two64), Int::from_string("17974650349131295957"));
  PrfKey k5 = derive_provider_key(key, 5);
  EXPECT_EQ(k5[0], 0x2f);
  EXPECT_EQ(k5[31], 0x1c);
}

TEST(Prf, LabelsAndKeysSeparate) {
  PrfKey key = random_prf_key();
  Int m = Int::from_string("340282366920938463463374607431768211297");  // not a power of two
  Int b = prf_mask(key, {"X", 0, 0}, m);
  EXPECT_LT(mpz_cmp(b.get(), m.get()), 0);
  EXPECT_EQ(prf_mask(key, {"X", 0, 0}, m), b);
  EXPECT_NE(prf_mask(key, {"X", 0, 1}, m), b);
  EXPECT_NE(prf_mask(key, {"X", 1, 0}, m), b);
  EXPECT_NE(prf_mask(key, {"Y", 0, 0}, m), b);
  EXPECT_NE(prf_mask(derive_provider_key(key, 1), {"X", 0, 0}, m), b);
  EXPECT_NE(key_check(derive_provider_key(key, 1)), key_check(derive_provider_key(key, 2)));
}

}  // namespace
}  // namespace hec::labhe
