// Hybrid key switching shared by CKKS and BFV: ModUp, key product, exact ModDown, key
// generation (see keyswitch.h for the steps and why each conversion is exact or not).
#include "core/keyswitch.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>

#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"

namespace hec::core {
namespace {

bool use_avx512() { return math::active_kernel_path() == math::KernelPath::kAvx512Ifma; }
bool use_ifma(u64 q) { return q < (u64{1} << 50) && use_avx512(); }

// x mod q for x < bound (bound <= 2^61): one conditional subtraction when bound <= 2q.
inline u64 reduce_below(u64 x, const math::Modulus& m, bool small) {
  const u64 q = m.value();
  if (small) return x >= q ? x - q : x;
  return x >= q ? math::barrett_reduce_128(x, m) : x;
}

// The centred lift of x in [0, p) (x > p/2 stands for x - p) reduced mod the prime of m.
inline void centred_lift(const u64* x, std::size_t n, u64 p, const math::Modulus& m, u64* out) {
  const u64 q = m.value();
  const u64 p_mod_q = p >= q ? math::barrett_reduce_128(p, m) : p;
  const bool small = p <= 2 * q;
  if (use_avx512() && (small || p / q < (u64{1} << 51))) {
    if (small) {
      math::detail::centre_reduce_avx512(out, x, n, q, p_mod_q, p / 2);
    } else {
      math::detail::centre_reduce_wide_avx512(out, x, n, q, p_mod_q, p / 2);
    }
    return;
  }
  for (std::size_t t = 0; t < n; ++t) {
    const u64 r = reduce_below(x[t], m, small);
    out[t] = x[t] > p / 2 ? (r >= p_mod_q ? r - p_mod_q : r + q - p_mod_q) : r;
  }
}

// Per-thread scratch (math::scratch).
thread_local std::vector<u64> tl_coef, tl_acc, tl_conv, tl_perm, tl_term, tl_limb;

// Released digit buffers by size, most recent last, at most kDigitPoolBytes in all.
class DigitPool {
 public:
  u64* take(std::size_t words) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = free_.size(); i-- > 0;) {
        if (free_[i].second == words) {
          u64* p = free_[i].first;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
          bytes_ -= words * sizeof(u64);
          return p;
        }
      }
    }
    return new u64[words];
  }
  void give(u64* p, std::size_t words) {
    std::vector<std::pair<u64*, std::size_t>> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.emplace_back(p, words);
      bytes_ += words * sizeof(u64);
      // Oldest first out until under the cap (a buffer larger than the cap is not kept).
      while (bytes_ > kDigitPoolBytes && !free_.empty()) {
        evicted.push_back(free_.front());
        bytes_ -= free_.front().second * sizeof(u64);
        free_.erase(free_.begin());
      }
    }
    for (const auto& [q, w] : evicted) delete[] q;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<u64*, std::size_t>> free_;
  std::size_t bytes_ = 0;
};

// Never destroyed: digits may be released by static destructors after main returns.
DigitPool& digit_pool() {
  static DigitPool* pool = new DigitPool;
  return *pool;
}

}  // namespace

void DigitBufferRelease::operator()(u64* p) const {
  if (p != nullptr) digit_pool().give(p, words);
}

// Everything key switching needs at |Q_l| limbs.
struct HybridKeySwitch::Level {
  std::size_t limbs = 0;
  std::vector<std::size_t> digit_begin, digit_end;
  // ModUp of digit j: its primes -> the other primes of Q_l followed by P (null when that set
  // is empty: one prime, no P).
  std::vector<std::unique_ptr<math::BaseConverter>> mod_up;
  std::vector<bool> exact_mod_up;
  // ModDown: P -> Q_l (null without special primes), P^{-1} mod q_i (Shoup).
  std::unique_ptr<math::BaseConverter> mod_down;
  std::vector<u64> p_inv, p_inv_shoup;
  std::unique_ptr<math::RnsBase> key_base;  // Q_l P, for sampling key digits
};

