// Atomic files and run-scoped output sets (see output.h).
#include "program/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace hec::program {

AtomicFile::AtomicFile(std::filesystem::path path)
    : path_(std::move(path)),
      temp_(path_.string() + ".tmp-" + std::to_string(static_cast<long>(::getpid()))) {
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error(path_.string() + ": cannot create " + temp_.string() + ": " +
                             std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

std::ostream& AtomicFile::stream() { return out_; }

void AtomicFile::commit() {
  if (committed_) return;
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
    committed_ = true;  // nothing left to clean up
    throw std::runtime_error(path_.string() + ": writing failed (disk full or I/O error)");
  }
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) {
    std::filesystem::remove(temp_, ec);
    committed_ = true;
    throw std::runtime_error(path_.string() + ": cannot rename " + temp_.string() + ": " +
                             ec.message());
  }
  committed_ = true;
}

void write_file_atomic(const std::filesystem::path& path, const std::string& bytes) {
  AtomicFile file(path);
  file.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.commit();
}

OutputSet::~OutputSet() {
  if (finished_) return;
  std::error_code ec;
  for (auto it = files_.rbegin(); it != files_.rend(); ++it) std::filesystem::remove(*it, ec);
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) {
    if (std::filesystem::is_directory(*it, ec) && std::filesystem::is_empty(*it, ec)) {
      std::filesystem::remove(*it, ec);
    }
  }
}

void OutputSet::create_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec)) {
      throw std::runtime_error(dir.string() + ": exists and is not a directory");
    }
    return;
  }
  // Record each directory level this run creates, outermost first.
  std::vector<std::filesystem::path> missing;
  for (auto p = dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  // Mode 0700: a run's directories (keys, ciphertexts, results) are its owner's alone.
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      const std::string reason = std::strerror(errno);
      throw std::runtime_error(dir.string() + ": cannot create directory " + it->string() + ": " +
                               reason);
    }
    created_dirs_.push_back(*it);
  }
}

void OutputSet::add(const std::filesystem::path& file) { files_.push_back(file); }

}  // namespace hec::program
