// hec_fhew_gates: runs an FHEW gate program (gate_program.h) encrypted, either end to end in
// one process (the test and measurement harness) or as the four roles of a run, each its own
// process with only its own files (the FHEW target's `hec run --scheme fhew`, driver/fhew.py).
//
//   hec_fhew_gates PROGRAM [--params std128-ginx|std128-ap|toy-ginx|toy-ap]
//                  --input NAME=V1,V2,... [--input ...]
//
// Evaluation i encrypts value i of every input word (unsigned, below 2^width), runs the
// program and decrypts the outputs. Prints one JSON object: parameters, threads (HEC_THREADS),
// bootstraps per evaluation (blind rotations counted by the context), levels, the worst
// per-bootstrap failure probability of the program's cells, key generation and per-evaluation
// wall times, and the outputs. Errors go to stderr with exit status 2.
//
// The roles (every one takes --params; values as in the harness, or NAME=@FILE with the values
// separated by commas or white space):
//
//   keygen  --out DIR                          coordinator: DIR/secret, DIR/eval, DIR/public
//   encrypt --pk FILE --program P --input NAME=... [--input ...] --out DIR
//                                              a data owner: its own inputs under the public
//                                              key, DIR/NAME.ct each (never the secret key)
//   compute --eval FILE --program P --in NAME=CT [--in ...] --out RES
//                                              server: the evaluation key and every input's
//                                              ciphertexts (from any number of owners)
//   decrypt --sk FILE --program P --in RES --out JSON   coordinator: {"NAME": [values], ...}
//
// An input's ciphertext file holds evaluation after evaluation, each the word's bits, least
// significant first; the result file holds per evaluation the output words in file order.
// encrypt prints one JSON line (evaluations, ciphertexts, seconds); compute one with
// evaluations, bootstraps (all evaluations), levels, seconds, the worst per-bootstrap failure
// (log2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fhew/fhew.h"
#include "fhew/gate_program.h"
#include "fhew/serialize.h"
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

std::vector<unsigned long long> values_of(const std::string& name, const std::string& spec) {
  std::string list = spec;
  if (!spec.empty() && spec[0] == '@') {
    std::ifstream file(spec.substr(1));
    if (!file) throw std::invalid_argument("--input " + name + ": cannot read " + spec.substr(1));
    std::stringstream text;
    text << file.rdbuf();
    list = text.str();
    for (char& ch : list) {
      if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r') ch = ',';
    }
    std::string squeezed;
    for (char ch : list) {
      if (ch == ',' && (squeezed.empty() || squeezed.back() == ',')) continue;
      squeezed.push_back(ch);
    }
    if (!squeezed.empty() && squeezed.back() == ',') squeezed.pop_back();
    list = squeezed;
  }
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

// The number of evaluations the values give (every input word the same count, each value
// within its word's width, no unknown name).
std::size_t checked_evaluations(
    const hec::fhew::GateProgram& program,
    const std::map<std::string, std::vector<unsigned long long>>& values) {
  std::size_t evaluations = 0;
  bool first = true;
  for (const auto& w : program.inputs) {
    auto it = values.find(w.name);
    if (it == values.end()) throw std::invalid_argument("no --input for input '" + w.name + "'");
    if (!first && it->second.size() != evaluations) {
      throw std::invalid_argument("--input " + w.name + " has " +
                                  std::to_string(it->second.size()) + " values, others " +
                                  std::to_string(evaluations));
    }
    evaluations = it->second.size();
    first = false;
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
  return evaluations;
}

// The worst per-bootstrap failure probability (log2) of the program's cells under ctx's
// parameters; throws when a cell's noise weight exceeds what they carry.
double worst_failure_log2(const hec::fhew::Context& ctx, const hec::fhew::GateProgram& program) {
  double worst = -1e300;
  for (const auto& c : program.cells) {
    const double f = c.is_mux ? hec::fhew::linear_failure_log2(ctx.params(), 2.0)
                              : ctx.check_linear(c.linear).failure_log2;
    worst = std::max(worst, f);
  }
  return worst;
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
  const std::size_t evaluations = checked_evaluations(program, values);
  const hec::fhew::Context ctx(params_named(params_name));
  const double worst_failure = worst_failure_log2(ctx, program);
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

// --- the roles ------------------------------------------------------------------------------

// Evaluations the compute role runs together (one eval_batch per level over all of them).
constexpr std::size_t kBatchEvaluations = 64;

// Options of one role: `--NAME VALUE` pairs (each once, from `allowed`), repeated --input
// (values) and repeated --in NAME=FILE (input ciphertext files of compute).
struct RoleArgs {
  std::map<std::string, std::string> options;
  std::map<std::string, std::vector<unsigned long long>> values;
  std::map<std::string, std::string> files;

  const std::string& need(const std::string& role, const std::string& name) const {
    auto it = options.find(name);
    if (it == options.end()) throw std::invalid_argument(role + " needs --" + name);
    return it->second;
  }
};

RoleArgs role_args(const std::string& role, int argc, char** argv,
                   const std::vector<std::string>& allowed) {
  RoleArgs out;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw std::invalid_argument(role + ": unexpected '" + arg + "'");
    const std::string name = arg.substr(2);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      throw std::invalid_argument(role + ": unknown option '" + arg + "'");
    }
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (name == "input") {
      const std::size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw std::invalid_argument("--input '" + value +
                                    "': expected NAME=V1,V2,... or NAME=@FILE");
      }
      const std::string word = value.substr(0, eq);
      if (out.values.count(word)) throw std::invalid_argument("--input " + word + " given twice");
      out.values[word] = values_of(word, value.substr(eq + 1));
    } else if (name == "in" && role == "compute") {
      const std::size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
        throw std::invalid_argument("--in '" + value + "': expected NAME=FILE");
      }
      const std::string word = value.substr(0, eq);
      if (out.files.count(word)) throw std::invalid_argument("--in " + word + " given twice");
      out.files[word] = value.substr(eq + 1);
    } else {
      if (out.options.count(name)) throw std::invalid_argument(arg + " given twice");
      out.options[name] = value;
    }
  }
  return out;
}