HybridKeySwitch::HybridKeySwitch(std::size_t n, std::vector<math::Modulus> moduli,
                                 std::vector<const math::NttTables*> ntt, std::size_t chain_size,
                                 const std::vector<std::pair<std::size_t, std::size_t>>& digits,
                                 const std::vector<std::size_t>& level_limbs)
    : n_(n),
      chain_size_(chain_size),
      moduli_(std::move(moduli)),
      ntt_(std::move(ntt)),
      digits_(digits) {
  if (ntt_.size() != moduli_.size() || chain_size_ == 0 || chain_size_ > moduli_.size()) {
    throw std::invalid_argument("HybridKeySwitch: " + std::to_string(moduli_.size()) + " moduli, " +
                                std::to_string(ntt_.size()) + " NTT tables, chain of " +
                                std::to_string(chain_size_));
  }
  std::size_t expect = 0;
  for (const auto& [begin, end] : digits_) {
    if (begin != expect || end <= begin) {
      throw std::invalid_argument("HybridKeySwitch: digits must be consecutive non-empty ranges");
    }
    expect = end;
  }
  if (expect != chain_size_) {
    throw std::invalid_argument("HybridKeySwitch: digits cover " + std::to_string(expect) +
                                " of the " + std::to_string(chain_size_) + " chain primes");
  }
  const std::size_t special = special_size();
  std::vector<u64> chain, specials;
  for (std::size_t i = 0; i < moduli_.size(); ++i) {
    (i < chain_size_ ? chain : specials).push_back(moduli_[i].value());
  }
  double log_p = 0;
  for (u64 p : specials) log_p += std::log2(static_cast<double>(p));
  for (std::size_t i = 0; i < chain_size_; ++i) {
    u64 pm = 1 % chain[i];
    for (u64 p : specials) pm = math::mul_mod(pm, p % chain[i], moduli_[i]);
    p_mod_q_.push_back(pm);
  }
  levels_.resize(chain_size_ + 1);
  for (std::size_t limbs : level_limbs) {
    if (limbs == 0 || limbs > chain_size_) {
      throw std::invalid_argument("HybridKeySwitch: level of " + std::to_string(limbs) +
                                  " limbs outside [1, " + std::to_string(chain_size_) + "]");
    }
    if (levels_[limbs]) continue;
    auto lv = std::make_unique<Level>();
    lv->limbs = limbs;
    for (const auto& [b, e] : digits_) {
      if (b >= limbs) break;
      const std::size_t begin = b, end = std::min(e, limbs);
      lv->digit_begin.push_back(begin);
      lv->digit_end.push_back(end);
      std::vector<u64> from(chain.begin() + begin, chain.begin() + end);
      std::vector<u64> to;
      for (std::size_t i = 0; i < limbs; ++i) {
        if (i < begin || i >= end) to.push_back(chain[i]);
      }
      to.insert(to.end(), specials.begin(), specials.end());
      double log_digit = 0;
      for (u64 q : from) log_digit += std::log2(static_cast<double>(q));
      lv->exact_mod_up.push_back(log_p - log_digit < kCentredModUpMarginBits);
      lv->mod_up.push_back(to.empty() ? nullptr
                                      : std::make_unique<math::BaseConverter>(math::RnsBase(from),
                                                                              math::RnsBase(to)));
    }
    const std::vector<u64> q_l(chain.begin(), chain.begin() + limbs);
    if (special > 0) {
      lv->mod_down =
          std::make_unique<math::BaseConverter>(math::RnsBase(specials), math::RnsBase(q_l));
    }
    for (std::size_t i = 0; i < limbs; ++i) {
      const u64 inv = math::inverse_mod(p_mod_q_[i], chain[i]);
      lv->p_inv.push_back(inv);
      lv->p_inv_shoup.push_back(math::shoup_precompute(inv, chain[i]));
    }
    std::vector<u64> qp = q_l;
    qp.insert(qp.end(), specials.begin(), specials.end());
    lv->key_base = std::make_unique<math::RnsBase>(qp);
    levels_[limbs] = std::move(lv);
  }
}

HybridKeySwitch::~HybridKeySwitch() = default;

const HybridKeySwitch::Level& HybridKeySwitch::level(std::size_t limbs) const {
  if (limbs >= levels_.size() || !levels_[limbs]) {
    throw std::invalid_argument("key switching: no tables for a modulus of " +
                                std::to_string(limbs) + " primes");
  }
  return *levels_[limbs];
}

std::size_t HybridKeySwitch::digit_count(std::size_t limbs) const {
  return level(limbs).digit_begin.size();
}

