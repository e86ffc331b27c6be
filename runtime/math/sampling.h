// Randomness for key generation, encryption and tests: a ChaCha20 keystream generator on
// libsodium (crypto_stream_chacha20_ietf), seeded from the operating system
// (randombytes_buf) or from a 32-byte seed for deterministic streams (tests, and expanding
// the public "a" polynomial from a seed), and the samplers the schemes need:
//  - uniform mod q_i per limb by rejection sampling (independent per limb, hence uniform
//    mod Q by the CRT);
//  - ternary {-1, 0, 1} uniform (rejection on bytes), or with fixed Hamming weight h
//    (positions by a partial Fisher-Yates shuffle, signs uniform);
//  - discrete Gaussian with sigma = 3.19 by a cumulative distribution table with a tail cut
//    at |x| <= 6 sigma (= 19): 64-bit uniform u, |x| = number of table entries <= u (the
//    whole table is always scanned, so time does not depend on the value), sign from a
//    separate bit. The table is computed in long double at construction; the statistical
//    distance to the tail-cut distribution is below 2^-58. (Peikert, "An efficient and
//    parallel Gaussian sampler for lattices", CRYPTO 2010; HE Standard, sigma = 3.2.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/modarith.h"
#include "math/rns.h"

namespace hec::math {

inline constexpr std::size_t kSeedBytes = 32;
using Seed = std::array<unsigned char, kSeedBytes>;

inline constexpr double kDefaultGaussianSigma = 3.19;
inline constexpr double kGaussianTailCutSigmas = 6.0;

// ChaCha20 keystream generator. Not thread-safe: use one per thread. Not copyable (a copy
// would repeat the stream); the key and buffered keystream are wiped on destruction.
class Prng {
 public:
  // Seeded from the operating system through libsodium's randombytes_buf.
  Prng();
  // Deterministic stream: the same seed (and stream id) gives the same bytes everywhere.
  // Different stream ids give independent streams under one seed (the id is the nonce).
  explicit Prng(const Seed& seed, std::uint64_t stream_id = 0);
  ~Prng();
  Prng(const Prng&) = delete;
  Prng& operator=(const Prng&) = delete;

  // A fresh seed from the operating system.
  static Seed random_seed();

  void fill(void* out, std::size_t bytes);
  std::uint64_t next_u64();
  std::uint8_t next_byte();
  // Uniform in [0, bound) by rejection sampling (bound >= 1).
  std::uint64_t uniform_below(std::uint64_t bound);

 private:
  void refill();
  Seed key_{};
  std::array<unsigned char, 12> nonce_{};
  std::uint32_t block_counter_ = 0;
  std::array<unsigned char, 4096> buffer_{};
  std::size_t position_ = 4096;
};

// Uniform residues: limb i of out (n coefficients at out + i * n) uniform in [0, q_i).
void sample_uniform_mod(Prng& prng, const RnsBase& base, std::size_t n, u64* out);

// n values uniform in {-1, 0, 1}.
std::vector<std::int64_t> sample_ternary(Prng& prng, std::size_t n);
// n values uniform in {0, 1}.
std::vector<std::int64_t> sample_binary(Prng& prng, std::size_t n);
// n values in {-1, 0, 1} with exactly `hamming_weight` nonzero (<= n), signs uniform.
std::vector<std::int64_t> sample_ternary_hamming(Prng& prng, std::size_t n,
                                                 std::size_t hamming_weight);
// n values from the discrete Gaussian of parameter sigma (standard deviation), tail cut at
// |x| <= floor(6 sigma). 0.5 <= sigma <= 64.
std::vector<std::int64_t> sample_gaussian(Prng& prng, std::size_t n,
                                          double sigma = kDefaultGaussianSigma);

// n independent standard normal values (mean 0, variance 1) by the Box-Muller transform of
// 53-bit uniforms from the keystream: u1 in (0, 1], u2 in [0, 1), r = sqrt(-2 ln u1),
// (r cos 2 pi u2, r sin 2 pi u2). The tail is cut where u1 = 2^-53 (|x| <= 8.57). For noise
// flooding (ckks/flooding.h), where the standard deviation is scaled far above the noise it
// hides; not a discrete Gaussian and not for key or encryption noise.
std::vector<double> sample_normal(Prng& prng, std::size_t n);

// Writes small signed integers into every limb: out[i * n + c] = values[c] mod q_i.
void signed_to_rns(const std::int64_t* values, std::size_t n, const RnsBase& base, u64* out);

}  // namespace hec::math
