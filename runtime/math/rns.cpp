// RNS bases, base conversion and CRT composition (see rns.h).
#include "math/rns.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/rns_kernels.h"

namespace hec::math {
namespace {

// Little-endian multi-word helpers on fixed-length vectors (carry out of the top word is
// a caller error and checked where it could happen).
void mul_word_inplace(std::vector<u64>& x, u64 m) {
  u64 carry = 0;
  for (u64& w : x) {
    const u128 p = static_cast<u128>(w) * m + carry;
    w = static_cast<u64>(p);
    carry = static_cast<u64>(p >> 64);
  }
  if (carry != 0) throw std::logic_error("RnsBase: multi-word overflow");
}

// x += y * m (y no longer than x).
void add_mul_word_inplace(std::vector<u64>& x, const std::vector<u64>& y, u64 m) {
  u64 carry = 0;
  std::size_t i = 0;
  for (; i < y.size(); ++i) {
    const u128 p = static_cast<u128>(y[i]) * m + x[i] + carry;
    x[i] = static_cast<u64>(p);
    carry = static_cast<u64>(p >> 64);
  }
  for (; carry != 0 && i < x.size(); ++i) {
    const u128 p = static_cast<u128>(x[i]) + carry;
    x[i] = static_cast<u64>(p);
    carry = static_cast<u64>(p >> 64);
  }
  if (carry != 0) throw std::logic_error("RnsBase: multi-word overflow");
}

bool greater_equal(const std::vector<u64>& x, const std::vector<u64>& y) {
  for (std::size_t i = x.size(); i-- > 0;) {
    const u64 yi = i < y.size() ? y[i] : 0;
    if (x[i] != yi) return x[i] > yi;
  }
  return true;
}

void sub_inplace(std::vector<u64>& x, const std::vector<u64>& y) {
  u64 borrow = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const u64 yi = i < y.size() ? y[i] : 0;
    const u128 d = static_cast<u128>(x[i]) - yi - borrow;
    x[i] = static_cast<u64>(d);
    borrow = static_cast<u64>(d >> 64) != 0 ? 1 : 0;
  }
}

long double to_long_double(const std::vector<u64>& x) {
  long double v = 0;
  for (std::size_t i = x.size(); i-- > 0;) v = v * 18446744073709551616.0L + x[i];
  return v;
}

u64 mod_words(const std::vector<u64>& words, const Modulus& m) {
  u64 r = 0;
  for (std::size_t i = words.size(); i-- > 0;) {
    r = barrett_reduce_128((static_cast<u128>(r) << 64) | words[i], m);
  }
  return r;
}

std::vector<Modulus> to_moduli(const std::vector<u64>& values) {
  std::vector<Modulus> out;
  out.reserve(values.size());
  for (u64 v : values) out.emplace_back(v);
  return out;
}

}  // namespace

RnsBase::RnsBase(const std::vector<u64>& moduli) : RnsBase(to_moduli(moduli)) {}

RnsBase::RnsBase(std::vector<Modulus> moduli) : moduli_(std::move(moduli)) {
  const std::size_t k = moduli_.size();
  if (k == 0) throw std::invalid_argument("RnsBase: the list of moduli is empty");
  for (std::size_t i = 0; i < k; ++i) {
    for (std::size_t j = i + 1; j < k; ++j) {
      if (std::gcd(moduli_[i].value(), moduli_[j].value()) != 1) {
        throw std::invalid_argument("RnsBase: moduli " + std::to_string(moduli_[i].value()) +
                                    " (index " + std::to_string(i) + ") and " +
                                    std::to_string(moduli_[j].value()) + " (index " +
                                    std::to_string(j) + ") are not coprime");
      }
    }
  }
  product_.assign(k, 0);
  product_[0] = 1;
  for (const Modulus& m : moduli_) mul_word_inplace(product_, m.value());
  q_hat_.assign(k, std::vector<u64>(k, 0));
  q_hat_inv_.resize(k);
  q_hat_inv_shoup_.resize(k);
  for (std::size_t i = 0; i < k; ++i) {
    std::vector<u64>& hat = q_hat_[i];
    hat[0] = 1;
    for (std::size_t j = 0; j < k; ++j) {
      if (j != i) mul_word_inplace(hat, moduli_[j].value());
    }
    const u64 qi = moduli_[i].value();
    q_hat_inv_[i] = inverse_mod(mod_words(hat, moduli_[i]), qi);
    q_hat_inv_shoup_[i] = shoup_precompute(q_hat_inv_[i], qi);
  }
}

