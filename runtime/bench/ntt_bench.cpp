// Google Benchmark: forward and inverse negacyclic NTT (math/ntt.h) per limb, both kernel
// paths, N = 2^12 ... 2^16 (and 2^17), one 50-bit prime, single thread. Reports the time per
// transform and, as the counter "ns_per_butterfly", the time per butterfly (N/2 log2 N).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "math/aligned.h"
#include "math/cpu_features.h"
#include "math/ntt.h"
#include "math/primes.h"

namespace {

using hec::math::KernelPath;
using hec::math::u64;

enum class Direction { kForward, kInverse };

template <Direction direction>
void BM_Ntt(benchmark::State& state) {
  const std::size_t n = std::size_t{1} << state.range(0);
  const auto path = static_cast<KernelPath>(state.range(1));
  if (path == KernelPath::kAvx512Ifma && !hec::math::cpu_has_avx512_ifma()) {
    state.SkipWithError("CPU lacks AVX-512 IFMA");
    return;
  }
  hec::math::force_portable_path(path == KernelPath::kPortable);
  const hec::math::Modulus q(hec::math::ntt_primes(50, 1, n)[0]);
  const hec::math::NttTables tables(n, q);
  // Benchmark input only (not secret).
  std::mt19937_64 rng(1);
  hec::math::AlignedU64Vector a(n);
  for (u64& x : a) x = rng() % q.value();
  for (auto _ : state) {
    if constexpr (direction == Direction::kForward) {
      hec::math::ntt_forward_inplace(a.data(), tables);
    } else {
      hec::math::ntt_inverse_inplace(a.data(), tables);
    }
    benchmark::ClobberMemory();
  }
  hec::math::force_portable_path(false);
  const double butterflies = static_cast<double>(n / 2) * state.range(0);
  state.counters["ns_per_butterfly"] =
      benchmark::Counter(butterflies * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(hec::math::kernel_path_name(path));
}

void Args(benchmark::internal::Benchmark* b) {
  for (int path :
       {static_cast<int>(KernelPath::kPortable), static_cast<int>(KernelPath::kAvx512Ifma)}) {
    for (int log_n = 12; log_n <= 17; ++log_n) b->Args({log_n, path});
  }
  b->ArgNames({"logN", "path"});
}

BENCHMARK(BM_Ntt<Direction::kForward>)->Name("BM_NttForward")->Apply(Args);
BENCHMARK(BM_Ntt<Direction::kInverse>)->Name("BM_NttInverse")->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
