// BFV serialization: round trips of parameters, keys and ciphertexts through the core/
// container (bytes and files), and refusal of corrupted, foreign-parameter and foreign-key
// objects with messages naming the source.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "bfv/encoder.h"
#include "bfv/scheme.h"
#include "bfv/serialize.h"

namespace hec::bfv {
namespace {

math::Seed seed(int v) {
  math::Seed s{};
  s[0] = static_cast<unsigned char>(v);
  s[2] = 0x5e;
  return s;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(BfvSerialize, RoundTripOfEveryObject) {
  const auto ctx = BfvContext::create(BfvParams::generate(10, 65537, 2, 50, 1, true, true));
  const std::size_t n = ctx->ring_dim();
  KeyGenerator keygen(ctx, seed(1));
  Encoder encoder(ctx);
  Evaluator ev(ctx);
  std::vector<u64> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = (i * 7919) % 65537;

  // Parameters.
  const BfvParams p = params_from_bytes(to_bytes(*ctx), "params");
  EXPECT_EQ(p.q, ctx->params().q);
  EXPECT_EQ(p.p_mult, ctx->params().p_mult);
  EXPECT_EQ(p.p_ks, ctx->params().p_ks);
  EXPECT_EQ(p.plain_modulus, ctx->plain_modulus());
  EXPECT_TRUE(p.allow_insecure);

  // Keys: use only deserialized copies from here on.
  const SecretKey sk = secret_key_from_bytes(ctx, to_bytes(*ctx, keygen.secret_key()), "sk");
  EXPECT_EQ(sk.key_id, keygen.secret_key().key_id);
  EXPECT_TRUE(sk.s == keygen.secret_key().s);
  const PublicKey pk =
      public_key_from_bytes(ctx, to_bytes(*ctx, keygen.make_public_key()), "pk", sk.key_id);
  const RelinKey rk = relin_key_from_bytes(ctx, to_bytes(*ctx, keygen.make_relin_key()), "rk");
  const std::vector<long long> steps = {1, 3};
  const GaloisKeys gk =
      galois_keys_from_bytes(ctx, to_bytes(*ctx, keygen.make_galois_keys(steps)), "gk");
  EXPECT_EQ(gk.keys.size(), 3u);

  Encryptor enc(ctx, pk);
  Decryptor dec(ctx, sk);
  const Ciphertext ct = enc.encrypt(encoder.encode_batch(x));
  const Ciphertext back = ciphertext_from_bytes(ctx, to_bytes(*ctx, ct), "ct", sk.key_id);
  for (std::size_t j = 0; j < 2; ++j) EXPECT_TRUE(back.polys[j] == ct.polys[j]);
  Ciphertext prod = ev.multiply(back, back);
  prod = ciphertext_from_bytes(ctx, to_bytes(*ctx, prod), "ct3");
  ASSERT_EQ(prod.size(), 3u);
  ev.relinearize_inplace(prod, rk);
  ev.rotate_rows_inplace(prod, 3, gk);
  std::vector<u64> want(n);
  const std::size_t half = n / 2;
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t c = 0; c < half; ++c) {
      const u64 v = x[r * half + (c + 3) % half];
      want[r * half + c] = v * v % 65537;
    }
  }
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(prod)), want);

  // Files.
  const auto path = std::filesystem::temp_directory_path() / "hec_bfv_serialize_test.ct";
  write_file(path, to_bytes(*ctx, ct));
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  const Ciphertext from_file = ciphertext_from_bytes(ctx, read_file(path), path.string());
  EXPECT_EQ(encoder.decode_batch(dec.decrypt(from_file)), x);
  std::filesystem::remove(path);
}

TEST(BfvSerialize, CorruptForeignAndMismatchedObjectsAreRefused) {
  const auto ctx = BfvContext::create(BfvParams::generate(10, 65537, 2, 50, 1, true, true));
  const auto other = BfvContext::create(BfvParams::generate(10, 65537, 3, 50, 1, true, true));
  KeyGenerator keygen(ctx, seed(2));
  KeyGenerator keygen2(ctx, seed(3));
  Encoder encoder(ctx);
  Encryptor enc(ctx, keygen.secret_key());
  const auto bytes = to_bytes(*ctx, enc.encrypt(encoder.encode_scalar(5)));

  auto flipped = bytes;
  flipped[core::kHeaderSize + 100] ^= 1;
  EXPECT_NE(error_of([&] { ciphertext_from_bytes(ctx, flipped, "flipped.ct"); }).find("flipped.ct"),
            std::string::npos);
  auto truncated = bytes;
  truncated.resize(bytes.size() - 40);
  EXPECT_NE(error_of([&] { ciphertext_from_bytes(ctx, truncated, "short.ct"); }), "");
  EXPECT_NE(error_of([&] { ciphertext_from_bytes(other, bytes, "other.ct"); }), "");
  EXPECT_NE(
      error_of([&] { ciphertext_from_bytes(ctx, bytes, "key.ct", keygen2.secret_key().key_id); }),
      "");
  EXPECT_NE(error_of([&] { public_key_from_bytes(ctx, bytes, "kind.ct"); }), "");
  EXPECT_EQ(error_of([&] { ciphertext_from_bytes(ctx, bytes, "good.ct"); }), "");
}

}  // namespace
}  // namespace hec::bfv