RnsBase RnsBase::prefix(std::size_t count) const {
  if (count < 1 || count > size()) {
    throw std::invalid_argument("RnsBase::prefix: count = " + std::to_string(count) +
                                " must be in [1, " + std::to_string(size()) + "]");
  }
  return RnsBase(std::vector<Modulus>(moduli_.begin(), moduli_.begin() + count));
}

std::vector<u64> RnsBase::compose(const u64* residues, std::size_t stride) const {
  const std::size_t k = size();
  // sum_i y_i * (Q/q_i) < k * Q: one extra word of headroom, then reduce.
  std::vector<u64> acc(k + 1, 0);
  for (std::size_t i = 0; i < k; ++i) {
    const u64 qi = moduli_[i].value();
    const u64 xi = residues[i * stride];
    if (xi >= qi) {
      throw std::invalid_argument("RnsBase::compose: residue " + std::to_string(xi) + " of limb " +
                                  std::to_string(i) + " is not below q_i = " + std::to_string(qi));
    }
    const u64 yi = mul_shoup(xi, q_hat_inv_[i], q_hat_inv_shoup_[i], qi);
    add_mul_word_inplace(acc, q_hat_[i], yi);
  }
  while (greater_equal(acc, product_)) sub_inplace(acc, product_);
  acc.resize(k);
  return acc;
}

long double RnsBase::compose_centered(const u64* residues, std::size_t stride) const {
  std::vector<u64> x = compose(residues, stride);
  // x > Q/2  <=>  2x > Q  <=>  2x >= Q and 2x != Q.
  std::vector<u64> twice = x, q = product_;
  twice.push_back(0);
  q.push_back(0);
  mul_word_inplace(twice, 2);
  if (!greater_equal(twice, q) || twice == q) return to_long_double(x);
  std::vector<u64> negated = product_;
  sub_inplace(negated, x);
  return -to_long_double(negated);
}

void RnsBase::decompose(const std::vector<u64>& words, u64* out, std::size_t stride) const {
  for (std::size_t i = 0; i < size(); ++i) out[i * stride] = mod_words(words, moduli_[i]);
}

