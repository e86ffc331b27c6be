// BFV key generation, encryption, decryption with the noise-budget measurement, and the
// evaluator, in the Halevi-Polyakov-Shoup RNS variant (CT-RSA 2019): decryption and the
// ciphertext multiply scale by t/Q with the HPS floating-point-corrected CRT (README §Multiply
// for the numbered steps, §Bounds for the error bounds). Ciphertexts are kept in evaluation
// (NTT) form over Q; plaintext products are pointwise.
//
// Every public function validates its operands (sizes, key ids, forms) and throws
// std::invalid_argument naming the values.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "bfv/ciphertext.h"
#include "bfv/context.h"
#include "math/sampling.h"

namespace hec::bfv {

class KeyGenerator {
 public:
  // Secret key: uniform ternary, from an OS-seeded ChaCha20 stream (libsodium).
  explicit KeyGenerator(std::shared_ptr<const BfvContext> ctx);
  // Deterministic stream for tests only (the same seed gives the same keys).
  KeyGenerator(std::shared_ptr<const BfvContext> ctx, const math::Seed& seed);

  const SecretKey& secret_key() const { return sk_; }
  PublicKey make_public_key();
  RelinKey make_relin_key();
  // Keys for row rotations by each of `row_steps` (Galois element 3^step mod 2N) and, if
  // row_swap, for X -> X^(2N-1).
  GaloisKeys make_galois_keys(std::span<const long long> row_steps, bool row_swap = true);
  // Steps +-1, +-2, +-4, ..., +-N/4 and the row swap: every rotation is a product of these.
  GaloisKeys make_galois_keys_power_of_two();

 private:
  std::shared_ptr<const BfvContext> ctx_;
  math::Prng prng_;
  SecretKey sk_;
};

class Encryptor {
 public:
  // The encryptor keeps its own copy of the key.
  Encryptor(std::shared_ptr<const BfvContext> ctx, const PublicKey& pk);  // public-key
  Encryptor(std::shared_ptr<const BfvContext> ctx, const SecretKey& sk);  // symmetric
  Ciphertext encrypt(const Plaintext& pt);

 private:
  std::shared_ptr<const BfvContext> ctx_;
  std::optional<PublicKey> pk_;
  std::optional<SecretKey> sk_;
  math::Prng prng_;
};

class Decryptor {
 public:
  Decryptor(std::shared_ptr<const BfvContext> ctx, const SecretKey& sk);
  // Any level (the tables of the ciphertext's Q_l).
  Plaintext decrypt(const Ciphertext& ct) const;
  // Invariant noise budget in bits: log2(Q / (2 max_c |[t (c_0 + c_1 s + ...)]_Q|)), i.e.
  // -log2(2 ||v||) for the invariant noise v; decryption is correct while it is > 0.
  // Returns 0 when the noise has exhausted the budget.
  double noise_budget(const Ciphertext& ct) const;

 private:
  math::RnsPoly inner_product_coeff(const Ciphertext& ct) const;
  std::shared_ptr<const BfvContext> ctx_;
  SecretKey sk_;
};

class Evaluator {
 public:
  explicit Evaluator(std::shared_ptr<const BfvContext> ctx) : ctx_(std::move(ctx)) {}
  const std::shared_ptr<const BfvContext>& context() const { return ctx_; }

  void add_inplace(Ciphertext& a, const Ciphertext& b) const;
  void sub_inplace(Ciphertext& a, const Ciphertext& b) const;
  void negate_inplace(Ciphertext& a) const;
  void add_plain_inplace(Ciphertext& a, const Plaintext& pt) const;
  void sub_plain_inplace(Ciphertext& a, const Plaintext& pt) const;

