// Tests for fhew/serialize.h: round trips of the secret key, the evaluation key and
// ciphertext arrays (the reloaded keys still evaluate gates correctly), and one malformed
// file per reader check (magic, version, truncation, checksum, kind, parameter digest, key
// id), each error naming the file.
#include "fhew/serialize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace hec::fhew {
namespace {

namespace fs = std::filesystem;

class FhewSerialize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ctx_ = new Context(Params::toy_insecure(BlindRotation::kGinx));
    sk_ = new SecretKey(ctx_->keygen_secret());
    ek_ = new EvalKey(ctx_->keygen_eval(*sk_));
  }
  static void TearDownTestSuite() {
    delete ek_;
    delete sk_;
    delete ctx_;
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hec_fhew_serialize_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<std::uint8_t> read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void write(const fs::path& p, const std::vector<std::uint8_t>& b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  // Loading `file` as an evaluation key fails with a message containing the path and `what`.
  void expect_eval_key_error(const fs::path& file, const Params& params,
                             const std::optional<KeyId>& id, const std::string& what) {
    try {
      load_eval_key(file, params, id);
      FAIL() << "no error for " << what;
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  static Context* ctx_;
  static SecretKey* sk_;
  static EvalKey* ek_;
  fs::path dir_;
};
Context* FhewSerialize::ctx_ = nullptr;
SecretKey* FhewSerialize::sk_ = nullptr;
EvalKey* FhewSerialize::ek_ = nullptr;

TEST_F(FhewSerialize, RoundTripKeysAndCiphertexts) {
  const Params& p = ctx_->params();
  save_secret_key(dir_ / "sk.hec", *sk_);
  save_eval_key(dir_ / "ek.hec", *ek_);
  EXPECT_FALSE(fs::exists(dir_ / "ek.hec.tmp"));
  const SecretKey sk = load_secret_key(dir_ / "sk.hec", p);
  const EvalKey ek = load_eval_key(dir_ / "ek.hec", p, sk_->key_id);
  EXPECT_EQ(sk.lwe, sk_->lwe);
  EXPECT_EQ(sk.ring.z, sk_->ring.z);
  EXPECT_EQ(sk.ring.z_ntt, sk_->ring.z_ntt);
  EXPECT_EQ(sk.key_id, sk_->key_id);
  ASSERT_EQ(ek.brk.rgsw.memory_bytes(), ek_->brk.rgsw.memory_bytes());
  EXPECT_EQ(0, std::memcmp(ek.brk.rgsw.at(0), ek_->brk.rgsw.at(0), ek.brk.rgsw.memory_bytes()));
  EXPECT_EQ(ek.ksk.betas(), ek_->ksk.betas());
  // The file is about half the in-memory key: uniform halves travel as seeds.
  EXPECT_LT(fs::file_size(dir_ / "ek.hec"), ek_->memory_bytes() * 6 / 10);

  std::vector<Ciphertext> cts;
  for (int i = 0; i < 4; ++i) cts.push_back(ctx_->encrypt(*sk_, i % 2));
  save_ciphertexts(dir_ / "ct.hec", cts, p);
  const auto back = load_ciphertexts(dir_ / "ct.hec", p, sk_->key_id);
  ASSERT_EQ(back.size(), cts.size());
  for (std::size_t i = 0; i < cts.size(); ++i) {
    EXPECT_EQ(back[i].lwe.a, cts[i].lwe.a);
    EXPECT_EQ(back[i].lwe.b, cts[i].lwe.b);
  }
  // Reloaded keys evaluate: NAND(1, 1) = 0, XOR(0, 1) = 1.
  EXPECT_FALSE(ctx_->decrypt(sk, ctx_->eval(ek, Gate::kNand, back[1], back[3])));
  EXPECT_TRUE(ctx_->decrypt(sk, ctx_->eval(ek, Gate::kXor, back[0], back[1])));
}

TEST_F(FhewSerialize, MalformedFilesNameTheFileAndTheProblem) {
  const Params& p = ctx_->params();
  const fs::path good = dir_ / "ek.hec";
  save_eval_key(good, *ek_);
  const auto bytes = read(good);

  auto bad_magic = bytes;
  bad_magic[0] = 'X';
  write(dir_ / "magic.hec", bad_magic);
  expect_eval_key_error(dir_ / "magic.hec", p, std::nullopt, "bad magic");

  auto bad_version = bytes;
  bad_version[4] = 7;
  write(dir_ / "version.hec", bad_version);
  expect_eval_key_error(dir_ / "version.hec", p, std::nullopt, "format version 7");

  auto truncated = bytes;
  truncated.resize(bytes.size() - 1000);
  write(dir_ / "truncated.hec", truncated);
  expect_eval_key_error(dir_ / "truncated.hec", p, std::nullopt, "truncated");
  write(dir_ / "short.hec", std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 40));
  expect_eval_key_error(dir_ / "short.hec", p, std::nullopt, "truncated");

  auto flipped = bytes;
  flipped[kHeaderSize + 5000] ^= 0x10;
  write(dir_ / "flipped.hec", flipped);
  expect_eval_key_error(dir_ / "flipped.hec", p, std::nullopt, "checksum mismatch");

  save_secret_key(dir_ / "sk.hec", *sk_);
  expect_eval_key_error(dir_ / "sk.hec", p, std::nullopt, "object kind secret key");

  expect_eval_key_error(good, Params::std128(BlindRotation::kGinx), std::nullopt,
                        "parameter digest");

  KeyId other = sk_->key_id;
  other[3] ^= 0xff;
  expect_eval_key_error(good, p, other, "key id");

  try {
    load_eval_key(dir_ / "missing.hec", p);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.hec"), std::string::npos);
  }
  std::vector<Ciphertext> cts = {ctx_->encrypt(*sk_, true)};
  save_ciphertexts(dir_ / "ct.hec", cts, p);
  try {
    load_ciphertexts(dir_ / "ct.hec", p, other);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("key id"), std::string::npos);
  }
}

}  // namespace
}  // namespace hec::fhew
