// Tests for FHEW gate programs (fhew/gate_program.h): a hand-written 2-bit adder (full adders
// as one parity and one majority cell each) and a MUX with complemented literals and the
// constant wire, run encrypted on every input; levels and the bootstrap count; every parse
// error; random mutations of a valid program (parse or a clean error, never a crash).
#include "fhew/gate_program.h"
#include "tests/fhew/keys.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hec::fhew {
namespace {

// a, b: 2 bits (wires 1-2, 3-4); s = a + b (3 bits). Bit 0: s0 = a0 ^ b0 (XOR, margin 2),
// c1 = a0 & b0; bit 1: s1 = parity(a1, b1, c1), c2 = maj(a1, b1, c1). Then a MUX:
// m = a0 ? ~b0 : 0 and the constant outputs 0 and 1.
constexpr const char* kAdder = R"(hec-fhew-gates 1
# a 2-bit adder
wires 10
input a 1 2
input b 3 4
linear 5 2 1 3 2 2 -2      # s0 = a0 ^ b0
linear 6 2 1 3 1 1 -3      # c1 = a0 & b0
linear 7 3 2 4 6 2 2 2 -2  # s1 = parity
linear 8 3 2 4 6 1 1 1 -3  # c2 = majority
mux 9 2 7 0                # a0 ? ~b0 : 0
output s 10 14 16
output m 18
output k 0 1
end
)";

using test_keys::Keys;

const Keys& toy_keys() { return test_keys::keys_for(Params::toy_insecure(BlindRotation::kGinx)); }

TEST(FhewGateProgram, RunsAnAdderEncrypted) {
  const GateProgram prog = parse_gate_program(kAdder, "adder");
  ASSERT_EQ(prog.levels.size(), 2u);
  EXPECT_EQ(prog.levels[0].size(), 3u);  // s0, c1, the MUX
  EXPECT_EQ(prog.levels[1].size(), 2u);
  EXPECT_EQ(prog.bootstraps(), 6u);
  const Keys& k = toy_keys();
  for (unsigned a = 0; a < 4; ++a) {
    for (unsigned b = 0; b < 4; ++b) {
      std::vector<Ciphertext> in;
      for (unsigned v : {a & 1, a >> 1, b & 1, b >> 1}) in.push_back(k.ctx->encrypt(k.sk, v));
      GateRunStats stats;
      const auto out = run_gate_program(*k.ctx, k.ek, prog, in, &stats);
      ASSERT_EQ(out.size(), 6u);
      unsigned s = 0;
      for (int i = 0; i < 3; ++i) s |= (k.ctx->decrypt(k.sk, out[i]) ? 1u : 0u) << i;
      EXPECT_EQ(s, a + b) << a << " + " << b;
      EXPECT_EQ(k.ctx->decrypt(k.sk, out[3]), (a & 1) != 0 && (b & 1) == 0) << a << " " << b;
      EXPECT_FALSE(k.ctx->decrypt(k.sk, out[4]));
      EXPECT_TRUE(k.ctx->decrypt(k.sk, out[5]));
      EXPECT_EQ(stats.bootstraps, 6u);
      EXPECT_EQ(stats.levels, 2u);
    }
  }
  const std::vector<Ciphertext> too_few(3, k.ctx->encrypt(k.sk, false));
  EXPECT_THROW(run_gate_program(*k.ctx, k.ek, prog, too_few), std::invalid_argument);
}

