// The versioned, checksummed binary container shared by every scheme (see serialize.h).
#include "core/serialize.h"

#include <sodium.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/bytes.h"

namespace hec::core {
namespace {

void ensure_sodium() {
  static const int status = sodium_init();
  if (status < 0) throw std::runtime_error("libsodium failed to initialise");
}

}  // namespace

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::kCkks:
      return "CKKS";
    case Scheme::kBfv:
      return "BFV";
    case Scheme::kFhew:
      return "FHEW";
  }
  return "unknown scheme";
}

const char* object_kind_name(ObjectKind k) {
  switch (k) {
    case ObjectKind::kParameters:
      return "parameters";
    case ObjectKind::kSecretKey:
      return "secret key";
    case ObjectKind::kPublicKey:
      return "public key";
    case ObjectKind::kRelinKey:
      return "relinearization key";
    case ObjectKind::kGaloisKeys:
      return "Galois keys";
    case ObjectKind::kCiphertext:
      return "ciphertext";
    case ObjectKind::kPlaintext:
      return "plaintext";
    case ObjectKind::kCiphertextArray:
      return "ciphertext array";
    case ObjectKind::kCompactCiphertext:
      return "compact ciphertext";
  }
  return "unknown kind";
}

std::string to_hex(const std::uint8_t* data, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < size; ++i) {
    s.push_back(digits[data[i] >> 4]);
    s.push_back(digits[data[i] & 15]);
  }
  return s;
}

KeyId new_key_id() {
  ensure_sodium();
  KeyId id;
  randombytes_buf(id.data(), id.size());
  return id;
}

Digest blake2b_256(const std::uint8_t* data, std::size_t size) {
  ensure_sodium();
  Digest d;
  crypto_generichash(d.data(), d.size(), data, size, nullptr, 0);
  return d;
}

std::vector<std::uint8_t> encode_object(ObjectHeader header,
                                        const std::vector<std::uint8_t>& payload) {
  header.payload_length = payload.size();
  ByteWriter w;
  w.put_bytes(reinterpret_cast<const std::uint8_t*>(kMagic), 4);
  w.put_u32(kFormatVersion);
  w.put_u8(static_cast<std::uint8_t>(header.scheme));
  w.put_u8(static_cast<std::uint8_t>(header.kind));
  w.put_u8(0);
  w.put_u8(0);
  w.put_bytes(header.params_digest.data(), header.params_digest.size());
  w.put_bytes(header.key_id.data(), header.key_id.size());
  w.put_u32(static_cast<std::uint32_t>(header.level));
  w.put_f64(header.scale);
  w.put_u32(header.degree);
  w.put_u64(header.payload_length);
  w.put_bytes(payload.data(), payload.size());
  std::vector<std::uint8_t> bytes = w.take();
  const Digest sum = blake2b_256(bytes.data(), bytes.size());
  bytes.insert(bytes.end(), sum.begin(), sum.end());
  return bytes;
}

Object decode_object(const std::vector<std::uint8_t>& bytes, const Expectation& expect,
                     const std::string& source) {
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    const std::string seen = to_hex(bytes.data(), std::min<std::size_t>(4, bytes.size()));
    throw std::runtime_error(source + ": bad magic (bytes " + seen +
                             ", expected \"HEC1\" = 48454331): not a hec object file");
  }
  if (bytes.size() < kHeaderSize) {
    throw std::runtime_error(source + ": truncated: " + std::to_string(bytes.size()) +
                             " bytes, smaller than the " + std::to_string(kHeaderSize) +
                             "-byte header");
  }
  ByteReader r(bytes.data(), kHeaderSize, source);
  r.get_u32();  // magic, checked above
  const std::uint32_t version = r.get_u32();
  if (version != kFormatVersion) {
    throw std::runtime_error(source + ": unsupported format version " + std::to_string(version) +
                             " (this build reads version " + std::to_string(kFormatVersion) + ")");
  }
  Object obj;
  ObjectHeader& h = obj.header;
  h.scheme = static_cast<Scheme>(r.get_u8());
  h.kind = static_cast<ObjectKind>(r.get_u8());
  r.get_u8();
  r.get_u8();
  r.get_bytes(h.params_digest.data(), h.params_digest.size());
  r.get_bytes(h.key_id.data(), h.key_id.size());
  h.level = static_cast<std::int32_t>(r.get_u32());
  h.scale = r.get_f64();
  h.degree = r.get_u32();
  h.payload_length = r.get_u64();
  const std::uint64_t expected_size = kHeaderSize + h.payload_length + kChecksumSize;
  if (h.payload_length > bytes.size() || bytes.size() < expected_size) {
    throw std::runtime_error(source + ": truncated: " + std::to_string(bytes.size()) +
                             " bytes, but the header announces " +
                             std::to_string(h.payload_length) + " payload bytes (" +
                             std::to_string(expected_size) + " in total)");
  }
  if (bytes.size() > expected_size) {
    throw std::runtime_error(source + ": " + std::to_string(bytes.size() - expected_size) +
                             " trailing bytes after the checksum (file is " +
                             std::to_string(bytes.size()) + " bytes, header says " +
                             std::to_string(expected_size) + ")");
  }
  const std::size_t body = kHeaderSize + h.payload_length;
  const Digest sum = blake2b_256(bytes.data(), body);
  if (std::memcmp(sum.data(), bytes.data() + body, kChecksumSize) != 0) {
    throw std::runtime_error(source + ": checksum failure (stored " +
                             to_hex(bytes.data() + body, 8) + "..., computed " +
                             to_hex(sum.data(), 8) + "...): the file is corrupted");
  }
  if (h.scheme != expect.scheme) {
    throw std::runtime_error(
        source + ": wrong scheme: file holds " + std::string(scheme_name(h.scheme)) + " (code " +
        std::to_string(static_cast<int>(h.scheme)) + "), expected " + scheme_name(expect.scheme));
  }
  if (h.kind != expect.kind) {
    throw std::runtime_error(source + ": wrong kind: file holds a " +
                             std::string(object_kind_name(h.kind)) + " (code " +
                             std::to_string(static_cast<int>(h.kind)) + "), expected a " +
                             object_kind_name(expect.kind));
  }
  if (expect.params_digest && *expect.params_digest != h.params_digest) {
    throw std::runtime_error(source + ": parameter digest mismatch: file was made under " +
                             "parameters " + to_hex(h.params_digest.data(), 8) + "..., these are " +
                             to_hex(expect.params_digest->data(), 8) + "...");
  }
  if (expect.key_id && *expect.key_id != h.key_id) {
    throw std::runtime_error(source + ": key id mismatch: file was made under key " +
                             to_hex(h.key_id.data(), h.key_id.size()) + ", expected key " +
                             to_hex(expect.key_id->data(), expect.key_id->size()));
  }
  obj.payload.assign(bytes.begin() + kHeaderSize, bytes.begin() + body);
  return obj;
}

void write_object(const std::filesystem::path& path, const ObjectHeader& header,
                  const std::vector<std::uint8_t>& payload) {
  const std::vector<std::uint8_t> bytes = encode_object(header, payload);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot open for writing");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(tmp);
      throw std::runtime_error(tmp.string() + ": write failed after " +
                               std::to_string(bytes.size()) + " bytes requested");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::runtime_error(path.string() + ": cannot rename " + tmp.string() + ": " +
                             ec.message());
  }
}

Object read_object(const std::filesystem::path& path, const Expectation& expect) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open for reading");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  return decode_object(bytes, expect, path.string());
}

}  // namespace hec::core
