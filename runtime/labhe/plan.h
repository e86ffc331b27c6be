// A labeled program ("plan"), as the compiler's labhe lowering writes it
// (passes/lower_stat_to_labhe.py), and its evaluation in the three places it runs:
//  - kServer: level-1 values are (a, beta) arrays, a = m - b in the message space and
//    beta = Enc(b); level-2 values are ciphertext arrays (Barbosa-Catalano-Fiore §3: a product
//    of level-1 values is Enc(a1 a2) beta1^a2 beta2^a1 = Enc(m1 m2 - b1 b2));
//  - kMask: the receiver's offline decryption: level-1 values are the PRF masks b, level-2
//    values the masks mu with (value) = Dec(ct) + mu (mu of a product is b1 b2);
//  - kPlain: the same program on the plaintext integers (the exact integer reference).
// The text format is one statement a line:
//   hec-labhe-plan 1 | program NAME | message_bits K
//   v ID input NAME SCALE RANK D... [from SRC C0 C1 C2]
//                                          (a secret input, fixed-point scale SCALE; with
//                                          `from`, derived by SRC's provider)
//   v ID add|sub A B   v ID neg A   v ID mulc A C   v ID addc A C
//   v ID sum A NAXES AXIS...   v ID transpose A   v ID broadcast A RANK D... NMAP MAP...
//   v ID contract A B SPEC    (two level-1 operands, an einsum spec such as nd,ne->de)
//   reveal NAME ID DEN BOUND  (the value is numerator / DEN with |numerator| <= BOUND)
// Registers are numbered in order. Shapes have rank 0, 1 or 2; add and sub broadcast as
// NumPy does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "labhe/ahe.h"
#include "labhe/bigint.h"

namespace hec::labhe {

using Shape = std::vector<std::size_t>;
std::size_t shape_size(const Shape& s);
std::string shape_text(const Shape& s);

struct PlanInput {
  std::string name;
  Int scale;  // fixed-point scale: the encrypted integer is round(x * scale)
  Shape shape;
  int value = -1;
  // A derived input (owner-side precomputation): c0 + c1 x + c2 x^2 of input `source`, which
  // the provider of `source` computes from its rows and encrypts under this input's labels.
  std::string source;
  double coeffs[3] = {0, 0, 0};
};

struct PlanStep {
  int id = -1;
  std::string op;
  std::vector<int> args;
  std::vector<std::string> words;  // op-specific: constants, axes, shapes, einsum spec
};

struct PlanReveal {
  std::string name;
  int value = -1;
  Int den;
  Int bound;
};

class Plan {
 public:
  // Parses and checks the text (shapes, operand levels); throws std::invalid_argument with the
  // line number and what is wrong.
  static Plan parse(const std::string& text);
  std::string name;
  std::uint32_t message_bits = 0;
  std::string text;
  std::string digest;  // BLAKE2b-256 of the text, hex
  std::vector<PlanInput> inputs;
  std::vector<PlanStep> steps;
  std::vector<PlanReveal> reveals;
  // Per register: its shape and whether it is level 2 (inferred by parse).
  std::vector<Shape> shapes;
  std::vector<bool> level2;
  const PlanInput& input(const std::string& name) const;
};

enum class Mode { kPlain, kMask, kServer };

// A value of the plan. `a`: level-1 a (server), b (mask) or m (plain); level-2 mu (mask) or
// value (plain). `c`: beta (server, level 1, only where a later step needs it) or the
// ciphertexts (server, level 2). Every residue is reduced into [0, M).
struct Array {
  bool level2 = false;
  Shape shape;
  std::vector<Int> a;
  std::vector<Int> c;
};

// Runs the plan. `inputs` holds one level-1 Array per plan input (by name; server mode with
// `c` = beta), read in place: the caller keeps them (they are neither copied nor freed here).
// `pk` is needed in server mode only. Returns one Array per reveal, in order.
std::vector<Array> evaluate(const Plan& plan, Mode mode, const Int& msg_modulus,
                            const PublicKey* pk, const std::map<std::string, Array>& inputs);

// Reads a revealed value: `raw` in [0, M) is the numerator mod M; returns numerator / den as
// a double after checking |numerator| <= bound. Throws std::runtime_error naming the reveal
// otherwise (a wrong program, wrong keys or a tampered result decrypt to a value outside).
double decode_reveal(const PlanReveal& reveal, const Int& raw, const Int& msg_modulus);

}  // namespace hec::labhe
