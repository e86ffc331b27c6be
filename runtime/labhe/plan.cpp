// Parsing and evaluation of labeled programs (see plan.h).
#include "labhe/plan.h"

#include <sodium.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "labhe/multiexp.h"
#include "math/parallel.h"

namespace hec::labhe {

std::size_t shape_size(const Shape& s) {
  std::size_t n = 1;
  for (std::size_t d : s) n *= d;
  return n;
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace {

[[noreturn]] void fail(std::size_t line, const std::string& what) {
  throw std::invalid_argument("labeled program, line " + std::to_string(line) + ": " + what);
}

std::size_t to_size(std::size_t line, const std::string& w) {
  try {
    std::size_t pos = 0;
    unsigned long long v = std::stoull(w, &pos);
    if (pos != w.size()) fail(line, "expected a count, got '" + w + "'");
    return static_cast<std::size_t>(v);
  } catch (const std::logic_error&) {
    fail(line, "expected a count, got '" + w + "'");
  }
}

// The flat index in `src` of each element of `out` when source axis i is result axis map[i]
// (a source axis of length 1 repeats).
std::vector<std::size_t> gather_index(const Shape& src, const Shape& out,
                                      const std::vector<std::size_t>& map) {
  std::vector<std::size_t> idx(shape_size(out));
  std::vector<std::size_t> coord(out.size(), 0);
  for (std::size_t f = 0; f < idx.size(); ++f) {
    std::size_t s = 0;
    for (std::size_t i = 0; i < src.size(); ++i) {
      std::size_t c = src[i] == 1 ? 0 : coord[map[i]];
      s = s * src[i] + c;
    }
    idx[f] = s;
    for (std::size_t ax = out.size(); ax-- > 0;) {
      if (++coord[ax] < out[ax]) break;
      coord[ax] = 0;
    }
  }
  return idx;
}

std::vector<std::size_t> trailing_map(const Shape& src, const Shape& out) {
  std::vector<std::size_t> map(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) map[i] = out.size() - src.size() + i;
  return map;
}

Shape broadcast_shapes(std::size_t line, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::size_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    std::size_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail(line, "shapes " + shape_text(a) + " and " + shape_text(b) + " do not broadcast");
    }
    out[i] = std::max(da, db);
  }
  return out;
}

struct Spec {
  std::string lhs, rhs, out;
};

Spec parse_spec(std::size_t line, const std::string& text) {
  auto comma = text.find(',');
  auto arrow = text.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) {
    fail(line, "bad contraction spec '" + text + "'");
  }
  return {text.substr(0, comma), text.substr(comma + 1, arrow - comma - 1), text.substr(arrow + 2)};
}

// For each output element, the (lhs, rhs) flat index pairs whose products it sums.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> contraction_pairs(const Spec& spec,
                                                                                const Shape& ls,
                                                                                const Shape& rs,
                                                                                const Shape& os) {
  std::string letters;
  for (char ch : spec.lhs + spec.rhs) {
    if (letters.find(ch) == std::string::npos) letters.push_back(ch);
  }
  std::map<char, std::size_t> extent;
  for (std::size_t i = 0; i < spec.lhs.size(); ++i) extent[spec.lhs[i]] = ls[i];
  for (std::size_t i = 0; i < spec.rhs.size(); ++i) extent[spec.rhs[i]] = rs[i];
  std::string free;
  for (char ch : letters) {
    if (spec.out.find(ch) == std::string::npos) free.push_back(ch);
  }
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pairs(shape_size(os));
  std::map<char, std::size_t> at;
  std::vector<std::size_t> ocoord(os.size(), 0);
  auto flat = [&](const std::string& sp, const Shape& sh) {
    std::size_t f = 0;
    for (std::size_t i = 0; i < sp.size(); ++i) f = f * sh[i] + at[sp[i]];
    return f;
  };
  for (std::size_t o = 0; o < pairs.size(); ++o) {
    for (std::size_t i = 0; i < os.size(); ++i) at[spec.out[i]] = ocoord[i];
    std::vector<std::size_t> fcoord(free.size(), 0);
    bool empty = false;
    for (char ch : free) empty = empty || extent[ch] == 0;
    while (!empty) {
      for (std::size_t i = 0; i < free.size(); ++i) at[free[i]] = fcoord[i];
      pairs[o].emplace_back(flat(spec.lhs, ls), flat(spec.rhs, rs));
      std::size_t ax = free.size();
      for (; ax-- > 0;) {
        if (++fcoord[ax] < extent[free[ax]]) break;
        fcoord[ax] = 0;
      }
      if (ax == static_cast<std::size_t>(-1)) break;
    }
    for (std::size_t ax = os.size(); ax-- > 0;) {
      if (++ocoord[ax] < os[ax]) break;
      ocoord[ax] = 0;
    }
  }
  return pairs;
}

