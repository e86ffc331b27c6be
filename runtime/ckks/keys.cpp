// Key generation for RNS-CKKS with hybrid key-switching keys (see keys.h).
#include "ckks/keys.h"

#include <stdexcept>

#include "ckks/context_impl.h"
#include "ckks/poly_ops.h"
#include "core/wipe.h"
#include "math/galois.h"
#include "math/sampling.h"

namespace hec::ckks {

KeyGenerator::KeyGenerator(ContextPtr context) : context_(std::move(context)) {}

SecretKey KeyGenerator::secret_key() const {
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  const std::size_t limbs = impl.chain_size + impl.special_size;
  math::Prng prng;
  std::vector<std::int64_t> s = math::sample_ternary(prng, n);
  SecretKey sk;
  sk.data.resize(limbs * n);
  detail::small_to_ntt(impl, s.data(), 0, limbs, sk.data.data());
  core::wipe(s);
  sk.key_id = core::new_key_id();
  return sk;
}

PublicKey KeyGenerator::public_key(const SecretKey& sk) const {
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  const std::size_t limbs = impl.chain_size;
  const Level top(context_->params().max_level());
  math::Prng prng;
  PublicKey pk;
  pk.level = top;
  pk.key_id = sk.key_id;
  pk.data.resize(2 * limbs * n);
  u64* b = pk.data.data();
  u64* a = b + limbs * n;
  math::sample_uniform_mod(prng, impl.level_base(top), n, a);
  const std::vector<std::int64_t> e = math::sample_gaussian(prng, n);
  detail::small_to_ntt(impl, e.data(), 0, limbs, b);
  // b = -a*s + e
  for (std::size_t i = 0; i < limbs; ++i) {
    std::vector<u64> as(n);
    detail::mul_limb_to(as.data(), a + i * n, sk.data.data() + i * n, n, impl.moduli[i]);
    detail::sub_limb(b + i * n, as.data(), n, impl.moduli[i].value());
  }
  return pk;
}

KeySwitchKey KeyGenerator::switch_key(const SecretKey& sk, const std::vector<u64>& new_secret,
                                      Level level) const {
  // Per digit of Q_level: a uniform, e Gaussian over Q_l P; b = -a*s + e, plus P * s' on
  // the digit's own primes.
  const Context::Impl& impl = context_->impl();
  const Parameters& params = context_->params();
  if (params.key_switching() == KeySwitching::kHybrid && params.special_moduli().empty()) {
    throw std::invalid_argument(
        "KeyGenerator: these parameters have no special primes P, so no key-switching key "
        "(relinearization or Galois) can be made; hybrid key switching needs P");
  }
  if (params.key_level() < level) {
    throw std::invalid_argument("KeyGenerator: a key at level " + std::to_string(level.value) +
                                " but these parameters limit keys to level " +
                                std::to_string(params.key_level().value) +
                                " (their security is counted for keys up to there)");
  }
  // The key digits, written by the shared key switching (core/keyswitch.h).
  const std::size_t limbs = params.limbs_at(level);
  const std::size_t words = (limbs + impl.special_size) * impl.n;
  const core::HybridKeySwitch& ks = *impl.key_switch;
  math::Prng prng;
  KeySwitchKey key;
  key.level = level;
  key.key_id = sk.key_id;
  for (std::size_t j = 0; j < ks.digit_count(limbs); ++j) {
    std::vector<u64> digit(2 * words);
    ks.make_key_digit(limbs, j, sk.data.data(), new_secret.data(), prng, digit.data(),
                      digit.data() + words);
    key.digits.push_back(std::move(digit));
  }
  return key;
}

RelinKey KeyGenerator::relin_key(const SecretKey& sk) const {
  return relin_key(sk, Level(context_->params().max_level()));
}

RelinKey KeyGenerator::relin_key(const SecretKey& sk, Level level) const {
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  std::vector<u64> s2(sk.data.size());
  for (std::size_t c = 0; c < impl.moduli.size(); ++c) {
    detail::mul_limb_to(s2.data() + c * n, sk.data.data() + c * n, sk.data.data() + c * n, n,
                        impl.moduli[c]);
  }
  return RelinKey{switch_key(sk, s2, level)};
}

GaloisKeys KeyGenerator::galois_keys(const SecretKey& sk, const std::vector<int>& steps,
                                     bool conjugation) const {
  return galois_keys(sk, steps, conjugation, Level(context_->params().max_level()));
}

GaloisKeys KeyGenerator::galois_keys(const SecretKey& sk, const std::vector<int>& steps,
                                     bool conjugation, Level level) const {
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  std::vector<std::uint64_t> elements;
  for (int s : steps) elements.push_back(context_->galois_element(s));
  if (conjugation) elements.push_back(context_->conjugation_element());
  GaloisKeys keys;
  keys.level = level;
  keys.key_id = sk.key_id;
  for (std::uint64_t g : elements) {
    if (g == 1 || keys.has(g)) continue;  // rotation by 0 (or a multiple of N/2) needs none
    const std::vector<std::uint32_t>& perm = impl.galois_permutation(g);
    std::vector<u64> rotated(sk.data.size());
    for (std::size_t c = 0; c < impl.moduli.size(); ++c) {
      const u64* src = sk.data.data() + c * n;
      u64* dst = rotated.data() + c * n;
      for (std::size_t t = 0; t < n; ++t) dst[t] = src[perm[t]];
    }
    KeySwitchKey key = switch_key(sk, rotated, level);
    // The in-memory form (keys.h): key'[perm[t]] = key[t], i.e. key' = key o perm^-1, and
    // perm^-1 is the permutation of g^-1 mod 2N.
    detail::permute_galois_key(key, impl.galois_permutation(context_->inverse_galois_element(g)),
                               n);
    keys.keys.emplace(g, std::move(key));
  }
  return keys;
}

namespace detail {

void permute_galois_key(KeySwitchKey& key, const std::vector<std::uint32_t>& by, std::size_t n) {
  for (std::vector<u64>& digit : key.digits)
    math::permute_limbs_inplace(digit.data(), digit.size(), n, by);
}

}  // namespace detail

KeySwitchKey trim(const KeySwitchKey& key, const Parameters& params, Level level) {
  if (level.value > key.level.value || level.value < 0) {
    throw std::invalid_argument("trim: level " + std::to_string(level.value) +
                                " outside [0, key level " + std::to_string(key.level.value) + "]");
  }
  const std::size_t n = params.n();
  const std::size_t old_limbs = params.limbs_at(key.level);
  const std::size_t new_limbs = params.limbs_at(level);
  const std::size_t special = params.special_moduli().size();
  const std::size_t alpha = params.digit_size();
  const std::size_t digits = (new_limbs + alpha - 1) / alpha;
  KeySwitchKey out;
  out.level = level;
  out.key_id = key.key_id;
  for (std::size_t j = 0; j < digits; ++j) {
    const std::vector<u64>& src = key.digits[j];
    std::vector<u64> dst(2 * (new_limbs + special) * n);
    for (std::size_t half = 0; half < 2; ++half) {
      const u64* s = src.data() + half * (old_limbs + special) * n;
      u64* d = dst.data() + half * (new_limbs + special) * n;
      std::copy(s, s + new_limbs * n, d);
      std::copy(s + old_limbs * n, s + (old_limbs + special) * n, d + new_limbs * n);
    }
    out.digits.push_back(std::move(dst));
  }
  return out;
}

RelinKey trim(const RelinKey& key, const Parameters& params, Level level) {
  return RelinKey{trim(key.key, params, level)};
}

GaloisKeys trim(const GaloisKeys& keys, const Parameters& params, Level level) {
  GaloisKeys out;
  out.level = level;
  out.key_id = keys.key_id;
  for (const auto& [g, k] : keys.keys) out.keys.emplace(g, trim(k, params, level));
  return out;
}

}  // namespace hec::ckks
