// Key generation, encryption, decryption (HPS simple scaling), noise budget and the linear,
// plaintext and rotation operations of the evaluator (see scheme.h; the ciphertext multiply
// is in multiply.cpp).
#include "bfv/scheme.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bfv/hps.h"
#include "bfv/keyswitch.h"
#include "core/wipe.h"
#include "math/cpu_features.h"
#include "math/galois.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"

namespace hec::bfv {

namespace {
// Words of a product by a plaintext (both components, every limb) from which its output is
// written with streaming stores and its Shoup constants are computed rather than read: a MiB.
constexpr std::size_t kStreamedProductWords = std::size_t{1} << 17;
}  // namespace

using math::PolyForm;
using math::RnsPoly;

namespace {

std::string hex_id(const KeyId& id) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : id) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

void check_key_id(const char* op, const KeyId& have, const KeyId& want, const char* what) {
  if (have != want) {
    throw std::invalid_argument(std::string(op) + ": " + what + " key id " + hex_id(have) +
                                " does not match the ciphertext's key id " + hex_id(want));
  }
}

// Lifts m (coefficients in [0, t)) to Delta_l * m mod q_i per limb (coefficient form, at the
// polynomial's level: Delta_l = floor(Q_l / t)) and adds it.
void add_delta_m(const BfvContext& ctx, const Plaintext& pt, RnsPoly& coeff_poly) {
  const std::size_t n = ctx.ring_dim();
  const BfvLevel& lv = ctx.level(coeff_poly.num_limbs());
  math::parallel_for(coeff_poly.num_limbs(), [&](std::size_t i) {
    const math::Modulus& qi = ctx.key_context()->modulus(i);
    const u64 q = qi.value(), w = lv.delta_mod_q[i], ws = math::shoup_precompute(w, q);
    u64* out = coeff_poly.limb(i);
    for (std::size_t c = 0; c < n; ++c) {
      out[c] = math::add_mod(out[c], math::mul_shoup(pt.coeffs[c], w, ws, q), q);
    }
  });
}

void check_plain(const char* op, const BfvContext& ctx, const Plaintext& pt) {
  if (pt.coeffs.size() != ctx.ring_dim()) {
    throw std::invalid_argument(std::string(op) + ": plaintext has " +
                                std::to_string(pt.coeffs.size()) +
                                " coefficients, N = " + std::to_string(ctx.ring_dim()));
  }
  for (std::size_t c = 0; c < pt.coeffs.size(); ++c) {
    if (pt.coeffs[c] >= ctx.plain_modulus()) {
      throw std::invalid_argument(std::string(op) + ": plaintext coefficient " + std::to_string(c) +
                                  " = " + std::to_string(pt.coeffs[c]) +
                                  " is not below t = " + std::to_string(ctx.plain_modulus()));
    }
  }
}

RnsPoly apply_permutation(const RnsPoly& in, const std::vector<std::uint32_t>& perm) {
  RnsPoly out(in.context(), in.num_limbs(), PolyForm::kEvaluation);
  const std::size_t n = in.ring_dim();
  math::parallel_for(in.num_limbs(), [&](std::size_t i) {
    const u64* src = in.limb(i);
    u64* dst = out.limb(i);
    for (std::size_t j = 0; j < n; ++j) dst[j] = src[perm[j]];
  });
  return out;
}

}  // namespace

// ---- SecretKey ---------------------------------------------------------------------------

void SecretKey::wipe() {
  core::wipe(s.data(), s.num_limbs() * s.ring_dim() * sizeof(std::uint64_t));
}

// ---- KeyGenerator ------------------------------------------------------------------------

namespace {
SecretKey make_secret(const BfvContext& ctx, math::Prng& prng) {
  const auto& kc = ctx.key_context();
  SecretKey sk;
  sk.s = RnsPoly(kc, kc->size(), PolyForm::kCoefficient);
  std::vector<std::int64_t> ternary = math::sample_ternary(prng, ctx.ring_dim());
  sk.s.set_signed(ternary);
  core::wipe(ternary);
  math::to_ntt_inplace(sk.s);
  prng.fill(sk.key_id.data(), sk.key_id.size());
  return sk;
}
}  // namespace

KeyGenerator::KeyGenerator(std::shared_ptr<const BfvContext> ctx)
    : ctx_(std::move(ctx)), prng_(), sk_(make_secret(*ctx_, prng_)) {}