std::string hex(const unsigned char* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

}  // namespace

const PlanInput& Plan::input(const std::string& input_name) const {
  for (const auto& in : inputs) {
    if (in.name == input_name) return in;
  }
  throw std::invalid_argument("the labeled program has no input '" + input_name + "'");
}

Plan Plan::parse(const std::string& text) {
  Plan plan;
  plan.text = text;
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialize");
  unsigned char h[32];
  crypto_generichash(h, sizeof h, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                     nullptr, 0);
  plan.digest = hex(h, sizeof h);
  std::istringstream lines(text);
  std::string raw;
  std::size_t line = 0;
  bool header = false;
  while (std::getline(lines, raw)) {
    ++line;
    std::istringstream ws(raw);
    std::vector<std::string> w;
    for (std::string t; ws >> t;) w.push_back(t);
    if (w.empty() || w[0][0] == '#') continue;
    if (!header) {
      if (w.size() != 2 || w[0] != "hec-labhe-plan" || w[1] != "1") {
        fail(line, "expected 'hec-labhe-plan 1'");
      }
      header = true;
      continue;
    }
    if (w[0] == "program" && w.size() == 2) {
      plan.name = w[1];
    } else if (w[0] == "message_bits" && w.size() == 2) {
      plan.message_bits = static_cast<std::uint32_t>(to_size(line, w[1]));
    } else if (w[0] == "reveal" && w.size() == 5) {
      PlanReveal r;
      r.name = w[1];
      r.value = static_cast<int>(to_size(line, w[2]));
      if (r.value >= static_cast<int>(plan.shapes.size())) fail(line, "unknown register");
      r.den = Int::from_string(w[3]);
      r.bound = Int::from_string(w[4]);
      if (r.den.sign() <= 0) fail(line, "denominator must be positive");
      plan.reveals.push_back(std::move(r));
    } else if (w[0] == "v" && w.size() >= 3) {
      PlanStep s;
      s.id = static_cast<int>(to_size(line, w[1]));
      s.op = w[2];
      if (s.id != static_cast<int>(plan.shapes.size())) fail(line, "registers must be in order");
      auto arg = [&](std::size_t i) {
        if (i >= w.size()) fail(line, "missing operand of " + s.op);
        std::size_t v = to_size(line, w[i]);
        if (v >= plan.shapes.size()) fail(line, "operand %" + w[i] + " is not defined yet");
        s.args.push_back(static_cast<int>(v));
        return static_cast<int>(v);
      };
      Shape shape;
      bool l2 = false;
      if (s.op == "input") {
        if (w.size() < 6) fail(line, "input needs NAME SCALE RANK DIMS");
        PlanInput in;
        in.name = w[3];
        in.scale = Int::from_string(w[4]);
        std::size_t rank = to_size(line, w[5]);
        if (rank > 2 || (w.size() != 6 + rank && w.size() != 11 + rank)) {
          fail(line, "input needs NAME SCALE RANK with rank 0, 1 or 2, DIMS [from SRC C0 C1 C2]");
        }
        for (std::size_t i = 0; i < rank; ++i) shape.push_back(to_size(line, w[6 + i]));
        if (w.size() == 11 + rank) {
          if (w[6 + rank] != "from") fail(line, "expected 'from SRC C0 C1 C2'");
          in.source = w[7 + rank];
          const PlanInput& src = plan.input(in.source);
          if (src.shape != shape || !src.source.empty()) {
            fail(line, "derived input '" + in.name + "' must have the shape of a plain input");
          }
          for (int c = 0; c < 3; ++c) in.coeffs[c] = std::stod(w[8 + rank + c]);
        }
        in.shape = shape;
        in.value = s.id;
        plan.inputs.push_back(in);
        s.words = {w[3]};
      } else if (s.op == "add" || s.op == "sub") {
        int a = arg(3), b = arg(4);
        shape = broadcast_shapes(line, plan.shapes[a], plan.shapes[b]);
        l2 = plan.level2[a] || plan.level2[b];
      } else if (s.op == "neg" || s.op == "transpose") {
        int a = arg(3);
        shape = plan.shapes[a];
        if (s.op == "transpose") std::reverse(shape.begin(), shape.end());
        l2 = plan.level2[a];
      } else if (s.op == "mulc" || s.op == "addc") {
        int a = arg(3);
        if (w.size() != 5) fail(line, s.op + " needs a register and an integer constant");
        Int::from_string(w[4]);
        s.words = {w[4]};
        shape = plan.shapes[a];
        l2 = plan.level2[a];
      } else if (s.op == "sum") {
        int a = arg(3);
        std::size_t n = to_size(line, w.at(4));
        if (w.size() != 5 + n) fail(line, "sum needs NAXES AXIS...");
        std::set<std::size_t> axes;
        for (std::size_t i = 0; i < n; ++i) axes.insert(to_size(line, w[5 + i]));
        for (std::size_t i = 0; i < plan.shapes[a].size(); ++i) {
          if (!axes.count(i)) shape.push_back(plan.shapes[a][i]);
        }
        for (std::size_t i = 0; i < n; ++i) s.words.push_back(w[5 + i]);
        l2 = plan.level2[a];
      } else if (s.op == "broadcast") {
        int a = arg(3);
        std::size_t rank = to_size(line, w.at(4));
        for (std::size_t i = 0; i < rank; ++i) shape.push_back(to_size(line, w.at(5 + i)));
        std::size_t nmap = to_size(line, w.at(5 + rank));
        if (nmap != plan.shapes[a].size() || w.size() != 6 + rank + nmap) {
          fail(line, "broadcast map must name one result axis per operand axis");
        }
        for (std::size_t i = 0; i < nmap; ++i) {
          std::size_t ax = to_size(line, w[6 + rank + i]);
          std::size_t d = plan.shapes[a][i];
          if (ax >= rank || (d != 1 && d != shape[ax])) fail(line, "bad broadcast axis");
          s.words.push_back(w[6 + rank + i]);
        }
        l2 = plan.level2[a];
      } else if (s.op == "contract") {
        int a = arg(3), b = arg(4);
        if (w.size() != 6) fail(line, "contract needs A B SPEC");
        if (plan.level2[a] || plan.level2[b]) {
          fail(line, "contract of a level-2 value: the program has degree > 2");
        }
        Spec sp = parse_spec(line, w[5]);
        if (sp.lhs.size() != plan.shapes[a].size() || sp.rhs.size() != plan.shapes[b].size()) {
          fail(line, "spec " + w[5] + " does not match the operand ranks");
        }
        std::map<char, std::size_t> extent;
        auto note = [&](const std::string& letters, const Shape& sh) {
          for (std::size_t i = 0; i < letters.size(); ++i) {
            auto [it, fresh] = extent.emplace(letters[i], sh[i]);
            if (!fresh && it->second != sh[i]) fail(line, "spec " + w[5] + ": extents differ");
          }
        };
        note(sp.lhs, plan.shapes[a]);
        note(sp.rhs, plan.shapes[b]);
        for (char ch : sp.out) {
          if (!extent.count(ch)) fail(line, "spec " + w[5] + ": output letter not in operands");
          shape.push_back(extent[ch]);
        }
        s.words = {w[5]};
        l2 = true;
      } else {
        fail(line, "unknown statement '" + s.op + "'");
      }
      plan.shapes.push_back(shape);
      plan.level2.push_back(l2);
      plan.steps.push_back(std::move(s));
    } else {
      fail(line, "unknown statement '" + w[0] + "'");
    }
  }
  if (!header) fail(line, "empty labeled program");
  if (plan.message_bits == 0) fail(line, "message_bits is missing");
  if (plan.reveals.empty()) fail(line, "the program reveals nothing");
  return plan;
}

