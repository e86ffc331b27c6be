// The description of a generated program, the same for every scheme (targets/cpp writes one
// `ProgramSpec` per program): parameters, the size parameters and their bounds, the owner
// inputs the encrypt role reads, the encrypted input arrays with their layouts, and the
// revealed outputs. CKKS programs also carry levels and scales (log_scale); BFV programs carry
// the plaintext modulus instead and leave the scales at 0.
//
// Layouts (as in the simulator, targets/sim/simulator.py): an array of logical shape
// [d0, ..., dk] is held as a C-order array of ciphertexts of shape [d0, ..., d(k-1),
// ceil(dk / slots)] when packed (the last axis in the slots, zero padded), [d0, ..., d(k-1),
// ceil(dk / (2 slots))] when complex (CKKS only: column block 2j in the real parts of the slots,
// block 2j + 1 in the imaginary parts) and [d0, ..., dk] when replicated (one value in every
// slot). kCoeff (CKKS only) is coeff_layout.h's packed counts. kGrid (CKKS only; docs/layout.md)
// reads a ciphertext's slots as R rows x C = slots / R columns, slot r * C + c, with a role per
// array axis (GridLayout): a `row` axis index i lies in grid row i mod R of ciphertext block
// i div R, a `col` axis index j in column j mod C of block j div C, an `unrolled` axis has one
// ciphertext per index, and a direction no axis uses holds replicas. The array of ciphertexts
// keeps the axes in order, each row or column axis replaced by its block count.
//
// kDiagonal and kCyclic (CKKS only; docs/layout.md, "Diagonal layout") are the operand and
// result layouts of the Halevi-Shoup matrix-vector product (diag_matvec). A kDiagonal matrix
// [A, K] (DiagonalLayout: P >= A and Q >= K powers of two, L = max(P, Q) the period,
// D = min(P, Q) the ciphertexts, b the baby step dividing D) is D ciphertexts: ciphertext i, in
// giant group g = i div b, holds at slot s, with j = (s - g b) mod L, the entry
// M[j mod P, (j + i) mod Q] (0 where the row is >= A or the column >= K): generalized
// diagonal i pre-rotated by -g b, repeated every L slots. A kCyclic vector [K] (period Q >= K,
// a power of two) is one ciphertext whose slot s holds v[s mod Q] when s mod Q < K, else 0 (a
// computed cyclic value may hold anything there; decryption reads slots 0..K-1 only). Both
// need their period <= slots, are encrypted whole by one owner and never streamed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hec::program {

using Sizes = std::map<std::string, std::size_t>;

enum class Layout { kPacked, kReplicated, kComplex, kCoeff, kGrid, kDiagonal, kCyclic };

// The axis roles and rows of a kGrid array (compiler/dialects/he.py: Grid). At most one row and
// one column axis; rows is a power of two dividing the slot count.
enum class GridRole { kRow, kCol, kUnrolled };
struct GridLayout {
  std::size_t rows = 1;
  std::vector<GridRole> roles = {};
  std::size_t columns(std::size_t slots) const { return slots / rows; }
  // The axis with `role`, or -1 when no axis has it (that direction holds replicas).
  int axis(GridRole role) const;
  // The layout of the array without its first axis (a streamed block's row-local arrays).
  GridLayout without_first() const;
};

// The shape of a kDiagonal matrix (compiler/dialects/he.py: Diagonal): P = rows, Q = cols
// (powers of two, the matrix zero-padded to P x Q) and the baby step b (a power of two
// dividing D = min(P, Q)).
struct DiagonalLayout {
  std::size_t rows = 1, cols = 1, baby = 1;
  std::size_t count() const { return rows < cols ? rows : cols; }   // D: the ciphertexts
  std::size_t period() const { return rows < cols ? cols : rows; }  // L: slots of one copy
  std::size_t giants() const { return count() / baby; }             // G = D / b
};

