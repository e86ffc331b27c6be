// Polynomials of Z_Q[X]/(X^N + 1) in RNS form: an RnsContext holds the ring dimension, the
// chain of primes q_0, ..., q_{L-1} and their NTT tables; an RnsPoly holds the first
// num_limbs() residue polynomials of that chain, limb-major in one 64-byte aligned buffer
// (limb i at data() + i * N, each limb starting on a cache line), in coefficient or
// evaluation (NTT, bit-reversed) form. All values are kept fully reduced in [0, q_i).
// Operations parallelize over limbs with OpenMP under the thread cap of parallel.h.
//
// Public functions validate (same context, same number of limbs, right form) and throw
// std::invalid_argument with the values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "math/aligned.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/rns.h"

namespace hec::math {

class RnsContext {
 public:
  // Every modulus must be prime, 1 mod 2N and below 2^61; N a power of two in [2^4, 2^17].
  RnsContext(std::size_t ring_dim, const std::vector<u64>& moduli);
  static std::shared_ptr<const RnsContext> create(std::size_t ring_dim,
                                                  const std::vector<u64>& moduli) {
    return std::make_shared<const RnsContext>(ring_dim, moduli);
  }

  std::size_t ring_dim() const { return n_; }
  std::size_t size() const { return base_.size(); }
  const RnsBase& base() const { return base_; }
  const Modulus& modulus(std::size_t i) const { return base_[i]; }
  const NttTables& ntt(std::size_t i) const { return tables_[i]; }

 private:
  std::size_t n_;
  RnsBase base_;
  std::vector<NttTables> tables_;
};

enum class PolyForm { kCoefficient, kEvaluation };
const char* poly_form_name(PolyForm form);

class RnsPoly {
 public:
  RnsPoly() = default;
  // The zero polynomial over the first num_limbs primes of the context (1 <= num_limbs <=
  // context->size()).
  RnsPoly(std::shared_ptr<const RnsContext> context, std::size_t num_limbs,
          PolyForm form = PolyForm::kCoefficient);

  const std::shared_ptr<const RnsContext>& context() const { return context_; }
  std::size_t ring_dim() const { return n_; }
  std::size_t num_limbs() const { return num_limbs_; }
  PolyForm form() const { return form_; }
  // Relabels the form without transforming (for data produced elsewhere in that form).
  void set_form(PolyForm form) { form_ = form; }
  const Modulus& modulus(std::size_t limb) const { return context_->modulus(limb); }

  u64* data() { return data_.data(); }
  const u64* data() const { return data_.data(); }
  u64* limb(std::size_t i) { return data_.data() + i * n_; }
  const u64* limb(std::size_t i) const { return data_.data() + i * n_; }

  void set_zero();
  // Sets coefficient c of every limb to values[c] mod q_i (small signed integers, e.g. from
  // the samplers); the form becomes coefficient.
  void set_signed(std::span<const std::int64_t> values);
  // Drops the last limb (the CKKS rescale and modulus switching use this after dividing).
  void drop_last_limb();

  bool operator==(const RnsPoly& other) const;

 private:
  std::shared_ptr<const RnsContext> context_;
  std::size_t n_ = 0, num_limbs_ = 0;
  PolyForm form_ = PolyForm::kCoefficient;
  AlignedU64Vector data_;
};

// a += b, a -= b, a = -a: either form, same context, limbs and form.
void add_inplace(RnsPoly& a, const RnsPoly& b);
void sub_inplace(RnsPoly& a, const RnsPoly& b);
void negate_inplace(RnsPoly& a);
// a = a .* b pointwise; both in evaluation form.
void multiply_inplace(RnsPoly& a, const RnsPoly& b);
// a = a * s_i mod q_i per limb (scalars[i] in [0, q_i), one per limb); either form.
void multiply_scalar_inplace(RnsPoly& a, std::span<const u64> scalars);
// acc += a .* b; all in evaluation form.
void multiply_add_inplace(RnsPoly& acc, const RnsPoly& a, const RnsPoly& b);
// out = sum_k a[k] .* b[k] (evaluation form) with lazy reduction: products are summed in
// 128-bit accumulators and reduced once per run of up to floor((2^128 - 1) / (q_i - 1)^2)
// terms (>= 64 for q_i < 2^61, >= 2^28 for q_i < 2^50), so any number of terms is allowed.
// out must already have the context and limb count of the operands; its content is replaced.
void multiply_accumulate(RnsPoly& out, std::span<const RnsPoly* const> a,
                         std::span<const RnsPoly* const> b);

// Coefficient -> evaluation form and back, limb by limb (throws if already in that form).
void to_ntt_inplace(RnsPoly& a);
void from_ntt_inplace(RnsPoly& a);

}  // namespace hec::math
