// Key generation, encryption, gates and batched evaluation (see fhew.h).
//
// Gate constants (q = LWE modulus, inputs x, y encoded as bit * q/4): the combined phase
// lands at +-q/8 or +-3q/8, i.e. q/8 away from the decision boundaries 0 and q/2:
//   AND  x + y - 3q/8      OR   x + y - q/8
//   NAND 3q/8 - x - y      NOR  q/8 - x - y
//   XOR  2(x + y) - q/4    XNOR q/4 - 2(x + y)   (margin q/4 against twice the error)
// MUX(s, t, f) = AND(s, t) + AND(NOT s, f): two blind rotations whose extracted outputs
// (+-Q/8 each) are added with Q/4 before one key switch.
#include "fhew/fhew.h"

#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/wipe.h"
#include "math/parallel.h"

namespace hec::fhew {

const char* gate_name(Gate g) {
  switch (g) {
    case Gate::kAnd:
      return "AND";
    case Gate::kOr:
      return "OR";
    case Gate::kNand:
      return "NAND";
    case Gate::kNor:
      return "NOR";
    case Gate::kXor:
      return "XOR";
    case Gate::kXnor:
      return "XNOR";
    case Gate::kNot:
      return "NOT";
    case Gate::kMux:
      return "MUX";
    case Gate::kLinear:
      return "LINEAR";
  }
  return "unknown";
}

int gate_arity(Gate g) {
  if (g == Gate::kNot) return 1;
  if (g == Gate::kMux) return 3;
  if (g == Gate::kLinear) return 0;
  return 2;
}

LinearGateNoise linear_gate_shape(const LinearGate& gate) {
  const std::size_t k = gate.multipliers.size();
  if (k == 0 || k > kMaxLinearInputs) {
    throw std::invalid_argument("fhew linear gate: " + std::to_string(k) +
                                " inputs; one bootstrap takes 1 to " +
                                std::to_string(kMaxLinearInputs));
  }
  int sum_squares = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const int m = gate.multipliers[i];
    if (m < -kMaxLinearMultiplier || m > kMaxLinearMultiplier) {
      throw std::invalid_argument("fhew linear gate: multiplier " + std::to_string(i) + " = " +
                                  std::to_string(m) + " is outside [-" +
                                  std::to_string(kMaxLinearMultiplier) + ", " +
                                  std::to_string(kMaxLinearMultiplier) + "]");
    }
    sum_squares += m * m;
  }
  const int c = ((gate.constant % 8) + 8) % 8;
  int margin = 4;
  for (unsigned x = 0; x < (1u << k); ++x) {
    int u = c;
    for (std::size_t i = 0; i < k; ++i)
      u += 2 * gate.multipliers[i] * static_cast<int>((x >> i) & 1);
    u = ((u % 8) + 8) % 8;
    margin = std::min({margin, u % 4, 4 - u % 4});
    if (margin == 0) {
      throw std::invalid_argument(
          "fhew linear gate: input assignment " + std::to_string(x) +
          " puts the phase on a decision boundary (u = " + std::to_string(u) +
          " of 8; multipliers and constant " + std::to_string(gate.constant) + " leave no margin)");
    }
  }
  LinearGateNoise n;
  n.margin = margin;
  n.noise_weight = static_cast<double>(sum_squares) / (margin * margin);
  return n;
}

double linear_failure_log2(const Params& params, double noise_weight) {
  const double ratio = noise_model(params).gate_margin_sigmas * std::sqrt(2.0 / noise_weight);
  return std::log2(std::erfc(ratio / std::sqrt(2.0)));
}

double max_linear_noise_weight(const Params& params) {
  constexpr double kModelMax = 3.0, kBoundLog2 = -40.0;
  if (linear_failure_log2(params, kModelMax) <= kBoundLog2) return kModelMax;
  // Failure grows with W: bisect for the weight at the bound.
  double lo = 0.0, hi = kModelMax;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (linear_failure_log2(params, mid) <= kBoundLog2 ? lo : hi) = mid;
  }
  return lo;
}

Context::Context(Params params) : ring_(params) {
  tv_ = (ring_.q() + 4) / 8;
  max_linear_weight_ = max_linear_noise_weight(ring_.params());
}

