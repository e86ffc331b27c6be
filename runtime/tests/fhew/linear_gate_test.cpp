// Tests for the one-bootstrap linear gate (Context::eval_linear, Gate::kLinear): 1,000 random
// encrypted evaluations per gate kind — the fixed 2-input gates, MUX, and as linear gates the
// majority of 3 with random polarity, the parity of 3 and random 2-input functions — with
// inputs drawn from a pool of earlier gate outputs (so most inputs carry a bootstrapped
// error, not a fresh one); the failure probability per bootstrap from the noise analysis;
// argument validation. Fast tier: the insecure small-n GINX test set; slow tier: GINX STD128.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fhew/fhew.h"
#include "tests/fhew/keys.h"

namespace hec::fhew {
namespace {

using test_keys::Keys;
using test_keys::keys_for;

// Output of a linear gate on plaintext bits: [(2 sum m_i x_i + c) mod 8 < 4].
bool plain_linear(const LinearGate& g, const std::vector<bool>& x) {
  int u = g.constant;
  for (std::size_t i = 0; i < x.size(); ++i) u += 2 * g.multipliers[i] * (x[i] ? 1 : 0);
  return ((u % 8) + 8) % 8 < 4;
}

// The majority of three inputs, input i complemented when bit i of `polarity` is set: a
// complemented input contributes 1 - x, i.e. multiplier -1 and 1 more to the sum; the
// majority is sum >= 2, i.e. u = 2 sum + c with c = -3 - 2 * (complemented inputs) + 8k.
LinearGate majority(unsigned polarity) {
  LinearGate g;
  int flips = 0;
  for (int i = 0; i < 3; ++i) {
    const bool neg = (polarity >> i) & 1;
    g.multipliers.push_back(neg ? -1 : 1);
    flips += neg ? 1 : 0;
  }
  g.constant = -3 + 2 * flips;
  return g;
}

bool plain_majority(unsigned polarity, const std::vector<bool>& x) {
  int s = 0;
  for (int i = 0; i < 3; ++i) s += (x[i] != static_cast<bool>((polarity >> i) & 1)) ? 1 : 0;
  return s >= 2;
}

enum class Kind { kFixed, kMux, kMajority, kParity, kTwoInput };

// 1,000 evaluations of one kind in batches of 50 (eval_batch, all threads); inputs are drawn
// from a pool of 24 ciphertexts whose entries are replaced by the outputs.
void random_evaluations(const Params& p, Kind kind, Gate fixed, int count) {
  const Keys& k = keys_for(p);
  const Context& ctx = *k.ctx;
  math::Seed seed{};
  seed[0] = static_cast<std::uint8_t>(17 + static_cast<int>(kind) * 8 + static_cast<int>(fixed));
  math::Prng rng(seed);
  constexpr std::size_t kPool = 24, kBatch = 50;
  std::vector<Ciphertext> pool;
  std::vector<bool> value;
  for (std::size_t i = 0; i < kPool; ++i) {
    value.push_back(rng.uniform_below(2) == 1);
    pool.push_back(ctx.encrypt(k.sk, value.back()));
  }
  // The two-input functions as linear gates: (m1, m2, c) covering AND/OR/NAND/NOR with any
  // input polarity and XOR/XNOR.
  const std::vector<LinearGate> two_input = {
      {{1, 1}, -3},  {{1, -1}, -1}, {{-1, 1}, -1}, {{-1, -1}, 1}, {{1, 1}, -1},
      {{-1, -1}, 3}, {{1, -1}, 1},  {{2, 2}, -2},  {{-2, -2}, 2}, {{2, -2}, 2}};
  int wrong = 0, done = 0;
  const std::uint64_t rotations_before = ctx.blind_rotations();
  while (done < count) {
    const std::size_t n = std::min<std::size_t>(kBatch, static_cast<std::size_t>(count - done));
    std::vector<LinearGate> gates(n);
    std::vector<Context::GateOp> ops;
    std::vector<bool> expected;
    for (std::size_t j = 0; j < n; ++j) {
      std::size_t in[3];
      for (auto& i : in) i = rng.uniform_below(kPool);
      const std::vector<bool> x = {value[in[0]], value[in[1]], value[in[2]]};
      switch (kind) {
        case Kind::kFixed: {
          static const std::map<Gate, int> table = {{Gate::kAnd, 0b1000},  {Gate::kOr, 0b1110},
                                                    {Gate::kNand, 0b0111}, {Gate::kNor, 0b0001},
                                                    {Gate::kXor, 0b0110},  {Gate::kXnor, 0b1001}};
          ops.push_back({fixed, &pool[in[0]], &pool[in[1]]});
          expected.push_back((table.at(fixed) >> (x[0] + 2 * x[1])) & 1);
          break;
        }
        case Kind::kMux:
          ops.push_back({Gate::kMux, &pool[in[0]], &pool[in[1]], &pool[in[2]]});
          expected.push_back(x[0] ? x[1] : x[2]);
          break;
        case Kind::kMajority: {
          const auto polarity = static_cast<unsigned>(rng.uniform_below(8));
          gates[j] = majority(polarity);
          ops.push_back({Gate::kLinear, &pool[in[0]], &pool[in[1]], &pool[in[2]], &gates[j]});
          expected.push_back(plain_majority(polarity, x));
          EXPECT_EQ(plain_linear(gates[j], x), expected.back());
          break;
        }
        case Kind::kParity:
          gates[j] = {{2, 2, 2}, -2};
          ops.push_back({Gate::kLinear, &pool[in[0]], &pool[in[1]], &pool[in[2]], &gates[j]});
          expected.push_back(x[0] != x[1] ? !x[2] : x[2]);
          break;
        case Kind::kTwoInput:
          gates[j] = two_input[rng.uniform_below(two_input.size())];
          ops.push_back({Gate::kLinear, &pool[in[0]], &pool[in[1]], nullptr, &gates[j]});
          expected.push_back(plain_linear(gates[j], {x[0], x[1]}));
          break;
      }
    }
    std::vector<Ciphertext> out = ctx.eval_batch(k.ek, ops);
    for (std::size_t j = 0; j < n; ++j) {
      if (ctx.decrypt(k.sk, out[j]) != expected[j]) ++wrong;
      const std::size_t slot = rng.uniform_below(kPool);
      pool[slot] = std::move(out[j]);
      value[slot] = expected[j];
    }
    done += static_cast<int>(n);
  }
  EXPECT_EQ(wrong, 0) << "of " << count << " evaluations";
  EXPECT_EQ(ctx.blind_rotations() - rotations_before,
            static_cast<std::uint64_t>(count) * (kind == Kind::kMux ? 2 : 1));
}

void every_kind(const Params& p) {
  for (Gate g : {Gate::kAnd, Gate::kOr, Gate::kNand, Gate::kNor, Gate::kXor, Gate::kXnor}) {
    SCOPED_TRACE(gate_name(g));
    random_evaluations(p, Kind::kFixed, g, 1000);
  }
  for (Kind kind : {Kind::kMux, Kind::kMajority, Kind::kParity, Kind::kTwoInput}) {
    SCOPED_TRACE(static_cast<int>(kind));
    random_evaluations(p, kind, Gate::kAnd, 1000);
  }
}

TEST(FhewLinear, ThousandRandomEvaluationsPerKindToyGinx) {
  every_kind(Params::toy_insecure(BlindRotation::kGinx));
}

TEST(FhewLinear, ThousandRandomEvaluationsPerKindGinxStd128Slow) {
  every_kind(Params::std128(BlindRotation::kGinx));
}

// Every assignment of majority (each polarity) and parity at STD128 (fast: 72 bootstraps).
TEST(FhewLinear, ExhaustiveThreeInputGatesGinxStd128) {
  const Keys& k = keys_for(Params::std128(BlindRotation::kGinx));
  const Context& ctx = *k.ctx;
  const LinearGate parity{{2, 2, 2}, -2};
  for (unsigned x = 0; x < 8; ++x) {
    const std::vector<bool> bits = {(x & 1) != 0, (x & 2) != 0, (x & 4) != 0};
    std::vector<Ciphertext> in;
    for (bool b : bits) in.push_back(ctx.encrypt(k.sk, b));
    const Ciphertext* ptr[3] = {&in[0], &in[1], &in[2]};
    for (unsigned polarity = 0; polarity < 8; ++polarity) {
      const Ciphertext out = ctx.eval_linear(k.ek, majority(polarity), ptr);
      EXPECT_EQ(ctx.decrypt(k.sk, out), plain_majority(polarity, bits)) << x << " " << polarity;
    }
    EXPECT_EQ(ctx.decrypt(k.sk, ctx.eval_linear(k.ek, parity, ptr)),
              bits[0] != bits[1] ? !bits[2] : bits[2])
        << x;
  }
}

TEST(FhewLinear, FailureProbabilityFromTheNoiseAnalysis) {
  const Params ginx = Params::std128(BlindRotation::kGinx);
  const Params ap = Params::std128(BlindRotation::kAp);
  // Weight 2 is the fixed gates' design point: the same figure as noise_model().
  EXPECT_NEAR(linear_failure_log2(ginx, 2.0), noise_model(ginx).failure_log2, 1e-9);
  // Weight 3 (majority, parity of 3): 2^-80.3 for GINX STD128 (binary secret, n = 680,
  // q_ks = 2^16, pairs of coefficients unrolled; 2^-42.4 with the ternary n = 556,
  // q_ks = 2^14 set before it), within 2^-40.
  EXPECT_NEAR(linear_failure_log2(ginx, 3.0), -80.3, 0.1);
  EXPECT_LE(linear_failure_log2(ginx, 3.0), -40.0);
  EXPECT_EQ(max_linear_noise_weight(ginx), 3.0);
  // AP STD128 carries weight 2 but not 3 (2^-36.5): its largest admissible weight is below 3.
  EXPECT_GT(linear_failure_log2(ap, 3.0), -40.0);
  EXPECT_GE(max_linear_noise_weight(ap), 2.0);
  EXPECT_LT(max_linear_noise_weight(ap), 3.0);
  EXPECT_NEAR(linear_failure_log2(ap, max_linear_noise_weight(ap)), -40.0, 1e-6);
  std::printf(
      "per bootstrap, GINX STD128: W = 2 -> 2^%.1f, W = 3 -> 2^%.1f; AP STD128: W = 2 "
      "-> 2^%.1f, W = 3 -> 2^%.1f, max W %.3f\n",
      linear_failure_log2(ginx, 2.0), linear_failure_log2(ginx, 3.0), linear_failure_log2(ap, 2.0),
      linear_failure_log2(ap, 3.0), max_linear_noise_weight(ap));
}

TEST(FhewLinear, ShapeOfTheModelsCells) {
  EXPECT_EQ(linear_gate_shape({{1, 1, 1}, -3}).margin, 1);
  EXPECT_DOUBLE_EQ(linear_gate_shape({{1, 1, 1}, -3}).noise_weight, 3.0);
  EXPECT_EQ(linear_gate_shape({{2, 2, 2}, -2}).margin, 2);
  EXPECT_DOUBLE_EQ(linear_gate_shape({{2, 2, 2}, -2}).noise_weight, 3.0);
  EXPECT_DOUBLE_EQ(linear_gate_shape({{2, 2}, -2}).noise_weight, 2.0);
  EXPECT_DOUBLE_EQ(linear_gate_shape({{1, 1}, -3}).noise_weight, 2.0);
}

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(FhewLinear, RejectsWhatOneBootstrapCannotCarry) {
  const Keys& k = keys_for(Params::toy_insecure(BlindRotation::kGinx));
  const Context& ctx = *k.ctx;
  const Ciphertext a = ctx.encrypt(k.sk, true);
  const Ciphertext* four[4] = {&a, &a, &a, &a};
  expect_invalid([&] { linear_gate_shape({{}, 0}); }, "0 inputs");
  expect_invalid(
      [&] {
        linear_gate_shape({{1, 1, 1, 1}, -3});
      },
      "4 inputs; one bootstrap takes 1 to 3");
  expect_invalid([&] { linear_gate_shape({{9, 1}, -3}); }, "multiplier 0 = 9 is outside");
  // u = 2x + 0: x = 0 lands on the boundary 0.
  expect_invalid([&] { linear_gate_shape({{1}, 0}); }, "decision boundary");
  // u = 4x + 2y + 1: margin 1, weight 5 > 3.
  expect_invalid([&] { ctx.check_linear({{2, 1}, 1}); }, "noise weight 5");
  // u = 4x + 4y - 4z + 4: every reachable u is 0 or 4.
  expect_invalid([&] { linear_gate_shape({{2, 2, -2}, 4}); }, "decision boundary");
  expect_invalid(
      [&] {
        ctx.eval_linear(k.ek, {{2, 2, 2}, -2}, std::span(four, 2));
      },
      "2 inputs for 3 multipliers");
  // AP STD128 cannot carry weight 3 within 2^-40.
  const Context ap(Params::std128(BlindRotation::kAp));
  expect_invalid([&] { ap.check_linear({{2, 2, 2}, -2}); }, "within 2^-40");
  EXPECT_NO_THROW(ap.check_linear({{1, 1}, -3}));
  const Context::GateOp missing{Gate::kLinear, &a, &a};
  expect_invalid([&] { ctx.eval_batch(k.ek, std::span(&missing, 1)); }, "has no LinearGate");
  const LinearGate three{{2, 2, 2}, -2};
  const Context::GateOp short_op{Gate::kLinear, &a, &a, nullptr, &three};
  expect_invalid([&] { ctx.eval_batch(k.ek, std::span(&short_op, 1)); }, "needs 3 inputs");
  // A ciphertext under another key.
  const Keys& other = keys_for(Params::toy_insecure(BlindRotation::kAp));
  const Ciphertext foreign = other.ctx->encrypt(other.sk, true);
  const Ciphertext* mixed[2] = {&a, &foreign};
  expect_invalid([&] { ctx.eval_linear(k.ek, {{1, 1}, -3}, mixed); }, "another key");
}

}  // namespace
}  // namespace hec::fhew
