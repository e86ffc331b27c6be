// Tests for keys, encryption and ckks/evaluator.h: every operation against the same operation
// on the plaintext vectors, with measured errors checked against the analytic bounds of
// encoder.h; rotation and conjugation by every generated key; degree-2 and degree-4
// decryption; hybrid key switching for dnum = 1, 2, 4; keys trimmed to a lower level.
#include "ckks/evaluator.h"

#include <gtest/gtest.h>

#include "ckks/context_impl.h"
#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/keys.h"
#include "ckks/keyswitch.h"
#include "math/cpu_features.h"
#include "test_util.h"

namespace hec::ckks {
namespace {

using testing::max_error;
using testing::random_slots;
using testing::small_params;
using Vec = std::vector<std::complex<double>>;

class CkksFixture : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ctx = make_context(small_params(GetParam()));
    enc = std::make_unique<Encoder>(ctx);
    KeyGenerator gen(ctx);
    sk = gen.secret_key();
    pk = gen.public_key(sk);
    rk = gen.relin_key(sk);
    encryptor = std::make_unique<Encryptor>(ctx, pk);
    decryptor = std::make_unique<Decryptor>(ctx, sk);
    eval = std::make_unique<Evaluator>(ctx);
    scale = static_cast<double>(ctx->params().moduli().back());  // Delta ~ 2^40
  }
  Ciphertext encrypt(const Vec& z, int level = -1) {
    const Level l(level < 0 ? ctx->params().max_level() : level);
    return encryptor->encrypt(enc->encode(z, l, scale));
  }
  Vec decrypt(const Ciphertext& ct) { return enc->decode(decryptor->decrypt(ct)).values; }

  ContextPtr ctx;
  std::unique_ptr<Encoder> enc;
  SecretKey sk;
  PublicKey pk;
  RelinKey rk;
  std::unique_ptr<Encryptor> encryptor;
  std::unique_ptr<Decryptor> decryptor;
  std::unique_ptr<Evaluator> eval;
  double scale = 0;
};

// Parameters without special primes (what the compiler chooses for a program with no key
// switch, such as the chi-square GWAS): encryption, products of any degree and decryption
// work, and making a key-switching key is refused by name.
TEST(CkksNoSpecialPrimes, ComputesWithoutKeysAndRefusesKeySwitchingKeys) {
  const ContextPtr ctx =
      make_context(Parameters::from_bit_sizes(LogN(12), {55}, 40, 2, {}, 1, Security::kInsecure));
  Encoder enc(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  Encryptor encryptor(ctx, gen.public_key(sk));
  Decryptor decryptor(ctx, sk);
  Evaluator eval(ctx);
  const double scale = static_cast<double>(ctx->params().moduli().back());
  const Vec x = random_slots(ctx->slots(), 2.0, 40), y = random_slots(ctx->slots(), 2.0, 41);
  const Level top(ctx->params().max_level());
  Ciphertext prod = eval.multiply(encryptor.encrypt(enc.encode(x, top, scale)),
                                  encryptor.encrypt(enc.encode(y, top, scale)));
  eval.rescale_inplace(prod);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(prod)).values, want), 1e-5);
  try {
    (void)gen.relin_key(sk);
    ADD_FAILURE() << "relin_key without special primes did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no special primes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)gen.galois_keys(sk, {1}), std::invalid_argument);
}

TEST_P(CkksFixture, EncryptDecryptWithinBound) {
  const Vec z = random_slots(ctx->slots(), 5.0, 10);
  double enc_bound = 0;
  const Plaintext pt = enc->encode(z, Level(3), scale, &enc_bound);
  const Ciphertext ct = encryptor->encrypt(pt);
  const DecodeResult r = enc->decode(decryptor->decrypt(ct));
  const double bound =
      enc_bound + r.error_bound + fresh_public_key_noise_bound(ctx->params(), scale);
  EXPECT_LE(max_error(r.values, z), bound);
  EXPECT_LT(max_error(r.values, z), 1e-6);
}

TEST_P(CkksFixture, SymmetricAndCompactEncryption) {
  const Vec z = random_slots(ctx->slots(), 5.0, 11);
  SymmetricEncryptor sym(ctx, sk);
  double enc_bound = 0;
  const Plaintext pt = enc->encode(z, Level(2), scale, &enc_bound);
  const CompactCiphertext compact = sym.encrypt_compact(pt);
  const Ciphertext ct = ctx->expand(compact);
  const double bound = enc_bound + fresh_symmetric_noise_bound(ctx->params(), scale) + 1e-12;
  EXPECT_LE(max_error(decrypt(ct), z), bound);
  EXPECT_LE(max_error(decrypt(sym.encrypt(pt)), z), bound);
}

