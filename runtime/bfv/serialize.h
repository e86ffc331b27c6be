// BFV parameters, keys and ciphertexts in the shared container of core/serialize.h (versioned
// header, parameter digest = BLAKE2b-256 of BfvContext::canonical_encoding(), key id,
// BLAKE2b-256 checksum; files written to path.tmp and renamed). Readers check the container,
// then that the parameter digest matches the context and (for everything but parameters and
// secret-key-free objects) the key id, then every polynomial's limb count, form and that each
// residue is below its modulus, and throw std::runtime_error naming the source and values.
//
// Payloads: a polynomial is u32 limb count, u8 form (0 coefficient, 1 evaluation), then
// limbs * N little-endian u64; a ciphertext is its polynomials (count in the header's degree;
// all with one limb count, q_size() or fewer after modulus switching: the level is the count);
// a key-switching key is u32 digit count then (b_d, a_d) pairs; Galois keys are u32 count then
// (u64 element, key) pairs; parameters are BfvParams fields (log_n, t, q, p_mult, p_ks, dnum,
// allow_insecure).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bfv/ciphertext.h"
#include "bfv/context.h"
#include "core/serialize.h"

namespace hec::bfv {

core::Digest params_digest(const BfvContext& ctx);

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx);  // the parameters
std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const Ciphertext& ct);
std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const PublicKey& pk);
std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const SecretKey& sk);
std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const RelinKey& rk);
std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const GaloisKeys& gk);

// `source` names the origin in error messages; `key_id`, when given, must match.
BfvParams params_from_bytes(const std::vector<std::uint8_t>& bytes, const std::string& source);
Ciphertext ciphertext_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                 const std::vector<std::uint8_t>& bytes, const std::string& source,
                                 const std::optional<KeyId>& key_id = std::nullopt);
PublicKey public_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                const std::vector<std::uint8_t>& bytes, const std::string& source,
                                const std::optional<KeyId>& key_id = std::nullopt);
SecretKey secret_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                const std::vector<std::uint8_t>& bytes, const std::string& source);
RelinKey relin_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                              const std::vector<std::uint8_t>& bytes, const std::string& source,
                              const std::optional<KeyId>& key_id = std::nullopt);
GaloisKeys galois_keys_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                  const std::vector<std::uint8_t>& bytes, const std::string& source,
                                  const std::optional<KeyId>& key_id = std::nullopt);

// Files: atomic write; read with the same checks (the path is the source).
void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& object_bytes);
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

}  // namespace hec::bfv
