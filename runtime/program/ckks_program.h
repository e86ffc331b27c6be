// The CKKS binding of the program layer (targets/cpp emits code against it): ciphertext arrays
// of ckks::Ciphertext with the layouts of the ckks dialect (compiler/dialects/ckks.py), one
// function per array op, the CKKS row accumulators (fused dot products and sums over rows on
// the ckks batch kernels), and CkksScheme, the traits type the roles (roles.h), the server
// (server.h) and the block scheduling are written over. What every scheme shares lives in
// spec.h (the program's description), arrays.h, files.h, server.h and roles.h; this header
// includes them, so a generated CKKS program includes only this one.
//
// Layouts (spec.h): packed, replicated, complex (column block 2j in the real parts, 2j + 1 in
// the imaginary parts), coeff (coeff_layout.h's packed counts), grid (R rows x C columns of
// slots; a streamed grid input is encrypted and read a block of R rows at a time), and the
// diagonal and cyclic layouts of diag_matvec (whole arrays only).
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
#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/evaluator.h"
#include "ckks/io.h"
#include "ckks/kernels.h"
#include "ckks/keys.h"
#include "program/arrays.h"
#include "program/manifest.h"
#include "program/output.h"
#include "program/roles.h"
#include "program/server.h"
#include "program/spec.h"

namespace hec::program {

using Ct = ckks::Ciphertext;
using CtPtr = std::shared_ptr<const Ct>;
using CtArray = CtArrayOf<Ct>;
using RowCollector = RowCollectorOf<Ct>;

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
// A masked constant: c on the first `width` slots of the packed axis (the array's last axis,
// ceil(width / slots) ciphertexts), 0 on the padding after them; the scale grows by
// 2^const_scale_bits (> 0). Full blocks multiply by the integer round(c * scale) exactly; the
// last, partial block by the encoded vector.
CtArray mul_mask(const Ops& ops, const CtArray& a, double c, double const_scale_bits,
                 std::size_t width);
// The masked constant of a kGrid array (docs/layout.md): c on the slots that hold an element
// of the logical `dims`, 0 on the padding rows and columns (replica directions are all valid);
// the scale grows by 2^const_scale_bits (> 0). `a` is the whole array, or, with `row_block` set,
// the row-local part of block `row_block` of a streamed array whose first axis is the row axis
// (its padding depends on the block). Full ciphertexts multiply by the integer round(c * scale)
// exactly; a ciphertext with padding by the encoded mask (one plaintext per padding shape and
// level).
inline constexpr std::size_t kWholeArray = static_cast<std::size_t>(-1);
CtArray mul_mask_grid(const Ops& ops, const CtArray& a, double c, double const_scale_bits,
                      const GridLayout& grid, const std::vector<std::size_t>& dims,
                      std::size_t row_block = kWholeArray);
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
// The same sum in stages (the rotation plan passes/rotation_keys.py chose): with radices
// r_1 .. r_k (product: the slot count) and strides m_1 = 1, m_{i+1} = m_i r_i, stage i adds
// the rotations by 0, m_i, ..., (r_i - 1) m_i, doubly hoisted (Evaluator::rotate_sum_hoisted:
// one ModUp and one ModDown per stage). Radices 2, 2, ..., 2 is the rotate-and-add tree.
CtArray sum_slots_staged(const Ops& ops, const CtArray& a, const std::vector<int>& radices);
// The row sum of a kGrid array of `rows` grid rows whose row blocks are already added (a row
// accumulator's total): log2(rows) rotate-and-add steps with the strides C, 2C, ..., (rows/2) C,
// C = slots / rows, leave every column's sum over the rows in each of its rows. The padding rows
// must hold zeros (the lowering masks them where they would not). One key switch per step.
CtArray fold_grid_rows(const Ops& ops, const CtArray& a, std::size_t rows);
// The sum over the row axis `axis` of a kGrid array (he.sum_slots with an axis): the row blocks
// along that array axis added (reduce), then fold_grid_rows.
CtArray sum_grid_rows(const Ops& ops, const CtArray& a, std::size_t axis, std::size_t rows);
// The diagonal (Halevi-Shoup) matrix-vector product with baby-step giant-step (spec.h's
// kDiagonal and kCyclic; compiler/dialects/he.py, DiagMatvecRule): `m` the D ciphertexts of a
// kDiagonal matrix, `v` a kCyclic vector of period Q (one ciphertext), both degree 1 at one
// level; returns the kCyclic product of period P (one ciphertext, degree 1, scale the product
// of the scales, not rescaled). v is rotated by 1 .. b-1 (one hoisted digit decomposition);
// giant group g sums m[g b + k] (x) rot(v, k) over k < b at degree 2 (fused, no temporary
// per product), is relinearized and rotated by g b; the groups are added; a wide matrix
// (P < Q) then folds with the strides P, 2P, .., Q/2. Rotations turn slots left
// (rotate(): slot j takes slot j + s). Key switches: (b - 1) + G + (G - 1) + log2(Q / P).
CtArray diag_matvec(const Ops& ops, const CtArray& m, const CtArray& v,
                    const DiagonalLayout& diagonal);
// The packed -> cyclic conversion (he.ConvertRule): one packed ciphertext whose slots from
// `period` on are zero repeated every `period` slots by log2(slots / period) rotate-and-adds
// x += rot(x, -period 2^t) (rotations by slots - period 2^t). One key switch per step.
CtArray replicate_period(const Ops& ops, const CtArray& a, std::size_t period);
// Binary-tree sum along an array axis.
CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis);
// Fused sum_i a_i (x) b_i along an array axis.
CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis);
// A replicated array broadcast to the complex layout with the value in both parts of every
// slot: each operand ciphertext times 1 + i (exact, no level), then as broadcast().
CtArray broadcast_both_parts(const Ops& ops, const CtArray& a, const std::vector<std::size_t>& dims,
                             const std::vector<std::size_t>& shape);

