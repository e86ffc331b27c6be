// AVX-512 kernels of the negacyclic NTT (see ntt.h): eight Harvey butterflies per instruction
// sequence, lazy corrections by unsigned minimum (min(x, x - 2q)). Two multiplier variants
// share the layer code (template parameter `Wide`):
//  - moduli q < 2^50: Shoup multiplication in 52-bit limbs with vpmadd52luq/vpmadd52huq
//    (Boemer et al., "Intel HEXL", WAHC 2021, §4), values in [0, 4q) < 2^52 between layers;
//  - moduli 2^50 <= q < 2^61: Shoup multiplication with beta = 2^64 (avx512_mul64.h: high
//    words from vpmuludq partial products, low words by vpmullq) whose products stay in
//    [0, 4q) uncorrected; values in [0, 8q) < 2^64 between forward layers and [0, 4q) between
//    inverse ones (one conditional subtraction a butterfly instead of two: see
//    forward_butterfly).
// The layers with butterfly distance t >= 8 work on whole registers; the layers with t = 4, 2,
// 1 run fused on 16-element blocks held in two registers, the X and Y halves of each layer
// gathered with vpermt2q. This file is compiled with ${HEC_AVX512_FLAGS} and only entered after
// run-time detection (cpu_features.h).
// GCC 12 warns that _mm512_min_epu64 passes an undefined pass-through vector; it is unused.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "math/avx512_mul64.h"
#include "math/ntt_kernels.h"

namespace hec::math::detail {
namespace {

struct Consts {
  __m512i q, two_q, four_q, neg_q52, mask52;
  explicit Consts(u64 modulus)
      : q(_mm512_set1_epi64(static_cast<long long>(modulus))),
        two_q(_mm512_set1_epi64(static_cast<long long>(2 * modulus))),
        four_q(_mm512_set1_epi64(static_cast<long long>(4 * modulus))),
        neg_q52(_mm512_set1_epi64(static_cast<long long>((u64{1} << 52) - modulus))),
        mask52(_mm512_set1_epi64(static_cast<long long>((u64{1} << 52) - 1))) {}
};

// y * w mod q in [0, 2q) for y < 2^52, w < q, wp = floor(w * 2^52 / q): Shoup with beta = 2^52.
inline __m512i mul_shoup52_lazy(__m512i y, __m512i w, __m512i wp, const Consts& c) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i quotient = _mm512_madd52hi_epu64(zero, y, wp);
  __m512i r = _mm512_madd52lo_epu64(zero, y, w);
  r = _mm512_madd52lo_epu64(r, quotient, c.neg_q52);  // + lo52(-quotient * q)
  return _mm512_and_si512(r, c.mask52);
}

// x in [0, 2k) -> [0, k) for k = q or 2q.
inline __m512i reduce_once(__m512i x, __m512i k) {
  return _mm512_min_epu64(x, _mm512_sub_epi64(x, k));
}

// Forward (Cooley-Tukey) Harvey butterfly. IFMA: x, y in [0, 4q) -> [0, 4q). Wide: x, y in
// [0, 8q) -> [0, 8q) (8q < 2^64 for q < 2^61): x reduced once to [0, 4q), the product y w
// left in the [0, 4q) of the approximate quotient, x + v < 8q and x - v + 4q in (0, 8q).
// Harvey's form needs x in [0, 2q) and v in [0, 2q), two conditional subtractions; this one
// needs one: 21 vector instructions instead of 23, every one of them on port 0 or 5, so the
// count is the time (the transform takes 4.1-4.4 ns a butterfly of 8 lanes at every N from
// 2^10 to 2^15: compute-bound).
template <bool Wide>
inline void forward_butterfly(__m512i& x, __m512i& y, __m512i w, __m512i wp, const Consts& c) {
  if constexpr (Wide) {
    const __m512i xr = reduce_once(x, c.four_q);
    __m512i v = mul_shoup64_lazy4_avx512(y, w, wp, c.q);
    // v whole in a register: GCC otherwise reassociates x and y into five additions.
    asm("" : "+v"(v));
    x = _mm512_add_epi64(xr, v);
    y = _mm512_sub_epi64(_mm512_add_epi64(xr, c.four_q), v);
  } else {
    const __m512i xr = reduce_once(x, c.two_q);
    const __m512i v = mul_shoup52_lazy(y, w, wp, c);
    x = _mm512_add_epi64(xr, v);
    y = _mm512_add_epi64(_mm512_sub_epi64(xr, v), c.two_q);
  }
}

// Inverse (Gentleman-Sande) Harvey butterfly. IFMA: x, y in [0, 2q) -> [0, 2q). Wide: x, y in
// [0, 4q) -> [0, 4q): x + y reduced once from [0, 8q), x - y + 4q in (0, 8q) into the product,
// left in [0, 4q) (one conditional subtraction fewer, as forward_butterfly).
template <bool Wide>
inline void inverse_butterfly(__m512i& x, __m512i& y, __m512i w, __m512i wp, const Consts& c) {
  if constexpr (Wide) {
    const __m512i s = _mm512_add_epi64(x, y);
    const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(x, c.four_q), y);
    x = reduce_once(s, c.four_q);
    y = mul_shoup64_lazy4_avx512(d, w, wp, c.q);
  } else {
    const __m512i s = _mm512_add_epi64(x, y);
    const __m512i d = _mm512_add_epi64(_mm512_sub_epi64(x, y), c.two_q);
    x = reduce_once(s, c.two_q);
    y = mul_shoup52_lazy(d, w, wp, c);
  }
}

