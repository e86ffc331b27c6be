// The process-wide thread cap (see parallel.h).
#include "math/parallel.h"

#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace hec::math {
namespace {

// 0 means "not resolved yet".
std::atomic<int>& cap_storage() {
  static std::atomic<int> cap{0};
  return cap;
}

int cap_from_environment() { return parse_thread_cap(std::getenv("HEC_THREADS")); }

}  // namespace

int parse_thread_cap(const char* value) {
  if (value == nullptr || *value == '\0') return omp_get_max_threads();
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*end != '\0' || parsed < 1 || parsed > 4096) {
    throw std::invalid_argument("HEC_THREADS = '" + std::string(value) +
                                "' must be a positive integer (threads for the runtime)");
  }
  return static_cast<int>(parsed);
}

void set_thread_cap(int threads) {
  if (threads < 1) {
    throw std::invalid_argument("set_thread_cap: threads = " + std::to_string(threads) +
                                " must be >= 1");
  }
  cap_storage().store(threads, std::memory_order_relaxed);
}

bool inside_parallel_region() { return omp_in_parallel() != 0; }

int thread_cap() {
  int cap = cap_storage().load(std::memory_order_relaxed);
  if (cap == 0) {
    cap = cap_from_environment();
    cap_storage().store(cap, std::memory_order_relaxed);
  }
  return cap;
}

void reexec_with_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // execv returned: could not re-execute; carry on with the policy libgomp already chose.
}

}  // namespace hec::math
