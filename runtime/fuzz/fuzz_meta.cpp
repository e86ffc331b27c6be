// libFuzzer harness: metadata documents and the run manifest (program/manifest.h), and the
// signing-key files, as the roles read them.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_common.h"
#include "program/manifest.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static fuzz::MemFile file;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const program::MetaDoc doc = program::parse_meta(text, "fuzz.meta");
    for (const auto& [k, v] : doc.fields) (void)doc.find(k);
    (void)program::parse_manifest(doc);
  } catch (const std::exception&) {
  }
  try {
    (void)program::load_verify_key(file.write(data, size));
  } catch (const std::exception&) {
  }
  return 0;
}
