// Reading, validating and running FHEW gate programs (see gate_program.h).
#include "fhew/gate_program.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace hec::fhew {

std::size_t GateProgram::input_bits() const {
  std::size_t n = 0;
  for (const Word& w : inputs) n += w.bits.size();
  return n;
}

std::size_t GateProgram::bootstraps() const {
  std::size_t n = 0;
  for (const Cell& c : cells) n += c.is_mux ? 2 : 1;
  return n;
}

namespace {

constexpr std::size_t kMaxNameLength = 64;
constexpr std::size_t kMaxProgramBytes = std::size_t{1} << 28;

class Parser {
 public:
  explicit Parser(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw std::runtime_error(origin_ + ":" + std::to_string(line) + ": " + what);
  }

  long long number(int line, std::string_view token, long long lo, long long hi,
                   const char* what) const {
    long long v = 0;
    const char* begin = token.data();
    const char* end = token.data() + token.size();
    if (!token.empty() && token[0] == '+') ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, v);
    if (ec != std::errc() || ptr != end || begin == end) {
      fail(line, std::string(what) + " '" + std::string(token) + "' is not an integer");
    }
    if (v < lo || v > hi) {
      fail(line, std::string(what) + " " + std::to_string(v) + " is outside [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }

  std::string name(int line, std::string_view token) const {
    bool ok = !token.empty() && token.size() <= kMaxNameLength &&
              (std::isalpha(static_cast<unsigned char>(token[0])) || token[0] == '_');
    for (char ch : token) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    }
    if (!ok) {
      fail(line, "name '" + std::string(token.substr(0, kMaxNameLength)) +
                     "' is not [A-Za-z_][A-Za-z0-9_]* of at most " +
                     std::to_string(kMaxNameLength) + " characters");
    }
    return std::string(token);
  }

 private:
  const std::string& origin_;
};

std::vector<std::string_view> tokens_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

GateProgram parse_gate_program(std::string_view text, const std::string& origin) {
  const Parser p(origin);
  if (text.size() > kMaxProgramBytes) {
    p.fail(0, "program of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                  std::to_string(kMaxProgramBytes));
  }
  GateProgram prog;
  std::vector<int> defined;  // line that defined each wire (0: undefined; wire 0: -1)
  std::vector<std::pair<int, std::uint32_t>> refs;  // (line, wire) of every reference
  std::set<std::string> input_names, output_names;
  enum class State { kHeader, kWires, kBody, kEnded } state = State::kHeader;

  auto define = [&](int line, std::uint32_t wire) {
    if (wire == 0) p.fail(line, "wire 0 is the constant false and cannot be defined");
    if (defined[wire] != 0) {
      p.fail(line, "wire " + std::to_string(wire) + " is already defined on line " +
                       std::to_string(defined[wire]));
    }
    defined[wire] = line;
  };
  auto wire = [&](int line, std::string_view token, const char* what) {
    return static_cast<std::uint32_t>(p.number(line, token, 0, prog.wires - 1ll, what));
  };
  auto literal = [&](int line, std::string_view token, const char* what) {
    const auto lit =
        static_cast<std::uint32_t>(p.number(line, token, 0, 2ll * prog.wires - 1, what));
    refs.emplace_back(line, lit >> 1);
    return lit;
  };

  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::vector<std::string_view> t = tokens_of(line);
    if (t.empty()) continue;
    const std::string_view op = t[0];
    auto need = [&](std::size_t count) {
      if (t.size() != count) {
        std::string msg = "'";
        msg.append(op);
        msg += "' takes " + std::to_string(count - 1) + " fields, found " +
               std::to_string(t.size() - 1);
        p.fail(line_no, msg);
      }
    };
    if (state == State::kEnded) p.fail(line_no, "statement after 'end'");
    if (state == State::kHeader) {
      if (op != "hec-fhew-gates") {
        p.fail(line_no, "not an FHEW gate program (expected 'hec-fhew-gates " +
                            std::to_string(kGateProgramVersion) + "')");
      }
      need(2);
      const long long v = p.number(line_no, t[1], 0, 1ll << 31, "version");
      if (v != kGateProgramVersion) {
        p.fail(line_no, "gate program version " + std::to_string(v) + "; this runtime reads " +
                            std::to_string(kGateProgramVersion));
      }
      state = State::kWires;
      continue;
    }
    if (state == State::kWires) {
      if (op != "wires") p.fail(line_no, "expected 'wires W' after the header");
      need(2);
      prog.wires = static_cast<std::uint32_t>(
          p.number(line_no, t[1], 1, kMaxGateProgramWires, "wire count"));
      defined.assign(prog.wires, 0);
      defined[0] = -1;
      state = State::kBody;
      continue;
    }
    if (op == "end") {
      need(1);
      state = State::kEnded;
    } else if (op == "input" || op == "output") {
      if (t.size() < 3 || t.size() - 2 > kMaxGateProgramWordBits) {
        p.fail(line_no, "'" + std::string(op) + "' needs a name and 1 to " +
                            std::to_string(kMaxGateProgramWordBits) + " bits");
      }
      GateProgram::Word w;
      w.name = p.name(line_no, t[1]);
      const bool is_input = op == "input";
      if (!(is_input ? input_names : output_names).insert(w.name).second) {
        p.fail(line_no, std::string(op) + " '" + w.name + "' is declared twice");
      }
      for (std::size_t i = 2; i < t.size(); ++i) {
        if (is_input) {
          const std::uint32_t x = wire(line_no, t[i], "input wire");
          define(line_no, x);
          w.bits.push_back(x);
        } else {
          w.bits.push_back(literal(line_no, t[i], "output literal"));
        }
      }
      (is_input ? prog.inputs : prog.outputs).push_back(std::move(w));
    } else if (op == "linear") {
      if (t.size() < 3) p.fail(line_no, "'linear' needs OUT K LEAF... M... C");
      GateProgram::Cell c;
      c.line = line_no;
      c.out = wire(line_no, t[1], "gate output wire");
      const auto k = static_cast<std::size_t>(
          p.number(line_no, t[2], 1, kMaxLinearInputs, "linear input count"));
      need(4 + 2 * k);
      for (std::size_t i = 0; i < k; ++i) {
        const std::uint32_t x = wire(line_no, t[3 + i], "linear leaf wire");
        refs.emplace_back(line_no, x);
        c.in.push_back(x);
        c.linear.multipliers.push_back(static_cast<int>(p.number(
            line_no, t[3 + k + i], -kMaxLinearMultiplier, kMaxLinearMultiplier, "multiplier")));
      }
      c.linear.constant = static_cast<int>(p.number(line_no, t[3 + 2 * k], -64, 64, "constant"));
      try {
        linear_gate_shape(c.linear);
      } catch (const std::invalid_argument& e) {
        p.fail(line_no, e.what());
      }
      define(line_no, c.out);
      prog.cells.push_back(std::move(c));
    } else if (op == "mux") {
      need(5);
      GateProgram::Cell c;
      c.line = line_no;
      c.is_mux = true;
      c.out = wire(line_no, t[1], "gate output wire");
      for (std::size_t i = 2; i < 5; ++i) c.in.push_back(literal(line_no, t[i], "mux literal"));
      define(line_no, c.out);
      prog.cells.push_back(std::move(c));
    } else {
      p.fail(line_no, "unknown statement '" + std::string(op.substr(0, kMaxNameLength)) + "'");
    }
  }
  if (state == State::kHeader) p.fail(line_no, "empty gate program");
  if (state != State::kEnded) p.fail(line_no, "truncated gate program: no 'end'");
  for (const auto& [line, x] : refs) {
    if (defined[x] == 0) {
      p.fail(line, "wire " + std::to_string(x) + " is used but never defined");
    }
  }
  if (prog.outputs.empty()) p.fail(line_no, "gate program without outputs");

  // Levels by Kahn's algorithm over the cells: a cell's level is one more than its deepest
  // input's (inputs and the constant are level 0); cells left over lie on a cycle.
  std::vector<std::int64_t> producer(prog.wires, -1);
  for (std::size_t i = 0; i < prog.cells.size(); ++i)
    producer[prog.cells[i].out] = static_cast<std::int64_t>(i);
  std::vector<std::vector<std::size_t>> users(prog.cells.size());
  std::vector<std::size_t> pending(prog.cells.size(), 0), level(prog.cells.size(), 1);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < prog.cells.size(); ++i) {
    const GateProgram::Cell& c = prog.cells[i];
    for (std::uint32_t x : c.in) {
      const std::uint32_t w = c.is_mux ? x >> 1 : x;
      if (producer[w] >= 0) {
        users[static_cast<std::size_t>(producer[w])].push_back(i);
        ++pending[i];
      }
    }
    if (pending[i] == 0) ready.push_back(i);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    ++done;
    if (prog.levels.size() < level[i]) prog.levels.resize(level[i]);
    prog.levels[level[i] - 1].push_back(i);
    for (std::size_t u : users[i]) {
      level[u] = std::max(level[u], level[i] + 1);
      if (--pending[u] == 0) ready.push_back(u);
    }
  }
  if (done != prog.cells.size()) {
    for (std::size_t i = 0; i < prog.cells.size(); ++i) {
      if (pending[i] != 0) {
        p.fail(prog.cells[i].line, "gate of wire " + std::to_string(prog.cells[i].out) +
                                       " lies on a cycle (it depends on its own output)");
      }
    }
  }
  for (auto& l : prog.levels) std::sort(l.begin(), l.end());
  return prog;
}

GateProgram load_gate_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the gate program");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_gate_program(text.str(), path);
}

