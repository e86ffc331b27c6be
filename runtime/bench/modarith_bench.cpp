// Google Benchmark: scalar Barrett versus Shoup modular multiplication (ns per product).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "math/modarith.h"

namespace {

using hec::math::u64;

void BM_MulModBarrett(benchmark::State& state) {
  const hec::math::Modulus m(1125899906826241ULL);
  std::mt19937_64 rng(1);
  std::vector<u64> a(4096), b(4096);
  for (size_t i = 0; i < a.size(); ++i) a[i] = rng() % m.value(), b[i] = rng() % m.value();
  for (auto _ : state) {
    u64 acc = 0;
    for (size_t i = 0; i < a.size(); ++i) acc ^= hec::math::mul_mod(a[i], b[i], m);
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(a.size()));
}
BENCHMARK(BM_MulModBarrett);

void BM_MulShoup(benchmark::State& state) {
  const u64 q = 1125899906826241ULL;
  std::mt19937_64 rng(1);
  std::vector<u64> a(4096);
  for (auto& x : a) x = rng() % q;
  const u64 w = rng() % q, w_shoup = hec::math::shoup_precompute(w, q);
  for (auto _ : state) {
    u64 acc = 0;
    for (u64 x : a) acc ^= hec::math::mul_shoup(x, w, w_shoup, q);
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(a.size()));
}
BENCHMARK(BM_MulShoup);

}  // namespace

BENCHMARK_MAIN();