TEST_P(CkksFixture, AddSubNegateConstant) {
  const Vec x = random_slots(ctx->slots(), 3.0, 12), y = random_slots(ctx->slots(), 3.0, 13);
  const Ciphertext cx = encrypt(x), cy = encrypt(y);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + y[i];
  EXPECT_LT(max_error(decrypt(eval->add(cx, cy)), want), 1e-6);
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] - y[i];
  EXPECT_LT(max_error(decrypt(eval->sub(cx, cy)), want), 1e-6);
  Ciphertext n = cx;
  eval->negate_inplace(n);
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = -x[i];
  EXPECT_LT(max_error(decrypt(n), want), 1e-6);
  Ciphertext c = cx;
  eval->add_constant_inplace(c, 2.5);
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + 2.5;
  EXPECT_LT(max_error(decrypt(c), want), 1e-6);
  Ciphertext p = cx;
  eval->add_plain_inplace(p, enc->encode(y, cx.level, cx.scale));
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + y[i];
  EXPECT_LT(max_error(decrypt(p), want), 1e-6);
  eval->sub_plain_inplace(p, enc->encode(y, cx.level, cx.scale));
  EXPECT_LT(max_error(decrypt(p), x), 1e-6);
}

// Multiplying by i (the monomial X^{N/2}) and adding a complex constant act on every slot,
// at any degree: the two exact steps the compiler's complex layout needs.
TEST_P(CkksFixture, MultiplyByIAndComplexConstant) {
  const Vec x = random_slots(ctx->slots(), 3.0, 14);
  const std::complex<double> i(0.0, 1.0);
  Ciphertext c = encrypt(x);
  eval->multiply_by_i_inplace(c);
  Vec want(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) want[k] = i * x[k];
  EXPECT_LT(max_error(decrypt(c), want), 1e-6);
  eval->add_complex_constant_inplace(c, 1.5, -2.25);
  for (std::size_t k = 0; k < x.size(); ++k) want[k] += std::complex<double>(1.5, -2.25);
  EXPECT_LT(max_error(decrypt(c), want), 1e-6);
  Ciphertext sq = eval->multiply(encrypt(x), encrypt(x));  // degree 2
  eval->multiply_by_i_inplace(sq);
  for (std::size_t k = 0; k < x.size(); ++k) want[k] = i * x[k] * x[k];
  Ciphertext r = sq;
  eval->rescale_inplace(r);
  EXPECT_LT(max_error(decrypt(r), want), 1e-4);
}

TEST_P(CkksFixture, MultiplyRelinearizeRescale) {
  const Vec x = random_slots(ctx->slots(), 2.0, 14), y = random_slots(ctx->slots(), 2.0, 15);
  const Ciphertext cx = encrypt(x), cy = encrypt(y);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  Ciphertext prod = eval->multiply(cx, cy);
  EXPECT_EQ(prod.degree, 2u);
  EXPECT_LT(max_error(decrypt(prod), want), 1e-4);  // degree-2 decryption
  eval->relinearize_inplace(prod, rk);
  EXPECT_EQ(prod.degree, 1u);
  EXPECT_LT(max_error(decrypt(prod), want), 1e-4);
  const double before = prod.scale;
  const double q_top = static_cast<double>(ctx->params().chain()[prod.limbs - 1]);
  eval->rescale_inplace(prod);
  EXPECT_EQ(prod.level.value, 2);
  EXPECT_EQ(prod.scale, before / q_top);  // exact division, no power-of-two assumption
  const double err = max_error(decrypt(prod), want);
  // Noise before the rescale is below 1e-4 * scale^2 / scale; the rescale adds its bound.
  EXPECT_LE(err, 1e-4 + rescale_noise_bound(ctx->params(), prod.scale));
}

