// LWE encryption, modulus switching and key switching (see lwe.h).
#include "fhew/lwe.h"

#include <cmath>

#include <stdexcept>
#include <string>

#include "core/wipe.h"
#include "fhew/kernels.h"

namespace hec::fhew {

std::uint32_t lwe_phase(const LweCiphertext& ct, const TernaryKey& s) {
  if (ct.a.size() != s.size()) {
    throw std::invalid_argument("lwe_phase: ciphertext dimension " + std::to_string(ct.a.size()) +
                                " != key dimension " + std::to_string(s.size()));
  }
  const std::uint64_t m = ct.modulus;
  std::uint64_t acc = ct.b;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 1) {
      acc += m - ct.a[i];
    } else if (s[i] == -1) {
      acc += ct.a[i];
    }
    if (acc >= (1ull << 62)) acc %= m;
  }
  return static_cast<std::uint32_t>(acc % m);
}

LweCiphertext lwe_encrypt(math::Prng& prng, const TernaryKey& s, std::uint32_t value,
                          std::uint32_t modulus, double sigma) {
  LweCiphertext ct;
  ct.modulus = modulus;
  ct.a.resize(s.size());
  for (auto& x : ct.a) x = static_cast<std::uint32_t>(prng.uniform_below(modulus));
  const std::int64_t e = math::sample_gaussian(prng, 1, sigma)[0];
  // b = <a, s> + value + e, so that the phase b - <a, s> = value + e.
  ct.b = 0;
  LweCiphertext zero_b = ct;
  const std::uint32_t minus_inner = lwe_phase(zero_b, s);  // -<a, s> mod m
  const std::int64_t m = modulus;
  std::int64_t b = (static_cast<std::int64_t>(value % modulus) + e - minus_inner) % m;
  if (b < 0) b += m;
  ct.b = static_cast<std::uint32_t>(b);
  return ct;
}

void lwe_mod_switch_inplace(LweCiphertext& ct, std::uint32_t to) {
  const std::uint64_t from = ct.modulus;
  auto sw = [&](std::uint32_t x) {
    // round(x * to / from), ties to even (exact in 64 bits). Ties to even keep the rounding
    // error's mean at zero: rounding ties up adds 1/(2k) (k = from / to) to every coefficient,
    // and through a binary secret's n/2 ones a bias of about n/(4k) to the phase (5 at
    // STD128_GINX, where its margin is 256).
    const std::uint64_t num = static_cast<std::uint64_t>(x) * to;
    std::uint64_t r = num / from;
    const std::uint64_t twice_rest = 2 * (num - r * from);
    if (twice_rest > from || (twice_rest == from && (r & 1) != 0)) ++r;
    return static_cast<std::uint32_t>(r % to);
  };
  for (auto& x : ct.a) x = sw(x);
  ct.b = sw(ct.b);
  ct.modulus = to;
}

KeySwitchKey::KeySwitchKey(const TernaryKey& from, const TernaryKey& to, std::uint32_t modulus,
                           std::uint32_t base, std::uint32_t digits, double sigma, math::Prng& prng)
    : from_dim_(static_cast<std::uint32_t>(from.size())),
      to_dim_(static_cast<std::uint32_t>(to.size())),
      modulus_(modulus),
      base_(base),
      digits_(digits) {
  seed_ = math::Prng::random_seed();
  expand_alphas();
  const std::uint32_t mask = modulus_ - 1;
  const std::size_t row = to_dim_ + 1;
  const std::size_t rows = static_cast<std::size_t>(from_dim_) * digits_ * base_;
  const std::vector<std::int64_t> errors = math::sample_gaussian(prng, rows, sigma);
  for (std::uint32_t j = 0; j < from_dim_; ++j) {
    std::uint32_t power = 1;  // base^k mod q_ks
    for (std::uint32_t k = 0; k < digits_; ++k) {
      for (std::uint32_t v = 0; v < base_; ++v) {
        const std::size_t r = (static_cast<std::size_t>(j) * digits_ + k) * base_ + v;
        std::uint16_t* w = table_.data() + r * row;
        // beta = <alpha, s> + v z_j base^k + e mod q_ks (wrap-around in 32 bits, then mask).
        std::uint32_t inner = 0;
        for (std::uint32_t i = 0; i < to_dim_; ++i) {
          inner += static_cast<std::uint32_t>(static_cast<std::int32_t>(to[i]) * w[i]);
        }
        const std::int64_t msg = static_cast<std::int64_t>(v) * from[j] * power;
        w[to_dim_] = static_cast<std::uint16_t>(
            (inner + static_cast<std::uint32_t>(msg) + static_cast<std::uint32_t>(errors[r])) &
            mask);
      }
      power = (power * base_) & mask;
    }
  }
}

