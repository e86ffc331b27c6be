// The versioned binary container every scheme (CKKS, BFV, FHEW) writes its parameters, keys
// and ciphertexts in. Layout (all integers little-endian):
//
//   offset size  field
//   0      4     magic "HEC1"
//   4      4     format version (kFormatVersion)
//   8      1     scheme (Scheme)
//   9      1     object kind (ObjectKind)
//   10     2     reserved, zero
//   12     32    parameter digest (BLAKE2b-256 of the scheme's canonical parameter encoding)
//   44     16    key identifier (random at key generation; zero for parameters)
//   60     4     level (signed; -1 where it does not apply)
//   64     8     scale (IEEE double; 0 where it does not apply)
//   72     4     degree (ciphertext degree; count for arrays; 0 where it does not apply)
//   76     8     payload length in bytes
//   84     ...   payload
//   end    32    BLAKE2b-256 checksum over header and payload
//
// Readers check, in this order, and throw std::runtime_error naming the file and the values:
// magic, version, size (truncation), checksum, scheme, kind, parameter digest, key id.
// Writers write `path.tmp`, flush, then rename over `path`, so an interrupted write never
// leaves a complete-looking file.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hec::core {

inline constexpr char kMagic[4] = {'H', 'E', 'C', '1'};
inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderSize = 84;
inline constexpr std::size_t kChecksumSize = 32;

enum class Scheme : std::uint8_t { kCkks = 1, kBfv = 2, kFhew = 3 };

enum class ObjectKind : std::uint8_t {
  kParameters = 1,
  kSecretKey = 2,
  kPublicKey = 3,
  kRelinKey = 4,
  kGaloisKeys = 5,
  kCiphertext = 6,
  kPlaintext = 7,
  kCiphertextArray = 8,
  kCompactCiphertext = 9,  // symmetric ciphertext stored as c_0 and the seed of c_1
};

using Digest = std::array<std::uint8_t, 32>;
using KeyId = std::array<std::uint8_t, 16>;

const char* scheme_name(Scheme s);
const char* object_kind_name(ObjectKind k);
std::string to_hex(const std::uint8_t* data, std::size_t size);

// A fresh random key identifier (libsodium randombytes_buf).
KeyId new_key_id();

// BLAKE2b-256 of a byte string (libsodium crypto_generichash).
Digest blake2b_256(const std::uint8_t* data, std::size_t size);

struct ObjectHeader {
  Scheme scheme = Scheme::kCkks;
  ObjectKind kind = ObjectKind::kCiphertext;
  Digest params_digest{};
  KeyId key_id{};
  std::int32_t level = -1;
  double scale = 0.0;
  std::uint32_t degree = 0;
  std::uint64_t payload_length = 0;  // set by the writer from the payload
};

// What a reader insists on; unset optionals are not checked.
struct Expectation {
  Scheme scheme = Scheme::kCkks;
  ObjectKind kind = ObjectKind::kCiphertext;
  std::optional<Digest> params_digest;
  std::optional<KeyId> key_id;
};

struct Object {
  ObjectHeader header;
  std::vector<std::uint8_t> payload;
};

// In-memory form: header, payload, checksum.
std::vector<std::uint8_t> encode_object(ObjectHeader header,
                                        const std::vector<std::uint8_t>& payload);
// `source` names the origin in error messages (usually the file path).
Object decode_object(const std::vector<std::uint8_t>& bytes, const Expectation& expect,
                     const std::string& source);

// Files: atomic write (path.tmp then rename) and checked read.
void write_object(const std::filesystem::path& path, const ObjectHeader& header,
                  const std::vector<std::uint8_t>& payload);
Object read_object(const std::filesystem::path& path, const Expectation& expect);

}  // namespace hec::core