// The into-output forms (a preallocated output, as Lattigo's API) compute bit for bit what
// the allocating and in-place forms compute, whatever the output held before (a larger
// ciphertext, a smaller one), and accept the operand itself as the output.
TEST_P(CkksFixture, IntoOutputFormsEqualAllocatingAndInPlaceForms) {
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, {1, -2});
  const Vec x = random_slots(ctx->slots(), 2.0, 50), y = random_slots(ctx->slots(), 2.0, 51);
  const Ciphertext cx = encrypt(x), cy = encrypt(y);
  const auto same = [](const Ciphertext& a, const Ciphertext& b) {
    EXPECT_EQ(a.n, b.n);
    EXPECT_EQ(a.limbs, b.limbs);
    EXPECT_EQ(a.degree, b.degree);
    EXPECT_EQ(a.level.value, b.level.value);
    EXPECT_EQ(a.scale, b.scale);
    EXPECT_EQ(a.key_id, b.key_id);
    EXPECT_TRUE(a.data == b.data);
  };
  const Ciphertext prod = eval->multiply(cx, cy);
  Ciphertext relin = prod;
  eval->relinearize_inplace(relin, rk);
  Ciphertext rescaled = relin;
  eval->rescale_inplace(rescaled);
  Ciphertext rotated = cx;
  eval->rotate_inplace(rotated, 1, gk);
  // Outputs that held something else before: a degree-2 ciphertext (larger) and a
  // lower-level one (smaller).
  Ciphertext small = rescaled;
  eval->rescale_inplace(small);
  for (const Ciphertext* held : {&prod, static_cast<const Ciphertext*>(&small)}) {
    Ciphertext out = *held;
    eval->multiply(cx, cy, out);
    same(out, prod);
    out = *held;
    eval->multiply_relin(cx, cy, rk, out);
    same(out, relin);
    out = *held;
    eval->rescale(relin, out);
    same(out, rescaled);
    out = *held;
    eval->rotate(cx, 1, gk, out);
    same(out, rotated);
    out = *held;
    encryptor->encrypt(enc->encode(x, cx.level, cx.scale), out);
    EXPECT_EQ(out.degree, 1u);
    EXPECT_EQ(out.limbs, cx.limbs);
    EXPECT_LT(max_error(decrypt(out), x), 1e-6);
  }
  // The operand as the output.
  Ciphertext alias = relin;
  eval->rescale(alias, alias);
  same(alias, rescaled);
  alias = cx;
  eval->rotate(alias, 1, gk, alias);
  same(alias, rotated);
  alias = cx;
  eval->multiply(alias, cy, alias);
  same(alias, prod);
  // Rotation by 0 (the identity element) copies.
  Ciphertext copy = prod;
  eval->rotate(cx, 0, gk, copy);
  same(copy, cx);
}

TEST_P(CkksFixture, DegreeFourDecryption) {
  const Vec x = random_slots(ctx->slots(), 1.5, 16);
  const Ciphertext cx = encrypt(x);
  const Ciphertext c2 = eval->multiply(cx, cx);
  const Ciphertext c4 = eval->multiply(c2, c2);
  EXPECT_EQ(c4.degree, 4u);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * x[i] * x[i] * x[i];
  // Scale 2^160 at level 3 (Q ~ 2^175): still decodes; error relative to scale^4.
  EXPECT_LT(max_error(decrypt(c4), want), 1e-3);
  // Degree-3 too, and adding ciphertexts of different degrees.
  Ciphertext c3 = eval->multiply(c2, cx);
  EXPECT_EQ(c3.degree, 3u);
  Vec want3(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want3[i] = x[i] * x[i] * x[i];
  EXPECT_LT(max_error(decrypt(c3), want3), 1e-3);
}

TEST_P(CkksFixture, MultiplyPlainAndConstants) {
  const Vec x = random_slots(ctx->slots(), 2.0, 17), y = random_slots(ctx->slots(), 2.0, 18);
  Ciphertext c = encrypt(x);
  eval->multiply_plain_inplace(c, enc->encode(y, c.level, scale));
  eval->rescale_inplace(c);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  EXPECT_LT(max_error(decrypt(c), want), 1e-6);

  Ciphertext k = encrypt(x);
  const double s0 = k.scale;
  eval->multiply_constant_inplace(k, -0.3141592653);
  eval->rescale_inplace(k);
  EXPECT_DOUBLE_EQ(k.scale, s0);  // the constant was scaled by q_level
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * -0.3141592653;
  EXPECT_LT(max_error(decrypt(k), want), 1e-6);

  Ciphertext m = encrypt(x);
  eval->multiply_integer_inplace(m, -7);
  EXPECT_EQ(m.level.value, 3);
  EXPECT_EQ(m.scale, s0);
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * -7.0;
  EXPECT_LT(max_error(decrypt(m), want), 1e-5);
}

TEST_P(CkksFixture, DropLevel) {
  const Vec x = random_slots(ctx->slots(), 2.0, 19);
  Ciphertext c = encrypt(x);
  eval->drop_to_level_inplace(c, Level(1));
  EXPECT_EQ(c.level.value, 1);
  EXPECT_LT(max_error(decrypt(c), x), 1e-6);
  EXPECT_THROW(eval->drop_to_level_inplace(c, Level(2)), std::invalid_argument);
}

TEST_P(CkksFixture, RotationAndConjugationByEveryKey) {
  const std::vector<int> steps = {1, 2, 3, 7, -1, -5, 100, static_cast<int>(ctx->slots()) - 1};
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, steps, /*conjugation=*/true);
  const Vec x = random_slots(ctx->slots(), 2.0, 20);
  const Ciphertext c = encrypt(x);
  const std::size_t slots = ctx->slots();
  for (int s : steps) {
    Ciphertext r = c;
    eval->rotate_inplace(r, s, gk);
    Vec want(slots);
    for (std::size_t i = 0; i < slots; ++i) {
      want[i] = x[(i + static_cast<std::size_t>((s % static_cast<int>(slots) + slots))) % slots];
    }
    EXPECT_LT(max_error(decrypt(r), want), 1e-5) << "rotation by " << s;
  }
  Ciphertext conj = c;
  eval->conjugate_inplace(conj, gk);
  Vec want(slots);
  for (std::size_t i = 0; i < slots; ++i) want[i] = std::conj(x[i]);
  EXPECT_LT(max_error(decrypt(conj), want), 1e-5);
  // A missing key is refused with the element named.
  Ciphertext r = c;
  EXPECT_THROW(eval->rotate_inplace(r, 4, gk), std::invalid_argument);
}

