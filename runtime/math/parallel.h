// One process-wide thread cap for the runtime's OpenMP loops (over RNS limbs and over
// ciphertext arrays), and the capture-then-rethrow helper that keeps exceptions from escaping
// an OpenMP region (the pattern of OpenFHE's ThreadException).
//
// The cap is read from the environment variable HEC_THREADS the first time it is needed
// (a positive integer), otherwise it is omp_get_max_threads(); set_thread_cap overrides both.
#pragma once

#include <cstddef>
#include <exception>
#include <mutex>
#include <vector>

namespace hec::math {

// A scratch array of at least `count` elements in `buffer` (a thread_local one, reused
// across calls: a fresh multi-megabyte array per call costs a page fault per 4 KiB on first
// touch). Contents are unspecified on entry.
template <class T>
T* scratch(std::vector<T>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

// Sets the number of threads every runtime parallel loop may use (>= 1); throws otherwise.
void set_thread_cap(int threads);

// The current cap (>= 1). Throws std::invalid_argument naming HEC_THREADS if that variable
// is set to something other than a positive integer.
int thread_cap();

// The cap a value of HEC_THREADS asks for: omp_get_max_threads() when null or empty, else a
// positive integer; throws std::invalid_argument naming HEC_THREADS otherwise.
int parse_thread_cap(const char* value);

// Collects the first exception thrown inside an OpenMP region; rethrow() after the region.
class ParallelExceptionCollector {
 public:
  // Call from a catch (...) block inside the region.
  void capture() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_) first_ = std::current_exception();
  }
  // Rethrows the first captured exception, if any (call outside the region).
  void rethrow_if_any() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

// Below this much work (in rough units of one modular operation) a parallel region costs
// more than it saves, above all when other processes share the cores.
inline constexpr std::size_t kParallelMinWork = std::size_t{1} << 15;

// True inside an active OpenMP parallel region (omp_in_parallel).
bool inside_parallel_region();

// Runs body(i) for i in [0, count) on up to thread_cap() threads (static schedule), or
// serially when count * work_per_item < kParallelMinWork (the default work_per_item always
// goes parallel when count >= 2), or when called from inside a parallel region: callers
// that already run one item per thread (the generated programs' rows) would otherwise
// start nested teams, thread_cap() squared threads on thread_cap() cores (measured: the
// chi-square server pass took 0.47 s on 2 threads nested, 0.25 s not nested, 0.31 s on 1).
// An exception thrown by any body is rethrown here after all threads finished.
template <class Body>
void parallel_for(std::size_t count, Body&& body, std::size_t work_per_item = kParallelMinWork) {
  const int cap = thread_cap();
  if (count < 2 || cap == 1 || count * work_per_item < kParallelMinWork ||
      inside_parallel_region()) {
    for (std::size_t i = 0; i < count; ++i) body(i);
    return;
  }
  ParallelExceptionCollector errors;
  const int threads = static_cast<std::size_t>(cap) < count ? cap : static_cast<int>(count);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < count; ++i) {
    try {
      body(i);
    } catch (...) {
      errors.capture();
    }
  }
  errors.rethrow_if_any();
}

// OpenMP threads that spin while waiting slow everything down when other processes share
// the cores (DESIGN.md §7). libgomp reads OMP_WAIT_POLICY only when it is loaded, so a
// program that wants passive waiting calls this first thing in main(): if OMP_WAIT_POLICY
// is unset it sets it to "passive" and re-executes /proc/self/exe with the same argv (on
// failure to re-execute it returns and the program continues with the default policy).
void reexec_with_passive_openmp_wait(char** argv);

}  // namespace hec::math
