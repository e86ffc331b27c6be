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
#include "core/keyswitch.h"
#include "math/modarith.h"
#include "math/ntt.h"
#include "math/rns.h"

namespace hec::ckks {

struct Context::Impl {
  std::size_t n = 0;
  std::size_t chain_size = 0;    // K = |Q_L|
  std::size_t special_size = 0;  // |P|
  std::vector<math::Modulus> moduli;
  std::vector<math::NttTables> ntt;
  std::vector<math::RnsBase> level_bases;       // Q_l for l = 0..L
  std::unique_ptr<math::RnsBase> special_base;  // null for BV
  // rescale_inv[l][i] = q_top^{-1} mod q_i, top = |Q_l| - 1, i < top (l >= 1).
  std::vector<std::vector<u64>> rescale_inv, rescale_inv_shoup;
  // Hybrid key switching (core/keyswitch.h) at every level l = 0..L: digits of alpha
  // primes, ModUp/ModDown converters, P^{-1} mod q_i.
  std::unique_ptr<core::HybridKeySwitch> key_switch;

  const math::RnsBase& level_base(Level level) const {
    return level_bases.at(static_cast<std::size_t>(level.value));
  }
  // perm[k]: NTT index whose value lands at index k under X -> X^g (g odd, mod 2N).
  const std::vector<std::uint32_t>& galois_permutation(std::uint64_t g) const;

  mutable std::mutex galois_mutex;
  mutable std::map<std::uint64_t, std::vector<std::uint32_t>> galois_cache;
};

}  // namespace hec::ckks