TEST_P(CkksFixture, KeySwitchNoiseStaysAtFreshLevel) {
  // Regression: with the approximate P -> Q conversion in ModDown, the error -u(1 + s) has a
  // non-zero mean, which the canonical embedding amplifies ~N-fold; a rotation then carried
  // 1.5-4x (N = 2^12; 15x at N = 2^16) the noise of a fresh encryption. With the exact
  // conversion the key-switching noise is negligible: the ciphertext keeps its fresh error.
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, {1});
  double fresh = 0, rotated = 0;
  for (unsigned trial = 0; trial < 4; ++trial) {
    const Vec x = random_slots(ctx->slots(), 1.0, 40 + trial);
    Ciphertext c = encrypt(x);
    fresh = std::max(fresh, max_error(decrypt(c), x));
    eval->rotate_inplace(c, 1, gk);
    Vec want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[(i + 1) % x.size()];
    rotated = std::max(rotated, max_error(decrypt(c), want));
  }
  EXPECT_LT(rotated, 1.25 * fresh) << "fresh " << fresh << ", after key switching " << rotated;
}

TEST_P(CkksFixture, HoistedRotationsEqualSeparateRotations) {
  const std::vector<int> steps = {0, 1, 2, 4, 8, 16, -3};
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, steps);
  const Vec x = random_slots(ctx->slots(), 2.0, 21);
  const Ciphertext c = encrypt(x);
  const std::vector<Ciphertext> hoisted = eval->rotate_hoisted(c, steps, gk);
  ASSERT_EQ(hoisted.size(), steps.size());
  const std::size_t slots = ctx->slots();
  for (std::size_t k = 0; k < steps.size(); ++k) {
    Vec want(slots);
    const int s = steps[k];
    for (std::size_t i = 0; i < slots; ++i) {
      want[i] = x[(i + static_cast<std::size_t>(s % static_cast<int>(slots) + slots)) % slots];
    }
    EXPECT_LT(max_error(decrypt(hoisted[k]), want), 1e-5) << "step " << s;
  }
}

// Galois keys are kept permuted in memory (keys.h) so the automorphism moves from every digit
// of the key product to its result. The exact ModDown commutes with it, so a rotation is bit
// for bit the textbook one: the plain key (the file layout), perm applied to each digit of
// ModUp(c_1), ModDown, plus perm(c_0).
TEST_P(CkksFixture, RotationWithStoredPermutedKeysIsBitExactTextbookRotation) {
  KeyGenerator gen(ctx);
  const std::vector<int> steps = {1, 3, -2};
  const GaloisKeys gk = gen.galois_keys(sk, steps, /*conjugation=*/true);
  const Ciphertext c = encrypt(random_slots(ctx->slots(), 2.0, 25));
  const Context::Impl& impl = ctx->impl();
  const std::size_t n = ctx->n(), words = c.limbs * n;
  std::vector<std::uint64_t> elements;
  for (int s : steps) elements.push_back(ctx->galois_element(s));
  elements.push_back(ctx->conjugation_element());
  for (std::size_t e = 0; e < elements.size(); ++e) {
    const std::uint64_t g = elements[e];
    const std::vector<std::uint32_t>& perm = impl.galois_permutation(g);
    KeySwitchKey plain = gk.keys.at(g);
    detail::permute_galois_key(plain, perm, n);  // back to the file layout
    Ciphertext want = c;
    const detail::ModUpDigits ext = detail::mod_up(*ctx, c.poly(1), c.level);
    detail::key_product_mod_down(*ctx, ext, plain, &perm, want.poly(0), want.poly(1));
    for (std::size_t i = 0; i < c.limbs; ++i) {
      const std::uint64_t q = impl.moduli[i].value();
      for (std::size_t t = 0; t < n; ++t) {
        const std::uint64_t v = want.limb(0, i)[t] + c.limb(0, i)[perm[t]];
        want.limb(0, i)[t] = v >= q ? v - q : v;
      }
    }
    Ciphertext got = c;
    eval->apply_galois_inplace(got, g, gk);
    EXPECT_TRUE(std::equal(got.data.begin(), got.data.begin() + 2 * words, want.data.begin()))
        << "element " << g;
    if (e < steps.size()) {
      const Ciphertext hoisted = eval->rotate_hoisted(c, {steps[e]}, gk)[0];
      EXPECT_TRUE(std::equal(hoisted.data.begin(), hoisted.data.end(), want.data.begin()))
          << "hoisted, element " << g;
    }
  }
}

