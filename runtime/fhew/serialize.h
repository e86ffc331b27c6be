// Files of the boolean scheme: secret key, evaluation key (blind-rotation key and
// key-switching key) and ciphertext arrays, in the versioned container of the CKKS files
// (branch ckks, runtime/core/serialize.h), re-implemented here on the same layout and rules
// until the two are unified (one shared implementation in core/ once branch ckks lands):
//
//   offset size  field
//   0      4     magic "HEC1"
//   4      4     format version (1)
//   8      1     scheme (3 = FHEW)
//   9      1     object kind (2 secret key, 3 public key, 8 ciphertext array, 9 FHEW
//                evaluation key)
//   10     2     reserved, zero
//   12     32    parameter digest (Params::digest(), BLAKE2b-256 of the canonical encoding)
//   44     16    key identifier (random at key generation)
//   60     4     level (-1: not applicable)
//   64     8     scale (0.0: not applicable)
//   72     4     degree (number of ciphertexts for arrays, 0 otherwise)
//   76     8     payload length in bytes
//   84     ...   payload (little-endian)
//   end    32    BLAKE2b-256 checksum over header and payload
//
// Readers check, in this order, and throw std::runtime_error naming the file and the
// values: magic, version, size (truncation), checksum, scheme, kind, parameter digest, key
// id. Writers write `path.tmp` then rename, so an interrupted write never leaves a
// complete-looking file.
//
// The public key payload is the seed of its A rows and the n betas (LwePublicKey). The
// evaluation key payload stores only the seeds of the uniform halves (RGSW "a" rows,
// key-switching alphas) and the dependent halves, about half the in-memory size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fhew/fhew.h"

namespace hec::fhew {

inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::size_t kHeaderSize = 84;
inline constexpr std::size_t kChecksumSize = 32;
inline constexpr std::uint8_t kSchemeFhew = 3;
enum class ObjectKind : std::uint8_t {
  kSecretKey = 2,
  kPublicKey = 3,
  kCiphertextArray = 8,
  kEvalKey = 9
};

// In-memory encodings; `source` names the origin in error messages.
std::vector<std::uint8_t> encode_secret_key(const SecretKey& sk);
SecretKey decode_secret_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                            const std::string& source);
std::vector<std::uint8_t> encode_public_key(const PublicKey& pk);
PublicKey decode_public_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                            const std::string& source);
std::vector<std::uint8_t> encode_eval_key(const EvalKey& ek);
EvalKey decode_eval_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                        const std::optional<KeyId>& expect_key_id, const std::string& source);
std::vector<std::uint8_t> encode_ciphertexts(const std::vector<Ciphertext>& cts,
                                             const Params& params);
std::vector<Ciphertext> decode_ciphertexts(const std::vector<std::uint8_t>& bytes,
                                           const Params& params,
                                           const std::optional<KeyId>& expect_key_id,
                                           const std::string& source);

// Files.
void save_secret_key(const std::filesystem::path& path, const SecretKey& sk);
SecretKey load_secret_key(const std::filesystem::path& path, const Params& params);
void save_public_key(const std::filesystem::path& path, const PublicKey& pk);
PublicKey load_public_key(const std::filesystem::path& path, const Params& params);
void save_eval_key(const std::filesystem::path& path, const EvalKey& ek);
EvalKey load_eval_key(const std::filesystem::path& path, const Params& params,
                      const std::optional<KeyId>& expect_key_id = std::nullopt);
void save_ciphertexts(const std::filesystem::path& path, const std::vector<Ciphertext>& cts,
                      const Params& params);
std::vector<Ciphertext> load_ciphertexts(const std::filesystem::path& path, const Params& params,
                                         const std::optional<KeyId>& expect_key_id);

}  // namespace hec::fhew