void KeySwitchKey::expand_alphas() {
  const std::size_t row = to_dim_ + 1;
  const std::size_t rows = static_cast<std::size_t>(from_dim_) * digits_ * base_;
  table_.assign(rows * row, 0);
  // One ChaCha20 stream per source index j keeps the expansion restartable and parallel.
  const std::uint16_t mask = static_cast<std::uint16_t>(modulus_ - 1);
  std::vector<std::uint16_t> buf(static_cast<std::size_t>(digits_) * base_ * to_dim_);
  for (std::uint32_t j = 0; j < from_dim_; ++j) {
    math::Prng stream(seed_, j);
    stream.fill(buf.data(), buf.size() * sizeof(std::uint16_t));
    for (std::size_t r = 0; r < static_cast<std::size_t>(digits_) * base_; ++r) {
      std::uint16_t* w = table_.data() + (static_cast<std::size_t>(j) * digits_ * base_ + r) * row;
      // q_ks divides 2^16, so the low bits of a uniform 16-bit word are uniform mod q_ks.
      for (std::uint32_t i = 0; i < to_dim_; ++i) w[i] = buf[r * to_dim_ + i] & mask;
    }
  }
}

KeySwitchKey KeySwitchKey::from_seed(std::uint32_t from_dim, std::uint32_t to_dim,
                                     std::uint32_t modulus, std::uint32_t base,
                                     std::uint32_t digits, const math::Seed& seed,
                                     std::vector<std::uint16_t> betas) {
  KeySwitchKey k;
  k.from_dim_ = from_dim;
  k.to_dim_ = to_dim;
  k.modulus_ = modulus;
  k.base_ = base;
  k.digits_ = digits;
  k.seed_ = seed;
  const std::size_t rows = static_cast<std::size_t>(from_dim) * digits * base;
  if (betas.size() != rows) {
    throw std::invalid_argument("KeySwitchKey::from_seed: " + std::to_string(betas.size()) +
                                " betas, expected " + std::to_string(rows));
  }
  k.expand_alphas();
  for (std::size_t r = 0; r < rows; ++r) {
    if (betas[r] >= modulus) {
      throw std::invalid_argument("KeySwitchKey::from_seed: beta " + std::to_string(betas[r]) +
                                  " >= q_ks = " + std::to_string(modulus));
    }
    k.table_[r * (to_dim + 1) + to_dim] = betas[r];
  }
  return k;
}

std::vector<std::uint16_t> KeySwitchKey::betas() const {
  const std::size_t rows = static_cast<std::size_t>(from_dim_) * digits_ * base_;
  std::vector<std::uint16_t> out(rows);
  for (std::size_t r = 0; r < rows; ++r) out[r] = table_[r * (to_dim_ + 1) + to_dim_];
  return out;
}