TEST_P(CkksFixture, DoublyHoistedRotationSumEqualsSumOfRotations) {
  const std::vector<int> steps = {0, 1, 5, 12, -3};
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, steps);
  const Vec x = random_slots(ctx->slots(), 2.0, 24);
  const Ciphertext c = encrypt(x);
  const Ciphertext sum = eval->rotate_sum_hoisted(c, steps, gk);
  const std::size_t slots = ctx->slots();
  Vec want(slots, 0.0);
  for (int s : steps) {
    for (std::size_t i = 0; i < slots; ++i) {
      want[i] += x[(i + static_cast<std::size_t>(s % static_cast<int>(slots) + slots)) % slots];
    }
  }
  // One ModDown for all five terms: the error is that of the separate rotations or below.
  Ciphertext separate = eval->rotate_hoisted(c, steps, gk)[0];
  for (std::size_t k = 1; k < steps.size(); ++k) {
    eval->add_inplace(separate, eval->rotate_hoisted(c, {steps[k]}, gk)[0]);
  }
  const double err = max_error(decrypt(sum), want);
  EXPECT_LT(err, 1e-5);
  EXPECT_LT(err, 2.0 * max_error(decrypt(separate), want) + 1e-9);
  EXPECT_THROW(eval->rotate_sum_hoisted(c, {0, 0}, gk), std::invalid_argument);
  EXPECT_THROW(eval->rotate_sum_hoisted(c, {7}, gk), std::invalid_argument);  // no key for 7
}

TEST_P(CkksFixture, RotateAndRelinearizeAtLowerLevelAndTrimmedKeys) {
  KeyGenerator gen(ctx);
  const GaloisKeys gk = gen.galois_keys(sk, {1});
  const Vec x = random_slots(ctx->slots(), 2.0, 22), y = random_slots(ctx->slots(), 2.0, 23);
  Ciphertext cx = encrypt(x, 1), cy = encrypt(y, 1);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  // Full-level keys on a level-1 ciphertext.
  Ciphertext p = eval->multiply_relin(cx, cy, rk);
  EXPECT_LT(max_error(decrypt(p), want), 1e-4);
  // Keys trimmed to level 1.
  const RelinKey rk1 = trim(rk, ctx->params(), Level(1));
  const GaloisKeys gk1 = trim(gk, ctx->params(), Level(1));
  Ciphertext q = eval->multiply_relin(cx, cy, rk1);
  EXPECT_LT(max_error(decrypt(q), want), 1e-4);
  Ciphertext r = cx;
  eval->rotate_inplace(r, 1, gk1);
  Vec rot(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) rot[i] = x[(i + 1) % x.size()];
  EXPECT_LT(max_error(decrypt(r), rot), 1e-5);
  // A trimmed key cannot serve a higher level.
  Ciphertext high = encrypt(x, 3);
  Ciphertext hp = eval->multiply(high, high);
  EXPECT_THROW(eval->relinearize_inplace(hp, rk1), std::invalid_argument);
  // Keys generated directly at a lower level.
  const RelinKey rk_low = gen.relin_key(sk, Level(1));
  Ciphertext s = eval->multiply_relin(cx, cy, rk_low);
  EXPECT_LT(max_error(decrypt(s), want), 1e-4);
}

