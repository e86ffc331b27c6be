// Timing driver for `bench/run bfv`: median CPU times of BFV operations at one parameter set,
// one JSON object per operation on stdout ({"op": ..., "seconds": ...}), after one line
// describing the parameters ({"params": ...}). The set matches what the OpenFHE reference
// (bench/bfv_reference.py) is configured with:
//   hec_bench_bfv --log-n 13 --limbs 2 --q-bits 60 --t 65537 --dnum 2 [--special 1]
//                 [--repeats R] [--ops all|mult]
//   hec_bench_bfv --log-n 14 --q-primes q0,q1,... --p-ks-primes p0,... --t 65537 --dnum 2
//                 --ops noise --seeds S
// With --q-primes / --p-ks-primes the primes of Q and P_ks are exactly those (the noise
// comparison gives OpenFHE's primes); P_mult is generated as usual.
// Operations: multiply_relin (HPS multiply + hybrid relinearization), multiply (no relin),
// multiply_plain (prepared plaintext, as OpenFHE's packed plaintexts are; into an output that
// the warm-up call allocates, as the references write into theirs), rotate (row
// rotation by one), encrypt (public key). Threads follow HEC_THREADS (the benchmark sets 1).
// --ops noise: for each of S independent key sets, the noise budget (Decryptor::noise_budget)
// of a fresh public-key encryption of random batched values and of its product with another
// (multiply + relinearize), one {"seed", "fresh", "mult_relin"} line each; the product's
// decryption is checked against the plaintext product (exit 1 if wrong).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/memory_floor.h"
#include "bench/repeats.h"
#include "bfv/encoder.h"
#include "bfv/scheme.h"
#include "math/parallel.h"

using namespace hec::bfv;