// The three layers with t = 4, 2, 1 stay inside 16-element blocks, so they run fused: a
// block is loaded once, goes through the three butterfly layers in registers, and is stored
// once. Between layers the lanes move straight from one layer's (X, Y) arrangement to the
// next one's (two vpermt2q instead of a scatter and a gather), so a block costs 8 permutes,
// 2 loads and 2 stores instead of 12, 6 and 6. Measured: the three separate passes took 30%
// (forward) to 50% (inverse) of a transform's time at N = 2^14-2^15. The butterflies, their
// twiddles and their order are the separate layers' own, so every output is unchanged.
struct FusedShuffle {
  // Forward: natural -> t = 4 -> t = 2 -> t = 1 -> natural; inverse: natural -> t = 1 ->
  // t = 2 -> t = 4 -> natural. into[s] = (X, Y) gather indices of stage s from the previous
  // arrangement; out = the scatter back to natural order.
  __m512i into_x[3], into_y[3], out_0, out_1;
};

FusedShuffle make_fused_shuffle(const int (&order)[3]) {
  // where[e]: position of block element e in the concatenation (X lanes 0..7, Y lanes
  // 8..15) of the current arrangement; natural order to begin with (v0 = 0..7, v1 = 8..15).
  int where[16];
  for (int e = 0; e < 16; ++e) where[e] = e;
  FusedShuffle f{};
  for (int s = 0; s < 3; ++s) {
    const int t = order[s];
    alignas(64) long long ix[8], iy[8];
    int next[16];
    for (int l = 0; l < 8; ++l) {
      const int e = 2 * t * (l / t) + l % t;  // butterfly l pairs e and e + t
      ix[l] = where[e];
      iy[l] = where[e + t];
      next[e] = l;
      next[e + t] = 8 + l;
    }
    f.into_x[s] = _mm512_load_si512(ix);
    f.into_y[s] = _mm512_load_si512(iy);
    for (int e = 0; e < 16; ++e) where[e] = next[e];
  }
  alignas(64) long long s0[8], s1[8];
  for (int e = 0; e < 8; ++e) {
    s0[e] = where[e];
    s1[e] = where[8 + e];
  }
  f.out_0 = _mm512_load_si512(s0);
  f.out_1 = _mm512_load_si512(s1);
  return f;
}