BaseConverter::BaseConverter(const RnsBase& from, const RnsBase& to) : from_(from), to_(to) {
  const std::size_t k = from.size(), l = to.size();
  if (k > 64) {
    throw std::invalid_argument("BaseConverter: " + std::to_string(k) +
                                " source moduli exceed the 64 the 128-bit accumulator allows");
  }
  q_hat_mod_p_.resize(k * l);
  q_mod_p_.resize(l);
  for (std::size_t j = 0; j < l; ++j) {
    for (std::size_t i = 0; i < k; ++i) q_hat_mod_p_[j * k + i] = mod_words(from.q_hat(i), to[j]);
    q_mod_p_[j] = mod_words(from.product(), to[j]);
  }
  q_inv_double_.resize(k);
  for (std::size_t i = 0; i < k; ++i) q_inv_double_[i] = 1.0 / static_cast<double>(from[i].value());

  bool small_moduli = true;
  for (const Modulus& m : from.moduli()) small_moduli = small_moduli && m.bit_count() <= 50;
  for (const Modulus& m : to.moduli()) small_moduli = small_moduli && m.bit_count() <= 50;
  if (small_moduli) {
    auto t = std::make_shared<detail::ConvertTables>();
    const auto shoup52 = [](u64 w, u64 q) {
      return static_cast<u64>((static_cast<u128>(w) << 52) / q);
    };
    t->k = k;
    t->l = l;
    for (std::size_t i = 0; i < k; ++i) {
      const u64 q = from[i].value();
      t->from_q.push_back(q);
      t->hat_inv.push_back(from.q_hat_inv_mod_q(i));
      t->hat_inv_shoup52.push_back(shoup52(from.q_hat_inv_mod_q(i), q));
    }
    t->q_hat_mod_p = q_hat_mod_p_;
    t->q_inv = q_inv_double_;
    for (std::size_t j = 0; j < l; ++j) {
      const u64 p = to[j].value();
      const u64 two52 = static_cast<u64>((u128{1} << 52) % p);
      t->to_p.push_back(p);
      t->two52_mod_p.push_back(two52);
      t->two52_mod_p_shoup52.push_back(shoup52(two52, p));
      t->one_shoup52.push_back(shoup52(1, p));
      t->q_mod_p.push_back(q_mod_p_[j]);
      t->q_mod_p_shoup52.push_back(shoup52(q_mod_p_[j], p));
    }
    ifma_ = std::move(t);
  } else {
    auto t = std::make_shared<detail::WideConvertTables>();
    constexpr u64 kTwo52 = u64{1} << 52, kMask52 = kTwo52 - 1;
    t->k = k;
    t->l = l;
    for (std::size_t i = 0; i < k; ++i) {
      const u64 q = from[i].value();
      t->from_q.push_back(q);
      t->hat_inv.push_back(from.q_hat_inv_mod_q(i));
      t->hat_inv_shoup.push_back(from.q_hat_inv_mod_q_shoup(i));
      t->from_wide.push_back(q >= kTwo52 ? 1 : 0);
    }
    t->narrow =
        std::all_of(t->from_q.begin(), t->from_q.end(), [](u64 q) { return q < (u64{1} << 43); });
    t->q_inv = q_inv_double_;
    for (std::size_t j = 0; j < l; ++j) {
      const u64 p = to[j].value();
      for (std::size_t i = 0; i < k; ++i) {
        const u64 h = q_hat_mod_p_[j * k + i];
        const u64 g = static_cast<u64>((static_cast<u128>(h) << 52) % p);
        t->hat_lo.push_back(h & kMask52);
        t->hat_hi.push_back(h >> 52);
        t->hat52_lo.push_back(g & kMask52);
        t->hat52_hi.push_back(g >> 52);
      }
      const u64 neg_q = q_mod_p_[j] == 0 ? 0 : p - q_mod_p_[j];
      t->neg_q_lo.push_back(neg_q & kMask52);
      t->neg_q_hi.push_back(neg_q >> 52);
      if (k < 8) {
        for (std::size_t v = 0; v < 8; ++v) {
          t->neg_vq.push_back(v <= k ? static_cast<u64>(static_cast<u128>(v) * neg_q % p) : 0);
        }
      }
      const u64 r52 = static_cast<u64>((u128{1} << 52) % p);
      const u64 r104 = static_cast<u64>((static_cast<u128>(r52) << 52) % p);
      t->to_p.push_back(p);
      t->r52.push_back(r52);
      t->r52_shoup.push_back(shoup_precompute(r52, p));
      t->r104.push_back(r104);
      t->r104_shoup.push_back(shoup_precompute(r104, p));
      t->one_shoup.push_back(shoup_precompute(1, p));
    }
    wide_ = std::move(t);
  }
}

