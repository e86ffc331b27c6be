// Samplers on a ChaCha20 keystream from libsodium (see sampling.h).
#include "math/sampling.h"

#include <sodium.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace hec::math {
namespace {

void ensure_sodium() {
  static const int status = sodium_init();  // thread-safe, idempotent
  if (status < 0) throw std::runtime_error("libsodium: sodium_init() failed");
}

// Cumulative thresholds for |x| of the discrete Gaussian with parameter sigma, tail cut at
// floor(6 sigma): thresholds[k] = round(2^64 * P(|x| <= k)), k = 0 .. bound - 1.
std::vector<u64> gaussian_cdt(double sigma) {
  const int bound = static_cast<int>(std::floor(kGaussianTailCutSigmas * sigma));
  std::vector<long double> mass(bound + 1);
  long double total = 0;
  for (int k = 0; k <= bound; ++k) {
    const long double rho = std::exp(-static_cast<long double>(k) * k / (2.0L * sigma * sigma));
    mass[k] = (k == 0 ? 1.0L : 2.0L) * rho;
    total += mass[k];
  }
  std::vector<u64> thresholds(bound);
  long double cumulative = 0;
  for (int k = 0; k < bound; ++k) {
    cumulative += mass[k] / total;
    const long double scaled = std::nearbyint(cumulative * 18446744073709551616.0L);
    thresholds[k] = scaled >= 18446744073709551615.0L ? ~u64{0} : static_cast<u64>(scaled);
  }
  return thresholds;
}

}  // namespace

Seed Prng::random_seed() {
  ensure_sodium();
  Seed seed;
  randombytes_buf(seed.data(), seed.size());
  return seed;
}

Prng::Prng() : Prng(random_seed()) {}

Prng::Prng(const Seed& seed, std::uint64_t stream_id) : key_(seed) {
  ensure_sodium();
  static_assert(sizeof(stream_id) <= 12);
  std::memcpy(nonce_.data(), &stream_id, sizeof(stream_id));
}

Prng::~Prng() {
  sodium_memzero(key_.data(), key_.size());
  sodium_memzero(buffer_.data(), buffer_.size());
}

void Prng::refill() {
  constexpr std::uint32_t kBlocks = sizeof(buffer_) / 64;
  if (block_counter_ > UINT32_MAX - kBlocks) {
    throw std::runtime_error("Prng: ChaCha20 stream exhausted (2^32 blocks); use a new seed");
  }
  std::memset(buffer_.data(), 0, buffer_.size());
  crypto_stream_chacha20_ietf_xor_ic(buffer_.data(), buffer_.data(), buffer_.size(), nonce_.data(),
                                     block_counter_, key_.data());
  block_counter_ += kBlocks;
  position_ = 0;
}

void Prng::fill(void* out, std::size_t bytes) {
  auto* dst = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    if (position_ == buffer_.size()) refill();
    const std::size_t take = std::min(bytes, buffer_.size() - position_);
    std::memcpy(dst, buffer_.data() + position_, take);
    position_ += take;
    dst += take;
    bytes -= take;
  }
}

std::uint64_t Prng::next_u64() {
  std::uint64_t v;
  fill(&v, sizeof(v));
  return v;
}

std::uint8_t Prng::next_byte() {
  if (position_ == buffer_.size()) refill();
  return buffer_[position_++];
}

std::uint64_t Prng::uniform_below(std::uint64_t bound) {
  if (bound == 0) throw std::invalid_argument("Prng::uniform_below: bound = 0");
  if (bound == 1) return 0;
  const int bits = 64 - __builtin_clzll(bound - 1);
  const u64 mask = bits == 64 ? ~u64{0} : (u64{1} << bits) - 1;
  for (;;) {
    const u64 v = next_u64() & mask;
    if (v < bound) return v;
  }
}

void sample_uniform_mod(Prng& prng, const RnsBase& base, std::size_t n, u64* out) {
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base[i].value();
    const u64 mask = (u64{1} << base[i].bit_count()) - 1;
    u64* limb = out + i * n;
    for (std::size_t c = 0; c < n; ++c) {
      u64 v;
      do {
        v = prng.next_u64() & mask;
      } while (v >= q);
      limb[c] = v;
    }
  }
}

std::vector<std::int64_t> sample_ternary(Prng& prng, std::size_t n) {
  std::vector<std::int64_t> out(n);
  for (std::size_t c = 0; c < n; ++c) {
    std::uint8_t b;
    do {
      b = prng.next_byte();
    } while (b == 255);  // 255 = 3 * 85: keep 0..254 so that b % 3 is uniform
    out[c] = static_cast<std::int64_t>(b % 3) - 1;
  }
  return out;
}

