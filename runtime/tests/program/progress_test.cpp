// Tests for program/progress.h and program/resources.h.
#include "program/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "program/resources.h"

namespace hec::program {
namespace {

TEST(Progress, PrintsAFinalLineWithCountAndPercent) {
  set_progress_enabled(true);
  std::ostringstream out;
  {
    Progress p("compute rows", 40, &out);
#pragma omp parallel for
    for (int i = 0; i < 40; ++i) p.advance();
    EXPECT_EQ(p.count(), 40u);
  }
  EXPECT_NE(out.str().find("[compute rows] 40/40 (100%)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("done"), std::string::npos) << out.str();
}

TEST(Progress, SilentWhenDisabled) {
  set_progress_enabled(false);
  std::ostringstream out;
  {
    Progress p("quiet", 3, &out);
    p.advance(3);
  }
  EXPECT_TRUE(out.str().empty());
  set_progress_enabled(true);
}

TEST(Resources, PeakRssGrowsWithATouchedAllocation) {
  const std::size_t before = peak_rss_bytes();
  EXPECT_GT(before, 0u);
  std::vector<char> big(64u << 20);
  for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = 1;
  const std::size_t after = peak_rss_bytes();
  EXPECT_GE(after, before);
  EXPECT_GE(after, current_rss_bytes() - (1u << 20));
  EXPECT_GE(after, 64u << 20);
  EXPECT_EQ(big[4096], 1);
}

TEST(Resources, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "0.5 KiB");
  EXPECT_EQ(format_bytes(3u << 20), "3.0 MiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
}

}  // namespace
}  // namespace hec::program
