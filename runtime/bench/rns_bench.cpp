// Google Benchmark: fast base conversion (math/rns.h), approximate and exact, from k = 8
// limbs of Q to l = 4 limbs of P (a hybrid key-switching shape), 50-bit primes,
// N = 2^12 ... 2^16, single thread, on the portable (path:0) and AVX-512 IFMA (path:1)
// kernels. Items = N coefficients.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/primes.h"
#include "math/rns.h"

namespace {

using hec::math::u64;

template <bool exact>
void BM_BaseConvert(benchmark::State& state) {
  hec::math::set_thread_cap(1);
  const std::size_t n = std::size_t{1} << state.range(0);
  const bool ifma = state.range(1) == 1;
  if (ifma && !hec::math::cpu_has_avx512_ifma()) {
    state.SkipWithError("CPU lacks AVX-512 IFMA");
    return;
  }
  hec::math::force_portable_path(!ifma);
  const std::vector<u64> primes = hec::math::ntt_primes(50, 12, 1 << 16);
  const hec::math::RnsBase from(std::vector<u64>(primes.begin(), primes.begin() + 8));
  const hec::math::RnsBase to(std::vector<u64>(primes.begin() + 8, primes.end()));
  const hec::math::BaseConverter conv(from, to);
  std::mt19937_64 rng(1);  // benchmark input only
  std::vector<u64> in(from.size() * n), out(to.size() * n);
  for (std::size_t i = 0; i < from.size(); ++i) {
    for (std::size_t c = 0; c < n; ++c) in[i * n + c] = rng() % from[i].value();
  }
  for (auto _ : state) {
    if constexpr (exact) {
      conv.convert_exact(in.data(), out.data(), n);
    } else {
      conv.convert_approx(in.data(), out.data(), n);
    }
    benchmark::ClobberMemory();
  }
  hec::math::force_portable_path(false);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

void Args(benchmark::internal::Benchmark* b) {
  for (int path : {0, 1}) {
    for (int log_n = 12; log_n <= 16; ++log_n) b->Args({log_n, path});
  }
  b->ArgNames({"logN", "path"});
}

BENCHMARK(BM_BaseConvert<false>)->Name("BM_BaseConvertApprox8to4")->Apply(Args);
BENCHMARK(BM_BaseConvert<true>)->Name("BM_BaseConvertExact8to4")->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