void SecretKey::wipe() {
  core::wipe(lwe);
  core::wipe(ring.z);
  core::wipe(ring.z_ntt);
}

SecretKey Context::keygen_secret() const {
  math::Prng prng;
  SecretKey sk;
  sk.params = params();
  randombytes_buf(sk.key_id.data(), sk.key_id.size());
  std::vector<std::int64_t> s = params().lwe_secret == LweSecret::kBinary
                                    ? math::sample_binary(prng, params().lwe_dim)
                                    : math::sample_ternary(prng, params().lwe_dim);
  sk.lwe.assign(s.begin(), s.end());
  core::wipe(s);
  sk.ring = ring_keygen(ring_, prng);
  return sk;
}

EvalKey Context::keygen_eval(const SecretKey& sk) const {
  if (sk.params.digest() != params().digest()) {
    throw std::invalid_argument("keygen_eval: secret key parameters '" + sk.params.name +
                                "' differ from the context's '" + params().name + "'");
  }
  const Params& p = params();
  math::Prng prng;
  EvalKey ek;
  ek.params = p;
  ek.key_id = sk.key_id;
  ek.brk = blind_rotation_keygen(ring_, sk.ring, sk.lwe);
  ek.ksk = KeySwitchKey(sk.ring.z, sk.lwe, p.ks_modulus, p.ks_base, p.ks_digits, p.sigma, prng);
  return ek;
}

PublicKey Context::keygen_public(const SecretKey& sk) const {
  if (sk.params.digest() != params().digest()) {
    throw std::invalid_argument("keygen_public: secret key parameters '" + sk.params.name +
                                "' differ from the context's '" + params().name + "'");
  }
  const Params& p = params();
  const NoiseModel model = noise_model(p);
  if (model.public_key_variance > model.bootstrapped_variance) {
    throw std::invalid_argument(
        "keygen_public: parameters '" + p.name + "' give fresh public-key ciphertexts variance " +
        std::to_string(model.public_key_variance) + " above the bootstrapped output's " +
        std::to_string(model.bootstrapped_variance) +
        ", which the gates' failure bound assumes of every input");
  }
  math::Prng prng;
  PublicKey pk;
  pk.params = p;
  pk.key_id = sk.key_id;
  pk.lwe = LwePublicKey(sk.lwe, p.ks_modulus, p.lwe_dim, p.sigma, prng);
  return pk;
}

Ciphertext Context::encrypt(const PublicKey& pk, bool bit) const {
  const Params& p = params();
  if (pk.params.digest() != p.digest() || pk.lwe.dim() != p.lwe_dim ||
      pk.lwe.modulus() != p.ks_modulus) {
    throw std::invalid_argument("fhew encrypt: public key (parameters '" + pk.params.name +
                                "', dimension " + std::to_string(pk.lwe.dim()) + ", modulus " +
                                std::to_string(pk.lwe.modulus()) + ") does not match '" + p.name +
                                "'");
  }
  math::Prng prng;
  Ciphertext ct;
  ct.key_id = pk.key_id;
  // Encrypt at q_ks, where the combination's error is small against q_ks/4, then round to q.
  ct.lwe = pk.lwe.encrypt(prng, bit ? p.ks_modulus / 4 : 0, p.sigma);
  lwe_mod_switch_inplace(ct.lwe, p.lwe_modulus);
  return ct;
}

Ciphertext Context::encrypt(const SecretKey& sk, bool bit) const {
  math::Prng prng;
  const std::uint32_t q = params().lwe_modulus;
  Ciphertext ct;
  ct.key_id = sk.key_id;
  ct.lwe = lwe_encrypt(prng, sk.lwe, bit ? q / 4 : 0, q, params().sigma);
  return ct;
}

std::uint32_t Context::phase(const SecretKey& sk, const Ciphertext& ct) const {
  if (ct.key_id != sk.key_id) {
    auto hex = [](const KeyId& id) {
      static const char* digits = "0123456789abcdef";
      std::string s;
      for (std::uint8_t b : id) {
        s += digits[b >> 4];
        s += digits[b & 15];
      }
      return s;
    };
    throw std::invalid_argument("fhew decrypt: ciphertext key id " + hex(ct.key_id) +
                                " differs from the secret key's " + hex(sk.key_id));
  }
  if (ct.lwe.modulus != params().lwe_modulus) {
    throw std::invalid_argument("fhew decrypt: ciphertext modulus " +
                                std::to_string(ct.lwe.modulus) +
                                " != q = " + std::to_string(params().lwe_modulus));
  }
  return lwe_phase(ct.lwe, sk.lwe);
}