namespace {

class Evaluator {
 public:
  Evaluator(const Plan& plan, Mode mode, const Int& msg_modulus, const PublicKey* pk)
      : plan_(plan), mode_(mode), m_(msg_modulus), pk_(pk) {
    if (mode == Mode::kServer) {
      if (pk == nullptr) throw std::invalid_argument("server evaluation needs the public key");
      ring_ = std::make_unique<ModRing>(pk->ct_modulus);
      mont_ = std::make_unique<Montgomery>(pk->ct_modulus);
    }
    // Which level-1 registers need beta (server): those a contraction or a promotion to
    // level 2 reads, and what they are computed from.
    need_c_.assign(plan.shapes.size(), false);
    for (std::size_t i = plan.steps.size(); i-- > 0;) {
      const PlanStep& s = plan.steps[i];
      bool result_l2 = plan.level2[s.id];
      for (int a : s.args) {
        if (plan.level2[a]) continue;
        if (s.op == "contract" || result_l2 || need_c_[s.id]) need_c_[a] = true;
      }
    }
  }

  // The inputs are borrowed: read in place, never copied or freed here (the caller owns them
  // and frees them after the evaluation; freeing millions of ciphertexts is no part of it).
  std::vector<Array> run(const std::map<std::string, Array>& inputs) {
    values_.resize(plan_.shapes.size());
    view_.assign(plan_.shapes.size(), nullptr);
    for (const PlanStep& s : plan_.steps) {
      if (s.op == "input") {
        auto it = inputs.find(s.words[0]);
        if (it == inputs.end()) throw std::invalid_argument("missing input '" + s.words[0] + "'");
        const Array& in = it->second;
        if (in.shape != plan_.shapes[s.id] || in.a.size() != shape_size(in.shape)) {
          throw std::invalid_argument("input '" + s.words[0] + "' has shape " +
                                      shape_text(in.shape) + ", the program expects " +
                                      shape_text(plan_.shapes[s.id]));
        }
        if (mode_ == Mode::kServer && need_c_[s.id] && in.c.size() != in.a.size()) {
          throw std::invalid_argument("input '" + s.words[0] + "' lacks its ciphertexts");
        }
        view_[s.id] = &in;
      } else {
        Array out = step(s);
        out.level2 = plan_.level2[s.id];
        out.shape = plan_.shapes[s.id];
        values_[s.id] = std::move(out);
        view_[s.id] = &values_[s.id];
      }
      release_dead(s);
    }
    std::vector<Array> result;
    for (const auto& r : plan_.reveals) result.push_back(val(r.value));
    return result;
  }

