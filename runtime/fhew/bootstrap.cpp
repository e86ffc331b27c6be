// RGSW keys, external products and the AP and GINX blind rotations (see bootstrap.h).
//
// GINX step i, with c = a_i * 2N / q mod 2N (skipped when c = 0):
//   (1) decompose the accumulator (a, b) into 2 d_g signed digit polynomials, forward NTT;
//   (2) P+ = sum_r D_r * BK+_i[r], P- = sum_r D_r * BK-_i[r] (64-bit lazy sums, one reduction);
//   (3) T = (X^c - 1) P+ + (X^-c - 1) P- pointwise, the monomials read from the psi powers;
//   (4) inverse NTT of T, ACC += T.
// AP step (i, k) with digit d != 0: (1), then ACC = sum_r D_r * BK[i][k][d][r], inverse NTT.
#include "fhew/bootstrap.h"

#include <sodium.h>

#include <stdexcept>
#include <string>

#include "fhew/kernels.h"
#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"
#include "math/primes.h"

namespace hec::fhew {

using math::u128;
using math::u64;

namespace {

// out = X^m * (constant polynomial with every coefficient c), negacyclic, m in [0, 2N).
void rotated_constant(std::size_t n, u64 q, u64 c, std::size_t m, u64* out) {
  const u64 neg = c == 0 ? 0 : q - c;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t e = j + m;  // < 3N
    if (e < n) {
      out[e] = c;
    } else if (e < 2 * n) {
      out[e - n] = neg;
    } else {
      out[e - 2 * n] = c;
    }
  }
}

}  // namespace

void pack_rgsw(const std::uint32_t* row_major, std::size_t rows, std::size_t n,
               std::uint32_t* blocked) {
  for (std::size_t jb = 0; jb < n / 8; ++jb) {
    for (std::size_t rt = 0; rt < 2 * rows; ++rt) {
      for (std::size_t l = 0; l < 8; ++l) {
        blocked[(jb * 2 * rows + rt) * 8 + l] = row_major[rt * n + jb * 8 + l];
      }
    }
  }
}

void unpack_rgsw(const std::uint32_t* blocked, std::size_t rows, std::size_t n,
                 std::uint32_t* row_major) {
  for (std::size_t jb = 0; jb < n / 8; ++jb) {
    for (std::size_t rt = 0; rt < 2 * rows; ++rt) {
      for (std::size_t l = 0; l < 8; ++l) {
        row_major[rt * n + jb * 8 + l] = blocked[(jb * 2 * rows + rt) * 8 + l];
      }
    }
  }
}

RingContext::RingContext(const Params& params) : params_(params) {
  params.validate();
  n_ = params.ring_dim;
  q_ = params.ring_modulus;
  modulus_ = math::Modulus(q_);
  // The kernels sum 2 d_g products of residues without reduction and reduce sums below
  // 2^57 (kernels.h).
  const double lazy_bound =
      2.0 * params.gadget_digits * static_cast<double>(q_) * static_cast<double>(q_);
  if (lazy_bound >= 144115188075855872.0 /* 2^57 */ || n_ % 8 != 0) {
    throw std::invalid_argument("fhew::RingContext: Q = " + std::to_string(q_) + " with " +
                                std::to_string(params.gadget_digits) +
                                " gadget digits overflows the 64-bit lazy accumulation");
  }
  ntt_ = std::make_unique<math::NttTables>(n_, modulus_);
  const u64 psi = ntt_->root();
  psi_pow_.resize(2 * n_);
  u64 p = 1;
  for (std::size_t e = 0; e < 2 * n_; ++e) {
    psi_pow_[e] = static_cast<std::uint32_t>(p);
    p = math::mul_mod(p, psi, modulus_);
  }
  odd_.resize(n_);
  const int log_n = ntt_->log_ring_dim();
  for (std::size_t j = 0; j < n_; ++j) {
    odd_[j] = static_cast<std::uint32_t>(2 * math::bit_reverse(j, log_n) + 1);
  }
  barrett_ = ~0ull / q_;
  constants_.q = q_;
  constants_.barrett = barrett_;
  constants_.two32_mod_q = (1ull << 32) % q_;
  constants_.q_inverse = 1.0 / static_cast<double>(q_);
  constants_.n = n_;
  constants_.gadget_log_base = params.gadget_log_base;
  constants_.gadget_digits = params.gadget_digits;
  constants_.gadget_dropped_bits = params.gadget_dropped_bits;
}