bool Context::decrypt(const SecretKey& sk, const Ciphertext& ct) const {
  const std::uint32_t q = params().lwe_modulus;
  // Nearest of {0, q/4}: 1 for a phase in [q/8, 5q/8).
  const std::uint32_t ph = phase(sk, ct);
  return ph >= q / 8 && ph < 5 * q / 8;
}

Ciphertext Context::eval_not(const Ciphertext& x) const {
  const std::uint32_t q = params().lwe_modulus;
  if (x.lwe.modulus != q || x.lwe.a.size() != params().lwe_dim) {
    throw std::invalid_argument(
        "fhew NOT: input ciphertext (dimension " + std::to_string(x.lwe.a.size()) + ", modulus " +
        std::to_string(x.lwe.modulus) + ") does not match '" + params().name + "'");
  }
  Ciphertext out = x;
  for (auto& v : out.lwe.a) v = (q - v) & (q - 1);
  out.lwe.b = (q / 4 + q - x.lwe.b) & (q - 1);
  return out;
}

void Context::check(const EvalKey& ek, const Ciphertext& c, const char* what) const {
  if (c.key_id != ek.key_id) {
    throw std::invalid_argument(std::string("fhew gate: ") + what +
                                " was encrypted under another key than the evaluation key");
  }
  if (c.lwe.modulus != params().lwe_modulus || c.lwe.a.size() != params().lwe_dim) {
    throw std::invalid_argument(std::string("fhew gate: ") + what + " (dimension " +
                                std::to_string(c.lwe.a.size()) + ", modulus " +
                                std::to_string(c.lwe.modulus) + ") does not match '" +
                                params().name + "' (n = " + std::to_string(params().lwe_dim) +
                                ", q = " + std::to_string(params().lwe_modulus) + ")");
  }
}

void Context::blind_rotate(const EvalKey& ek, const LweCiphertext& combined, Workspace& ws) const {
  fhew::blind_rotate(ring_, ek.brk, combined, tv_, ws);
  rotations_->fetch_add(1, std::memory_order_relaxed);
}

// The sign test of a combined phase: one blind rotation, extraction and the gate's finish.
Ciphertext Context::bootstrap_sign(const EvalKey& ek, const LweCiphertext& combined,
                                   Workspace& ws) const {
  blind_rotate(ek, combined, ws);
  const LweCiphertext ext = sample_extract(ring_, ws);
  Ciphertext out;
  out.key_id = ek.key_id;
  out.lwe = finish(ek, std::span<const LweCiphertext>(&ext, 1), tv_);
  return out;
}

LweCiphertext Context::finish(const EvalKey& ek, std::span<const LweCiphertext> extracted,
                              std::uint64_t offset) const {
  const Params& p = params();
  const std::uint64_t Q = ring_.q();
  LweCiphertext sum = extracted[0];
  for (std::size_t t = 1; t < extracted.size(); ++t) {
    for (std::size_t j = 0; j < sum.a.size(); ++j) {
      sum.a[j] = static_cast<std::uint32_t>(math::add_mod(sum.a[j], extracted[t].a[j], Q));
    }
    sum.b = static_cast<std::uint32_t>(math::add_mod(sum.b, extracted[t].b, Q));
  }
  sum.b = static_cast<std::uint32_t>(math::add_mod(sum.b, offset % Q, Q));
  lwe_mod_switch_inplace(sum, p.ks_modulus);
  LweCiphertext out = ek.ksk.apply(sum);
  lwe_mod_switch_inplace(out, p.lwe_modulus);
  return out;
}