// A value domain declared in the source program (`in {0, 1, 2}`, `in [-4.0, 4.0]`).
struct Domain {
  std::vector<double> set;  // finite set, or empty for an interval
  double lo = 0.0, hi = 0.0;
  bool bounded = false;  // false: no domain declared
};

// One row of a data owner's source inputs (passes/owner_side.py): data[k] points at source
// k's values in this row (one value for a source with one value per row).
struct OwnerRow {
  std::vector<const double*> data;
};
// An owner-side value over one row: out[j] for its columns j < count (generated from
// compiler/owner_expr.py).
using OwnerFn = void (*)(const OwnerRow&, std::size_t count, double* out);

// A packed count of the coeff layout (coeff_layout.h): its owner expression, radix (larger than
// its largest possible sum), its largest per-row value, and whether it has one value per row.
struct CoeffDigit {
  std::string name;
  OwnerFn value = nullptr;
  std::uint64_t radix = 2;
  std::uint64_t top = 1;
  bool per_row = false;
};

struct CoeffPacking {
  std::vector<CoeffDigit> digits;
  std::size_t group = 1;  // columns per coefficient
};

// A data owner's input as the source program declares it (the NAME of --input NAME=FILE).
struct SourceSpec {
  std::string name;
  std::vector<std::string> dims;
  Domain domain;
};

struct InputSpec {
  std::string id;      // the array's name in the program (file names use it), e.g. "X_1"
  std::string source;  // the input it encrypts (the NAME of --input NAME=FILE), e.g. "X"
  Layout layout = Layout::kPacked;
  std::vector<std::string> dims;  // size-parameter names or decimal literals
  int level = 0;
  double log_scale = 0.0;  // CKKS only
  bool streamed =
      false;  // its leading axis is the stream dimension: encrypted and read per row block
  Domain domain;
  // Owner-side values: computed by the encrypting owner from these sources (empty: `source`
  // itself is encrypted) with `value` (per element) or, for kCoeff, `packing`.
  std::vector<std::string> sources = {};
  OwnerFn value = nullptr;
  CoeffPacking packing = {};
  GridLayout grid = {};          // kGrid: rows and axis roles
  DiagonalLayout diagonal = {};  // kDiagonal: P, Q and the baby step
  std::size_t period = 0;        // kCyclic: the period Q
};

// A lower bound of an output's range bound, valid at every sizes >= `corner` (each named
// size parameter at least its value).
struct RangeRow {
  std::vector<std::pair<std::string, std::size_t>> corner;
  double range = 0.0;
};

struct OutputSpec {
  std::string name;
  Layout layout = Layout::kPacked;
  std::vector<std::string> dims;
  int level = 0;
  double log_scale = 0.0;  // CKKS only
  int degree = 1;
  // CKKS: the standard deviation of the Gaussian the decrypt role adds to each revealed value
  // (real and imaginary part of each slot), in the ciphertext's value units (before the
  // result's factor), sized by compiler/analysis/flooding.py; 0 for exact outputs (kCoeff
  // counts are rounded to integers, BFV decrypts exactly: neither reveals its error).
  double flood_sigma = 0.0;
  // The bits of precision left after that flooding (relative to the output's range bound;
  // compiler/analysis/flooding.py): at least the promised bits when compiled with flooding
  // budgeted (the default); a program compiled with --no-flooding keeps its promise only
  // under decrypt --no-flooding, and decrypt refuses to flood an output below one bit, whose
  // values would be noise.
  double flooded_precision_bits = 64.0;
  // The precision promise at the actual sizes (compiler/analysis/actual_sizes.py): the bits
  // promised relative to the range bound, the error bound at the declared size bounds (it
  // holds at every smaller size), and lower bounds of the range bound, each valid from its
  // corner of sizes up. Decrypt refuses an output whose bits at the run's sizes,
  // log2(range / error_bound) minus the flooding cost when it floods, fall below the promise,
  // unless overridden (--accept-precision-shortfall, stamped on the output). No rows: the
  // promise holds at every size.
  double promised_bits = 0.0;
  double error_bound = 0.0;
  std::vector<RangeRow> range_rows = {};
  // kCoeff: the result file it reads (several counts share one) and the digit it is.
  std::string result = {};
  int digit = -1;
  CoeffPacking packing = {};
  GridLayout grid = {};    // kGrid: rows and axis roles
  std::size_t period = 0;  // kCyclic: the period
};