  // The centred lift of m to Q in evaluation form (do it once per plaintext operand).
  PlaintextNtt prepare_plain(const Plaintext& pt) const;
  void multiply_plain_inplace(Ciphertext& a, const PlaintextNtt& pt) const;
  void multiply_plain_inplace(Ciphertext& a, const Plaintext& pt) const;
  // a * value for an integer value mod t (the constant plaintext polynomial: every slot of a
  // batched plaintext): each limb times the centred lift of value, no NTT and no table.
  // Bit-identical to multiply_plain_inplace with encode_scalar(value).
  void multiply_scalar_inplace(Ciphertext& a, u64 value) const;
  // out = a * pt, written into out (its storage reused when it has a's shape; out may be a).
  void multiply_plain(const Ciphertext& a, const PlaintextNtt& pt, Ciphertext& out) const;

  // HPS multiply (README §Multiply): size-2 operands at the top level (the full Q; the HPS
  // tables exist for it only: multiply before mod switching), size-3 result.
  Ciphertext multiply(const Ciphertext& a, const Ciphertext& b) const;
  // Multiply then relinearize, without transforming the third component to evaluation form.
  Ciphertext multiply_relin(const Ciphertext& a, const Ciphertext& b, const RelinKey& rk) const;
  void relinearize_inplace(Ciphertext& a, const RelinKey& rk) const;

  // Row rotation left by `steps` (any integer; reduced mod N/2). Uses the key for 3^steps if
  // present, otherwise composes the power-of-two keys; throws naming the missing key.
  void rotate_rows_inplace(Ciphertext& a, long long steps, const GaloisKeys& gk) const;
  // Swaps the two rows (X -> X^(2N-1)).
  void rotate_columns_inplace(Ciphertext& a, const GaloisKeys& gk) const;
  void apply_galois_inplace(Ciphertext& a, u64 galois_element, const GaloisKeys& gk) const;

  // Modulus switching (a level change): drops the last prime q_l of the ciphertext's Q_l,
  // c_j <- round(c_j / q_l) = (c_j - [c_j]_{q_l}) * q_l^{-1} mod each remaining q_i, with
  // [c_j]_{q_l} the centred residue (nearest-integer rounding: |r_j| <= 1/2 per coefficient).
  // BFV's message sits in the top bits (Delta_l m), so scaling every component by
  // Q_{l-1}/Q_l keeps the invariant noise v (t (c_0 + c_1 s) / Q_l = m + v mod t) and adds
  // only the rounding term: v' = v - t (r_0 + r_1 s) / Q_{l-1}, |v' - v| <= t (1 + N) /
  // (2 Q_{l-1}) (||s||_1 <= N). So the noise budget is kept while the noise exceeds that term
  // (after multiplications) and drops to about log2(Q_{l-1} / t) - log2 |r_0 + r_1 s| below it
  // (a fresh ciphertext). No t-aware correction is needed: that is BGV's modulus switching,
  // where the message sits in the low bits (m + t e) and the rounding must be 0 mod t.
  // Any size (2 or 3); throws at one prime.
  void mod_switch_to_next_inplace(Ciphertext& a) const;
  // Mod switches until `limbs` primes remain (throws if the ciphertext has fewer).
  void mod_switch_to_inplace(Ciphertext& a, std::size_t limbs) const;

 private:
  void check_ct(const char* op, const Ciphertext& a) const;
  void check_same_level(const char* op, const Ciphertext& a, const Ciphertext& b) const;
  // c0 += sign * Delta * m (evaluation form).
  void add_scaled_plain(Ciphertext& a, const Plaintext& pt, bool subtract) const;
  // Steps (1)-(6) of the multiply, and step (7) when ntt_c01: c0, c1 in evaluation form (in
  // coefficient form without step (7)), c2 in coefficient form.
  void multiply_core(const Ciphertext& a, const Ciphertext& b, math::RnsPoly& c0, math::RnsPoly& c1,
                     math::RnsPoly& c2_coeff, bool ntt_c01 = true) const;
  std::shared_ptr<const BfvContext> ctx_;
};

}  // namespace hec::bfv
