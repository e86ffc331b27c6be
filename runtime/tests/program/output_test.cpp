// Tests for program/output.h: a file appears only when committed; a failed run leaves nothing.
#include "program/output.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "tests/program/test_dir.h"

namespace hec::program {
namespace {

using testing::TempDir;

TEST(AtomicFile, InvisibleUntilCommitted) {
  TempDir dir;
  {
    AtomicFile f(dir / "out.bin");
    f.stream() << "partial";
    f.stream().flush();
    EXPECT_FALSE(std::filesystem::exists(dir / "out.bin"));
    EXPECT_TRUE(std::filesystem::exists(f.temp_path()));
    f.commit();
  }
  std::ifstream in(dir / "out.bin");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "partial");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(AtomicFile, AbandonedWriteLeavesNothing) {
  TempDir dir;
  {
    AtomicFile f(dir / "out.bin");
    f.stream() << "half";
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(AtomicFile, ReplacesAnOldFileOnlyOnCommit) {
  TempDir dir;
  write_file_atomic(dir / "f", "old");
  {
    AtomicFile f(dir / "f");
    f.stream() << "new";
  }
  std::ifstream in(dir / "f");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "old");
}

TEST(AtomicFile, UnwritableDirectoryIsNamed) {
  try {
    AtomicFile f("/nonexistent-dir/x/out.bin");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/out.bin"), std::string::npos);
  }
}

TEST(OutputSet, FailedRunRemovesFilesAndCreatedDirectories) {
  TempDir dir;
  const auto out = dir / "results" / "deep";
  try {
    OutputSet set;
    set.create_dir(out);
    write_file_atomic(out / "a.npy", "a");
    set.add(out / "a.npy");
    write_file_atomic(out / "b.npy", "b");
    set.add(out / "b.npy");
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "results"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(OutputSet, KeepsAPreexistingDirectoryAndOtherFiles) {
  TempDir dir;
  write_file_atomic(dir / "mine.txt", "keep");
  {
    OutputSet set;
    set.create_dir(dir.path());
    write_file_atomic(dir / "run.bin", "x");
    set.add(dir / "run.bin");
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "mine.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "run.bin"));
}

TEST(OutputSet, FinishedRunKeepsEverything) {
  TempDir dir;
  {
    OutputSet set;
    set.create_dir(dir / "r");
    write_file_atomic(dir / "r" / "a", "a");
    set.add(dir / "r" / "a");
    set.finish();
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "r" / "a"));
}

TEST(OutputSet, RefusesAFileWhereADirectoryShouldBe) {
  TempDir dir;
  write_file_atomic(dir / "f", "x");
  OutputSet set;
  EXPECT_THROW(set.create_dir(dir / "f"), std::runtime_error);
}

}  // namespace
}  // namespace hec::program
