// Progress of long phases (encrypting many rows, streaming over individuals) on stderr: one
// line per report, at most about once per second and at the end, with count, percentage,
// elapsed time and rate. Thread-safe `advance` so OpenMP loops can report. Silenced by the
// environment variable HEC_QUIET=1 or `set_progress_enabled(false)`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>

namespace hec::program {

void set_progress_enabled(bool enabled);
bool progress_enabled();

class Progress {
 public:
  // `out` defaults to std::cerr.
  Progress(std::string phase, std::size_t total, std::ostream* out = nullptr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(std::size_t n = 1);
  // Prints the final line (once); called by the destructor if not called before.
  void done();
  std::size_t count() const { return count_.load(); }

 private:
  void print(std::size_t count, bool final);
  std::string phase_;
  std::size_t total_;
  std::ostream* out_;
  std::atomic<std::size_t> count_{0};
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  std::mutex mutex_;
  bool finished_ = false;
  bool enabled_;
};

}  // namespace hec::program
