// 64-byte aligned storage for polynomial data, so that every limb of an RnsPoly and every
// twiddle table starts on a cache line (and on an AVX-512 register boundary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace hec::math {

inline constexpr std::size_t kCacheLineBytes = 64;

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t count) {
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
