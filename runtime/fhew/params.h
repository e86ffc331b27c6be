// Parameter sets of the FHEW/TFHE-style boolean scheme: LWE dimension n and modulus q of the
// gate ciphertexts, the key-switching modulus q_ks and its digit base, the ring
// Z_Q[X]/(X^N + 1) of the accumulator with its gadget base, and the blind-rotation method
// (AP/DM: Alperin-Sheriff-Peikert 2014 as used by Ducas-Micciancio, "FHEW", EUROCRYPT 2015;
// GINX/CGGI: Chillotti-Gama-Georgieva-Izabachene, "TFHE", J. Cryptology 2020, with ternary
// secrets as in Micciancio-Polyakov, "Bootstrapping in FHEW-like cryptosystems", WAHC 2021).
// The reasoning behind the STD128 values (security estimate and per-gate failure
// probability) is in runtime/fhew/README.md; noise_model() below is the analysis in code.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace hec::fhew {

enum class BlindRotation : std::uint8_t { kAp = 1, kGinx = 2 };

const char* blind_rotation_name(BlindRotation method);

// Distribution of the LWE secret s (dimension n). With a binary secret GINX needs one RGSW
// key per coefficient (ACC += (X^(a_i) - 1) (ACC (x) RGSW(s_i))), with a ternary one two
// (s_i = s_i+ - s_i-): half the external products, key bytes and blind-rotation noise.
enum class LweSecret : std::uint8_t { kTernary = 0, kBinary = 1 };

const char* lwe_secret_name(LweSecret secret);

struct Params {
  std::string name;
  BlindRotation method = BlindRotation::kGinx;
  // LWE side (gate ciphertexts): dimension n, modulus q (power of two dividing 2N).
  std::uint32_t lwe_dim = 0;
  std::uint32_t lwe_modulus = 0;
  LweSecret lwe_secret = LweSecret::kTernary;
  // GINX with a binary secret only: 2 processes the coefficients in pairs (i, i + 1) with three
  // keys RGSW(s_i s_j), RGSW(s_i (1 - s_j)), RGSW((1 - s_i) s_j) per pair ("key unrolling",
  // Zhou et al. 2018; Bourse et al. 2018): one decomposition and one set of NTTs per pair
  // instead of per coefficient, for 3/2 the keys. 1: one key per coefficient.
  std::uint32_t ginx_unroll = 1;
  // Key switching from dimension N to n happens modulo ks_modulus (a power of two <= 2^16)
  // with ks_digits unsigned digits of base ks_base (ks_base^ks_digits >= ks_modulus).
  std::uint32_t ks_modulus = 0;
  std::uint32_t ks_base = 0;
  std::uint32_t ks_digits = 0;
  // Ring side: N, prime Q = 1 mod 2N (Q < 2^31 so RGSW keys are stored as 32-bit words),
  // signed gadget digits of base 2^gadget_log_base, gadget_digits of them, after rounding
  // away the gadget_dropped_bits lowest bits (approximate gadget decomposition, Chillotti
  // et al. 2020 §3.3: gadget g_l = 2^(dropped + l * log_base)).
  std::uint32_t ring_dim = 0;
  std::uint64_t ring_modulus = 0;
  std::uint32_t gadget_log_base = 0;
  std::uint32_t gadget_digits = 0;
  std::uint32_t gadget_dropped_bits = 0;
  // AP only: the LWE coefficients a_i are split into ap_digits digits of base ap_base.
  std::uint32_t ap_base = 0;
  std::uint32_t ap_digits = 0;
  // Standard deviation of every error (LWE encryption, key-switching key, RGSW rows).
  double sigma = 3.19;
  // True for parameter sets below 128-bit security (tests only); stamped in the name.
  bool insecure = false;

  // The production sets: 128-bit security, per-gate failure <= 2^-40 (README.md).
  static Params std128(BlindRotation method);
  // Small LWE dimension for fast tests of the AP key layout: NOT SECURE, name says so.
  static Params toy_insecure(BlindRotation method);

  // Throws std::invalid_argument naming the field and the values if inconsistent.
  void validate() const;
  // Canonical byte encoding (every field, fixed width, little-endian) and its BLAKE2b-256.
  std::array<std::uint8_t, 32> digest() const;
};

// The analytic noise of one bootstrapped gate, from the variance of each step (README.md
// "Noise analysis"). Variances are of the error as an integer at the named modulus.
struct NoiseModel {
  double fresh_variance;           // fresh secret-key encryption at q
  double public_key_variance;      // fresh public-key encryption at q (after q_ks -> q)
  double blind_rotation_variance;  // error of each coefficient of the accumulator, mod Q
  double approximation_variance;   // part of it from the dropped low gadget bits
  double after_ring_ms_variance;   // after rounding Q -> q_ks (scaled BR error + rounding)
  double key_switch_variance;      // added by key switching, mod q_ks
  double bootstrapped_variance;    // final gate output at q (after q_ks -> q)
  double gate_margin_sigmas;       // distance to the decision boundary (q/8) in std devs
  double failure_log2;             // log2 of the per-gate failure probability (two-sided)
};
NoiseModel noise_model(const Params& params);

}  // namespace hec::fhew
