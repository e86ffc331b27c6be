// BFV parameters, the 128-bit security check and the HPS precomputations (see context.h).
#include "bfv/context.h"

#include "core/security.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "bfv/hps.h"
#include "math/primes.h"

namespace hec::bfv {
namespace {

using math::Modulus;
using math::u128;

std::string join(const std::vector<u64>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str();
}

double log2_product(const std::vector<u64>& v) {
  double s = 0;
  for (u64 x : v) s += std::log2(static_cast<double>(x));
  return s;
}

// Bits the HPS auxiliary basis must hold: the scaled tensor y = round(t * c / Q) has
// |y| <= t * N * Q / 2 + 1 (c1 sums 2N products of centred values below Q/2; README §Bounds),
// and the centred conversion back to Q needs |y| < P/2 with 2 bits of margin.
double p_mult_bits_needed(double log2_q, double log2_t, int log_n) {
  return log2_q + log2_t + log_n + 3.0;
}

const BfvParams& validated(const BfvParams& p) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("BfvParams: " + what); };
  if (p.log_n < math::kMinLogRingDim || p.log_n > math::kMaxLogRingDim) {
    fail("log_n = " + std::to_string(p.log_n) + " must be in [" +
         std::to_string(math::kMinLogRingDim) + ", " + std::to_string(math::kMaxLogRingDim) + "]");
  }
  if (p.plain_modulus < 2 || (p.plain_modulus >> 60) != 0) {
    fail("plain modulus t = " + std::to_string(p.plain_modulus) + " must be in [2, 2^60)");
  }
  if (p.q.empty()) fail("Q has no primes");
  if (p.p_mult.empty()) fail("P_mult has no primes");
  const std::size_t n = std::size_t{1} << p.log_n;
  std::vector<u64> all = p.q;
  all.insert(all.end(), p.p_mult.begin(), p.p_mult.end());
  all.insert(all.end(), p.p_ks.begin(), p.p_ks.end());
  for (u64 q : p.q) {
    if (q < (u64{1} << 29) || q >= (u64{1} << 60)) {
      fail("prime " + std::to_string(q) + " of Q must have 30 to 60 bits");
    }
  }
  for (u64 q : all) {
    if (!math::is_prime(q) || q % (2 * n) != 1 || (q >> 61) != 0) {
      fail("modulus " + std::to_string(q) +
           " must be a prime = 1 mod 2N = " + std::to_string(2 * n) + " below 2^61");
    }
    if (q == p.plain_modulus || std::gcd(q, p.plain_modulus) != 1) {
      fail("modulus " + std::to_string(q) +
           " is not coprime to t = " + std::to_string(p.plain_modulus));
    }
  }
  std::vector<u64> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    fail("the primes of Q, P_mult and P_ks must be distinct: {" + join(all) + "}");
  }
  if (p.dnum < 1 || p.dnum > p.q.size()) {
    fail("dnum = " + std::to_string(p.dnum) + " must be in [1, " + std::to_string(p.q.size()) +
         "]");
  }
  const double log_q = log2_product(p.q), log_p = log2_product(p.p_mult);
  const double need = p_mult_bits_needed(log_q, std::log2(double(p.plain_modulus)), p.log_n);
  if (log_p < need) {
    std::ostringstream s;
    s << "P_mult has " << log_p << " bits; the HPS multiply needs >= " << need
      << " (log2 Q + log2 t + log2 N + 3)";
    fail(s.str());
  }
  if (!p.p_ks.empty()) {
    // Hybrid key switching divides the digit-sized products by P_ks: it must not be much
    // smaller than the largest digit Q_d, or the key-switching noise Q_d / P_ks * ... grows.
    const std::size_t alpha = (p.q.size() + p.dnum - 1) / p.dnum;
    double max_digit = 0;
    for (std::size_t d = 0; d < p.dnum; ++d) {
      double bits = 0;
      for (std::size_t i = d * p.q.size() / p.dnum; i < (d + 1) * p.q.size() / p.dnum; ++i) {
        bits += std::log2(static_cast<double>(p.q[i]));
      }
      max_digit = std::max(max_digit, bits);
    }
    const double log_pks = log2_product(p.p_ks);
    if (log_pks < max_digit - 2.0) {
      std::ostringstream s;
      s << "special primes P_ks have " << log_pks << " bits, less than the largest key-switching"
        << " digit (" << max_digit << " bits, " << alpha << " limbs at dnum = " << p.dnum << ")";
      fail(s.str());
    }
  }
  const int max_bits = he_standard_max_log_qp(p.log_n);
  const double log_qp = log_q + log2_product(p.p_ks);
  if ((max_bits <= 0 || log_qp > max_bits) && !p.allow_insecure) {
    std::ostringstream s;
    s << "log2(Q * P_ks) = " << log_qp << " exceeds the 128-bit HE Standard bound " << max_bits
      << " for N = 2^" << p.log_n
      << "; use a larger N or fewer primes, or set allow_insecure for tests";
    fail(s.str());
  }
  return p;
}

