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

namespace hec::math {

// Sets the number of threads every runtime parallel loop may use (>= 1); throws otherwise.
void set_thread_cap(int threads);

// The current cap (>= 1). Throws std::invalid_argument naming HEC_THREADS if that variable
// is set to something other than a positive integer.
int thread_cap();

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

// Runs body(i) for i in [0, count) on up to thread_cap() threads (static schedule). An
// exception thrown by any body is rethrown here after all threads finished.
template <class Body>
void parallel_for(std::size_t count, Body&& body) {
  const int cap = thread_cap();
  if (count < 2 || cap == 1) {
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

}  // namespace hec::math