 private:
  bool server() const { return mode_ == Mode::kServer; }
  const Array& val(int v) const { return *view_[v]; }
  bool has_c(int v) const { return server() && (plan_.level2[v] || need_c_[v]); }

  void reduce(Int& x) const { mpz_mod(x.get(), x.get(), m_.get()); }

  // The level-2 ciphertext of element i of register v (promoting a level-1 value:
  // Enc(a; 1) * beta = Enc(m)).
  Int ciphertext(int v, std::size_t i) const {
    const Array& x = val(v);
    if (plan_.level2[v]) return x.c[i];
    Int ct = encode_public(*pk_, x.a[i]);
    ring_->mul(ct, ct, x.c[i]);
    return ct;
  }

  Array step(const PlanStep& s) {
    const bool l2 = plan_.level2[s.id];
    const Shape& shape = plan_.shapes[s.id];
    const std::size_t n = shape_size(shape);
    Array out;
    out.a.resize(n);
    if (s.op == "add" || s.op == "sub") {
      const bool sub = s.op == "sub";
      int x = s.args[0], y = s.args[1];
      auto ix = gather_index(plan_.shapes[x], shape, trailing_map(plan_.shapes[x], shape));
      auto iy = gather_index(plan_.shapes[y], shape, trailing_map(plan_.shapes[y], shape));
      // The a side: level-1 a/b/m, or (mask) mu: a promoted level-1 operand has mu = 0.
      const bool x_in = !(mode_ == Mode::kMask && l2 && !plan_.level2[x]);
      const bool y_in = !(mode_ == Mode::kMask && l2 && !plan_.level2[y]);
      if (!(server() && l2)) {
        for (std::size_t i = 0; i < n; ++i) {
          Int& r = out.a[i];
          if (x_in) r = val(x).a[ix[i]];
          if (y_in) {
            if (sub) {
              mpz_sub(r.get(), r.get(), val(y).a[iy[i]].get());
            } else {
              mpz_add(r.get(), r.get(), val(y).a[iy[i]].get());
            }
          }
          reduce(r);
        }
      }
      if (has_c(s.id)) {
        // The subtrahend's ciphertexts are inverted once per source element (a broadcast
        // operand, such as the column sums of X - mean(X), repeats each one many times).
        const std::size_t ny = shape_size(plan_.shapes[y]);
        std::vector<Int> cy(ny);
        math::parallel_for(ny, [&](std::size_t j) {
          cy[j] = l2 ? ciphertext(y, j) : val(y).c[j];
          if (sub) cy[j] = ring_->inv(cy[j]);
        });
        out.c.resize(n);
        math::parallel_for(n, [&](std::size_t i) {
          Int cx = l2 ? ciphertext(x, ix[i]) : val(x).c[ix[i]];
          ring_->mul(out.c[i], cx, cy[iy[i]]);
        });
      }
      if (server() && l2) out.a.clear();
    } else if (s.op == "neg" || s.op == "mulc") {
      int x = s.args[0];
      Int c = s.op == "neg" ? Int(-1) : Int::from_string(s.words[0]);
      if (!(server() && l2)) {
        for (std::size_t i = 0; i < n; ++i) {
          mpz_mul(out.a[i].get(), val(x).a[i].get(), c.get());
          reduce(out.a[i]);
        }
      } else {
        out.a.clear();
      }
      if (has_c(s.id)) {
        Int e;
        mpz_abs(e.get(), c.get());
        out.c.resize(n);
        math::parallel_for(n, [&](std::size_t i) {
          out.c[i] = ring_->pow(val(x).c[i], e);
          if (c.sign() < 0) out.c[i] = ring_->inv(out.c[i]);
        });
      }
    } else if (s.op == "addc") {
      int x = s.args[0];
      Int c = Int::from_string(s.words[0]);
      // Level 1: the constant joins a (server) and m (plain), never b. Level 2: it joins mu
      // (mask) and the value (plain); the server's ciphertext is unchanged.
      const bool adds =
          mode_ == Mode::kPlain || (mode_ == Mode::kServer && !l2) || (mode_ == Mode::kMask && l2);
      if (server() && l2) {
        out.a.clear();
      } else {
        for (std::size_t i = 0; i < n; ++i) {
          out.a[i] = val(x).a[i];
          if (adds) {
            mpz_add(out.a[i].get(), out.a[i].get(), c.get());
            reduce(out.a[i]);
          }
        }
      }
      if (has_c(s.id)) out.c = val(x).c;
    } else if (s.op == "transpose" || s.op == "broadcast") {
      int x = s.args[0];
      std::vector<std::size_t> map;
      if (s.op == "transpose") {
        for (std::size_t i = 0; i < plan_.shapes[x].size(); ++i) {
          map.push_back(plan_.shapes[x].size() - 1 - i);
        }
      } else {
        for (const auto& w : s.words) map.push_back(std::stoul(w));
      }
      auto ix = gather_index(plan_.shapes[x], shape, map);
      if (!(server() && l2)) {
        for (std::size_t i = 0; i < n; ++i) out.a[i] = val(x).a[ix[i]];
      } else {
        out.a.clear();
      }
      if (has_c(s.id)) {
        out.c.resize(n);
        for (std::size_t i = 0; i < n; ++i) out.c[i] = val(x).c[ix[i]];
      }
    } else if (s.op == "sum") {
      int x = s.args[0];
      const Shape& src = plan_.shapes[x];
      std::vector<bool> summed(src.size(), false);
      for (const auto& w : s.words) summed[std::stoul(w)] = true;
      // Output index of each source element.
      std::vector<std::size_t> target(shape_size(src));
      std::vector<std::size_t> coord(src.size(), 0);
      for (std::size_t f = 0; f < target.size(); ++f) {
        std::size_t t = 0;
        for (std::size_t ax = 0; ax < src.size(); ++ax) {
          if (!summed[ax]) t = t * src[ax] + coord[ax];
        }
        target[f] = t;
        for (std::size_t ax = src.size(); ax-- > 0;) {
          if (++coord[ax] < src[ax]) break;
          coord[ax] = 0;
        }
      }
      if (!(server() && l2)) {
        for (std::size_t f = 0; f < target.size(); ++f) {
          mpz_add(out.a[target[f]].get(), out.a[target[f]].get(), val(x).a[f].get());
        }
        for (auto& r : out.a) reduce(r);
      } else {
        out.a.clear();
      }
      if (has_c(s.id)) {
        std::vector<std::vector<std::size_t>> members(n);
        for (std::size_t f = 0; f < target.size(); ++f) members[target[f]].push_back(f);
        out.c.resize(n);
        for (std::size_t o = 0; o < n; ++o) out.c[o] = product(x, members[o]);
      }
    } else if (s.op == "contract") {
      contract(s, out);
    } else {
      throw std::logic_error("labhe evaluate: unknown op " + s.op);
    }
    return out;
  }

