// Tests for program/ckks_program.h: the ciphertext-array layouts and index maps (broadcast,
// transpose, array_shape) on shared ciphertexts, and the array ops on real ciphertexts at a
// small insecure parameter set (N = 2^12, test only): elementwise ops, reduce and dot against
// the plaintext, the degree-3 relinearization adapter, sum_slots, row accumulators, and the
// type check that catches a compiler/runtime mismatch.
#include "program/ckks_program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/keys.h"

namespace hec::program {
namespace {

CtArray labelled(std::vector<std::size_t> shape) {
  CtArray a;
  a.shape = shape;
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  for (std::size_t i = 0; i < n; ++i) {
    Ct c;
    c.scale = static_cast<double>(i);  // a label we can read back
    a.cts.push_back(std::make_shared<const Ct>(c));
  }
  return a;
}

std::vector<double> labels(const CtArray& a) {
  std::vector<double> out;
  for (const auto& c : a.cts) out.push_back(c->scale);
  return out;
}

TEST(ArrayShape, PackedAndReplicated) {
  EXPECT_EQ(array_shape(Layout::kPacked, {5, 10000}, 4096), (std::vector<std::size_t>{5, 3}));
  EXPECT_EQ(array_shape(Layout::kPacked, {4096}, 4096), (std::vector<std::size_t>{1}));
  EXPECT_EQ(array_shape(Layout::kReplicated, {5, 7}, 4096), (std::vector<std::size_t>{5, 7}));
  EXPECT_THROW(array_shape(Layout::kPacked, {}, 4096), std::logic_error);
  // Complex: two blocks of slots per ciphertext.
  EXPECT_EQ(array_shape(Layout::kComplex, {5, 10000}, 4096), (std::vector<std::size_t>{5, 2}));
  EXPECT_EQ(array_shape(Layout::kComplex, {8192}, 4096), (std::vector<std::size_t>{1}));
}

// The grid's index map (spec.h; the simulator's targets/sim/simulator.py): row and column axes
// become their block counts, an element lies at slot (i mod R) C + (j mod C).
TEST(ArrayShape, GridBlocksAndPlaces) {
  const GridLayout rc{8, {GridRole::kRow, GridRole::kCol}};
  EXPECT_EQ(array_shape(Layout::kGrid, {77, 300}, 4096, 1, rc), (std::vector<std::size_t>{10, 1}));
  EXPECT_EQ(array_shape(Layout::kGrid, {77, 600}, 4096, 1, rc), (std::vector<std::size_t>{10, 2}));
  const GridLayout ruc{8, {GridRole::kRow, GridRole::kUnrolled, GridRole::kCol}};
  EXPECT_EQ(array_shape(Layout::kGrid, {9, 3, 513}, 4096, 1, ruc),
            (std::vector<std::size_t>{2, 3, 2}));
  EXPECT_THROW(array_shape(Layout::kGrid, {9}, 4096, 1, rc), std::logic_error);
  // (9, 513) of [77, 600]: block (1, 1) = ciphertext 3, grid row 1, column 1.
  const GridPlace at = grid_place(rc, {77, 600}, 4096, 9 * 600 + 513);
  EXPECT_EQ(at.ct, 3u);
  EXPECT_EQ(at.slot, 1u * 512 + 1);
  // No column axis: the first replica (column 0) of its row.
  const GridPlace row_only = grid_place(GridLayout{8, {GridRole::kRow}}, {77}, 4096, 13);
  EXPECT_EQ(row_only.ct, 1u);
  EXPECT_EQ(row_only.slot, 5u * 512);
  EXPECT_EQ(rc.without_first().roles, (std::vector<GridRole>{GridRole::kCol}));
}

TEST(Broadcast, LeadingAxisRepeatsAndSharesCiphertexts) {
  // [D] packed (1 block) -> [N, D] packed: dims {1}.
  const CtArray a = labelled({1});
  const CtArray b = broadcast(a, {1}, {3, 1}, false);
  EXPECT_EQ(b.shape, (std::vector<std::size_t>{3, 1}));
  for (const auto& c : b.cts) EXPECT_EQ(c.get(), a.cts[0].get());
}

TEST(Broadcast, ReplicatedToPackedReusesEachCiphertextForEveryBlock) {
  // [N] replicated -> [N, M] packed with 2 blocks: dims {0}.
  const CtArray a = labelled({3});
  const CtArray b = broadcast(a, {0}, {3, 2}, true);
  EXPECT_EQ(labels(b), (std::vector<double>{0, 0, 1, 1, 2, 2}));
}

TEST(Broadcast, NewMiddleAxis) {
  // [N, D] replicated -> [N, D, D] with operand axes at {0, 2}.
  const CtArray a = labelled({2, 3});
  const CtArray b = broadcast(a, {0, 2}, {2, 3, 3}, false);
  EXPECT_EQ(labels(b), (std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5}));
  EXPECT_THROW(broadcast(a, {0, 1}, {2, 4}, false), std::logic_error);
}

TEST(Transpose, SwapsAxes) {
  const CtArray t = transpose(labelled({2, 3}));
  EXPECT_EQ(t.shape, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(labels(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

// Real ciphertexts: N = 2^12, Q_0 one 55-bit prime, 3 scaling primes near 2^40, P for dnum 2.
class ProgramOps : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = ckks::make_context(ckks::Parameters::from_bit_sizes(
        ckks::LogN(12), {55}, 40, 3, {55, 55}, 2, ckks::Security::kInsecure));
    ckks::KeyGenerator gen(ctx_);
    sk_ = gen.secret_key();
    pk_ = gen.public_key(sk_);
    relin_ = gen.relin_key(sk_);
    std::vector<int> steps;
    for (std::size_t s = 1; s < ctx_->slots(); s <<= 1) steps.push_back(static_cast<int>(s));
    galois_ = gen.galois_keys(sk_, steps, true);
    ops_ = std::make_unique<Ops>(ctx_, &relin_, &galois_);
  }

  CtArray encrypt(const std::vector<std::vector<double>>& rows, int level = 3) const {
    ckks::Encoder encoder(ctx_);
    ckks::Encryptor enc(ctx_, pk_);
    CtArray a;
    a.shape = {rows.size()};
    for (const auto& r : rows) {
      a.cts.push_back(std::make_shared<const Ct>(enc.encrypt(
          encoder.encode(std::span<const double>(r), ckks::Level(level), std::exp2(40.0)))));
    }
    return a;
  }

  std::vector<double> decrypt(const Ct& c, std::size_t count) const {
    ckks::Encoder encoder(ctx_);
    ckks::Decryptor dec(ctx_, sk_);
    const auto d = encoder.decode(dec.decrypt(c));
    std::vector<double> out;
    for (std::size_t i = 0; i < count; ++i) out.push_back(d.values[i].real());
    return out;
  }

  ckks::ContextPtr ctx_;
  ckks::SecretKey sk_;
  ckks::PublicKey pk_;
  ckks::RelinKey relin_;
  ckks::GaloisKeys galois_;
  std::unique_ptr<Ops> ops_;
};

TEST_F(ProgramOps, ElementwiseReduceAndDot) {
  const CtArray a = encrypt({{1.0, 2.0}, {3.0, -1.0}, {0.5, 4.0}});
  const CtArray b = encrypt({{2.0, 1.0}, {1.0, 1.0}, {-2.0, 0.5}});
  const CtArray sum = reduce(*ops_, a, 0);
  ASSERT_EQ(sum.size(), 1u);
  const auto s = decrypt(sum.at(0), 2);
  EXPECT_NEAR(s[0], 4.5, 1e-6);
  EXPECT_NEAR(s[1], 5.0, 1e-6);
  const CtArray d = dot(*ops_, a, b, 0);  // 2 + 3 - 1 = 4; 2 - 1 + 2 = 3
  EXPECT_EQ(d.at(0).degree, 2u);
  const auto dd = decrypt(d.at(0), 2);
  EXPECT_NEAR(dd[0], 4.0, 1e-6);
  EXPECT_NEAR(dd[1], 3.0, 1e-6);
  const auto diff = decrypt(sub(*ops_, a, b).at(2), 2);
  EXPECT_NEAR(diff[0], 2.5, 1e-6);
  const auto k = decrypt(mul_const(*ops_, a, 3.0, 0.0).at(1), 2);
  EXPECT_NEAR(k[0], 9.0, 1e-6);
  EXPECT_THROW(mul_const(*ops_, a, 2.5, 0.0), std::logic_error);
  const auto c = decrypt(add_const(*ops_, a, 1.25).at(0), 2);
  EXPECT_NEAR(c[1], 3.25, 1e-6);
}

// A masked constant over a packed axis of width slots + 3 (two blocks, the second holding 3
// valid slots): c on the valid slots, 0 on the padding, both blocks at the grown scale.
TEST_F(ProgramOps, MulMaskZeroesThePaddingOfTheLastBlock) {
  const std::size_t slots = ctx_->slots();
  std::vector<double> full(slots, 2.0), tail(slots, 5.0);
  const CtArray a = encrypt({full, tail});
  const CtArray m = mul_mask(*ops_, a, 1.5, 30.0, slots + 3);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NEAR(std::log2(m.at(0).scale), 70.0, 1e-9);
  EXPECT_NEAR(std::log2(m.at(1).scale), 70.0, 1e-9);
  const auto d0 = decrypt(m.at(0), slots);
  const auto d1 = decrypt(m.at(1), slots);
  for (std::size_t s = 0; s < slots; ++s) {
    ASSERT_NEAR(d0[s], 3.0, 1e-5) << s;
    ASSERT_NEAR(d1[s], s < 3 ? 7.5 : 0.0, 1e-5) << s;
  }
  EXPECT_THROW(mul_mask(*ops_, a, 1.0, 30.0, 3), std::logic_error);  // one block, not two
  EXPECT_THROW(mul_mask(*ops_, a, 1.0, 0.0, slots + 3), std::logic_error);
}

// A complex-layout array (block 2j in the real parts, block 2j + 1 in the imaginary parts):
// products with a real value, complex constants, and unpacking into the packed layout, also
// from degree 2 and with an odd number of packed blocks (the last imaginary part unused).
TEST_F(ProgramOps, ComplexLayoutUnpacksToPackedBlocks) {
  ckks::Encoder encoder(ctx_);
  ckks::Encryptor enc(ctx_, pk_);
  const std::size_t slots = ctx_->slots();
  std::vector<std::complex<double>> z0(slots), z1(slots);
  for (std::size_t s = 0; s < slots; ++s) {
    z0[s] = {1.0 + s % 7, -2.0 + s % 5};
    z1[s] = {0.5 * (s % 3), 0.0};
  }
  CtArray a;
  a.shape = {2};  // 3 packed blocks: pair 0 = blocks 0, 1; pair 1 = block 2
  for (const auto* z : {&z0, &z1}) {
    a.cts.push_back(std::make_shared<const Ct>(
        enc.encrypt(encoder.encode(*z, ckks::Level(3), std::exp2(40.0)))));
  }
  const CtArray y = encrypt({{3.0}}, 3);  // a real factor (3 in slot 0 only)
  const CtArray both = broadcast_both_parts(*ops_, y, {}, {2});
  const auto b = encoder.decode(ckks::Decryptor(ctx_, sk_).decrypt(both.at(1)));
  EXPECT_NEAR(b.values[0].real(), 3.0, 1e-6);
  EXPECT_NEAR(b.values[0].imag(), 3.0, 1e-6);
  const CtArray prod = mul(*ops_, add_const_complex(*ops_, a, 1.0), a);  // degree 2
  const CtArray u = unpack_complex(*ops_, prod, {3});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u.at(0).degree, 1u);
  EXPECT_NEAR(std::log2(u.at(0).scale), 81.0, 1e-9);
  const auto re0 = decrypt(u.at(0), slots), im0 = decrypt(u.at(1), slots);
  const auto re1 = decrypt(u.at(2), slots);
  for (std::size_t s = 0; s < slots; s += 97) {
    const std::complex<double> w0 = (z0[s] + std::complex<double>(1, 1)) * z0[s];
    const std::complex<double> w1 = (z1[s] + std::complex<double>(1, 1)) * z1[s];
    EXPECT_NEAR(re0[s], w0.real(), 1e-3) << s;
    EXPECT_NEAR(im0[s], w0.imag(), 1e-3) << s;
    EXPECT_NEAR(re1[s], w1.real(), 1e-3) << s;
  }
  EXPECT_THROW(unpack_complex(*ops_, prod, {5}), std::logic_error);
}

TEST_F(ProgramOps, RelinearizeDegreeThreeAndFour) {
  const CtArray a = encrypt({{1.5, -2.0, 0.5}});
  const CtArray b = encrypt({{2.0, 1.0, -3.0}});
  const CtArray c = encrypt({{-1.0, 0.5, 2.0}});
  const CtArray abc = mul(*ops_, mul(*ops_, a, b), c);
  ASSERT_EQ(abc.at(0).degree, 3u);
  const CtArray r3 = relinearize(*ops_, abc);
  ASSERT_EQ(r3.at(0).degree, 1u);
  const auto v = decrypt(r3.at(0), 3);
  EXPECT_NEAR(v[0], -3.0, 1e-4);
  EXPECT_NEAR(v[1], -1.0, 1e-4);
  EXPECT_NEAR(v[2], -3.0, 1e-4);
  const CtArray abcd = mul(*ops_, abc, a);
  ASSERT_EQ(abcd.at(0).degree, 4u);
  const auto w = decrypt(relinearize(*ops_, abcd).at(0), 3);
  EXPECT_NEAR(w[0], -4.5, 1e-3);
  EXPECT_NEAR(w[1], 2.0, 1e-3);
  EXPECT_NEAR(w[2], -1.5, 1e-3);
}

TEST_F(ProgramOps, SumSlotsLeavesTheTotalInEverySlot) {
  CtArray a = encrypt({{1.0, 2.0, 3.0, 4.0}});
  a.shape = {1, 1};  // one row, one block
  const CtArray s = sum_slots(*ops_, a);
  EXPECT_EQ(s.shape, (std::vector<std::size_t>{1}));
  for (double x : decrypt(s.at(0), 8)) EXPECT_NEAR(x, 10.0, 1e-4);
}

// A [6] array in a grid of R = 4 rows (C = slots / 4, every column a replica): two blocks, the
// second with 2 padding rows holding garbage. The masked constant zeroes them (its mask depends
// on the block: whole array, or the block index of a row-local part), and the row sum leaves
// c * (1 + ... + 6) in every slot: blocks added, then rotations by C and 2C.
TEST_F(ProgramOps, GridMaskAndRowSum) {
  const std::size_t slots = ctx_->slots(), rows = 4, columns = slots / rows;
  std::vector<double> b0(slots), b1(slots);
  for (std::size_t s = 0; s < slots; ++s) {
    b0[s] = static_cast<double>(s / columns + 1);                            // rows 0..3: 1..4
    b1[s] = s / columns < 2 ? static_cast<double>(s / columns + 5) : 100.0;  // 5, 6, padding
  }
  const GridLayout grid{rows, {GridRole::kRow}};
  const CtArray a = encrypt({b0, b1});
  const CtArray m = mul_mask_grid(*ops_, a, 0.5, 30.0, grid, {6});
  EXPECT_NEAR(std::log2(m.at(1).scale), 70.0, 1e-9);
  const auto d1 = decrypt(m.at(1), slots);
  for (std::size_t s = 0; s < slots; ++s) {
    ASSERT_NEAR(d1[s], s / columns < 2 ? 0.5 * static_cast<double>(s / columns + 5) : 0.0, 1e-5);
  }
  // The same block as the row-local part of block 1 of a streamed array.
  CtArray part;
  part.shape = {};
  part.cts = {a.cts[1]};
  const auto p1 = decrypt(mul_mask_grid(*ops_, part, 0.5, 30.0, grid, {6}, 1).at(0), slots);
  for (std::size_t s = 0; s < slots; ++s) ASSERT_NEAR(p1[s], d1[s], 1e-5);
  const CtArray total = sum_grid_rows(*ops_, m, 0, rows);
  EXPECT_EQ(total.shape, (std::vector<std::size_t>{}));
  for (double x : decrypt(total.at(0), slots)) ASSERT_NEAR(x, 10.5, 1e-4);
  EXPECT_THROW(mul_mask_grid(*ops_, a, 0.5, 30.0, grid, {9}), std::logic_error);  // 3 blocks
  EXPECT_THROW(fold_grid_rows(*ops_, m, 3), std::logic_error);
}

TEST_F(ProgramOps, RowSinksEqualTheWholeArrayKernels) {
  const CtArray a = encrypt({{1.0}, {2.0}, {3.0}, {4.0}});
  const CtArray b = encrypt({{0.5}, {-1.0}, {2.0}, {1.0}});
  DotSink dot_sink(*ops_, 3, 2);
  SumSink sum_sink(*ops_, 2);
  for (std::size_t r = 0; r < 4; ++r) {
    CtArray ar, br;
    ar.cts = {a.cts[r]};
    br.cts = {b.cts[r]};
    dot_sink.add(static_cast<int>(r % 2), ar, br);
    sum_sink.add(static_cast<int>(r % 2), ar);
  }
  EXPECT_NEAR(decrypt(dot_sink.finish().at(0), 1)[0], 0.5 - 2.0 + 6.0 + 4.0, 1e-6);
  EXPECT_NEAR(decrypt(sum_sink.finish().at(0), 1)[0], 10.0, 1e-6);
}

TEST_F(ProgramOps, TypeCheckNamesTheValue) {
  const CtArray a = encrypt({{1.0}});
  EXPECT_NO_THROW(expect_type(a, "%x", 3, 40.0, 1));
  try {
    expect_type(a, "%x", 2, 40.0, 1);
    FAIL() << "expected a mismatch";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("value %x: the compiler expects level 2"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace hec::program
