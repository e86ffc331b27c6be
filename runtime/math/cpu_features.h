// Run-time CPU detection: which kernel path (AVX-512 IFMA or portable) the math core uses.
// The choice can be forced to the portable path for tests and benchmarks.
#pragma once

namespace hec::math {

enum class KernelPath { kPortable, kAvx512Ifma };

struct CpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512ifma = false;
  bool avx512bw = false;
  bool avx512vbmi = false;  // byte permutes: the packed-residue unpacking (math/pack.h)
};

// What this CPU supports (detected once, cached).
const CpuFeatures& cpu_features();

// True when every extension the IFMA kernels are compiled for is present.
bool cpu_has_avx512_ifma();

// The path kernels take now: the best the CPU has, unless forced to portable.
KernelPath active_kernel_path();

// Forces the portable path (true) or restores automatic choice (false). Also settable by the
// environment variable HEC_FORCE_PORTABLE=1 at start-up.
void force_portable_path(bool force);

// True while the portable path is forced (by force_portable_path or HEC_FORCE_PORTABLE); the
// kernels that need less than IFMA (core/blake3.h: AVX-512F) check this and their own features.
bool portable_path_forced();

const char* kernel_path_name(KernelPath path);

}  // namespace hec::math
