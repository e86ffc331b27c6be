// Resource figures a generated program reports: peak resident set size (the high-water mark
// VmHWM of /proc/self/status on Linux, else getrusage's ru_maxrss) and the current one.
#pragma once

#include <cstddef>
#include <string>

namespace hec::program {

std::size_t peak_rss_bytes();
std::size_t current_rss_bytes();
// "123.4 MiB"
std::string format_bytes(std::size_t bytes);

}  // namespace hec::program
