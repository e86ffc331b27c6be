// Labeled-HE timings for bench/labhe.py: one key pair, n x d inputs encrypted once (offline
// PRF masks and encryptions, online a = m - b), then each given plan (the compiler's labeled
// programs, e.g. mean and covariance of the same X) evaluated at the server over the first
// ROWS rows and COLS columns of X (one encryption serves every size: the labels of a prefix are
// the same), under each thread count given; its masks computed offline (the PRF re-derived for
// every label, then the plan over the masks) and its result decrypted online; every result is
// checked against the plaintext evaluation of the plan (exact integers). Prints one JSON
// object per measurement; `eval_cpu_s` is the CPU time of all threads (the work).
//
// Usage: hec_bench_labhe --plan FILE[:ROWS[:COLS[:REPEATS]]] [--plan ...] --n N --d D
//        [--scheme jl|paillier] [--modulus-bits 2048] [--repeats R] [--encrypt-sample S]
//        [--threads 1,2]
#include <sodium.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "labhe/plan.h"
#include "labhe/prf.h"
#include "math/parallel.h"

namespace {

using namespace hec::labhe;
using Clock = std::chrono::steady_clock;

// CPU seconds of the whole process (every thread): the work, whatever the waiting for a core
// on a shared machine.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::string> plan_files;
    std::vector<int> thread_counts;
    std::size_t n = 0, d = 0, repeats = 3, sample = 256;
    std::string scheme = "jl";
    std::uint32_t bits = 2048;
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--plan")
        plan_files.push_back(v);
      else if (k == "--n")
        n = std::stoul(v);
      else if (k == "--d")
        d = std::stoul(v);
      else if (k == "--scheme")
        scheme = v;
      else if (k == "--modulus-bits")
        bits = static_cast<std::uint32_t>(std::stoul(v));
      else if (k == "--repeats")
        repeats = std::stoul(v);
      else if (k == "--encrypt-sample")
        sample = std::stoul(v);
      else if (k == "--threads") {
        std::stringstream list(v);
        std::string item;
        while (std::getline(list, item, ',')) thread_counts.push_back(std::stoi(item));
      } else
        throw std::invalid_argument("unknown option " + k);
    }
    if (plan_files.empty() || n == 0 || d == 0)
      throw std::invalid_argument("need --plan, --n, --d");
    if (thread_counts.empty()) thread_counts.push_back(hec::math::thread_cap());
    std::vector<Plan> plans;
    std::vector<std::size_t> plan_rows, plan_cols, plan_repeats;
    std::uint32_t k = 0;
    for (const auto& spec : plan_files) {
      // FILE[:ROWS[:COLS]]
      std::vector<std::string> parts;
      std::stringstream ps(spec);
      std::string part;
      while (std::getline(ps, part, ':')) parts.push_back(part);
      plans.push_back(Plan::parse(read_file(parts.at(0))));
      plan_rows.push_back(parts.size() > 1 ? std::stoul(parts[1]) : n);
      plan_cols.push_back(parts.size() > 2 ? std::stoul(parts[2]) : d);
      plan_repeats.push_back(parts.size() > 3 ? std::stoul(parts[3]) : repeats);
      if (plan_rows.back() > n || plan_cols.back() > d) {
        throw std::invalid_argument(spec + ": more rows or columns than encrypted");
      }
      k = std::max(k, plans.back().message_bits);
    }
    const PlanInput& in = plans[0].input("X");
    KeyPair kp = keygen(scheme_from_name(scheme), bits, k);
    const PublicKey& pk = kp.pk;
    PrfKey key = random_prf_key();
    const Encryptor encryptor(pk);
    // Inputs: uniform in the domain [-10, 10] (the programs' X), quantized by the scale.
    const std::size_t count = n * d;
    std::vector<double> x(count);
    {
      std::vector<std::uint32_t> r(count);
      randombytes_buf(r.data(), r.size() * sizeof(std::uint32_t));
      for (std::size_t i = 0; i < count; ++i) x[i] = -10.0 + 20.0 * (r[i] / 4294967296.0);
    }
    const double scale = mpz_get_d(in.scale.get());
    // Encryption per value, on a sample (offline: PRF + Enc(b); online: a = m - b).
    {
      std::vector<double> off, on, off_cpu;
      for (std::size_t rep = 0; rep < repeats; ++rep) {
        const double c0 = cpu_seconds();
        auto t0 = Clock::now();
        std::vector<Int> b(sample), beta(sample);
        for (std::size_t i = 0; i < sample; ++i) {
          b[i] = prf_mask(key, {"X", i / d, i % d}, pk.msg_modulus);
          beta[i] = encryptor.encrypt(b[i]);
        }
        off.push_back(since(t0) / sample);
        off_cpu.push_back((cpu_seconds() - c0) / sample);
        t0 = Clock::now();
        for (std::size_t i = 0; i < sample; ++i) {
          Int a(static_cast<long>(std::nearbyint(x[i] * scale)));
          mpz_sub(a.get(), a.get(), b[i].get());
          mpz_mod(a.get(), a.get(), pk.msg_modulus.get());
        }
        on.push_back(since(t0) / sample);
      }
      std::cout << "{\"measure\": \"encrypt_offline_per_value_cpu_s\", \"value\": "
                << median(off_cpu) << "}\n";
      std::cout << "{\"measure\": \"encrypt_offline_per_value_s\", \"value\": " << median(off)
                << "}\n{\"measure\": \"encrypt_online_per_value_s\", \"value\": " << median(on)
                << "}\n";
    }
    // Every value encrypted once (both threads), for the evaluations.
    Array server_x, mask_x, plain_x;
    server_x.shape = mask_x.shape = plain_x.shape = {n, d};
    server_x.a.resize(count);
    server_x.c.resize(count);
    mask_x.a.resize(count);
    plain_x.a.resize(count);
    auto t_enc = Clock::now();
    hec::math::parallel_for(
        count,
        [&](std::size_t i) {
          Int b = prf_mask(key, {"X", i / d, i % d}, pk.msg_modulus);
          Int m(static_cast<long>(std::nearbyint(x[i] * scale)));
          mpz_mod(m.get(), m.get(), pk.msg_modulus.get());
          plain_x.a[i] = m;
          server_x.c[i] = encryptor.encrypt(b);
          mpz_sub(m.get(), m.get(), b.get());
          mpz_mod(m.get(), m.get(), pk.msg_modulus.get());
          server_x.a[i] = m;
          mask_x.a[i] = b;
        },
        1 << 15);
    std::cout << "{\"measure\": \"encrypt_all_s\", \"value\": " << since(t_enc)
              << ", \"values\": " << count << "}\n";
    std::cout << "{\"measure\": \"ciphertext_bytes\", \"value\": " << pk.ciphertext_bytes()
              << "}\n{\"measure\": \"upload_bytes_per_value\", \"value\": "
              << pk.ciphertext_bytes() + pk.message_bytes() << "}\n";
    for (std::size_t p = 0; p < plans.size(); ++p) {
      const Plan& plan = plans[p];
      const std::size_t rows = plan_rows[p], cols = plan_cols[p], reps = plan_repeats[p];
      // The first rows x cols block of X, copied out of the timed region. The inputs stay with
      // the caller (evaluate reads them in place), as at a server that holds the uploads.
      auto block = [&](const Array& from, bool with_c) {
        Array out;
        out.shape = {rows, cols};
        out.a.reserve(rows * cols);
        if (with_c) out.c.reserve(rows * cols);
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t c = 0; c < cols; ++c) {
            out.a.push_back(from.a[r * d + c]);
            if (with_c) out.c.push_back(from.c[r * d + c]);
          }
        }
        return out;
      };
      const std::map<std::string, Array> server_in{{"X", block(server_x, true)}},
          mask_in{{"X", block(mask_x, false)}}, plain_in{{"X", block(plain_x, false)}};
      const std::string tag = "\"plan\": \"" + plan.name + "\", \"rows\": " + std::to_string(rows) +
                              ", \"cols\": " + std::to_string(cols);
      std::vector<Array> server, mask;
      for (int threads : thread_counts) {
        hec::math::set_thread_cap(threads);
        std::vector<double> eval, eval_cpu;
        for (std::size_t rep = 0; rep < reps; ++rep) {
          auto t0 = Clock::now();
          const double c0 = cpu_seconds();
          server = evaluate(plan, Mode::kServer, pk.msg_modulus, &pk, server_in);
          eval.push_back(since(t0));
          eval_cpu.push_back(cpu_seconds() - c0);
        }
        std::cout << "{\"measure\": \"eval_s\", " << tag << ", \"threads\": " << threads
                  << ", \"value\": " << median(eval) << "}\n";
        std::cout << "{\"measure\": \"eval_cpu_s\", " << tag << ", \"threads\": " << threads
                  << ", \"value\": " << median(eval_cpu) << "}\n";
      }
      hec::math::set_thread_cap(thread_counts.back());
      std::vector<double> moff, mon;
      for (std::size_t rep = 0; rep < reps; ++rep) {
        // Offline decryption: the receiver re-derives every label's mask with the PRF, then runs
        // the plan over the masks.
        auto t0 = Clock::now();
        std::vector<Int> masks(rows * cols);
        hec::math::parallel_for(
            rows * cols,
            [&](std::size_t i) {
              masks[i] = prf_mask(key, {"X", i / cols, i % cols}, pk.msg_modulus);
            },
            4096);
        Array derived;
        derived.shape = {rows, cols};
        derived.a = std::move(masks);
        mask = evaluate(plan, Mode::kMask, pk.msg_modulus, nullptr, {{"X", std::move(derived)}});
        moff.push_back(since(t0));
        t0 = Clock::now();
        std::size_t bytes = 0;
        for (std::size_t r = 0; r < server.size(); ++r) {
          const auto& vals = server[r].level2 ? server[r].c : server[r].a;
          std::vector<double> out(vals.size());
          hec::math::parallel_for(
              vals.size(),
              [&](std::size_t i) {
                Int raw = server[r].level2 ? decrypt(pk, kp.sk, vals[i]) : vals[i];
                mpz_add(raw.get(), raw.get(), mask[r].a[i].get());
                mpz_mod(raw.get(), raw.get(), pk.msg_modulus.get());
                out[i] = decode_reveal(plan.reveals[r], raw, pk.msg_modulus);
              },
              4096);
          bytes += vals.size() * (server[r].level2 ? pk.ciphertext_bytes() : pk.message_bytes());
        }
        mon.push_back(since(t0));
        if (rep == 0) {
          // Exactness: the decrypted values equal the plaintext evaluation of the plan, and
          // the masks derived offline equal the ones the providers used.
          auto plain = evaluate(plan, Mode::kPlain, pk.msg_modulus, nullptr, plain_in);
          auto given = evaluate(plan, Mode::kMask, pk.msg_modulus, nullptr, mask_in);
          for (std::size_t r = 0; r < server.size(); ++r) {
            const auto& vals = server[r].level2 ? server[r].c : server[r].a;
            for (std::size_t i = 0; i < vals.size(); ++i) {
              if (given[r].a[i] != mask[r].a[i]) {
                throw std::logic_error("re-derived masks differ from the providers' masks");
              }
              Int raw = server[r].level2 ? decrypt(pk, kp.sk, vals[i]) : vals[i];
              mpz_add(raw.get(), raw.get(), mask[r].a[i].get());
              mpz_mod(raw.get(), raw.get(), pk.msg_modulus.get());
              if (raw != plain[r].a[i]) {
                throw std::logic_error("decrypted " + plan.reveals[r].name +
                                       " differs from the plaintext evaluation");
              }
            }
          }
          std::cout << "{\"measure\": \"result_bytes\", " << tag << ", \"value\": " << bytes
                    << "}\n";
        }
      }
      std::cout << "{\"measure\": \"decrypt_offline_s\", " << tag << ", \"value\": " << median(moff)
                << "}\n";
      std::cout << "{\"measure\": \"decrypt_online_s\", " << tag << ", \"value\": " << median(mon)
                << "}\n";
      std::cout.flush();
    }
  } catch (const std::exception& e) {
    std::cerr << "hec_bench_labhe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