  // The product of the ciphertexts `members` of register x, in parallel chunks: Montgomery
  // products of the raw values (k of them give their product times R^-(k-1), corrected once).
  Int product(int x, const std::vector<std::size_t>& members) const {
    const std::size_t n = members.size();
    if (n == 0) return Int(1);
    const Montgomery& mont = *mont_;
    const std::size_t sz = mont.limbs();
    const std::size_t chunks =
        std::max<std::size_t>(1, std::min<std::size_t>(math::thread_cap(), n / 1024));
    std::vector<mp_limb_t> partial(chunks * sz);
    math::parallel_for(chunks, [&](std::size_t t) {
      std::vector<mp_limb_t> next(sz), scratch(2 * sz);
      mp_limb_t* acc = partial.data() + t * sz;
      const std::size_t begin = n * t / chunks, end = n * (t + 1) / chunks;
      mont.load(acc, val(x).c[members[begin]]);
      for (std::size_t i = begin + 1; i < end; ++i) {
        mont.load(next.data(), val(x).c[members[i]]);
        mont.mul(acc, acc, next.data(), scratch.data());
      }
    });
    std::vector<mp_limb_t> scratch(2 * sz);
    for (std::size_t t = 1; t < chunks; ++t) {
      mont.mul(partial.data(), partial.data(), partial.data() + t * sz, scratch.data());
    }
    return mont.unscale(partial.data(), n);
  }