std::pair<std::size_t, std::size_t> HybridKeySwitch::digit(std::size_t limbs, std::size_t j) const {
  const Level& lv = level(limbs);
  return {lv.digit_begin.at(j), lv.digit_end.at(j)};
}

ModUpDigits HybridKeySwitch::mod_up(const u64* c_ntt, const u64* c_coef, std::size_t limbs) const {
  const Level& ks = level(limbs);
  const std::size_t n = n_;
  const std::size_t total = limbs + special_size();
  auto ctx_index = [&](std::size_t k) { return k < limbs ? k : chain_size_ + (k - limbs); };
  if (c_ntt == nullptr && c_coef == nullptr) {
    throw std::invalid_argument("key switching: mod_up needs the polynomial in some form");
  }
  // Coefficient form of c.
  const u64* coef = c_coef;
  if (coef == nullptr) {
    u64* tmp = math::scratch(tl_coef, limbs * n);
    math::parallel_for(
        limbs, [&](std::size_t i) { math::ntt_inverse(c_ntt + i * n, tmp + i * n, *ntt_[i]); });
    coef = tmp;
  }
  ModUpDigits out;
  out.limbs = limbs;
  const std::size_t digits = ks.digit_begin.size();
  out.digits.resize(digits);
  for (ExtendedDigit& d : out.digits) {
    d.words = std::unique_ptr<u64[], DigitBufferRelease>(digit_pool().take(total * n),
                                                         DigitBufferRelease{total * n});
  }
  // Base conversion of each digit to the complement primes, written straight into the
  // digit's rows of those primes (coefficient form for now).
  math::parallel_for(digits, [&](std::size_t j) {
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    u64* const dst = out.digits[j].data();
    if (end - begin == 1) {
      const u64 qj = moduli_[begin].value();
      for (std::size_t k = 0; k < total; ++k) {
        if (k == begin) continue;
        centred_lift(coef + begin * n, n, qj, moduli_[ctx_index(k)], dst + k * n);
      }
      return;
    }
    if (!ks.mod_up[j]) return;
    std::vector<u64*> rows;
    rows.reserve(total - (end - begin));
    for (std::size_t k = 0; k < total; ++k) {
      if (k < begin || k >= end) rows.push_back(dst + k * n);
    }
    if (ks.exact_mod_up[j]) {
      ks.mod_up[j]->convert_exact(coef + begin * n, rows.data(), n);
    } else {
      ks.mod_up[j]->convert_approx(coef + begin * n, rows.data(), n);
    }
  });
  // The digit's own limbs (NTT form of c), and the NTT of the converted ones (parallel over
  // digit x limb).
  math::parallel_for(digits * total, [&](std::size_t idx) {
    const std::size_t j = idx / total, k = idx % total;
    const std::size_t begin = ks.digit_begin[j], end = ks.digit_end[j];
    u64* dst = out.digits[j].data() + k * n;
    if (k >= begin && k < end) {
      if (c_ntt != nullptr) {
        std::copy(c_ntt + k * n, c_ntt + (k + 1) * n, dst);
        return;
      }
      std::copy(coef + k * n, coef + (k + 1) * n, dst);
    }
    math::ntt_forward_inplace(dst, *ntt_[ctx_index(k)]);
  });
  return out;
}

void HybridKeySwitch::key_product_mod_down(const ModUpDigits& ext, const KeyView& key,
                                           const std::vector<std::uint32_t>* perm, u64* out0,
                                           u64* out1, bool accumulate) const {
  key_products_mod_down(ext, {KeyTerm{&key, perm}}, out0, out1, accumulate);
}

void HybridKeySwitch::key_products_mod_down(const ModUpDigits& ext,
                                            const std::vector<KeyTerm>& terms, u64* out0, u64* out1,
                                            bool accumulate) const {
  key_products(ext, terms, out0, out1, accumulate, Output{});
}

void HybridKeySwitch::key_products_mod_down(const ModUpDigits& ext,
                                            const std::vector<KeyTerm>& terms, u64* out0, u64* out1,
                                            const Output& output) const {
  key_products(ext, terms, out0, out1, false, output);
}

