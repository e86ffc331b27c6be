// Encrypted evaluation of a random boolean circuit that contains an 8-bit ripple-carry adder
// and an 8-bit comparator (a < b, a == b), evaluated level by level with Context::eval_batch
// as generated circuit programs do; every wire is decrypted and compared with the plaintext
// evaluation. Fast tier: about 150 gates on the GINX STD128 set; slow tier: 2,000 gates.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "fhew/fhew.h"

namespace hec::fhew {
namespace {

struct Wire {
  Gate gate = Gate::kNot;
  bool is_input = false;
  int in[3] = {-1, -1, -1};
  int level = 0;
};

class Circuit {
 public:
  int input() {
    Wire w;
    w.is_input = true;
    wires_.push_back(w);
    return static_cast<int>(wires_.size()) - 1;
  }
  int gate(Gate g, int x, int y = -1, int z = -1) {
    Wire w;
    w.gate = g;
    w.in[0] = x;
    w.in[1] = y;
    w.in[2] = z;
    for (int i : w.in) {
      if (i >= 0) w.level = std::max(w.level, wires_[i].level + 1);
    }
    wires_.push_back(w);
    ++gates_;
    return static_cast<int>(wires_.size()) - 1;
  }
  int gates() const { return gates_; }
  const std::vector<Wire>& wires() const { return wires_; }

  std::vector<bool> evaluate_plain(const std::vector<bool>& inputs) const {
    std::vector<bool> v(wires_.size());
    std::size_t next_input = 0;
    for (std::size_t i = 0; i < wires_.size(); ++i) {
      const Wire& w = wires_[i];
      if (w.is_input) {
        v[i] = inputs[next_input++];
        continue;
      }
      const bool x = v[w.in[0]], y = w.in[1] >= 0 ? v[w.in[1]] : false;
      switch (w.gate) {
        case Gate::kAnd:
          v[i] = x && y;
          break;
        case Gate::kOr:
          v[i] = x || y;
          break;
        case Gate::kNand:
          v[i] = !(x && y);
          break;
        case Gate::kNor:
          v[i] = !(x || y);
          break;
        case Gate::kXor:
          v[i] = x != y;
          break;
        case Gate::kXnor:
          v[i] = x == y;
          break;
        case Gate::kNot:
          v[i] = !x;
          break;
        case Gate::kMux:
          v[i] = x ? y : v[w.in[2]];
          break;
        case Gate::kLinear:  // not built by this test
          break;
      }
    }
    return v;
  }

  // Level by level: every gate of one level depends only on earlier levels.
  std::vector<Ciphertext> evaluate_encrypted(const Context& ctx, const EvalKey& ek,
                                             const std::vector<Ciphertext>& inputs) const {
    std::vector<Ciphertext> v(wires_.size());
    std::size_t next_input = 0;
    int max_level = 0;
    for (std::size_t i = 0; i < wires_.size(); ++i) {
      if (wires_[i].is_input) v[i] = inputs[next_input++];
      max_level = std::max(max_level, wires_[i].level);
    }
    for (int level = 1; level <= max_level; ++level) {
      std::vector<Context::GateOp> ops;
      std::vector<std::size_t> targets;
      for (std::size_t i = 0; i < wires_.size(); ++i) {
        const Wire& w = wires_[i];
        if (w.is_input || w.level != level) continue;
        ops.push_back({w.gate, &v[w.in[0]], w.in[1] >= 0 ? &v[w.in[1]] : nullptr,
                       w.in[2] >= 0 ? &v[w.in[2]] : nullptr});
        targets.push_back(i);
      }
      auto out = ctx.eval_batch(ek, ops);
      for (std::size_t k = 0; k < targets.size(); ++k) v[targets[k]] = std::move(out[k]);
    }
    return v;
  }

