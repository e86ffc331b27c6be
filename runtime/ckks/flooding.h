// Noise flooding of decrypted CKKS values (issue 25; docs/security.md, "Noise flooding").
// Li and Micciancio ("On the security of homomorphic encryption on approximate numbers",
// EUROCRYPT 2021) showed that a CKKS decryption reveals its error: the decoded values,
// re-encoded, give c0 + c1 s = Delta m + e exactly, a linear equation in the secret s, so one
// shared result and its ciphertext recover the key (runtime/tests/ckks/flooding_test.cpp does
// it). The decryptor therefore adds to every decoded slot, real and imaginary part, an
// independent Gaussian of standard deviation sigma, in the slots' value units, before anything
// leaves it. sigma is sized by the compiler (compiler/analysis/flooding.py) from its estimate
// of the output's error, so that the revealed values are statistically close (s bits) to values
// that do not depend on e at all; the randomness is the libsodium ChaCha20 generator seeded
// from the operating system.
#pragma once

#include <complex>
#include <span>

#include "math/sampling.h"

namespace hec::ckks {

// slots[i] += sigma * (g_i + i h_i) with g_i, h_i independent standard normals. sigma must be
// finite and >= 0 (0 leaves the slots unchanged); throws std::invalid_argument otherwise.
void flood_slots(std::span<std::complex<double>> slots, double sigma, math::Prng& prng);

}  // namespace hec::ckks