KeyGenerator::KeyGenerator(std::shared_ptr<const BfvContext> ctx, const math::Seed& seed)
    : ctx_(std::move(ctx)), prng_(seed), sk_(make_secret(*ctx_, prng_)) {}

PublicKey KeyGenerator::make_public_key() {
  const auto& kc = ctx_->key_context();
  const std::size_t k = ctx_->q_size(), n = ctx_->ring_dim();
  PublicKey pk;
  pk.a = RnsPoly(kc, k, PolyForm::kEvaluation);
  math::sample_uniform_mod(prng_, kc->base().prefix(k), n, pk.a.data());
  pk.b = RnsPoly(kc, k, PolyForm::kCoefficient);
  pk.b.set_signed(math::sample_gaussian(prng_, n));
  math::to_ntt_inplace(pk.b);
  math::parallel_for(k, [&](std::size_t i) {
    const math::Modulus& qi = kc->modulus(i);
    u64* b = pk.b.limb(i);
    const u64* a = pk.a.limb(i);
    const u64* s = sk_.s.limb(i);
    for (std::size_t c = 0; c < n; ++c)
      b[c] = math::sub_mod(b[c], math::mul_mod(a[c], s[c], qi), qi.value());
  });
  pk.key_id = sk_.key_id;
  return pk;
}

RelinKey KeyGenerator::make_relin_key() {
  RnsPoly s2 = sk_.s;
  math::multiply_inplace(s2, sk_.s);
  RelinKey rk;
  rk.key = make_key_switch_key(*ctx_, sk_, s2, prng_);
  rk.key_id = sk_.key_id;
  return rk;
}

GaloisKeys KeyGenerator::make_galois_keys(std::span<const long long> row_steps, bool row_swap) {
  std::vector<u64> elements;
  for (long long s : row_steps) elements.push_back(ctx_->galois_element_for_row_rotation(s));
  if (row_swap) elements.push_back(ctx_->galois_element_row_swap());
  GaloisKeys gk;
  gk.key_id = sk_.key_id;
  for (u64 g : elements) {
    if (g == 1 || gk.has(g)) continue;
    const RnsPoly s_g = apply_permutation(sk_.s, ctx_->galois_permutation(g));
    KeySwitchKey key = make_key_switch_key(*ctx_, sk_, s_g, prng_);
    // The in-memory layout (ciphertext.h): key'[p[t]] = key[t], i.e. key' = key o p^-1, and
    // p^-1 is the permutation of g^-1 mod 2N.
    permute_galois_key(key,
                       ctx_->galois_permutation(math::inverse_galois_element(g, ctx_->ring_dim())));
    gk.keys.emplace(g, std::move(key));
  }
  return gk;
}

GaloisKeys KeyGenerator::make_galois_keys_power_of_two() {
  std::vector<long long> steps;
  for (long long s = 1; s < static_cast<long long>(ctx_->ring_dim() / 2); s *= 2) {
    steps.push_back(s);
    steps.push_back(-s);
  }
  return make_galois_keys(steps, true);
}

// ---- Encryptor ---------------------------------------------------------------------------

Encryptor::Encryptor(std::shared_ptr<const BfvContext> ctx, const PublicKey& pk)
    : ctx_(std::move(ctx)), pk_(pk) {
  if (pk.a.num_limbs() != ctx_->q_size() || pk.a.context() != ctx_->key_context()) {
    throw std::invalid_argument("Encryptor: public key does not belong to this context");
  }
}

Encryptor::Encryptor(std::shared_ptr<const BfvContext> ctx, const SecretKey& sk)
    : ctx_(std::move(ctx)), sk_(sk) {
  if (sk.s.context() != ctx_->key_context()) {
    throw std::invalid_argument("Encryptor: secret key does not belong to this context");
  }
}

