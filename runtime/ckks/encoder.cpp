// CKKS canonical-embedding encoder (see encoder.h). The special FFT: with w_k = m_k +
// i*m_{k+N/2} (k < N/2), the slot values are z_j = sum_k w_k zeta^{5^j k}, because
// zeta^{5^j N/2} = i^{5^j} = i. Writing 5^j = 1 + 4t (mod 2N) turns this into a length-N/2
// DFT of the twisted vector (w_k zeta^k) at index t: z_j = DFT(w .* zeta^k)[t(j)] with
// omega = zeta^4. Encoding runs the same steps backwards, in long double complex, or in
// double complex when the scaled coefficients are small enough that double rounding errors
// stay at or below the rounding to integers (see kDoubleFftLimit).
#include "ckks/encoder.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "core/wipe.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/sampling.h"

namespace hec::ckks {

using cld = std::complex<long double>;

// Rigorous error of a radix-2 FFT of length h = 2^k in floating point with unit roundoff
// u (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Thm. 24.2):
// ||fl(y) - y||_2 <= k * eta / (1 - k * eta) * ||y||_2 with eta = mu + gamma_4 (sqrt 2 + mu),
// mu the twiddle error (<= u here). For the inverse transform normalized by 1/h, ||y||_2 =
// ||z||_2 / sqrt(h), and every coefficient's error is at most the 2-norm of all of them.
// Two more roundings (the twist by conj(zeta^k) and the scaling) add (2 + 2) u |c| <= 4 u
// max|z|. Returns the bound per coefficient, unscaled.
double fft_coefficient_error(double u, int log_half, double norm2, double max_abs) {
  const double h = std::exp2(log_half);
  const double gamma4 = 4 * u / (1 - 4 * u);
  const double eta = u + gamma4 * (std::numbers::sqrt2 + u);
  const double k_eta = log_half * eta;
  return k_eta / (1 - k_eta) * norm2 / std::sqrt(h) + 4 * u * max_abs;
}

struct Encoder::Tables {
  std::size_t n = 0;     // ring dimension N
  std::size_t half = 0;  // N/2 slots, the DFT length
  int log_half = 0;
  std::vector<cld> zeta;                 // zeta^k, k < N (zeta = exp(i pi / N))
  std::vector<double> zeta_re, zeta_im;  // the same, rounded to double
  std::vector<std::size_t> slot_to_t;    // t(j): 5^j = 1 + 4 t(j) mod 2N
  std::vector<std::size_t> bitrev;       // bit reversal over log_half bits

  // In-place DFT of length half: x[t] <- sum_k x[k] omega^{+-tk}, omega = zeta^4.
  void dft(std::vector<cld>& x, bool inverse) const {
    for (std::size_t i = 0; i < half; ++i) {
      if (i < bitrev[i]) std::swap(x[i], x[bitrev[i]]);
    }
    for (std::size_t len = 2; len <= half; len <<= 1) {
      const std::size_t step = (half / len) * 4;  // exponent of zeta for omega_len
      for (std::size_t start = 0; start < half; start += len) {
        for (std::size_t k = 0; k < len / 2; ++k) {
          cld w = zeta[k * step];
          if (inverse) w = std::conj(w);
          const cld u = x[start + k];
          const cld v = x[start + k + len / 2] * w;
          x[start + k] = u + v;
          x[start + k + len / 2] = u - v;
        }
      }
    }
  }

