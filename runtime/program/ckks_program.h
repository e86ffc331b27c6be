// The layer every generated CKKS program stands on (targets/cpp emits code against it): the
// program's description (`ProgramSpec`: parameters, inputs with the level and scale the
// compiler chose, outputs, keys), ciphertext arrays with the layouts of the ckks dialect
// (compiler/dialects/ckks.py), one function per array op, row streaming with accumulators, and
// the four roles of the PNAS setting (Blatt et al. 2020; DESIGN.md §6):
//
//   keygen  --out KEYDIR                    coordinator: KEYDIR/secret, KEYDIR/public and
//                                           KEYDIR/eval/ (only the keys the program needs)
//   encrypt --pk KEYDIR/public --input NAME=FILE.npy ... [--rows a:b] --out CTDIR
//                                           data owner (several owners may each encrypt rows)
//   compute --eval KEYDIR/eval --in CTDIR --out RESDIR
//                                           server: evaluation keys only, streams over rows
//   decrypt --sk KEYDIR/secret --in RESDIR --out DIR
//                                           coordinator: one NAME.npy per revealed value
//   info FILE                               the header of any key, ciphertext or array file
//
// Layouts (as in the simulator, targets/sim/simulator.py): an array of logical shape
// [d0, ..., dk] is held as a C-order array of ciphertexts of shape [d0, ..., d(k-1),
// ceil(dk / slots)] when packed (the last axis in the slots, zero padded), [d0, ..., d(k-1),
// ceil(dk / (2 slots))] when complex (column block 2j in the real parts of the slots, block
// 2j + 1 in the imaginary parts) and [d0, ..., dk] when replicated (one value in every slot).
// Streaming: when the program's large inputs share a leading size parameter (the individuals N),
// `compute` reads them a chunk of rows at a time (a few rows per thread, positioned reads in
// parallel, the block file's checksum verified when its last row is read), runs the row bodies in
// parallel and folds the chunk into accumulators (sums and fused dot products over N, see RowSink),
// so memory is bounded by the accumulators and one chunk, not by N.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/context.h"
#include "ckks/evaluator.h"
#include "ckks/kernels.h"
#include "ckks/keys.h"
#include "program/manifest.h"

namespace hec::program {

using Ct = ckks::Ciphertext;
using CtPtr = std::shared_ptr<const Ct>;
using Sizes = std::map<std::string, std::size_t>;

enum class Layout { kPacked, kReplicated, kComplex, kCoeff };

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
  Layout layout;
  std::vector<std::string> dims;  // size-parameter names or decimal literals
  int level;
  double log_scale;
  bool streamed;  // its leading axis is the stream dimension: encrypted and read per row block
  Domain domain;
  // Owner-side values: computed by the encrypting owner from these sources (empty: `source`
  // itself is encrypted) with `value` (per element) or, for kCoeff, `packing`.
  std::vector<std::string> sources = {};
  OwnerFn value = nullptr;
  CoeffPacking packing = {};
};

struct OutputSpec {
  std::string name;
  Layout layout;
  std::vector<std::string> dims;
  int level;
  double log_scale;
  int degree;
  // kCoeff: the result file it reads (several counts share one) and the digit it is.
  std::string result = {};
  int digit = -1;
  CoeffPacking packing = {};
};

struct ProgramSpec {
  std::string name;
  std::string source;  // the .hec file it was compiled from
  std::string digest;  // hex digest of the compiled ckks IR: ties every file to this program
  int log_n = 0;
  std::vector<std::uint64_t> output_moduli, moduli, special_moduli;
  int dnum = 0;
  int security_bits = 0;
  bool insecure = false;
  bool relinearizes = false;  // keygen makes a relinearization key
  bool conjugates = false;    // keygen makes a conjugation key (complex layouts are unpacked)
  std::vector<int> rotations;
  int key_level = 0;
  std::vector<std::pair<std::string, std::size_t>> params;  // size parameters and bounds
  std::string stream_dim;                                   // "" when nothing streams
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<SourceSpec> sources;  // every owner input the encrypt role reads
};

// ------------------------------------------------------------------------------------------
// Arrays of ciphertexts
// ------------------------------------------------------------------------------------------

struct CtArray {
  std::vector<std::size_t> shape;  // ciphertext-array axes (see the layouts above)
  std::vector<CtPtr> cts;          // C order

  std::size_t size() const { return cts.size(); }
  const Ct& at(std::size_t i) const { return *cts[i]; }
};

// Ciphertext-array shape of a logical shape under a layout.
// kCoeff: `group` columns per coefficient, 2 slots coefficients per ciphertext.
std::vector<std::size_t> array_shape(Layout layout, const std::vector<std::size_t>& dims,
                                     std::size_t slots, std::size_t group = 1);

