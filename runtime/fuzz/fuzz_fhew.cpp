// libFuzzer harness: the FHEW readers (fhew/serialize.h) under the toy parameter set. The first
// input byte chooses the reader; the rest is the object's bytes.
#include <cstdint>
#include <exception>
#include <vector>

#include "fhew/serialize.h"
#include "fuzz_common.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fhew::Params params = fhew::Params::toy_insecure(fhew::BlindRotation::kGinx);
  if (size < 1) return 0;
  const std::vector<std::uint8_t> bytes(data + 1, data + size);
  const auto id = fuzz::header_key_id<fhew::KeyId>(data + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        (void)fhew::decode_secret_key(bytes, params, "fuzz");
        break;
      case 1:
        (void)fhew::decode_eval_key(bytes, params, id, "fuzz");
        break;
      case 2:
        (void)fhew::decode_ciphertexts(bytes, params, id, "fuzz");
        break;
      default:
        (void)fhew::decode_public_key(bytes, params, "fuzz");
        break;
    }
  } catch (const std::exception&) {
  }
  return 0;
}
