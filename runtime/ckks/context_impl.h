// Runtime internals of a CKKS Context: the math-core tables (NTT per prime, RNS bases, base
// converters of hybrid key switching, rescale constants, Galois permutations). Not part of
// the public API: generated programs use context.h, evaluator.h and kernels.h.
//
// Limb index space: the primes of Q_L in chain order (indices 0..K-1), then the special
// primes P (indices K..K+|P|-1) in `moduli` and `ntt`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ckks/context.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/rns.h"

namespace hec::ckks {

// Everything hybrid key switching needs at one ciphertext level l.
struct KeySwitchLevel {
  std::size_t limbs = 0;  // |Q_l|
  // Digit j covers limbs [digit_begin[j], digit_end[j]) of Q_l.
  std::vector<std::size_t> digit_begin, digit_end;
  // ModUp of digit j: from its primes to the other primes of Q_l followed by P.
  std::vector<std::unique_ptr<math::BaseConverter>> mod_up;
  // ModDown: P -> Q_l, and P^{-1} mod q_i (with Shoup constants).
  std::unique_ptr<math::BaseConverter> mod_down;
  std::vector<u64> p_inv, p_inv_shoup;
};

struct Context::Impl {
  std::size_t n = 0;
  std::size_t chain_size = 0;    // K = |Q_L|
  std::size_t special_size = 0;  // |P|
  std::vector<math::Modulus> moduli;
  std::vector<math::NttTables> ntt;
  std::vector<math::RnsBase> level_bases;  // Q_l for l = 0..L
  std::unique_ptr<math::RnsBase> special_base;
  // rescale_inv[l][i] = q_top^{-1} mod q_i, top = |Q_l| - 1, i < top (l >= 1).
  std::vector<std::vector<u64>> rescale_inv, rescale_inv_shoup;
  std::vector<KeySwitchLevel> key_switch;  // per level l = 0..L
  // P mod q_i for every prime of Q_L (the gadget factor of the key-switching keys).
  std::vector<u64> p_mod_q;

  const math::RnsBase& level_base(Level level) const {
    return level_bases.at(static_cast<std::size_t>(level.value));
  }
  // perm[k]: NTT index whose value lands at index k under X -> X^g (g odd, mod 2N).
  const std::vector<std::uint32_t>& galois_permutation(std::uint64_t g) const;

  mutable std::mutex galois_mutex;
  mutable std::map<std::uint64_t, std::vector<std::uint32_t>> galois_cache;
};

}  // namespace hec::ckks
