// Batch, scalar and coefficient encoders (see encoder.h).
#include "bfv/encoder.h"

#include <stdexcept>
#include <string>

#include "math/ntt.h"

namespace hec::bfv {

namespace {

void check_values(const char* op, std::span<const u64> values, std::size_t n, u64 t) {
  if (values.size() > n) {
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(values.size()) +
                                " values exceed the " + std::to_string(n) + " slots");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] >= t) {
      throw std::invalid_argument(std::string(op) + ": value[" + std::to_string(i) +
                                  "] = " + std::to_string(values[i]) +
                                  " is not below t = " + std::to_string(t));
    }
  }
}

}  // namespace

Plaintext Encoder::encode_batch(std::span<const u64> values) const {
  if (!ctx_->batching()) {
    throw std::invalid_argument("encode_batch: t = " + std::to_string(ctx_->plain_modulus()) +
                                " is not a prime = 1 mod 2N = " +
                                std::to_string(2 * ctx_->ring_dim()) + "; batching unavailable");
  }
  const std::size_t n = ctx_->ring_dim();
  check_values("encode_batch", values, n, ctx_->plain_modulus());
  Plaintext pt;
  pt.coeffs.assign(n, 0);
  const auto& idx = ctx_->slot_index();
  for (std::size_t i = 0; i < values.size(); ++i) pt.coeffs[idx[i]] = values[i];
  math::ntt_inverse_inplace(pt.coeffs.data(), ctx_->plain_ntt());
  return pt;
}

Plaintext Encoder::encode_batch_signed(std::span<const std::int64_t> values) const {
  const u64 t = ctx_->plain_modulus();
  std::vector<u64> reduced(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t r = values[i] % static_cast<std::int64_t>(t);
    reduced[i] = static_cast<u64>(r < 0 ? r + static_cast<std::int64_t>(t) : r);
  }
  return encode_batch(reduced);
}

std::vector<u64> Encoder::decode_batch(const Plaintext& pt) const {
  if (!ctx_->batching()) {
    throw std::invalid_argument("decode_batch: t = " + std::to_string(ctx_->plain_modulus()) +
                                " does not allow batching");
  }
  const std::size_t n = ctx_->ring_dim();
  if (pt.coeffs.size() != n) {
    throw std::invalid_argument("decode_batch: plaintext has " + std::to_string(pt.coeffs.size()) +
                                " coefficients, N = " + std::to_string(n));
  }
  std::vector<u64> eval = pt.coeffs;
  math::ntt_forward_inplace(eval.data(), ctx_->plain_ntt());
  std::vector<u64> out(n);
  const auto& idx = ctx_->slot_index();
  for (std::size_t i = 0; i < n; ++i) out[i] = eval[idx[i]];
  return out;
}

Plaintext Encoder::encode_scalar(u64 value) const {
  Plaintext pt;
  pt.coeffs.assign(ctx_->ring_dim(), 0);
  pt.coeffs[0] = value % ctx_->plain_modulus();
  return pt;
}

Plaintext Encoder::encode_coefficients(std::span<const u64> coeffs) const {
  check_values("encode_coefficients", coeffs, ctx_->ring_dim(), ctx_->plain_modulus());
  Plaintext pt;
  pt.coeffs.assign(ctx_->ring_dim(), 0);
  for (std::size_t i = 0; i < coeffs.size(); ++i) pt.coeffs[i] = coeffs[i];
  return pt;
}

std::vector<u64> Encoder::decode_coefficients(const Plaintext& pt) const {
  if (pt.coeffs.size() != ctx_->ring_dim()) {
    throw std::invalid_argument("decode_coefficients: plaintext has " +
                                std::to_string(pt.coeffs.size()) +
                                " coefficients, N = " + std::to_string(ctx_->ring_dim()));
  }
  return pt.coeffs;
}

}  // namespace hec::bfv
