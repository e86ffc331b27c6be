// Atomic output for generated programs: a file becomes visible under its final name only when
// it is complete (written to a temporary name in the same directory, flushed, then renamed),
// and an `OutputSet` groups the files of one run so that a failure anywhere removes every file
// the run created: an interrupted or failed run never leaves a file that looks finished.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hec::program {

// One file written atomically. The data goes to "<path>.tmp-<pid>"; `commit()` flushes, closes
// and renames it to `path`. Destroying an uncommitted AtomicFile removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream();
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  // Flushes, checks the stream, closes and renames. Throws std::runtime_error naming the file
  // when a write failed (e.g. the disk is full); the temporary file is then removed.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Writes `bytes` to `path` atomically.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes);

// The outputs of one run. `create_dir` makes the output directory with mode 0700 (remembering
// whether it existed); `add` records a file the run has committed. Unless `finish()` is called, the
// destructor removes every recorded file and, if the run created it and it is now empty, the
// directory. A run that throws therefore leaves nothing behind.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  void create_dir(const std::filesystem::path& dir);
  void add(const std::filesystem::path& file);
  void finish() { finished_ = true; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  std::vector<std::filesystem::path> files_;
  std::vector<std::filesystem::path> created_dirs_;
  bool finished_ = false;
};

}  // namespace hec::program
