// Reading and writing CKKS objects in the shared container format (core/serialize.h).
// Every key and ciphertext file carries the parameter digest and the key id; the loaders
// take the Context (and, for ciphertexts and evaluation keys, the expected key id) and refuse
// files made under other parameters or keys with a message naming the file.
#pragma once

#include <filesystem>
#include <vector>

#include "ckks/ciphertext.h"
#include "ckks/context.h"
#include "ckks/keys.h"

namespace hec::ckks {

void save_parameters(const std::filesystem::path& path, const Parameters& params);
Parameters load_parameters(const std::filesystem::path& path);

void save(const std::filesystem::path& path, const Context& ctx, const SecretKey& sk);
void save(const std::filesystem::path& path, const Context& ctx, const PublicKey& pk);
void save(const std::filesystem::path& path, const Context& ctx, const RelinKey& rk);
void save(const std::filesystem::path& path, const Context& ctx, const GaloisKeys& gk);
void save(const std::filesystem::path& path, const Context& ctx, const Ciphertext& ct);
void save(const std::filesystem::path& path, const Context& ctx, const Plaintext& pt);
void save(const std::filesystem::path& path, const Context& ctx,
          const std::vector<Ciphertext>& cts);
// c_0 and the 32-byte seed of a (about half the size of the expanded ciphertext).
void save(const std::filesystem::path& path, const Context& ctx, const CompactCiphertext& ct);

SecretKey load_secret_key(const std::filesystem::path& path, const Context& ctx);
PublicKey load_public_key(const std::filesystem::path& path, const Context& ctx,
                          const core::KeyId& key_id);
RelinKey load_relin_key(const std::filesystem::path& path, const Context& ctx,
                        const core::KeyId& key_id);
GaloisKeys load_galois_keys(const std::filesystem::path& path, const Context& ctx,
                            const core::KeyId& key_id);
Ciphertext load_ciphertext(const std::filesystem::path& path, const Context& ctx,
                           const core::KeyId& key_id);
Plaintext load_plaintext(const std::filesystem::path& path, const Context& ctx);
CompactCiphertext load_compact_ciphertext(const std::filesystem::path& path, const Context& ctx,
                                          const core::KeyId& key_id);
std::vector<Ciphertext> load_ciphertexts(const std::filesystem::path& path, const Context& ctx,
                                         const core::KeyId& key_id);

}  // namespace hec::ckks