std::vector<std::int64_t> sample_binary(Prng& prng, std::size_t n) {
  std::vector<std::int64_t> out(n);
  for (std::size_t c = 0; c < n; c += 8) {
    const std::uint8_t b = prng.next_byte();
    for (std::size_t k = 0; k < 8 && c + k < n; ++k) out[c + k] = (b >> k) & 1;
  }
  return out;
}

std::vector<std::int64_t> sample_ternary_hamming(Prng& prng, std::size_t n,
                                                 std::size_t hamming_weight) {
  if (hamming_weight > n) {
    throw std::invalid_argument(
        "sample_ternary_hamming: hamming_weight = " + std::to_string(hamming_weight) +
        " exceeds n = " + std::to_string(n));
  }
  std::vector<std::size_t> index(n);
  std::iota(index.begin(), index.end(), std::size_t{0});
  std::vector<std::int64_t> out(n, 0);
  for (std::size_t i = 0; i < hamming_weight; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(prng.uniform_below(n - i));
    std::swap(index[i], index[j]);
    out[index[i]] = 1 - 2 * static_cast<std::int64_t>(prng.next_byte() & 1);  // no branch
  }
  return out;
}

std::vector<std::int64_t> sample_gaussian(Prng& prng, std::size_t n, double sigma) {
  if (!(sigma >= 0.5 && sigma <= 64)) {
    throw std::invalid_argument("sample_gaussian: sigma = " + std::to_string(sigma) +
                                " must be in [0.5, 64]");
  }
  static const std::vector<u64> default_table = gaussian_cdt(kDefaultGaussianSigma);
  const std::vector<u64> custom =
      sigma == kDefaultGaussianSigma ? std::vector<u64>{} : gaussian_cdt(sigma);
  const std::vector<u64>& table = sigma == kDefaultGaussianSigma ? default_table : custom;
  std::vector<std::int64_t> out(n);
  // The randomness in two bulk draws: one 64-bit word per sample, one sign bit per sample.
  std::vector<u64> words(n), signs((n + 63) / 64);
  prng.fill(words.data(), n * sizeof(u64));
  prng.fill(signs.data(), signs.size() * sizeof(u64));
  // Threshold by threshold over all samples (the inner loop vectorizes; still no branch on
  // a secret value).
  for (u64 threshold : table) {
    for (std::size_t c = 0; c < n; ++c) out[c] += static_cast<std::int64_t>(words[c] >= threshold);
  }
  for (std::size_t c = 0; c < n; ++c) {
    const std::int64_t magnitude = out[c];
    const std::int64_t sign = static_cast<std::int64_t>((signs[c / 64] >> (c % 64)) & 1);
    out[c] = magnitude - 2 * sign * magnitude;  // branch-free sign
  }
  sodium_memzero(words.data(), words.size() * sizeof(u64));
  sodium_memzero(signs.data(), signs.size() * sizeof(u64));
  return out;
}

std::vector<double> sample_normal(Prng& prng, std::size_t n) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kUlp = 1.0 / 9007199254740992.0;  // 2^-53
  std::vector<double> out(n);
  std::vector<u64> words(2 * ((n + 1) / 2));
  prng.fill(words.data(), words.size() * sizeof(u64));
  for (std::size_t i = 0; i < n; i += 2) {
    const double u1 = static_cast<double>((words[i] >> 11) + 1) * kUlp;  // (0, 1]
    const double u2 = static_cast<double>(words[i + 1] >> 11) * kUlp;    // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = r * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = r * std::sin(kTwoPi * u2);
  }
  sodium_memzero(words.data(), words.size() * sizeof(u64));
  return out;
}

void signed_to_rns(const std::int64_t* values, std::size_t n, const RnsBase& base, u64* out) {
  for (std::size_t i = 0; i < base.size(); ++i) {
    const u64 q = base[i].value();
    u64* limb = out + i * n;
    for (std::size_t c = 0; c < n; ++c) {
      // Branch-free on the (secret) sample: |v| and its sign by masks; the reduction by q
      // happens only for values >= q, which secret samples (ternary, Gaussian) never are.
      const std::int64_t v = values[c];
      const u64 negative = u64{0} - static_cast<u64>(v < 0);  // all ones when v < 0
      const u64 magnitude = (static_cast<u64>(v) ^ negative) - negative;
      const u64 r = magnitude < q ? magnitude : magnitude % q;
      limb[c] = r ^ ((r ^ negate_mod(r, q)) & negative);
    }
  }
}

}  // namespace hec::math
