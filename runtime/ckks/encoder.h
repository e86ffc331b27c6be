// CKKS encoding through the canonical embedding (Cheon-Kim-Kim-Song 2017, section 3.2): a
// vector z of N/2 complex slots maps to the real polynomial m with m(zeta^{5^j}) = z_j
// (zeta = exp(i*pi/N)), computed by the "special FFT" over the rotation group <5> mod 2N, so
// that the Galois automorphism X -> X^{5^k} rotates the slots left by k and X -> X^{-1}
// conjugates them. m is scaled by Delta (any positive double, not only powers of two),
// rounded and reduced exactly modulo each prime of Q_level; decoding composes the residues by
// CRT (centred), so it works at every level. The FFT runs in long double (64-bit mantissa:
// coefficients beyond 2^63 are still exact up to 2^-64 relative), or in double (several
// times faster) when a rigorous bound on the double FFT's error per scaled coefficient is
// within the caller's tolerance: by default the 1/2 of the rounding to integers itself; for
// values about to be encrypted, the standard deviation of fresh encryption noise
// (fresh_noise_tolerance), next to which a smaller error changes nothing measurable.
#pragma once

#include <complex>
#include <span>
#include <vector>

#include "ckks/context.h"

namespace hec::ckks {

struct DecodeResult {
  std::vector<std::complex<double>> values;  // N/2 slots
  // Bound on the error this decode adds (floating-point CRT composition and FFT), in slot
  // units. It does not include the noise of the ciphertext the plaintext came from.
  double error_bound = 0.0;
};

class Encoder {
 public:
  explicit Encoder(ContextPtr context);
  ~Encoder();

  // Encodes up to N/2 values (missing slots are zero) at `level` and `scale`.
  // Throws std::invalid_argument on too many values, a bad level, a scale that is not finite
  // and positive, or when scale * max|z| reaches Q_level / 4 (every coefficient is at most
  // max|z| in absolute value, so below that the message cannot wrap). `error_bound`, when
  // given, receives a rigorous bound on the slot-wise error of the encoding itself (sum of
  // the coefficient rounding errors / scale plus FFT rounding).
  // `tolerance`: the largest floating-point error per scaled coefficient the caller accepts
  // from the double-precision FFT (0.5 by default; see above).
  Plaintext encode(std::span<const std::complex<double>> values, Level level, double scale,
                   double* error_bound = nullptr, double tolerance = 0.5) const;
  Plaintext encode(std::span<const double> values, Level level, double scale,
                   double* error_bound = nullptr, double tolerance = 0.5) const;
  // The standard deviation of the noise in each coefficient of a fresh public-key
  // encryption, sigma * sqrt(1 + 4N/3) (e_0 + u e + e_1 s with ternary u and s): the tolerance
  // for values that are encrypted right after encoding.
  double fresh_noise_tolerance() const;
  // The constant c in every slot (the polynomial round(c * scale), no FFT).
  Plaintext encode_constant(double value, Level level, double scale) const;

  DecodeResult decode(const Plaintext& plaintext) const;

  // Slots -> real coefficients (not scaled): the inverse canonical embedding; exposed for
  // tests. coefficients has N entries.
  void slots_to_coefficients(std::span<const std::complex<double>> slots,
                             std::vector<long double>& coefficients) const;
  // Real coefficients -> slots: the canonical embedding evaluated by the special FFT.
  void coefficients_to_slots(std::span<const long double> coefficients,
                             std::vector<std::complex<double>>& slots) const;

 private:
  ContextPtr context_;
  struct Tables;
  std::unique_ptr<Tables> tables_;
};

// Analytic high-probability bounds (in slot units, i.e. divided by the scale) from
// Cheon-Kim-Kim-Song 2017, Lemmas 1-3, for sigma = 3.2 and a ternary secret of Hamming weight
// h ~ 2N/3. Tests compare measured errors against these.
double fresh_public_key_noise_bound(const Parameters& params, double scale);
double fresh_symmetric_noise_bound(const Parameters& params, double scale);
// The rounding error a rescale adds, in units of the new scale.
double rescale_noise_bound(const Parameters& params, double new_scale);

}  // namespace hec::ckks