void HybridKeySwitch::key_products(const ModUpDigits& ext, const std::vector<KeyTerm>& terms,
                                   u64* out0, u64* out1, bool accumulate,
                                   const Output& output) const {
  const bool coef_add = output.coef_add[0] != nullptr || output.coef_add[1] != nullptr;
  if (accumulate && (output.perm != nullptr || output.add0 != nullptr || coef_add)) {
    throw std::invalid_argument("key switching: an output permutation or addend with accumulate");
  }
  if (coef_add && (output.perm != nullptr || output.add0 != nullptr || special_size() == 0)) {
    throw std::invalid_argument(
        "key switching: coefficient-form addends need special primes, no permutation, no add0");
  }
  const std::size_t limbs = ext.limbs;
  const Level& ks = level(limbs);
  const std::size_t n = n_;
  const std::size_t special = special_size();
  const std::size_t total = limbs + special;
  const std::size_t digits = ext.digits.size();
  if (terms.empty()) throw std::invalid_argument("key switching: no key to switch with");
  for (const KeyTerm& term : terms) {
    const KeyView& key = *term.key;
    if (key.key_limbs < limbs || key.b.size() < digits || key.a.size() < digits) {
      throw std::invalid_argument("key switching: the ciphertext has " + std::to_string(limbs) +
                                  " primes and " + std::to_string(digits) +
                                  " digits, the key only " + std::to_string(key.key_limbs) +
                                  " primes and " + std::to_string(key.b.size()) + " digits");
    }
  }
  auto ctx_index = [&](std::size_t k) { return k < limbs ? k : chain_size_ + (k - limbs); };
  // acc = sum_terms sum_j perm(ext_j) * key_j per coefficient in 128-bit registers, reduced
  // once per term (every 8 digits when there are more: 8 products of 61-bit values stay below
  // 2^125); the terms are added modulo each prime of Q_l P (double hoisting: one ModDown for
  // the whole sum).
  u64* const acc0 = math::scratch(tl_acc, 2 * total * n);
  u64* const acc1 = acc0 + total * n;
  bool product_perm = false;
  for (const KeyTerm& term : terms) product_perm |= term.perm != nullptr && term.perm_on_product;
  u64* const term_acc =
      terms.size() > 1 || product_perm ? math::scratch(tl_term, 2 * total * n) : nullptr;
  math::parallel_for(total, [&](std::size_t k) {
    const math::Modulus& m = moduli_[ctx_index(k)];
    for (std::size_t g = 0; g < terms.size(); ++g) {
      const KeyView& key = *terms[g].key;
      const std::uint32_t* after =
          terms[g].perm_on_product && terms[g].perm != nullptr ? terms[g].perm->data() : nullptr;
      const std::vector<std::uint32_t>* perm = after ? nullptr : terms[g].perm;
      const std::size_t kk = k < limbs ? k : key.key_limbs + (k - limbs);
      const bool direct = g == 0 && after == nullptr;
      u64* d0 = (direct ? acc0 : term_acc) + k * n;
      u64* d1 = (direct ? acc1 : term_acc + total * n) + k * n;
      if (use_avx512()) {
        std::vector<const u64*> xs(digits), bs(digits), as(digits);
        u64* const permuted = perm ? math::scratch(tl_perm, digits * n) : nullptr;
        for (std::size_t j = 0; j < digits; ++j) {
          const u64* e = ext.digits[j].data() + k * n;
          if (perm) {
            u64* dst = permuted + j * n;
            const std::uint32_t* p = perm->data();
            for (std::size_t t = 0; t < n; ++t) dst[t] = e[p[t]];
            e = dst;
          }
          xs[j] = e;
          bs[j] = key.b[j] + kk * n;
          as[j] = key.a[j] + kk * n;
        }
        if (use_ifma(m.value())) {
          math::detail::multiply_accumulate_ifma(d0, xs.data(), bs.data(), digits, n, m.value());
          math::detail::multiply_accumulate_ifma(d1, xs.data(), as.data(), digits, n, m.value());
        } else {
          math::detail::multiply_accumulate_wide(d0, xs.data(), bs.data(), digits, n, m.value());
          math::detail::multiply_accumulate_wide(d1, xs.data(), as.data(), digits, n, m.value());
        }
      } else {
        constexpr std::size_t kGroup = 8;
        for (std::size_t j0 = 0; j0 < digits; j0 += kGroup) {
          const std::size_t j1 = std::min(digits, j0 + kGroup);
          const u64* e[kGroup];
          const u64* b[kGroup];
          const u64* a[kGroup];
          for (std::size_t j = j0; j < j1; ++j) {
            e[j - j0] = ext.digits[j].data() + k * n;
            b[j - j0] = key.b[j] + kk * n;
            a[j - j0] = key.a[j] + kk * n;
          }
          const std::size_t gs = j1 - j0;
          const std::uint32_t* p = perm ? perm->data() : nullptr;
          for (std::size_t t = 0; t < n; ++t) {
            const std::size_t src = p ? p[t] : t;
            math::u128 s0 = j0 == 0 ? 0 : d0[t], s1 = j0 == 0 ? 0 : d1[t];
            for (std::size_t j = 0; j < gs; ++j) {
              const u64 x = e[j][src];
              s0 += static_cast<math::u128>(x) * b[j][t];
              s1 += static_cast<math::u128>(x) * a[j][t];
            }
            d0[t] = math::barrett_reduce_128(s0, m);
            d1[t] = math::barrett_reduce_128(s1, m);
          }
        }
      }
      u64* a0 = acc0 + k * n;
      u64* a1 = acc1 + k * n;
      const u64 q = m.value();
      if (after != nullptr && g == 0) {
        for (std::size_t t = 0; t < n; ++t) {
          a0[t] = d0[after[t]];
          a1[t] = d1[after[t]];
        }
      } else if (after != nullptr) {
        for (std::size_t t = 0; t < n; ++t) {
          a0[t] = math::add_mod(a0[t], d0[after[t]], q);
          a1[t] = math::add_mod(a1[t], d1[after[t]], q);
        }
      } else if (g > 0) {
        for (std::size_t t = 0; t < n; ++t) {
          a0[t] = math::add_mod(a0[t], d0[t], q);
          a1[t] = math::add_mod(a1[t], d1[t], q);
        }
      }
    }
  });
  // The last step of limb i of half h: z = the result's limb (+ add0), then out = perm(z)
  // from a per-thread buffer (or z written straight to out without a permutation). `limb`:
  // the result's limb as an array the call may overwrite (AVX-512 path), or null.
  const auto finish_limb = [&](std::size_t h, std::size_t i, const auto& result_at,
                               u64* limb = nullptr) {
    u64* out = (h == 0 ? out0 : out1) + i * n;
    const u64 q = moduli_[i].value();
    const u64* add = h == 0 && output.add0 != nullptr ? output.add0 + i * n : nullptr;
    if (limb != nullptr) {
      if (accumulate) {
        math::detail::add_avx512(out, limb, n, q);
      } else if (output.perm == nullptr) {
        if (add != nullptr) {
          math::detail::add_avx512(out, limb, add, n, q);
        } else {
          std::copy(limb, limb + n, out);
        }
      } else {
        if (add != nullptr) math::detail::add_avx512(limb, add, n, q);
        const std::uint32_t* p = output.perm;
        for (std::size_t t = 0; t < n; ++t) out[t] = limb[p[t]];
      }
      return;
    }
    if (accumulate) {
      for (std::size_t t = 0; t < n; ++t) out[t] = math::add_mod(out[t], result_at(t), q);
      return;
    }
    u64* z = output.perm != nullptr ? math::scratch(tl_limb, n) : out;
    if (add != nullptr) {
      for (std::size_t t = 0; t < n; ++t) z[t] = math::add_mod(result_at(t), add[t], q);
    } else {
      for (std::size_t t = 0; t < n; ++t) z[t] = result_at(t);
    }
    if (output.perm != nullptr) {
      const std::uint32_t* p = output.perm;
      for (std::size_t t = 0; t < n; ++t) out[t] = z[p[t]];
    }
  };
  if (special == 0) {
    // No special primes: the key product is the result.
    math::parallel_for(2 * limbs, [&](std::size_t idx) {
      const std::size_t h = idx / limbs, i = idx % limbs;
      const u64* a = (h == 0 ? acc0 : acc1) + i * n;
      finish_limb(h, i, [a](std::size_t t) { return a[t]; });
    });
    return;
  }
  // ModDown of both halves: INTT the P limbs, convert the centred value exactly to Q_l, NTT,
  // subtract, multiply by P^-1.
  u64* const conv = math::scratch(tl_conv, 2 * limbs * n);
  math::parallel_for(2 * special, [&](std::size_t idx) {
    const std::size_t h = idx / special, p = idx % special;
    u64* limb = (h == 0 ? acc0 : acc1) + (limbs + p) * n;
    math::ntt_inverse_inplace(limb, *ntt_[chain_size_ + p]);
  });
  math::parallel_for(2, [&](std::size_t h) {
    const u64* p_part = (h == 0 ? acc0 : acc1) + limbs * n;
    u64* out = conv + h * limbs * n;
    if (special == 1) {
      const u64 p = moduli_[chain_size_].value();
      for (std::size_t i = 0; i < limbs; ++i) centred_lift(p_part, n, p, moduli_[i], out + i * n);
      return;
    }
    ks.mod_down->convert_exact(p_part, out, n);
  });
  const bool vector = use_avx512();
  math::parallel_for(2 * limbs, [&](std::size_t idx) {
    const std::size_t h = idx / limbs, i = idx % limbs;
    u64* cv = conv + (h * limbs + i) * n;
    const u64 q = moduli_[i].value();
    if (const u64* c = output.coef_add[h]; c != nullptr) {
      // cv <- conv - P c (coefficient form), so the NTT and (acc - cv) / P below give
      // r + NTT(c): one transform for both.
      c += i * n;
      const u64 f = p_mod_q_[i], fs = math::shoup_precompute(f, q);
      if (use_avx512()) {
        math::detail::multiply_sub_scalar_avx512(cv, c, n, f, fs, q);
      } else {
        for (std::size_t t = 0; t < n; ++t) {
          cv[t] = math::sub_mod(cv[t], math::mul_shoup(c[t], f, fs, q), q);
        }
      }
    }
    math::ntt_forward_inplace(cv, *ntt_[i]);
    const u64* a = (h == 0 ? acc0 : acc1) + i * n;
    const u64 w = ks.p_inv[i], ws = ks.p_inv_shoup[i];
    if (vector) {
      // The same steps on whole limbs in the AVX-512 kernels (bit-identical results): cv <-
      // (a - cv) / P in place, then the addend, the permutation or the sum into out.
      math::detail::sub_scale_avx512(cv, a, n, w, ws, q);
      finish_limb(
          h, i, [cv](std::size_t t) { return cv[t]; }, cv);
      return;
    }
    finish_limb(h, i, [=](std::size_t t) {
      const u64 d = a[t] >= cv[t] ? a[t] - cv[t] : a[t] + q - cv[t];
      return math::mul_shoup(d, w, ws, q);
    });
  });
}

