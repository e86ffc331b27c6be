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
//   end    32    digest of header and payload: BLAKE3-256 (core/blake3.h) of the bytes before it
//
// The digest detects damaged and truncated files. By itself it is not an authenticator (a
// party that can replace a file can recompute it), but it is collision and second-preimage
// resistant, so a signature over it (program/files.h: an upload's signed metadata, a result's
// signed metadata) binds the whole content (issue 25).
//
// History of the digest, each change made because verifying it was most of the server's time
// (issue 22: the server reads every upload, 1.80 GB at N = 1000 in `hec gwas logistic`):
// - version 6: BLAKE3-256 of the whole stream. A tree hash, so a reader's large reads are
//   hashed on several threads (whole 1 MiB subtrees) with the same result as one pass, and
//   its 16-lane AVX-512 kernel hashes several times the bytes per core of SHA-256 on the CPU's
//   SHA extensions (docs/bench.md, `bench/run digest`).
// - version 5: SHA-256 (OpenSSL, SHA extensions) of 0x01, the length and the SHA-256 of each
//   1 MiB chunk (prefixed 0x00): a hash list for threads, 1.66x the bytes per CPU second of
//   BLAKE2b, and still about 2 GB/s a core.
// - version 4: the same hash list over BLAKE2b-256 (libsodium).
// - version 3: one BLAKE2b-256 pass over the stream, which one core had to do for every upload.
// - version 2: an XXH3-128 checksum, which is not cryptographic: a signature over it bound
//   nothing a determined party could not forge.
// Files of every older version are refused with their version named.
//
// Readers check, in this order, and throw std::runtime_error naming the file and the values:
// magic, version, size (truncation), checksum, scheme, kind, parameter digest, key id.
// Writers write `path.tmp` (created exclusively with its final mode: 0600 for secret keys),
// fsync, then rename over `path`, so an interrupted write never leaves a complete-looking
// file and a secret key is never readable by others, not even while it is written.
//
// Large objects (ciphertext arrays of hundreds of MiB) go through ObjectWriter and
// ObjectReader, which stream the payload through a small buffer into or out of the caller's
// memory: no whole-file copy, and the checksum is computed on the way. A streaming reader
// checks the header fields (magic, version, size, scheme, kind, digest, key id) first and the
// checksum when the caller finishes; its caller must not let anything it derived from the
// payload escape before finish() returns (the generated programs write their outputs
// atomically, after finish()).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hec::core {

inline constexpr char kMagic[4] = {'H', 'E', 'C', '1'};
inline constexpr std::uint32_t kFormatVersion = 6;
inline constexpr std::size_t kHeaderSize = 84;
inline constexpr std::size_t kChecksumSize = 32;
// Fuzzing builds (runtime/fuzz, the libFuzzer convention's macro) skip checksum verification so
// that mutated inputs reach the parsers behind it; never defined in a build that ships.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr bool kSkipChecksums = true;
#else
inline constexpr bool kSkipChecksums = false;
#endif

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
  // CKKS ciphertext arrays since kind 8 (64-bit words): every limb's residues at its
  // modulus's bit width (math/pack.h, ckks/io.h), about a third fewer bytes at 42-bit primes.
  kPackedCiphertextArray = 10,
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

// The container digest of header and payload (BLAKE3-256, above).
using Checksum = std::array<std::uint8_t, kChecksumSize>;
Checksum checksum(const std::uint8_t* data, std::size_t size);
// A digest written as 64 hex digits (a .meta file's content_checksum), else an error naming
// `source`.
Checksum checksum_from_hex(const std::string& hex, const std::string& source);

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
  // The digest a signed record bound this file to (an upload's or a result's .meta,
  // program/files.h): the digest the reader computes must equal it, not merely the file's own
  // trailer. The signature is checked before the file is read, so without this a file swapped
  // between that check and the read, carrying its own matching trailer, would pass.
  std::optional<Checksum> content;
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

// Who may read a file: kPrivate is 0600 (secret keys and every other secret), kPublic 0644.
enum class FileMode { kPrivate, kPublic };

// Writes `size` bytes to `path` atomically: path.tmp is created exclusively (O_EXCL, no
// symbolic link followed) with its final mode, so a private file is never readable by
// anyone else at any moment; the bytes are written and fsync'ed, then path.tmp is renamed
// over path. On failure path.tmp is removed and path is untouched.
void write_bytes_atomic(const std::filesystem::path& path, const std::uint8_t* data,
                        std::size_t size, FileMode mode);
// kPrivate for a serialized secret key (the container's kind byte), else kPublic.
FileMode file_mode_of(const std::vector<std::uint8_t>& object_bytes);

// Files: atomic write (write_bytes_atomic; a secret key 0600, its encoding wiped after the
// write) and checked read.
void write_object(const std::filesystem::path& path, const ObjectHeader& header,
                  const std::vector<std::uint8_t>& payload);
Object read_object(const std::filesystem::path& path, const Expectation& expect);

// Streaming writer: the header (with header.payload_length already set to the exact payload
// size) is written at construction, then the payload in any number of put calls, then
// finish() writes the checksum and renames path.tmp over path. If it is destroyed before
// finish() (an exception), path.tmp is removed and path is untouched.
class ObjectWriter {
 public:
  ObjectWriter(std::filesystem::path path, const ObjectHeader& header);
  ~ObjectWriter();
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;

  void put(const void* data, std::size_t size);
  void put_u32(std::uint32_t v);
  void put_f64(double v);
  void put_u64s(const std::uint64_t* data, std::size_t count) { put(data, 8 * count); }
  void finish();

 private:
  struct State;
  void flush_buffer();
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  std::uint64_t remaining_ = 0;  // payload bytes still owed
  std::vector<std::uint8_t> buffer_;
  State* state_ = nullptr;  // the running checksum
  bool finished_ = false;
};

// Streaming reader: checks the header against `expect` (and the file size against the
// header) at construction; the payload is then read in order with get calls; finish() checks
// that the payload was consumed exactly and verifies the checksum (and, when the expectation
// pins one, that it is the signed digest).
class ObjectReader {
 public:
  ObjectReader(std::filesystem::path path, const Expectation& expect);
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  const ObjectHeader& header() const { return header_; }
  const std::filesystem::path& path() const { return path_; }
  std::uint64_t remaining() const { return remaining_; }
  void get(void* out, std::size_t size);
  std::uint32_t get_u32();
  double get_f64();
  void get_u64s(std::uint64_t* out, std::size_t count) { get(out, 8 * count); }
  // The next sum(size) payload bytes into the pieces, in order, read by up to `threads`
  // threads at once (positioned reads); the checksum is updated in order afterwards.
  struct Piece {
    void* data;
    std::size_t size;
  };
  void get_scattered(const std::vector<Piece>& pieces, int threads);
  void finish();

 private:
  struct State;
  void fill();
  void read_raw(void* out, std::size_t size);  // no checksum, no payload accounting
  std::filesystem::path path_;
  int fd_ = -1;
  ObjectHeader header_;
  std::uint64_t remaining_ = 0;  // payload bytes not yet handed out
  std::vector<std::uint8_t> buffer_;
  std::size_t buf_pos_ = 0, buf_len_ = 0;
  std::uint64_t file_pos_ = 0;       // file offset of the first byte not yet buffered
  std::optional<Checksum> content_;  // Expectation::content
  State* state_ = nullptr;
};

}  // namespace hec::core
