// The `coeff` layout (compiler/dialects/ckks.py; passes/packed_counts.py): non-negative integer
// counts radix-packed into the COEFFICIENTS of a plaintext polynomial and scaled by 2^d.
//
// A row's coefficient g holds V = sum_t W_t x_t over its digits t: first `group` columns
// (g * group + c) of every per-element digit k (t = c * K + k), then every per-row digit once
// (coefficient 0 only; zero elsewhere); W_t = R_0 ... R_{t-1}. The plaintext is m = 2^d V
// (exact: V 2^d < Q). The server only adds, so the coordinator decrypts
// m_sum + e = 2^d sum_r V_r + e with |e| < 2^(d-1) (the compiler sized d), and reads
// floor((m + 2^(d-1)) / 2^d) exactly, then its mixed-radix digits: every count, no carry
// between digits because each radix exceeds its count's largest possible sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/context.h"
#include "program/ckks_program.h"

namespace hec::program {

// Plaintexts (level 0, NTT form) of one row of a coeff input: `count` = the row's ciphertext
// count (ceil(ceil(columns / group) / n)). Throws when a digit's value is not an integer in
// [0, radix) (naming the row, column and digit).
void encode_coeff_row(const ckks::Context& ctx, const InputSpec& in, const OwnerRow& row,
                      std::size_t row_index, std::size_t columns, double scale,
                      std::vector<ckks::Plaintext>& out);

// Every digit of a decrypted coeff result: digits[t][column] for per-element digits
// (t < K) and digits[K + s][0] for per-row digits. `phases` are the decrypted plaintexts
// (NTT form) of the result's ciphertexts, in order; they are wiped here.
std::vector<std::vector<double>> decode_coeff(const ckks::Context& ctx, const CoeffPacking& packing,
                                              std::vector<ckks::Plaintext>& phases,
                                              std::size_t columns);

}  // namespace hec::program