void HybridKeySwitch::make_key_digit(std::size_t key_limbs, std::size_t j, const u64* s,
                                     const u64* s_prime, math::Prng& prng, u64* b, u64* a) const {
  const Level& ks = level(key_limbs);
  if (j >= ks.digit_begin.size()) {
    throw std::invalid_argument("key switching: digit " + std::to_string(j) + " of " +
                                std::to_string(ks.digit_begin.size()));
  }
  const std::size_t n = n_;
  const std::size_t total = key_limbs + special_size();
  auto ctx_index = [&](std::size_t k) { return k < key_limbs ? k : chain_size_ + (k - key_limbs); };
  math::sample_uniform_mod(prng, *ks.key_base, n, a);
  const std::vector<std::int64_t> e = math::sample_gaussian(prng, n);
  math::parallel_for(total, [&](std::size_t k) {
    const std::size_t c = ctx_index(k);
    const math::Modulus& m = moduli_[c];
    const u64 q = m.value();
    u64* bk = b + k * n;
    for (std::size_t t = 0; t < n; ++t) {
      // |e| <= 6 sigma < q for every prime the schemes accept.
      bk[t] = e[t] >= 0 ? static_cast<u64>(e[t]) : q - static_cast<u64>(-e[t]);
    }
    math::ntt_forward_inplace(bk, *ntt_[c]);
    const u64* ak = a + k * n;
    const u64* sk = s + c * n;
    for (std::size_t t = 0; t < n; ++t)
      bk[t] = math::sub_mod(bk[t], math::mul_mod(ak[t], sk[t], m), q);
    if (k >= ks.digit_begin[j] && k < ks.digit_end[j]) {
      const u64 f = p_mod_q_[c], fs = math::shoup_precompute(f, q);
      const u64* sp = s_prime + c * n;
      for (std::size_t t = 0; t < n; ++t)
        bk[t] = math::add_mod(bk[t], math::mul_shoup(sp[t], f, fs, q), q);
    }
  });
}

}  // namespace hec::core