const FusedShuffle& fused_forward_shuffle() {
  static const FusedShuffle f = make_fused_shuffle({4, 2, 1});
  return f;
}
const FusedShuffle& fused_inverse_shuffle() {
  static const FusedShuffle f = make_fused_shuffle({1, 2, 4});
  return f;
}

// Twiddles of layer t = 4 resp. 2 for block b, expanded to the 8 butterfly lanes from the
// compact table (lane l uses table[N/(2t) + 8b/t + l/t]: 2 resp. 4 consecutive entries),
// instead of lane-expanded copies: the copies doubled the twiddle bytes a transform streams
// (512 KiB a prime and direction at N = 2^14, beyond L2 across a multiply's primes).
inline __m512i lanes_t4(const u64* first) {
  return _mm512_permutexvar_epi64(
      _mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0),
      _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(first))));
}
inline __m512i lanes_t2(const u64* first) {
  return _mm512_permutexvar_epi64(
      _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0),
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(first))));
}

// Moves the lanes of a 16-element block (x, y) into the next fused layer's arrangement.
inline void shuffle_lanes(__m512i& x, __m512i& y, __m512i to_x, __m512i to_y) {
  const __m512i xs = _mm512_permutex2var_epi64(x, to_x, y);
  y = _mm512_permutex2var_epi64(x, to_y, y);
  x = xs;
}

// Forward layers t = 4, 2, 1; w, wp: the full twiddle table and its Shoup constants.
template <bool Wide, bool final_reduce>
void forward_small_layers_fused(u64* a, std::size_t n, const u64* w, const u64* wp,
                                const Consts& c) {
  const FusedShuffle& f = fused_forward_shuffle();
  const u64 *w4 = w + n / 8, *wp4 = wp + n / 8, *w2 = w + n / 4, *wp2 = wp + n / 4;
  const u64 *w1 = w + n / 2, *wp1 = wp + n / 2;
  for (std::size_t b = 0; b < n / 16; ++b) {
    u64* p = a + 16 * b;
    __m512i x = _mm512_loadu_si512(p);
    __m512i y = _mm512_loadu_si512(p + 8);
    for (int s = 0; s < 3; ++s) {
      shuffle_lanes(x, y, f.into_x[s], f.into_y[s]);
      if (s == 0) {
        forward_butterfly<Wide>(x, y, lanes_t4(w4 + 2 * b), lanes_t4(wp4 + 2 * b), c);
      } else if (s == 1) {
        forward_butterfly<Wide>(x, y, lanes_t2(w2 + 4 * b), lanes_t2(wp2 + 4 * b), c);
      } else {
        forward_butterfly<Wide>(x, y, _mm512_loadu_si512(w1 + 8 * b),
                                _mm512_loadu_si512(wp1 + 8 * b), c);
      }
    }
    if constexpr (Wide) {
      // [0, 8q) -> [0, 4q), the lazy transform's output range.
      x = reduce_once(x, c.four_q);
      y = reduce_once(y, c.four_q);
    }
    if constexpr (final_reduce) {
      x = reduce_once(reduce_once(x, c.two_q), c.q);
      y = reduce_once(reduce_once(y, c.two_q), c.q);
    }
    _mm512_storeu_si512(p, _mm512_permutex2var_epi64(x, f.out_0, y));
    _mm512_storeu_si512(p + 8, _mm512_permutex2var_epi64(x, f.out_1, y));
  }
}