// Both conversions, block by block over the coefficients (blocks in parallel):
// Step (1): y_i = [x_i * (Q/q_i)^{-1}]_{q_i} for the block, limb by limb.
// Step (2) (exact only): v = floor(sum_i y_i / q_i + 1/2), the number of times Q was added (HPS
//          Lemma 2); rounding rather than flooring selects the centred representative.
// Step (3): out_j = [sum_i y_i * (Q/q_i mod p_j) - v * (Q mod p_j)]_{p_j}, accumulating the
//          k <= 64 products below 2^122 each in 128 bits and reducing once.
template <bool exact>
void BaseConverter::convert(const u64* in, u64* const* out_limbs, std::size_t n) const {
  using detail::kConvertBlock;
  const std::size_t k = from_.size(), l = to_.size();
  const std::size_t blocks = (n + kConvertBlock - 1) / kConvertBlock;
  const bool avx512 = active_kernel_path() == KernelPath::kAvx512Ifma;
  const bool ifma = ifma_ != nullptr && avx512;
  const bool wide = wide_ != nullptr && avx512;
  // The IFMA kernel takes one output array; it is used only when the limbs are contiguous.
  bool contiguous = true;
  for (std::size_t j = 1; j < l; ++j) contiguous &= out_limbs[j] == out_limbs[0] + j * n;
  u64* const out = out_limbs[0];
  parallel_for(
      blocks,
      [&](std::size_t b) {
        const std::size_t start = b * kConvertBlock;
        const std::size_t len = std::min(kConvertBlock, n - start);
        if (ifma && contiguous) {
          detail::convert_block_ifma(*ifma_, exact, in, out, n, start, len);
          return;
        }
        if (wide) {
          detail::convert_block_wide(*wide_, exact, in, out_limbs, n, start, len);
          return;
        }
        std::vector<u64> y(k * kConvertBlock);
        // Step (1)
        for (std::size_t i = 0; i < k; ++i) {
          const u64 qi = from_[i].value(), w = from_.q_hat_inv_mod_q(i),
                    ws = from_.q_hat_inv_mod_q_shoup(i);
          const u64* xi = in + i * n + start;
          u64* yi = y.data() + i * kConvertBlock;
          for (std::size_t c = 0; c < len; ++c) yi[c] = mul_shoup(xi[c], w, ws, qi);
        }
        // Step (2)
        u64 v[kConvertBlock];
        if constexpr (exact) {
          double s[kConvertBlock] = {};
          for (std::size_t i = 0; i < k; ++i) {
            const double inv = q_inv_double_[i];
            const u64* yi = y.data() + i * kConvertBlock;
            for (std::size_t c = 0; c < len; ++c) s[c] += static_cast<double>(yi[c]) * inv;
          }
          // floor(s + 1/2) (s >= 0), the same operations as the IFMA kernel.
          for (std::size_t c = 0; c < len; ++c) v[c] = static_cast<u64>(s[c] + 0.5);
        }
        // Step (3)
        for (std::size_t j = 0; j < l; ++j) {
          const Modulus& pj = to_[j];
          const u64 p = pj.value();
          const u64* hat = &q_hat_mod_p_[j * k];
          u64* oj = out_limbs[j] + start;
          u128 acc[kConvertBlock] = {};
          for (std::size_t i = 0; i < k; ++i) {
            const u64 h = hat[i];
            const u64* yi = y.data() + i * kConvertBlock;
            for (std::size_t c = 0; c < len; ++c) acc[c] += static_cast<u128>(yi[c]) * h;
          }
          if constexpr (exact) {
            const u64 q_mod = q_mod_p_[j];
            for (std::size_t c = 0; c < len; ++c) {
              // v <= k < p: v * (Q mod p) < 2^67 fits the accumulator's headroom after reducing.
              const u64 sum = barrett_reduce_128(acc[c], pj);
              oj[c] = sub_mod(sum, barrett_reduce_128(static_cast<u128>(v[c]) * q_mod, pj), p);
            }
          } else {
            for (std::size_t c = 0; c < len; ++c) oj[c] = barrett_reduce_128(acc[c], pj);
          }
        }
      },
      kConvertBlock * (k * l + k));
}

namespace {
std::vector<u64*> contiguous_limbs(u64* out, std::size_t count, std::size_t n) {
  std::vector<u64*> limbs(count);
  for (std::size_t j = 0; j < count; ++j) limbs[j] = out + j * n;
  return limbs;
}
}  // namespace

void BaseConverter::convert_approx(const u64* in, u64* out, std::size_t n) const {
  convert<false>(in, contiguous_limbs(out, to_.size(), n).data(), n);
}

void BaseConverter::convert_exact(const u64* in, u64* out, std::size_t n) const {
  convert<true>(in, contiguous_limbs(out, to_.size(), n).data(), n);
}

void BaseConverter::convert_approx(const u64* in, u64* const* out_limbs, std::size_t n) const {
  convert<false>(in, out_limbs, n);
}

void BaseConverter::convert_exact(const u64* in, u64* const* out_limbs, std::size_t n) const {
  convert<true>(in, out_limbs, n);
}

}  // namespace hec::math
