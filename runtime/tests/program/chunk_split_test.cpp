// Tests for ChunkSplit (program/arrays.h): whether a step of a pass over the rows runs over the
// threads is decided from the chunks' measured times. Synthetic times, so each path is forced.
#include <gtest/gtest.h>

#include <vector>

#include "program/arrays.h"

namespace hec::program {
namespace {

// Feeds one chunk time per call (chosen by the threads the chunk ran on) until decided;
// returns the threads of every chunk run.
std::vector<int> run(ChunkSplit& s, double one_thread, double all_threads, int chunks = 12) {
  std::vector<int> ran;
  for (int c = 0; c < chunks; ++c) {
    ran.push_back(s.threads());
    s.record(s.threads() > 1 ? all_threads : one_thread);
  }
  return ran;
}

TEST(ChunkSplit, OneThreadHasNothingToDecide) {
  ChunkSplit s(1);
  EXPECT_TRUE(s.decided());
  EXPECT_EQ(run(s, 1e-3, 1e-4), std::vector<int>(12, 1));
}

TEST(ChunkSplit, AHeavyFirstChunkStaysOnAllThreads) {
  ChunkSplit s(2);
  EXPECT_EQ(run(s, 1.0, ChunkSplit::kSureSeconds), std::vector<int>(12, 2));
  EXPECT_TRUE(s.decided());
}

// The threads a light first chunk leads to: the first chunk on all threads, then 2 kTrials
// trial chunks alternating one thread and all, then `decided` for the rest (`chunks` in all).
std::vector<int> light_then(int all, int decided, int chunks) {
  std::vector<int> want = {all};
  for (std::size_t t = 0; t < 2 * ChunkSplit::kTrials; ++t) want.push_back(t % 2 == 0 ? 1 : all);
  while (static_cast<int>(want.size()) < chunks) want.push_back(decided);
  return want;
}

TEST(ChunkSplit, ALightStepKeepsOneThreadWhenSplittingIsSlower) {
  // Chi-square's fold: 25 us on one thread, more on two (waking the other thread).
  ChunkSplit s(2);
  const int chunks = 2 * ChunkSplit::kTrials + 4;
  EXPECT_EQ(run(s, 25e-6, 90e-6, chunks), light_then(2, 1, chunks));
  EXPECT_TRUE(s.decided());
}

TEST(ChunkSplit, ALightStepSplitsWhenThatIsFaster) {
  ChunkSplit s(4);
  const int chunks = 2 * ChunkSplit::kTrials + 4;
  EXPECT_EQ(run(s, 5e-3, 2e-3, chunks), light_then(4, 4, chunks));
}

TEST(ChunkSplit, TheMedianOfTheTrialsDecidesNotOneOutlier) {
  // One trial on all threads was quick by chance; the others were slower than one thread.
  ChunkSplit s(2);
  s.record(5e-3);  // the first chunk (all threads, light): not a trial
  for (std::size_t t = 0; t < ChunkSplit::kTrials; ++t) {
    EXPECT_FALSE(s.decided());
    s.record(1e-3);                  // one thread
    s.record(t == 0 ? 1e-5 : 3e-3);  // all threads
  }
  EXPECT_TRUE(s.decided());
  EXPECT_EQ(s.threads(), 1);
}

}  // namespace
}  // namespace hec::program