TEST_P(CkksFixture, ChecksRefuseMismatches) {
  const Vec x = random_slots(ctx->slots(), 1.0, 24);
  Ciphertext a = encrypt(x, 3), b = encrypt(x, 2);
  EXPECT_THROW(eval->add_inplace(a, b), std::invalid_argument);  // levels
  Ciphertext c = encrypt(x, 3);
  c.scale *= 2;
  EXPECT_THROW(eval->add_inplace(a, c), std::invalid_argument);  // scales
  Ciphertext d = encrypt(x, 3);
  EXPECT_THROW(eval->relinearize_inplace(d, rk), std::invalid_argument);  // degree 1
  Ciphertext z = encrypt(x, 0);
  EXPECT_THROW(eval->rescale_inplace(z), std::invalid_argument);  // level 0
  // Another key set.
  KeyGenerator gen(ctx);
  const SecretKey other = gen.secret_key();
  Encryptor e2(ctx, gen.public_key(other));
  Ciphertext foreign = e2.encrypt(enc->encode(x, Level(3), scale));
  EXPECT_THROW(eval->add_inplace(a, foreign), std::invalid_argument);
  EXPECT_THROW(decryptor->decrypt(foreign), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Dnum, CkksFixture, ::testing::Values(1, 2, 4),
                         [](const auto& info) { return "dnum" + std::to_string(info.param); });

}  // namespace
}  // namespace hec::ckks

namespace hec::ckks {
namespace {

// Q_0 of several primes (the compiler sizes the output modulus from range analysis and may
// need more than one prime): levels, rescale and key switching index the chain correctly.
// Keys limited to a low level: the security bound counts Q_key_level * P, keys above that level
// are refused by name, and the limit is part of the digest (and survives the encoding).
TEST(CkksKeyLevel, LimitsKeysAndCountsTheirModulus) {
  const Parameters full =
      Parameters::from_bit_sizes(LogN(13), {51, 51, 51}, 58, 1, {59}, 4, Security::kInsecure);
  EXPECT_TRUE(full.insecure());  // 153 + 58 + 59 > 218
  const Parameters low = full.with_key_level(Level(0));
  EXPECT_FALSE(low.insecure());
  EXPECT_NEAR(low.log_qp(), std::max(low.log_q(Level(1)), low.log_q(Level(0)) + 59.0), 1.0);
  EXPECT_NE(low.digest(), full.digest());
  EXPECT_EQ(Parameters::from_canonical_encoding(low.canonical_encoding()).digest(), low.digest());
  EXPECT_EQ(Parameters::from_canonical_encoding(full.canonical_encoding()).digest(), full.digest());
  const ContextPtr ctx = make_context(low);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  EXPECT_NO_THROW((void)gen.galois_keys(sk, {}, true, Level(0)));
  try {
    (void)gen.relin_key(sk, Level(1));
    ADD_FAILURE() << "a key above the key level was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("limit keys to level 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)Parameters::from_bit_sizes(LogN(13), {51, 51, 51}, 58, 1, {59}, 4),
               std::invalid_argument);
}

TEST(CkksMultiPrimeOutput, RescaleAndRotateDownToLevelZero) {
  const auto ctx = make_context(
      Parameters::from_bit_sizes(LogN(12), {50, 50}, 40, 2, {60, 60}, 2, Security::kInsecure));
  ASSERT_EQ(ctx->params().limbs_at(Level(0)), 2u);
  Encoder enc(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  Encryptor encryptor(ctx, gen.public_key(sk));
  Decryptor decryptor(ctx, sk);
  Evaluator eval(ctx);
  const RelinKey rk = gen.relin_key(sk);
  const GaloisKeys gk = gen.galois_keys(sk, {3});
  const Vec x = random_slots(ctx->slots(), 3.0, 77);
  const double scale = static_cast<double>(ctx->params().moduli()[1]);
  Ciphertext c = encryptor.encrypt(enc.encode(x, Level(2), scale));
  Vec want = x;
  for (int l = 2; l >= 1; --l) {
    c = eval.multiply_relin(c, c, rk);
    eval.rescale_inplace(c);
    for (auto& v : want) v *= v;
  }
  EXPECT_EQ(c.level.value, 0);
  EXPECT_EQ(c.limbs, 2u);
  eval.rotate_inplace(c, 3, gk);
  Vec rot(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) rot[i] = want[(i + 3) % want.size()];
  double largest = 0;
  for (const auto& v : rot) largest = std::max(largest, std::abs(v));
  EXPECT_LT(max_error(enc.decode(decryptor.decrypt(c)).values, rot), 1e-5 * largest);
}

}  // namespace
}  // namespace hec::ckks