// Checks the first ciphertext of `a` against the type the compiler gave the value (level,
// degree, scale); throws std::logic_error naming the value. Cheap: O(1) per array.
void expect_type(const CtArray& a, const char* value, int level, double log_scale, int degree);

// ------------------------------------------------------------------------------------------
// Row accumulators (one accumulator per element, tiles folded in parallel: RowSink)
// ------------------------------------------------------------------------------------------

// Each unit adds a chunk's operands to one tile of one limb of an accumulator
// (ckks::dot_batch_unit, ckks::sum_batch_unit), so every operand streams through once while
// the tile stays in cache, and one accumulator per element serves all threads.
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

// ------------------------------------------------------------------------------------------
// The binding (roles.h lists what a binding provides)
// ------------------------------------------------------------------------------------------

struct CkksScheme {
  using Ct = ckks::Ciphertext;
  using Context = ckks::Context;
  using ContextPtr = ckks::ContextPtr;
  using Ops = program::Ops;
  using Value = double;
  static constexpr const char* kNpyDescr = "<f8";
  using ArrayReader = ckks::CiphertextArrayReader;
  using ArrayWriter = ckks::CiphertextArrayWriter;

  // Keys only up to spec.key_level: the security bound counts Q_key_level * P.
  static ContextPtr make_context(const ProgramSpec& spec);
  static std::size_t slots(const Context& ctx) { return ctx.slots(); }
  static core::Digest params_digest(const Context& ctx) { return ctx.params().digest(); }
  static core::KeyId make_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                               const std::filesystem::path& dir, OutputSet& outputs);
  static void check_values(const ProgramSpec&, const SourceSpec&, const std::filesystem::path&,
                           const NpyArray&) {}

  class Encoder {
   public:
    Encoder(const ContextPtr& ctx, const std::filesystem::path& pk_path, const core::KeyId& id);
    void encrypt_row(const RowToEncrypt& row, Ct* out);
    std::uint64_t record_bytes(const InputSpec& in) const;

   private:
    ContextPtr ctx_;
    ckks::PublicKey pk_;
    ckks::Encryptor encryptor_;
    ckks::Encoder encoder_;
  };

  // Pointers, so that a result array is written from the ciphertexts the server holds, not
  // from a copy of them.
  static void save_array(const std::filesystem::path& path, const Context& ctx,
                         const core::KeyId& key_id, const std::vector<const Ct*>& cts);
  static std::vector<Ct> load_array(const std::filesystem::path& path, const Context& ctx,
                                    const core::KeyId& key_id,
                                    const std::optional<core::Checksum>& content = {});

  struct EvalKeys {
    std::optional<ckks::RelinKey> relin;
    std::optional<ckks::GaloisKeys> galois;
  };
  static EvalKeys load_eval_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                 const std::filesystem::path& eval_dir, const core::KeyId& key_id);
  static Ops make_ops(const ContextPtr& ctx, const EvalKeys& keys);

  class Decoder {
   public:
    Decoder(const ContextPtr& ctx, const std::filesystem::path& sk_path);
    core::KeyId key_id() const { return sk_.key_id; }
    // Noise flooding of the decoded values (ckks/flooding.h, OutputSpec::flood_sigma); off
    // only for single-party use (decrypt --no-flooding).
    bool flooding = true;
    std::vector<double> decrypt_output(const OutputSpec& o, const std::string& file,
                                       std::vector<std::size_t>& dims,
                                       const std::vector<std::size_t>& arr, double factor,
                                       const std::function<std::vector<Ct>()>& load);

   private:
    ContextPtr ctx_;
    ckks::SecretKey sk_;
    ckks::Decryptor decryptor_;
    ckks::Encoder encoder_;
    // kCoeff results: every count of one result file, decoded once.
    std::map<std::string, std::vector<std::vector<double>>> coeff_digits_;
  };
};

// The server role as the generated compute function sees it (server.h).
using Server = ServerOf<CkksScheme>;

using PublicsFn = std::vector<double> (*)(const Sizes&);
using ComputeFn = void (*)(Server&);

// The generated program's main(): parses the subcommand and runs the role. Returns the exit
// code (0 ok, 1 error with a message on stderr, 2 usage error).
int run_main(const ProgramSpec& spec, ComputeFn compute, int argc, const char* const* argv);

}  // namespace hec::program
