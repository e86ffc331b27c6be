// How many times the bench drivers time an operation, the same rule as the references'
// timing loops (bench/common.py median_of_repeats, bench/lattigo/main.go median): at least
// `repeats` runs, and more while the timed runs add up to less than kMinMeasuredSeconds (at
// most kMaxRepeats). A median of three 2 ms additions moved by 30% from run to run; a quarter
// of a second of them does not, and operations slower than that keep their `repeats`.
#pragma once

#include <cstddef>

namespace hec::bench {

inline constexpr double kMinMeasuredSeconds = 0.25;
inline constexpr std::size_t kMaxRepeats = 1000;

// Whether to time one more run after `done` runs totalling `total` seconds.
inline bool another_repeat(std::size_t done, int repeats, double total) {
  if (done < static_cast<std::size_t>(repeats)) return true;
  return total < kMinMeasuredSeconds && done < kMaxRepeats;
}

}  // namespace hec::bench
