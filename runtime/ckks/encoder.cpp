// CKKS canonical-embedding encoder (see encoder.h). The special FFT: with w_k = m_k +
// i*m_{k+N/2} (k < N/2), the slot values are z_j = sum_k w_k zeta^{5^j k}, because
// zeta^{5^j N/2} = i^{5^j} = i. Writing 5^j = 1 + 4t (mod 2N) turns this into a length-N/2
// DFT of the twisted vector (w_k zeta^k) at index t: z_j = DFT(w .* zeta^k)[t(j)] with
// omega = zeta^4. Encoding runs the same steps backwards. All in long double complex.
#include "ckks/encoder.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "math/ntt.h"

namespace hec::ckks {

using cld = std::complex<long double>;

struct Encoder::Tables {
  std::size_t n = 0;     // ring dimension N
  std::size_t half = 0;  // N/2 slots, the DFT length
  int log_half = 0;
  std::vector<cld> zeta;               // zeta^k, k < N (zeta = exp(i pi / N))
  std::vector<std::size_t> slot_to_t;  // t(j): 5^j = 1 + 4 t(j) mod 2N
  std::vector<std::size_t> bitrev;     // bit reversal over log_half bits

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
                          double* error_bound) const {
  const Tables& t = *tables_;
  check_scale(scale, "Encoder::encode");
  if (values.size() > t.half) {
    throw std::invalid_argument("Encoder::encode: " + std::to_string(values.size()) +
                                " values exceed the " + std::to_string(t.half) + " slots");
  }
  const Parameters& params = context_->params();
  const std::size_t limbs = params.limbs_at(level);
  double max_abs = 0;
  for (const auto& v : values) {
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) {
      throw std::invalid_argument("Encoder::encode: a value is not finite");
    }
    max_abs = std::max(max_abs, std::abs(v));
  }
  std::vector<long double> coeffs;
  slots_to_coefficients(values, coeffs);
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
  for (std::size_t k = 0; k < t.n; ++k) {
    const long double scaled = coeffs[k] * static_cast<long double>(scale);
    const long double c = std::round(scaled);
    rounding += std::fabs(c - scaled);
    reduce_coefficient(c, impl, limbs, pt.data.data() + k, t.n);
  }
  for (std::size_t j = 0; j < limbs; ++j) math::ntt_forward_inplace(pt.limb(j), impl.ntt[j]);
  if (error_bound) {
    // Rounding: |sum_k delta_k zeta^{..}| <= sum |delta_k|. Floating point: long double FFT
    // relative error ~ 2^-64 * log2(N) per slot, plus the 2^-64 relative rounding of the
    // scaled coefficients themselves.
    const long double eps = std::numeric_limits<long double>::epsilon();
    const double fp =
        static_cast<double>(4 * eps * (t.log_half + 2) * max_abs * static_cast<long double>(t.n));
    *error_bound = static_cast<double>(rounding / scale) + fp;
  }
  return pt;
}

Plaintext Encoder::encode(std::span<const double> values, Level level, double scale,
                          double* error_bound) const {
  std::vector<std::complex<double>> z(values.begin(), values.end());
  return encode(z, level, scale, error_bound);
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
  const long double eps = std::numeric_limits<long double>::epsilon();
  // Composition: 2^-64 relative per coefficient; FFT: ~eps * log2(N) * sum|coefficients|;
  // the final conversion to double: 2^-53 relative per slot.
  double max_abs = 0;
  for (const auto& v : result.values) max_abs = std::max(max_abs, std::abs(v));
  result.error_bound = static_cast<double>(eps * (t.log_half + 2) * abs_sum) +
                       max_abs * std::numeric_limits<double>::epsilon();
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