struct ProgramSpec {
  std::string name;
  std::string source;  // the .hec file it was compiled from
  std::string digest;  // hex digest of the compiled IR: ties every file to this program
  int log_n = 0;
  // BFV only: the plaintext modulus t (a prime = 1 mod 2N); 0 for CKKS. BFV programs leave
  // output_moduli, key_level, conjugates and every log_scale at their defaults.
  std::vector<std::uint64_t> output_moduli, moduli, special_moduli;
  std::uint64_t plain_modulus = 0;
  int dnum = 0;
  int security_bits = 0;
  bool insecure = false;
  bool relinearizes = false;  // keygen makes a relinearization key
  bool conjugates = false;    // keygen makes a conjugation key (complex layouts are unpacked)
  std::vector<int> rotations;
  int key_level = 0;
  std::vector<std::pair<std::string, std::size_t>> params;  // size parameters and bounds
  std::string stream_dim;                                   // "" when nothing streams
  // Rows of the stream dimension per streamed unit: the grid rows R when the streamed inputs
  // are grid arrays (one ciphertext set holds a block of R rows), else 1.
  std::size_t stream_block = 1;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<SourceSpec> sources;  // every owner input the encrypt role reads
  // The bits of precision decrypt's noise flooding costs every flooded output (what an
  // output's promised_bits are checked after, when decrypt floods).
  double flooding_cost_bits = 0.0;
};

// Ciphertext-array shape of a logical shape under a layout (`slots` per ciphertext).
// kCoeff: `group` columns per coefficient, 2 slots coefficients per ciphertext; kGrid: `grid`;
// kDiagonal: [D] (`diagonal`); kCyclic: [1].
std::vector<std::size_t> array_shape(Layout layout, const std::vector<std::size_t>& dims,
                                     std::size_t slots, std::size_t group = 1,
                                     const GridLayout& grid = {},
                                     const DiagonalLayout& diagonal = {});

// Where element `index` (C order over the logical `dims`) of a kGrid array lies: the
// ciphertext (C order over array_shape) and its slot (the first replica when a direction holds
// replicas).
struct GridPlace {
  std::size_t ct, slot;
};
GridPlace grid_place(const GridLayout& grid, const std::vector<std::size_t>& dims,
                     std::size_t slots, std::size_t index);

// Where entry (row, col) of a kDiagonal matrix lies: its ciphertext i and its first slot (the
// copies follow every period() slots). row < P, col < Q.
struct DiagonalPlace {
  std::size_t ct, slot;
};
DiagonalPlace diagonal_place(const DiagonalLayout& diagonal, std::size_t row, std::size_t col);

// The slots of a kDiagonal matrix [a, k] (`values` in C order): D vectors of `slots` values,
// each entry at its place and every period() slots after it, 0 in the padding. Throws
// std::invalid_argument when the matrix exceeds P x Q or the period exceeds the slots.
std::vector<std::vector<double>> diagonal_slots(const DiagonalLayout& diagonal, std::size_t a,
                                                std::size_t k, const double* values,
                                                std::size_t slots);
// The slots of a kCyclic vector of `k` values with period `period`: v[s mod period] where
// s mod period < k, else 0. Throws std::invalid_argument when k > period or the period does
// not divide the slots.
std::vector<double> cyclic_slots(std::size_t period, std::size_t k, const double* values,
                                 std::size_t slots);

// The layout's name in metadata files ("packed", "replicated", "complex", "coeff", "grid",
// "diagonal", "cyclic").
const char* layout_name(Layout layout);

}  // namespace hec::program
