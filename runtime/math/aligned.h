// 64-byte aligned storage for polynomial data, so that every limb of an RnsPoly and every
// twiddle table starts on a cache line (and on an AVX-512 register boundary). The first
// allocation tunes glibc malloc once for large blocks (aligned.cpp explains why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace hec::math {

inline constexpr std::size_t kCacheLineBytes = 64;

// Sets glibc's mmap and trim thresholds once per process so that large polynomial buffers
// are reused from the heap instead of being mapped and page-faulted per operation (no effect
// on other C libraries). Returns whether the tuning applies. Idempotent, thread-safe.
bool tune_large_allocations();

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t count) {
    tune_large_allocations();
    return static_cast<T*>(::operator new (count * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kCacheLineBytes}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};

using AlignedU64Vector = std::vector<std::uint64_t, AlignedAllocator<std::uint64_t>>;

}  // namespace hec::math