// The evaluator and the evaluation keys (none of them secret) every op needs.
class Ops {
 public:
  Ops(ckks::ContextPtr context, const ckks::RelinKey* relin, const ckks::GaloisKeys* galois);
  const ckks::Evaluator& evaluator() const { return evaluator_; }
  const ckks::ContextPtr& context() const { return context_; }
  std::size_t slots() const { return context_->slots(); }
  const ckks::RelinKey& relin_key() const;
  const ckks::GaloisKeys& galois_keys() const;

 private:
  ckks::ContextPtr context_;
  ckks::Evaluator evaluator_;
  const ckks::RelinKey* relin_;
  const ckks::GaloisKeys* galois_;
};

// One function per op of the ckks dialect, on whole arrays (parallel over the array).
CtArray add(const Ops& ops, const CtArray& a, const CtArray& b);
CtArray sub(const Ops& ops, const CtArray& a, const CtArray& b);
CtArray negate(const Ops& ops, const CtArray& a);
CtArray mul(const Ops& ops, const CtArray& a, const CtArray& b);
// const_scale_bits == 0: `c` must be an integer (multiplied exactly, no scale change);
// otherwise c is encoded as round(c * 2^const_scale_bits) and the scale grows by that factor.
CtArray mul_const(const Ops& ops, const CtArray& a, double c, double const_scale_bits);
CtArray add_const(const Ops& ops, const CtArray& a, double c);
// A complex array: c goes to the real and the imaginary part of every slot.
CtArray add_const_complex(const Ops& ops, const CtArray& a, double c);
// Complex layout -> packed (`packed_shape`: the ciphertext-array shape of the result): per
// ciphertext z (relinearized first when its degree is above 1), z + conj(z) = 2 Re z becomes
// block 2j and -i (z - conj(z)) = 2 Im z block 2j + 1, both read at twice the scale. One
// conjugation (a Galois key switch) per ciphertext; no level.
CtArray unpack_complex(const Ops& ops, const CtArray& a,
                       const std::vector<std::size_t>& packed_shape);
// Degree d >= 2 -> 1. Degree 2 uses the relinearization key directly. A degree d > 2 is
// lowered one degree at a time with the same key: the top component c_d times s^d equals
// (c_d s^2) s^(d-2), and relinearizing the degree-2 ciphertext (0, 0, c_d) gives (e0, e1) with
// e0 + e1 s ~ c_d s^2, which is added to components d-2 and d-1. (Adapter: the runtime's
// Evaluator relinearizes degree 2 only.)
CtArray relinearize(const Ops& ops, const CtArray& a);
CtArray rescale(const Ops& ops, const CtArray& a);
CtArray level_down(const Ops& ops, const CtArray& a, int level);
CtArray rotate(const Ops& ops, const CtArray& a, int offset);
// Sum over the packed axis: add the blocks, then rotate-and-add by 1, 2, ..., slots/2.
CtArray sum_slots(const Ops& ops, const CtArray& a);
// Binary-tree sum along an array axis.
CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis);
// Fused sum_i a_i (x) b_i along an array axis.
CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis);
// Operand axis i becomes result axis dims[i] of the ciphertext-array shape `shape`; when
// `replicated_to_packed`, the last result axis is new or stretched and every block reuses
// the operand's ciphertext. Ciphertexts are shared, not copied.
CtArray broadcast(const CtArray& a, const std::vector<std::size_t>& dims,
                  const std::vector<std::size_t>& shape, bool replicated_to_packed);
// A replicated array broadcast to the complex layout with the value in both parts of every
// slot: each operand ciphertext times 1 + i (exact, no level), then as broadcast().
CtArray broadcast_both_parts(const Ops& ops, const CtArray& a, const std::vector<std::size_t>& dims,
                             const std::vector<std::size_t>& shape);
CtArray transpose(const CtArray& a);

// Checks the first ciphertext of `a` against the type the compiler gave the value (level,
// degree, scale); throws std::logic_error naming the value. Cheap: O(1) per array.
void expect_type(const CtArray& a, const char* value, int level, double log_scale, int degree);

// ------------------------------------------------------------------------------------------
// Row accumulators (one partial sum per thread, merged at the end)
// ------------------------------------------------------------------------------------------

// Accumulators over rows. The row bodies (running in parallel, one row per thread) only
// record their operands with add(); after every chunk of rows Server::stream has the sinks
// fold the chunk in: prepare() gathers and checks it and returns a number of independent work
// units, fold_unit() runs one (any thread), complete() drops the chunk. All sinks' units of
// a chunk run in one parallel region; each unit adds the chunk's operands to one tile of one
// limb of an accumulator (ckks::dot_batch_unit, ckks::sum_batch_unit), so every operand
// streams through once while the tile stays in cache, and one accumulator per element serves
// all threads. finish() folds what is left and returns the sums.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual std::size_t prepare() = 0;
  // The (limb, tile) a unit works on, limb * tiles + tile: units of different sinks with the
  // same key read the same tiles of the rows' ciphertexts (a sum and a dot product over the
  // same input), so they run back to back on one thread while those tiles are in cache.
  virtual std::size_t unit_key(std::size_t unit) const = 0;
  virtual void fold_unit(std::size_t unit) = 0;
  virtual void complete() = 0;
  // prepare, every unit on this thread, complete.
  void fold();
};