  void contract(const PlanStep& s, Array& out) {
    const int x = s.args[0], y = s.args[1];
    const Spec spec = parse_spec(0, s.words[0]);
    const Shape& shape = plan_.shapes[s.id];
    auto pairs = contraction_pairs(spec, plan_.shapes[x], plan_.shapes[y], shape);
    const std::size_t n = pairs.size();
    // x @ x-style contractions with the two output letters swapped are symmetric: compute the
    // upper triangle only.
    bool symmetric = false;
    if (x == y && spec.out.size() == 2 && spec.lhs.size() == spec.rhs.size()) {
      std::string swapped = spec.lhs;
      for (char& ch : swapped) {
        if (ch == spec.out[0]) {
          ch = spec.out[1];
        } else if (ch == spec.out[1]) {
          ch = spec.out[0];
        }
      }
      symmetric = swapped == spec.rhs;
    }
    const std::size_t cols = shape.size() == 2 ? shape[1] : 1;
    auto mirror = [&](std::size_t o) -> std::size_t {
      if (!symmetric) return o;
      std::size_t i = o / cols, j = o % cols;
      return i <= j ? o : j * cols + i;
    };
    const Array& ax = val(x);
    const Array& ay = val(y);
    // The a side (plain: m m'; mask: b b').
    if (!server()) {
      for (std::size_t o = 0; o < n; ++o) {
        if (mirror(o) != o) continue;
        Int acc;
        for (auto [i, j] : pairs[o]) mpz_addmul(acc.get(), ax.a[i].get(), ay.a[j].get());
        reduce(acc);
        out.a[o] = std::move(acc);
      }
      for (std::size_t o = 0; o < n; ++o) out.a[o] = out.a[mirror(o)];
      return;
    }
    // Server: Enc(sum a a') * prod beta^a' beta'^a, one multi-exponentiation per output, over
    // the operands' ciphertexts converted to Montgomery form once (each is a base of many
    // outputs).
    out.a.clear();
    out.c.resize(n);
    const Montgomery& mont = *mont_;
    const std::size_t sz = mont.limbs();
    auto convert = [&](const Array& arr) {
      std::vector<mp_limb_t> limbs(arr.c.size() * sz);
      math::parallel_for(
          arr.c.size(), [&](std::size_t i) { mont.to(limbs.data() + i * sz, arr.c[i]); }, 4096);
      return limbs;
    };
    const std::vector<mp_limb_t> mx = convert(ax);
    const std::vector<mp_limb_t> my = x == y ? std::vector<mp_limb_t>{} : convert(ay);
    const mp_limb_t* cx = mx.data();
    const mp_limb_t* cy = x == y ? mx.data() : my.data();
    auto one = [&](std::size_t o) {
      Int plain;
      std::vector<const mp_limb_t*> bases;
      std::vector<const Int*> exps;
      std::vector<Int> doubled;
      doubled.reserve(pairs[o].size());
      for (auto [i, j] : pairs[o]) {
        mpz_addmul(plain.get(), ax.a[i].get(), ay.a[j].get());
        if (x == y && i == j) {
          doubled.emplace_back();
          mpz_mul_2exp(doubled.back().get(), ax.a[i].get(), 1);
          bases.push_back(cx + i * sz);
          exps.push_back(&doubled.back());
        } else {
          bases.push_back(cx + i * sz);
          exps.push_back(&ay.a[j]);
          bases.push_back(cy + j * sz);
          exps.push_back(&ax.a[i]);
        }
      }
      reduce(plain);
      std::vector<mp_limb_t> prod(sz);
      multiexp(mont, bases, exps, prod.data());
      Int ct = mont.from(prod.data());
      Int enc = encode_public(*pk_, plain);
      ring_->mul(out.c[o], ct, enc);
    };
    std::vector<std::size_t> todo;
    std::size_t work = 0;
    for (std::size_t o = 0; o < n; ++o) {
      if (mirror(o) == o) {
        todo.push_back(o);
        work += pairs[o].size();
      }
    }
    // Threads over outputs when there are many of them or they are small: a multi-
    // exponentiation split over threads pays its bucket phase once per chunk (for 8192 bases
    // of 108-bit exponents, 123K products in two chunks against 110K whole). Few large
    // outputs (the n = 2^20, d = 2 covariance has 3) are each split over the threads instead.
    const std::size_t threads = static_cast<std::size_t>(math::thread_cap());
    if (todo.size() >= 2 && (work / todo.size() < 1024 || todo.size() >= 4 * threads)) {
      math::parallel_for(todo.size(), [&](std::size_t t) { one(todo[t]); });
    } else {
      for (std::size_t o : todo) one(o);  // each multi-exponentiation is parallel inside
    }
    for (std::size_t o = 0; o < n; ++o) {
      if (mirror(o) != o) out.c[o] = out.c[mirror(o)];
    }
  }