  // The inverse DFT in double, on split real and imaginary parts (vectorizes; no complex
  // multiply with its NaN checks).
  void inverse_dft_double(double* re, double* im) const {
    for (std::size_t i = 0; i < half; ++i) {
      const std::size_t j = bitrev[i];
      if (i < j) {
        std::swap(re[i], re[j]);
        std::swap(im[i], im[j]);
      }
    }
    for (std::size_t len = 2; len <= half; len <<= 1) {
      const std::size_t step = (half / len) * 4;
      const std::size_t h = len / 2;
      for (std::size_t start = 0; start < half; start += len) {
        double* ur = re + start;
        double* ui = im + start;
        double* vr = re + start + h;
        double* vi = im + start + h;
        for (std::size_t k = 0; k < h; ++k) {
          const double wr = zeta_re[k * step], wi = -zeta_im[k * step];  // conj
          const double tr = vr[k] * wr - vi[k] * wi;
          const double ti = vr[k] * wi + vi[k] * wr;
          const double ar = ur[k], ai = ui[k];
          ur[k] = ar + tr;
          ui[k] = ai + ti;
          vr[k] = ar - tr;
          vi[k] = ai - ti;
        }
      }
    }
  }
};

Encoder::Encoder(ContextPtr context) : context_(std::move(context)), tables_(new Tables) {
  Tables& t = *tables_;
  t.n = context_->n();
  t.half = t.n / 2;
  t.log_half = context_->params().log_n() - 1;
  t.zeta.resize(t.n);
  const long double pi = std::numbers::pi_v<long double>;
  for (std::size_t k = 0; k < t.n; ++k) {
    const long double angle = pi * static_cast<long double>(k) / static_cast<long double>(t.n);
    t.zeta[k] = cld(std::cos(angle), std::sin(angle));
  }
  t.zeta_re.resize(t.n);
  t.zeta_im.resize(t.n);
  for (std::size_t k = 0; k < t.n; ++k) {
    t.zeta_re[k] = static_cast<double>(t.zeta[k].real());
    t.zeta_im[k] = static_cast<double>(t.zeta[k].imag());
  }
  t.slot_to_t.resize(t.half);
  const std::uint64_t two_n = 2 * t.n;
  std::uint64_t g = 1;
  for (std::size_t j = 0; j < t.half; ++j) {
    t.slot_to_t[j] = static_cast<std::size_t>((g - 1) / 4);
    g = (g * 5) % two_n;
  }
  t.bitrev.resize(t.half);
  for (std::size_t i = 0; i < t.half; ++i) {
    t.bitrev[i] = t.log_half == 0 ? 0 : math::bit_reverse(i, t.log_half);
  }
}

Encoder::~Encoder() = default;

void Encoder::slots_to_coefficients(std::span<const std::complex<double>> slots,
                                    std::vector<long double>& coefficients) const {
  const Tables& t = *tables_;
  std::vector<cld> x(t.half, cld(0, 0));
  for (std::size_t j = 0; j < slots.size(); ++j) {
    x[t.slot_to_t[j]] = cld(slots[j].real(), slots[j].imag());
  }
  t.dft(x, /*inverse=*/true);
  coefficients.assign(t.n, 0.0L);
  const long double inv_half = 1.0L / static_cast<long double>(t.half);
  for (std::size_t k = 0; k < t.half; ++k) {
    const cld w = x[k] * std::conj(t.zeta[k]) * inv_half;
    coefficients[k] = w.real();
    coefficients[k + t.half] = w.imag();
  }
}

void Encoder::coefficients_to_slots(std::span<const long double> coefficients,
                                    std::vector<std::complex<double>>& slots) const {
  const Tables& t = *tables_;
  std::vector<cld> x(t.half);
  for (std::size_t k = 0; k < t.half; ++k) {
    x[k] = cld(coefficients[k], coefficients[k + t.half]) * t.zeta[k];
  }
  t.dft(x, /*inverse=*/false);
  slots.resize(t.half);
  for (std::size_t j = 0; j < t.half; ++j) {
    const cld z = x[t.slot_to_t[j]];
    slots[j] = std::complex<double>(static_cast<double>(z.real()), static_cast<double>(z.imag()));
  }
}

namespace {

void check_scale(double scale, const char* where) {
  if (!std::isfinite(scale) || scale <= 0) {
    throw std::invalid_argument(std::string(where) + ": scale = " + std::to_string(scale) +
                                " must be finite and positive");
  }
}

// Writes the integer-valued long double c (|c| < Q/2) reduced modulo each prime into
// residues[j * n] (j < limbs). fmodl is exact, so large coefficients lose nothing more than
// the rounding to a 64-bit mantissa already did.
inline void reduce_coefficient(long double c, const Context::Impl& impl, std::size_t limbs,
                               u64* out, std::size_t n) {
  const bool small = std::fabs(c) < 9.2e18L;
  const std::int64_t ci = small ? static_cast<std::int64_t>(c) : 0;
  for (std::size_t j = 0; j < limbs; ++j) {
    const u64 q = impl.moduli[j].value();
    u64 r;
    if (small) {
      r = ci >= 0 ? static_cast<u64>(ci) % q : (q - (static_cast<u64>(-(ci + 1)) + 1) % q) % q;
    } else {
      long double m = std::fmod(c, static_cast<long double>(q));
      if (m < 0) m += static_cast<long double>(q);
      r = static_cast<u64>(m);
      if (r >= q) r -= q;
    }
    out[j * n] = r;
  }
}

}  // namespace

Plaintext Encoder::encode(std::span<const std::complex<double>> values, Level level, double scale,
                          double* error_bound, double tolerance) const {
  const Tables& t = *tables_;
  check_scale(scale, "Encoder::encode");
  if (values.size() > t.half) {
    throw std::invalid_argument("Encoder::encode: " + std::to_string(values.size()) +
                                " values exceed the " + std::to_string(t.half) + " slots");
  }
  const Parameters& params = context_->params();
  const std::size_t limbs = params.limbs_at(level);
  double max_abs = 0, norm2_sq = 0;
  for (const auto& v : values) {
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) {
      throw std::invalid_argument("Encoder::encode: a value is not finite");
    }
    max_abs = std::max(max_abs, std::abs(v));
    norm2_sq += std::norm(v);
  }
  // Rounded up so that the bound stays a bound.
  const double norm2 = std::sqrt(norm2_sq) * (1 + 1e-12);
  // Coefficients are bounded by max|z| (each is an average of slot values times roots), so
  // the largest scaled coefficient must stay below Q_level / 2.
  const double log_needed = std::log2(std::max(max_abs, 1e-300) * scale) + 1;
  if (log_needed >= params.log_q(level) - 1) {
    throw std::invalid_argument("Encoder::encode: scale * max|value| = 2^" +
                                std::to_string(log_needed - 1) + " does not fit Q_" +
                                std::to_string(level.value) + " = 2^" +
                                std::to_string(params.log_q(level)));
  }
  Plaintext pt = context_->make_plaintext(level, scale);
  const Context::Impl& impl = context_->impl();
  long double rounding = 0;
  double fp_per_coefficient;  // unscaled
  const double u_double = std::numeric_limits<double>::epsilon() / 2;
  const double double_error = fft_coefficient_error(u_double, t.log_half, norm2, max_abs);
  // The double path also needs every scaled coefficient exactly representable as an int64
  // after rounding: |c| <= max|z| * scale < 2^62.
  if (double_error * scale <= tolerance && max_abs * scale < 0x1p62) {
    fp_per_coefficient = double_error;
    // Double path: slots -> twisted coefficients, scaled and rounded to int64 exactly
    // (|c| <= 2^50), then reduced with Shoup's method (no division).
    std::vector<double> re(t.half, 0.0), im(t.half, 0.0);
    for (std::size_t j = 0; j < values.size(); ++j) {
      re[t.slot_to_t[j]] = values[j].real();
      im[t.slot_to_t[j]] = values[j].imag();
    }
    t.inverse_dft_double(re.data(), im.data());
    const double factor = scale / static_cast<double>(t.half);
    std::vector<std::int64_t> ints(t.n);
    double rounding_d = 0;
    for (std::size_t k = 0; k < t.half; ++k) {
      // (re + i im) * conj(zeta^k) * scale / half
      const double zr = t.zeta_re[k], zi = t.zeta_im[k];
      const double cr = (re[k] * zr + im[k] * zi) * factor;
      const double ci = (im[k] * zr - re[k] * zi) * factor;
      const double rr = std::nearbyint(cr), ri = std::nearbyint(ci);
      rounding_d += std::fabs(rr - cr) + std::fabs(ri - ci);
      ints[k] = static_cast<std::int64_t>(rr);
      ints[k + t.half] = static_cast<std::int64_t>(ri);
    }
    rounding = rounding_d;
    for (std::size_t j = 0; j < limbs; ++j) {
      const u64 q = impl.moduli[j].value();
      const u64 one_shoup = math::shoup_precompute(1, q);
      u64* out = pt.limb(j);
      for (std::size_t k = 0; k < t.n; ++k) {
        const std::int64_t c = ints[k];
        const u64 mag = c >= 0 ? static_cast<u64>(c) : static_cast<u64>(-c);
        const u64 r = math::mul_shoup(mag, 1, one_shoup, q);
        out[k] = c >= 0 ? r : math::negate_mod(r, q);
      }
    }
  } else {
    const double u_long = static_cast<double>(std::numeric_limits<long double>::epsilon()) / 2;
    fp_per_coefficient = fft_coefficient_error(u_long, t.log_half, norm2, max_abs);
    std::vector<long double> coeffs;
    slots_to_coefficients(values, coeffs);
    for (std::size_t k = 0; k < t.n; ++k) {
      const long double scaled = coeffs[k] * static_cast<long double>(scale);
      const long double c = std::round(scaled);
      rounding += std::fabs(c - scaled);
      reduce_coefficient(c, impl, limbs, pt.data.data() + k, t.n);
    }
  }
  for (std::size_t j = 0; j < limbs; ++j) math::ntt_forward_inplace(pt.limb(j), impl.ntt[j]);
  if (error_bound) {
    // A coefficient error e_k moves every slot by at most sum_k |e_k| (|zeta| = 1): the
    // rounding to integers (measured) plus the floating-point bound for all N coefficients.
    *error_bound =
        static_cast<double>(rounding / scale) + static_cast<double>(t.n) * fp_per_coefficient;
  }
  return pt;
}