namespace hec::ckks {
namespace {

// The evaluator's deterministic operations give the same bits on the portable and the
// AVX-512/IFMA kernel paths (the latter only where the CPU has it).
// Every parameter shape whose kernels differ between paths: 55/40-bit primes (IFMA and wide
// limbs mixed), the N = 2^16 benchmark chain's sizes at a small N (60-bit first and special
// primes, scaling primes around 2^50 on both sides of the IFMA bound, dnum = 3), BV, and
// 60-bit rescale primes over 54-bit output primes (the compiler's chains for meancov.hec:
// the rescale's centred lift of a prime much larger than the limb's).
class CkksKernelPaths : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Chains, CkksKernelPaths, ::testing::Values(0, 1, 2, 3));

TEST_P(CkksKernelPaths, PortableAndVectorPathsAgreeBitForBit) {
  const Parameters params =
      GetParam() == 0 ? small_params(2)
      : GetParam() == 1
          ? Parameters::from_bit_sizes(LogN(12), {60}, 50, 5, {60, 60, 60}, 3, Security::kInsecure)
      : GetParam() == 2 ? Parameters::from_bit_sizes(LogN(12), {55}, 40, 3, {}, 4,
                                                     Security::kInsecure, KeySwitching::kBv)
                        : Parameters::from_bit_sizes(LogN(12), {54, 54}, 60, 3, {60, 60, 60}, 3,
                                                     Security::kInsecure);
  const auto ctx = make_context(params);
  Encoder enc(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  Encryptor encryptor(ctx, gen.public_key(sk));
  Evaluator eval(ctx);
  const RelinKey rk = gen.relin_key(sk);
  const GaloisKeys gk = gen.galois_keys(sk, {1, 5}, true);
  const double scale = static_cast<double>(ctx->params().moduli().back());
  const Ciphertext x =
      encryptor.encrypt(enc.encode(random_slots(ctx->slots(), 1.0, 5), Level(3), scale));
  const Ciphertext y =
      encryptor.encrypt(enc.encode(random_slots(ctx->slots(), 1.0, 6), Level(3), scale));
  auto run = [&] {
    std::vector<Ciphertext> out;
    out.push_back(eval.add(x, y));
    out.push_back(eval.multiply(x, y));
    out.push_back(eval.multiply_relin(x, y, rk));
    Ciphertext r = out.back();
    eval.rescale_inplace(r);
    out.push_back(r);
    Ciphertext rot = x;
    eval.rotate_inplace(rot, 5, gk);
    out.push_back(rot);
    for (auto& h : eval.rotate_hoisted(x, {1, 5}, gk)) out.push_back(std::move(h));
    Ciphertext cj = y;
    eval.conjugate_inplace(cj, gk);
    out.push_back(cj);
    Ciphertext mc = x;
    eval.multiply_constant_inplace(mc, -0.37);
    out.push_back(mc);
    return out;
  };
  math::force_portable_path(true);
  const auto portable = run();
  math::force_portable_path(false);
  const auto best = run();
  ASSERT_EQ(portable.size(), best.size());
  for (std::size_t i = 0; i < best.size(); ++i) EXPECT_EQ(portable[i].data, best[i].data) << i;
}

}  // namespace
}  // namespace hec::ckks

namespace hec::ckks {
namespace {

// BV (RNS digit decomposition) key switching: one digit per prime, no special primes. Its
// noise ~ q_j * sigma * sqrt(N) is meant to be divided away by the rescale that follows a key
// switch done at scale ~Delta^2 (the PNAS authors' use for shallow circuits).
class CkksBv : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx = make_context(Parameters::from_bit_sizes(LogN(12), {55}, 40, 3, {}, 4, Security::kInsecure,
                                                  KeySwitching::kBv));
    enc = std::make_unique<Encoder>(ctx);
    KeyGenerator gen(ctx);
    sk = gen.secret_key();
    encryptor = std::make_unique<Encryptor>(ctx, gen.public_key(sk));
    decryptor = std::make_unique<Decryptor>(ctx, sk);
    eval = std::make_unique<Evaluator>(ctx);
    rk = gen.relin_key(sk);
    gk = gen.galois_keys(sk, {1, -2}, true);
    scale = static_cast<double>(ctx->params().moduli().back());
  }
  Vec decrypt(const Ciphertext& c) { return enc->decode(decryptor->decrypt(c)).values; }
  // Bound on the BV key-switching noise in slots of a ciphertext of scale `scale`:
  // sum_j d_j e_j with centred digits |d_j| <= q_j / 2 (variance q_j^2 / 12) and Gaussian e_j
  // has slot standard deviation N sigma sqrt(sum_j q_j^2 / 12) in a model of independent
  // coefficients; measured maxima over 2048 slots reach ~7 of those, so the bound takes 10,
  // plus 1e-6 for everything else (encryption and rescale noise). The uncentred lift this
  // guards against measured ~10x more (0.0088 at this size).
  double bv_bound(double switch_scale, std::size_t limbs) const {
    double sum = 0;
    for (std::size_t j = 0; j < limbs; ++j) {
      const double q = static_cast<double>(ctx->params().chain()[j]);
      sum += q * q / 12;
    }
    return 10 * static_cast<double>(ctx->n()) * 3.2 * std::sqrt(sum) / switch_scale + 1e-6;
  }
  ContextPtr ctx;
  std::unique_ptr<Encoder> enc;
  SecretKey sk;
  std::unique_ptr<Encryptor> encryptor;
  std::unique_ptr<Decryptor> decryptor;
  std::unique_ptr<Evaluator> eval;
  RelinKey rk;
  GaloisKeys gk;
  double scale = 0;
};