TEST(FhewGateProgram, BatchOfEvaluationsMatchesEveryInput) {
  // All 16 input pairs in one run: one eval_batch per level over every evaluation.
  const GateProgram prog = parse_gate_program(kAdder, "adder");
  const Keys& k = toy_keys();
  std::vector<Ciphertext> in;
  for (unsigned a = 0; a < 4; ++a) {
    for (unsigned b = 0; b < 4; ++b) {
      for (unsigned v : {a & 1, a >> 1, b & 1, b >> 1}) in.push_back(k.ctx->encrypt(k.sk, v));
    }
  }
  GateRunStats stats;
  const auto out = run_gate_program_batch(*k.ctx, k.ek, prog, in, 16, &stats);
  ASSERT_EQ(out.size(), 16u * 6u);
  EXPECT_EQ(stats.bootstraps, 16u * 6u);
  for (unsigned e = 0; e < 16; ++e) {
    const unsigned a = e / 4, b = e % 4;
    unsigned s = 0;
    for (unsigned i = 0; i < 3; ++i) s |= (k.ctx->decrypt(k.sk, out[6 * e + i]) ? 1u : 0u) << i;
    EXPECT_EQ(s, a + b) << a << " + " << b;
    EXPECT_EQ(k.ctx->decrypt(k.sk, out[6 * e + 3]), (a & 1) != 0 && (b & 1) == 0);
    EXPECT_FALSE(k.ctx->decrypt(k.sk, out[6 * e + 4]));
    EXPECT_TRUE(k.ctx->decrypt(k.sk, out[6 * e + 5]));
  }
  EXPECT_THROW(run_gate_program_batch(*k.ctx, k.ek, prog, in, 15), std::invalid_argument);
  EXPECT_THROW(run_gate_program_batch(*k.ctx, k.ek, prog, {}, 0), std::invalid_argument);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(FhewGateProgram, BadProgramsGetClearErrors) {
  const std::string ok = kAdder;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty gate program"},
      {replaced(ok, "hec-fhew-gates 1", "hec-ckks 1"), "not an FHEW gate program"},
      {replaced(ok, "hec-fhew-gates 1", "hec-fhew-gates 2"), "version 2; this runtime reads 1"},
      {replaced(ok, "wires 10", "input x 1"), "expected 'wires W'"},
      {replaced(ok, "wires 10", "wires 0"), "wire count 0 is outside [1, 4194304]"},
      {replaced(ok, "wires 10", "wires 99999999999"), "is outside"},
      {replaced(ok, "wires 10", "wires ten"), "'ten' is not an integer"},
      {replaced(ok, "input b 3 4", "input b 3 12"), "input wire 12 is outside [0, 9]"},
      {replaced(ok, "input b 3 4", "input b 3 1"), "wire 1 is already defined on line 4"},
      {replaced(ok, "input b 3 4", "input b 3 0"), "wire 0 is the constant false"},
      {replaced(ok, "input b 3 4", "input a 3 4"), "input 'a' is declared twice"},
      {replaced(ok, "input b 3 4", "input 9b 3 4"), "name '9b' is not"},
      {replaced(ok, "input b 3 4", "input b"), "needs a name and 1 to 4096 bits"},
      {replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 2 1 3 2 2"), "'linear' takes 7 fields"},
      {replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 4 1 3 2 2 -2"),
       "linear input count 4 is outside [1, 3]"},
      {replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 2 1 3 2 9 -2"),
       "multiplier 9 is outside [-8, 8]"},
      {replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 2 1 3 2 2 0"), "decision boundary"},
      {replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 2 1 3 2 2 -99"),
       "constant -99 is outside [-64, 64]"},
      {replaced(ok, "mux 9 2 7 0", ""), "wire 9 is used but never defined"},
      {replaced(ok, "mux 9 2 7 0", "mux 9 2 7"), "'mux' takes 4 fields"},
      {replaced(ok, "mux 9 2 7 0", "mux 9 2 7 20"), "mux literal 20 is outside [0, 19]"},
      {replaced(ok, "mux 9 2 7 0", "mux 9 18 7 0"), "lies on a cycle"},
      {replaced(replaced(ok, "linear 5 2 1 3 2 2 -2", "linear 5 2 1 6 2 2 -2"),
                "linear 6 2 1 3 1 1 -3", "linear 6 2 1 5 1 1 -3"),
       "lies on a cycle"},
      {replaced(ok, "mux 9 2 7 0", "mux 8 2 7 0"), "wire 8 is already defined on line 9"},
      {replaced(ok, "output k 0 1", "output s 0 1"), "output 's' is declared twice"},
      {replaced(ok, "output k 0 1", "nand 3 4"), "unknown statement 'nand'"},
      {replaced(ok, "end\n", ""), "truncated gate program: no 'end'"},
      {ok + "output z 1\n", "statement after 'end'"},
      {replaced(replaced(replaced(ok, "output s 10 14 16\n", ""), "output m 18\n", ""),
                "output k 0 1\n", ""),
       "gate program without outputs"},
  };
  for (const auto& [text, needle] : cases) {
    try {
      parse_gate_program(text, "p.gates");
      ADD_FAILURE() << "accepted; expected an error mentioning '" << needle << "'";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.rfind("p.gates:", 0), 0u) << what;
    }
  }
  EXPECT_THROW(load_gate_program("/nonexistent/p.gates"), std::runtime_error);
}

// Random truncations and byte changes of a valid program: each parses or throws
// std::runtime_error (the sanitizer build checks that nothing else goes wrong).
TEST(FhewGateProgram, MutatedProgramsParseOrFailCleanly) {
  const std::string ok = kAdder;
  math::Seed seed{};
  seed[0] = 23;
  math::Prng rng(seed);
  const std::string alphabet = "0123456789 -#\nabcdefghijklmnopqrstuvwxyz_+";
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = ok;
    const int edits = 1 + static_cast<int>(rng.uniform_below(4));
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng.uniform_below(text.size());
      switch (rng.uniform_below(3)) {
        case 0:
          text.resize(at);
          break;
        case 1:
          text[at] = alphabet[rng.uniform_below(alphabet.size())];
          break;
        default:
          text.insert(at, 1, alphabet[rng.uniform_below(alphabet.size())]);
      }
      if (text.empty()) break;
    }
    try {
      const GateProgram p = parse_gate_program(text, "fuzz");
      ++accepted;
      std::size_t in_levels = 0;
      for (const auto& l : p.levels) in_levels += l.size();
      EXPECT_EQ(in_levels, p.cells.size());
    } catch (const std::runtime_error&) {
    }
  }
  EXPECT_GT(accepted, 0);  // comment and number edits that keep the program valid
}

}  // namespace
}  // namespace hec::fhew