  // Frees registers no later step or reveal reads (the big input arrays above all).
  void release_dead(const PlanStep& current) {
    if (last_use_.empty()) {
      last_use_.assign(plan_.shapes.size(), -1);
      for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
        for (int a : plan_.steps[i].args) last_use_[a] = static_cast<int>(i);
      }
      for (const auto& r : plan_.reveals) last_use_[r.value] = static_cast<int>(plan_.steps.size());
      step_index_ = 0;
    }
    for (int a : current.args) {
      if (last_use_[a] == static_cast<int>(step_index_)) {
        values_[a] = Array{};  // owned registers only (inputs are borrowed)
      }
    }
    ++step_index_;
  }

  const Plan& plan_;
  Mode mode_;
  const Int& m_;
  const PublicKey* pk_;
  std::unique_ptr<ModRing> ring_;
  std::unique_ptr<Montgomery> mont_;
  std::vector<bool> need_c_;
  std::vector<Array> values_;
  std::vector<const Array*> view_;  // register -> its array (an input of the caller, or values_)
  std::vector<int> last_use_;
  std::size_t step_index_ = 0;
};

}  // namespace

std::vector<Array> evaluate(const Plan& plan, Mode mode, const Int& msg_modulus,
                            const PublicKey* pk, const std::map<std::string, Array>& inputs) {
  Evaluator ev(plan, mode, msg_modulus, pk);
  return ev.run(inputs);
}

