// Gaussian noise flooding of decoded slots (see flooding.h).
#include "ckks/flooding.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace hec::ckks {

void flood_slots(std::span<std::complex<double>> slots, double sigma, math::Prng& prng) {
  if (!std::isfinite(sigma) || sigma < 0.0) {
    throw std::invalid_argument("flood_slots: sigma = " + std::to_string(sigma) +
                                " must be finite and >= 0");
  }
  if (sigma == 0.0) return;
  const std::vector<double> g = math::sample_normal(prng, 2 * slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i] += std::complex<double>(sigma * g[2 * i], sigma * g[2 * i + 1]);
  }
}

}  // namespace hec::ckks