Ciphertext Encryptor::encrypt(const Plaintext& pt) {
  check_plain("Encryptor::encrypt", *ctx_, pt);
  const auto& kc = ctx_->key_context();
  const std::size_t k = ctx_->q_size(), n = ctx_->ring_dim();
  Ciphertext ct;
  RnsPoly c0(kc, k, PolyForm::kCoefficient);
  c0.set_signed(math::sample_gaussian(prng_, n));
  add_delta_m(*ctx_, pt, c0);
  math::to_ntt_inplace(c0);
  if (pk_.has_value()) {
    // c0 = b u + e0 + Delta m, c1 = a u + e1.
    RnsPoly u(kc, k, PolyForm::kCoefficient);
    u.set_signed(math::sample_ternary(prng_, n));
    math::to_ntt_inplace(u);
    RnsPoly c1(kc, k, PolyForm::kCoefficient);
    c1.set_signed(math::sample_gaussian(prng_, n));
    math::to_ntt_inplace(c1);
    math::multiply_add_inplace(c0, pk_->b, u);
    math::multiply_add_inplace(c1, pk_->a, u);
    ct.polys.push_back(std::move(c0));
    ct.polys.push_back(std::move(c1));
    ct.key_id = pk_->key_id;
  } else {
    // c0 = -a s + e + Delta m, c1 = a.
    RnsPoly a(kc, k, PolyForm::kEvaluation);
    math::sample_uniform_mod(prng_, kc->base().prefix(k), n, a.data());
    math::parallel_for(k, [&](std::size_t i) {
      const math::Modulus& qi = kc->modulus(i);
      u64* out = c0.limb(i);
      const u64* av = a.limb(i);
      const u64* s = sk_->s.limb(i);
      for (std::size_t c = 0; c < n; ++c)
        out[c] = math::sub_mod(out[c], math::mul_mod(av[c], s[c], qi), qi.value());
    });
    ct.polys.push_back(std::move(c0));
    ct.polys.push_back(std::move(a));
    ct.key_id = sk_->key_id;
  }
  return ct;
}

// ---- Decryptor ---------------------------------------------------------------------------

Decryptor::Decryptor(std::shared_ptr<const BfvContext> ctx, const SecretKey& sk)
    : ctx_(std::move(ctx)), sk_(sk) {
  if (sk.s.context() != ctx_->key_context()) {
    throw std::invalid_argument("Decryptor: secret key does not belong to this context");
  }
}

RnsPoly Decryptor::inner_product_coeff(const Ciphertext& ct) const {
  if (ct.size() < 2) {
    throw std::invalid_argument("Decryptor: ciphertext has " + std::to_string(ct.size()) +
                                " polynomials, needs >= 2");
  }
  check_key_id("Decryptor", sk_.key_id, ct.key_id, "secret");
  const auto& kc = ctx_->key_context();
  const std::size_t k = ct.polys[0].num_limbs(), n = ctx_->ring_dim();
  for (const auto& p : ct.polys) {
    if (p.context() != kc || p.num_limbs() != k || k > ctx_->q_size() ||
        p.form() != PolyForm::kEvaluation) {
      throw std::invalid_argument("Decryptor: ciphertext polynomials are not over one Q_l (1 to " +
                                  std::to_string(ctx_->q_size()) + " primes) in evaluation form");
    }
  }
  // x = c_0 + c_1 s + c_2 s^2 + ... (Horner in s).
  RnsPoly x = ct.polys.back();
  math::parallel_for(k, [&](std::size_t i) {
    const math::Modulus& qi = kc->modulus(i);
    u64* xl = x.limb(i);
    const u64* s = sk_.s.limb(i);
    for (std::size_t j = ct.size() - 1; j-- > 0;) {
      const u64* cj = ct.polys[j].limb(i);
      for (std::size_t c = 0; c < n; ++c)
        xl[c] = math::add_mod(math::mul_mod(xl[c], s[c], qi), cj[c], qi.value());
    }
  });
  math::from_ntt_inplace(x);
  return x;
}

namespace {
// The phase Delta m + e of decryption: its error e and the ciphertext determine s.
void wipe_phase(RnsPoly& x) { core::wipe(x.data(), x.num_limbs() * x.ring_dim() * sizeof(u64)); }
}  // namespace

Plaintext Decryptor::decrypt(const Ciphertext& ct) const {
  RnsPoly x = inner_product_coeff(ct);
  Plaintext pt;
  pt.coeffs.resize(ctx_->ring_dim());
  hps_scale_round_to_plain(*ctx_, x.num_limbs(), x.data(), pt.coeffs.data());
  wipe_phase(x);
  return pt;
}

