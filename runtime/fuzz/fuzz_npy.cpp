// libFuzzer harness: the .npy reader the encrypting role uses for data owners' inputs
// (program/npy.h).
#include <cstdint>
#include <exception>

#include "fuzz_common.h"
#include "program/npy.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemFile file;
  try {
    (void)program::read_npy(file.write(data, size));
  } catch (const std::exception&) {
  }
  return 0;
}
