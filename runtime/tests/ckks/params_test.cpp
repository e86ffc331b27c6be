// Tests for ckks/params.h: the 128-bit check (from core/security.h, the table the compiler
// reads too), explicit primes, bit sizes, the canonical encoding.
#include "ckks/params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "bfv/context.h"
#include "core/security.h"
#include "math/primes.h"

namespace hec::ckks {
namespace {

TEST(CkksParams, TableIsTheOneInCore) {
  // core/security.h is the only copy (the compiler reads it too: test_security_table.py); CKKS
  // and BFV answer from it, inside and outside the table alike.
  for (int log_n = 8; log_n <= 19; ++log_n) {
    EXPECT_EQ(he_standard_max_log_qp(log_n), core::he_standard_max_log_qp(log_n)) << log_n;
    EXPECT_EQ(bfv::he_standard_max_log_qp(log_n), core::he_standard_max_log_qp(log_n)) << log_n;
  }
  EXPECT_EQ(he_standard_max_log_qp(13), 218);
  EXPECT_EQ(he_standard_max_log_qp(9), -1);
  EXPECT_EQ(he_standard_max_log_qp(18), -1);
}

TEST(CkksParams, SecureSetAccepted) {
  // N = 2^13: 218 bits. 45 + 3 * 40 + 50 = 215.
  const Parameters p = Parameters::from_bit_sizes(LogN(13), {45}, 40, 3, {50}, 4);
  EXPECT_FALSE(p.insecure());
  EXPECT_EQ(p.max_level(), 3);
  EXPECT_EQ(p.limbs_at(Level(0)), 1u);
  EXPECT_EQ(p.limbs_at(Level(3)), 4u);
  EXPECT_LE(p.log_qp(), 218);
  EXPECT_EQ(p.describe().find("INSECURE"), std::string::npos);
}

TEST(CkksParams, AboveBoundRefusedUnlessInsecure) {
  try {
    Parameters::from_bit_sizes(LogN(13), {60}, 50, 3, {60}, 4);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the HE Standard 128-bit bound 218"),
              std::string::npos)
        << e.what();
  }
  const Parameters p =
      Parameters::from_bit_sizes(LogN(13), {60}, 50, 3, {60}, 4, Security::kInsecure);
  EXPECT_TRUE(p.insecure());
  EXPECT_NE(p.describe().find("INSECURE"), std::string::npos);
}

TEST(CkksParams, ScalingPrimesAlternateAroundScale) {
  const Parameters p = Parameters::from_bit_sizes(LogN(14), {60}, 40, 6, {60}, 7);
  const auto& q = p.moduli();
  ASSERT_EQ(q.size(), 6u);
  for (std::size_t i = 0; i + 1 < q.size(); i += 2) {
    EXPECT_GT(q[i], u64{1} << 40);
    EXPECT_LT(q[i + 1], u64{1} << 40);
    // A consecutive pair multiplies to within 2^-20 of 2^80 (relative).
    const double pair =
        std::log2(static_cast<double>(q[i])) + std::log2(static_cast<double>(q[i + 1]));
    EXPECT_NEAR(pair, 80.0, 1e-4);
  }
}

TEST(CkksParams, ExplicitPrimesValidated) {
  const u64 two_n = 2 << 12;
  const auto good = math::ntt_primes(50, 4, 1 << 12);
  EXPECT_NO_THROW(
      Parameters::from_primes(LogN(12), {good[0]}, {}, {good[1]}, 1, Security::kInsecure));
  // not 1 mod 2N
  EXPECT_THROW(Parameters::from_primes(LogN(12), {good[0] + two_n / 2}, {}, {good[1]}, 1,
                                       Security::kInsecure),
               std::invalid_argument);
  // composite of the right form
  u64 composite = good[0] + two_n;
  while (math::is_prime(composite)) composite += two_n;
  EXPECT_THROW(
      Parameters::from_primes(LogN(12), {composite}, {}, {good[1]}, 1, Security::kInsecure),
      std::invalid_argument);
  // duplicate
  EXPECT_THROW(
      Parameters::from_primes(LogN(12), {good[0]}, {good[0]}, {good[1]}, 1, Security::kInsecure),
      std::invalid_argument);
  // no special primes: valid (a program without key switching), bad dnum, bad log n
  EXPECT_NO_THROW(Parameters::from_primes(LogN(12), {good[0]}, {}, {}, 1, Security::kInsecure));
  EXPECT_THROW(Parameters::from_primes(LogN(12), {good[0]}, {}, {good[1]}, 2, Security::kInsecure),
               std::invalid_argument);
  EXPECT_THROW(Parameters::from_primes(LogN(9), {good[0]}, {}, {good[1]}, 1, Security::kInsecure),
               std::invalid_argument);
  // special primes too small for the digits
  EXPECT_THROW(Parameters::from_bit_sizes(LogN(12), {50}, 45, 3, {30}, 1, Security::kInsecure),
               std::invalid_argument);
}

TEST(CkksParams, CanonicalEncodingRoundTrip) {
  const Parameters p = Parameters::from_bit_sizes(LogN(13), {45}, 40, 3, {50}, 4);
  const Parameters q = Parameters::from_canonical_encoding(p.canonical_encoding());
  EXPECT_EQ(p.digest(), q.digest());
  EXPECT_EQ(p.chain(), q.chain());
  const Parameters other = Parameters::from_bit_sizes(LogN(13), {45}, 40, 2, {50}, 3);
  EXPECT_NE(p.digest(), other.digest());
}

}  // namespace
}  // namespace hec::ckks
