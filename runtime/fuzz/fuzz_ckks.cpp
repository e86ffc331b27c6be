// libFuzzer harness: every CKKS key and ciphertext reader (ckks/io.h) on one small insecure
// context (ring 2^10, the smallest the runtime takes, with one level and a special prime: the
// parsers' paths are those of any ring). The first input byte chooses the reader; the rest is the
// file.
#include <cstdint>
#include <exception>

#include "ckks/io.h"
#include "core/serialize.h"
#include "fuzz_common.h"

using namespace hec;

const ckks::Context& fuzz_context() {
  static const ckks::ContextPtr ctx = ckks::make_context(ckks::Parameters::from_bit_sizes(
      ckks::LogN(10), {40}, 30, 1, {40}, 2, ckks::Security::kInsecure));
  return *ctx;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemFile file;
  if (size < 1) return 0;
  const ckks::Context& ctx = fuzz_context();
  const auto path = file.write(data + 1, size - 1);
  const auto id = fuzz::header_key_id<core::KeyId>(data + 1, size - 1);
  try {
    switch (data[0] % 9) {
      case 0:
        (void)ckks::load_secret_key(path, ctx);
        break;
      case 1:
        (void)ckks::load_public_key(path, ctx, id);
        break;
      case 2:
        (void)ckks::load_relin_key(path, ctx, id);
        break;
      case 3:
        (void)ckks::load_galois_keys(path, ctx, id);
        break;
      case 4:
        (void)ckks::load_ciphertext(path, ctx, id);
        break;
      case 5:
        (void)ckks::load_plaintext(path, ctx);
        break;
      case 6:
        (void)ckks::load_compact_ciphertext(path, ctx, id);
        break;
      case 7:
        (void)ckks::load_ciphertexts(path, ctx, id);
        break;
      default:
        (void)ckks::load_parameters(path);
        break;
    }
  } catch (const std::exception&) {
  }
  return 0;
}
