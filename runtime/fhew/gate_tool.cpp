// hec_fhew_gates: runs an FHEW gate program (gate_program.h) encrypted, end to end in one
// process (key generation, encryption, evaluation, decryption) — the test and measurement
// harness of the FHEW target; the per-party roles of generated programs are not here.
//
//   hec_fhew_gates PROGRAM [--params std128-ginx|std128-ap|toy-ginx|toy-ap]
//                  --input NAME=V1,V2,... [--input ...]
//
// Evaluation i encrypts value i of every input word (unsigned, below 2^width), runs the
// program and decrypts the outputs. Prints one JSON object: parameters, threads (HEC_THREADS),
// bootstraps per evaluation (blind rotations counted by the context), levels, the worst
// per-bootstrap failure probability of the program's cells, key generation and per-evaluation
// wall times, and the outputs. Errors go to stderr with exit status 2.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fhew/fhew.h"
#include "fhew/gate_program.h"
#include "math/parallel.h"

namespace {

using hec::fhew::BlindRotation;
using hec::fhew::Params;

Params params_named(const std::string& name) {
  if (name == "std128-ginx") return Params::std128(BlindRotation::kGinx);
  if (name == "std128-ap") return Params::std128(BlindRotation::kAp);
  if (name == "toy-ginx") return Params::toy_insecure(BlindRotation::kGinx);
  if (name == "toy-ap") return Params::toy_insecure(BlindRotation::kAp);
  throw std::invalid_argument("--params '" + name +
                              "': expected std128-ginx, std128-ap, toy-ginx or toy-ap");
}

std::vector<unsigned long long> values_of(const std::string& name, const std::string& list) {
  std::vector<unsigned long long> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      if (item.empty() || item[0] == '-') throw std::invalid_argument("negative");
      v = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty()) {
      throw std::invalid_argument("--input " + name + ": '" + item +
                                  "' is not an unsigned integer");
    }
    out.push_back(v);
  }
  return out;
}

int run(int argc, char** argv) {
  std::string program_path, params_name = "std128-ginx";
  std::map<std::string, std::vector<unsigned long long>> values;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--params" || arg == "--input") && i + 1 >= argc) {
      throw std::invalid_argument(arg + " needs a value");
    }
    if (arg == "--params") {
      params_name = argv[++i];
    } else if (arg == "--input") {
      const std::string spec = argv[++i];
      const std::size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw std::invalid_argument("--input '" + spec + "': expected NAME=V1,V2,...");
      }
      const std::string name = spec.substr(0, eq);
      if (values.count(name)) throw std::invalid_argument("--input " + name + " given twice");
      values[name] = values_of(name, spec.substr(eq + 1));
    } else if (!arg.empty() && arg[0] == '-') {
      throw std::invalid_argument("unknown option '" + arg + "'");
    } else if (program_path.empty()) {
      program_path = arg;
    } else {
      throw std::invalid_argument("more than one program: '" + program_path + "', '" + arg + "'");
    }
  }
  if (program_path.empty()) throw std::invalid_argument("no gate program given");
  const hec::fhew::GateProgram program = hec::fhew::load_gate_program(program_path);
  std::size_t evaluations = 0;
  for (const auto& w : program.inputs) {
    auto it = values.find(w.name);
    if (it == values.end()) throw std::invalid_argument("no --input for input '" + w.name + "'");
    if (evaluations != 0 && it->second.size() != evaluations) {
      throw std::invalid_argument("--input " + w.name + " has " +
                                  std::to_string(it->second.size()) + " values, others " +
                                  std::to_string(evaluations));
    }
    evaluations = it->second.size();
    for (unsigned long long v : it->second) {
      if (w.bits.size() < 64 && v >> w.bits.size() != 0) {
        throw std::invalid_argument("--input " + w.name + ": " + std::to_string(v) +
                                    " does not fit in " + std::to_string(w.bits.size()) + " bits");
      }
    }
  }
  for (const auto& [name, v] : values) {
    bool known = false;
    for (const auto& w : program.inputs) known = known || w.name == name;
    if (!known) throw std::invalid_argument("--input " + name + ": the program has no such input");
  }

  const hec::fhew::Context ctx(params_named(params_name));
  double worst_failure = -1e300;
  for (const auto& c : program.cells) {
    const double f = c.is_mux ? hec::fhew::linear_failure_log2(ctx.params(), 2.0)
                              : ctx.check_linear(c.linear).failure_log2;
    worst_failure = std::max(worst_failure, f);
  }
  const auto k0 = std::chrono::steady_clock::now();
  const hec::fhew::SecretKey sk = ctx.keygen_secret();
  const hec::fhew::EvalKey ek = ctx.keygen_eval(sk);
  const double keygen =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - k0).count();

  std::ostringstream runs, outputs;
  std::map<std::string, std::vector<unsigned long long>> results;
  std::size_t bootstraps = 0;
  for (std::size_t e = 0; e < evaluations; ++e) {
    std::vector<hec::fhew::Ciphertext> in;
    for (const auto& w : program.inputs) {
      for (std::size_t b = 0; b < w.bits.size(); ++b) {
        const unsigned long long v = values[w.name][e];
        in.push_back(ctx.encrypt(sk, b < 64 && ((v >> b) & 1)));
      }
    }
    hec::fhew::GateRunStats stats;
    const auto out = hec::fhew::run_gate_program(ctx, ek, program, in, &stats);
    bootstraps = stats.bootstraps;
    runs << (e ? ", " : "") << stats.seconds;
    std::size_t next = 0;
    for (const auto& w : program.outputs) {
      unsigned long long v = 0;
      for (std::size_t b = 0; b < w.bits.size(); ++b) {
        if (ctx.decrypt(sk, out[next++]) && b < 64) v |= 1ull << b;
      }
      results[w.name].push_back(v);
    }
  }
  std::cout << "{\"params\": \"" << ctx.params().name
            << "\", \"threads\": " << hec::math::thread_cap()
            << ", \"evaluations\": " << evaluations << ", \"bootstraps\": " << bootstraps
            << ", \"static_bootstraps\": " << program.bootstraps()
            << ", \"levels\": " << program.levels.size()
            << ", \"max_noise_weight\": " << hec::fhew::max_linear_noise_weight(ctx.params())
            << ", \"worst_failure_log2\": " << worst_failure << ", \"keygen_seconds\": " << keygen
            << ", \"seconds\": [" << runs.str() << "], \"outputs\": {";
  bool first = true;
  for (const auto& w : program.outputs) {
    std::cout << (first ? "" : ", ") << "\"" << w.name << "\": [";
    for (std::size_t e = 0; e < results[w.name].size(); ++e) {
      std::cout << (e ? ", " : "") << results[w.name][e];
    }
    std::cout << "]";
    first = false;
  }
  std::cout << "}}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "hec_fhew_gates: " << e.what() << "\n";
    return 2;
  }
}
