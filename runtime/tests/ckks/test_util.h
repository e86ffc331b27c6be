// Shared fixtures of the CKKS tests: small parameter sets (N = 2^12, explicitly insecure where
// the moduli exceed the 109-bit bound, so that precision is realistic), random vectors, and
// the max slot error between two vectors.
#pragma once

#include <complex>
#include <random>
#include <vector>

#include "ckks/context.h"
#include "ckks/params.h"

namespace hec::ckks::testing {

// N = 2^12, Q_0 = one 55-bit prime, 3 scaling primes around 2^40, P sized for `dnum`.
inline Parameters small_params(int dnum = 2, int levels = 3) {
  std::vector<int> special;
  if (dnum == 1)
    special = {60, 60, 60};
  else if (dnum == 2)
    special = {55, 55};
  else
    special = {58};
  return Parameters::from_bit_sizes(LogN(12), {55}, 40, levels, special, dnum, Security::kInsecure);
}

// Test-only pseudo-random message values (not secret: std::mt19937 is fine here).
inline std::vector<std::complex<double>> random_slots(std::size_t count, double bound,
                                                      unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> d(-bound, bound);
  std::vector<std::complex<double>> v(count);
  for (auto& x : v) x = {d(gen), d(gen)};
  return v;
}

inline double max_error(const std::vector<std::complex<double>>& a,
                        const std::vector<std::complex<double>>& b) {
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

}  // namespace hec::ckks::testing