namespace {

// (a, b) = sx * x + sy * y + (0, constant) mod q.
LweCiphertext combine(const LweCiphertext& x, const LweCiphertext& y, std::uint32_t sx,
                      std::uint32_t sy, std::uint32_t constant) {
  const std::uint32_t q = x.modulus, mask = q - 1;
  LweCiphertext out;
  out.modulus = q;
  out.a.resize(x.a.size());
  for (std::size_t i = 0; i < x.a.size(); ++i) out.a[i] = (sx * x.a[i] + sy * y.a[i]) & mask;
  out.b = (sx * x.b + sy * y.b + constant) & mask;
  return out;
}

}  // namespace

Ciphertext Context::bootstrap_gate(const EvalKey& ek, Gate g, const Ciphertext& x,
                                   const Ciphertext& y, Workspace& ws) const {
  check(ek, x, "first input");
  check(ek, y, "second input");
  const std::uint32_t q = params().lwe_modulus, m = q - 1;  // -1 mod q
  LweCiphertext c;
  switch (g) {
    case Gate::kAnd:
      c = combine(x.lwe, y.lwe, 1, 1, q - 3 * q / 8);
      break;
    case Gate::kOr:
      c = combine(x.lwe, y.lwe, 1, 1, q - q / 8);
      break;
    case Gate::kNand:
      c = combine(x.lwe, y.lwe, m, m, 3 * q / 8);
      break;
    case Gate::kNor:
      c = combine(x.lwe, y.lwe, m, m, q / 8);
      break;
    case Gate::kXor:
      c = combine(x.lwe, y.lwe, 2, 2, q - q / 4);
      break;
    case Gate::kXnor:
      c = combine(x.lwe, y.lwe, q - 2, q - 2, q / 4);
      break;
    default:
      throw std::invalid_argument(std::string("fhew eval: ") + gate_name(g) +
                                  " is not a two-input bootstrapped gate");
  }
  return bootstrap_sign(ek, c, ws);
}

Ciphertext Context::mux(const EvalKey& ek, const Ciphertext& s, const Ciphertext& t,
                        const Ciphertext& f, Workspace& ws) const {
  check(ek, s, "MUX selector");
  check(ek, t, "MUX if-true input");
  check(ek, f, "MUX if-false input");
  const std::uint32_t q = params().lwe_modulus;
  LweCiphertext ext[2];
  // AND(s, t): s + t - 3q/8.  AND(NOT s, f): (q/4 - s) + f - 3q/8 = f - s - q/8.
  blind_rotate(ek, combine(s.lwe, t.lwe, 1, 1, q - 3 * q / 8), ws);
  ext[0] = sample_extract(ring_, ws);
  blind_rotate(ek, combine(s.lwe, f.lwe, q - 1, 1, q - q / 8), ws);
  ext[1] = sample_extract(ring_, ws);
  Ciphertext out;
  out.key_id = ek.key_id;
  out.lwe = finish(ek, std::span<const LweCiphertext>(ext, 2), 2 * tv_);
  return out;
}

LinearGateNoise Context::check_linear(const LinearGate& gate) const {
  LinearGateNoise n = linear_gate_shape(gate);
  n.failure_log2 = linear_failure_log2(params(), n.noise_weight);
  const double max_weight = max_linear_weight_;
  if (n.noise_weight > max_weight + 1e-12) {
    throw std::invalid_argument("fhew linear gate: noise weight " + std::to_string(n.noise_weight) +
                                " (sum of squared multipliers / margin^2) exceeds " +
                                std::to_string(max_weight) + ", the most '" + params().name +
                                "' carries within 2^-40 per bootstrap (failure 2^" +
                                std::to_string(n.failure_log2) + ")");
  }
  return n;
}

