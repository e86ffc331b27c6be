// libFuzzer harness: the FHEW gate-program reader (fhew/gate_program.h), which parses files
// written by the compiler's FHEW target.
#include <cstdint>
#include <exception>
#include <string_view>

#include "fhew/gate_program.h"

using namespace hec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)fhew::parse_gate_program(std::string_view(reinterpret_cast<const char*>(data), size),
                                   "fuzz");
  } catch (const std::exception&) {
  }
  return 0;
}
