// RNS polynomial container and its pointwise kernels (see poly.h).
#include "math/poly.h"

#include <stdexcept>
#include <string>

#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"
#include "math/sampling.h"

namespace hec::math {
namespace {

std::vector<NttTables> make_tables(std::size_t n, const RnsBase& base) {
  std::vector<NttTables> tables;
  tables.reserve(base.size());
  for (std::size_t i = 0; i < base.size(); ++i) tables.emplace_back(n, base[i]);
  return tables;
}

void check_compatible(const char* op, const RnsPoly& a, const RnsPoly& b) {
  if (a.context() == nullptr || b.context() == nullptr) {
    throw std::invalid_argument(std::string(op) + ": operand has no context (default-constructed)");
  }
  if (a.context() != b.context()) {
    throw std::invalid_argument(std::string(op) + ": operands belong to different RnsContexts");
  }
  if (a.num_limbs() != b.num_limbs()) {
    throw std::invalid_argument(std::string(op) + ": operands have " +
                                std::to_string(a.num_limbs()) + " and " +
                                std::to_string(b.num_limbs()) + " limbs");
  }
  if (a.form() != b.form()) {
    throw std::invalid_argument(std::string(op) + ": operands are in " + poly_form_name(a.form()) +
                                " and " + poly_form_name(b.form()) + " form");
  }
}

void check_evaluation(const char* op, const RnsPoly& a) {
  if (a.form() != PolyForm::kEvaluation) {
    throw std::invalid_argument(std::string(op) + ": operand is in " + poly_form_name(a.form()) +
                                " form, evaluation form required");
  }
}

// The IFMA kernels take limbs whose modulus is below 2^50 when the CPU has them.
bool use_ifma(const Modulus& m) {
  return m.bit_count() <= 50 && active_kernel_path() == KernelPath::kAvx512Ifma;
}

// Addition-type kernels need only AVX-512F (any q < 2^61); the IFMA check covers it.
bool use_avx512() { return active_kernel_path() == KernelPath::kAvx512Ifma; }

}  // namespace

const char* poly_form_name(PolyForm form) {
  return form == PolyForm::kEvaluation ? "evaluation" : "coefficient";
}

RnsContext::RnsContext(std::size_t ring_dim, const std::vector<u64>& moduli)
    : n_(ring_dim), base_(moduli), tables_(make_tables(ring_dim, base_)) {}

RnsPoly::RnsPoly(std::shared_ptr<const RnsContext> context, std::size_t num_limbs, PolyForm form)
    : context_(std::move(context)), form_(form) {
  if (context_ == nullptr) throw std::invalid_argument("RnsPoly: null context");
  if (num_limbs < 1 || num_limbs > context_->size()) {
    throw std::invalid_argument("RnsPoly: num_limbs = " + std::to_string(num_limbs) +
                                " must be in [1, " + std::to_string(context_->size()) + "]");
  }
  n_ = context_->ring_dim();
  num_limbs_ = num_limbs;
  data_.assign(n_ * num_limbs_, 0);
}

void RnsPoly::set_zero() { std::fill(data_.begin(), data_.end(), 0); }

void RnsPoly::set_signed(std::span<const std::int64_t> values) {
  if (values.size() != n_) {
    throw std::invalid_argument("RnsPoly::set_signed: " + std::to_string(values.size()) +
                                " values for ring dimension " + std::to_string(n_));
  }
  signed_to_rns(values.data(), n_, context_->base().prefix(num_limbs_), data_.data());
  form_ = PolyForm::kCoefficient;
}

void RnsPoly::drop_last_limb() {
  if (num_limbs_ <= 1) throw std::invalid_argument("RnsPoly::drop_last_limb: only one limb left");
  --num_limbs_;
  data_.resize(n_ * num_limbs_);
}

bool RnsPoly::operator==(const RnsPoly& other) const {
  return context_ == other.context_ && num_limbs_ == other.num_limbs_ && form_ == other.form_ &&
         data_ == other.data_;
}

void add_inplace(RnsPoly& a, const RnsPoly& b) {
  check_compatible("add_inplace", a, b);
  const std::size_t n = a.ring_dim();
  parallel_for(
      a.num_limbs(),
      [&](std::size_t i) {
        const u64 q = a.modulus(i).value();
        u64* x = a.limb(i);
        const u64* y = b.limb(i);
        if (use_avx512()) return detail::add_avx512(x, y, n, q);
        for (std::size_t c = 0; c < n; ++c) {
          const u64 s = x[c] + y[c];
          x[c] = s >= q ? s - q : s;
        }
      },
      n);
}

void sub_inplace(RnsPoly& a, const RnsPoly& b) {
  check_compatible("sub_inplace", a, b);
  const std::size_t n = a.ring_dim();
  parallel_for(
      a.num_limbs(),
      [&](std::size_t i) {
        const u64 q = a.modulus(i).value();
        u64* x = a.limb(i);
        const u64* y = b.limb(i);
        if (use_avx512()) return detail::sub_avx512(x, y, n, q);
        for (std::size_t c = 0; c < n; ++c) {
          const u64 d = x[c] - y[c];
          x[c] = x[c] >= y[c] ? d : d + q;
        }
      },
      n);
}

void negate_inplace(RnsPoly& a) {
  const std::size_t n = a.ring_dim();
  parallel_for(
      a.num_limbs(),
      [&](std::size_t i) {
        const u64 q = a.modulus(i).value();
        u64* x = a.limb(i);
        if (use_avx512()) return detail::negate_avx512(x, n, q);
        for (std::size_t c = 0; c < n; ++c) x[c] = x[c] == 0 ? 0 : q - x[c];
      },
      n);
}

void multiply_inplace(RnsPoly& a, const RnsPoly& b) {
  check_compatible("multiply_inplace", a, b);
  check_evaluation("multiply_inplace", a);
  const std::size_t n = a.ring_dim();
  parallel_for(
      a.num_limbs(),
      [&](std::size_t i) {
        const Modulus& m = a.modulus(i);
        u64* x = a.limb(i);
        const u64* y = b.limb(i);
        if (use_ifma(m)) return detail::multiply_ifma(x, y, n, m.value());
        if (use_avx512()) {
          const u64* const xs[1] = {x};
          return detail::multiply_accumulate_wide(x, xs, &y, 1, n, m.value());
        }
        for (std::size_t c = 0; c < n; ++c) x[c] = mul_mod(x[c], y[c], m);
      },
      n);
}

void multiply_scalar_inplace(RnsPoly& a, std::span<const u64> scalars) {
  if (scalars.size() != a.num_limbs()) {
    throw std::invalid_argument("multiply_scalar_inplace: " + std::to_string(scalars.size()) +
                                " scalars for " + std::to_string(a.num_limbs()) + " limbs");
  }
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    if (scalars[i] >= a.modulus(i).value()) {
      throw std::invalid_argument("multiply_scalar_inplace: scalar " + std::to_string(scalars[i]) +
                                  " of limb " + std::to_string(i) +
                                  " is not below q_i = " + std::to_string(a.modulus(i).value()));
    }
  }
  const std::size_t n = a.ring_dim();
  parallel_for(
      a.num_limbs(),
      [&](std::size_t i) {
        const u64 q = a.modulus(i).value();
        const u64 s = scalars[i], ss = shoup_precompute(s, q);
        u64* x = a.limb(i);
        if (active_kernel_path() == KernelPath::kAvx512Ifma && q < (u64{1} << 61)) {
          detail::multiply_scalar_avx512(x, n, s, ss, q);
          return;
        }
        for (std::size_t c = 0; c < n; ++c) x[c] = mul_shoup(x[c], s, ss, q);
      },
      n);
}

