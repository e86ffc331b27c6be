// RNS-CKKS parameter sets: ring dimension, the modulus chain Q_L = Q_0 * q_1 * ... * q_L, the
// special primes P for hybrid key switching, and the number of key-switching digits (dnum).
// A set is checked against the Homomorphic Encryption Standard's 128-bit bound on log2(QP)
// (Albrecht et al. 2018, Table 1, ternary secret, sigma = 3.2; 2^16 and 2^17 from the 2024
// FHE security guidelines) -- the same table as compiler/analysis/security.py -- and refused
// unless the caller explicitly asks for an insecure set. Scaling primes alternate around
// 2^scale_bits so that a chain of rescales keeps the scale near its nominal value (Blatt et
// al., PNAS 2020, supplement; Kim et al., "Approximate homomorphic encryption over the
// conjugate-invariant ring").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/serialize.h"

namespace hec::ckks {

using u64 = std::uint64_t;

// log2 of the ring dimension N (N = 2^value), 12 <= value <= 17 for CKKS (10 and 11 are
// accepted only with Security::kInsecure, for tests).
struct LogN {
  int value;
  explicit constexpr LogN(int v) : value(v) {}
};

// A ciphertext level l: the ciphertext lives modulo Q_l = Q_0 * q_1 * ... * q_l.
// Level 0 holds only the output primes Q_0; a rescale at level l divides by q_l.
struct Level {
  int value;
  explicit constexpr Level(int v) : value(v) {}
  friend constexpr bool operator==(Level a, Level b) { return a.value == b.value; }
  friend constexpr bool operator!=(Level a, Level b) { return a.value != b.value; }
  friend constexpr bool operator<(Level a, Level b) { return a.value < b.value; }
};

enum class Security {
  k128,       // refuse anything above the HE Standard's 128-bit bound
  kInsecure,  // accept it; Parameters::insecure() is then true and must be shown to users
};

// Key switching: hybrid (special primes P, dnum digits of several primes; Han-Ki 2020), or
// the RNS digit decomposition "BV" (Brakerski-Vaikuntanathan in RNS form, as the PNAS authors
// used for shallow circuits: one digit per prime, no special primes, no ModDown; its noise
// is about q_j * sigma * sqrt(N) per key switch, so it suits key switches done at scale
// Delta^2 right before a rescale).
enum class KeySwitching { kHybrid, kBv };

// The HE Standard 128-bit table: max log2(QP) for log2(N) = 10..17 (ternary secret).
// Returns -1 for a log N outside the table.
int he_standard_max_log_qp(int log_n);

// 32-byte BLAKE2b digest of the canonical parameter encoding.
using ParamsDigest = core::Digest;

// Immutable after construction; every constructor validates and throws std::invalid_argument
// naming the offending argument and its value.
class Parameters {
 public:
  // Explicit primes, as chosen by the compiler's parameter-selection pass:
  //   output_moduli: the primes of Q_0 (one or more), moduli: rescale primes q_1..q_L
  //   (q_L is dropped first), special_moduli: P. Every prime must be 1 mod 2N, below 2^61,
  //   and all must be distinct. dnum in [1, number of primes of Q_L]. With KeySwitching::kBv,
  //   special_moduli must be empty and dnum equal to the number of primes of Q_L.
  static Parameters from_primes(LogN log_n, std::vector<u64> output_moduli, std::vector<u64> moduli,
                                std::vector<u64> special_moduli, int dnum,
                                Security security = Security::k128,
                                KeySwitching key_switching = KeySwitching::kHybrid);

  // Bit sizes: `output_bits` for each prime of Q_0, `levels` scaling primes alternating
  // around 2^scale_bits (first just above, then just below, ...), `special_bits` for each
  // special prime. Primes come from math/primes.h.
  static Parameters from_bit_sizes(LogN log_n, std::vector<int> output_bits, int scale_bits,
                                   int levels, std::vector<int> special_bits, int dnum,
                                   Security security = Security::k128,
                                   KeySwitching key_switching = KeySwitching::kHybrid);

  int log_n() const { return log_n_; }
  std::size_t n() const { return std::size_t{1} << log_n_; }
  std::size_t slots() const { return n() / 2; }
  // L: the highest level (number of rescale primes).
  int max_level() const { return static_cast<int>(moduli_.size()); }
  const std::vector<u64>& output_moduli() const { return output_moduli_; }
  const std::vector<u64>& moduli() const { return moduli_; }
  const std::vector<u64>& special_moduli() const { return special_moduli_; }
  int dnum() const { return dnum_; }
  KeySwitching key_switching() const { return key_switching_; }
  // The highest level at which key-switching keys may be made (L unless limited).
  Level key_level() const { return Level(key_level_ < 0 ? max_level() : key_level_); }
  // The same set with key-switching keys limited to levels <= `level` (a program that switches
  // keys only low in the chain): the evaluation keys are then samples modulo Q_level * P, not
  // Q_L * P, so the security bound applies to max(log2 Q_L, log2 Q_level * P) (log_qp()).
  // KeyGenerator refuses keys above it. Part of the digest. Validates like from_primes.
  Parameters with_key_level(Level level, Security security = Security::k128) const;
  bool insecure() const { return insecure_; }

  // The chain Q_L in limb order: output primes first, then q_1..q_L.
  const std::vector<u64>& chain() const { return chain_; }
  // Number of primes of Q_level; throws on a level outside [0, L].
  std::size_t limbs_at(Level level) const;
  // Primes per key-switching digit (alpha = ceil(limbs_at(L) / dnum); 1 for BV).
  std::size_t digit_size() const;
  double log_q(Level level) const;  // log2 Q_level
  // log2 of the largest modulus of a published sample: max(Q_L (public key),
  // Q_key_level * P (key-switching keys)); Q_L * P when keys are not limited.
  double log_qp() const;

  // Canonical little-endian encoding (what the digest and the serialized form hash).
  std::vector<std::uint8_t> canonical_encoding() const;
  const ParamsDigest& digest() const { return digest_; }
  static Parameters from_canonical_encoding(const std::vector<std::uint8_t>& bytes);

  std::string describe() const;  // one line for people, "INSECURE" stamped when it is

  friend bool operator==(const Parameters& a, const Parameters& b) {
    return a.digest_ == b.digest_;
  }

 private:
  Parameters() = default;
  void validate_and_finish(Security security);

  int log_n_ = 0;
  std::vector<u64> output_moduli_, moduli_, special_moduli_, chain_;
  int dnum_ = 1;
  int key_level_ = -1;  // -1: L
  KeySwitching key_switching_ = KeySwitching::kHybrid;
  bool insecure_ = false;
  ParamsDigest digest_{};
};

}  // namespace hec::ckks