// Inverse layers t = 1, 2, 4 (the inverse layer with distance t has its N/(2t) twiddles
// from table index N/(2t), as the forward one).
// Reads the blocks from src (== a in place) and writes them to a.
template <bool Wide>
void inverse_small_layers_fused(const u64* src, u64* a, std::size_t n, const u64* w, const u64* wp,
                                const Consts& c) {
  const FusedShuffle& f = fused_inverse_shuffle();
  const u64 *w4 = w + n / 8, *wp4 = wp + n / 8, *w2 = w + n / 4, *wp2 = wp + n / 4;
  const u64 *w1 = w + n / 2, *wp1 = wp + n / 2;
  for (std::size_t b = 0; b < n / 16; ++b) {
    u64* p = a + 16 * b;
    __m512i x = _mm512_loadu_si512(src + 16 * b);
    __m512i y = _mm512_loadu_si512(src + 16 * b + 8);
    for (int s = 0; s < 3; ++s) {
      shuffle_lanes(x, y, f.into_x[s], f.into_y[s]);
      if (s == 0) {
        inverse_butterfly<Wide>(x, y, _mm512_loadu_si512(w1 + 8 * b),
                                _mm512_loadu_si512(wp1 + 8 * b), c);
      } else if (s == 1) {
        inverse_butterfly<Wide>(x, y, lanes_t2(w2 + 4 * b), lanes_t2(wp2 + 4 * b), c);
      } else {
        inverse_butterfly<Wide>(x, y, lanes_t4(w4 + 2 * b), lanes_t4(wp4 + 2 * b), c);
      }
    }
    _mm512_storeu_si512(p, _mm512_permutex2var_epi64(x, f.out_0, y));
    _mm512_storeu_si512(p + 8, _mm512_permutex2var_epi64(x, f.out_1, y));
  }
}

// The four quarter-spans p, p + quarter, p + 2 quarter, p + 3 quarter through `layers` (two
// radix-2 layers on four registers, in place), eight words of each at a time.
template <class Layers>
inline void over_quarters(u64* p, std::size_t quarter, Layers&& layers) {
#pragma GCC unroll 2
  for (std::size_t j = 0; j < quarter; j += 8) {
    __m512i v0 = _mm512_loadu_si512(p + j), v1 = _mm512_loadu_si512(p + quarter + j);
    __m512i v2 = _mm512_loadu_si512(p + 2 * quarter + j);
    __m512i v3 = _mm512_loadu_si512(p + 3 * quarter + j);
    layers(v0, v1, v2, v3);
    _mm512_storeu_si512(p + j, v0);
    _mm512_storeu_si512(p + quarter + j, v1);
    _mm512_storeu_si512(p + 2 * quarter + j, v2);
    _mm512_storeu_si512(p + 3 * quarter + j, v3);
  }
}