LweCiphertext KeySwitchKey::apply(const LweCiphertext& ct) const {
  if (ct.modulus != modulus_ || ct.a.size() != from_dim_) {
    throw std::invalid_argument(
        "KeySwitchKey::apply: ciphertext (dimension " + std::to_string(ct.a.size()) + ", modulus " +
        std::to_string(ct.modulus) + ") does not match the key (dimension " +
        std::to_string(from_dim_) + ", modulus " + std::to_string(modulus_) + ")");
  }
  // out = (0, b) - sum_j sum_k KSK[j][k][digit_k(a_j)]; 16-bit arithmetic wraps mod 2^16,
  // a multiple of q_ks, so masking at the end gives the result mod q_ks.
  const std::size_t row = to_dim_ + 1;
  std::vector<std::uint16_t> acc(row, 0);
  acc[to_dim_] = static_cast<std::uint16_t>(ct.b);
  // The table rows of the nonzero digits, then one pass subtracting them.
  std::vector<std::uint32_t> rows;
  rows.reserve(static_cast<std::size_t>(from_dim_) * digits_);
  for (std::uint32_t j = 0; j < from_dim_; ++j) {
    std::uint32_t x = ct.a[j];
    for (std::uint32_t k = 0; k < digits_; ++k) {
      const std::uint32_t v = x % base_;
      x /= base_;
      if (v != 0) rows.push_back((j * digits_ + k) * base_ + v);
    }
  }
  kernels::subtract_rows_u16(acc.data(), table_.data(), row, rows.data(), rows.size());
  LweCiphertext out;
  out.modulus = modulus_;
  out.a.resize(to_dim_);
  const std::uint16_t mask = static_cast<std::uint16_t>(modulus_ - 1);
  // acc holds (-sum alpha, b - sum beta); a_out = -sum alpha.
  for (std::uint32_t i = 0; i < to_dim_; ++i) out.a[i] = acc[i] & mask;
  out.b = acc[to_dim_] & mask;
  return out;
}

LwePublicKey::LwePublicKey(const TernaryKey& s, std::uint32_t modulus, std::uint32_t rows,
                           double sigma, math::Prng& prng)
    : dim_(static_cast<std::uint32_t>(s.size())), rows_(rows), modulus_(modulus) {
  if (modulus_ < 2 || modulus_ > (1u << 16) || (modulus_ & (modulus_ - 1)) != 0 || rows_ == 0) {
    throw std::invalid_argument("LwePublicKey: modulus " + std::to_string(modulus) +
                                " must be a power of two <= 2^16 and rows " + std::to_string(rows) +
                                " positive");
  }
  seed_ = math::Prng::random_seed();
  expand_a();
  const std::uint32_t mask = modulus_ - 1;
  const std::size_t row = dim_ + 1;
  std::vector<std::int64_t> errors = math::sample_gaussian(prng, rows_, sigma);
  for (std::uint32_t j = 0; j < rows_; ++j) {
    std::uint16_t* w = table_.data() + static_cast<std::size_t>(j) * row;
    // beta_j = <A_j, s> + e_j mod q (wrap-around in 32 bits, then mask: q divides 2^32).
    std::uint32_t inner = 0;
    for (std::uint32_t i = 0; i < dim_; ++i) {
      inner += static_cast<std::uint32_t>(static_cast<std::int32_t>(s[i]) * w[i]);
    }
    w[dim_] = static_cast<std::uint16_t>((inner + static_cast<std::uint32_t>(errors[j])) & mask);
  }
  core::wipe(errors);
}

void LwePublicKey::expand_a() {
  const std::size_t row = dim_ + 1;
  table_.assign(static_cast<std::size_t>(rows_) * row, 0);
  std::vector<std::uint16_t> buf(static_cast<std::size_t>(rows_) * dim_);
  math::Prng stream(seed_);
  stream.fill(buf.data(), buf.size() * sizeof(std::uint16_t));
  const std::uint16_t mask = static_cast<std::uint16_t>(modulus_ - 1);
  for (std::uint32_t j = 0; j < rows_; ++j) {
    std::uint16_t* w = table_.data() + static_cast<std::size_t>(j) * row;
    // The modulus divides 2^16, so the low bits of a uniform 16-bit word are uniform.
    for (std::uint32_t i = 0; i < dim_; ++i)
      w[i] = buf[static_cast<std::size_t>(j) * dim_ + i] & mask;
  }
}

