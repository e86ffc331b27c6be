// The BFV binding of the program layer: what a generated BFV program (compiler/dialects/bfv.py,
// emitted by targets/cpp) stands on. The roles, the shard checks, the block scheduling and the
// key-directory layout are the CKKS program's (roles.h, server.h, files.h); this file adds the
// BFV ciphertext arrays, one function per op of the bfv dialect, the BFV row accumulators, and
// BfvScheme, the traits type the roles are instantiated over.
//
// Values are integers mod the plaintext modulus t (ProgramSpec::plain_modulus, a prime = 1 mod
// 2N), encrypted exactly and decrypted centred into (-(t-1)/2, (t-1)/2], written as int64 .npy.
// Inputs must be integer-valued with |x| <= (t-1)/2 (encrypt refuses anything else naming the
// input, the sample (row) and the column). Slots: a ciphertext holds N slots, both rows of the
// 2 x N/2 batching matrix (bfv/encoder.h); element j of a packed block sits in slot j, i.e. row
// j div (N/2), column j mod (N/2). A replicated value is the constant polynomial: the value in
// every slot. The ciphertexts of an array file (CTDIR/*.cts) are a HEC1 container of kind
// ciphertext array (scheme BFV): per ciphertext a u32 polynomial count, then each polynomial's
// q_size() limbs of N little-endian words in evaluation form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bfv/ciphertext.h"
#include "bfv/context.h"
#include "bfv/encoder.h"
#include "bfv/scheme.h"
#include "core/serialize.h"
#include "program/arrays.h"
#include "program/output.h"
#include "program/roles.h"
#include "program/server.h"
#include "program/spec.h"

namespace hec::program::bfv_program {

// The shared names a generated BFV program uses.
using program::array_shape;
using program::Domain;
using program::InputSpec;
using program::Layout;
using program::OutputSpec;
using program::OwnerRow;
using program::ProgramSpec;
using program::RowSink;
using program::run_op;
using program::Sizes;
using program::SourceSpec;

using Ct = bfv::Ciphertext;
using CtPtr = std::shared_ptr<const Ct>;
using CtArray = CtArrayOf<Ct>;
using RowCollector = RowCollectorOf<Ct>;
using ContextPtr = std::shared_ptr<const bfv::BfvContext>;

// Plaintext operands (public values) of mul_plain and add_plain: one batch-encoded plaintext per
// ciphertext of the array they meet, C order.
struct PtArray {
  std::vector<std::size_t> shape;
  std::vector<bfv::Plaintext> pts;
};

// The evaluator and the evaluation keys (none of them secret) every op needs.
class Ops {
 public:
  Ops(ContextPtr context, const bfv::RelinKey* relin, const bfv::GaloisKeys* galois);
  const bfv::Evaluator& evaluator() const { return evaluator_; }
  const ContextPtr& context() const { return context_; }
  std::size_t slots() const { return context_->ring_dim(); }
  const bfv::RelinKey& relin_key() const;
  const bfv::GaloisKeys& galois_keys() const;

