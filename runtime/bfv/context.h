// BFV parameters and the precomputed context of the Halevi-Polyakov-Shoup RNS variant
// ("An improved RNS variant of the BFV homomorphic encryption scheme", CT-RSA 2019):
// plaintext modulus t, ciphertext modulus Q = q_0 ... q_{k-1} (30- to 60-bit NTT primes),
// the auxiliary basis P_mult of the ciphertext multiply (HPS §4: Q -> Q u P_mult extension,
// tensor, scale by t/Q into P_mult, back to Q), and the special primes P_ks of hybrid key
// switching (empty: digit decomposition over RNS digits, no special primes).
//
// Security: log2(Q * P_ks) (the key modulus; P_mult never appears in a key) is checked
// against the 128-bit Homomorphic Encryption Standard table (ternary secret, sigma = 3.2:
// 27, 54, 109, 218, 438, 881, 1747, 3523 bits for log2 N = 10 ... 17, the same table as
// compiler/analysis/security.py); parameters outside it are refused unless allow_insecure
// is set, and such a context reports is_secure() == false and says so in describe().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/keyswitch.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/poly.h"
#include "math/rns.h"

namespace hec::bfv {

using math::u64;

class BlockedBaseConverter;  // hps.h

// Max log2(Q * P_ks) at 128-bit security (core/security.h); -1 outside the table.
int he_standard_max_log_qp(int log_n);

struct BfvParams {
  int log_n = 0;
  u64 plain_modulus = 0;        // t >= 2, coprime to every prime below
  std::vector<u64> q;           // ciphertext primes
  std::vector<u64> p_mult;      // auxiliary HPS basis (P_mult > 2^3 * t * N * Q)
  std::vector<u64> p_ks;        // special primes of hybrid key switching (may be empty)
  std::size_t dnum = 1;         // number of key-switching digits of Q (1 <= dnum <= k)
  bool allow_insecure = false;  // permit parameters outside the 128-bit table

  // Generated parameter sets: k primes of q_bits bits for Q (largest below 2^q_bits, 1 mod 2N),
  // P_mult sized by the HPS bound with 50-bit primes (below 2^50: the IFMA NTT path), and for
  // hybrid key switching (special_primes = true) ceil(k / dnum) special primes of 60 bits; with
  // special_primes = false, key switching uses digit decomposition into dnum digits and no special
  // primes. Throws std::invalid_argument with the values for anything out of range.
  static BfvParams generate(int log_n, u64 plain_modulus, std::size_t q_limbs, int q_bits,
                            std::size_t dnum, bool special_primes, bool allow_insecure = false);
};

// The smallest prime t = 1 mod 2N with at least `bits` bits (batching-friendly).
u64 batching_plain_modulus(int bits, std::size_t ring_dim);

// The tables of one level: ciphertexts over Q_l = q_0 .. q_l (limbs = l + 1 primes; the top
// level, limbs = q_size(), is what encryption produces and where the HPS multiply runs;
// Evaluator::mod_switch_to_next_inplace goes from limbs to limbs - 1).
struct BfvLevel {
  explicit BfvLevel(const std::vector<u64>& primes) : q_base(primes) {}
  math::RnsBase q_base;  // Q_l
  double log2_q = 0;
  std::vector<u64> delta_mod_q;  // floor(Q_l / t) mod q_i
  // HPS decryption constants for Q_l (see BfvContext::scale_r and a_plain).
  std::vector<u64> scale_r, scale_r_shoup, a_plain;
  std::vector<double> inv_q_double;
  // Modulus switching to limbs - 1: q_last^{-1} mod q_i (Shoup) for i < limbs - 1.
  std::vector<u64> last_inv, last_inv_shoup;
};

// All precomputed tables of one parameter set. Immutable after construction; share it.
class BfvContext {
 public:
  // Validates the parameters (throws std::invalid_argument naming the values) and builds
  // the NTT tables and the HPS constants.
  explicit BfvContext(const BfvParams& params);
  ~BfvContext();
  static std::shared_ptr<const BfvContext> create(const BfvParams& params) {
    return std::make_shared<const BfvContext>(params);
  }

  const BfvParams& params() const { return params_; }
  std::size_t ring_dim() const { return n_; }
  int log_ring_dim() const { return params_.log_n; }
  u64 plain_modulus() const { return params_.plain_modulus; }
  const math::Modulus& plain() const { return plain_; }
  std::size_t q_size() const { return params_.q.size(); }
  std::size_t p_mult_size() const { return params_.p_mult.size(); }
  std::size_t p_ks_size() const { return params_.p_ks.size(); }
  bool batching() const { return batching_; }
  bool is_secure() const { return secure_; }
  double log2_q() const { return log2_q_; }
  double log2_qp_ks() const { return log2_qp_ks_; }
  // One line: N, t, limbs and bits, key switching, and the security verdict (loudly
  // "INSECURE" when outside the 128-bit table).
  std::string describe() const;
  // BLAKE2b-256-free canonical encoding of the parameters (for digests in serialization).
  std::vector<std::uint8_t> canonical_encoding() const;

