// Run-time CPU detection through the compiler's cpuid support (see cpu_features.h).
#include "math/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace hec::math {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512ifma = __builtin_cpu_supports("avx512ifma");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
  return f;
}

bool env_forces_portable() {
  const char* value = std::getenv("HEC_FORCE_PORTABLE");
  return value != nullptr && std::strcmp(value, "") != 0 && std::strcmp(value, "0") != 0;
}

std::atomic<bool>& forced_portable() {
  static std::atomic<bool> forced{env_forces_portable()};
  return forced;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool cpu_has_avx512_ifma() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512dq && f.avx512vl && f.avx512ifma;
}

KernelPath active_kernel_path() {
  if (forced_portable().load(std::memory_order_relaxed) || !cpu_has_avx512_ifma()) {
    return KernelPath::kPortable;
  }
  return KernelPath::kAvx512Ifma;
}

void force_portable_path(bool force) { forced_portable().store(force, std::memory_order_relaxed); }

bool portable_path_forced() { return forced_portable().load(std::memory_order_relaxed); }

const char* kernel_path_name(KernelPath path) {
  return path == KernelPath::kAvx512Ifma ? "avx512-ifma" : "portable";
}

}  // namespace hec::math
