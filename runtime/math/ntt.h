// Negacyclic number-theoretic transform over Z_q[X]/(X^N + 1), N = 2^10 ... 2^17 (powers of
// two from 2^4 are accepted for small tests).
//
// Forward: Cooley-Tukey butterflies with the powers of the 2N-th root psi merged into the
// twiddles (Longa-Naehrig, "Speeding up the NTT ...", CANS 2016, Alg. 1), natural order in,
// bit-reversed order out. Inverse: Gentleman-Sande (Alg. 2), bit-reversed in, natural out,
// with the 1/N scaling folded into the last layer. Butterflies are Harvey's lazy ones
// ("Faster arithmetic for number-theoretic transforms", J. Symb. Comp. 2014, Alg. 4 and the
// inverse form) with Shoup-precomputed twiddles, values kept in [0, 4q) between layers (the
// AVX-512 kernels of 60-bit moduli: [0, 8q) forward and [0, 4q) inverse, one conditional
// subtraction a butterfly fewer; the IFMA kernels run two layers a pass, ntt_avx512.cpp).
//
// Two kernel paths chosen at run time by active_kernel_path(): AVX-512 (moduli below 2^50:
// IFMA 52-bit multiply-add, Boemer et al., "Intel HEXL", WAHC 2021; moduli from 2^50 to 2^61:
// 64-bit Shoup products emulated with 32x32-bit vpmuludq partial products) and portable
// scalar C++.
// The fully reduced outputs of both paths are bit-identical; the lazy outputs are congruent
// mod q and within the documented range (they may differ from each other by multiples of q).
//
// Pointwise products in the bit-reversed evaluation order are negacyclic products: for a, b
// in coefficient form, inverse(forward(a) .* forward(b)) = a * b mod (X^N + 1, q).
#pragma once

#include <cstddef>

#include "math/aligned.h"
#include "math/modarith.h"

namespace hec::math {

inline constexpr int kMinLogRingDim = 4;
inline constexpr int kMaxLogRingDim = 17;
// Moduli below this bound can use the AVX-512 IFMA kernels (values up to 4q < 2^52).
inline constexpr int kIfmaMaxModulusBits = 50;

// Precomputed twiddles for one (N, q): q prime, q = 1 mod 2N, q < 2^61.
class NttTables {
 public:
  // Throws std::invalid_argument (naming the values) if N is not a power of two in
  // [2^4, 2^17], q is not prime, or q != 1 mod 2N.
  NttTables(std::size_t ring_dim, const Modulus& modulus);

  std::size_t ring_dim() const { return n_; }
  int log_ring_dim() const { return log_n_; }
  const Modulus& modulus() const { return modulus_; }
  // The primitive 2N-th root psi used (the minimal one, as SEAL chooses).
  u64 root() const { return root_; }
  // True when q < 2^50 and N >= 16, so the IFMA kernels may run on these tables.
  bool ifma_capable() const { return ifma_capable_; }
  // True when N >= 16 (and q < 2^61), so the AVX-512 kernels may run on these tables (with the
  // IFMA multiplier when ifma_capable(), the emulated 64-bit one otherwise).
  bool avx512_capable() const { return avx512_capable_; }

  // Tables, all of length N, index k holds psi^(bitrev(k)) resp. psi^(-bitrev(k)) and
  // their Shoup constants floor(w * 2^64 / q) (and floor(w * 2^52 / q) for IFMA).
  const u64* forward_twiddles() const { return fwd_.data(); }
  const u64* forward_twiddles_shoup() const { return fwd_shoup_.data(); }
  const u64* inverse_twiddles() const { return inv_.data(); }
  const u64* inverse_twiddles_shoup() const { return inv_shoup_.data(); }

  // Internal tables of the AVX-512 kernels (empty unless avx512_capable()). The *_shoup52
  // members hold Shoup constants with beta = 2^52 when ifma_capable(), else with beta = 2^64
  // (and fwd_shoup52 / inv_shoup52 stay empty: the kernels read forward_twiddles_shoup()).
  struct IfmaTables {
    // (The layers with t = 4 and 2 expand their lane twiddles from the full tables in
    // registers: no lane-expanded copies, which doubled the bytes a transform streams.)
    AlignedU64Vector fwd_shoup52, inv_shoup52;
    u64 n_inv_shoup52 = 0, last_twiddle_scaled_shoup52 = 0;
  };
  const IfmaTables& ifma() const { return ifma_; }

  u64 n_inverse() const { return n_inv_; }
  u64 n_inverse_shoup() const { return n_inv_shoup_; }
  // psi^(-bitrev(1)) / N mod q and its Shoup constant: the merged last inverse twiddle.
  u64 last_twiddle_scaled() const { return last_scaled_; }
  u64 last_twiddle_scaled_shoup() const { return last_scaled_shoup_; }

 private:
  std::size_t n_ = 0;
  int log_n_ = 0;
  Modulus modulus_;
  u64 root_ = 0;
  bool ifma_capable_ = false;
  bool avx512_capable_ = false;
  AlignedU64Vector fwd_, fwd_shoup_, inv_, inv_shoup_;
  u64 n_inv_ = 0, n_inv_shoup_ = 0, last_scaled_ = 0, last_scaled_shoup_ = 0;
  IfmaTables ifma_;
};

// Forward negacyclic NTT in place. Input in [0, q), output in [0, q), bit-reversed order.
void ntt_forward_inplace(u64* a, const NttTables& tables);

// Forward NTT without the final correction. Input in [0, 4q), output in [0, 4q) (congruent
// to the fully reduced output mod q).
void ntt_forward_lazy_inplace(u64* a, const NttTables& tables);

// Inverse negacyclic NTT in place, including the 1/N scaling. Input in [0, 2q) in
// bit-reversed order, output in [0, q) in natural order.
void ntt_inverse_inplace(u64* a, const NttTables& tables);

// out = the inverse NTT of in (as ntt_inverse_inplace; in is left unchanged, in == out is
// allowed): the AVX-512 kernels read in during their first pass, which saves a copy
// of the input where callers keep the evaluation form.
void ntt_inverse(const u64* in, u64* out, const NttTables& tables);

// Inverse NTT without the final correction. Input in [0, 2q), output in [0, 2q).
void ntt_inverse_lazy_inplace(u64* a, const NttTables& tables);

// Position of coefficient-order index k in the bit-reversed evaluation order (bitrev of k
// over log2(N) bits), for callers that need to know which evaluation point sits where: slot
// j of the forward output holds a(psi^(2*bitrev(j)+1)).
std::size_t bit_reverse(std::size_t k, int bits);

}  // namespace hec::math
