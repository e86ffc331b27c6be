// core::wipe zeroes every byte it is given, whatever the element type.
#include "core/wipe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hec::core {
namespace {

TEST(Wipe, ZeroesVectorsAndRanges) {
  std::vector<std::uint64_t> words(1000, 0x0123456789abcdefULL);
  wipe(words);
  for (std::uint64_t w : words) EXPECT_EQ(w, 0u);
  std::vector<long double> reals(17, 3.25L);
  wipe(reals);
  for (long double r : reals) EXPECT_EQ(r, 0.0L);
  std::uint32_t raw[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  wipe(raw + 2, 4 * sizeof(std::uint32_t));
  EXPECT_EQ(raw[1], 2u);
  for (int i = 2; i < 6; ++i) EXPECT_EQ(raw[i], 0u);
  EXPECT_EQ(raw[6], 7u);
}

}  // namespace
}  // namespace hec::core
