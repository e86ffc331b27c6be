// BFV encoders: the batch encoder (N slots mod t arranged as a 2 x N/2 matrix, t prime and
// 1 mod 2N; slot (r, c) is the evaluation of m at zeta^(+-3^c), so the automorphism
// X -> X^(3^k) rotates both rows left by k and X -> X^(2N-1) swaps the rows; the layout of
// SEAL's BatchEncoder), the scalar encoder (the constant polynomial; every slot when
// batching) and the coefficient encoder (any t >= 2).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bfv/ciphertext.h"
#include "bfv/context.h"

namespace hec::bfv {

class Encoder {
 public:
  explicit Encoder(std::shared_ptr<const BfvContext> ctx) : ctx_(std::move(ctx)) {}

  std::size_t slot_count() const { return ctx_->ring_dim(); }

  // values: up to N entries in [0, t) (row 0 then row 1, N/2 each; missing entries are 0).
  // Throws if t does not allow batching or a value is out of range.
  Plaintext encode_batch(std::span<const u64> values) const;
  // Signed values in (-t/2, t/2] (or any int64, reduced mod t).
  Plaintext encode_batch_signed(std::span<const std::int64_t> values) const;
  std::vector<u64> decode_batch(const Plaintext& pt) const;

  // The constant polynomial `value` mod t.
  Plaintext encode_scalar(u64 value) const;
  // Coefficients in [0, t), up to N of them.
  Plaintext encode_coefficients(std::span<const u64> coeffs) const;
  std::vector<u64> decode_coefficients(const Plaintext& pt) const;

 private:
  std::shared_ptr<const BfvContext> ctx_;
};

}  // namespace hec::bfv