double Decryptor::noise_budget(const Ciphertext& ct) const {
  RnsPoly x = inner_product_coeff(ct);
  const std::size_t k = x.num_limbs(), n = ctx_->ring_dim();
  const BfvLevel& lv = ctx_->level(k);
  const u64 t = ctx_->plain_modulus();
  for (std::size_t i = 0; i < k; ++i) {
    const math::Modulus& qi = x.modulus(i);
    u64* xl = x.limb(i);
    for (std::size_t c = 0; c < n; ++c) xl[c] = math::mul_mod(xl[c], t % qi.value(), qi);
  }
  long double max_abs = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const long double v = std::fabs(lv.q_base.compose_centered(x.data() + c, n));
    if (v > max_abs) max_abs = v;
  }
  wipe_phase(x);
  if (max_abs < 1) max_abs = 1;
  const double budget = lv.log2_q - 1.0 - static_cast<double>(std::log2(max_abs));
  return budget > 0 ? budget : 0.0;
}

// ---- Evaluator: linear, plaintext and rotation operations --------------------------------

void Evaluator::check_ct(const char* op, const Ciphertext& a) const {
  const auto& kc = ctx_->key_context();
  if (a.size() < 2) {
    throw std::invalid_argument(std::string(op) + ": ciphertext has " + std::to_string(a.size()) +
                                " polynomials, needs >= 2");
  }
  const std::size_t limbs = a.polys[0].num_limbs();
  for (const auto& p : a.polys) {
    if (p.context() != kc || p.num_limbs() != limbs || limbs > ctx_->q_size() ||
        p.form() != PolyForm::kEvaluation) {
      throw std::invalid_argument(
          std::string(op) + ": ciphertext polynomial is not over one Q_l in evaluation form (" +
          std::to_string(p.num_limbs()) + " limbs, Q has " + std::to_string(ctx_->q_size()) + ")");
    }
  }
}

void Evaluator::check_same_level(const char* op, const Ciphertext& a, const Ciphertext& b) const {
  if (a.polys[0].num_limbs() != b.polys[0].num_limbs()) {
    throw std::invalid_argument(std::string(op) + ": operands at different levels (" +
                                std::to_string(a.polys[0].num_limbs()) + " and " +
                                std::to_string(b.polys[0].num_limbs()) +
                                " primes); mod_switch the higher one first");
  }
}

void Evaluator::add_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_ct("add", a);
  check_ct("add", b);
  check_key_id("add", b.key_id, a.key_id, "second operand's");
  check_same_level("add", a, b);
  if (b.size() > a.size())
    a.polys.resize(b.size(),
                   RnsPoly(ctx_->key_context(), a.polys[0].num_limbs(), PolyForm::kEvaluation));
  for (std::size_t j = 0; j < b.size(); ++j) math::add_inplace(a.polys[j], b.polys[j]);
}

void Evaluator::sub_inplace(Ciphertext& a, const Ciphertext& b) const {
  check_ct("sub", a);
  check_ct("sub", b);
  check_key_id("sub", b.key_id, a.key_id, "second operand's");
  check_same_level("sub", a, b);
  if (b.size() > a.size())
    a.polys.resize(b.size(),
                   RnsPoly(ctx_->key_context(), a.polys[0].num_limbs(), PolyForm::kEvaluation));
  for (std::size_t j = 0; j < b.size(); ++j) math::sub_inplace(a.polys[j], b.polys[j]);
}

void Evaluator::negate_inplace(Ciphertext& a) const {
  check_ct("negate", a);
  for (auto& p : a.polys) math::negate_inplace(p);
}

void Evaluator::add_scaled_plain(Ciphertext& a, const Plaintext& pt, bool subtract) const {
  RnsPoly dm(ctx_->key_context(), a.polys[0].num_limbs(), PolyForm::kCoefficient);
  add_delta_m(*ctx_, pt, dm);
  math::to_ntt_inplace(dm);
  if (subtract) {
    math::sub_inplace(a.polys[0], dm);
  } else {
    math::add_inplace(a.polys[0], dm);
  }
}

void Evaluator::add_plain_inplace(Ciphertext& a, const Plaintext& pt) const {
  check_ct("add_plain", a);
  check_plain("add_plain", *ctx_, pt);
  add_scaled_plain(a, pt, false);
}

