// Peak and current resident set size (see resources.h).
#include "program/resources.h"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace hec::program {
namespace {
// The value in kB of a "Key:   123 kB" line of /proc/self/status, or 0.
std::size_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1));
  }
  return 0;
}
}  // namespace

std::size_t peak_rss_bytes() {
  if (std::size_t kib = status_kib("VmHWM"); kib > 0) return kib * 1024;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::size_t current_rss_bytes() { return status_kib("VmRSS") * 1024; }

std::string format_bytes(std::size_t bytes) {
  char text[64];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(text, sizeof text, "%.1f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(text, sizeof text, "%.1f KiB", b / 1024.0);
  }
  return text;
}

}  // namespace hec::program