  // Ciphertext polynomials live on the first q_size() limbs of the key context
  // Q u P_ks (primes q_0..q_{k-1}, then the special primes).
  const std::shared_ptr<const math::RnsContext>& key_context() const { return key_ctx_; }
  const math::RnsBase& q_base() const { return q_base_; }
  // NTT tables of P_mult (for the tensor product in Q u P_mult).
  const math::NttTables& p_mult_ntt(std::size_t j) const { return p_mult_ntt_[j]; }
  const math::RnsBase& p_mult_base() const { return p_mult_base_; }
  const BlockedBaseConverter& q_to_p_mult() const { return *q_to_p_mult_; }
  const BlockedBaseConverter& p_mult_to_q() const { return *p_mult_to_q_; }

  // floor(Q / t) mod q_i.
  u64 delta_mod_q(std::size_t i) const { return delta_mod_q_[i]; }
  // The tables of the level with `limbs` primes (1 <= limbs <= q_size(); throws otherwise).
  const BfvLevel& level(std::size_t limbs) const;

  // HPS scale-and-round constants (README §"Multiply", step 6 and decryption):
  // r_i = t * (Q/q_i)^{-1} mod q_i with its Shoup constant, 1/q_i in double,
  // a_mult[j * k + i] = -r_i * q_i^{-1} mod p_j, beta_mult[j] = t * Q^{-1} mod p_j,
  // a_plain[i] = -r_i * q_i^{-1} mod t.
  u64 scale_r(std::size_t i) const { return scale_r_[i]; }
  u64 scale_r_shoup(std::size_t i) const { return scale_r_shoup_[i]; }
  double inv_q_double(std::size_t i) const { return inv_q_double_[i]; }
  const std::vector<u64>& a_mult() const { return a_mult_; }
  const std::vector<u64>& beta_mult() const { return beta_mult_; }
  const std::vector<u64>& a_plain() const { return a_plain_; }

  // Key switching: digit d covers Q limbs [digit_begin(d), digit_end(d)).
  std::size_t dnum() const { return params_.dnum; }
  std::size_t digit_begin(std::size_t d) const;
  std::size_t digit_end(std::size_t d) const;
  // The shared hybrid key switching (core/keyswitch.h) over the key context's primes, with
  // these digits, usable at every level.
  const core::HybridKeySwitch& key_switch() const { return *key_switch_; }

  // Batch encoding: slot k of the 2 x N/2 matrix (row-major) sits at evaluation index
  // slot_index(k) of the NTT mod t (row 0 column c: exponent 3^c mod 2N; row 1: -3^c).
  const std::vector<std::size_t>& slot_index() const { return slot_index_; }
  const math::NttTables& plain_ntt() const { return *plain_ntt_; }

  // Galois element of a row rotation by `steps` (left for steps > 0): 3^steps mod 2N.
  u64 galois_element_for_row_rotation(long long steps) const;
  // The row swap X -> X^{2N-1}.
  u64 galois_element_row_swap() const { return 2 * n_ - 1; }
  // Evaluation-form automorphism X -> X^g: out[j] = in[perm[j]] (computed once per element,
  // then cached; thread-safe).
  const std::vector<std::uint32_t>& galois_permutation(u64 galois_element) const;

 private:
  BfvParams params_;
  std::size_t n_;
  math::Modulus plain_;
  bool batching_ = false, secure_ = false;
  double log2_q_ = 0, log2_qp_ks_ = 0;
  std::shared_ptr<const math::RnsContext> key_ctx_;
  math::RnsBase q_base_, p_mult_base_;
  std::vector<math::NttTables> p_mult_ntt_;
  std::unique_ptr<BlockedBaseConverter> q_to_p_mult_, p_mult_to_q_;
  std::vector<u64> delta_mod_q_;
  std::vector<std::unique_ptr<BfvLevel>> levels_;  // index limbs - 1
  std::vector<u64> scale_r_, scale_r_shoup_;
  std::vector<double> inv_q_double_;
  std::vector<u64> a_mult_, beta_mult_, a_plain_;
  std::unique_ptr<core::HybridKeySwitch> key_switch_;
  std::vector<std::size_t> slot_index_;
  mutable std::mutex perm_mutex_;
  mutable std::map<u64, std::vector<std::uint32_t>> perm_cache_;
  std::unique_ptr<math::NttTables> plain_ntt_;
};

}  // namespace hec::bfv
