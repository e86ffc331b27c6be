// Tests for the diagonal and cyclic layouts (program/spec.h) and diag_matvec
// (program/ckks_program.h): the owner's slot placement against the layout's definition read
// literally (compiler/dialects/he.py, Diagonal: ciphertext i, giant group g = i div b, slot s,
// j = (s - g b) mod L, entry M[j mod P, (j + i) mod Q]), and the baby-step giant-step product
// on real ciphertexts (N = 2^12, insecure, test only) against the plaintext product, for
// square, tall and wide matrices and every baby step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/keys.h"
#include "program/ckks_program.h"

namespace hec::program {
namespace {

// The entry of an [a, k] matrix (C order `m`) at slot s of ciphertext i, by the definition.
double by_definition(const DiagonalLayout& d, std::size_t a, std::size_t k,
                     const std::vector<double>& m, std::size_t i, std::size_t s) {
  const std::size_t p = d.rows, q = d.cols, l = d.period(), g = i / d.baby;
  const std::size_t j = (s % l + l - (g * d.baby) % l) % l;
  const std::size_t row = j % p, col = (j + i) % q;
  return row < a && col < k ? m[row * k + col] : 0.0;
}

std::vector<double> numbered(std::size_t count) {
  std::vector<double> out(count);
  for (std::size_t e = 0; e < count; ++e) out[e] = 1.0 + static_cast<double>(e);
  return out;
}

struct Case {
  DiagonalLayout d;
  std::size_t a, k;
};

// Square, tall and wide, padded and not, every baby step dividing D.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::size_t p : {1u, 2u, 4u, 8u, 16u}) {
    for (std::size_t q : {1u, 2u, 4u, 8u, 16u}) {
      const std::size_t count = std::min(p, q);
      for (std::size_t b = 1; b <= count; b <<= 1) {
        out.push_back({{p, q, b}, p, q});
        if (p > 1 && q > 1) out.push_back({{p, q, b}, p / 2 + 1, q - 1});
      }
    }
  }
  return out;
}

TEST(DiagonalLayout, SlotsFollowTheDefinition) {
  const std::size_t slots = 64;
  for (const Case& c : cases()) {
    const auto m = numbered(c.a * c.k);
    const auto cts = diagonal_slots(c.d, c.a, c.k, m.data(), slots);
    ASSERT_EQ(cts.size(), c.d.count());
    for (std::size_t i = 0; i < cts.size(); ++i) {
      ASSERT_EQ(cts[i].size(), slots);
      for (std::size_t s = 0; s < slots; ++s) {
        ASSERT_EQ(cts[i][s], by_definition(c.d, c.a, c.k, m, i, s))
            << "diagonal<" << c.d.rows << ", " << c.d.cols << ", " << c.d.baby << "> of [" << c.a
            << ", " << c.k << "]: ciphertext " << i << ", slot " << s;
      }
    }
  }
}

// diagonal_place is the inverse of the definition: every (ciphertext, slot < L) holds the
// entry placed there, and every entry has exactly one place.
TEST(DiagonalLayout, PlaceInvertsTheDefinition) {
  for (const Case& c : cases()) {
    const DiagonalLayout& d = c.d;
    std::vector<int> seen(d.count() * d.period(), 0);
    for (std::size_t r = 0; r < d.rows; ++r) {
      for (std::size_t col = 0; col < d.cols; ++col) {
        const DiagonalPlace at = diagonal_place(d, r, col);
        ASSERT_LT(at.ct, d.count());
        ASSERT_LT(at.slot, d.period());
        ++seen[at.ct * d.period() + at.slot];
        const std::size_t g = at.ct / d.baby;
        const std::size_t j = (at.slot + d.period() - (g * d.baby) % d.period()) % d.period();
        ASSERT_EQ(j % d.rows, r);
        ASSERT_EQ((j + at.ct) % d.cols, col);
      }
    }
    for (int n : seen) ASSERT_EQ(n, 1);
  }
}

TEST(DiagonalLayout, RefusesWhatItCannotHold) {
  const auto m = numbered(64);
  EXPECT_THROW(diagonal_slots({8, 8, 4}, 9, 8, m.data(), 64), std::invalid_argument);
  EXPECT_THROW(diagonal_slots({8, 8, 4}, 8, 9, m.data(), 64), std::invalid_argument);
  EXPECT_THROW(diagonal_slots({8, 16, 4}, 8, 16, m.data(), 8), std::invalid_argument);
  EXPECT_THROW(diagonal_slots({8, 8, 3}, 8, 8, m.data(), 64), std::invalid_argument);
  EXPECT_THROW(cyclic_slots(4, 5, m.data(), 64), std::invalid_argument);
  EXPECT_THROW(cyclic_slots(128, 5, m.data(), 64), std::invalid_argument);
}

TEST(CyclicLayout, SlotsRepeatEveryPeriod) {
  const std::size_t slots = 64;
  for (std::size_t q : {1u, 2u, 8u, 16u, 64u}) {
    for (std::size_t k = 1; k <= q; k += (q > 4 ? 3 : 1)) {
      const auto v = numbered(k);
      const auto out = cyclic_slots(q, k, v.data(), slots);
      ASSERT_EQ(out.size(), slots);
      for (std::size_t s = 0; s < slots; ++s) {
        ASSERT_EQ(out[s], s % q < k ? v[s % q] : 0.0) << "cyclic<" << q << "> of " << k;
      }
    }
  }
}

