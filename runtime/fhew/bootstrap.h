// The ring side of FHEW bootstrapping over Z_Q[X]/(X^N + 1): RGSW encryptions of
// monomials under a ternary ring key, the external product RLWE x RGSW -> RLWE with signed
// gadget decomposition (base 2^b, exact), and blind rotation by either accumulator:
//  - AP (Alperin-Sheriff-Peikert, CRYPTO 2014, as used by Ducas-Micciancio, "FHEW",
//    EUROCRYPT 2015, §4): for every LWE coefficient a_i and every base-B_r digit d of it, one
//    external product with RGSW(X^{d B_r^k s_i 2N/q}); keys for every digit value.
//  - GINX/CGGI (Chillotti et al., "TFHE", J. Cryptology 2020, Alg. 3) with ternary secrets
//    (Micciancio-Polyakov, WAHC 2021, §5.2): ACC += ((X^c - 1) BK+_i + (X^-c - 1) BK-_i) (x)
//    ACC with BK+/- the RGSW encryptions of [s_i = 1] and [s_i = -1]; the monomial factors
//    are applied in the evaluation domain, so each step costs one decomposition, 2 d_g
//    forward and 2 inverse NTTs.
// Then sample extraction of the constant coefficient (an LWE ciphertext of dimension N mod Q).
//
// The NTT is the math core's (math/ntt.h); RGSW rows are kept in evaluation form as 32-bit
// words (Q < 2^31). Products of two residues are below 2^62 and sums of up to 2 d_g of them
// are accumulated without reduction in 64 bits while 2 d_g Q^2 < 2^57 (checked at
// construction); the loops are in kernels.h (portable and AVX-512).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fhew/kernels.h"
#include "fhew/lwe.h"
#include "fhew/params.h"
#include "math/ntt.h"
#include "math/sampling.h"

namespace hec::fhew {

// N, Q, NTT tables, the powers of the 2N-th root in evaluation order (for monomials).
class RingContext {
 public:
  explicit RingContext(const Params& params);
  const Params& params() const { return params_; }
  std::size_t n() const { return n_; }
  std::uint64_t q() const { return q_; }
  const math::NttTables& ntt() const { return *ntt_; }
  const math::Modulus& modulus() const { return modulus_; }
  // Slot j of the evaluation form of X^c is psi^(c * odd[j] mod 2N), psi_pow[e] = psi^e.
  const std::vector<std::uint32_t>& odd_exponents() const { return odd_; }
  const std::vector<std::uint32_t>& psi_powers() const { return psi_pow_; }
  // floor(2^64 / Q) for reducing 64-bit sums (Barrett, one correction).
  std::uint64_t barrett() const { return barrett_; }
  const kernels::RingConstants& constants() const { return constants_; }

 private:
  Params params_;
  std::size_t n_ = 0;
  std::uint64_t q_ = 0;
  math::Modulus modulus_;
  std::unique_ptr<math::NttTables> ntt_;
  std::vector<std::uint32_t> odd_, psi_pow_;
  std::uint64_t barrett_ = 0;
  kernels::RingConstants constants_{};
};

// The ring secret z (ternary, N coefficients) with its evaluation form.
struct RingKey {
  TernaryKey z;
  std::vector<std::uint64_t> z_ntt;
};
RingKey ring_keygen(const RingContext& ring, math::Prng& prng);

// A flat array of RGSW ciphertexts, each 2 d_g rows of (a, b) in evaluation form (u32),
// stored in blocks of 8 slots so that one external product reads each ciphertext as a single
// sequential stream: within ciphertext c, slot j of row r, component t (0 = a, 1 = b) is at
// ((j / 8) * 2 d_g + r) * 2 + t) * 8 + j % 8. pack_rgsw/unpack_rgsw convert from/to the
// row-major form (row r, component t at (r * 2 + t) * N).
class RgswArray {
 public:
  RgswArray() = default;
  RgswArray(std::size_t count, std::size_t rows, std::size_t n)
      : count_(count), rows_(rows), n_(n), data_(count * rows * 2 * n) {}
  std::size_t count() const { return count_; }
  std::size_t rows() const { return rows_; }
  const std::uint32_t* at(std::size_t c) const { return data_.data() + c * rows_ * 2 * n_; }
  std::uint32_t* at(std::size_t c) { return data_.data() + c * rows_ * 2 * n_; }
  std::size_t memory_bytes() const { return data_.size() * sizeof(std::uint32_t); }

