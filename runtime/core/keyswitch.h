// Hybrid key switching shared by the RNS schemes (CKKS and BFV): digit decomposition of a
// polynomial over Q_l into dnum digits, ModUp of each digit to Q_l P, the inner product with
// the key, and an exact ModDown by P; and the generation of the keys themselves (Han-Ki,
// "Better bootstrapping for approximate homomorphic encryption", CT-RSA 2020, section 3;
// Bossuat et al., Eurocrypt 2021, section 2.3; Halevi-Shoup 2018, section 5 for hoisting).
//
// Limb index space: the chain Q_L = q_0 .. q_{K-1} (indices 0..K-1), then the special primes
// P = p_0 .. p_{S-1} (indices K..K+S-1). A ciphertext at `limbs` = |Q_l| uses the first
// |Q_l| primes of the chain (CKKS levels; BFV after modulus switching). Digits are fixed
// ranges of the chain; at |Q_l| limbs they are cut to [0, |Q_l|) and empty ones dropped, so a
// key made for |Q_k| limbs serves every |Q_l| <= |Q_k| (its first digits, its first |Q_l|
// limbs and its P limbs).
//
// Key for s' (digit j, at key_limbs): over Q_k P in NTT form,
//   b_j = -a_j s + e_j + [i in digit j] (P mod q_i) s',   a_j uniform,
// so sum_j [c]_{digit j} (b_j, a_j) = (P c s' + small, ...) mod Q_l P.
//
// Steps of a key switch of c (split so rotations can be hoisted: one mod_up, many products):
//   (1) mod_up: coefficient form of c; per digit j, base conversion of [c]_{digit j} to the
//       other primes of Q_l and to P -- approximate (x + u Q_j, 0 <= u < |digit|) when P
//       exceeds the digit by >= kCentredModUpMarginBits bits, exact (centred) otherwise, and a
//       digit of one prime lifted centred -- then NTT of the converted limbs. A centred lift
//       has mean zero; an uncentred one has mean ~Q_j/2, and a constant-mean polynomial times
//       the key noise has canonical norm ~N times larger (measured 7x more BV key-switching
//       noise at N = 2^12).
//   (2) key_product_mod_down: acc_0 = sum_j ext_j b_j, acc_1 = sum_j ext_j a_j over Q_l P (an
//       NTT-domain permutation of ext_j may be applied on the fly: Galois automorphisms), then
//       the EXACT ModDown out = (acc - [acc]_P) / P mod each q_i, with the centred [acc]_P
//       converted to Q_l exactly (math::BaseConverter::convert_exact; one special prime: the
//       centred lift). This is round(acc / P): error at most 1/2 per coefficient. The
//       approximate conversion would add u P with 0 <= u < |P| before the division, i.e. an
//       error -u (1 + s) of mean (|P| - 1)/2 (measured at N = 2^16, |P| = 8: CKKS rotation
//       noise 1.7e-8 with it, 1.2e-9 -- the fresh-encryption level -- with the exact one).
// With no special primes (S = 0) the key product is the result (BV-style digit
// decomposition: the keys carry the CRT idempotent of each digit times s').
//
// Kernel paths: AVX-512 (IFMA below 2^50, 52-bit columns up to 2^61) for the key product when
// math::active_kernel_path() selects it, the portable 128-bit loop otherwise; the base
// conversions and NTTs follow the math core's own dispatch. Results are bit-identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "math/modarith.h"
#include "math/ntt.h"
#include "math/rns.h"
#include "math/sampling.h"

namespace hec::core {

using math::u64;

inline constexpr double kCentredModUpMarginBits = 16;

// Returns a digit's words to the process-wide pool of digit buffers (or frees them).
struct DigitBufferRelease {
  std::size_t words = 0;
  void operator()(u64* p) const;
};

// One extended digit: (|Q_l| + S) * N words in NTT form, not zero-filled (mod_up writes every
// word). At N = 2^16 a key switch's digits are ~45 MB: fresh memory for each would cost a page
// fault per 4 KiB (measured: a sixth of a rotation), so released digits go back to a pool of
// buffers of the same size, kept up to a cap (kDigitPoolBytes) across the process.
struct ExtendedDigit {
  std::unique_ptr<u64[], DigitBufferRelease> words;
  u64* data() { return words.get(); }
  const u64* data() const { return words.get(); }
};

inline constexpr std::size_t kDigitPoolBytes = std::size_t{256} << 20;

struct ModUpDigits {
  std::vector<ExtendedDigit> digits;
  std::size_t limbs = 0;  // |Q_l|
};

// A key as the key switch reads it: per digit, b and a as limb-major arrays of
// (key_limbs + S) * N words in NTT form (the first key_limbs primes of the chain, then P).
struct KeyView {
  std::size_t key_limbs = 0;
  std::vector<const u64*> b, a;
};

class HybridKeySwitch {
 public:
  // moduli and ntt: the K chain primes then the S special primes (ntt tables are borrowed:
  // they must outlive this object). digits: [begin, end) ranges covering [0, K) in order.
  // level_limbs: every |Q_l| key switching is used at (tables are built for each).
  HybridKeySwitch(std::size_t n, std::vector<math::Modulus> moduli,
                  std::vector<const math::NttTables*> ntt, std::size_t chain_size,
                  const std::vector<std::pair<std::size_t, std::size_t>>& digits,
                  const std::vector<std::size_t>& level_limbs);
  ~HybridKeySwitch();
  HybridKeySwitch(const HybridKeySwitch&) = delete;
  HybridKeySwitch& operator=(const HybridKeySwitch&) = delete;