// floor(words / d) for a little-endian multi-word integer.
std::vector<u64> divide_words(const std::vector<u64>& words, u64 d) {
  std::vector<u64> out(words.size());
  u128 rem = 0;
  for (std::size_t i = words.size(); i-- > 0;) {
    const u128 cur = (rem << 64) | words[i];
    out[i] = static_cast<u64>(cur / d);
    rem = cur % d;
  }
  return out;
}

u64 reduce_words(const std::vector<u64>& words, const Modulus& m) {
  u64 r = 0;
  const u64 two64 = static_cast<u64>((u128{1} << 64) % m.value());
  for (std::size_t i = words.size(); i-- > 0;) {
    r = math::add_mod(math::mul_mod(r, two64, m), words[i] % m.value(), m.value());
  }
  return r;
}

}  // namespace

int he_standard_max_log_qp(int log_n) { return core::he_standard_max_log_qp(log_n); }

u64 batching_plain_modulus(int bits, std::size_t ring_dim) {
  if (bits < 2 || bits > 60) {
    throw std::invalid_argument("batching_plain_modulus: bits = " + std::to_string(bits) +
                                " must be in [2, 60]");
  }
  const u64 step = 2 * ring_dim;
  u64 t = ((u64{1} << (bits - 1)) / step) * step + 1;
  while (t < (u64{1} << (bits - 1)) || !math::is_prime(t)) t += step;
  return t;
}

BfvParams BfvParams::generate(int log_n, u64 plain_modulus, std::size_t q_limbs, int q_bits,
                              std::size_t dnum, bool special_primes, bool allow_insecure) {
  if (log_n < math::kMinLogRingDim || log_n > math::kMaxLogRingDim) {
    throw std::invalid_argument("BfvParams::generate: log_n = " + std::to_string(log_n) +
                                " out of range");
  }
  if (q_bits < 30 || q_bits > 60 || q_limbs < 1) {
    throw std::invalid_argument("BfvParams::generate: q_bits = " + std::to_string(q_bits) +
                                " must be in [30, 60] and q_limbs = " + std::to_string(q_limbs) +
                                " >= 1");
  }
  const std::size_t n = std::size_t{1} << log_n;
  BfvParams p;
  p.log_n = log_n;
  p.plain_modulus = plain_modulus;
  p.dnum = dnum;
  p.allow_insecure = allow_insecure;
  std::vector<u64> used = {plain_modulus};
  p.q = math::ntt_primes(q_bits, q_limbs, n, used);
  used.insert(used.end(), p.q.begin(), p.q.end());
  if (special_primes) {
    // P_ks as large as the largest digit (so key switching adds noise of the order of the
    // mod-down rounding only), split into primes below 2^50 so that its NTTs take the IFMA
    // path: the same log2(Q * P_ks) as one 60-bit prime per digit limb, in more limbs.
    const std::size_t alpha = (q_limbs + dnum - 1) / std::max<std::size_t>(dnum, 1);
    const int digit_bits = static_cast<int>(alpha) * q_bits;
    const int count = (digit_bits + math::kIfmaMaxModulusBits - 1) / math::kIfmaMaxModulusBits;
    const int bits = (digit_bits + count - 1) / count;
    p.p_ks = math::ntt_primes(std::max(bits, 20), static_cast<std::size_t>(count), n, used);
    used.insert(used.end(), p.p_ks.begin(), p.p_ks.end());
  }
  const double need =
      p_mult_bits_needed(log2_product(p.q), std::log2(double(plain_modulus)), log_n);
  // P_mult never enters a key, so its primes are chosen for speed: below 2^50, where the NTT
  // runs on the AVX-512 IFMA path (math/ntt.h).
  std::size_t count = 1;
  while (true) {
    p.p_mult = math::ntt_primes(math::kIfmaMaxModulusBits, count, n, used);
    if (log2_product(p.p_mult) >= need) break;
    ++count;
  }
  return p;
}