void Evaluator::sub_plain_inplace(Ciphertext& a, const Plaintext& pt) const {
  check_ct("sub_plain", a);
  check_plain("sub_plain", *ctx_, pt);
  add_scaled_plain(a, pt, true);
}

PlaintextNtt Evaluator::prepare_plain(const Plaintext& pt) const {
  check_plain("prepare_plain", *ctx_, pt);
  const u64 t = ctx_->plain_modulus(), half = t / 2;
  std::vector<std::int64_t> centred(pt.coeffs.size());
  for (std::size_t c = 0; c < centred.size(); ++c) {
    const u64 v = pt.coeffs[c];
    centred[c] = v > half ? -static_cast<std::int64_t>(t - v) : static_cast<std::int64_t>(v);
  }
  PlaintextNtt out{RnsPoly(ctx_->key_context(), ctx_->q_size(), PolyForm::kCoefficient), {}};
  out.poly.set_signed(centred);
  math::to_ntt_inplace(out.poly);
  const std::size_t n = ctx_->ring_dim();
  // A product whose operands leave the cache (a ciphertext of a MiB or more: the product is
  // bound by its memory traffic) computes its Shoup constants from the values in registers
  // on the AVX-512 path; reading a table of them would be a sixth of its traffic. Smaller
  // products stay in cache, where reading is cheaper than computing: they get the table, as
  // the portable loop does. Measured, one thread: 2^15 with 8 limbs 0.48 ms with the table,
  // 0.43 without; 2^13 with 2 limbs 0.016 ms with it, 0.020 without.
  if (math::active_kernel_path() == math::KernelPath::kAvx512Ifma &&
      2 * ctx_->q_size() * n >= kStreamedProductWords) {
    return out;
  }
  out.shoup.resize(ctx_->q_size() * n);
  for (std::size_t i = 0; i < ctx_->q_size(); ++i) {
    const u64 q = out.poly.modulus(i).value();
    const u64* w = out.poly.limb(i);
    for (std::size_t c = 0; c < n; ++c) out.shoup[i * n + c] = math::shoup_precompute(w[c], q);
  }
  return out;
}

void Evaluator::multiply_plain_inplace(Ciphertext& a, const PlaintextNtt& pt) const {
  multiply_plain(a, pt, a);
}

void Evaluator::multiply_plain(const Ciphertext& a, const PlaintextNtt& pt, Ciphertext& out) const {
  check_ct("multiply_plain", a);
  if (pt.poly.context() != ctx_->key_context() || pt.poly.num_limbs() != ctx_->q_size() ||
      pt.poly.form() != PolyForm::kEvaluation) {
    throw std::invalid_argument(
        "multiply_plain: prepared plaintext is not over Q in evaluation form");
  }
  if (!pt.shoup.empty() && pt.shoup.size() != ctx_->q_size() * ctx_->ring_dim()) {
    throw std::invalid_argument("multiply_plain: prepared plaintext's Shoup constants are " +
                                std::to_string(pt.shoup.size()) + " words, not limbs x ring");
  }
  if (&out != &a) {
    bool same_shape = out.polys.size() == a.polys.size();
    for (std::size_t k = 0; same_shape && k < a.polys.size(); ++k) {
      same_shape = out.polys[k].context() == a.polys[k].context() &&
                   out.polys[k].num_limbs() == a.polys[k].num_limbs();
    }
    if (!same_shape) {
      out.polys.clear();
      for (const auto& p : a.polys) {
        out.polys.emplace_back(p.context(), p.num_limbs(), PolyForm::kEvaluation);
      }
    }
    for (auto& p : out.polys) p.set_form(PolyForm::kEvaluation);
    out.key_id = a.key_id;
  }
  const std::size_t n = ctx_->ring_dim();
  const bool vector = math::active_kernel_path() == math::KernelPath::kAvx512Ifma;
  // An output of a MiB or more leaves the cache before it is read again: streamed.
  const bool stream = a.polys.size() * a.polys[0].num_limbs() * n >= kStreamedProductWords;
  math::parallel_for(a.polys[0].num_limbs(), [&](std::size_t i) {
    const u64 q = pt.poly.modulus(i).value();
    const u64* w = pt.poly.limb(i);
    const u64* ws = pt.shoup.empty() ? nullptr : pt.shoup.data() + i * n;
    const bool wide = vector && q < (u64{1} << 61);
    std::size_t k = 0;
    // Two components at a time: the plaintext limb read and its Shoup constants read (ws) or
    // computed (ws null: prepare_plain made no table) once for both.
    for (; wide && k + 2 <= a.polys.size(); k += 2) {
      math::detail::multiply_shoup2_avx512(out.polys[k].limb(i), out.polys[k + 1].limb(i),
                                           a.polys[k].limb(i), a.polys[k + 1].limb(i), w, ws, n, q,
                                           stream);
    }
    for (; k < a.polys.size(); ++k) {
      const u64* x = a.polys[k].limb(i);
      u64* z = out.polys[k].limb(i);
      if (wide) {
        math::detail::multiply_shoup_avx512(z, x, w, ws, n, q, stream);
        continue;
      }
      // The portable loop (a plaintext prepared on the AVX-512 path has no table: its
      // constants are computed here, one division each).
      for (std::size_t c = 0; c < n; ++c) {
        const u64 wsc = ws != nullptr ? ws[c] : math::shoup_precompute(w[c], q);
        z[c] = math::mul_shoup(x[c], w[c], wsc, q);
      }
    }
  });
}

