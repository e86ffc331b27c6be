// CKKS Context: precomputes the math-core tables for a parameter set (see context.h).
#include "ckks/context.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "math/galois.h"
#include "math/sampling.h"

namespace hec::ckks {

Context::Context(Parameters params) : params_(std::move(params)), impl_(new Impl) {
  Impl& m = *impl_;
  m.n = params_.n();
  const std::vector<u64>& chain = params_.chain();
  const std::vector<u64>& special = params_.special_moduli();
  m.chain_size = chain.size();
  m.special_size = special.size();
  for (u64 q : chain) m.moduli.emplace_back(q);
  for (u64 p : special) m.moduli.emplace_back(p);
  m.ntt.reserve(m.moduli.size());
  for (const auto& q : m.moduli) m.ntt.emplace_back(m.n, q);

  const int top_level = params_.max_level();
  const math::RnsBase full(chain);
  for (int l = 0; l <= top_level; ++l) {
    m.level_bases.push_back(full.prefix(params_.limbs_at(Level(l))));
  }
  if (!special.empty()) m.special_base = std::make_unique<math::RnsBase>(special);

  m.rescale_inv.resize(static_cast<std::size_t>(top_level) + 1);
  m.rescale_inv_shoup.resize(static_cast<std::size_t>(top_level) + 1);
  for (int l = 1; l <= top_level; ++l) {
    const std::size_t top = params_.limbs_at(Level(l)) - 1;
    for (std::size_t i = 0; i < top; ++i) {
      const u64 q = chain[i];
      const u64 inv = math::inverse_mod(chain[top] % q, q);
      m.rescale_inv[l].push_back(inv);
      m.rescale_inv_shoup[l].push_back(math::shoup_precompute(inv, q));
    }
  }

  const std::size_t alpha = params_.digit_size();
  std::vector<std::pair<std::size_t, std::size_t>> digits;
  for (std::size_t begin = 0; begin < chain.size(); begin += alpha) {
    digits.emplace_back(begin, std::min(chain.size(), begin + alpha));
  }
  std::vector<const math::NttTables*> ntt;
  for (const auto& t : m.ntt) ntt.push_back(&t);
  std::vector<std::size_t> level_limbs;
  for (int l = 0; l <= top_level; ++l) level_limbs.push_back(params_.limbs_at(Level(l)));
  m.key_switch = std::make_unique<core::HybridKeySwitch>(m.n, m.moduli, std::move(ntt),
                                                         chain.size(), digits, level_limbs);
}

Context::~Context() = default;

const std::vector<std::uint32_t>& Context::Impl::galois_permutation(std::uint64_t g) const {
  std::lock_guard<std::mutex> lock(galois_mutex);
  auto it = galois_cache.find(g);
  if (it != galois_cache.end()) return it->second;
  const std::uint64_t two_n = 2 * n;
  int log_n = 0;
  while ((std::size_t{1} << log_n) < n) ++log_n;
  std::vector<std::uint32_t> perm(n);
  for (std::size_t k = 0; k < n; ++k) {
    // Index k holds a(psi^e) with e = 2 bitrev(k) + 1; sigma_g(a)(psi^e) = a(psi^{e g}).
    const std::uint64_t e = 2 * math::bit_reverse(k, log_n) + 1;
    const std::uint64_t eg = (e * g) % two_n;
    perm[k] = static_cast<std::uint32_t>(math::bit_reverse((eg - 1) / 2, log_n));
  }
  return galois_cache.emplace(g, std::move(perm)).first->second;
}

std::uint64_t Context::galois_element(int steps) const {
  const std::uint64_t two_n = 2 * n();
  const std::int64_t slots = static_cast<std::int64_t>(this->slots());
  std::int64_t k = steps % slots;
  if (k < 0) k += slots;
  std::uint64_t g = 1;
  for (std::int64_t i = 0; i < k; ++i) g = (g * 5) % two_n;
  return g;
}

std::uint64_t Context::inverse_galois_element(std::uint64_t g) const {
  return math::inverse_galois_element(g, n());
}

Ciphertext Context::make_ciphertext(Level level, std::size_t degree, double scale) const {
  Ciphertext ct;
  ct.n = n();
  ct.limbs = params_.limbs_at(level);
  ct.degree = degree;
  ct.level = level;
  ct.scale = scale;
  ct.data.assign((degree + 1) * ct.limbs * ct.n, 0);
  return ct;
}

Plaintext Context::make_plaintext(Level level, double scale) const {
  Plaintext pt;
  pt.n = n();
  pt.limbs = params_.limbs_at(level);
  pt.level = level;
  pt.scale = scale;
  pt.data.assign(pt.limbs * pt.n, 0);
  return pt;
}

Ciphertext Context::expand(const CompactCiphertext& compact) const {
  const std::size_t limbs = params_.limbs_at(compact.level);
  if (compact.limbs != limbs || compact.n != n() || compact.c0.size() != limbs * n()) {
    throw std::invalid_argument("Context::expand: compact ciphertext shape (limbs " +
                                std::to_string(compact.limbs) + ", n " + std::to_string(compact.n) +
                                ") does not match level " + std::to_string(compact.level.value));
  }
  Ciphertext ct = make_ciphertext(compact.level, 1, compact.scale);
  ct.key_id = compact.key_id;
  std::copy(compact.c0.begin(), compact.c0.end(), ct.poly(0));
  math::Seed seed;
  std::copy(compact.seed.begin(), compact.seed.end(), seed.begin());
  math::Prng prng(seed);
  math::sample_uniform_mod(prng, impl_->level_base(compact.level), n(), ct.poly(1));
  return ct;
}

}  // namespace hec::ckks
