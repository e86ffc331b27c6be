// The labeled-HE file container (see files.h).
#include "labhe/files.h"

#include <sodium.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "program/output.h"

namespace hec::labhe {

namespace {
constexpr char kMagic[4] = {'H', 'E', 'C', 'L'};
constexpr std::uint32_t kVersion = 2;  // 1 ended in XXH3-128, not cryptographic
constexpr std::size_t kHeader = 4 + 4 + 1 + 32 + 16 + 8;
constexpr std::size_t kSum = crypto_generichash_BYTES;  // BLAKE2b-256

std::string digest_bytes(const std::string& hex) {
  if (hex.size() != 64) throw std::logic_error("plan digest must be 64 hex characters");
  std::string out(32, '\0');
  for (std::size_t i = 0; i < 32; ++i)
    out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string digest_hex(const std::string& raw) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string checksum(const std::string& data) {
  std::string out(kSum, '\0');
  crypto_generichash(reinterpret_cast<unsigned char*>(out.data()), kSum,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size(), nullptr, 0);
  return out;
}
}  // namespace

std::string file_kind_name(FileKind k) {
  switch (k) {
    case FileKind::kPublicKey:
      return "public key";
    case FileKind::kReceiverSecret:
      return "receiver secret key";
    case FileKind::kProviderKey:
      return "provider key";
    case FileKind::kOffline:
      return "offline encryption";
    case FileKind::kUpload:
      return "provider upload";
    case FileKind::kResult:
      return "evaluation result";
    case FileKind::kMasks:
      return "offline decryption";
  }
  return "unknown (" + std::to_string(static_cast<int>(k)) + ")";
}

void Writer::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Writer::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Writer::bytes(const std::string& s) {
  u64(s.size());
  out_ += s;
}
void Writer::fixed(const Int& v, std::size_t width) { out_ += to_bytes(v, width); }
void Writer::big(const Int& v) { bytes(to_bytes(v, (v.bits() + 7) / 8)); }

void Reader::need(std::size_t n) const {
  if (data_.size() - pos_ < n) throw std::runtime_error(what_ + ": truncated payload");
}
std::uint8_t Reader::u8() {
  need(1);
  return static_cast<std::uint8_t>(data_[pos_++]);
}
std::uint32_t Reader::u32() {
  need(4);
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= std::uint32_t{static_cast<std::uint8_t>(data_[pos_++])} << (8 * i);
  return v;
}
std::uint64_t Reader::u64() {
  need(8);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= std::uint64_t{static_cast<std::uint8_t>(data_[pos_++])} << (8 * i);
  return v;
}
std::string Reader::bytes() {
  std::uint64_t n = u64();
  need(n);
  std::string s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}
void Reader::raw(void* out, std::size_t n) {
  need(n);
  std::memcpy(out, data_.data() + pos_, n);
  pos_ += n;
}
Int Reader::fixed(std::size_t width) {
  need(width);
  Int v = from_bytes(reinterpret_cast<const std::uint8_t*>(data_.data() + pos_), width);
  pos_ += width;
  return v;
}
Int Reader::big() { return from_bytes(bytes()); }
void Reader::expect_done() const {
  if (!done()) throw std::runtime_error(what_ + ": unexpected bytes after the payload");
}

void write_object(const std::filesystem::path& path, const FileHeader& header,
                  const std::string& payload, bool secret) {
  Writer w;
  w.raw(kMagic, 4);
  w.u32(kVersion);
  w.u8(static_cast<std::uint8_t>(header.kind));
  w.raw(digest_bytes(header.plan_digest).data(), 32);
  w.raw(header.key_id.data(), header.key_id.size());
  w.u64(payload.size());
  std::string& data = w.data();
  data += payload;
  data += checksum(data);
  program::AtomicFile file(path);
  if (secret) ::chmod(file.temp_path().c_str(), 0600);
  file.stream().write(data.data(), static_cast<std::streamsize>(data.size()));
  file.commit();
}

std::string read_object(const std::filesystem::path& path, FileKind kind,
                        const std::string& plan_digest, const KeyId& key_id, bool any_key,
                        KeyId* key_id_out) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(name + ": cannot open (expected a " + file_kind_name(kind) + ")");
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string data = buf.str();
  if (data.size() < kHeader + kSum || std::memcmp(data.data(), kMagic, 4) != 0) {
    throw std::runtime_error(name + ": not a hec labeled-HE file (expected a " +
                             file_kind_name(kind) + ")");
  }
  Reader r(name, data);
  char magic[4];
  r.raw(magic, 4);
  std::uint32_t version = r.u32();
  if (version != kVersion) {
    throw std::runtime_error(name + ": format version " + std::to_string(version) +
                             ", this program reads version " + std::to_string(kVersion));
  }
  auto got_kind = static_cast<FileKind>(r.u8());
  std::string digest(32, '\0');
  r.raw(digest.data(), 32);
  KeyId id{};
  r.raw(id.data(), id.size());
  std::uint64_t length = r.u64();
  if (data.size() != kHeader + length + kSum) {
    throw std::runtime_error(name + ": truncated or padded (payload of " + std::to_string(length) +
                             " bytes declared, file has " + std::to_string(data.size()) + ")");
  }
  if (checksum(data.substr(0, kHeader + length)) != data.substr(kHeader + length)) {
    throw std::runtime_error(name + ": checksum mismatch (the file is damaged)");
  }
  if (got_kind != kind) {
    throw std::runtime_error(name + ": is a " + file_kind_name(got_kind) + ", expected a " +
                             file_kind_name(kind));
  }
  if (digest_hex(digest) != plan_digest) {
    throw std::runtime_error(name + ": made for another labeled program (plan digest " +
                             digest_hex(digest).substr(0, 16) + "..., this program is " +
                             plan_digest.substr(0, 16) + "...)");
  }
  if (!any_key && id != key_id) {
    throw std::runtime_error(name +
                             ": made under other keys (key id differs from the public key's)");
  }
  if (key_id_out != nullptr) *key_id_out = id;
  return data.substr(kHeader, length);
}

}  // namespace hec::labhe
