// The 128-bit security table of the Homomorphic Encryption Standard (Albrecht et al.,
// HomomorphicEncryption.org v1.1, 2018, Table 1: ternary secret, sigma = 3.2): the largest
// log2 of the modulus of any published RLWE sample for a ring dimension 2^log_n. The standard
// stops at 2^15; 2^16 and 2^17 take the lattice-estimator values of the 2024 FHE security
// guidelines (1747, 3523). This header is the ONE copy: the CKKS and BFV runtimes include it
// and compiler/analysis/security.py reads its numbers from here (tests/passes/
// test_security_table.py), so compiler and runtime cannot certify different parameters.
#pragma once

namespace hec::core {

inline constexpr int kHeStandardMinLogN = 10;
inline constexpr int kHeStandard128[] = {27, 54, 109, 218, 438, 881, 1747, 3523};
inline constexpr int kHeStandardMaxLogN =
    kHeStandardMinLogN + static_cast<int>(sizeof(kHeStandard128) / sizeof(int)) - 1;
// Rings below 2^12 are accepted only as insecure (tests): the compiler's search starts here.
inline constexpr int kMinSecureLogN = 12;

// Max log2(Q P) at 128-bit security for 2^log_n; -1 outside the table (never secure).
constexpr int he_standard_max_log_qp(int log_n) {
  if (log_n < kHeStandardMinLogN || log_n > kHeStandardMaxLogN) return -1;
  return kHeStandard128[log_n - kHeStandardMinLogN];
}

}  // namespace hec::core
