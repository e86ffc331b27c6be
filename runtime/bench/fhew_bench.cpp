// End-to-end FHEW measurements for bench/fhew.py: key generation time, evaluation-key size
// (in memory and serialized), and the median wall time of one bootstrapped NAND, for one
// parameter set (STD128 GINX or AP), on the current thread cap (bench/fhew.py runs it with
// HEC_THREADS=1). Prints one JSON object.
//
// usage: hec_bench_fhew ginx|ap [repeats] [key-file|-] [batch]
// With batch > 0 it also times Context::eval_batch on `batch` independent NAND gates at the
// current thread cap (HEC_THREADS) and reports wall milliseconds per gate. Both loops follow
// the repeat rule of bench/repeats.h (at least `repeats` timed runs after one warm-up, more
// until they fill a quarter second), as the OpenFHE and tfhe-rs sides of bench/fhew.py do.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/repeats.h"
#include "fhew/fhew.h"
#include "fhew/serialize.h"
#include "math/parallel.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of this thread: on a shared machine it does not count time spent waiting for a core.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Resident set size in bytes (/proc/self/statm), for the key-size comparison with OpenFHE.
std::uint64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%llu %llu", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

// The median of `xs` (the mean of the middle two when their number is even).
double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 == 1 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hec::fhew;
  if (argc < 2 || (std::strcmp(argv[1], "ginx") != 0 && std::strcmp(argv[1], "ap") != 0)) {
    std::fprintf(stderr, "usage: %s ginx|ap [repeats] [key-file]\n", argv[0]);
    return 2;
  }
  const BlindRotation method =
      std::strcmp(argv[1], "ginx") == 0 ? BlindRotation::kGinx : BlindRotation::kAp;
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 21;
  const Context ctx(Params::std128(method));
  auto t0 = std::chrono::steady_clock::now();
  const SecretKey sk = ctx.keygen_secret();
  const std::uint64_t rss0 = rss_bytes();
  const EvalKey ek = ctx.keygen_eval(sk);
  const double keygen_s = seconds_since(t0);
  const std::uint64_t key_rss = rss_bytes() - rss0;

  std::uint64_t file_bytes = 0;
  if (argc > 3 && std::strcmp(argv[3], "-") != 0) {
    const std::filesystem::path path = argv[3];
    save_eval_key(path, ek);
    file_bytes = std::filesystem::file_size(path);
    std::filesystem::remove(path);
  }

  std::vector<double> ms, cpu_ms;
  double total_s = 0;
  bool all_correct = true;
  for (int r = 0; r == 0 || hec::bench::another_repeat(ms.size(), repeats, total_s); ++r) {
    const bool x = r % 2, y = (r / 2) % 2;
    const Ciphertext cx = ctx.encrypt(sk, x), cy = ctx.encrypt(sk, y);
    const double c0 = thread_cpu_seconds();
    t0 = std::chrono::steady_clock::now();
    const Ciphertext out = ctx.eval(ek, Gate::kNand, cx, cy);
    const double t = seconds_since(t0) * 1e3;
    const double c = (thread_cpu_seconds() - c0) * 1e3;
    if (r > 0) {  // the first run warms caches and pages in the key
      ms.push_back(t);
      cpu_ms.push_back(c);
      total_s += t / 1e3;
    }
    all_correct = all_correct && ctx.decrypt(sk, out) == !(x && y);
  }
  double batch_ms_per_gate = 0;
  std::size_t batch_repeats = 0;
  const int batch = argc > 4 ? std::max(0, std::atoi(argv[4])) : 0;
  if (batch > 0) {
    std::vector<Ciphertext> in;
    for (int i = 0; i < batch + 1; ++i) in.push_back(ctx.encrypt(sk, i % 3 == 0));
    std::vector<Context::GateOp> ops;
    for (int i = 0; i < batch; ++i) ops.push_back({Gate::kNand, &in[i], &in[i + 1]});
    std::vector<double> per_gate;
    double batch_total_s = 0;
    for (int r = 0; r == 0 || hec::bench::another_repeat(per_gate.size(), repeats, batch_total_s);
         ++r) {
      t0 = std::chrono::steady_clock::now();
      const auto out = ctx.eval_batch(ek, ops);
      const double t = seconds_since(t0);
      if (r > 0) {  // the first batch starts the thread pool
        per_gate.push_back(t * 1e3 / batch);
        batch_total_s += t;
      }
      for (int i = 0; i < batch; ++i) {
        all_correct =
            all_correct && ctx.decrypt(sk, out[i]) == !((i % 3 == 0) && ((i + 1) % 3 == 0));
      }
    }
    batch_repeats = per_gate.size();
    batch_ms_per_gate = median(per_gate);
  }
  std::printf(
      "{\"method\": \"%s\", \"params\": \"%s\", \"n\": %u, \"q\": %u, \"N\": %u, \"Q\": %llu, "
      "\"lwe_secret\": \"%s\", \"q_ks\": %u, \"failure_log2\": %.1f, "
      "\"keygen_s\": %.4f, \"eval_key_memory_bytes\": %zu, \"eval_key_rss_bytes\": %llu, "
      "\"eval_key_file_bytes\": %llu, "
      "\"nand_ms_median\": %.4f, \"nand_ms_min\": %.4f, \"nand_cpu_ms_median\": %.4f, "
      "\"batch\": %d, \"threads\": %d, \"batch_ms_per_gate\": %.4f, \"batch_repeats\": %zu, "
      "\"repeats\": %zu, \"correct\": %s}\n",
      blind_rotation_name(method), ctx.params().name.c_str(), ctx.params().lwe_dim,
      ctx.params().lwe_modulus, ctx.params().ring_dim,
      static_cast<unsigned long long>(ctx.params().ring_modulus),
      lwe_secret_name(ctx.params().lwe_secret), ctx.params().ks_modulus,
      noise_model(ctx.params()).failure_log2, keygen_s, ek.memory_bytes(),
      static_cast<unsigned long long>(key_rss), static_cast<unsigned long long>(file_bytes),
      median(ms), *std::min_element(ms.begin(), ms.end()), median(cpu_ms), batch,
      hec::math::thread_cap(), batch_ms_per_gate, batch_repeats, ms.size(),
      all_correct ? "true" : "false");
  return all_correct ? 0 : 1;
}