std::vector<Ciphertext> run_gate_program_batch(const Context& ctx, const EvalKey& ek,
                                               const GateProgram& program,
                                               std::span<const Ciphertext> inputs,
                                               std::size_t evaluations, GateRunStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t rotations_before = ctx.blind_rotations();
  const std::size_t per = program.input_bits();
  if (evaluations == 0 || inputs.size() != evaluations * per) {
    throw std::invalid_argument("gate program: " + std::to_string(inputs.size()) +
                                " input ciphertexts for " + std::to_string(evaluations) +
                                " evaluation(s) of " + std::to_string(per) + " input bits");
  }
  for (const GateProgram::Cell& c : program.cells) {
    if (!c.is_mux) ctx.check_linear(c.linear);
  }
  const Params& params = ctx.params();
  const std::size_t width = program.wires;
  // Wire x of evaluation e is wires[e * width + x].
  std::vector<Ciphertext> wires(width * evaluations);
  for (std::size_t e = 0; e < evaluations; ++e) {
    Ciphertext& zero = wires[e * width];  // the trivial encryption of 0
    zero.key_id = ek.key_id;
    zero.lwe.modulus = params.lwe_modulus;
    zero.lwe.a.assign(params.lwe_dim, 0);
    zero.lwe.b = 0;
    std::size_t next = e * per;
    for (const GateProgram::Word& w : program.inputs) {
      for (std::uint32_t x : w.bits) wires[e * width + x] = inputs[next++];
    }
  }
  std::vector<Ciphertext> negated;
  for (const auto& level : program.levels) {
    negated.clear();
    negated.reserve(3 * level.size() * evaluations);  // no reallocation: ops keep pointers
    std::vector<Context::GateOp> ops;
    ops.reserve(level.size() * evaluations);
    for (std::size_t e = 0; e < evaluations; ++e) {
      const Ciphertext* base = wires.data() + e * width;
      auto lit = [&](std::uint32_t l) -> const Ciphertext* {
        if ((l & 1) == 0) return base + (l >> 1);
        negated.push_back(ctx.eval_not(base[l >> 1]));
        return &negated.back();
      };
      for (std::size_t i : level) {
        const GateProgram::Cell& c = program.cells[i];
        if (c.is_mux) {
          ops.push_back({Gate::kMux, lit(c.in[0]), lit(c.in[1]), lit(c.in[2])});
        } else {
          const Ciphertext* in[3] = {nullptr, nullptr, nullptr};
          for (std::size_t j = 0; j < c.in.size(); ++j) in[j] = base + c.in[j];
          ops.push_back({Gate::kLinear, in[0], in[1], in[2], &c.linear});
        }
      }
    }
    // One batch per level over every evaluation: the threads share all of the level's gates.
    std::vector<Ciphertext> out = ctx.eval_batch(ek, ops);
    std::size_t k = 0;
    for (std::size_t e = 0; e < evaluations; ++e) {
      for (std::size_t i : level) wires[e * width + program.cells[i].out] = std::move(out[k++]);
    }
  }
  std::vector<Ciphertext> result;
  for (std::size_t e = 0; e < evaluations; ++e) {
    for (const GateProgram::Word& w : program.outputs) {
      for (std::uint32_t l : w.bits) {
        const Ciphertext& x = wires[e * width + (l >> 1)];
        result.push_back((l & 1) ? ctx.eval_not(x) : x);
      }
    }
  }
  if (stats != nullptr) {
    stats->bootstraps = ctx.blind_rotations() - rotations_before;
    stats->levels = program.levels.size();
    stats->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return result;
}

std::vector<Ciphertext> run_gate_program(const Context& ctx, const EvalKey& ek,
                                         const GateProgram& program,
                                         std::span<const Ciphertext> inputs, GateRunStats* stats) {
  if (inputs.size() != program.input_bits()) {
    throw std::invalid_argument("gate program: " + std::to_string(inputs.size()) +
                                " input ciphertexts for " + std::to_string(program.input_bits()) +
                                " input bits");
  }
  return run_gate_program_batch(ctx, ek, program, inputs, 1, stats);
}

}  // namespace hec::fhew
