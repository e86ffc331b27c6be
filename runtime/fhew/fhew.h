// The public API of the boolean scheme: key generation (secret key on the client; the
// evaluation key — blind-rotation key and key-switching key — for the server), encryption
// and decryption of bits, the bootstrapped gates AND, OR, NAND, NOR, XOR, XNOR (one
// bootstrap each), NOT (free), MUX (two blind rotations, one key switch), and batched
// evaluation of independent gates in parallel (OpenMP through math/parallel.h).
//
// Gate pipeline (Ducas-Micciancio, "FHEW", EUROCRYPT 2015, §5; Micciancio-Polyakov, WAHC
// 2021, Alg. 2): combine the inputs linearly mod q with the gate constant so the phase lies
// in [0, q/2) exactly when the output is 1; blind-rotate (AP or GINX, bootstrap.h) the test
// polynomial with all coefficients Q/8; extract the constant coefficient and add Q/8 (so 1 ->
// Q/4, 0 -> 0); switch Q -> q_ks, key-switch N -> n, switch q_ks -> q.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/wipe.h"
#include "fhew/bootstrap.h"
#include "fhew/lwe.h"
#include "fhew/params.h"

namespace hec::fhew {

using KeyId = std::array<std::uint8_t, 16>;

enum class Gate : std::uint8_t { kAnd, kOr, kNand, kNor, kXor, kXnor, kNot, kMux, kLinear };
const char* gate_name(Gate g);
// Number of inputs: 1 for NOT, 3 for MUX (selector, if-true, if-false), 2 for the 2-input
// gates; 0 for kLinear (its LinearGate says how many).
int gate_arity(Gate g);

// A one-bootstrap gate of up to 3 inputs with chosen multipliers and constant: the phase
// sum_i m_i x_i q/4 + c q/8 is bootstrapped by the sign test, so the output is 1 exactly when
// u = (2 sum_i m_i x_i + c) mod 8 is in {0, 1, 2, 3}. Majority of 3 with any polarity
// (m = +-1, c chosen), parity of 3 (m = 2, 2, 2; c = -2) and every 2-input function are
// instances (the compiler's FHEW gate model, docs/circuits.md). The margin M is the smallest
// distance (units of q/8) of a reachable u from the boundaries 0 and 4; the error of the
// combination has variance sum m_i^2 V_boot, so the noise weight W = sum m_i^2 / M^2 sets the
// failure probability (W = 2 for the fixed 2-input gates).
constexpr std::size_t kMaxLinearInputs = 3;
constexpr int kMaxLinearMultiplier = 8;  // |m_i| bound checked before the noise weight
struct LinearGate {
  std::vector<int> multipliers;  // one per input, 1 to kMaxLinearInputs of them
  int constant = 0;              // c, units of q/8 (taken mod 8)
};
struct LinearGateNoise {
  int margin = 0;           // M, units of q/8
  double noise_weight = 0;  // W = sum m_i^2 / M^2
  double failure_log2 = 0;  // log2 of the failure probability of one bootstrap (params)
};
// The margin and noise weight of a gate, independent of the parameters. Throws
// std::invalid_argument for no or more than kMaxLinearInputs inputs, a multiplier outside
// [-kMaxLinearMultiplier, kMaxLinearMultiplier], or a reachable phase on a decision boundary
// (margin 0: that input assignment has no defined output).
LinearGateNoise linear_gate_shape(const LinearGate& gate);
// The largest noise weight the parameters carry within the 2^-40 failure bound per bootstrap,
// capped at the compiler's gate model (3).
double max_linear_noise_weight(const Params& params);
// log2 of the failure probability of one bootstrap of noise weight W under `params`
// (noise_model(): margin / std. dev. scales as sqrt(2 / W) from the 2-input gates').
double linear_failure_log2(const Params& params, double noise_weight);

// Client side: the LWE key s (dimension n) and the ring key z (dimension N). The key's words
// (lwe, ring.z, ring.z_ntt) are wiped (sodium_memzero) when it is destroyed or assigned over.
struct SecretKey : core::WipedOnReassign<SecretKey> {
  Params params;
  KeyId key_id{};
  TernaryKey lwe;
  RingKey ring;

  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey(SecretKey&&) noexcept = default;
  SecretKey& operator=(const SecretKey&) = default;
  SecretKey& operator=(SecretKey&&) noexcept = default;
  ~SecretKey() { wipe(); }
  // Zeroes lwe, ring.z and ring.z_ntt in place (the destructor and the assignments call it).
  void wipe();
};

// Server side: everything needed to evaluate gates, no secret.
struct EvalKey {
  Params params;
  KeyId key_id{};
  BlindRotationKey brk;
  KeySwitchKey ksk;
  std::size_t memory_bytes() const { return brk.rgsw.memory_bytes() + ksk.memory_bytes(); }
};

// Data owner side: an LWE public key under the gate key s (LwePublicKey, lwe.h): n samples
// mod q_ks, 1.1 KiB on file (seed + betas). Whoever holds it encrypts bits that the evaluation
// key of the same key id bootstraps; it decrypts nothing.
struct PublicKey {
  Params params;
  KeyId key_id{};
  LwePublicKey lwe;
};

struct Ciphertext {
  LweCiphertext lwe;
  KeyId key_id{};
};

// Holds the parameters and the ring tables (NTT, monomial powers). Immutable and shareable
// across threads.
class Context {
 public:
  explicit Context(Params params);
  const Params& params() const { return ring_.params(); }
  const RingContext& ring() const { return ring_; }