BfvContext::BfvContext(const BfvParams& params)
    : params_(validated(params)),
      n_(std::size_t{1} << params.log_n),
      plain_(params.plain_modulus),
      q_base_(params.q),
      p_mult_base_(params.p_mult) {
  const std::size_t k = params_.q.size(), l = params_.p_mult.size();
  const u64 t = params_.plain_modulus;
  log2_q_ = log2_product(params_.q);
  log2_qp_ks_ = log2_q_ + log2_product(params_.p_ks);
  const int max_bits = he_standard_max_log_qp(params_.log_n);
  secure_ = max_bits > 0 && log2_qp_ks_ <= max_bits;

  std::vector<u64> key_primes = params_.q;
  key_primes.insert(key_primes.end(), params_.p_ks.begin(), params_.p_ks.end());
  key_ctx_ = math::RnsContext::create(n_, key_primes);
  for (std::size_t j = 0; j < l; ++j) p_mult_ntt_.emplace_back(n_, p_mult_base_[j]);
  q_to_p_mult_ = std::make_unique<BlockedBaseConverter>(q_base_, p_mult_base_);
  p_mult_to_q_ = std::make_unique<BlockedBaseConverter>(p_mult_base_, q_base_);

  // Per-level tables (the top level's are also kept in the members the multiply reads).
  for (std::size_t limbs = 1; limbs <= k; ++limbs) {
    auto lv =
        std::make_unique<BfvLevel>(std::vector<u64>(params_.q.begin(), params_.q.begin() + limbs));
    const math::RnsBase& base = lv->q_base;
    lv->log2_q = log2_product(std::vector<u64>(params_.q.begin(), params_.q.begin() + limbs));
    const std::vector<u64> delta = divide_words(base.product(), t);
    for (std::size_t i = 0; i < limbs; ++i) {
      const Modulus& qi = base[i];
      lv->delta_mod_q.push_back(reduce_words(delta, qi));
      // HPS scale-and-round constants (README §"Multiply", step 6).
      const u64 r = math::mul_mod(t % qi.value(), base.q_hat_inv_mod_q(i), qi);
      lv->scale_r.push_back(r);
      lv->scale_r_shoup.push_back(math::shoup_precompute(r, qi.value()));
      lv->inv_q_double.push_back(1.0 / static_cast<double>(qi.value()));
      const u64 qi_inv_t = math::inverse_mod(qi.value() % t, t);
      lv->a_plain.push_back(math::negate_mod(math::mul_mod(r % t, qi_inv_t, plain_), t));
    }
    const u64 last = params_.q[limbs - 1];
    for (std::size_t i = 0; i + 1 < limbs; ++i) {
      const u64 inv = math::inverse_mod(last % params_.q[i], params_.q[i]);
      lv->last_inv.push_back(inv);
      lv->last_inv_shoup.push_back(math::shoup_precompute(inv, params_.q[i]));
    }
    levels_.push_back(std::move(lv));
  }
  const BfvLevel& top = *levels_.back();
  delta_mod_q_ = top.delta_mod_q;
  scale_r_ = top.scale_r;
  scale_r_shoup_ = top.scale_r_shoup;
  inv_q_double_ = top.inv_q_double;
  a_plain_ = top.a_plain;
  a_mult_.resize(l * k);
  for (std::size_t j = 0; j < l; ++j) {
    const Modulus& pj = p_mult_base_[j];
    const u64 p = pj.value();
    for (std::size_t i = 0; i < k; ++i) {
      const u64 qi_inv = math::inverse_mod(params_.q[i] % p, p);
      a_mult_[j * k + i] = math::negate_mod(math::mul_mod(scale_r_[i] % p, qi_inv, pj), p);
    }
    const u64 q_mod_p = reduce_words(q_base_.product(), pj);
    beta_mult_.push_back(math::mul_mod(t % p, math::inverse_mod(q_mod_p, p), pj));
  }

  // Key switching (core/keyswitch.h): balanced digits of Q, tables at every level.
  {
    std::vector<std::pair<std::size_t, std::size_t>> digits;
    for (std::size_t d = 0; d < params_.dnum; ++d)
      digits.emplace_back(digit_begin(d), digit_end(d));
    std::vector<math::Modulus> moduli;
    std::vector<const math::NttTables*> ntt;
    for (std::size_t i = 0; i < key_ctx_->size(); ++i) {
      moduli.push_back(key_ctx_->modulus(i));
      ntt.push_back(&key_ctx_->ntt(i));
    }
    std::vector<std::size_t> level_limbs;
    for (std::size_t limbs = 1; limbs <= k; ++limbs) level_limbs.push_back(limbs);
    key_switch_ = std::make_unique<core::HybridKeySwitch>(n_, std::move(moduli), std::move(ntt), k,
                                                          digits, level_limbs);
  }

  // Batching.
  batching_ = math::is_prime(t) && t % (2 * n_) == 1;
  if (batching_) {
    plain_ntt_ = std::make_unique<math::NttTables>(n_, plain_);
    slot_index_.resize(n_);
    const std::size_t half = n_ / 2;
    const u64 m = 2 * n_;
    u64 e = 1;
    for (std::size_t c = 0; c < half; ++c) {
      slot_index_[c] = math::bit_reverse((e - 1) / 2, params_.log_n);
      slot_index_[half + c] = math::bit_reverse((m - e - 1) / 2, params_.log_n);
      e = (e * 3) % m;
    }
  }
}

