// Array kernels for generated programs: the operations of the ckks dialect that act on whole
// arrays of ciphertexts (DESIGN.md section 4: `dot`, `reduce`, elementwise ops), parallel
// over the array with OpenMP under the math core's thread cap (math/parallel.h), and
// streaming: memory is bounded by the accumulators, never by the array length.
//
// The fused dot product sum_i a_i (x) b_i accumulates in 128-bit words. Per pair and
// coefficient it adds three unreduced 64x64-bit products (Karatsuba: a0*b0, a1*b1,
// (a0+a1)*(b0+b1)); reductions happen only every K pairs, with K chosen from the largest
// prime so the 128-bit sums cannot overflow, and once at the end. No temporary ciphertext is
// made per term. Over arrays, the work is tiled by (limb, block of coefficients) so each
// tile's accumulators stay in cache while every pair streams through once. The result equals, bit
// for bit, the sum of Evaluator::multiply over the pairs (both are exact modular arithmetic).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/evaluator.h"

namespace hec::ckks {

// Streaming fused dot product. Feed pairs (all at the accumulator's level, degree 1, with the
// same key id and with scale products equal to the first pair's); finish() returns a
// degree-2 ciphertext of scale a.scale * b.scale. Also accepts ciphertext x plaintext pairs
// (then the result has degree 1); the two kinds cannot be mixed in one accumulator.
class DotAccumulator {
 public:
  DotAccumulator(ContextPtr context, Level level);
  ~DotAccumulator();
  DotAccumulator(DotAccumulator&&) noexcept;
  DotAccumulator& operator=(DotAccumulator&&) noexcept;

  void add_product(const Ciphertext& a, const Ciphertext& b);
  void add_product(const Ciphertext& a, const Plaintext& b);
  // Adds another accumulator's sum (for per-thread partial sums).
  void merge(DotAccumulator&& other);
  std::size_t count() const;
  // The reduced sum; the accumulator is left empty and reusable.
  Ciphertext finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// sum_i a[i] (x) b[i] over two arrays of equal length (degree 1, one level, one key id),
// parallel over (limb, block of 512 coefficients) tiles; memory: the result only. Callers
// with more pairs than fit in memory use DotAccumulator or dot_stream per block of pairs.
Ciphertext dot(const ContextPtr& context, std::span<const Ciphertext> a,
               std::span<const Ciphertext> b);
Ciphertext dot_plain(const ContextPtr& context, std::span<const Ciphertext> a,
                     std::span<const Plaintext> b);
// Streaming form: `pair(i, a, b)` fills a and b with the i-th pair (e.g. reads them from a
// file); called for i = 0..count-1 in order on the calling thread, each product then added
// (parallel over limbs) before the next pair is requested. Memory: one accumulator and one
// pair, whatever `count` is.
Ciphertext dot_stream(const ContextPtr& context, Level level, std::size_t count,
                      const std::function<void(std::size_t, Ciphertext&, Ciphertext&)>& pair);

// Chunked accumulation for streaming folds (the generated programs' row sums): a batch of
// operands is added to an accumulator tile by tile, so that each accumulator tile stays in
// cache while every operand's words stream through once, in independent work units that a
// caller can spread over threads together with other accumulators' units (one parallel
// region per batch). Results equal adding the operands one at a time, bit for bit (modular
// sums are exact).
//
// acc (degree 2, the reduced tensor (d0, d1, d2)) += sum_k a[k] (x) b[k]: check_dot_batch
// validates the batch (degree-1 operands at acc's level and key, products at acc's scale);
// unit u < dot_batch_units(acc) covers one limb and one tile of coefficients.
void check_dot_batch(const Context& ctx, const Ciphertext& acc,
                     std::span<const Ciphertext* const> a, std::span<const Ciphertext* const> b);
std::size_t dot_batch_units(const Ciphertext& acc);
void dot_batch_unit(const Context& ctx, Ciphertext& acc, std::span<const Ciphertext* const> a,
                    std::span<const Ciphertext* const> b, std::size_t unit);
// acc += sum_k xs[k]: check_sum_batch validates (same level, degree, scale, key as acc);
// unit u < sum_batch_units(acc) covers one polynomial, limb and tile.
void check_sum_batch(const Context& ctx, const Ciphertext& acc,
                     std::span<const Ciphertext* const> xs);
std::size_t sum_batch_units(const Ciphertext& acc);
void sum_batch_unit(const Context& ctx, Ciphertext& acc, std::span<const Ciphertext* const> xs,
                    std::size_t unit);

// Sum of an array (all operands at one level, key and scale; degrees may differ). Modular
// addition is exact, so any association gives the same bits; the array is split into one
// contiguous chunk per thread, each chunk summed in place of a tree layer, and the partial
// sums added pairwise (a two-level tree: memory is one partial sum per thread).
Ciphertext sum_tree(const Evaluator& evaluator, std::span<const Ciphertext> values);

// Elementwise over arrays, parallel over the array; out[i] = op(a[i], b[i]).
void add_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                     std::span<const Ciphertext> b);
void sub_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                     std::span<const Ciphertext> b);
std::vector<Ciphertext> multiply_elementwise(const Evaluator& evaluator,
                                             std::span<const Ciphertext> a,
                                             std::span<const Ciphertext> b);
void multiply_plain_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                                std::span<const Plaintext> b);
void relinearize_all(const Evaluator& evaluator, std::span<Ciphertext> a, const RelinKey& key);
void rescale_all(const Evaluator& evaluator, std::span<Ciphertext> a);

// Runs body(i) for i in [0, count) in parallel (math core thread cap); the first exception
// thrown by any iteration is rethrown on the calling thread after the loop.
void parallel_for(std::size_t count, const std::function<void(std::size_t)>& body);

}  // namespace hec::ckks
