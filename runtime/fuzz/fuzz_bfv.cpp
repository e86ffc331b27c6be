// libFuzzer harness: every BFV reader (bfv/serialize.h, and the ciphertext-array files of
// program/bfv_program.h) on one small insecure context. The first input byte chooses the reader;
// the rest is the object's bytes.
#include <cstdint>
#include <exception>
#include <vector>

#include "bfv/serialize.h"
#include "fuzz_common.h"
#include "program/bfv_program.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto ctx =
      bfv::BfvContext::create(bfv::BfvParams::generate(5, 65537, 2, 40, 2, true, true));
  static fuzz::MemFile file;
  if (size < 1) return 0;
  const std::vector<std::uint8_t> bytes(data + 1, data + size);
  const auto id = fuzz::header_key_id<bfv::KeyId>(data + 1, size - 1);
  try {
    switch (data[0] % 7) {
      case 0:
        (void)bfv::params_from_bytes(bytes, "fuzz");
        break;
      case 1:
        (void)bfv::ciphertext_from_bytes(ctx, bytes, "fuzz", id);
        break;
      case 2:
        (void)bfv::public_key_from_bytes(ctx, bytes, "fuzz", id);
        break;
      case 3:
        (void)bfv::secret_key_from_bytes(ctx, bytes, "fuzz");
        break;
      case 4:
        (void)bfv::relin_key_from_bytes(ctx, bytes, "fuzz", id);
        break;
      case 5:
        (void)bfv::galois_keys_from_bytes(ctx, bytes, "fuzz", id);
        break;
      default:
        (void)program::bfv_program::BfvScheme::load_array(file.write(data + 1, size - 1), *ctx, id);
        break;
    }
  } catch (const std::exception&) {
  }
  return 0;
}
