#include "bench/memory_floor.h"

#include <immintrin.h>

#include <cstdint>

namespace hec::bench {
namespace {

using u64 = std::uint64_t;

bool has_avx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

__attribute__((target("avx512f"))) void xor2_avx512(u64* x, const u64* y, std::size_t n) {
  std::size_t t = 0;
  for (; t + 8 <= n; t += 8) {
    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(x + t), _mm512_loadu_si512(y + t));
    _mm512_storeu_si512(x + t, v);
  }
  for (; t < n; ++t) x[t] ^= y[t];
}

__attribute__((target("avx512f"))) void xor_to_avx512(u64* z, const u64* x, const u64* y,
                                                      const u64* s, std::size_t n, bool stream) {
  std::size_t t = 0;
  const bool aligned = reinterpret_cast<std::uintptr_t>(z) % 64 == 0;
  for (; t + 8 <= n; t += 8) {
    __m512i v = _mm512_xor_si512(_mm512_loadu_si512(x + t), _mm512_loadu_si512(y + t));
    if (s != nullptr) v = _mm512_xor_si512(v, _mm512_loadu_si512(s + t));
    if (stream && aligned) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(z + t), v);
    } else {
      _mm512_storeu_si512(z + t, v);
    }
  }
  if (stream && aligned) _mm_sfence();
  for (; t < n; ++t) z[t] = x[t] ^ y[t] ^ (s != nullptr ? s[t] : 0);
}

}  // namespace

void floor_read2_write1(u64* x, const u64* y, std::size_t n) {
  if (has_avx512f()) return xor2_avx512(x, y, n);
  for (std::size_t t = 0; t < n; ++t) x[t] ^= y[t];
}

void floor_read_write_to(u64* z, const u64* x, const u64* y, const u64* s, std::size_t n,
                         bool stream) {
  if (has_avx512f()) return xor_to_avx512(z, x, y, s, n, stream);
  for (std::size_t t = 0; t < n; ++t) z[t] = x[t] ^ y[t] ^ (s != nullptr ? s[t] : 0);
}

}  // namespace hec::bench
