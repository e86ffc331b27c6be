// Public-key and symmetric encryption, decryption of any degree (see encryptor.h).
#include "ckks/encryptor.h"

#include <stdexcept>
#include <vector>

#include "ckks/context_impl.h"
#include "ckks/poly_ops.h"
#include "math/parallel.h"
#include "math/sampling.h"

namespace hec::ckks {
namespace {

void check_plaintext(const Context& ctx, const Plaintext& pt, const char* where) {
  const std::size_t limbs = ctx.params().limbs_at(pt.level);
  if (pt.n != ctx.n() || pt.limbs != limbs || pt.data.size() != limbs * ctx.n()) {
    throw std::invalid_argument(std::string(where) + ": plaintext shape (n " +
                                std::to_string(pt.n) + ", limbs " + std::to_string(pt.limbs) +
                                ") does not match level " + std::to_string(pt.level.value));
  }
}

}  // namespace

Encryptor::Encryptor(ContextPtr context, PublicKey public_key)
    : context_(std::move(context)), public_key_(std::move(public_key)) {
  const std::size_t expected = 2 * context_->params().limbs_at(public_key_.level) * context_->n();
  if (public_key_.data.size() != expected) {
    throw std::invalid_argument("Encryptor: public key has " +
                                std::to_string(public_key_.data.size()) + " words, expected " +
                                std::to_string(expected));
  }
}

Ciphertext Encryptor::encrypt(const Plaintext& pt) const {
  Ciphertext ct;
  encrypt(pt, ct);
  return ct;
}

void Encryptor::encrypt(const Plaintext& pt, Ciphertext& ct) const {
  // (v*b + e0 + m, v*a + e1) mod Q_l with v ternary and e0, e1 Gaussian.
  check_plaintext(*context_, pt, "Encryptor::encrypt");
  if (pt.level.value > public_key_.level.value) {
    throw std::invalid_argument("Encryptor::encrypt: plaintext level " +
                                std::to_string(pt.level.value) + " exceeds public key level " +
                                std::to_string(public_key_.level.value));
  }
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  const std::size_t limbs = pt.limbs;
  const std::size_t key_limbs = context_->params().limbs_at(public_key_.level);
  math::Prng prng;
  const std::vector<std::int64_t> v = math::sample_ternary(prng, n);
  const std::vector<std::int64_t> e0 = math::sample_gaussian(prng, n);
  const std::vector<std::int64_t> e1 = math::sample_gaussian(prng, n);
  reshape_unfilled(ct, n, limbs, 1, pt.level, pt.scale, public_key_.key_id);  // every word written
  // Limb by limb, split over the threads (each with its own NTT of v).
  math::parallel_for(limbs, [&](std::size_t i) {
    thread_local std::vector<u64> vn_buffer;
    if (vn_buffer.size() < n) vn_buffer.resize(n);
    u64* const vn = vn_buffer.data();
    const math::Modulus& m = impl.moduli[i];
    detail::small_to_ntt(impl, v.data(), i, 1, vn);
    detail::small_to_ntt(impl, e0.data(), i, 1, ct.limb(0, i));
    detail::small_to_ntt(impl, e1.data(), i, 1, ct.limb(1, i));
    const u64* b = public_key_.data.data() + i * n;
    const u64* a = public_key_.data.data() + (key_limbs + i) * n;
    detail::mul_add_limb(ct.limb(0, i), vn, b, n, m);
    detail::mul_add_limb(ct.limb(1, i), vn, a, n, m);
    detail::add_limb(ct.limb(0, i), pt.limb(i), n, m.value());
  });
}

SymmetricEncryptor::SymmetricEncryptor(ContextPtr context, SecretKey secret_key)
    : context_(std::move(context)), secret_key_(std::move(secret_key)) {}

CompactCiphertext SymmetricEncryptor::encrypt_compact(const Plaintext& pt) const {
  // (-a*s + e + m, a) with a expanded from a fresh seed (Context::expand regenerates it).
  check_plaintext(*context_, pt, "SymmetricEncryptor::encrypt");
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  CompactCiphertext out;
  out.n = n;
  out.limbs = pt.limbs;
  out.level = pt.level;
  out.scale = pt.scale;
  out.key_id = secret_key_.key_id;
  const math::Seed seed = math::Prng::random_seed();
  std::copy(seed.begin(), seed.end(), out.seed.begin());
  std::vector<u64> a(pt.limbs * n);
  {
    math::Prng expand(seed);
    math::sample_uniform_mod(expand, impl.level_base(pt.level), n, a.data());
  }
  math::Prng prng;
  const std::vector<std::int64_t> e = math::sample_gaussian(prng, n);
  out.c0.resize(pt.limbs * n);
  for (std::size_t i = 0; i < pt.limbs; ++i) {
    u64* c0 = out.c0.data() + i * n;
    detail::small_to_ntt(impl, e.data(), i, 1, c0);
    std::vector<u64> as(n);
    detail::mul_limb_to(as.data(), a.data() + i * n, secret_key_.data.data() + i * n, n,
                        impl.moduli[i]);
    detail::sub_limb(c0, as.data(), n, impl.moduli[i].value());
    detail::add_limb(c0, pt.limb(i), n, impl.moduli[i].value());
  }
  return out;
}

Ciphertext SymmetricEncryptor::encrypt(const Plaintext& pt) const {
  return context_->expand(encrypt_compact(pt));
}

Decryptor::Decryptor(ContextPtr context, SecretKey secret_key)
    : context_(std::move(context)), secret_key_(std::move(secret_key)) {}

Plaintext Decryptor::decrypt(const Ciphertext& ct) const {
  // Horner: m = (...(c_d s + c_{d-1}) s + ...) s + c_0.
  if (ct.key_id != secret_key_.key_id) {
    throw std::invalid_argument("Decryptor::decrypt: ciphertext key id " +
                                core::to_hex(ct.key_id.data(), 8) + "... is not this key's " +
                                core::to_hex(secret_key_.key_id.data(), 8) + "...");
  }
  const std::size_t limbs = context_->params().limbs_at(ct.level);
  if (ct.n != context_->n() || ct.limbs != limbs || ct.data.size() != ct.size() * limbs * ct.n) {
    throw std::invalid_argument("Decryptor::decrypt: ciphertext shape does not match level " +
                                std::to_string(ct.level.value));
  }
  const Context::Impl& impl = context_->impl();
  const std::size_t n = impl.n;
  Plaintext pt = context_->make_plaintext(ct.level, ct.scale);
  for (std::size_t i = 0; i < limbs; ++i) {
    u64* acc = pt.limb(i);
    std::copy(ct.limb(ct.degree, i), ct.limb(ct.degree, i) + n, acc);
    for (std::size_t k = ct.degree; k-- > 0;) {
      detail::mul_limb(acc, secret_key_.data.data() + i * n, n, impl.moduli[i]);
      detail::add_limb(acc, ct.limb(k, i), n, impl.moduli[i].value());
    }
  }
  return pt;
}

}  // namespace hec::ckks
