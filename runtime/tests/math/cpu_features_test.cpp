// Tests for math/cpu_features.h: detection agrees with /proc/cpuinfo and forcing works.
#include "math/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace hec::math {
namespace {

std::string cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::string flags(" ");  // built by appends: GCC 12 misreports "x" + std::string
      flags.append(line, line.find(':') + 1);
      flags.append(" ");
      return flags;
    }
  }
  return "";
}

TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  const std::string flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  EXPECT_EQ(cpu_features().avx2, flags.find(" avx2 ") != std::string::npos);
  EXPECT_EQ(cpu_features().avx512f, flags.find(" avx512f ") != std::string::npos);
  EXPECT_EQ(cpu_features().avx512ifma, flags.find(" avx512ifma ") != std::string::npos);
}

TEST(CpuFeatures, ForcingPortableWins) {
  force_portable_path(true);
  EXPECT_EQ(active_kernel_path(), KernelPath::kPortable);
  force_portable_path(false);
  EXPECT_EQ(active_kernel_path() == KernelPath::kAvx512Ifma, cpu_has_avx512_ifma());
  EXPECT_STREQ(kernel_path_name(KernelPath::kPortable), "portable");
}

}  // namespace
}  // namespace hec::math