 private:
  std::vector<Wire> wires_;
  int gates_ = 0;
};

struct Built {
  Circuit circuit;
  std::vector<int> a, b, sum;
  int less = -1, equal = -1;
};

// 8-bit adder and comparator on inputs a, b, then random gates over all wires until `total`.
Built build(int total, math::Prng& shape) {
  Built r;
  Circuit& c = r.circuit;
  for (int i = 0; i < 8; ++i) r.a.push_back(c.input());
  for (int i = 0; i < 8; ++i) r.b.push_back(c.input());
  for (int i = 0; i < 4; ++i) c.input();
  // Ripple-carry adder: s_i = a_i ^ b_i ^ c_i, c_{i+1} = (a_i & b_i) | (c_i & (a_i ^ b_i)).
  int carry = -1;
  for (int i = 0; i < 8; ++i) {
    const int x = c.gate(Gate::kXor, r.a[i], r.b[i]);
    const int g = c.gate(Gate::kAnd, r.a[i], r.b[i]);
    if (carry < 0) {
      r.sum.push_back(x);
      carry = g;
    } else {
      r.sum.push_back(c.gate(Gate::kXor, x, carry));
      carry = c.gate(Gate::kOr, g, c.gate(Gate::kAnd, carry, x));
    }
  }
  r.sum.push_back(carry);
  // Comparator from the least significant bit: lt = (a_i != b_i) ? b_i : lt; eq = AND of XNORs.
  int lt = c.gate(Gate::kAnd, c.gate(Gate::kNot, r.a[0]), r.b[0]);
  int eq = c.gate(Gate::kXnor, r.a[0], r.b[0]);
  for (int i = 1; i < 8; ++i) {
    const int diff = c.gate(Gate::kXor, r.a[i], r.b[i]);
    lt = c.gate(Gate::kMux, diff, r.b[i], lt);
    eq = c.gate(Gate::kAnd, eq, c.gate(Gate::kNot, diff));
  }
  r.less = lt;
  r.equal = eq;
  constexpr Gate kinds[] = {Gate::kAnd, Gate::kOr,   Gate::kNand, Gate::kNor,
                            Gate::kXor, Gate::kXnor, Gate::kNot,  Gate::kMux};
  while (c.gates() < total) {
    const auto wires = static_cast<std::uint64_t>(c.wires().size());
    const Gate g = kinds[shape.uniform_below(8)];
    const int x = static_cast<int>(shape.uniform_below(wires));
    const int y = static_cast<int>(shape.uniform_below(wires));
    const int z = static_cast<int>(shape.uniform_below(wires));
    if (g == Gate::kNot) {
      c.gate(g, x);
    } else if (g == Gate::kMux) {
      c.gate(g, x, y, z);
    } else {
      c.gate(g, x, y);
    }
  }
  return r;
}

void run_circuit(int total, int trials) {
  const Context ctx(Params::std128(BlindRotation::kGinx));
  const SecretKey sk = ctx.keygen_secret();
  const EvalKey ek = ctx.keygen_eval(sk);
  math::Seed seed{};
  seed[0] = 9;
  math::Prng shape(seed);  // the circuit's shape and inputs are public test data
  const Built built = build(total, shape);
  ASSERT_GE(built.circuit.gates(), total);
  for (int t = 0; t < trials; ++t) {
    const unsigned a = static_cast<unsigned>(shape.uniform_below(256));
    const unsigned b = static_cast<unsigned>(shape.uniform_below(256));
    std::vector<bool> inputs;
    for (int i = 0; i < 8; ++i) inputs.push_back((a >> i) & 1);
    for (int i = 0; i < 8; ++i) inputs.push_back((b >> i) & 1);
    for (int i = 0; i < 4; ++i) inputs.push_back(shape.uniform_below(2) == 1);
    std::vector<Ciphertext> enc;
    for (bool bit : inputs) enc.push_back(ctx.encrypt(sk, bit));
    const auto plain = built.circuit.evaluate_plain(inputs);
    const auto cts = built.circuit.evaluate_encrypted(ctx, ek, enc);
    int wrong = 0;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      if (ctx.decrypt(sk, cts[i]) != plain[i]) ++wrong;
    }
    EXPECT_EQ(wrong, 0) << "of " << plain.size() << " wires";
    unsigned sum = 0;
    for (int i = 0; i < 9; ++i)
      sum |= static_cast<unsigned>(ctx.decrypt(sk, cts[built.sum[i]])) << i;
    EXPECT_EQ(sum, a + b) << a << " + " << b;
    EXPECT_EQ(ctx.decrypt(sk, cts[built.less]), a < b) << a << " < " << b;
    EXPECT_EQ(ctx.decrypt(sk, cts[built.equal]), a == b) << a << " == " << b;
  }
}

TEST(FhewCircuit, AdderComparatorAndRandomGates) { run_circuit(150, 1); }

TEST(FhewCircuit, RandomCircuit2000GatesSlow) { run_circuit(2000, 1); }

}  // namespace
}  // namespace hec::fhew