RingKey ring_keygen(const RingContext& ring, math::Prng& prng) {
  RingKey k;
  auto values = math::sample_ternary(prng, ring.n());
  k.z.assign(values.begin(), values.end());
  k.z_ntt.resize(ring.n());
  for (std::size_t j = 0; j < ring.n(); ++j) {
    k.z_ntt[j] = values[j] >= 0 ? static_cast<u64>(values[j]) : ring.q() - 1;
  }
  math::ntt_forward_inplace(k.z_ntt.data(), ring.ntt());
  sodium_memzero(values.data(), values.size() * sizeof(values[0]));
  return k;
}

std::size_t blind_rotation_key_count(const Params& p) {
  if (p.method == BlindRotation::kGinx && p.ginx_unroll == 2) {
    return 3 * static_cast<std::size_t>(p.lwe_dim / 2);
  }
  if (p.method == BlindRotation::kGinx) {
    return (p.lwe_secret == LweSecret::kBinary ? 1 : 2) * static_cast<std::size_t>(p.lwe_dim);
  }
  return static_cast<std::size_t>(p.lwe_dim) * p.ap_digits * (p.ap_base - 1);
}

namespace {

// The "a" halves of RGSW ciphertext c: uniform residues in evaluation form from stream c.
void expand_a_halves(const RingContext& ring, const math::Seed& seed, std::size_t c,
                     std::uint32_t* rgsw) {
  const std::size_t n = ring.n(), rows = 2 * ring.params().gadget_digits;
  const std::uint32_t q = static_cast<std::uint32_t>(ring.q());
  const std::uint32_t mask = (q & (q - 1)) == 0 ? q - 1 : (~0u >> __builtin_clz(q));
  math::Prng stream(seed, c);
  // Rejection sampling on 32-bit words masked to the bit length of Q, drawn in bulk.
  std::uint32_t buffer[256];
  std::size_t used = 256;
  for (std::size_t r = 0; r < rows; ++r) {
    std::uint32_t* a = rgsw + (r * 2) * n;
    for (std::size_t j = 0; j < n;) {
      if (used == 256) {
        stream.fill(buffer, sizeof(buffer));
        used = 0;
      }
      const std::uint32_t v = buffer[used++] & mask;
      if (v < q) a[j++] = v;
    }
  }
}

// a * b mod Q for a, b < Q < 2^31 with m = floor((2^64 - 1) / Q): the Barrett quotient of
// the 62-bit product is at most one too small.
inline u64 mul_small(u64 a, u64 b, u64 q, u64 m) {
  const u64 x = a * b;
  const u64 r = x - static_cast<u64>((static_cast<math::u128>(x) * m) >> 64) * q;
  return r >= q ? r - q : r;
}

// Monomial exponent (in [0, 2N)) of RGSW ciphertext c of the key, or -1 for the message 0.
long message_exponent(const Params& p, const TernaryKey& s, std::size_t c) {
  const long two_n = 2 * static_cast<long>(p.ring_dim);
  if (p.method == BlindRotation::kGinx && p.ginx_unroll == 2) {
    // Keys 3i, 3i + 1, 3i + 2: s_a s_b, s_a (1 - s_b), (1 - s_a) s_b of the pair (2i, 2i + 1).
    const int sa = s[2 * (c / 3)], sb = s[2 * (c / 3) + 1];
    const int bit = c % 3 == 0 ? sa * sb : c % 3 == 1 ? sa * (1 - sb) : (1 - sa) * sb;
    return bit == 1 ? 0 : -1;
  }
  if (p.method == BlindRotation::kGinx && p.lwe_secret == LweSecret::kBinary) {
    return s[c] == 1 ? 0 : -1;
  }
  if (p.method == BlindRotation::kGinx) {
    const int si = s[c / 2];
    const bool plus = (c % 2) == 0;
    return (plus ? si == 1 : si == -1) ? 0 : -1;
  }
  const std::size_t per_i = static_cast<std::size_t>(p.ap_digits) * (p.ap_base - 1);
  const std::size_t i = c / per_i, rest = c % per_i;
  const std::size_t k = rest / (p.ap_base - 1), v = rest % (p.ap_base - 1) + 1;
  long power = 1;
  for (std::size_t t = 0; t < k; ++t) power *= p.ap_base;
  const long scale = two_n / p.lwe_modulus;
  long e = (static_cast<long>(v) * power % two_n) * s[i] * scale % two_n;
  if (e < 0) e += two_n;
  return e;
}

}  // namespace