template <bool Wide, bool final_reduce>
void forward_avx512(u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const Consts c(tables.modulus().value());
  const u64* w = tables.forward_twiddles();
  const NttTables::IfmaTables& it = tables.ifma();
  const u64* wp = Wide ? tables.forward_twiddles_shoup() : it.fwd_shoup52.data();
  // Layers with t >= 8: group i has twiddle index m + i and spans [2it, 2it + 2t). Two layers
  // a pass where the second still has t >= 8 (radix 4): group i of layer t and groups 2i,
  // 2i + 1 of layer t/2 touch the same four quarter-spans, so the four registers loaded from
  // them go through both layers' butterflies (the same butterflies, twiddles and order as
  // one layer a pass, so every output is unchanged) and are stored once. At N = 2^14 a limb
  // is 128 KiB, beyond L1: half the passes halve the transform's L2 traffic; measured one
  // thread, 2^13 to 2^16, IFMA: forward 31-35% and inverse 24-31% faster. The wide (60-bit)
  // transform is bound by its butterflies' instructions, not by the traffic: two layers a
  // pass measured 0-8% slower there (more live registers), so it keeps one. The inner loops
  // are unrolled: one butterfly's chain (the emulated 64-bit products take about 30 cycles)
  // left the core waiting.
  std::size_t t = n, m = 1;
  while (t > 8) {
    t >>= 1;
    if (!Wide && t >= 16) {
      const std::size_t half = t / 2;
      for (std::size_t i = 0; i < m; ++i) {
        const __m512i w0 = _mm512_set1_epi64(static_cast<long long>(w[m + i]));
        const __m512i wp0 = _mm512_set1_epi64(static_cast<long long>(wp[m + i]));
        const __m512i w1 = _mm512_set1_epi64(static_cast<long long>(w[2 * m + 2 * i]));
        const __m512i wp1 = _mm512_set1_epi64(static_cast<long long>(wp[2 * m + 2 * i]));
        const __m512i w2 = _mm512_set1_epi64(static_cast<long long>(w[2 * m + 2 * i + 1]));
        const __m512i wp2 = _mm512_set1_epi64(static_cast<long long>(wp[2 * m + 2 * i + 1]));
        over_quarters(a + 2 * i * t, half, [&](__m512i& v0, __m512i& v1, __m512i& v2, __m512i& v3) {
          forward_butterfly<Wide>(v0, v2, w0, wp0, c);  // layer t
          forward_butterfly<Wide>(v1, v3, w0, wp0, c);
          forward_butterfly<Wide>(v0, v1, w1, wp1, c);  // layer t / 2
          forward_butterfly<Wide>(v2, v3, w2, wp2, c);
        });
      }
      m <<= 2;
      t = half;
      continue;
    }
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i wi = _mm512_set1_epi64(static_cast<long long>(w[m + i]));
      const __m512i wpi = _mm512_set1_epi64(static_cast<long long>(wp[m + i]));
      u64* x = a + 2 * i * t;
      u64* y = x + t;
#pragma GCC unroll 4
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i xv = _mm512_loadu_si512(x + j);
        __m512i yv = _mm512_loadu_si512(y + j);
        forward_butterfly<Wide>(xv, yv, wi, wpi, c);
        _mm512_storeu_si512(x + j, xv);
        _mm512_storeu_si512(y + j, yv);
      }
    }
    m <<= 1;
  }
  forward_small_layers_fused<Wide, final_reduce>(a, n, w, wp, c);
}

