// Google Benchmark: digest throughput over one 256 MiB buffer (the container digest's job,
// core/serialize.h): our BLAKE3-256 (core/blake3.h) on the portable (kernel:0) and AVX-512
// (kernel:1) kernels, single thread and (threads:2) update_parallel's 1 MiB subtrees on two
// threads, next to OpenSSL's SHA-256 (EVP, SHA extensions where the CPU has them), the digest
// of format 5. Bytes processed = the buffer's size, so the reports are bytes per second.
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <random>
#include <vector>

#include "core/blake3.h"

namespace {

constexpr std::size_t kBytes = std::size_t{256} << 20;

const std::vector<std::uint8_t>& input() {
  static const std::vector<std::uint8_t> data = [] {
    std::vector<std::uint8_t> d(kBytes);
    std::mt19937_64 rng(22);  // benchmark input only
    for (std::size_t i = 0; i + 8 <= d.size(); i += 8) {
      const std::uint64_t w = rng();
      for (int j = 0; j < 8; ++j) d[i + j] = static_cast<std::uint8_t>(w >> (8 * j));
    }
    return d;
  }();
  return data;
}

void BM_Blake3(benchmark::State& state) {
  const auto kernel =
      state.range(0) == 1 ? hec::core::Blake3Kernel::kAvx512 : hec::core::Blake3Kernel::kPortable;
  const int threads = static_cast<int>(state.range(1));
  if (!hec::core::blake3_kernel_available(kernel)) {
    state.SkipWithError("CPU lacks AVX-512F");
    return;
  }
  const auto& data = input();
  for (auto _ : state) {
    hec::core::Blake3 h(kernel);
    h.update_parallel({{data.data(), data.size()}}, threads);
    benchmark::DoNotOptimize(h.finalize());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Blake3)
    ->ArgNames({"kernel", "threads"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Sha256(benchmark::State& state) {
  const auto& data = input();
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char out[32];
  for (auto _ : state) {
    unsigned int length = 0;
    if (EVP_DigestInit_ex2(ctx, md, nullptr) != 1 ||
        EVP_DigestUpdate(ctx, data.data(), data.size()) != 1 ||
        EVP_DigestFinal_ex(ctx, out, &length) != 1) {
      state.SkipWithError("OpenSSL SHA-256 failed");
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Sha256)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