BlindRotationKey blind_rotation_keygen(const RingContext& ring, const RingKey& key,
                                       const TernaryKey& lwe_key) {
  const Params& p = ring.params();
  if (lwe_key.size() != p.lwe_dim) {
    throw std::invalid_argument("blind_rotation_keygen: LWE key dimension " +
                                std::to_string(lwe_key.size()) +
                                " != n = " + std::to_string(p.lwe_dim));
  }
  const std::size_t n = ring.n(), dg = p.gadget_digits, rows = 2 * dg;
  const u64 q = ring.q();
  BlindRotationKey bk;
  bk.method = p.method;
  bk.seed = math::Prng::random_seed();
  const std::size_t count = blind_rotation_key_count(p);
  bk.rgsw = RgswArray(count, rows, n);
  math::parallel_for(count, [&](std::size_t c) {
    math::Prng prng;  // OS-seeded: the errors are secret
    std::vector<std::uint32_t> row_major(rows * 2 * n);
    std::uint32_t* ct = row_major.data();
    expand_a_halves(ring, bk.seed, c, ct);
    const long e = message_exponent(p, lwe_key, c);
    const auto errors = math::sample_gaussian(prng, rows * n, p.sigma);
    std::vector<u64> err(n);
    for (std::size_t r = 0; r < rows; ++r) {
      std::uint32_t* a = ct + (r * 2) * n;
      std::uint32_t* b = ct + (r * 2 + 1) * n;
      for (std::size_t j = 0; j < n; ++j) {
        const std::int64_t v = errors[r * n + j];
        err[j] = v >= 0 ? static_cast<u64>(v) : q - static_cast<u64>(-v);
      }
      math::ntt_forward_inplace(err.data(), ring.ntt());
      // Message mu * Bg^l: rows l < d_g carry it in the a half, rows d_g + l in the b half.
      // The a half must stay the seed's uniform a', so rows l < d_g are encrypted as
      // b = (a' - mu Bg^l) z + e, i.e. (a + mu Bg^l, a z + e) with a = a' - mu Bg^l uniform.
      const u64 gadget =
          math::pow_mod(2, p.gadget_dropped_bits + static_cast<u64>(p.gadget_log_base) * (r % dg),
                        ring.modulus());
      for (std::size_t j = 0; j < n; ++j) {
        u64 msg = 0;
        if (e >= 0) {
          const u64 mono =
              ring.psi_powers()[(static_cast<u64>(e) * ring.odd_exponents()[j]) & (2 * n - 1)];
          msg = mul_small(mono, gadget, q, ring.barrett());
        }
        if (r < dg) {
          const u64 a_minus = math::sub_mod(a[j], msg, q);
          const u64 az = mul_small(a_minus, key.z_ntt[j], q, ring.barrett());
          b[j] = static_cast<std::uint32_t>(math::add_mod(az, err[j], q));
        } else {
          const u64 az = mul_small(a[j], key.z_ntt[j], q, ring.barrett());
          b[j] = static_cast<std::uint32_t>(math::add_mod(math::add_mod(az, err[j], q), msg, q));
        }
      }
    }
    pack_rgsw(row_major.data(), rows, n, bk.rgsw.at(c));
  });
  return bk;
}

