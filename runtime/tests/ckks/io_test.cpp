// Tests for ckks/io.h: round trips of parameters, every key kind, ciphertexts (any degree),
// plaintexts and ciphertext arrays; refusal of files made under other keys or parameters.
#include "ckks/io.h"

#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/evaluator.h"
#include "math/pack.h"
#include "test_util.h"

namespace hec::ckks {
namespace {

namespace fs = std::filesystem;

class CkksIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("hec_ckks_io_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(CkksIo, RoundTripEverything) {
  const auto ctx = make_context(testing::small_params(2, 2));
  save_parameters(dir / "params.hec", ctx->params());
  EXPECT_EQ(load_parameters(dir / "params.hec").digest(), ctx->params().digest());

  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  const PublicKey pk = gen.public_key(sk);
  const RelinKey rk = gen.relin_key(sk);
  const GaloisKeys gk = gen.galois_keys(sk, {1, -2}, true);
  save(dir / "sk", *ctx, sk);
  save(dir / "pk", *ctx, pk);
  save(dir / "rk", *ctx, rk);
  save(dir / "gk", *ctx, gk);
  EXPECT_EQ(load_secret_key(dir / "sk", *ctx).data, sk.data);
  EXPECT_EQ(load_public_key(dir / "pk", *ctx, sk.key_id).data, pk.data);
  EXPECT_EQ(load_relin_key(dir / "rk", *ctx, sk.key_id).key.digits, rk.key.digits);
  const GaloisKeys gk2 = load_galois_keys(dir / "gk", *ctx, sk.key_id);
  ASSERT_EQ(gk2.keys.size(), gk.keys.size());
  for (const auto& [g, k] : gk.keys) EXPECT_EQ(gk2.keys.at(g).digits, k.digits);

  Encoder enc(ctx);
  Encryptor encryptor(ctx, pk);
  Evaluator eval(ctx);
  const auto z = testing::random_slots(ctx->slots(), 1.0, 5);
  const Plaintext pt = enc.encode(z, Level(2), 1234567.5);
  const Ciphertext ct = encryptor.encrypt(pt);
  const Ciphertext ct2 = eval.multiply(ct, ct);
  save(dir / "pt", *ctx, pt);
  save(dir / "ct", *ctx, ct2);
  save(dir / "cts", *ctx, std::vector<Ciphertext>{ct, ct2});
  const Plaintext pt_back = load_plaintext(dir / "pt", *ctx);
  EXPECT_EQ(pt_back.data, pt.data);
  EXPECT_EQ(pt_back.scale, pt.scale);
  const Ciphertext back = load_ciphertext(dir / "ct", *ctx, sk.key_id);
  EXPECT_EQ(back.data, ct2.data);
  EXPECT_EQ(back.degree, 2u);
  EXPECT_EQ(back.scale, ct2.scale);
  EXPECT_EQ(back.level, ct2.level);
  const auto arr = load_ciphertexts(dir / "cts", *ctx, sk.key_id);
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(arr[0].data, ct.data);
  EXPECT_EQ(arr[1].data, ct2.data);
  EXPECT_FALSE(fs::exists(dir / "ct.tmp"));
}

TEST_F(CkksIo, ArraysStreamInBatchesAndRefuseMixedShapes) {
  const auto ctx = make_context(testing::small_params(2, 2));
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  const PublicKey pk = gen.public_key(sk);
  Encoder enc(ctx);
  Encryptor encryptor(ctx, pk);
  std::vector<Ciphertext> cts;
  for (int i = 0; i < 7; ++i) {
    const auto z = testing::random_slots(ctx->slots(), 1.0, 20 + static_cast<unsigned>(i));
    cts.push_back(encryptor.encrypt(enc.encode(z, Level(2), 1e9)));
  }
  // Written one at a time; read back one, then three in parallel, then three more.
  {
    std::uint64_t bytes = 0;
    for (const auto& c : cts) bytes += CiphertextArrayWriter::record_bytes(*ctx, c);
    CiphertextArrayWriter w(dir / "arr", *ctx, sk.key_id, cts.size(), bytes);
    for (const auto& c : cts) w.append(c);
    w.finish();
    EXPECT_EQ(load_ciphertexts(dir / "arr", *ctx, sk.key_id).size(), cts.size());
  }
  CiphertextArrayReader r(dir / "arr", *ctx, sk.key_id);
  ASSERT_EQ(r.count(), 7u);
  std::vector<Ciphertext> back(7);
  std::vector<Ciphertext*> ptrs;
  for (auto& c : back) ptrs.push_back(&c);
  r.next(back[0]);
  r.next_batch(ptrs.data() + 1, 3, 2);
  r.next_batch(ptrs.data() + 4, 3, 1);
  r.finish();
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(back[static_cast<std::size_t>(i)].data, cts[static_cast<std::size_t>(i)].data) << i;
    EXPECT_EQ(back[static_cast<std::size_t>(i)].scale, cts[static_cast<std::size_t>(i)].scale);
  }
  // A corrupted word is found by finish(), after the batches.
  {
    std::fstream f(dir / "arr", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(core::kHeaderSize + 16 + 8 * 1000));
    f.put('\x5a');
  }
  // (Both batch paths: one thread reads, hashes and unpacks record by record; more threads
  // read the batch, hash it, then unpack it.)
  for (const int threads : {1, 2}) {
    CiphertextArrayReader bad(dir / "arr", *ctx, sk.key_id);
    bad.next_batch(ptrs.data(), 7, threads);
    EXPECT_THROW(bad.finish(), std::runtime_error) << threads << " threads";
  }
  // An array whose ciphertexts differ in scale cannot be batch-read.
  cts[3].scale *= 2;
  save(dir / "mixed", *ctx, cts);
  for (const int threads : {1, 2}) {
    CiphertextArrayReader mixed(dir / "mixed", *ctx, sk.key_id);
    try {
      mixed.next_batch(ptrs.data(), 7, threads);
      ADD_FAILURE() << "a mixed array was batch-read, " << threads << " threads";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("mixed"), std::string::npos) << msg;
      EXPECT_NE(msg.find("ciphertext 3"), std::string::npos) << msg;
    }
  }
}