double decode_reveal(const PlanReveal& reveal, const Int& raw, const Int& msg_modulus) {
  Int v = raw;
  Int half;
  mpz_tdiv_q_2exp(half.get(), msg_modulus.get(), 1);
  if (mpz_cmp(v.get(), half.get()) >= 0) mpz_sub(v.get(), v.get(), msg_modulus.get());
  Int mag;
  mpz_abs(mag.get(), v.get());
  if (mpz_cmp(mag.get(), reveal.bound.get()) > 0) {
    throw std::runtime_error(
        "revealed value '" + reveal.name + "' decrypts to " + std::to_string(mag.bits()) +
        "-bit magnitude, above its bound of " + std::to_string(reveal.bound.bits()) +
        " bits: the result was not computed by this labeled program under these keys (wrong "
        "program, wrong provider keys or labels, or a tampered result)");
  }
  mpq_t q;
  mpq_init(q);
  mpq_set_num(q, v.get());
  mpq_set_den(q, reveal.den.get());
  mpq_canonicalize(q);
  // Round to nearest, ties to even (mpq_get_d truncates): compare q with the neighbour away
  // from zero, exactly.
  double d0 = mpq_get_d(q);
  double d1 = std::nextafter(d0, mpq_sgn(q) < 0 ? -INFINITY : INFINITY);
  mpq_t e0, e1;
  mpq_inits(e0, e1, nullptr);
  mpq_set_d(e0, d0);
  mpq_set_d(e1, d1);
  mpq_sub(e0, q, e0);
  mpq_sub(e1, e1, q);
  mpq_abs(e0, e0);
  mpq_abs(e1, e1);
  int c = mpq_cmp(e1, e0);
  double d = d0;
  if (c < 0 || (c == 0 && (std::bit_cast<std::uint64_t>(d0) & 1))) d = d1;
  mpq_clears(e0, e1, q, nullptr);
  return d;
}

}  // namespace hec::labhe