std::vector<std::uint32_t> blind_rotation_key_b_halves(const RingContext& ring,
                                                       const BlindRotationKey& key) {
  const std::size_t n = ring.n(), rows = key.rgsw.rows();
  std::vector<std::uint32_t> out(key.rgsw.count() * rows * n);
  std::vector<std::uint32_t> row_major(rows * 2 * n);
  for (std::size_t c = 0; c < key.rgsw.count(); ++c) {
    unpack_rgsw(key.rgsw.at(c), rows, n, row_major.data());
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint32_t* b = row_major.data() + (r * 2 + 1) * n;
      std::copy(b, b + n, out.begin() + (c * rows + r) * n);
    }
  }
  return out;
}

BlindRotationKey blind_rotation_key_from_seed(const RingContext& ring, BlindRotation method,
                                              const math::Seed& seed,
                                              const std::vector<std::uint32_t>& b_halves) {
  const Params& p = ring.params();
  if (method != p.method) {
    throw std::invalid_argument(std::string("blind_rotation_key_from_seed: key method ") +
                                blind_rotation_name(method) + " != parameter method " +
                                blind_rotation_name(p.method));
  }
  const std::size_t n = ring.n(), rows = 2 * p.gadget_digits;
  const std::size_t count = blind_rotation_key_count(p);
  if (b_halves.size() != count * rows * n) {
    throw std::invalid_argument("blind_rotation_key_from_seed: " + std::to_string(b_halves.size()) +
                                " words, expected " + std::to_string(count * rows * n));
  }
  BlindRotationKey bk;
  bk.method = method;
  bk.seed = seed;
  bk.rgsw = RgswArray(count, rows, n);
  math::parallel_for(count, [&](std::size_t c) {
    std::vector<std::uint32_t> row_major(rows * 2 * n);
    std::uint32_t* ct = row_major.data();
    expand_a_halves(ring, seed, c, ct);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint32_t* src = b_halves.data() + (c * rows + r) * n;
      for (std::size_t j = 0; j < n; ++j) {
        if (src[j] >= ring.q()) {
          throw std::invalid_argument("blind_rotation_key_from_seed: residue " +
                                      std::to_string(src[j]) +
                                      " >= Q = " + std::to_string(ring.q()));
        }
      }
      std::copy(src, src + n, ct + (r * 2 + 1) * n);
    }
    pack_rgsw(row_major.data(), rows, n, bk.rgsw.at(c));
  });
  return bk;
}

Workspace::Workspace(const RingContext& ring)
    : acc_a(ring.n()),
      acc_b(ring.n()),
      digits(2 * ring.params().gadget_digits * ring.n()),
      prod(6 * ring.n()) {}