void Evaluator::multiply_plain_inplace(Ciphertext& a, const Plaintext& pt) const {
  // A constant polynomial (encode_scalar, a replicated value) is a scalar per limb: no NTT of
  // the plaintext and no per-coefficient Shoup table.
  const bool constant = !pt.coeffs.empty() && std::all_of(pt.coeffs.begin() + 1, pt.coeffs.end(),
                                                          [](u64 c) { return c == 0; });
  if (constant && pt.coeffs.size() == ctx_->ring_dim()) {
    check_plain("multiply_plain", *ctx_, pt);
    multiply_scalar_inplace(a, pt.coeffs[0]);
    return;
  }
  multiply_plain_inplace(a, prepare_plain(pt));
}

void Evaluator::multiply_scalar_inplace(Ciphertext& a, u64 value) const {
  check_ct("multiply_scalar", a);
  const u64 t = ctx_->plain_modulus();
  if (value >= t) {
    throw std::invalid_argument("multiply_scalar: " + std::to_string(value) +
                                " is not below the plaintext modulus " + std::to_string(t));
  }
  // The centred representative of value mod t, lifted to each q_i.
  const bool negative = value > t / 2;
  const u64 magnitude = negative ? t - value : value;
  std::vector<u64> scalars(a.limbs());
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    const u64 q = a.polys[0].modulus(i).value();
    const u64 r = magnitude % q;
    scalars[i] = negative && r != 0 ? q - r : r;
  }
  for (auto& p : a.polys) math::multiply_scalar_inplace(p, scalars);
}

void Evaluator::apply_galois_inplace(Ciphertext& a, u64 galois_element,
                                     const GaloisKeys& gk) const {
  check_ct("apply_galois", a);
  if (a.size() != 2) {
    throw std::invalid_argument("apply_galois: ciphertext has " + std::to_string(a.size()) +
                                " polynomials; relinearize first");
  }
  check_key_id("apply_galois", gk.key_id, a.key_id, "Galois");
  const auto it = gk.keys.find(galois_element);
  if (it == gk.keys.end()) {
    throw std::invalid_argument("apply_galois: no Galois key for element " +
                                std::to_string(galois_element));
  }
  const auto& perm = ctx_->galois_permutation(galois_element);
  // c_1 in coefficient form, unpermuted (scratch reused across calls on this thread): the key
  // is stored permuted, so the automorphism is applied once, to the key switch's result, as
  // each limb is finished (ciphertext.h GaloisKeys).
  thread_local RnsPoly scratch;
  // This thread's scratch, named before the parallel loop (inside it, a thread_local name
  // would be each worker's own instance).
  RnsPoly& c1_coeff = scratch;
  const RnsPoly& c1 = a.polys[1];
  if (c1_coeff.context() != c1.context() || c1_coeff.num_limbs() != c1.num_limbs()) {
    c1_coeff = RnsPoly(c1.context(), c1.num_limbs(), PolyForm::kEvaluation);
  }
  c1_coeff.set_form(PolyForm::kCoefficient);
  math::parallel_for(c1.num_limbs(), [&](std::size_t i) {
    math::ntt_inverse(c1.limb(i), c1_coeff.limb(i), c1.context()->ntt(i));
  });
  // c_0 <- p(c_0 + ks_0), c_1 <- p(ks_1) = sigma(c_0) + ks(sigma(c_1)), ks(sigma(c_1)).
  key_switch_galois(*ctx_, c1_coeff, c1, it->second, perm, a.polys[0], a.polys[0], a.polys[1]);
}

