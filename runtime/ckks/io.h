// Reading and writing CKKS objects in the shared container format (core/serialize.h).
// Every key and ciphertext file carries the parameter digest and the key id; the loaders
// take the Context (and, for ciphertexts and evaluation keys, the expected key id) and refuse
// files made under other parameters or keys with a message naming the file.
#pragma once

#include <filesystem>
#include <optional>
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
// The same file from pointers (the server writes its results without copying them).
void save(const std::filesystem::path& path, const Context& ctx,
          const std::vector<const Ciphertext*>& cts);
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
// `content`: the digest a signed record binds the file to (core::Expectation::content).
std::vector<Ciphertext> load_ciphertexts(const std::filesystem::path& path, const Context& ctx,
                                         const core::KeyId& key_id,
                                         const std::optional<core::Checksum>& content = {});

// A ciphertext array written one ciphertext at a time (the file of `save(path, ctx, cts)`),
// so that a data owner never holds more than it is encrypting. `payload_bytes` is the sum of
// record_bytes over the ciphertexts to come; finish() checks the count and renames the file
// into place (destroyed earlier, it leaves nothing behind).
//
// A record (kind kPackedCiphertextArray): u32 level, f64 scale, u32 degree, then each
// polynomial's limbs in order, limb i's n residues packed at math::packed_bits(q_i) bits
// (math/pack.h): 16 + (degree + 1) * sum_i n * bits_i / 8 bytes. The reader checks every
// residue against its modulus.
class CiphertextArrayWriter {
 public:
  CiphertextArrayWriter(const std::filesystem::path& path, const Context& ctx,
                        const core::KeyId& key_id, std::size_t count, std::uint64_t payload_bytes);
  // The bytes of one record at `level` and `degree` (level, scale, degree, packed limbs).
  static std::uint64_t record_bytes(const Context& ctx, Level level, std::size_t degree);
  static std::uint64_t record_bytes(const Context& ctx, const Ciphertext& ct) {
    return record_bytes(ctx, ct.level, ct.degree);
  }
  void append(const Ciphertext& ct);
  void finish();

 private:
  const Context& ctx_;
  std::vector<std::uint8_t> packed_;  // one limb, packed
  core::KeyId key_id_;
  std::size_t count_, written_ = 0;
  core::ObjectWriter writer_;
};

// A ciphertext array read one ciphertext at a time into the caller's ciphertext (whose
// storage is reused). The checksum is verified by finish(), after the last ciphertext:
// nothing computed from the ciphertexts may be released before it returns. With `content`,
// finish() also requires the digest a signed record bound the file to.
class CiphertextArrayReader {
 public:
  CiphertextArrayReader(const std::filesystem::path& path, const Context& ctx,
                        const core::KeyId& key_id,
                        const std::optional<core::Checksum>& content = {});
  std::size_t count() const { return reader_.header().degree; }
  void next(Ciphertext& ct);
  // The next `count` ciphertexts into *out[0..count), read by up to `threads` threads at
  // once. Every one must have the level, degree and scale of the array's first (as every
  // input array has); a different one is an error naming the file and the index. One thread
  // reads, hashes and unpacks each ciphertext in turn (in cache); more read all, hash all,
  // then unpack all, each step spread over the threads.
  void next_batch(Ciphertext* const* out, std::size_t count, int threads);
  void finish();

 private:
  struct Shape {
    Level level{0};
    std::size_t limbs = 0;
    std::uint32_t degree = 0;
    double scale = 0;
  };
  // The packed bytes of a record are read into the tail of the ciphertext's own storage and
  // unpacked forward in place (math::unpack_residues), each residue checked.
  static std::uint8_t* packed_tail(Ciphertext& ct, std::uint64_t packed);
  void unpack(Ciphertext& ct, std::uint64_t packed, std::size_t index) const;
  const Context& ctx_;
  core::KeyId key_id_;
  std::size_t read_ = 0;
  Shape first_;
  core::ObjectReader reader_;
};

}  // namespace hec::ckks
