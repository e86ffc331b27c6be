// FHEW gate programs: a Boolean netlist covered by one-bootstrap cells (the compiler's
// compiler/circuits cover, written by targets/fhew), read from a versioned text file and
// evaluated level by level, each level's gates spread over the runtime's OpenMP threads
// (Context::eval_batch).
//
// Format (version 1; one statement a line, tokens separated by blanks, '#' starts a comment):
//
//   hec-fhew-gates 1
//   wires W                      # wire ids 0 .. W-1; wire 0 is the constant false
//   input NAME WIRE...           # an input word, least significant bit first
//   linear OUT K LEAF... M... C  # K in 1..3 leaf wires, K multipliers, constant (q/8 units):
//                                #   OUT = [(2 sum M_i LEAF_i + C) mod 8 < 4], one bootstrap
//   mux OUT S T F                # OUT = S ? T : F (literals), two blind rotations
//   output NAME LITERAL...       # an output word; a literal is 2 * wire + complemented
//   end
//
// Every wire is defined once (by an input or a gate), never wire 0; every reference names a
// defined wire; the gates form no cycle (their order in the file is free); names are
// [A-Za-z_][A-Za-z0-9_]* of at most 64 characters, unique per kind; at most 2^22 wires and 4096
// bits a word. Violations throw std::runtime_error naming the origin, the line and the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fhew/fhew.h"

namespace hec::fhew {

constexpr std::uint32_t kGateProgramVersion = 1;
constexpr std::uint32_t kMaxGateProgramWires = 1u << 22;
constexpr std::size_t kMaxGateProgramWordBits = 4096;

struct GateProgram {
  struct Word {
    std::string name;
    std::vector<std::uint32_t> bits;  // inputs: wires; outputs: literals (2 * wire + neg)
  };
  struct Cell {
    std::uint32_t out = 0;
    bool is_mux = false;
    std::vector<std::uint32_t> in;  // linear: leaf wires; MUX: literals s, t, f
    LinearGate linear;              // linear cells only
    int line = 0;                   // where it was defined (for errors)
  };
  std::uint32_t wires = 0;
  std::vector<Word> inputs, outputs;
  std::vector<Cell> cells;
  // Cell indices by bootstrap level (level 1 first), computed from the dependencies.
  std::vector<std::vector<std::size_t>> levels;

  std::size_t input_bits() const;
  // 1 per linear cell, 2 per MUX.
  std::size_t bootstraps() const;
};

// Parses and validates (bounds, definitions, references, cycles, each linear cell's shape by
// linear_gate_shape); `origin` names the text in errors.
GateProgram parse_gate_program(std::string_view text, const std::string& origin);
GateProgram load_gate_program(const std::string& path);

struct GateRunStats {
  // Blind rotations the context performed during the run (Context::blind_rotations(); exact
  // when no other evaluation shares the context meanwhile).
  std::size_t bootstraps = 0;
  std::size_t levels = 0;
  double seconds = 0;
};

// Evaluates `program` on the input bits (the input words' bits concatenated in file order);
// returns the output bits in the same way. Every linear cell is checked against the context's
// parameters first (Context::check_linear). Throws std::invalid_argument on a wrong number of
// inputs.
std::vector<Ciphertext> run_gate_program(const Context& ctx, const EvalKey& ek,
                                         const GateProgram& program,
                                         std::span<const Ciphertext> inputs,
                                         GateRunStats* stats = nullptr);

// `evaluations` independent runs of `program` at once: `inputs` holds each evaluation's input
// bits one evaluation after another, and so does the result. Each level's gates of every
// evaluation form one Context::eval_batch, so the threads are busy even when a level of one
// evaluation holds fewer gates than threads. Memory: program.wires ciphertexts per evaluation.
std::vector<Ciphertext> run_gate_program_batch(const Context& ctx, const EvalKey& ek,
                                               const GateProgram& program,
                                               std::span<const Ciphertext> inputs,
                                               std::size_t evaluations,
                                               GateRunStats* stats = nullptr);

}  // namespace hec::fhew
