// Timing driver for `bench/run ckks`: median wall times of the RNS-CKKS operations at a given
// parameter set, one JSON object per operation on stdout. The set is given by the same bit
// sizes the OpenFHE reference (bench/ckks_reference.py) is configured with: ring dimension,
// first-prime bits, scaling-prime bits and count, special primes (count x bits), dnum:
//   hec_bench_ckks --log-n 13 --first-bits 45 --scale-bits 35 --levels 3 --special 1
//                  --special-bits 60 --dnum 4 [--repeats R] [--dot PAIRS]
// Threads follow the runtime's cap (HEC_THREADS); the benchmark sets HEC_THREADS=1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "bench/memory_floor.h"
#include "bench/repeats.h"
#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/evaluator.h"
#include "ckks/kernels.h"
#include "ckks/keys.h"
#include "math/parallel.h"

using namespace hec::ckks;

namespace {

// Wall time by default; with --clock cpu, this thread's CPU time (for tuning on a loaded
// machine: it does not count time spent waiting for a core).
bool g_cpu_clock = false;

double now_seconds() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median_seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warm-up
  std::vector<double> t;
  double total = 0;
  while (hec::bench::another_repeat(t.size(), repeats, total)) {
    const double start = now_seconds();
    fn();
    t.push_back(now_seconds() - start);
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void emit(const char* op, double seconds) {
  std::printf("{\"op\": \"%s\", \"seconds\": %.9g}\n", op, seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int log_n = 0, dnum = 1, repeats = 7, dot_pairs = 0;
  int first_bits = 0, scale_bits = 0, levels = 0, special = 0, special_bits = 60;
  std::string ops;  // ",op,op,": only these rows (profiling); empty: all
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--log-n")
      log_n = std::stoi(value);
    else if (key == "--first-bits")
      first_bits = std::stoi(value);
    else if (key == "--scale-bits")
      scale_bits = std::stoi(value);
    else if (key == "--levels")
      levels = std::stoi(value);
    else if (key == "--special")
      special = std::stoi(value);
    else if (key == "--special-bits")
      special_bits = std::stoi(value);
    else if (key == "--dnum")
      dnum = std::stoi(value);
    else if (key == "--repeats")
      repeats = std::stoi(value);
    else if (key == "--dot")
      dot_pairs = std::stoi(value);
    else if (key == "--clock")
      g_cpu_clock = value == "cpu";
    else if (key == "--ops")
      ops = "," + value + ",";
    else {
      std::fprintf(stderr, "hec_bench_ckks: unknown argument %s\n", key.c_str());
      return 2;
    }
  }
  if (log_n == 0 || first_bits == 0 || special == 0) {
    std::fprintf(stderr, "usage: see the comment at the top of ckks_bench.cpp\n");
    return 2;
  }
  // Secure by default: a set beyond the 128-bit table is refused here, as in the runtime.
  const auto ctx =
      make_context(Parameters::from_bit_sizes(LogN(log_n), {first_bits}, scale_bits, levels,
                                              std::vector<int>(special, special_bits), dnum));
  std::fprintf(stderr, "%s\n", ctx->params().describe().c_str());
  const Level top(ctx->params().max_level());
  Encoder encoder(ctx);
  KeyGenerator gen(ctx);
  const SecretKey sk = gen.secret_key();
  const PublicKey pk = gen.public_key(sk);
  Encryptor encryptor(ctx, pk);
  Evaluator eval(ctx);
  std::vector<double> values(ctx->slots());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.5 + 0.001 * (i % 100);
  const auto& chain = ctx->params().chain();
  const double scale = static_cast<double>(chain.back());

  if (dot_pairs > 0) {
    std::vector<Ciphertext> a, b;
    const Plaintext pt = encoder.encode(values, top, scale);
    for (int i = 0; i < dot_pairs; ++i) {
      a.push_back(encryptor.encrypt(pt));
      b.push_back(encryptor.encrypt(pt));
    }
    emit("dot", median_seconds([&] { (void)dot(ctx, a, b); }, repeats));
    return 0;
  }

  const RelinKey rk = gen.relin_key(sk);
  std::vector<int> steps;
  for (int s = 1; s <= 16; ++s) steps.push_back(s);
  const GaloisKeys gk = gen.galois_keys(sk, steps);
  const Plaintext pt = encoder.encode(values, top, scale);
  const Ciphertext x = encryptor.encrypt(pt), y = encryptor.encrypt(pt);
  const Ciphertext prod = eval.multiply_relin(x, y, rk);

  const auto want = [&](const char* op) {
    std::string key = ",";
    key += op;
    key += ',';
    return ops.empty() || ops.find(key) != std::string::npos;
  };
  // Every operation writes into an existing output, as the Lattigo reference's Encrypt(pt,
  // ct), MulRelin(x, y, out), Mul, Rescale(ctIn, ctOut) and Rotate(ctIn, k, ctOut) do (a
  // fresh output measured its page faults as much as the operation: at 2^16 a ciphertext is
  // 26 MB, a third of an encryption's time went to clearing new pages).
  Ciphertext out = prod;
  if (want("encrypt"))
    emit("encrypt", median_seconds([&] { encryptor.encrypt(pt, out); }, repeats));
  if (want("mul_relin"))
    emit("mul_relin", median_seconds([&] { eval.multiply_relin(x, y, rk, out); }, repeats));
  if (want("mul_norelin"))
    emit("mul_norelin", median_seconds([&] { eval.multiply(x, y, out); }, repeats));
  if (want("rescale")) emit("rescale", median_seconds([&] { eval.rescale(prod, out); }, repeats));
  if (want("rotate")) emit("rotate", median_seconds([&] { eval.rotate(x, 1, gk, out); }, repeats));
  if (want("hoisted16"))
    emit("hoisted16", median_seconds([&] { (void)eval.rotate_hoisted(x, steps, gk); }, repeats));
  // Into an existing ciphertext, as Lattigo's Add writes into a preallocated output (the
  // allocating add measured page faults more than additions: 0.108 ms against Lattigo's
  // 0.081 at 2^14).
  Ciphertext sum = x;
  if (want("add")) {
    emit("add", median_seconds([&] { eval.add_inplace(sum, y); }, repeats));
    // Its memory floor: the same limbs read and written, split over the threads the same way,
    // with no arithmetic (bench/memory_floor.h).
    const std::size_t limbs = sum.size() * sum.limbs;
    emit("add_floor", median_seconds(
                          [&] {
                            hec::math::parallel_for(
                                limbs,
                                [&](std::size_t idx) {
                                  const std::size_t k = idx / sum.limbs, i = idx % sum.limbs;
                                  hec::bench::floor_read2_write1(sum.limb(k, i), y.limb(k, i),
                                                                 sum.n);
                                },
                                sum.n);
                          },
                          repeats));
  }
  return 0;
}
