// Writes the seed corpora of the libFuzzer harnesses (runtime/fuzz/corpus/<harness>/): one
// valid object of every kind each harness reads, made under the harness's own parameters, so
// that mutations start from inputs that reach every parser. Run by scripts/fuzz --seeds; the
// output is committed.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bfv/encoder.h"
#include "bfv/scheme.h"
#include "bfv/serialize.h"
#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/io.h"
#include "core/serialize.h"
#include "fhew/fhew.h"
#include "fhew/serialize.h"
#include "program/bfv_program.h"
#include "program/manifest.h"
#include "program/npy.h"

using namespace hec;
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void put(const fs::path& dir, const std::string& name, std::uint8_t selector,
         const std::vector<std::uint8_t>& bytes, bool with_selector = true) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  if (with_selector) out.put(static_cast<char>(selector));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: hec_fuzz_seeds CORPUS_DIR\n";
    return 2;
  }
  const fs::path root = argv[1];
  const fs::path tmp = fs::temp_directory_path() / "hec-fuzz-seeds";
  fs::remove_all(tmp);
  fs::create_directories(tmp);

  // CKKS (the fuzz_ckks context).
  const auto ctx = ckks::make_context(ckks::Parameters::from_bit_sizes(
      ckks::LogN(10), {40}, 30, 1, {40}, 2, ckks::Security::kInsecure));
  ckks::KeyGenerator gen(ctx);
  const auto sk = gen.secret_key();
  const auto pk = gen.public_key(sk);
  ckks::Encoder encoder(ctx);
  ckks::Encryptor enc(ctx, pk);
  const std::vector<double> values = {1.0, -2.0, 0.5};
  const auto pt =
      encoder.encode(std::span<const double>(values), ckks::Level(ctx->params().max_level()),
                     std::exp2(30), nullptr, encoder.fresh_noise_tolerance());
  const auto ct = enc.encrypt(pt);
  ckks::save(tmp / "sk", *ctx, sk);
  ckks::save(tmp / "pk", *ctx, pk);
  ckks::save(tmp / "rk", *ctx, gen.relin_key(sk));
  ckks::save(tmp / "gk", *ctx, gen.galois_keys(sk, {1}, true));
  ckks::save(tmp / "ct", *ctx, ct);
  ckks::save(tmp / "pt", *ctx, pt);
  ckks::save(tmp / "cts", *ctx, std::vector<ckks::Ciphertext>{ct, ct});
  ckks::save_parameters(tmp / "params", ctx->params());
  const char* names[] = {"sk", "pk", "rk", "gk", "ct", "pt", "", "cts", "params"};
  for (std::uint8_t k = 0; k < 9; ++k) {
    if (std::string(names[k]).empty()) continue;
    const auto bytes = slurp(tmp / names[k]);
    put(root / "ckks", names[k], k, bytes);
    put(root / "container", names[k], 0, bytes, false);
  }

  // BFV (the fuzz_bfv context).
  const auto bctx =
      bfv::BfvContext::create(bfv::BfvParams::generate(5, 65537, 2, 40, 2, true, true));
  bfv::KeyGenerator bgen(bctx);
  const auto bpk = bgen.make_public_key();
  bfv::Encoder bencoder(bctx);
  const std::vector<bfv::u64> bvalues = {1, 2, 3};
  bfv::Encryptor benc(bctx, bpk);
  const auto bct = benc.encrypt(bencoder.encode_batch(bvalues));
  put(root / "bfv", "params", 0, bfv::to_bytes(*bctx));
  put(root / "bfv", "ct", 1, bfv::to_bytes(*bctx, bct));
  put(root / "bfv", "pk", 2, bfv::to_bytes(*bctx, bpk));
  put(root / "bfv", "sk", 3, bfv::to_bytes(*bctx, bgen.secret_key()));
  put(root / "bfv", "rk", 4, bfv::to_bytes(*bctx, bgen.make_relin_key()));
  const long long steps[] = {1};
  put(root / "bfv", "gk", 5, bfv::to_bytes(*bctx, bgen.make_galois_keys(steps)));
  {  // A ciphertext-array file of program/bfv_program.h (two ciphertexts).
    const fs::path tmp = root / "bfv" / "cts.tmp";
    program::bfv_program::BfvScheme::save_array(tmp, *bctx, bct.key_id, {&bct, &bct});
    put(root / "bfv", "cts", 6, slurp(tmp));
    fs::remove(tmp);
  }

  // FHEW (toy parameters).
  const fhew::Context fctx(fhew::Params::toy_insecure(fhew::BlindRotation::kGinx));
  const auto fsk = fctx.keygen_secret();
  put(root / "fhew", "sk", 0, fhew::encode_secret_key(fsk));
  put(root / "fhew", "cts", 2,
      fhew::encode_ciphertexts({fctx.encrypt(fsk, true), fctx.encrypt(fsk, false)}, fctx.params()));
  put(root / "fhew", "pk", 3, fhew::encode_public_key(fctx.keygen_public(fsk)));

  // Metadata and a manifest (signed), and a signing key's public file.
  const program::SigningKey key;
  program::MetaLines manifest = {{"kind", "manifest"},
                                 {"program", "fuzz"},
                                 {"program_digest", std::string(64, 'a')},
                                 {"insecure", "true"},
                                 {"run_id", program::new_run_id()},
                                 {"key_id", std::string(32, 'b')},
                                 {"params_digest", std::string(64, 'c')},
                                 {"stream_dim", "N"},
                                 {"rows", "40"},
                                 {"input.y", "y [N] streamed"},
                                 {"party.coordinator", program::verify_key_hex(key.verify_key())},
                                 {"owner.A", "0:20 " + program::verify_key_hex(key.verify_key())},
                                 {"owner.B", "20:40 -"},
                                 {"bind.snps", "abc"}};
  const std::string text = program::meta_document(manifest, &key, "coordinator");
  put(root / "meta", "manifest", 0, std::vector<std::uint8_t>(text.begin(), text.end()), false);
  const std::string meta = program::meta_document({{"kind", "result"}, {"factor", "1.5"}});
  put(root / "meta", "result", 0, std::vector<std::uint8_t>(meta.begin(), meta.end()), false);
  key.save(tmp / "k.sign");
  put(root / "meta", "pub", 0, slurp(tmp / "k.sign.pub"), false);

  // .npy files.
  program::write_npy(tmp / "a.npy", {2, 3}, {1, 2, 3, 4, 5, 6});
  put(root / "npy", "f8", 0, slurp(tmp / "a.npy"), false);
  program::write_npy_int64(tmp / "b.npy", {3}, {1, 2, 3});
  put(root / "npy", "i8", 0, slurp(tmp / "b.npy"), false);

  // FHEW gate programs: a 1-bit full adder (parity and majority cells) with a MUX.
  const std::string gates =
      "hec-fhew-gates 1\nwires 7\ninput a 1\ninput b 2\ninput c 3\n"
      "linear 4 3 1 2 3 2 2 2 -2\nlinear 5 3 1 2 3 1 1 1 -3\nmux 6 2 8 11\n"
      "output s 8\noutput carry 10 1 0\noutput m 12\nend\n";
  put(root / "gates", "full_adder", 0, std::vector<std::uint8_t>(gates.begin(), gates.end()),
      false);
  fs::remove_all(tmp);
  std::cout << "seeds written to " << root << "\n";
  return 0;
}