LwePublicKey LwePublicKey::from_seed(std::uint32_t dim, std::uint32_t rows, std::uint32_t modulus,
                                     const math::Seed& seed, std::vector<std::uint16_t> betas) {
  if (modulus < 2 || modulus > (1u << 16) || (modulus & (modulus - 1)) != 0) {
    throw std::invalid_argument("LwePublicKey::from_seed: modulus " + std::to_string(modulus) +
                                " is not a power of two <= 2^16");
  }
  if (betas.size() != rows) {
    throw std::invalid_argument("LwePublicKey::from_seed: " + std::to_string(betas.size()) +
                                " betas, expected " + std::to_string(rows));
  }
  LwePublicKey k;
  k.dim_ = dim;
  k.rows_ = rows;
  k.modulus_ = modulus;
  k.seed_ = seed;
  k.expand_a();
  for (std::uint32_t j = 0; j < rows; ++j) {
    if (betas[j] >= modulus) {
      throw std::invalid_argument("LwePublicKey::from_seed: beta " + std::to_string(betas[j]) +
                                  " >= modulus " + std::to_string(modulus));
    }
    k.table_[static_cast<std::size_t>(j) * (dim + 1) + dim] = betas[j];
  }
  return k;
}

std::vector<std::uint16_t> LwePublicKey::betas() const {
  std::vector<std::uint16_t> out(rows_);
  for (std::uint32_t j = 0; j < rows_; ++j) {
    out[j] = table_[static_cast<std::size_t>(j) * (dim_ + 1) + dim_];
  }
  return out;
}

LweCiphertext LwePublicKey::sample(std::uint32_t j) const {
  if (j >= rows_) {
    throw std::invalid_argument("LwePublicKey::sample: row " + std::to_string(j) + " of " +
                                std::to_string(rows_));
  }
  LweCiphertext ct;
  ct.modulus = modulus_;
  const std::uint16_t* w = table_.data() + static_cast<std::size_t>(j) * (dim_ + 1);
  ct.a.assign(w, w + dim_);
  ct.b = w[dim_];
  return ct;
}

LweCiphertext LwePublicKey::encrypt(math::Prng& prng, std::uint32_t value, double sigma) const {
  if (table_.empty()) throw std::invalid_argument("LwePublicKey::encrypt: empty public key");
  if (value >= modulus_) {
    throw std::invalid_argument("LwePublicKey::encrypt: value " + std::to_string(value) +
                                " >= modulus " + std::to_string(modulus_));
  }
  const std::size_t row = dim_ + 1;
  // Step (1): r uniform ternary, one multiplier per row, as 16-bit words (-1 = 0xffff).
  std::vector<std::int64_t> r = math::sample_ternary(prng, rows_);
  // Step (2): acc = sum_j r_j (A_j, beta_j), wrapping mod 2^16 (a multiple of the modulus).
  std::vector<std::uint16_t> acc(row, 0);
  for (std::uint32_t j = 0; j < rows_; ++j) {
    const auto rj = static_cast<std::uint16_t>(r[j]);
    const std::uint16_t* w = table_.data() + static_cast<std::size_t>(j) * row;
    for (std::size_t i = 0; i < row; ++i) {
      // In 32-bit unsigned arithmetic: u16 * u16 promotes to int, which 0xffff * w overflows
      // once q_ks = 2^16 lets w reach 2^15 (UBSan found it).
      const std::uint32_t product = static_cast<std::uint32_t>(rj) * w[i];
      acc[i] = static_cast<std::uint16_t>(acc[i] + static_cast<std::uint16_t>(product));
    }
  }
  // Step (3): add e' to a and e'' + value to b, reduce mod the modulus.
  std::vector<std::int64_t> e = math::sample_gaussian(prng, row, sigma);
  const std::uint32_t mask = modulus_ - 1;
  LweCiphertext ct;
  ct.modulus = modulus_;
  ct.a.resize(dim_);
  for (std::uint32_t i = 0; i < dim_; ++i) {
    ct.a[i] = (acc[i] + static_cast<std::uint32_t>(e[i])) & mask;
  }
  ct.b = (acc[dim_] + static_cast<std::uint32_t>(e[dim_]) + value) & mask;
  core::wipe(r);
  core::wipe(e);
  core::wipe(acc);
  return ct;
}

}  // namespace hec::fhew