namespace {

// Step (1): signed base-2^b digits of the centred accumulator, then forward NTTs.
void decompose_to_ntt(const RingContext& ring, Workspace& ws) {
  const std::size_t n = ring.n(), rows = 2 * ring.params().gadget_digits;
  kernels::decompose(ring.constants(), ws.acc_a.data(), ws.acc_b.data(), ws.digits.data());
  for (std::size_t r = 0; r < rows; ++r) {
    math::ntt_forward_inplace(ws.digits.data() + r * n, ring.ntt());
  }
}

// ACC += INTT(pa), INTT(pb): the step's product back in coefficients, added to the accumulator.
void add_inverse_to_accumulator(const RingContext& ring, u64* pa, u64* pb, Workspace& ws) {
  const std::size_t n = ring.n();
  const u64 q = ring.q();
  math::ntt_inverse_inplace(pa, ring.ntt());
  math::ntt_inverse_inplace(pb, ring.ntt());
  if (math::active_kernel_path() == math::KernelPath::kAvx512Ifma) {
    math::detail::add_avx512(ws.acc_a.data(), pa, n, q);
    math::detail::add_avx512(ws.acc_b.data(), pb, n, q);
    return;
  }
  for (std::size_t j = 0; j < n; ++j) {
    ws.acc_a[j] = math::add_mod(ws.acc_a[j], pa[j], q);
    ws.acc_b[j] = math::add_mod(ws.acc_b[j], pb[j], q);
  }
}

void ginx_step(const RingContext& ring, const BlindRotationKey& key, std::size_t i, std::size_t c,
               Workspace& ws) {
  const std::size_t n = ring.n();
  decompose_to_ntt(ring, ws);
  // Step (2): P+ and P- (the pair of keys of index i) into prod = (pa, pb, ma, mb).
  const std::uint32_t* keys[2] = {key.rgsw.at(2 * i), key.rgsw.at(2 * i + 1)};
  kernels::mac(ring.constants(), ws.digits.data(), keys, 2, ws.prod.data());
  u64* pa = ws.prod.data();
  u64* pb = pa + n;
  // Step (3).
  kernels::monomial_combine(ring.constants(), ring.psi_powers().data(), ring.odd_exponents().data(),
                            c, pa, pb, pb + n, pb + 2 * n);
  // Step (4).
  add_inverse_to_accumulator(ring, pa, pb, ws);
}

// Binary secret: ACC += (X^c - 1) (ACC (x) RGSW(s_i)). The product is brought back to
// coefficients and multiplied by X^c - 1 there (a negacyclic shift and a subtraction),
// which needs no table and no modular multiplication.
void ginx_binary_step(const RingContext& ring, const std::uint32_t* rgsw, std::size_t c,
                      Workspace& ws) {
  const std::size_t n = ring.n();
  decompose_to_ntt(ring, ws);
  kernels::mac(ring.constants(), ws.digits.data(), &rgsw, 1, ws.prod.data());
  u64* pa = ws.prod.data();
  u64* pb = pa + n;
  math::ntt_inverse_inplace(pa, ring.ntt());
  math::ntt_inverse_inplace(pb, ring.ntt());
  kernels::add_shifted_difference(ring.constants(), c, pa, ws.acc_a.data());
  kernels::add_shifted_difference(ring.constants(), c, pb, ws.acc_b.data());
}

// Binary secret, coefficients in pairs: X^(c1 s1 + c2 s2) - 1 = s1 s2 (X^(c1+c2) - 1) +
// s1 (1 - s2) (X^c1 - 1) + (1 - s1) s2 (X^c2 - 1), so ACC += sum_k (X^(e_k) - 1) (ACC (x) BK_k)
// over the pair's three keys: one decomposition, 2 d_g forward and 2 inverse NTTs per pair.
// The monomial factors are applied in the evaluation domain, where the three products are.
void ginx_pair_step(const RingContext& ring, const BlindRotationKey& key, std::size_t pair,
                    std::size_t c1, std::size_t c2, Workspace& ws) {
  const std::size_t n = ring.n(), two_n = 2 * n;
  decompose_to_ntt(ring, ws);
  const std::uint32_t* keys[3] = {key.rgsw.at(3 * pair), key.rgsw.at(3 * pair + 1),
                                  key.rgsw.at(3 * pair + 2)};
  const std::size_t exponents[3] = {(c1 + c2) % two_n, c1, c2};
  kernels::mac3_monomial_sum(ring.constants(), ws.digits.data(), keys, ring.psi_powers().data(),
                             ring.odd_exponents().data(), exponents, ws.prod.data());
  u64* pa = ws.prod.data();
  u64* pb = pa + n;
  add_inverse_to_accumulator(ring, pa, pb, ws);
}

void ap_step(const RingContext& ring, const std::uint32_t* rgsw, Workspace& ws) {
  decompose_to_ntt(ring, ws);
  kernels::mac(ring.constants(), ws.digits.data(), &rgsw, 1, ws.prod.data());
  const std::size_t n = ring.n();
  std::copy(ws.prod.begin(), ws.prod.begin() + n, ws.acc_a.begin());
  std::copy(ws.prod.begin() + n, ws.prod.begin() + 2 * n, ws.acc_b.begin());
  math::ntt_inverse_inplace(ws.acc_a.data(), ring.ntt());
  math::ntt_inverse_inplace(ws.acc_b.data(), ring.ntt());
}

}  // namespace

