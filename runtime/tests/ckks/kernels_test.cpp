// Tests for ckks/kernels.h: the fused dot product equals, bit for bit, the sum of separate
// tensor products (array, streaming and accumulator forms, including the lazy-reduction flush
// path); ciphertext x plaintext dot; array sums; elementwise kernels; errors.
#include "ckks/kernels.h"

#include <gtest/gtest.h>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/keys.h"
#include "test_util.h"

namespace hec::ckks {
namespace {

using testing::max_error;
using testing::random_slots;
using testing::small_params;
using Vec = std::vector<std::complex<double>>;

class CkksKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx = make_context(small_params(2, 2));
    enc = std::make_unique<Encoder>(ctx);
    KeyGenerator gen(ctx);
    sk = gen.secret_key();
    encryptor = std::make_unique<SymmetricEncryptor>(ctx, sk);
    decryptor = std::make_unique<Decryptor>(ctx, sk);
    eval = std::make_unique<Evaluator>(ctx);
  }
  std::vector<Ciphertext> encrypt_many(std::size_t count, unsigned seed, Vec* sum_of = nullptr) {
    std::vector<Ciphertext> out;
    for (std::size_t i = 0; i < count; ++i) {
      const Vec z = random_slots(ctx->slots(), 1.0, seed + static_cast<unsigned>(i));
      if (sum_of) sum_of->insert(sum_of->end(), z.begin(), z.end());
      out.push_back(encryptor->encrypt(enc->encode(z, Level(2), std::pow(2.0, 30))));
    }
    return out;
  }
  ContextPtr ctx;
  std::unique_ptr<Encoder> enc;
  SecretKey sk;
  std::unique_ptr<SymmetricEncryptor> encryptor;
  std::unique_ptr<Decryptor> decryptor;
  std::unique_ptr<Evaluator> eval;
};

TEST_F(CkksKernels, DotEqualsSumOfProductsBitExact) {
  // 150 pairs: with 55-bit primes the 128-bit sums flush every 2^128 / (4 q^2) - 1 = 63
  // pairs, so the flush path runs twice.
  const std::size_t count = 150;
  Vec xs, ys;
  const auto a = encrypt_many(count, 100, &xs);
  const auto b = encrypt_many(count, 1000, &ys);
  Ciphertext reference = eval->multiply(a[0], b[0]);
  for (std::size_t i = 1; i < count; ++i) eval->add_inplace(reference, eval->multiply(a[i], b[i]));
  const Ciphertext fused = dot(ctx, a, b);
  EXPECT_EQ(fused.degree, 2u);
  EXPECT_EQ(fused.scale, reference.scale);
  EXPECT_EQ(fused.data, reference.data);

  DotAccumulator acc(ctx, Level(2));
  for (std::size_t i = 0; i < count; ++i) acc.add_product(a[i], b[i]);
  EXPECT_EQ(acc.count(), count);
  EXPECT_EQ(acc.finish().data, reference.data);

  const Ciphertext streamed =
      dot_stream(ctx, Level(2), count, [&](std::size_t i, Ciphertext& x, Ciphertext& y) {
        x = a[i];
        y = b[i];
      });
  EXPECT_EQ(streamed.data, reference.data);

  // Merged partial accumulators.
  DotAccumulator left(ctx, Level(2)), right(ctx, Level(2));
  for (std::size_t i = 0; i < count; ++i) (i < 70 ? left : right).add_product(a[i], b[i]);
  left.merge(std::move(right));
  EXPECT_EQ(left.finish().data, reference.data);

  // And the decrypted value is the dot product of the messages.
  const std::size_t slots = ctx->slots();
  Vec want(slots, 0);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = 0; j < slots; ++j) want[j] += xs[i * slots + j] * ys[i * slots + j];
  }
  EXPECT_LT(max_error(enc->decode(decryptor->decrypt(fused)).values, want), 1e-4);
}