// Arrays store every limb at its modulus's bit width (math/pack.h): the file is the packed
// size, and a coefficient that fits the width but is not below the modulus (a file written by
// something else, with a valid digest) is refused naming the ciphertext, limb and coefficient.
TEST_F(CkksIo, ArraysArePackedAndEveryResidueIsChecked) {
  const auto ctx = make_context(testing::small_params(2, 2));
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  const PublicKey pk = gen.public_key(sk);
  Encoder enc(ctx);
  Encryptor encryptor(ctx, pk);
  const auto z = testing::random_slots(ctx->slots(), 1.0, 4);
  std::vector<Ciphertext> cts(2, encryptor.encrypt(enc.encode(z, Level(2), 1e9)));
  std::uint64_t packed = 0;
  for (std::size_t i = 0; i < cts[0].limbs; ++i) {
    packed += ctx->n() * math::packed_bits(ctx->params().chain()[i]) / 8;
  }
  save(dir / "arr", *ctx, cts);
  EXPECT_EQ(fs::file_size(dir / "arr"),
            core::kHeaderSize + 2 * (16 + 2 * packed) + core::kChecksumSize);
  EXPECT_LT(2 * packed, 8 * cts[0].data.size());
  EXPECT_EQ(load_ciphertexts(dir / "arr", *ctx, sk.key_id)[1].data, cts[1].data);
  cts[1].limb(1, 1)[5] = ctx->params().chain()[1];  // fits the width, is not a residue
  save(dir / "bad", *ctx, cts);
  try {
    (void)load_ciphertexts(dir / "bad", *ctx, sk.key_id);
    ADD_FAILURE() << "a coefficient at the modulus was read";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ciphertext 1, polynomial 1, limb 1: coefficient 5"), std::string::npos)
        << msg;
  }
}

TEST_F(CkksIo, CompactCiphertextStoresTheSeed) {
  const auto ctx = make_context(testing::small_params(2, 2));
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  Encoder enc(ctx);
  SymmetricEncryptor encryptor(ctx, sk);
  Decryptor decryptor(ctx, sk);
  const auto z = testing::random_slots(ctx->slots(), 1.0, 9);
  const CompactCiphertext compact = encryptor.encrypt_compact(enc.encode(z, Level(2), 1e9));
  save(dir / "compact", *ctx, compact);
  save(dir / "full", *ctx, ctx->expand(compact));
  // c_0 plus 32 bytes, against c_0 and c_1.
  EXPECT_LT(fs::file_size(dir / "compact") * 10, fs::file_size(dir / "full") * 6);
  const CompactCiphertext back = load_compact_ciphertext(dir / "compact", *ctx, sk.key_id);
  EXPECT_EQ(ctx->expand(back).data, ctx->expand(compact).data);
  const auto values = enc.decode(decryptor.decrypt(ctx->expand(back))).values;
  EXPECT_LT(testing::max_error(values, z), 1e-6);
  EXPECT_THROW(load_ciphertext(dir / "compact", *ctx, sk.key_id), std::runtime_error);
}

TEST_F(CkksIo, RefusesOtherKeysAndParameters) {
  const auto ctx = make_context(testing::small_params(2, 2));
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  const SecretKey other = gen.secret_key();
  Encoder enc(ctx);
  SymmetricEncryptor encryptor(ctx, sk);
  save(dir / "ct", *ctx, encryptor.encrypt(enc.encode(std::vector<double>{1.0}, Level(1), 1e6)));
  try {
    load_ciphertext(dir / "ct", *ctx, other.key_id);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("key id mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find((dir / "ct").string()), std::string::npos);
  }
  const auto ctx2 = make_context(testing::small_params(1, 2));
  try {
    load_ciphertext(dir / "ct", *ctx2, sk.key_id);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter digest mismatch"), std::string::npos)
        << e.what();
  }
  try {
    load_relin_key(dir / "ct", *ctx, sk.key_id);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("wrong kind"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hec::ckks