BfvContext::~BfvContext() = default;

const BfvLevel& BfvContext::level(std::size_t limbs) const {
  if (limbs < 1 || limbs > levels_.size()) {
    throw std::invalid_argument("BfvContext: no level with " + std::to_string(limbs) +
                                " primes (Q has " + std::to_string(levels_.size()) + ")");
  }
  return *levels_[limbs - 1];
}

// Balanced digits: sizes differ by at most one, the largest is ceil(k / dnum).
std::size_t BfvContext::digit_begin(std::size_t d) const {
  return d * params_.q.size() / params_.dnum;
}

std::size_t BfvContext::digit_end(std::size_t d) const {
  return (d + 1) * params_.q.size() / params_.dnum;
}

u64 BfvContext::galois_element_for_row_rotation(long long steps) const {
  const long long half = static_cast<long long>(n_ / 2);
  long long r = steps % half;
  if (r < 0) r += half;
  const u64 m = 2 * n_;
  u64 g = 1;
  for (long long i = 0; i < r; ++i) g = (g * 3) % m;
  return g;
}

const std::vector<std::uint32_t>& BfvContext::galois_permutation(u64 galois_element) const {
  const u64 m = 2 * n_;
  if (galois_element % 2 == 0 || galois_element >= m) {
    throw std::invalid_argument("galois_permutation: element " + std::to_string(galois_element) +
                                " must be odd and below 2N = " + std::to_string(m));
  }
  std::lock_guard<std::mutex> lock(perm_mutex_);
  const auto found = perm_cache_.find(galois_element);
  if (found != perm_cache_.end()) return found->second;  // std::map nodes never move
  std::vector<std::uint32_t>& perm = perm_cache_[galois_element];
  perm.resize(n_);
  for (std::size_t j = 0; j < n_; ++j) {
    const u64 e = 2 * math::bit_reverse(j, params_.log_n) + 1;
    const u64 e2 = (e * galois_element) % m;
    perm[j] = static_cast<std::uint32_t>(math::bit_reverse((e2 - 1) / 2, params_.log_n));
  }
  return perm;
}

std::string BfvContext::describe() const {
  std::ostringstream s;
  s << "BFV N=2^" << params_.log_n << " t=" << params_.plain_modulus << " Q=" << q_size()
    << " primes (" << static_cast<int>(std::round(log2_q_)) << " bits) P_mult=" << p_mult_size()
    << " primes, key switching "
    << (p_ks_size() ? "hybrid dnum=" + std::to_string(params_.dnum) + " with " +
                          std::to_string(p_ks_size()) + " special primes"
                    : "digit decomposition dnum=" + std::to_string(params_.dnum))
    << ", log2(Q*P_ks)=" << log2_qp_ks_ << " vs bound " << he_standard_max_log_qp(params_.log_n)
    << (secure_ ? " (128-bit)" : " (INSECURE: outside the 128-bit HE Standard table)");
  return s.str();
}

std::vector<std::uint8_t> BfvContext::canonical_encoding() const {
  std::vector<std::uint8_t> out;
  auto put = [&](u64 v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  put(static_cast<u64>(params_.log_n));
  put(params_.plain_modulus);
  for (const auto* list : {&params_.q, &params_.p_mult, &params_.p_ks}) {
    put(list->size());
    for (u64 v : *list) put(v);
  }
  put(params_.dnum);
  return out;
}

}  // namespace hec::bfv