std::size_t word_bits(const std::vector<hec::fhew::GateProgram::Word>& words) {
  std::size_t n = 0;
  for (const auto& w : words) n += w.bits.size();
  return n;
}

// Whole evaluations in `count` ciphertexts of `per` bits each.
std::size_t evaluations_of(std::size_t count, std::size_t per, const std::string& path) {
  if (per == 0 || count % per != 0) {
    throw std::invalid_argument(path + " holds " + std::to_string(count) +
                                " ciphertexts, not a whole number of evaluations of " +
                                std::to_string(per) + " bits");
  }
  return count / per;
}

int role_keygen(int argc, char** argv) {
  const RoleArgs a = role_args("keygen", argc, argv, {"params", "out"});
  const hec::fhew::Context ctx(params_named(a.need("keygen", "params")));
  const std::filesystem::path dir = a.need("keygen", "out");
  std::filesystem::create_directories(dir);
  const auto t0 = std::chrono::steady_clock::now();
  const hec::fhew::SecretKey sk = ctx.keygen_secret();
  const hec::fhew::EvalKey ek = ctx.keygen_eval(sk);
  const hec::fhew::PublicKey pk = ctx.keygen_public(sk);
  hec::fhew::save_secret_key(dir / "secret", sk);
  hec::fhew::save_eval_key(dir / "eval", ek);
  hec::fhew::save_public_key(dir / "public", pk);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "{\"params\": \"" << ctx.params().name << "\", \"seconds\": " << seconds << "}\n";
  return 0;
}

// The number of evaluations of one data owner's inputs: each a program input (not all of them:
// other owners hold the rest), the same count each, every value within its word's width.
std::size_t owner_evaluations(
    const hec::fhew::GateProgram& program,
    const std::map<std::string, std::vector<unsigned long long>>& values) {
  if (values.empty()) throw std::invalid_argument("encrypt needs at least one --input");
  std::size_t evaluations = 0;
  bool first = true;
  for (const auto& [name, v] : values) {
    const auto w = std::find_if(program.inputs.begin(), program.inputs.end(),
                                [&key = name](const auto& word) { return word.name == key; });
    if (w == program.inputs.end()) {
      throw std::invalid_argument("--input " + name + ": the program has no such input");
    }
    if (!first && v.size() != evaluations) {
      throw std::invalid_argument("--input " + name + " has " + std::to_string(v.size()) +
                                  " values, others " + std::to_string(evaluations));
    }
    evaluations = v.size();
    first = false;
    for (unsigned long long x : v) {
      if (w->bits.size() < 64 && x >> w->bits.size() != 0) {
        throw std::invalid_argument("--input " + name + ": " + std::to_string(x) +
                                    " does not fit in " + std::to_string(w->bits.size()) + " bits");
      }
    }
  }
  return evaluations;
}