 private:
  std::size_t count_ = 0, rows_ = 0, n_ = 0;
  std::vector<std::uint32_t> data_;
};

void pack_rgsw(const std::uint32_t* row_major, std::size_t rows, std::size_t n,
               std::uint32_t* blocked);
void unpack_rgsw(const std::uint32_t* blocked, std::size_t rows, std::size_t n,
                 std::uint32_t* row_major);

// The bootstrapping (blind-rotation) key. GINX: 2n RGSW (BK+ and BK- per i). AP: for every
// i, digit position k and digit value v in [1, B_r): RGSW(X^{v B_r^k s_i 2N/q}), index
// (i * digits + k) * (B_r - 1) + v - 1.
//
// The "a" halves of every row are uniform and come from a ChaCha20 stream of a public seed
// (one stream per RGSW ciphertext), so the key is stored as the seed and the "b" halves.
struct BlindRotationKey {
  BlindRotation method = BlindRotation::kGinx;
  math::Seed seed{};
  RgswArray rgsw;
};

// RGSW encryptions of the monomials the method needs (parallel over ciphertexts).
BlindRotationKey blind_rotation_keygen(const RingContext& ring, const RingKey& key,
                                       const TernaryKey& lwe_key);
// Rebuilds the key from its seed and "b" halves (d_g * 2 * N words per ciphertext).
BlindRotationKey blind_rotation_key_from_seed(const RingContext& ring, BlindRotation method,
                                              const math::Seed& seed,
                                              const std::vector<std::uint32_t>& b_halves);
// The "b" halves, in ciphertext order (for serialization).
std::vector<std::uint32_t> blind_rotation_key_b_halves(const RingContext& ring,
                                                       const BlindRotationKey& key);
// Number of RGSW ciphertexts for the parameter set.
std::size_t blind_rotation_key_count(const Params& params);

// Scratch memory of one blind rotation (one per thread).
struct Workspace {
  explicit Workspace(const RingContext& ring);
  std::vector<std::uint64_t> acc_a, acc_b;  // accumulator, coefficient form, [0, Q)
  std::vector<std::uint64_t> digits;        // 2 d_g digit polynomials, evaluation form
  std::vector<std::uint64_t> prod;          // 6 accumulators of products, evaluation form
};

// Blind rotation of an LWE ciphertext mod q (dimension n) with the test polynomial whose
// coefficients are all `tv_value` (mod Q): on return ws.acc_a/acc_b hold an RLWE encryption
// (coefficient form) of X^{-(2N/q) phase} * tv, whose constant coefficient is +tv_value for
// phase in [0, q/2) and -tv_value for phase in [q/2, q).
void blind_rotate(const RingContext& ring, const BlindRotationKey& key, const LweCiphertext& ct,
                  std::uint64_t tv_value, Workspace& ws);

// The constant coefficient of the accumulator as an LWE ciphertext of dimension N mod Q
// under the coefficient vector of z: a'_0 = a_0, a'_j = -a_{N-j}, b' = b_0.
LweCiphertext sample_extract(const RingContext& ring, const Workspace& ws);

// Phase (b - a z) of the accumulator, centred in (-Q/2, Q/2], for noise measurements.
std::vector<std::int64_t> accumulator_phase(const RingContext& ring, const RingKey& key,
                                            const Workspace& ws);

}  // namespace hec::fhew