void blind_rotate(const RingContext& ring, const BlindRotationKey& key, const LweCiphertext& ct,
                  std::uint64_t tv_value, Workspace& ws) {
  const Params& p = ring.params();
  if (ct.modulus != p.lwe_modulus || ct.a.size() != p.lwe_dim) {
    throw std::invalid_argument(
        "blind_rotate: ciphertext (dimension " + std::to_string(ct.a.size()) + ", modulus " +
        std::to_string(ct.modulus) + ") does not match parameters '" + p.name +
        "' (n = " + std::to_string(p.lwe_dim) + ", q = " + std::to_string(p.lwe_modulus) + ")");
  }
  const std::size_t n = ring.n(), two_n = 2 * n;
  const std::size_t scale = two_n / p.lwe_modulus;
  // ACC = (0, X^{-b 2N/q} tv).
  std::fill(ws.acc_a.begin(), ws.acc_a.end(), 0);
  const std::size_t kb = (static_cast<std::size_t>(ct.b) * scale) % two_n;
  rotated_constant(n, ring.q(), tv_value % ring.q(), (two_n - kb) % two_n, ws.acc_b.data());
  if (key.method == BlindRotation::kGinx && p.ginx_unroll == 2) {
    for (std::size_t i = 0; i + 1 < p.lwe_dim; i += 2) {
      const std::size_t c1 = (static_cast<std::size_t>(ct.a[i]) * scale) % two_n;
      const std::size_t c2 = (static_cast<std::size_t>(ct.a[i + 1]) * scale) % two_n;
      if (c1 != 0 || c2 != 0) ginx_pair_step(ring, key, i / 2, c1, c2, ws);
    }
  } else if (key.method == BlindRotation::kGinx && p.lwe_secret == LweSecret::kBinary) {
    for (std::size_t i = 0; i < p.lwe_dim; ++i) {
      const std::size_t c = (static_cast<std::size_t>(ct.a[i]) * scale) % two_n;
      if (c != 0) ginx_binary_step(ring, key.rgsw.at(i), c, ws);
    }
  } else if (key.method == BlindRotation::kGinx) {
    for (std::size_t i = 0; i < p.lwe_dim; ++i) {
      const std::size_t c = (static_cast<std::size_t>(ct.a[i]) * scale) % two_n;
      if (c != 0) ginx_step(ring, key, i, c, ws);
    }
  } else {
    const std::size_t per_i = static_cast<std::size_t>(p.ap_digits) * (p.ap_base - 1);
    for (std::size_t i = 0; i < p.lwe_dim; ++i) {
      std::uint32_t x = ct.a[i];
      for (std::size_t k = 0; k < p.ap_digits; ++k) {
        const std::uint32_t d = x % p.ap_base;
        x /= p.ap_base;
        if (d == 0) continue;
        ap_step(ring, key.rgsw.at(i * per_i + k * (p.ap_base - 1) + d - 1), ws);
      }
    }
  }
}

LweCiphertext sample_extract(const RingContext& ring, const Workspace& ws) {
  const std::size_t n = ring.n();
  const u64 q = ring.q();
  LweCiphertext out;
  out.modulus = static_cast<std::uint32_t>(q);
  out.a.resize(n);
  out.a[0] = static_cast<std::uint32_t>(ws.acc_a[0]);
  for (std::size_t j = 1; j < n; ++j) {
    const u64 v = ws.acc_a[n - j];
    out.a[j] = static_cast<std::uint32_t>(v == 0 ? 0 : q - v);
  }
  out.b = static_cast<std::uint32_t>(ws.acc_b[0]);
  return out;
}

std::vector<std::int64_t> accumulator_phase(const RingContext& ring, const RingKey& key,
                                            const Workspace& ws) {
  const std::size_t n = ring.n();
  const u64 q = ring.q();
  std::vector<u64> az(ws.acc_a.begin(), ws.acc_a.end());
  math::ntt_forward_inplace(az.data(), ring.ntt());
  for (std::size_t j = 0; j < n; ++j) az[j] = math::mul_mod(az[j], key.z_ntt[j], ring.modulus());
  math::ntt_inverse_inplace(az.data(), ring.ntt());
  std::vector<std::int64_t> out(n);
  for (std::size_t j = 0; j < n; ++j) {
    const u64 v = math::sub_mod(ws.acc_b[j], az[j], q);
    out[j] = v > q / 2 ? static_cast<std::int64_t>(v) - static_cast<std::int64_t>(q)
                       : static_cast<std::int64_t>(v);
  }
  return out;
}

}  // namespace hec::fhew