int role_encrypt(int argc, char** argv) {
  // A data owner holds the public key only: refuse the secret key by name, before anything.
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--sk") {
      throw std::invalid_argument(
          "encrypt: a data owner encrypts with the public key (--pk KEYDIR/public) and never "
          "holds the secret key: --sk is refused");
    }
  }
  const RoleArgs a = role_args("encrypt", argc, argv, {"params", "pk", "program", "input", "out"});
  const hec::fhew::Context ctx(params_named(a.need("encrypt", "params")));
  const hec::fhew::GateProgram program = hec::fhew::load_gate_program(a.need("encrypt", "program"));
  const std::size_t evaluations = owner_evaluations(program, a.values);
  const hec::fhew::PublicKey pk = hec::fhew::load_public_key(a.need("encrypt", "pk"), ctx.params());
  const std::filesystem::path dir = a.need("encrypt", "out");
  std::filesystem::create_directories(dir);
  std::size_t count = 0;
  double seconds = 0;
  for (const auto& w : program.inputs) {
    auto it = a.values.find(w.name);
    if (it == a.values.end()) continue;  // another owner's input
    std::vector<hec::fhew::Ciphertext> cts;
    cts.reserve(evaluations * w.bits.size());
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t e = 0; e < evaluations; ++e) {
      const unsigned long long v = it->second[e];
      for (std::size_t b = 0; b < w.bits.size(); ++b) {
        cts.push_back(ctx.encrypt(pk, b < 64 && ((v >> b) & 1)));
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    count += cts.size();
    hec::fhew::save_ciphertexts(dir / (w.name + ".ct"), cts, ctx.params());
  }
  std::cout << "{\"evaluations\": " << evaluations << ", \"ciphertexts\": " << count
            << ", \"seconds\": " << seconds << "}\n";
  return 0;
}