Plaintext Encoder::encode(std::span<const double> values, Level level, double scale,
                          double* error_bound, double tolerance) const {
  std::vector<std::complex<double>> z(values.begin(), values.end());
  return encode(z, level, scale, error_bound, tolerance);
}

double Encoder::fresh_noise_tolerance() const {
  const double n = static_cast<double>(context_->n());
  return math::kDefaultGaussianSigma * std::sqrt(1 + 4 * n / 3);
}

Plaintext Encoder::encode_constant(double value, Level level, double scale) const {
  check_scale(scale, "Encoder::encode_constant");
  if (!std::isfinite(value)) {
    throw std::invalid_argument("Encoder::encode_constant: value is not finite");
  }
  const Parameters& params = context_->params();
  const std::size_t limbs = params.limbs_at(level);
  const long double c = std::round(static_cast<long double>(value) * scale);
  if (std::log2(std::fabs(static_cast<double>(c)) + 1) >= params.log_q(level) - 1) {
    throw std::invalid_argument("Encoder::encode_constant: value * scale too large for Q_" +
                                std::to_string(level.value));
  }
  Plaintext pt = context_->make_plaintext(level, scale);
  std::vector<u64> residues(limbs);
  reduce_coefficient(c, context_->impl(), limbs, residues.data(), 1);
  // A constant polynomial evaluates to the same value at every NTT point.
  for (std::size_t j = 0; j < limbs; ++j) {
    std::fill(pt.limb(j), pt.limb(j) + context_->n(), residues[j]);
  }
  return pt;
}

