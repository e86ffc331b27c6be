// The files of a labeled-HE run: one small container for every kind (keys, offline
// encryptions, uploads, results, offline decryptions), so that a file from another program,
// another key or of another kind is refused by name, and a damaged file by its checksum.
// Layout (integers little-endian):
//   0   4   magic "HECL"         4  4  version (2)        8  1  kind (FileKind)
//   9   32  plan digest (BLAKE2b-256 of the labeled program)   41 16 key id (random at setup)
//   57  8   payload length        65 ... payload           end 32 BLAKE2b-256 of all before it
// The digest detects damage, and binds the content wherever it is signed (version 1 ended in
// XXH3-128, which is not cryptographic, and is refused by its version). Writes are atomic
// (temporary name, rename); secret files are created 0600.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>

#include "labhe/bigint.h"

namespace hec::labhe {

enum class FileKind : std::uint8_t {
  kPublicKey = 1,
  kReceiverSecret = 2,
  kProviderKey = 3,
  kOffline = 4,
  kUpload = 5,
  kResult = 6,
  kMasks = 7,
};
std::string file_kind_name(FileKind k);

using KeyId = std::array<std::uint8_t, 16>;

// Payload builder and reader (length-prefixed strings, fixed-width integers).
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void bytes(const std::string& s);  // u64 length + bytes
  void raw(const void* data, std::size_t n) { out_.append(static_cast<const char*>(data), n); }
  void fixed(const Int& v, std::size_t width);  // big-endian, exactly `width` bytes
  void big(const Int& v);                       // length-prefixed, non-negative
  const std::string& data() const { return out_; }
  std::string& data() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string what, const std::string& data) : what_(std::move(what)), data_(data) {}
  std::uint8_t u8();
  std::uint32_t u32();
  std::uint64_t u64();
  std::string bytes();
  void raw(void* out, std::size_t n);
  Int fixed(std::size_t width);
  Int big();
  bool done() const { return pos_ == data_.size(); }
  void expect_done() const;

 private:
  void need(std::size_t n) const;
  std::string what_;
  const std::string& data_;
  std::size_t pos_ = 0;
};

struct FileHeader {
  FileKind kind;
  std::string plan_digest;  // hex, 64 characters
  KeyId key_id{};
};

// Writes header + payload + checksum to `path` atomically (mode 0600 when `secret`).
void write_object(const std::filesystem::path& path, const FileHeader& header,
                  const std::string& payload, bool secret);
// Reads `path`; checks magic, version, size, checksum, kind, plan digest and (unless
// `any_key`) key id, each with a message naming the file and both values. Returns the payload.
std::string read_object(const std::filesystem::path& path, FileKind kind,
                        const std::string& plan_digest, const KeyId& key_id, bool any_key = false,
                        KeyId* key_id_out = nullptr);

}  // namespace hec::labhe
