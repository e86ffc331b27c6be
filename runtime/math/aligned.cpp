// Process-wide malloc tuning for large polynomial buffers (see aligned.h, tune_large_allocations).
//
// glibc serves allocations above M_MMAP_THRESHOLD with a fresh mmap and returns them with
// munmap, and gives memory at the top of the heap back to the kernel above M_TRIM_THRESHOLD.
// An N = 2^16 polynomial with 25 limbs is 13 MB, so every CKKS operation that allocates its
// result would map, page-fault (one fault per 4 KiB page, the kernel zeroing each) and unmap
// it again: for add, which touches each word once, the faults cost more than the arithmetic.
// Setting both thresholds explicitly once keeps such blocks in the heap where the next
// operation reuses them without faults. We chose this over a size-keyed free-list pool
// because it adds no code path that could hand one object's memory to another beyond what
// malloc already does, needs no locking of our own, and leaves glibc's per-thread arenas
// working for the OpenMP threads. Measured cost: the fused-dot benchmark at N = 2^13 (1,000
// pairs of 393 KB ciphertexts, 786 MB streamed once in 4 KiB tiles) ran 66-70 ms without and
// 85-92 ms with the mmap threshold in A/B runs; the trim threshold alone does not slow it,
// and does not help the 2^16 add. What we ruled out (2026-11-23, TODO(#4) for the cause):
// page faults (the tuned run takes fewer: 193k against 232k for the whole benchmark), the dot
// kernel's allocations (the slowdown is inside its inner loop, perf), hardware prefetchers
// stopping at page boundaries (software prefetch of the next two pairs' tiles: no change).
// Transparent huge pages for the heap (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) recover about
// half (80 ms), so TLB reach is part of it: heap-placed ciphertexts are contiguous and 16 mod
// 32 bytes aligned, each mmap'ed one starts 16 bytes into its own pages.
// Secret material: freed heap blocks are reused by later allocations of the process (as for
// every small allocation already); key structures holding secrets wipe themselves on
// destruction (ckks::SecretKey, bfv::SecretKey, fhew::SecretKey), they do not rely on munmap.
#include "math/aligned.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hec::math {

namespace {

bool apply_tuning() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX);
  // blocks above it are still mapped per allocation. Trim only beyond 1 GiB of free top.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
  return true;
#else
  return false;
#endif
}

}  // namespace

bool tune_large_allocations() {
  static const bool applied = apply_tuning();
  return applied;
}

}  // namespace hec::math
