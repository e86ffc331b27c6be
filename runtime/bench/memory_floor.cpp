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

// z_k = x_k ^ y (^ s), y and s read once for all K outputs.
template <std::size_t K>
__attribute__((target("avx512f"))) void xor_to_avx512(u64* const* z, const u64* const* x,
                                                      const u64* y, const u64* s, std::size_t n,
                                                      bool stream) {
  bool aligned = true;
  for (std::size_t k = 0; k < K; ++k)
    aligned = aligned && reinterpret_cast<std::uintptr_t>(z[k]) % 64 == 0;
  std::size_t t = 0;
  for (; t + 8 <= n; t += 8) {
    __m512i shared = _mm512_loadu_si512(y + t);
    if (s != nullptr) shared = _mm512_xor_si512(shared, _mm512_loadu_si512(s + t));
    for (std::size_t k = 0; k < K; ++k) {
      const __m512i v = _mm512_xor_si512(_mm512_loadu_si512(x[k] + t), shared);
      if (stream && aligned) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(z[k] + t), v);
      } else {
        _mm512_storeu_si512(z[k] + t, v);
      }
    }
  }
  if (stream && aligned) _mm_sfence();
  for (; t < n; ++t) {
    for (std::size_t k = 0; k < K; ++k) z[k][t] = x[k][t] ^ y[t] ^ (s != nullptr ? s[t] : 0);
  }
}

}  // namespace

void floor_read2_write1(u64* x, const u64* y, std::size_t n) {
  if (has_avx512f()) return xor2_avx512(x, y, n);
  for (std::size_t t = 0; t < n; ++t) x[t] ^= y[t];
}

void floor_read_write_to(u64* z, const u64* x, const u64* y, const u64* s, std::size_t n,
                         bool stream) {
  if (has_avx512f()) return xor_to_avx512<1>(&z, &x, y, s, n, stream);
  for (std::size_t t = 0; t < n; ++t) z[t] = x[t] ^ y[t] ^ (s != nullptr ? s[t] : 0);
}

void floor_read_write_to2(u64* z0, u64* z1, const u64* x0, const u64* x1, const u64* y,
                          const u64* s, std::size_t n, bool stream) {
  u64* const z[2] = {z0, z1};
  const u64* const x[2] = {x0, x1};
  if (has_avx512f()) return xor_to_avx512<2>(z, x, y, s, n, stream);
  for (std::size_t t = 0; t < n; ++t) {
    const u64 shared = y[t] ^ (s != nullptr ? s[t] : 0);
    z0[t] = x0[t] ^ shared;
    z1[t] = x1[t] ^ shared;
  }
}

}  // namespace hec::bench