 private:
  ContextPtr context_;
  bfv::Evaluator evaluator_;
  const bfv::RelinKey* relin_;
  const bfv::GaloisKeys* galois_;
};

// Integer values (C order, the array's logical shape `dims`) as plaintexts under `layout`
// (packed or replicated), each reduced mod t.
PtArray encode_plain(const Ops& ops, Layout layout, const std::vector<std::size_t>& dims,
                     const std::vector<std::int64_t>& values);

// A public value the program uses as an integer constant (mul_const, add_const): throws
// std::logic_error when it is not an integer of at most 63 bits.
std::int64_t integer_constant(double value);

// One function per op of the bfv dialect, on whole arrays (parallel over the array).
CtArray add(const Ops& ops, const CtArray& a, const CtArray& b);
CtArray sub(const Ops& ops, const CtArray& a, const CtArray& b);
CtArray negate(const Ops& ops, const CtArray& a);
// Degree 1 operands; the result has degree 2 (three polynomials) until relinearize.
CtArray mul(const Ops& ops, const CtArray& a, const CtArray& b);
CtArray mul_plain(const Ops& ops, const CtArray& a, const PtArray& p);
CtArray add_plain(const Ops& ops, const CtArray& a, const PtArray& p);
// c mod t times every slot (a scalar plaintext product: no key, little noise).
CtArray mul_const(const Ops& ops, const CtArray& a, std::int64_t c);
CtArray add_const(const Ops& ops, const CtArray& a, std::int64_t c);
CtArray relinearize(const Ops& ops, const CtArray& a);
// Level l -> l - 1: drops the last prime of Q (bfv::Evaluator::mod_switch_to_next_inplace).
CtArray mod_switch(const Ops& ops, const CtArray& a);
// Cyclic rotation over all N slots (slot j receives slot j + offset mod N): a row rotation by
// offset, the row swap of it, and two masks choosing per column (two plaintext products).
CtArray rotate(const Ops& ops, const CtArray& a, int offset);
// Sum over the packed axis: add the blocks, then rotate both rows by 1, 2, ..., N/4 and add,
// then add the row swap: the total of all N slots in every slot.
CtArray sum_slots(const Ops& ops, const CtArray& a);
// Binary-tree sum along an array axis.
CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis);
// sum_i a_i (x) b_i along an array axis (degree-2 result).
CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis);
using program::broadcast;
using program::transpose;

// Checks the first ciphertext of `a` against the type the compiler gave the value (level: the
// number of primes of Q it holds minus one; degree: polynomials minus one); throws
// std::logic_error naming the value.
void expect_type(const CtArray& a, const char* value, int level, int degree);

// sum over rows of a_row (x) b_row, elementwise over the row arrays (degree-2 sums). A chunk's
// work units are (element, slice): slice k multiplies rows k, k + slices, ... of the chunk into
// its own partial sum (the BFV multiply has no batch kernel, so the products of one element are
// spread over the threads); complete() adds the partial sums into the accumulator.
class DotSink : public RowSink {
 public:
  DotSink(const Ops& ops, int threads);
  void add(int thread, const CtArray& a, const CtArray& b);
  std::size_t prepare() override;
  std::size_t unit_key(std::size_t unit) const override { return unit; }
  void fold_unit(std::size_t unit) override;
  void complete() override;
  CtArray finish();

 private:
  const Ops& ops_;
  std::size_t threads_;
  std::size_t slices_ = 1;  // set by the first row (prepare)
  std::vector<std::size_t> shape_;
  std::vector<std::vector<std::pair<CtArray, CtArray>>> pending_;    // [thread]: this chunk's rows
  std::vector<std::vector<std::pair<const Ct*, const Ct*>>> terms_;  // [element][row]
  std::vector<std::optional<Ct>> partial_;  // [element * slices + k] (slices > 1 only)
  std::vector<std::optional<Ct>> acc_;      // [element]
};

// sum over rows of a_row, elementwise.
class SumSink : public RowSink {
 public:
  SumSink(const Ops& ops, int threads);
  void add(int thread, const CtArray& a);
  std::size_t prepare() override;
  std::size_t unit_key(std::size_t unit) const override { return unit; }
  void fold_unit(std::size_t unit) override;
  void complete() override;
  CtArray finish();

 private:
  const Ops& ops_;
  std::vector<std::size_t> shape_;
  std::vector<std::vector<CtArray>> pending_;  // [thread]: this chunk's rows
  std::vector<std::vector<const Ct*>> terms_;  // [element][row]
  std::vector<std::optional<Ct>> acc_;         // [element]
};

// Ciphertext-array files (the format in the file comment), streamed like ckks/io.h's.
class CiphertextArrayWriter {
 public:
  CiphertextArrayWriter(const std::filesystem::path& path, const bfv::BfvContext& ctx,
                        const core::KeyId& key_id, std::size_t count, std::uint64_t payload_bytes);
  static std::uint64_t record_bytes(const Ct& ct);
  void append(const Ct& ct);
  void finish();

 private:
  std::size_t q_size_, n_;
  std::size_t count_, written_ = 0;
  core::ObjectWriter writer_;
};