DecodeResult Encoder::decode(const Plaintext& plaintext) const {
  const Tables& t = *tables_;
  const Parameters& params = context_->params();
  const std::size_t limbs = params.limbs_at(plaintext.level);
  if (plaintext.limbs != limbs || plaintext.n != t.n || plaintext.data.size() != limbs * t.n) {
    throw std::invalid_argument("Encoder::decode: plaintext shape (n " +
                                std::to_string(plaintext.n) + ", limbs " +
                                std::to_string(plaintext.limbs) + ") does not match level " +
                                std::to_string(plaintext.level.value));
  }
  check_scale(plaintext.scale, "Encoder::decode");
  const Context::Impl& impl = context_->impl();
  std::vector<u64> coeff(plaintext.data.begin(), plaintext.data.end());
  for (std::size_t j = 0; j < limbs; ++j) {
    math::ntt_inverse_inplace(coeff.data() + j * t.n, impl.ntt[j]);
  }
  const math::RnsBase& base = impl.level_base(plaintext.level);
  std::vector<long double> real(t.n);
  long double abs_sum = 0;
  for (std::size_t k = 0; k < t.n; ++k) {
    real[k] = base.compose_centered(coeff.data() + k, t.n) / plaintext.scale;
    abs_sum += std::fabs(real[k]);
  }
  DecodeResult result;
  coefficients_to_slots(real, result.values);
  // coeff and real hold Delta m + e coefficient by coefficient: the error e of decryption.
  core::wipe(coeff);
  const long double eps = std::numeric_limits<long double>::epsilon();
  // Composition: 2^-64 relative per coefficient; FFT: ~eps * log2(N) * sum|coefficients|;
  // the final conversion to double: 2^-53 relative per slot.
  double max_abs = 0;
  for (const auto& v : result.values) max_abs = std::max(max_abs, std::abs(v));
  result.error_bound = static_cast<double>(eps * (t.log_half + 2) * abs_sum) +
                       max_abs * std::numeric_limits<double>::epsilon();
  core::wipe(real);
  return result;
}

namespace {
// sigma of the discrete Gaussian and the Hamming weight of a uniform ternary secret.
constexpr double kSigma = 3.2;
double expected_hamming_weight(double n) { return 2.0 * n / 3.0; }
}  // namespace

// CKKS paper (Cheon-Kim-Kim-Song 2017), Lemma 1: fresh public-key encryption noise has
// canonical norm at most 8 sqrt(2) sigma N + 6 sigma sqrt(N) + 16 sigma sqrt(h N).
double fresh_public_key_noise_bound(const Parameters& params, double scale) {
  const double n = static_cast<double>(params.n());
  const double h = expected_hamming_weight(n);
  return (8 * std::sqrt(2.0) * kSigma * n + 6 * kSigma * std::sqrt(n) +
          16 * kSigma * std::sqrt(h * n)) /
         scale;
}

// Symmetric encryption adds one Gaussian polynomial: canonical norm <= 6 sigma sqrt(N).
double fresh_symmetric_noise_bound(const Parameters& params, double scale) {
  const double n = static_cast<double>(params.n());
  return 6 * kSigma * std::sqrt(n) / scale;
}

// Lemma 2 of the same paper: the rounding of a rescale adds at most sqrt(N/3) (3 + 8 sqrt(h)).
double rescale_noise_bound(const Parameters& params, double new_scale) {
  const double n = static_cast<double>(params.n());
  const double h = expected_hamming_weight(n);
  return std::sqrt(n / 3.0) * (3 + 8 * std::sqrt(h)) / new_scale;
}

}  // namespace hec::ckks
