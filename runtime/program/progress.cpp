// Progress lines for long phases (see progress.h).
#include "program/progress.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace hec::program {
namespace {
std::atomic<int> g_enabled{-1};  // -1: not decided yet (read HEC_QUIET on first use)
}

void set_progress_enabled(bool enabled) { g_enabled = enabled ? 1 : 0; }

bool progress_enabled() {
  if (g_enabled.load() < 0) {
    const char* quiet = std::getenv("HEC_QUIET");
    g_enabled = (quiet != nullptr && std::string(quiet) == "1") ? 0 : 1;
  }
  return g_enabled.load() == 1;
}

Progress::Progress(std::string phase, std::size_t total, std::ostream* out)
    : phase_(std::move(phase)),
      total_(total),
      out_(out != nullptr ? out : &std::cerr),
      start_(std::chrono::steady_clock::now()),
      last_(start_),
      enabled_(progress_enabled()) {}

Progress::~Progress() {
  try {
    done();
  } catch (...) {  // never throw from a destructor
  }
}

void Progress::advance(std::size_t n) {
  const std::size_t now_count = count_.fetch_add(n) + n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  if (now - last_ >= std::chrono::seconds(1)) {
    last_ = now;
    print(now_count, false);
  }
}

void Progress::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (enabled_) print(count_.load(), true);
}

void Progress::print(std::size_t count, bool final) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double pct =
      total_ ? 100.0 * static_cast<double>(count) / static_cast<double>(total_) : 100.0;
  char line[256];
  std::snprintf(line, sizeof line, "[%s] %zu/%zu (%.0f%%) %.1f s%s%.0f/s\n", phase_.c_str(), count,
                total_, pct, seconds, final ? " done, " : ", ",
                seconds > 0 ? static_cast<double>(count) / seconds : 0.0);
  *out_ << line << std::flush;
}

}  // namespace hec::program
