// Google Benchmark: pointwise RNS polynomial kernels (math/poly.h) on one limb of N
// coefficients, 50-bit prime, N = 2^12 ... 2^16, single thread: add, pointwise multiply,
// multiply-add, and an 8-term lazy multiply-accumulate, on the portable (path:0) and AVX-512
// (path:1) kernels. Items = N coefficients (times the number of terms for the accumulation).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly.h"
#include "math/primes.h"

namespace {

using hec::math::PolyForm;
using hec::math::RnsPoly;

RnsPoly random_eval_poly(const std::shared_ptr<const hec::math::RnsContext>& ctx,
                         std::mt19937_64& rng) {
  RnsPoly p(ctx, 1, PolyForm::kEvaluation);
  for (std::size_t c = 0; c < p.ring_dim(); ++c) p.limb(0)[c] = rng() % p.modulus(0).value();
  return p;
}

enum class Kernel { kAdd, kMultiply, kMultiplyAdd, kMultiplyAccumulate8 };

template <Kernel kernel>
void BM_Pointwise(benchmark::State& state) {
  hec::math::set_thread_cap(1);
  const std::size_t n = std::size_t{1} << state.range(0);
  const bool ifma = state.range(1) == 1;
  if (ifma && !hec::math::cpu_has_avx512_ifma()) {
    state.SkipWithError("CPU lacks AVX-512 IFMA");
    return;
  }
  hec::math::force_portable_path(!ifma);
  const auto ctx = hec::math::RnsContext::create(n, hec::math::ntt_primes(50, 1, n));
  std::mt19937_64 rng(1);  // benchmark input only
  RnsPoly a = random_eval_poly(ctx, rng), b = random_eval_poly(ctx, rng);
  std::vector<RnsPoly> xs, ys;
  std::vector<const RnsPoly*> px, py;
  for (int k = 0; k < 8; ++k) {
    xs.push_back(random_eval_poly(ctx, rng));
    ys.push_back(random_eval_poly(ctx, rng));
  }
  for (int k = 0; k < 8; ++k) {
    px.push_back(&xs[k]);
    py.push_back(&ys[k]);
  }
  for (auto _ : state) {
    if constexpr (kernel == Kernel::kAdd) {
      hec::math::add_inplace(a, b);
    } else if constexpr (kernel == Kernel::kMultiply) {
      hec::math::multiply_inplace(a, b);
    } else if constexpr (kernel == Kernel::kMultiplyAdd) {
      hec::math::multiply_add_inplace(a, xs[0], ys[0]);
    } else {
      hec::math::multiply_accumulate(a, px, py);
    }
    benchmark::ClobberMemory();
  }
  hec::math::force_portable_path(false);
  const int64_t terms = kernel == Kernel::kMultiplyAccumulate8 ? 8 : 1;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n) * terms);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int path : {0, 1}) {
    for (int log_n = 12; log_n <= 16; ++log_n) b->Args({log_n, path});
  }
  b->ArgNames({"logN", "path"});
}

BENCHMARK(BM_Pointwise<Kernel::kAdd>)->Name("BM_Add")->Apply(Args);
BENCHMARK(BM_Pointwise<Kernel::kMultiply>)->Name("BM_Multiply")->Apply(Args);
BENCHMARK(BM_Pointwise<Kernel::kMultiplyAdd>)->Name("BM_MultiplyAdd")->Apply(Args);
BENCHMARK(BM_Pointwise<Kernel::kMultiplyAccumulate8>)->Name("BM_MultiplyAccumulate8")->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