void Evaluator::rotate_rows_inplace(Ciphertext& a, long long steps, const GaloisKeys& gk) const {
  const long long half = static_cast<long long>(ctx_->ring_dim() / 2);
  long long r = steps % half;
  if (r < 0) r += half;
  if (r == 0) return;
  const u64 g = ctx_->galois_element_for_row_rotation(r);
  if (gk.has(g)) {
    apply_galois_inplace(a, g, gk);
    return;
  }
  // Compose power-of-two rotations (left by 2^b for each set bit of r).
  for (long long b = 1; b < half; b *= 2) {
    if ((r & b) && !gk.has(ctx_->galois_element_for_row_rotation(b))) {
      throw std::invalid_argument("rotate_rows: no Galois key for step " + std::to_string(steps) +
                                  " (element " + std::to_string(g) +
                                  ") nor for its part 2^k = " + std::to_string(b));
    }
  }
  for (long long b = 1; b < half; b *= 2) {
    if (r & b) apply_galois_inplace(a, ctx_->galois_element_for_row_rotation(b), gk);
  }
}

void Evaluator::rotate_columns_inplace(Ciphertext& a, const GaloisKeys& gk) const {
  apply_galois_inplace(a, ctx_->galois_element_row_swap(), gk);
}

// ---- Evaluator: modulus switching --------------------------------------------------------

void Evaluator::mod_switch_to_next_inplace(Ciphertext& a) const {
  check_ct("mod_switch", a);
  const std::size_t limbs = a.limbs(), n = ctx_->ring_dim();
  if (limbs < 2) {
    throw std::invalid_argument("mod_switch: the ciphertext is at the last level (one prime)");
  }
  const BfvLevel& lv = ctx_->level(limbs);
  const auto& kc = ctx_->key_context();
  const std::size_t last = limbs - 1;
  const u64 q_last = kc->modulus(last).value();
  for (RnsPoly& p : a.polys) {
    // [c]_{q_last} in coefficient form, lifted centred to every remaining prime, back to
    // evaluation form, subtracted, times q_last^{-1}.
    thread_local math::AlignedU64Vector last_buffer;
    last_buffer.resize(n);
    // A plain pointer: inside the parallel region the name would be each thread's own copy.
    u64* const last_coeff = last_buffer.data();
    std::memcpy(last_coeff, p.limb(last), n * sizeof(u64));
    math::ntt_inverse_inplace(last_coeff, kc->ntt(last));
    math::parallel_for(last, [&](std::size_t i) {
      const math::Modulus& m = kc->modulus(i);
      const u64 q = m.value();
      const u64 qlast_mod = math::barrett_reduce_128(q_last, m);
      std::vector<u64> lift(n);
      for (std::size_t c = 0; c < n; ++c) {
        const u64 x = last_coeff[c];
        const u64 r = math::barrett_reduce_128(x, m);
        lift[c] = x > q_last / 2 ? math::sub_mod(r, qlast_mod, q) : r;
      }
      math::ntt_forward_inplace(lift.data(), kc->ntt(i));
      u64* limb = p.limb(i);
      const u64 w = lv.last_inv[i], ws = lv.last_inv_shoup[i];
      for (std::size_t c = 0; c < n; ++c) {
        limb[c] = math::mul_shoup(math::sub_mod(limb[c], lift[c], q), w, ws, q);
      }
    });
    p.drop_last_limb();
  }
}

void Evaluator::mod_switch_to_inplace(Ciphertext& a, std::size_t limbs) const {
  check_ct("mod_switch", a);
  if (limbs < 1 || limbs > a.limbs()) {
    throw std::invalid_argument("mod_switch: cannot go from " + std::to_string(a.limbs()) +
                                " primes to " + std::to_string(limbs));
  }
  while (a.limbs() > limbs) mod_switch_to_next_inplace(a);
}

}  // namespace hec::bfv
