// Analytic noise of BFV in the HPS variant (README §Bounds): expected size of the invariant
// noise of a fresh public-key encryption and after each squaring with relinearization, as
// budgets in bits comparable with Decryptor::noise_budget. Heuristic central-limit model:
// coefficients of products of independent polynomials are treated as Gaussian with the
// variance of the sum, and the maximum over N coefficients as sqrt(2 ln N) standard
// deviations (the "expected worst coefficient"), as in Costache-Smart, "Which ring based
// somewhat homomorphic encryption scheme is best?", CT-RSA 2016, §4.
#pragma once

#include <vector>

#include "bfv/context.h"

namespace hec::bfv {

struct NoiseEstimate {
  // budget[0]: fresh public-key encryption; budget[d]: after d squarings + relinearization.
  std::vector<double> budget;
  // Largest d with budget[d] > 0 (decryption predicted correct after d squarings).
  int depth = 0;
  // Bits lost per squaring (asymptotic, without relinearization noise).
  double bits_per_level = 0;
};

NoiseEstimate estimate_squaring_chain(const BfvContext& ctx, int max_levels);

}  // namespace hec::bfv