// sum over rows of a_row (x) b_row, elementwise over the row arrays.
class DotSink : public RowSink {
 public:
  DotSink(const Ops& ops, int level, int threads);
  void add(int thread, const CtArray& a, const CtArray& b);
  std::size_t prepare() override;
  std::size_t unit_key(std::size_t unit) const override;
  void fold_unit(std::size_t unit) override;
  void complete() override;
  CtArray finish();

 private:
  const Ops& ops_;
  int level_;
  std::vector<std::size_t> shape_;
  std::vector<std::vector<std::pair<CtArray, CtArray>>> pending_;  // [thread]: this chunk's rows
  std::vector<std::vector<const Ct*>> lhs_, rhs_;                  // [element][row]
  std::vector<Ct> acc_;                                            // [element], degree 2
  std::size_t units_per_element_ = 0;
};

// sum over rows of a_row, elementwise.
class SumSink : public RowSink {
 public:
  SumSink(const Ops& ops, int threads);
  void add(int thread, const CtArray& a);
  std::size_t prepare() override;
  std::size_t unit_key(std::size_t unit) const override;
  void fold_unit(std::size_t unit) override;
  void complete() override;
  CtArray finish();

 private:
  const Ops& ops_;
  std::vector<std::size_t> shape_;
  std::vector<std::vector<CtArray>> pending_;  // [thread]: this chunk's rows
  std::vector<std::vector<const Ct*>> terms_;  // [element][row]
  std::vector<Ct> acc_;                        // [element]
  std::size_t units_per_element_ = 0;
};

// Collects one row value per row (an output whose leading axis is the stream dimension).
class RowCollector {
 public:
  explicit RowCollector(std::size_t rows) : rows_(rows) {}
  void put(std::size_t row, const CtArray& value);
  CtArray finish();

 private:
  std::size_t rows_;
  std::vector<CtArray> values_;
};

// ------------------------------------------------------------------------------------------
// The server role as the generated compute function sees it
// ------------------------------------------------------------------------------------------

class Server {
 public:
  // Finds and checks every shard of every input in `ct_dir` against the run's manifest (run
  // id, array name, shard, owner and signature, content): missing, extra, stale, duplicated
  // and swapped shards are refused naming the file.
  Server(const ProgramSpec& spec, const Manifest& manifest, const std::filesystem::path& ct_dir,
         const Ops& ops, const ckks::ContextPtr& context, const core::KeyId& key_id);

  const Sizes& sizes() const { return sizes_; }
  std::size_t size(const std::string& name) const;
  const Ops& ops() const { return ops_; }
  int threads() const;
  std::size_t rows() const;  // the stream dimension's size (0 when nothing streams)

  // A whole input array (a global input, or a streamed one read in full).
  CtArray load(const std::string& id) const;
  // One pass over the rows: reads the row blocks of `ids` in order and calls
  // body(row, inputs, thread) for every row, in parallel over the rows of a block, with
  // inputs[k] the row-local array of ids[k]. Prints progress as "[phase] rows/N".
  using RowBody = std::function<void(std::size_t, const std::vector<CtArray>&, int)>;
  // `sinks` are folded after every chunk of rows (see RowSink).
  void stream(const std::string& phase, const std::vector<std::string>& ids, const RowBody& body,
              const std::vector<RowSink*>& sinks = {}) const;
  // Records a revealed value for `compute` to write (with the public factor the coordinator
  // multiplies the decoded values by, 1 when none).
  void output(const std::string& name, const CtArray& value, double factor = 1.0);

  struct Result {
    std::string name;
    CtArray value;
    double factor;
  };
  const std::vector<Result>& results() const { return results_; }

 private:
  struct Block {
    std::filesystem::path path;
    std::size_t begin, end;
  };
  const InputSpec& input(const std::string& id) const;
  const ProgramSpec& spec_;
  std::filesystem::path dir_;
  const Ops& ops_;
  ckks::ContextPtr context_;
  core::KeyId key_id_;
  Sizes sizes_;
  std::map<std::string, std::vector<Block>> blocks_;  // streamed inputs' row blocks
  std::vector<Result> results_;
};

using PublicsFn = std::vector<double> (*)(const Sizes&);
using ComputeFn = void (*)(Server&);

// The generated program's main(): parses the subcommand and runs the role. Returns the exit
// code (0 ok, 1 error with a message on stderr, 2 usage error).
int run_main(const ProgramSpec& spec, ComputeFn compute, int argc, const char* const* argv);

}  // namespace hec::program