namespace {

// Process CPU time by default (single-threaded runs: on a machine shared with other builds,
// wall time mostly measures the scheduler; CPU time is what the operation costs); with
// --clock wall, wall time (runs with more threads, whose CPU times add up).
bool g_wall_clock = false;

double clock_seconds() {
  timespec ts;
  clock_gettime(g_wall_clock ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median_seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warm-up
  std::vector<double> t;
  double total = 0;
  while (hec::bench::another_repeat(t.size(), repeats, total)) {
    const double start = clock_seconds();
    fn();
    t.push_back(clock_seconds() - start);
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void emit(const char* op, double seconds) {
  std::printf("{\"op\": \"%s\", \"seconds\": %.9g}\n", op, seconds);
  std::fflush(stdout);
}

std::vector<u64> parse_list(const std::string& s) {
  std::vector<u64> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoull(item));
  return out;
}

int noise(const std::shared_ptr<const BfvContext>& ctx, int seeds) {
  const std::size_t n = ctx->ring_dim();
  const u64 t = ctx->plain_modulus();
  std::mt19937_64 data(1);  // plaintext values only; keys and encryption use the CSPRNG
  Encoder encoder(ctx);
  Evaluator ev(ctx);
  for (int seed = 0; seed < seeds; ++seed) {
    KeyGenerator keygen(ctx);
    const PublicKey pk = keygen.make_public_key();
    const RelinKey rk = keygen.make_relin_key();
    Encryptor enc(ctx, pk);
    Decryptor dec(ctx, keygen.secret_key());
    std::vector<u64> x(n), y(n), want(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = data() % t;
      y[i] = data() % t;
      want[i] = static_cast<u64>(static_cast<hec::math::u128>(x[i]) * y[i] % t);
    }
    const Ciphertext a = enc.encrypt(encoder.encode_batch(x));
    const Ciphertext b = enc.encrypt(encoder.encode_batch(y));
    const double fresh = dec.noise_budget(a);
    Ciphertext prod = ev.multiply(a, b);
    ev.relinearize_inplace(prod, rk);
    const double after = dec.noise_budget(prod);
    if (encoder.decode_batch(dec.decrypt(prod)) != want) {
      std::fprintf(stderr, "hec_bench_bfv: the product decrypted wrongly\n");
      return 1;
    }
    std::printf("{\"seed\": %d, \"fresh\": %.6f, \"mult_relin\": %.6f}\n", seed, fresh, after);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int log_n = 13, limbs = 2, q_bits = 60, dnum = 1, special = 1, repeats = 7, seeds = 5;
  unsigned long long t = 65537;
  std::string ops = "all";
  std::vector<u64> q_primes, p_ks_primes;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--log-n")
      log_n = std::stoi(value);
    else if (key == "--limbs")
      limbs = std::stoi(value);
    else if (key == "--q-bits")
      q_bits = std::stoi(value);
    else if (key == "--t")
      t = std::stoull(value);
    else if (key == "--dnum")
      dnum = std::stoi(value);
    else if (key == "--special")
      special = std::stoi(value);
    else if (key == "--repeats")
      repeats = std::stoi(value);
    else if (key == "--ops")
      ops = value;
    else if (key == "--seeds")
      seeds = std::stoi(value);
    else if (key == "--q-primes")
      q_primes = parse_list(value);
    else if (key == "--p-ks-primes")
      p_ks_primes = parse_list(value);
    else if (key == "--clock" && (value == "cpu" || value == "wall"))
      g_wall_clock = value == "wall";
    else {
      std::fprintf(stderr, "hec_bench_bfv: unknown argument %s\n", key.c_str());
      return 2;
    }
  }
  if (!q_primes.empty()) limbs = static_cast<int>(q_primes.size());
  BfvParams params = BfvParams::generate(log_n, t, static_cast<std::size_t>(limbs), q_bits,
                                         static_cast<std::size_t>(dnum), special != 0, true);
  if (!q_primes.empty()) {
    // Given primes replace the generated ones (same count; P_mult stays below 2^50, so it
    // cannot collide with them, and BfvContext validates the whole set again).
    params.q = q_primes;
    params.p_ks = p_ks_primes;
  }
  const auto ctx = BfvContext::create(params);
  std::printf("{\"params\": \"%s\"}\n", ctx->describe().c_str());
  if (ops == "noise") return noise(ctx, seeds);
  const std::size_t n = ctx->ring_dim();
  KeyGenerator keygen(ctx);
  const PublicKey pk = keygen.make_public_key();
  const RelinKey rk = keygen.make_relin_key();
  Encoder encoder(ctx);
  Encryptor enc(ctx, pk);
  Evaluator ev(ctx);
  std::vector<u64> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (i * 31 + 7) % t;
  const Plaintext pt = ctx->batching() ? encoder.encode_batch(v) : encoder.encode_coefficients(v);
  const Ciphertext a = enc.encrypt(pt), b = enc.encrypt(pt);

  if (ops == "rotate-only") {
    const std::vector<long long> steps = {1};
    const GaloisKeys gk = keygen.make_galois_keys(steps, false);
    Ciphertext c = a;
    emit("rotate", median_seconds([&] { ev.rotate_rows_inplace(c, 1, gk); }, repeats));
    return 0;
  }
  emit("multiply_relin", median_seconds([&] { (void)ev.multiply_relin(a, b, rk); }, repeats));
  emit("multiply", median_seconds([&] { (void)ev.multiply(a, b); }, repeats));
  if (ops == "mult") return 0;
  const PlaintextNtt pn = ev.prepare_plain(pt);
  Ciphertext product;  // preallocated by the warm-up call, as the references' outputs are
  emit("multiply_plain", median_seconds([&] { ev.multiply_plain(a, pn, product); }, repeats));
  {
    // Its memory floor (bench/memory_floor.h), split over the threads as multiply_plain is:
    // the least any product needs (the ciphertext and the plaintext read, the output
    // written), which is also ours (its Shoup constants are computed, not read).
    const std::size_t limbs = a.polys[0].num_limbs();
    const bool stream = a.polys.size() * limbs * n >= (std::size_t{1} << 17);
    const auto floor_pass = [&] {
      hec::math::parallel_for(limbs, [&](std::size_t i) {
        const u64* w = pn.poly.limb(i);
        std::size_t k = 0;
        for (; k + 2 <= a.polys.size(); k += 2) {  // two components a pass, as multiply_plain
          hec::bench::floor_read_write_to2(product.polys[k].limb(i), product.polys[k + 1].limb(i),
                                           a.polys[k].limb(i), a.polys[k + 1].limb(i), w, nullptr,
                                           n, stream);
        }
        for (; k < a.polys.size(); ++k) {
          hec::bench::floor_read_write_to(product.polys[k].limb(i), a.polys[k].limb(i), w, nullptr,
                                          n, stream);
        }
      });
    };
    emit("multiply_plain_floor", median_seconds(floor_pass, repeats));
  }
  if (ctx->batching()) {
    const std::vector<long long> steps = {1};
    const GaloisKeys gk = keygen.make_galois_keys(steps, false);
    // In place on one ciphertext (Lattigo's RotateColumns writes into a preallocated output;
    // copying the operand first would time a copy and an allocation).
    Ciphertext c = a;
    emit("rotate", median_seconds([&] { ev.rotate_rows_inplace(c, 1, gk); }, repeats));
  }
  emit("encrypt", median_seconds([&] { (void)enc.encrypt(pt); }, repeats));
  // Into an existing ciphertext, as Lattigo's Add writes into a preallocated output.
  Ciphertext sum = a;
  emit("add", median_seconds([&] { ev.add_inplace(sum, b); }, repeats));
  // Its memory floor: the same limbs read and written, polynomial by polynomial with the limbs
  // over the threads (as add_inplace), no arithmetic.
  emit("add_floor", median_seconds(
                        [&] {
                          for (std::size_t j = 0; j < b.size(); ++j) {
                            hec::math::parallel_for(
                                sum.polys[j].num_limbs(),
                                [&](std::size_t i) {
                                  hec::bench::floor_read2_write1(sum.polys[j].limb(i),
                                                                 b.polys[j].limb(i), n);
                                },
                                n);
                          }
                        },
                        repeats));
  return 0;
}