template <bool Wide, bool final_reduce>
void inverse_avx512(const u64* src, u64* a, const NttTables& tables) {
  const std::size_t n = tables.ring_dim();
  const Consts c(tables.modulus().value());
  const u64* w = tables.inverse_twiddles();
  const NttTables::IfmaTables& it = tables.ifma();
  const u64* wp = Wide ? tables.inverse_twiddles_shoup() : it.inv_shoup52.data();
  inverse_small_layers_fused<Wide>(src, a, n, w, wp, c);
  // Layers with 8 <= t <= N/4: h = N/(2t) groups, twiddle index h + i; two a pass where the
  // second still has 2t <= N/4 (radix 4, IFMA only, as the forward layers): groups 2g,
  // 2g + 1 of layer t and group g of layer 2t touch the same four quarter-spans.
  std::size_t t = 8;
  while (t <= n / 4) {
    const std::size_t h = n / (2 * t);
    if (!Wide && 2 * t <= n / 4) {
      for (std::size_t g = 0; g < h / 2; ++g) {
        const __m512i w0 = _mm512_set1_epi64(static_cast<long long>(w[h + 2 * g]));
        const __m512i wp0 = _mm512_set1_epi64(static_cast<long long>(wp[h + 2 * g]));
        const __m512i w1 = _mm512_set1_epi64(static_cast<long long>(w[h + 2 * g + 1]));
        const __m512i wp1 = _mm512_set1_epi64(static_cast<long long>(wp[h + 2 * g + 1]));
        const __m512i w2 = _mm512_set1_epi64(static_cast<long long>(w[h / 2 + g]));
        const __m512i wp2 = _mm512_set1_epi64(static_cast<long long>(wp[h / 2 + g]));
        over_quarters(a + 4 * g * t, t, [&](__m512i& v0, __m512i& v1, __m512i& v2, __m512i& v3) {
          inverse_butterfly<Wide>(v0, v1, w0, wp0, c);  // layer t
          inverse_butterfly<Wide>(v2, v3, w1, wp1, c);
          inverse_butterfly<Wide>(v0, v2, w2, wp2, c);  // layer 2t
          inverse_butterfly<Wide>(v1, v3, w2, wp2, c);
        });
      }
      t <<= 2;
      continue;
    }
    for (std::size_t i = 0; i < h; ++i) {
      const __m512i wi = _mm512_set1_epi64(static_cast<long long>(w[h + i]));
      const __m512i wpi = _mm512_set1_epi64(static_cast<long long>(wp[h + i]));
      u64* x = a + 2 * i * t;
      u64* y = x + t;
#pragma GCC unroll 4
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i xv = _mm512_loadu_si512(x + j);
        __m512i yv = _mm512_loadu_si512(y + j);
        inverse_butterfly<Wide>(xv, yv, wi, wpi, c);
        _mm512_storeu_si512(x + j, xv);
        _mm512_storeu_si512(y + j, yv);
      }
    }
    t <<= 1;
  }
  // Last layer (t = N/2) with 1/N folded in.
  const __m512i ni = _mm512_set1_epi64(static_cast<long long>(tables.n_inverse()));
  const __m512i nip =
      _mm512_set1_epi64(static_cast<long long>(Wide ? tables.n_inverse_shoup() : it.n_inv_shoup52));
  const __m512i wl = _mm512_set1_epi64(static_cast<long long>(tables.last_twiddle_scaled()));
  const __m512i wlp = _mm512_set1_epi64(static_cast<long long>(
      Wide ? tables.last_twiddle_scaled_shoup() : it.last_twiddle_scaled_shoup52));
  u64* x = a;
  u64* y = a + n / 2;
  for (std::size_t j = 0; j < n / 2; j += 8) {
    const __m512i xv = _mm512_loadu_si512(x + j);
    const __m512i yv = _mm512_loadu_si512(y + j);
    const __m512i s = _mm512_add_epi64(xv, yv);
    __m512i xo, yo;
    if constexpr (Wide) {
      // x, y in [0, 4q): the products of s < 8q and d in (0, 8q) in [0, 4q), back to [0, 2q).
      const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(xv, c.four_q), yv);
      xo = reduce_once(mul_shoup64_lazy4_avx512(s, ni, nip, c.q), c.two_q);
      yo = reduce_once(mul_shoup64_lazy4_avx512(d, wl, wlp, c.q), c.two_q);
    } else {
      const __m512i d = _mm512_add_epi64(_mm512_sub_epi64(xv, yv), c.two_q);
      xo = mul_shoup52_lazy(s, ni, nip, c);
      yo = mul_shoup52_lazy(d, wl, wlp, c);
    }
    if constexpr (final_reduce) {
      xo = reduce_once(xo, c.q);
      yo = reduce_once(yo, c.q);
    }
    _mm512_storeu_si512(x + j, xo);
    _mm512_storeu_si512(y + j, yo);
  }
}

}  // namespace

// Each entry point picks the multiplier by the tables' Shoup width (ntt.cpp builds the
// lane tables with beta = 2^52 for q < 2^50, 2^64 otherwise).
void ntt_forward_lazy_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? forward_avx512<false, false>(a, tables)
                        : forward_avx512<true, false>(a, tables);
}
void ntt_forward_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? forward_avx512<false, true>(a, tables)
                        : forward_avx512<true, true>(a, tables);
}
void ntt_inverse_lazy_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? inverse_avx512<false, false>(a, a, tables)
                        : inverse_avx512<true, false>(a, a, tables);
}
void ntt_inverse_ifma(u64* a, const NttTables& tables) {
  tables.ifma_capable() ? inverse_avx512<false, true>(a, a, tables)
                        : inverse_avx512<true, true>(a, a, tables);
}
void ntt_inverse_ifma(const u64* in, u64* out, const NttTables& tables) {
  tables.ifma_capable() ? inverse_avx512<false, true>(in, out, tables)
                        : inverse_avx512<true, true>(in, out, tables);
}

}  // namespace hec::math::detail
