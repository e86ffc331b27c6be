// The STD128 and test parameter sets, their validation and canonical digest, and the noise
// analysis of one bootstrapped gate (Micciancio-Polyakov, "Bootstrapping in FHEW-like
// cryptosystems", WAHC 2021, §3-4: external-product, key-switching and modulus-switching
// variances). The numbers are explained in runtime/fhew/README.md.
#include "fhew/params.h"

#include <sodium.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "math/primes.h"

namespace hec::fhew {

const char* blind_rotation_name(BlindRotation method) {
  switch (method) {
    case BlindRotation::kAp:
      return "AP";
    case BlindRotation::kGinx:
      return "GINX";
  }
  return "unknown";
}

const char* lwe_secret_name(LweSecret secret) {
  switch (secret) {
    case LweSecret::kTernary:
      return "ternary";
    case LweSecret::kBinary:
      return "binary";
  }
  return "unknown";
}

namespace {

// Largest prime Q < 2^27 with Q = 1 mod 2N: the HE Standard bound for N = 1024, ternary
// secret, 128-bit classical security is log2 Q <= 27.
std::uint64_t ring_prime_27() { return math::ntt_primes(27, 1, 1024).front(); }

bool is_power_of_two(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

Params Params::std128(BlindRotation method) {
  Params p;
  p.method = method;
  p.ring_dim = 1024;
  p.ring_modulus = ring_prime_27();
  p.sigma = 3.19;
  if (method == BlindRotation::kGinx) {
    // Binary LWE secret, one RGSW key per coefficient; n = 680 at q_ks = 2^16 for 128 bits
    // (README.md, "Security": the lattice estimator's best attack 2^131.6); two gadget digits
    // of 2^8 above 11 rounded-away bits.
    p.name = "STD128_GINX";
    p.lwe_dim = 680;
    p.lwe_modulus = 2048;
    p.lwe_secret = LweSecret::kBinary;
    p.ginx_unroll = 2;
    p.ks_modulus = 1u << 16;
    p.ks_base = 1u << 4;
    p.ks_digits = 4;
    p.gadget_log_base = 8;
    p.gadget_digits = 2;
    p.gadget_dropped_bits = 11;
  } else {
    p.name = "STD128_AP";
    p.lwe_dim = 559;
    p.lwe_modulus = 1024;
    p.lwe_secret = LweSecret::kTernary;
    p.ks_modulus = 1u << 14;
    p.ks_base = 1u << 7;
    p.ks_digits = 2;
    p.gadget_log_base = 7;
    p.gadget_digits = 3;
    p.gadget_dropped_bits = 6;
    p.ap_base = 32;
    p.ap_digits = 2;
  }
  p.validate();
  return p;
}

Params Params::toy_insecure(BlindRotation method) {
  Params p = std128(method);
  p.lwe_dim = 32;
  p.insecure = true;
  p.name = std::string("TOY_INSECURE_") + blind_rotation_name(method) + "_TESTS_ONLY";
  p.validate();
  return p;
}

void Params::validate() const {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("fhew::Params '" + name + "': " + what);
  };
  if (ring_dim < 16 || !is_power_of_two(ring_dim) || ring_dim > 4096) {
    fail("ring_dim N = " + std::to_string(ring_dim) + " must be a power of two in [16, 4096]");
  }
  if (ring_modulus >= (1ull << 31) || ring_modulus % (2 * ring_dim) != 1 ||
      !math::is_prime(ring_modulus)) {
    fail("ring_modulus Q = " + std::to_string(ring_modulus) +
         " must be a prime below 2^31 with Q = 1 mod 2N = " + std::to_string(2 * ring_dim));
  }
  if (lwe_dim == 0 || lwe_dim > 4096) {
    fail("lwe_dim n = " + std::to_string(lwe_dim) + " must be in [1, 4096]");
  }
  if (!is_power_of_two(lwe_modulus) || lwe_modulus < 16 || (2 * ring_dim) % lwe_modulus != 0) {
    fail("lwe_modulus q = " + std::to_string(lwe_modulus) +
         " must be a power of two >= 16 dividing 2N = " + std::to_string(2 * ring_dim));
  }
  if (!is_power_of_two(ks_modulus) || ks_modulus > (1u << 16) || ks_modulus < lwe_modulus) {
    fail("ks_modulus q_ks = " + std::to_string(ks_modulus) +
         " must be a power of two in [q, 2^16]");
  }
  std::uint64_t span = 1;
  for (std::uint32_t i = 0; i < ks_digits; ++i) span *= ks_base;
  if (ks_base < 2 || ks_digits == 0 || span < ks_modulus) {
    fail("ks_base^ks_digits = " + std::to_string(ks_base) + "^" + std::to_string(ks_digits) +
         " must cover q_ks = " + std::to_string(ks_modulus));
  }
  const std::uint32_t gadget_bits = gadget_dropped_bits + gadget_log_base * gadget_digits;
  if (gadget_log_base < 2 || gadget_log_base > 16 || gadget_digits == 0 ||
      gadget_dropped_bits > 20 || gadget_bits > 40 || (1ull << gadget_bits) < ring_modulus) {
    fail("gadget 2^" + std::to_string(gadget_dropped_bits) + " * (2^" +
         std::to_string(gadget_log_base) + ")^" + std::to_string(gadget_digits) +
         " must cover Q = " + std::to_string(ring_modulus) +
         " (log base in [2, 16], at most 20 dropped bits)");
  }
  if (method == BlindRotation::kAp) {
    std::uint64_t ap_span = 1;
    for (std::uint32_t i = 0; i < ap_digits; ++i) ap_span *= ap_base;
    if (ap_base < 2 || ap_digits == 0 || ap_span < lwe_modulus) {
      fail("AP digits " + std::to_string(ap_base) + "^" + std::to_string(ap_digits) +
           " must cover q = " + std::to_string(lwe_modulus));
    }
  } else if (method != BlindRotation::kGinx) {
    fail("unknown blind-rotation method " + std::to_string(static_cast<int>(method)));
  }
  if (lwe_secret != LweSecret::kTernary && lwe_secret != LweSecret::kBinary) {
    fail("unknown LWE secret distribution " + std::to_string(static_cast<int>(lwe_secret)));
  }
  if (ginx_unroll != 1 && ginx_unroll != 2) {
    fail("ginx_unroll = " + std::to_string(ginx_unroll) + " must be 1 or 2");
  }
  if (ginx_unroll == 2 &&
      (method != BlindRotation::kGinx || lwe_secret != LweSecret::kBinary || lwe_dim % 2 != 0)) {
    fail("ginx_unroll = 2 needs GINX, a binary secret and an even n (n = " +
         std::to_string(lwe_dim) + ")");
  }
  if (!(sigma > 0.5 && sigma < 64)) fail("sigma = " + std::to_string(sigma) + " out of range");
}

std::array<std::uint8_t, 32> Params::digest() const {
  std::vector<std::uint8_t> bytes;
  auto put = [&](std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  const char tag[] = "hec.fhew.params.v2";
  bytes.insert(bytes.end(), tag, tag + sizeof(tag) - 1);
  put(static_cast<std::uint8_t>(method), 1);
  put(lwe_dim, 4);
  put(lwe_modulus, 4);
  put(static_cast<std::uint8_t>(lwe_secret), 1);
  put(ginx_unroll, 1);
  put(ks_modulus, 4);
  put(ks_base, 4);
  put(ks_digits, 4);
  put(ring_dim, 4);
  put(ring_modulus, 8);
  put(gadget_log_base, 4);
  put(gadget_digits, 4);
  put(gadget_dropped_bits, 4);
  put(ap_base, 4);
  put(ap_digits, 4);
  std::uint64_t sigma_bits;
  static_assert(sizeof(sigma_bits) == sizeof(sigma));
  __builtin_memcpy(&sigma_bits, &sigma, sizeof(sigma));
  put(sigma_bits, 8);
  put(insecure ? 1 : 0, 1);
  std::array<std::uint8_t, 32> out{};
  if (sodium_init() < 0) throw std::runtime_error("fhew::Params::digest: sodium_init failed");
  crypto_generichash(out.data(), out.size(), bytes.data(), bytes.size(), nullptr, 0);
  return out;
}

NoiseModel noise_model(const Params& p) {
  const double N = p.ring_dim, Q = static_cast<double>(p.ring_modulus), n = p.lwe_dim;
  const double q = p.lwe_modulus, qks = p.ks_modulus, s2 = p.sigma * p.sigma;
  // E[d^2] of one signed gadget digit: the lower digits are uniform on [-B/2, B/2), so
  // (B^2 + 2) / 12; the top digit covers what is left of the centred range (-Q/2, Q/2].
  const double bg = std::ldexp(1.0, static_cast<int>(p.gadget_log_base));
  const double top =
      Q / std::ldexp(1.0, static_cast<int>(p.gadget_dropped_bits +
                                           p.gadget_log_base * (p.gadget_digits - 1)));
  // The rounded-away low part eps is uniform on [-2^(k-1), 2^(k-1)): E[eps^2] = (4^k + 2)/12
  // (0 for exact decomposition). It enters as m * (eps_b - eps_a z): (1 + 2N/3) E[eps^2]
  // per product whose RGSW message m is a monomial.
  const double drop = std::ldexp(1.0, static_cast<int>(p.gadget_dropped_bits));
  const double eps_sq = p.gadget_dropped_bits == 0 ? 0.0 : (drop * drop + 2) / 12;
  const double approx = (1 + 2 * N / 3) * eps_sq;
  const double digit_sq = (p.gadget_digits - 1) * (bg * bg + 2) / 12 + (top * top + 2) / 12;
  // One external product ACC (x) RGSW: 2 polynomials (a and b) decomposed, each digit
  // polynomial times an RGSW error polynomial of variance sigma^2 per coefficient.
  const double ext_product = 2 * digit_sq * N * s2;
  // E[s_i^2] of the LWE secret: 2/3 ternary, 1/2 binary.
  const double lwe_s2 = p.lwe_secret == LweSecret::kBinary ? 0.5 : 2.0 / 3;
  double br = 0, br_approx = 0;
  if (p.method == BlindRotation::kGinx && p.ginx_unroll == 2) {
    // Per pair ACC += sum_k (X^(e_k) - 1) (ACC (x) BK_k) over three keys: each key's error
    // enters doubled; the approximation error once (the key whose message is 1), doubled,
    // unless s_i = s_j = 0 (probability 1/4).
    br_approx = (n / 2) * (1 - 1 / (q * q)) * 0.75 * 2 * approx;
    br = (n / 2) * (1 - 1 / (q * q)) * 3 * 2 * ext_product + br_approx;
  } else if (p.method == BlindRotation::kGinx && p.lwe_secret == LweSecret::kBinary) {
    // ACC += (X^c - 1) (ACC (x) BK_i), one key per coefficient: the key error enters once,
    // doubled by (X^c - 1); the approximation error when s_i = 1 (probability 1/2), doubled.
    br_approx = n * (1 - 1 / q) * 0.5 * 2 * approx;
    br = n * (1 - 1 / q) * 2 * ext_product + br_approx;
  } else if (p.method == BlindRotation::kGinx) {
    // ACC += ((X^c - 1) BK+ + (X^-c - 1) BK-) (x) ACC: the key error enters through both
    // keys, each multiplied by a (X^c - 1), which doubles its variance; skipped when c = 0.
    // The approximation error enters once (the key whose message is 1), doubled by
    // (X^+-c - 1), when s_i != 0 (probability 2/3).
    br_approx = n * (1 - 1 / q) * (2.0 / 3) * 2 * approx;
    br = n * (1 - 1 / q) * 4 * ext_product + br_approx;
  } else {
    // One external product per nonzero digit of each a_i (digits uniform on [0, B_r)); every
    // AP key encrypts a monomial, so each product carries the approximation error.
    const double products = n * p.ap_digits * (1 - 1.0 / p.ap_base);
    br_approx = products * approx;
    br = products * ext_product + br_approx;
  }
  // Rounding x -> round(x * q' / q) adds a uniform error in [-1/2, 1/2) to each of the
  // coefficients, weighted by the secret: (1 + dim E[s_i^2]) / 12 (ring secret ternary).
  const double ms_ring = br * (qks / Q) * (qks / Q) + (1 + 2 * N / 3) / 12;
  const double ks = N * p.ks_digits * s2;  // one key-switching-key error per digit
  const double boot = (ms_ring + ks) * (q / qks) * (q / qks) + (1 + n * lwe_s2) / 12;
  // Public-key encryption (lwe.h, LwePublicKey): at q_ks the phase error is <r, e> + e'' -
  // <e', s> over n rows with r uniform ternary (E[r^2] = 2/3) and the LWE secret s, then
  // rounding q_ks -> q scales it by (q / q_ks)^2 and adds (1 + n E[s^2])/12 like the
  // bootstrap's last step.
  const double pk_at_qks = n * (2.0 / 3) * s2 + s2 + n * lwe_s2 * s2;
  const double pk = pk_at_qks * (q / qks) * (q / qks) + (1 + n * lwe_s2) / 12;
  NoiseModel m{};
  m.fresh_variance = s2;
  m.public_key_variance = pk;
  m.blind_rotation_variance = br;
  m.approximation_variance = br_approx;
  m.after_ring_ms_variance = ms_ring;
  m.key_switch_variance = ks;
  m.bootstrapped_variance = boot;
  // Every gate adds two bootstrapped ciphertexts (XOR/XNOR: 2(c1 + c2) against a margin
  // of q/4, the same ratio); decision margin q/8.
  const double stddev = std::sqrt(2 * boot);
  m.gate_margin_sigmas = (q / 8) / stddev;
  // P(|e| >= t) = erfc(t / sqrt(2)), in log2 (erfc underflows far below 2^-1000 only).
  m.failure_log2 = std::log2(std::erfc(m.gate_margin_sigmas / std::sqrt(2.0)));
  return m;
}

}  // namespace hec::fhew