TEST_F(CkksBv, ParametersValidated) {
  EXPECT_EQ(ctx->params().key_switching(), KeySwitching::kBv);
  EXPECT_EQ(ctx->params().digit_size(), 1u);
  EXPECT_NE(ctx->params().describe().find("BV"), std::string::npos);
  const Parameters back = Parameters::from_canonical_encoding(ctx->params().canonical_encoding());
  EXPECT_EQ(back.key_switching(), KeySwitching::kBv);
  EXPECT_EQ(back.digest(), ctx->params().digest());
  EXPECT_THROW(Parameters::from_bit_sizes(LogN(12), {55}, 40, 3, {60}, 4, Security::kInsecure,
                                          KeySwitching::kBv),
               std::invalid_argument);
  EXPECT_THROW(Parameters::from_bit_sizes(LogN(12), {55}, 40, 3, {}, 2, Security::kInsecure,
                                          KeySwitching::kBv),
               std::invalid_argument);
  // Hybrid without P is a valid set for programs that switch no key; its key generation
  // refuses key-switching keys (CkksNoSpecialPrimes).
  EXPECT_NO_THROW(Parameters::from_bit_sizes(LogN(12), {55}, 40, 3, {}, 4, Security::kInsecure));
}

TEST_F(CkksBv, MultiplyRelinearizeRescale) {
  const Vec x = random_slots(ctx->slots(), 2.0, 50), y = random_slots(ctx->slots(), 2.0, 51);
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * y[i];
  for (int level : {3, 1}) {
    const Ciphertext cx = encryptor->encrypt(enc->encode(x, Level(level), scale));
    const Ciphertext cy = encryptor->encrypt(enc->encode(y, Level(level), scale));
    Ciphertext p = eval->multiply_relin(cx, cy, rk);
    const double bound = bv_bound(p.scale, p.limbs);
    eval->rescale_inplace(p);
    EXPECT_LT(max_error(decrypt(p), want), bound) << "level " << level;
  }
}

TEST_F(CkksBv, RotateAtSquaredScaleThenRescale) {
  const Vec x = random_slots(ctx->slots(), 2.0, 52);
  const std::size_t slots = x.size();
  double bound = 0;
  for (int steps : {1, -2}) {
    Ciphertext c = encryptor->encrypt(enc->encode(x, Level(3), scale));
    eval->multiply_constant_inplace(c, 1.0);  // scale Delta * q_3, nothing else changes
    eval->rotate_inplace(c, steps, gk);
    bound = bv_bound(c.scale, c.limbs);
    eval->rescale_inplace(c);
    Vec want(slots);
    for (std::size_t i = 0; i < slots; ++i) {
      want[i] = x[(i + static_cast<std::size_t>(steps + static_cast<int>(slots))) % slots];
    }
    EXPECT_LT(max_error(decrypt(c), want), bound) << "steps " << steps;
  }
  Ciphertext c = encryptor->encrypt(enc->encode(x, Level(3), scale));
  eval->multiply_constant_inplace(c, 1.0);
  const auto hoisted = eval->rotate_hoisted(c, {1, -2}, gk);
  Ciphertext h = hoisted[0];
  eval->rescale_inplace(h);
  Vec want(slots);
  for (std::size_t i = 0; i < slots; ++i) want[i] = x[(i + 1) % slots];
  EXPECT_LT(max_error(decrypt(h), want), bound);
  eval->conjugate_inplace(c, gk);
  eval->rescale_inplace(c);
  for (std::size_t i = 0; i < slots; ++i) want[i] = std::conj(x[i]);
  EXPECT_LT(max_error(decrypt(c), want), bound);
}

}  // namespace
}  // namespace hec::ckks