class CiphertextArrayReader {
 public:
  CiphertextArrayReader(const std::filesystem::path& path, const bfv::BfvContext& ctx,
                        const core::KeyId& key_id,
                        const std::optional<core::Checksum>& content = {});
  std::size_t count() const { return reader_.header().degree; }
  // The next `count` ciphertexts into *out[0..count); every residue is checked against its
  // prime (an error names the file and the index).
  void next_batch(Ct* const* out, std::size_t count, int threads);
  void finish();

 private:
  const bfv::BfvContext& ctx_;
  core::KeyId key_id_;
  std::size_t read_ = 0;
  core::ObjectReader reader_;
};

// ------------------------------------------------------------------------------------------
// The binding (roles.h lists what a binding provides)
// ------------------------------------------------------------------------------------------

struct BfvScheme {
  using Ct = bfv::Ciphertext;
  using Context = bfv::BfvContext;
  using ContextPtr = bfv_program::ContextPtr;
  using Ops = bfv_program::Ops;
  using Value = std::int64_t;
  static constexpr const char* kNpyDescr = "<i8";
  using ArrayReader = CiphertextArrayReader;
  using ArrayWriter = CiphertextArrayWriter;

  // Q = spec.moduli, P_ks = spec.special_moduli, t = spec.plain_modulus; the auxiliary basis of
  // the multiply (never in a key) is derived from them (bfv/context.h: P_mult).
  static ContextPtr make_context(const ProgramSpec& spec);
  static std::size_t slots(const Context& ctx) { return ctx.ring_dim(); }
  static core::Digest params_digest(const Context& ctx);
  static core::KeyId make_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                               const std::filesystem::path& dir, OutputSet& outputs);
  // Every value an integer with |x| <= (t - 1) / 2.
  static void check_values(const ProgramSpec& spec, const SourceSpec& source,
                           const std::filesystem::path& file, const NpyArray& a);

  class Encoder {
   public:
    Encoder(const ContextPtr& ctx, const std::filesystem::path& pk_path, const core::KeyId& id);
    void encrypt_row(const RowToEncrypt& row, Ct* out);
    std::uint64_t record_bytes(const InputSpec& in) const;

   private:
    ContextPtr ctx_;
    bfv::PublicKey pk_;
    bfv::Encoder encoder_;
    // One encryptor (its own randomness stream) per OpenMP thread number, made on first use by
    // that thread; rows are encrypted in parallel.
    std::vector<std::unique_ptr<bfv::Encryptor>> encryptors_;
  };

  // Pointers, so that a result array is written from the ciphertexts the server holds, not
  // from a copy of them.
  static void save_array(const std::filesystem::path& path, const Context& ctx,
                         const core::KeyId& key_id, const std::vector<const Ct*>& cts);
  static std::vector<Ct> load_array(const std::filesystem::path& path, const Context& ctx,
                                    const core::KeyId& key_id,
                                    const std::optional<core::Checksum>& content = {});

  struct EvalKeys {
    std::optional<bfv::RelinKey> relin;
    std::optional<bfv::GaloisKeys> galois;
  };
  static EvalKeys load_eval_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                 const std::filesystem::path& eval_dir, const core::KeyId& key_id);
  static Ops make_ops(const ContextPtr& ctx, const EvalKeys& keys);

  class Decoder {
   public:
    Decoder(const ContextPtr& ctx, const std::filesystem::path& sk_path);
    core::KeyId key_id() const { return sk_.key_id; }
    // BFV decrypts exactly: the revealed values carry no error to flood (the roles' interface).
    bool flooding = true;
    std::vector<std::int64_t> decrypt_output(const OutputSpec& o, const std::string& file,
                                             std::vector<std::size_t>& dims,
                                             const std::vector<std::size_t>& arr, double factor,
                                             const std::function<std::vector<Ct>()>& load);

   private:
    ContextPtr ctx_;
    bfv::SecretKey sk_;
    bfv::Decryptor decryptor_;
    bfv::Encoder encoder_;
  };
};

using Server = ServerOf<BfvScheme>;
using ComputeFn = void (*)(Server&);

// The generated program's main() (as program::run_main for CKKS).
int run_main(const ProgramSpec& spec, ComputeFn compute, int argc, const char* const* argv);

}  // namespace hec::program::bfv_program