int role_compute(int argc, char** argv) {
  const RoleArgs a = role_args("compute", argc, argv, {"params", "eval", "program", "in", "out"});
  const hec::fhew::Context ctx(params_named(a.need("compute", "params")));
  const hec::fhew::GateProgram program = hec::fhew::load_gate_program(a.need("compute", "program"));
  const double worst_failure = worst_failure_log2(ctx, program);
  const hec::fhew::EvalKey ek = hec::fhew::load_eval_key(a.need("compute", "eval"), ctx.params());
  // Every input word from its own file (its owner's), all under the evaluation key's key id
  // and with one evaluation count; then interleaved into evaluation-major program order.
  for (const auto& [name, path] : a.files) {
    const bool known = std::any_of(program.inputs.begin(), program.inputs.end(),
                                   [&key = name](const auto& w) { return w.name == key; });
    if (!known) throw std::invalid_argument("--in " + name + ": the program has no such input");
  }
  std::vector<std::vector<hec::fhew::Ciphertext>> words;
  std::size_t evaluations = 0;
  for (std::size_t k = 0; k < program.inputs.size(); ++k) {
    const auto& w = program.inputs[k];
    auto it = a.files.find(w.name);
    if (it == a.files.end()) throw std::invalid_argument("compute needs --in " + w.name + "=FILE");
    words.push_back(hec::fhew::load_ciphertexts(it->second, ctx.params(), ek.key_id));
    const std::size_t n = evaluations_of(words.back().size(), w.bits.size(), it->second);
    if (k > 0 && n != evaluations) {
      throw std::invalid_argument(it->second + " holds " + std::to_string(n) +
                                  " evaluations of input '" + w.name + "', " +
                                  program.inputs[0].name + " has " + std::to_string(evaluations));
    }
    evaluations = n;
  }
  const std::size_t per = program.input_bits();
  std::vector<hec::fhew::Ciphertext> in;
  in.reserve(evaluations * per);
  for (std::size_t e = 0; e < evaluations; ++e) {
    for (std::size_t k = 0; k < program.inputs.size(); ++k) {
      const std::size_t bits = program.inputs[k].bits.size();
      for (std::size_t b = 0; b < bits; ++b) in.push_back(std::move(words[k][e * bits + b]));
    }
  }
  words.clear();
  std::vector<hec::fhew::Ciphertext> out;
  out.reserve(evaluations * word_bits(program.outputs));
  std::size_t bootstraps = 0;
  double seconds = 0;
  // Evaluations in chunks run as one batch per level (run_gate_program_batch); a chunk's
  // wires bound the memory (program.wires ciphertexts per evaluation).
  const std::size_t chunk = std::max<std::size_t>(
      1, std::min<std::size_t>(kBatchEvaluations, (std::size_t{1} << 17) / (program.wires + 1)));
  for (std::size_t e = 0; e < evaluations; e += chunk) {
    const std::size_t count = std::min(chunk, evaluations - e);
    const std::span<const hec::fhew::Ciphertext> bits(in.data() + e * per, count * per);
    hec::fhew::GateRunStats stats;
    const auto result = hec::fhew::run_gate_program_batch(ctx, ek, program, bits, count, &stats);
    bootstraps += stats.bootstraps;
    seconds += stats.seconds;
    out.insert(out.end(), result.begin(), result.end());
  }
  hec::fhew::save_ciphertexts(a.need("compute", "out"), out, ctx.params());
  std::cout << "{\"params\": \"" << ctx.params().name
            << "\", \"threads\": " << hec::math::thread_cap()
            << ", \"evaluations\": " << evaluations << ", \"bootstraps\": " << bootstraps
            << ", \"static_bootstraps\": " << program.bootstraps()
            << ", \"levels\": " << program.levels.size() << ", \"seconds\": " << seconds
            << ", \"worst_failure_log2\": " << worst_failure << "}\n";
  return 0;
}

int role_decrypt(int argc, char** argv) {
  const RoleArgs a = role_args("decrypt", argc, argv, {"params", "sk", "program", "in", "out"});
  const hec::fhew::Context ctx(params_named(a.need("decrypt", "params")));
  const hec::fhew::GateProgram program = hec::fhew::load_gate_program(a.need("decrypt", "program"));
  const hec::fhew::SecretKey sk = hec::fhew::load_secret_key(a.need("decrypt", "sk"), ctx.params());
  const std::string in_path = a.need("decrypt", "in");
  const std::vector<hec::fhew::Ciphertext> in =
      hec::fhew::load_ciphertexts(in_path, ctx.params(), sk.key_id);
  const std::size_t per = word_bits(program.outputs);
  const std::size_t evaluations = evaluations_of(in.size(), per, in_path);
  std::ostringstream json;
  json << "{";
  std::size_t offset = 0;
  for (std::size_t o = 0; o < program.outputs.size(); ++o) {
    const auto& w = program.outputs[o];
    json << (o ? ", " : "") << "\"" << w.name << "\": [";
    for (std::size_t e = 0; e < evaluations; ++e) {
      unsigned long long v = 0;
      for (std::size_t b = 0; b < w.bits.size(); ++b) {
        if (ctx.decrypt(sk, in[e * per + offset + b]) && b < 64) v |= 1ull << b;
      }
      json << (e ? ", " : "") << v;
    }
    json << "]";
    offset += w.bits.size();
  }
  json << "}\n";
  const std::filesystem::path out = a.need("decrypt", "out");
  const std::filesystem::path tmp = out.string() + ".tmp";
  {
    std::ofstream file(tmp);
    file << json.str();
    if (!file) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string first = argc > 1 ? argv[1] : "";
    if (first == "keygen") return role_keygen(argc, argv);
    if (first == "encrypt") return role_encrypt(argc, argv);
    if (first == "compute") return role_compute(argc, argv);
    if (first == "decrypt") return role_decrypt(argc, argv);
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "hec_fhew_gates: " << e.what() << "\n";
    return 2;
  }
}