TEST(ArrayShape, DiagonalAndCyclic) {
  EXPECT_EQ(array_shape(Layout::kDiagonal, {5, 12}, 4096, 1, {}, DiagonalLayout{8, 16, 4}),
            (std::vector<std::size_t>{8}));
  EXPECT_EQ(array_shape(Layout::kDiagonal, {12, 5}, 4096, 1, {}, DiagonalLayout{16, 8, 4}),
            (std::vector<std::size_t>{8}));
  EXPECT_EQ(array_shape(Layout::kCyclic, {12}, 4096), (std::vector<std::size_t>{1}));
  EXPECT_THROW(array_shape(Layout::kDiagonal, {12}, 4096), std::logic_error);
  EXPECT_THROW(array_shape(Layout::kCyclic, {2, 3}, 4096), std::logic_error);
  EXPECT_STREQ(layout_name(Layout::kDiagonal), "diagonal");
  EXPECT_STREQ(layout_name(Layout::kCyclic), "cyclic");
}

// Real ciphertexts: N = 2^12, Q_0 one 55-bit prime, 2 scaling primes near 2^40, rotation keys
// for every step 1 .. 15 (the babies, giants and folds of the cases below).
class DiagMatvec : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = ckks::make_context(ckks::Parameters::from_bit_sizes(
        ckks::LogN(12), {55}, 40, 2, {55, 55}, 2, ckks::Security::kInsecure));
    ckks::KeyGenerator gen(ctx_);
    sk_ = gen.secret_key();
    pk_ = gen.public_key(sk_);
    relin_ = gen.relin_key(sk_);
    std::vector<int> steps;
    for (int s = 1; s < 16; ++s) steps.push_back(s);
    galois_ = gen.galois_keys(sk_, steps, false);
    ops_ = std::make_unique<Ops>(ctx_, &relin_, &galois_);
  }

  CtArray encrypt(const std::vector<std::vector<double>>& cts) const {
    ckks::Encoder encoder(ctx_);
    ckks::Encryptor enc(ctx_, pk_);
    CtArray a;
    a.shape = {cts.size()};
    for (const auto& v : cts) {
      a.cts.push_back(std::make_shared<const Ct>(enc.encrypt(
          encoder.encode(std::span<const double>(v), ckks::Level(2), std::exp2(40.0)))));
    }
    return a;
  }

  std::vector<double> decrypt(const Ct& c) const {
    ckks::Encoder encoder(ctx_);
    ckks::Decryptor dec(ctx_, sk_);
    const auto d = encoder.decode(dec.decrypt(c));
    std::vector<double> out;
    for (const auto& z : d.values) out.push_back(z.real());
    return out;
  }

  ckks::ContextPtr ctx_;
  ckks::SecretKey sk_;
  ckks::PublicKey pk_;
  ckks::RelinKey relin_;
  ckks::GaloisKeys galois_;
  std::unique_ptr<Ops> ops_;
};

TEST_F(DiagMatvec, EqualsThePlaintextProduct) {
  const std::size_t slots = ctx_->slots();
  const std::vector<Case> run = {
      {{8, 8, 4}, 8, 8},   {{8, 8, 1}, 5, 5},     {{8, 8, 8}, 6, 7},  {{16, 8, 4}, 12, 5},
      {{16, 8, 2}, 16, 8}, {{8, 16, 4}, 5, 12},   {{8, 16, 1}, 8, 9}, {{2, 16, 2}, 2, 16},
      {{1, 1, 1}, 1, 1},   {{16, 16, 16}, 9, 16},
  };
  for (const Case& c : run) {
    std::vector<double> m(c.a * c.k), v(c.k);
    for (std::size_t e = 0; e < m.size(); ++e) m[e] = std::sin(1.0 + 0.7 * static_cast<double>(e));
    for (std::size_t e = 0; e < v.size(); ++e) v[e] = std::cos(0.3 * static_cast<double>(e));
    const CtArray mc = encrypt(diagonal_slots(c.d, c.a, c.k, m.data(), slots));
    const CtArray vc = encrypt({cyclic_slots(c.d.cols, c.k, v.data(), slots)});
    const CtArray r = diag_matvec(*ops_, mc, vc, c.d);
    ASSERT_EQ(r.shape, (std::vector<std::size_t>{1}));
    EXPECT_EQ(r.at(0).degree, 1u);
    EXPECT_EQ(r.at(0).level.value, 2);
    EXPECT_NEAR(std::log2(r.at(0).scale), 80.0, 1e-9);
    const auto got = decrypt(r.at(0));
    for (std::size_t s = 0; s < slots; ++s) {
      // cyclic<P>: row s mod P (0 past the matrix's rows: the padding rows are zero)
      const std::size_t row = s % c.d.rows;
      double want = 0.0;
      for (std::size_t col = 0; row < c.a && col < c.k; ++col) want += m[row * c.k + col] * v[col];
      ASSERT_NEAR(got[s], want, 1e-5)
          << "diagonal<" << c.d.rows << ", " << c.d.cols << ", " << c.d.baby << "> of [" << c.a
          << ", " << c.k << "]: slot " << s;
    }
  }
  // The shapes are checked.
  const CtArray two = encrypt({std::vector<double>(slots, 1.0), std::vector<double>(slots, 1.0)});
  EXPECT_THROW(diag_matvec(*ops_, two, two, DiagonalLayout{2, 2, 1}), std::logic_error);
  EXPECT_THROW(diag_matvec(*ops_, two, two, DiagonalLayout{2, 2, 3}), std::logic_error);
}

}  // namespace
}  // namespace hec::program