TEST_F(CkksKernels, BatchFoldsEqualOneAtATimeBitExact) {
  // Batches of 7 and 5 pairs folded unit by unit (dot units in reverse order) give the same
  // words as the tensor products and sums added one at a time.
  const std::size_t count = 12;
  const auto a = encrypt_many(count, 300);
  const auto b = encrypt_many(count, 400);
  Ciphertext want_dot = eval->multiply(a[0], b[0]);
  Ciphertext want_sum = a[0];
  for (std::size_t i = 1; i < count; ++i) {
    eval->add_inplace(want_dot, eval->multiply(a[i], b[i]));
    eval->add_inplace(want_sum, a[i]);
  }
  Ciphertext dot_acc = ctx->make_ciphertext(Level(2), 2, a[0].scale * b[0].scale);
  dot_acc.key_id = a[0].key_id;
  Ciphertext sum_acc = a[0];
  for (std::size_t lo : {std::size_t{0}, std::size_t{7}}) {
    const std::size_t hi = lo == 0 ? 7 : count;
    std::vector<const Ciphertext*> pa, pb, ps;
    for (std::size_t i = lo; i < hi; ++i) {
      pa.push_back(&a[i]);
      pb.push_back(&b[i]);
      if (i > 0) ps.push_back(&a[i]);
    }
    check_dot_batch(*ctx, dot_acc, pa, pb);
    check_sum_batch(*ctx, sum_acc, ps);
    const std::size_t du = dot_batch_units(dot_acc), su = sum_batch_units(sum_acc);
    for (std::size_t u = du; u-- > 0;) dot_batch_unit(*ctx, dot_acc, pa, pb, u);  // reversed
    for (std::size_t u = 0; u < su; ++u) sum_batch_unit(*ctx, sum_acc, ps, u);
  }
  EXPECT_EQ(dot_acc.data, want_dot.data);
  EXPECT_EQ(sum_acc.data, want_sum.data);
  // Operands that do not match the accumulator are refused before any unit runs.
  std::vector<const Ciphertext*> one{&a[0]}, other{&want_dot};
  EXPECT_THROW(check_dot_batch(*ctx, dot_acc, one, other), std::invalid_argument);
  EXPECT_THROW(check_sum_batch(*ctx, sum_acc, other), std::invalid_argument);
  EXPECT_THROW(check_dot_batch(*ctx, sum_acc, one, one), std::invalid_argument);
}

TEST_F(CkksKernels, DotWithPlaintexts) {
  const std::size_t count = 20;
  const auto a = encrypt_many(count, 200);
  std::vector<Plaintext> p;
  for (std::size_t i = 0; i < count; ++i) {
    p.push_back(enc->encode(random_slots(ctx->slots(), 1.0, 300 + i), Level(2), 1 << 20));
  }
  Ciphertext reference = a[0];
  eval->multiply_plain_inplace(reference, p[0]);
  for (std::size_t i = 1; i < count; ++i) {
    Ciphertext t = a[i];
    eval->multiply_plain_inplace(t, p[i]);
    eval->add_inplace(reference, t);
  }
  const Ciphertext fused = dot_plain(ctx, a, p);
  EXPECT_EQ(fused.degree, 1u);
  EXPECT_EQ(fused.data, reference.data);
}

TEST_F(CkksKernels, SumTreeAndElementwise) {
  const std::size_t count = 37;
  const auto a = encrypt_many(count, 400);
  Ciphertext reference = a[0];
  for (std::size_t i = 1; i < count; ++i) eval->add_inplace(reference, a[i]);
  EXPECT_EQ(sum_tree(*eval, a).data, reference.data);

  std::vector<Ciphertext> x = a;
  const auto b = encrypt_many(count, 500);
  add_elementwise(*eval, x, b);
  for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(x[i].data, eval->add(a[i], b[i]).data);
  sub_elementwise(*eval, x, b);
  for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(x[i].data, a[i].data);
  std::vector<Ciphertext> prods = multiply_elementwise(*eval, a, b);
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_EQ(prods[i].data, eval->multiply(a[i], b[i]).data);
  }
  rescale_all(*eval, prods);
  EXPECT_EQ(prods[0].level.value, 1);
}

TEST_F(CkksKernels, ErrorsAreReportedNotSwallowed) {
  const auto a = encrypt_many(3, 600);
  const auto b = encrypt_many(2, 700);
  EXPECT_THROW(dot(ctx, a, b), std::invalid_argument);
  std::vector<Ciphertext> mixed = encrypt_many(3, 800);
  Evaluator ev(ctx);
  ev.drop_to_level_inplace(mixed[1], Level(1));
  EXPECT_THROW(dot(ctx, a, mixed), std::invalid_argument);
  // An exception thrown inside the parallel region reaches the caller.
  std::vector<Ciphertext> x = a;
  EXPECT_THROW(add_elementwise(*eval, x, mixed), std::invalid_argument);
  DotAccumulator empty(ctx, Level(2));
  EXPECT_THROW(empty.finish(), std::invalid_argument);
}

}  // namespace
}  // namespace hec::ckks