void multiply_add_inplace(RnsPoly& acc, const RnsPoly& a, const RnsPoly& b) {
  check_compatible("multiply_add_inplace", acc, a);
  check_compatible("multiply_add_inplace", a, b);
  check_evaluation("multiply_add_inplace", acc);
  const std::size_t n = acc.ring_dim();
  parallel_for(
      acc.num_limbs(),
      [&](std::size_t i) {
        const Modulus& m = acc.modulus(i);
        u64* z = acc.limb(i);
        const u64* x = a.limb(i);
        const u64* y = b.limb(i);
        if (use_ifma(m)) return detail::multiply_add_ifma(z, x, y, n, m.value());
        if (use_avx512()) return detail::multiply_add_wide(z, x, y, n, m.value());
        for (std::size_t c = 0; c < n; ++c) {
          z[c] = barrett_reduce_128(static_cast<u128>(x[c]) * y[c] + z[c], m);
        }
      },
      n);
}

void multiply_accumulate(RnsPoly& out, std::span<const RnsPoly* const> a,
                         std::span<const RnsPoly* const> b) {
  if (a.size() != b.size() || a.empty()) {
    throw std::invalid_argument("multiply_accumulate: " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) +
                                " operands (need the same nonzero count)");
  }
  for (std::size_t k = 0; k < a.size(); ++k) {
    check_compatible("multiply_accumulate", *a[k], *b[k]);
    check_evaluation("multiply_accumulate", *a[k]);
    if (a[k]->context() != out.context() || a[k]->num_limbs() != out.num_limbs()) {
      throw std::invalid_argument("multiply_accumulate: output has " +
                                  std::to_string(out.num_limbs()) + " limbs, operand " +
                                  std::to_string(k) + " has " + std::to_string(a[k]->num_limbs()) +
                                  " (or another context)");
    }
  }
  out.set_form(PolyForm::kEvaluation);
  const std::size_t n = out.ring_dim();
  constexpr std::size_t kBlock = 256;  // 4 KiB of 128-bit accumulators stay in L1
  parallel_for(
      out.num_limbs(),
      [&](std::size_t i) {
        const Modulus& m = out.modulus(i);
        const u64 q = m.value();
        if (use_avx512()) {
          std::vector<const u64*> xs(a.size()), ys(b.size());
          for (std::size_t k = 0; k < a.size(); ++k) {
            xs[k] = a[k]->limb(i);
            ys[k] = b[k]->limb(i);
          }
          return use_ifma(m) ? detail::multiply_accumulate_ifma(out.limb(i), xs.data(), ys.data(),
                                                                a.size(), n, q)
                             : detail::multiply_accumulate_wide(out.limb(i), xs.data(), ys.data(),
                                                                a.size(), n, q);
        }
        // Terms that fit a 128-bit accumulator on top of a reduced value below q.
        const u128 max_product = static_cast<u128>(q - 1) * (q - 1);
        const std::size_t run = static_cast<std::size_t>(
            std::min<u128>((~static_cast<u128>(0) - q) / max_product, u128{1} << 30));
        u128 acc[kBlock];
        u64* z = out.limb(i);
        for (std::size_t start = 0; start < n; start += kBlock) {
          const std::size_t len = std::min(kBlock, n - start);
          for (std::size_t c = 0; c < len; ++c) acc[c] = 0;
          std::size_t in_run = 0;
          for (std::size_t k = 0; k < a.size(); ++k) {
            const u64* x = a[k]->limb(i) + start;
            const u64* y = b[k]->limb(i) + start;
            for (std::size_t c = 0; c < len; ++c) acc[c] += static_cast<u128>(x[c]) * y[c];
            if (++in_run == run) {  // fold back to [0, q) and continue
              for (std::size_t c = 0; c < len; ++c) acc[c] = barrett_reduce_128(acc[c], m);
              in_run = 0;
            }
          }
          for (std::size_t c = 0; c < len; ++c) z[start + c] = barrett_reduce_128(acc[c], m);
        }
      },
      n * a.size());
}

void to_ntt_inplace(RnsPoly& a) {
  if (a.form() != PolyForm::kCoefficient) {
    throw std::invalid_argument("to_ntt_inplace: polynomial is already in evaluation form");
  }
  const RnsContext& ctx = *a.context();
  parallel_for(
      a.num_limbs(), [&](std::size_t i) { ntt_forward_inplace(a.limb(i), ctx.ntt(i)); },
      a.ring_dim() * ctx.ntt(0).log_ring_dim());
  a.set_form(PolyForm::kEvaluation);
}

void from_ntt_inplace(RnsPoly& a) {
  if (a.form() != PolyForm::kEvaluation) {
    throw std::invalid_argument("from_ntt_inplace: polynomial is already in coefficient form");
  }
  const RnsContext& ctx = *a.context();
  parallel_for(
      a.num_limbs(), [&](std::size_t i) { ntt_inverse_inplace(a.limb(i), ctx.ntt(i)); },
      a.ring_dim() * ctx.ntt(0).log_ring_dim());
  a.set_form(PolyForm::kCoefficient);
}

}  // namespace hec::math
