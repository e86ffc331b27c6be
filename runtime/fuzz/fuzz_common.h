// Helpers shared by the libFuzzer harnesses (runtime/fuzz): the fixed small contexts each
// deserializer is fuzzed under, and an in-memory file (memfd) for the readers that take a path.
// A harness passes when a deserializer either returns or throws std::exception for every input:
// a crash, a hang, a leak or a sanitizer report (ASan, UBSan) is a finding.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hec::fuzz {

// A file whose content is replaced on every call; its path is /proc/self/fd/N.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("hec-fuzz", 0)) {}
  ~MemFile() { ::close(fd_); }
  std::filesystem::path write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) return {};
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

// The 16-byte key id of a HEC1 container header (offset 44), zero when the input is shorter:
// readers that insist on a key id are given the one the input claims, so that mutations of the
// payload get past the check.
template <class KeyId>
KeyId header_key_id(const std::uint8_t* data, std::size_t size) {
  KeyId id{};
  if (size >= 60) {
    for (std::size_t i = 0; i < id.size(); ++i) id[i] = data[44 + i];
  }
  return id;
}

}  // namespace hec::fuzz