Ciphertext Context::linear(const EvalKey& ek, const LinearGate& gate,
                           std::span<const Ciphertext* const> inputs, Workspace& ws) const {
  check_linear(gate);
  const std::size_t k = gate.multipliers.size();
  if (inputs.size() != k) {
    throw std::invalid_argument("fhew linear gate: " + std::to_string(inputs.size()) +
                                " inputs for " + std::to_string(k) + " multipliers");
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (inputs[i] == nullptr) {
      throw std::invalid_argument("fhew linear gate: input " + std::to_string(i) + " is null");
    }
    check(ek, *inputs[i], "linear gate input");
  }
  const std::uint32_t q = params().lwe_modulus, mask = q - 1;
  LweCiphertext c;
  c.modulus = q;
  c.a.assign(params().lwe_dim, 0);
  const std::uint32_t constant = static_cast<std::uint32_t>(((gate.constant % 8) + 8) % 8);
  c.b = (constant * (q / 8)) & mask;
  for (std::size_t i = 0; i < k; ++i) {
    const auto m = static_cast<std::uint32_t>(gate.multipliers[i] + static_cast<int>(q)) & mask;
    const LweCiphertext& x = inputs[i]->lwe;
    for (std::size_t j = 0; j < c.a.size(); ++j) c.a[j] = (c.a[j] + m * x.a[j]) & mask;
    c.b = (c.b + m * x.b) & mask;
  }
  return bootstrap_sign(ek, c, ws);
}

Ciphertext Context::eval_linear(const EvalKey& ek, const LinearGate& gate,
                                std::span<const Ciphertext* const> inputs) const {
  Workspace ws(ring_);
  return linear(ek, gate, inputs, ws);
}

Ciphertext Context::eval(const EvalKey& ek, Gate g, const Ciphertext& x,
                         const Ciphertext& y) const {
  Workspace ws(ring_);
  return bootstrap_gate(ek, g, x, y, ws);
}

Ciphertext Context::eval_mux(const EvalKey& ek, const Ciphertext& sel, const Ciphertext& if_true,
                             const Ciphertext& if_false) const {
  Workspace ws(ring_);
  return mux(ek, sel, if_true, if_false, ws);
}

std::vector<Ciphertext> Context::eval_batch(const EvalKey& ek, std::span<const GateOp> ops) const {
  if (ek.params.digest() != params().digest()) {
    throw std::invalid_argument("eval_batch: evaluation key parameters '" + ek.params.name +
                                "' differ from the context's '" + params().name + "'");
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const GateOp& op = ops[i];
    if (op.gate == Gate::kLinear) {
      if (op.linear == nullptr) {
        throw std::invalid_argument("eval_batch: gate " + std::to_string(i) +
                                    " (LINEAR) has no LinearGate");
      }
      check_linear(*op.linear);
      const std::size_t k = op.linear->multipliers.size();
      const Ciphertext* ins[3] = {op.in0, op.in1, op.in2};
      for (std::size_t j = 0; j < k; ++j) {
        if (ins[j] == nullptr) {
          throw std::invalid_argument("eval_batch: gate " + std::to_string(i) + " (LINEAR) needs " +
                                      std::to_string(k) + " inputs");
        }
      }
      continue;
    }
    const int arity = gate_arity(op.gate);
    if (op.in0 == nullptr || (arity >= 2 && op.in1 == nullptr) ||
        (arity == 3 && op.in2 == nullptr)) {
      throw std::invalid_argument("eval_batch: gate " + std::to_string(i) + " (" +
                                  gate_name(op.gate) + ") needs " + std::to_string(arity) +
                                  " inputs");
    }
  }
  std::vector<Ciphertext> out(ops.size());
  const int threads = math::thread_cap();
  const std::size_t chunks = std::min<std::size_t>(ops.size(), static_cast<std::size_t>(threads));
  // One workspace per chunk; gates are split into contiguous chunks of equal size.
  math::parallel_for(chunks, [&](std::size_t c) {
    Workspace ws(ring_);
    const std::size_t begin = ops.size() * c / chunks, end = ops.size() * (c + 1) / chunks;
    for (std::size_t i = begin; i < end; ++i) {
      const GateOp& op = ops[i];
      if (op.gate == Gate::kNot) {
        check(ek, *op.in0, "NOT input");
        out[i] = eval_not(*op.in0);
      } else if (op.gate == Gate::kMux) {
        out[i] = mux(ek, *op.in0, *op.in1, *op.in2, ws);
      } else if (op.gate == Gate::kLinear) {
        const Ciphertext* ins[3] = {op.in0, op.in1, op.in2};
        out[i] = linear(ek, *op.linear,
                        std::span<const Ciphertext* const>(ins, op.linear->multipliers.size()), ws);
      } else {
        out[i] = bootstrap_gate(ek, op.gate, *op.in0, *op.in1, ws);
      }
    }
  });
  return out;
}

}  // namespace hec::fhew
