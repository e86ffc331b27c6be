// Analytic noise estimates (see noise.h and README §Bounds). Sizes are carried as log2 of
// standard deviations of the absolute noise e (x = c_0 + c_1 s + ... = Delta m + e mod Q), so
// that moduli of thousands of bits do not overflow a double.
#include "bfv/noise.h"

#include <algorithm>
#include <cmath>

#include "math/sampling.h"

namespace hec::bfv {
namespace {

// log2(sqrt(2^(2a) + 2^(2b))): standard deviation of a sum of independent terms.
double log2_hypot(double a, double b) {
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + 0.5 * std::log2(1.0 + std::exp2(2.0 * (lo - hi)));
}

}  // namespace

NoiseEstimate estimate_squaring_chain(const BfvContext& ctx, int max_levels) {
  const double n = static_cast<double>(ctx.ring_dim());
  const double log_t = std::log2(static_cast<double>(ctx.plain_modulus()));
  const double sigma = math::kDefaultGaussianSigma;
  const double log_z = std::log2(std::sqrt(2.0 * std::log(n)));
  auto budget_of = [&](double log_w) { return ctx.log2_q() - 1.0 - (log_t + log_z + log_w); };

  // Fresh: e = e_0 + e u + e_1 s, u and s uniform ternary (variance 2/3).
  double log_w = std::log2(sigma * std::sqrt(1.0 + 4.0 * n / 3.0));
  // One squaring: e' = 2 (m + t a) e with Var(m + t a) = t^2 (N/18 + 1/6) per coefficient
  // (a = the integer quotient of c_0 + c_1 s by Q), convolved over N terms.
  const double log_growth =
      1.0 + 0.5 * std::log2(n) + log_t + 0.5 * std::log2(n / 18.0 + 1.0 / 6.0);
  // HPS rounding of the three scaled components: r_0 + r_1 s + r_2 s^2, r uniform in [-1/2, 1/2].
  const double log_round = 0.5 * std::log2((1.0 + 2.0 * n / 3.0 + n * n * 4.0 / 9.0) / 12.0);
  // Relinearization: sum over digits of the raised digit (E[x^2] = Q_d^2 (alpha/12 + alpha^2/4))
  // times Gaussian e_d over N terms, divided by P_ks; plus the mod-down rounding
  // eps_0 + eps_1 s with |eps| < #P_ks.
  double log_relin = -1e300;
  for (std::size_t d = 0; d < ctx.dnum(); ++d) {
    const double alpha = static_cast<double>(ctx.digit_end(d) - ctx.digit_begin(d));
    double log_qd = 0;
    for (std::size_t i = ctx.digit_begin(d); i < ctx.digit_end(d); ++i) {
      log_qd += std::log2(static_cast<double>(ctx.params().q[i]));
    }
    const double term = log_qd + 0.5 * std::log2(alpha / 12.0 + alpha * alpha / 4.0) +
                        0.5 * std::log2(n) + std::log2(sigma);
    log_relin = d == 0 ? term : log2_hypot(log_relin, term);
  }
  double log_p_ks = 0;
  for (u64 p : ctx.params().p_ks) log_p_ks += std::log2(static_cast<double>(p));
  log_relin -= log_p_ks;
  if (ctx.p_ks_size() > 0) {
    const double s = static_cast<double>(ctx.p_ks_size());
    log_relin =
        log2_hypot(log_relin, std::log2(s / std::sqrt(3.0) * std::sqrt(1.0 + 2.0 * n / 3.0)));
  }

  NoiseEstimate est;
  est.bits_per_level = log_growth;
  est.budget.push_back(budget_of(log_w));
  for (int d = 1; d <= max_levels; ++d) {
    log_w = log2_hypot(log2_hypot(log_w + log_growth, log_round), log_relin);
    est.budget.push_back(budget_of(log_w));
  }
  est.depth = -1;
  for (std::size_t d = 0; d < est.budget.size() && est.budget[d] > 0; ++d)
    est.depth = static_cast<int>(d);
  for (auto& b : est.budget) b = std::max(b, 0.0);
  return est;
}

}  // namespace hec::bfv