  std::size_t n() const { return n_; }
  std::size_t chain_size() const { return chain_size_; }
  std::size_t special_size() const { return moduli_.size() - chain_size_; }
  // Digits at |Q_l| limbs and their ranges.
  std::size_t digit_count(std::size_t limbs) const;
  std::pair<std::size_t, std::size_t> digit(std::size_t limbs, std::size_t j) const;
  // P mod q_i (1 without special primes): the gadget factor of the keys.
  u64 p_mod_q(std::size_t i) const { return p_mod_q_[i]; }

  // Step (1). c_ntt and/or c_coef: c over the first `limbs` chain primes in NTT and/or
  // coefficient form (at least one; with both, no transform of c is needed).
  ModUpDigits mod_up(const u64* c_ntt, const u64* c_coef, std::size_t limbs) const;

  // Step (2): out0, out1 (|Q_l| limbs each, NTT form) receive the key switch of c, or have it
  // added (accumulate). perm: optional NTT-domain permutation applied to ext (out[k] =
  // ext[perm[k]]). Throws std::invalid_argument if the key has fewer limbs or digits.
  void key_product_mod_down(const ModUpDigits& ext, const KeyView& key,
                            const std::vector<std::uint32_t>* perm, u64* out0, u64* out1,
                            bool accumulate = false) const;

  // Step (2) for a sum of key switches of permutations of one ModUp (double hoisting,
  // Bossuat et al., Eurocrypt 2021, section 4.2): the key products of every term are added
  // over Q_l P and ONE ModDown divides the sum by P, so out = round(sum_g perm_g(ext).key_g /
  // P): each further term costs the key product only, and the rounding error stays at most
  // 1/2 per coefficient. The terms' keys need the limbs and digits key_product_mod_down needs.
  // perm_on_product: the key is stored permuted by the inverse of perm (key'[perm[t]] =
  // key[t] in every limb), so the term is perm(ext . key') = perm(ext) . key: the product is
  // formed on the unpermuted digits and permuted once (2 limb gathers a prime instead of one
  // per digit). CKKS keeps its Galois keys in this form in memory (ckks/keys.h).
  struct KeyTerm {
    const KeyView* key;
    const std::vector<std::uint32_t>* perm;  // null: no permutation
    bool perm_on_product = false;
  };
  void key_products_mod_down(const ModUpDigits& ext, const std::vector<KeyTerm>& terms, u64* out0,
                             u64* out1, bool accumulate = false) const;

  // Step (2) with the result transformed on its way out (not with accumulate): out0 =
  // perm(r0 + add0), out1 = perm(r1) for the key switch (r0, r1) of ext under `terms`, perm an
  // NTT-domain permutation (out[t] = x[perm[t]]) or null, add0 |Q_l| limbs or null. Each limb
  // is finished in a per-thread buffer and gathered from it while it is in cache: a Galois
  // automorphism whose key is stored permuted (KeyTerm::perm_on_product) costs no pass of its
  // own.
  //
  // coef_add (with special primes, without perm and add0): coefficient-form addends of out0
  // and out1 (|Q_l| limbs each, may alias out0 / out1), so out_h = r_h + NTT(coef_add[h]).
  // The ModDown's correction is NTT'd anyway, so the addend rides along: per limb,
  // NTT(conv - P c) then (acc - .) / P = r + NTT(c), the same residues as adding NTT(c)
  // afterwards, and the caller saves the forward NTT of its addends (BFV's multiply +
  // relinearize: the HPS outputs c_0, c_1 come out in coefficient form).
  struct Output {
    const std::uint32_t* perm = nullptr;
    const u64* add0 = nullptr;
    const u64* coef_add[2] = {nullptr, nullptr};
  };
  void key_products_mod_down(const ModUpDigits& ext, const std::vector<KeyTerm>& terms, u64* out0,
                             u64* out1, const Output& output) const;

  // Key generation, digit j of a key at key_limbs: writes b and a ((key_limbs + S) * N words
  // each). s: the secret in NTT form over all K + S primes; s_prime: the source secret in NTT
  // form over at least the K chain primes (only the digit's limbs are read). Samples a
  // (uniform over Q_k P) then e (Gaussian) from prng, in that order.
  void make_key_digit(std::size_t key_limbs, std::size_t j, const u64* s, const u64* s_prime,
                      math::Prng& prng, u64* b, u64* a) const;

 private:
  struct Level;
  const Level& level(std::size_t limbs) const;
  void key_products(const ModUpDigits& ext, const std::vector<KeyTerm>& terms, u64* out0, u64* out1,
                    bool accumulate, const Output& output) const;
  std::size_t n_, chain_size_;
  std::vector<math::Modulus> moduli_;
  std::vector<const math::NttTables*> ntt_;
  std::vector<std::pair<std::size_t, std::size_t>> digits_;
  std::vector<u64> p_mod_q_;
  std::vector<std::unique_ptr<Level>> levels_;  // indexed by |Q_l|; null where unused
};

}  // namespace hec::core