  SecretKey keygen_secret() const;
  EvalKey keygen_eval(const SecretKey& sk) const;
  // The public key of `sk`: params.lwe_dim samples mod q_ks. Throws std::invalid_argument when
  // the parameters' fresh public-key noise (noise_model().public_key_variance) exceeds the
  // bootstrapped output's, which the gates' failure bound assumes of every input.
  PublicKey keygen_public(const SecretKey& sk) const;

  // Secret-key encryption (tests, the one-process harness): phase bit q/4 + e, e ~ sigma.
  Ciphertext encrypt(const SecretKey& sk, bool bit) const;
  // Public-key encryption (data owners): LwePublicKey::encrypt of bit q_ks/4 mod q_ks, then
  // rounded to q (README.md, "Public-key encryption"); the ciphertext carries pk's key id.
  Ciphertext encrypt(const PublicKey& pk, bool bit) const;
  bool decrypt(const SecretKey& sk, const Ciphertext& ct) const;
  // Phase in [0, q), for noise measurements (bit x sits at x q / 4).
  std::uint32_t phase(const SecretKey& sk, const Ciphertext& ct) const;

  Ciphertext eval_not(const Ciphertext& x) const;
  Ciphertext eval(const EvalKey& ek, Gate g, const Ciphertext& x, const Ciphertext& y) const;
  Ciphertext eval_mux(const EvalKey& ek, const Ciphertext& sel, const Ciphertext& if_true,
                      const Ciphertext& if_false) const;
  // The shape of `gate` (linear_gate_shape) with its failure probability under this context's
  // parameters; throws std::invalid_argument when the noise weight exceeds
  // max_linear_noise_weight(params()) (naming both and the failure probability).
  LinearGateNoise check_linear(const LinearGate& gate) const;
  // One bootstrap of `gate` on inputs.size() == gate.multipliers.size() ciphertexts.
  Ciphertext eval_linear(const EvalKey& ek, const LinearGate& gate,
                         std::span<const Ciphertext* const> inputs) const;

  // One gate of a batch: inputs by pointer (NOT uses in0; MUX in0 = selector, in1, in2;
  // kLinear: `linear` and one input per multiplier, in0, in1, in2 in order).
  struct GateOp {
    Gate gate;
    const Ciphertext* in0;
    const Ciphertext* in1 = nullptr;
    const Ciphertext* in2 = nullptr;
    const LinearGate* linear = nullptr;
  };
  // Evaluates independent gates on up to math::thread_cap() threads; the first error of any
  // gate is rethrown after the parallel region.
  std::vector<Ciphertext> eval_batch(const EvalKey& ek, std::span<const GateOp> ops) const;

  // The bootstrapping steps, public for tests and benchmarks: blind rotation of a combined
  // ciphertext mod q into `ws` and the LWE output (extract, + Q/8, Q -> q_ks, key switch,
  // q_ks -> q) of one or two accumulators.
  void blind_rotate(const EvalKey& ek, const LweCiphertext& combined, Workspace& ws) const;
  LweCiphertext finish(const EvalKey& ek, std::span<const LweCiphertext> extracted,
                       std::uint64_t offset) const;
  std::uint64_t test_value() const { return tv_; }
  // Blind rotations performed through this context (and its copies, which share the count).
  std::uint64_t blind_rotations() const { return rotations_->load(); }

 private:
  void check(const EvalKey& ek, const Ciphertext& c, const char* what) const;
  Ciphertext bootstrap_sign(const EvalKey& ek, const LweCiphertext& combined, Workspace& ws) const;
  Ciphertext bootstrap_gate(const EvalKey& ek, Gate g, const Ciphertext& x, const Ciphertext& y,
                            Workspace& ws) const;
  Ciphertext mux(const EvalKey& ek, const Ciphertext& s, const Ciphertext& t, const Ciphertext& f,
                 Workspace& ws) const;
  Ciphertext linear(const EvalKey& ek, const LinearGate& gate,
                    std::span<const Ciphertext* const> inputs, Workspace& ws) const;
  RingContext ring_;
  std::uint64_t tv_ = 0;          // round(Q / 8)
  double max_linear_weight_ = 0;  // max_linear_noise_weight(params())
  std::shared_ptr<std::atomic<std::uint64_t>> rotations_ =
      std::make_shared<std::atomic<std::uint64_t>>(0);
};

}  // namespace hec::fhew
