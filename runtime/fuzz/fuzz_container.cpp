// libFuzzer harness: the HEC1 container (core/serialize.h) parsed as every object kind of every
// scheme, in memory (decode_object) and through the streaming reader (ObjectReader).
#include <cstdint>
#include <exception>
#include <vector>

#include "core/serialize.h"
#include "fuzz_common.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemFile file;
  const std::vector<std::uint8_t> bytes(data, data + size);
  core::Expectation expect;
  if (size > 9) {
    expect.scheme = static_cast<core::Scheme>(data[8]);
    expect.kind = static_cast<core::ObjectKind>(data[9]);
  }
  try {
    (void)core::decode_object(bytes, expect, "fuzz");
  } catch (const std::exception&) {
  }
  try {
    core::ObjectReader reader(file.write(data, size), expect);
    std::vector<std::uint8_t> sink(64);
    while (reader.remaining() > 0) {
      const std::size_t n = reader.remaining() < sink.size() ? reader.remaining() : sink.size();
      reader.get(sink.data(), n);
    }
    reader.finish();
  } catch (const std::exception&) {
  }
  return 0;
}
