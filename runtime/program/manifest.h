// What ties the files of one run together and says who made them (DESIGN.md §8; issue 25).
//
// Metadata documents ("hec-meta 2"): "key value" lines, then "checksum <BLAKE2b-256 of the
// lines>" (detects damage), then optionally "signature <Ed25519 over the lines>" by the party
// the "signer" line names. The checksum is unkeyed: anyone who can write a file can recompute
// it. The signature is what makes a document trustworthy: it is verified against the signer's
// public key in the run's manifest.
//
// The run manifest (KEYDIR/manifest, made by keygen and signed by the coordinator) holds the
// run id (16 bytes from libsodium's CSPRNG), the program digest, the parameter digest, the key
// id, the inputs (array id, source name, dimensions), the rows of the stream dimension and each
// data owner's share of them, the parties' Ed25519 public keys (coordinator, server, owners)
// and free bindings (for GWAS the digest of the SNP list with alleles). Every ciphertext,
// result and metadata file of the run carries the run id, its array or output name and its
// shard, so that compute refuses missing, extra, stale, duplicated and swapped shards and
// decrypt refuses results of another run, program or output.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hec::program {

// ------------------------------------------------------------------------------------------
// Ed25519 signing keys (libsodium crypto_sign)
// ------------------------------------------------------------------------------------------

using VerifyKey = std::array<std::uint8_t, 32>;

// A party's signing key; the secret half is wiped when the object goes away.
class SigningKey {
 public:
  SigningKey();  // a fresh key pair from libsodium's CSPRNG
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;
  SigningKey(SigningKey&& other) noexcept;

  const VerifyKey& verify_key() const { return public_; }
  // Detached Ed25519 signature of `text`, hex.
  std::string sign(const std::string& text) const;

  // FILE: "hec-signing-key 1\n<hex secret>\n", created 0600 atomically; FILE.pub: the public key.
  void save(const std::filesystem::path& path) const;
  static SigningKey load(const std::filesystem::path& path);

 private:
  std::array<std::uint8_t, 64> secret_{};
  VerifyKey public_{};
};

// Reads FILE.pub (or a signing key file, taking its public half).
VerifyKey load_verify_key(const std::filesystem::path& path);
std::string verify_key_hex(const VerifyKey& key);
VerifyKey parse_verify_key(const std::string& hex, const std::string& where);
bool verify_signature(const VerifyKey& key, const std::string& text, const std::string& sig_hex);

// ------------------------------------------------------------------------------------------
// Metadata documents
// ------------------------------------------------------------------------------------------

using MetaLines = std::vector<std::pair<std::string, std::string>>;

struct MetaDoc {
  std::filesystem::path path;
  std::string body;  // the signed text: header line and key-value lines
  std::map<std::string, std::string> fields;
  std::string signature;  // hex, empty when unsigned

  // The value of `key`; throws naming the file when it is missing.
  const std::string& field(const std::string& key) const;
  std::optional<std::string> find(const std::string& key) const;
};

// The document text, signed by `signer` (its name goes in a "signer" line) when given.
std::string meta_document(const MetaLines& lines, const SigningKey* signer = nullptr,
                          const std::string& signer_name = "");
// Writes it atomically (mode 0644).
void write_meta(const std::filesystem::path& path, const MetaLines& lines,
                const SigningKey* signer = nullptr, const std::string& signer_name = "");
// Parses and checks the checksum; throws naming the file. `text` overload for fuzzing.
MetaDoc read_meta(const std::filesystem::path& path);
MetaDoc parse_meta(const std::string& text, const std::filesystem::path& path);

// ------------------------------------------------------------------------------------------
// The run manifest
// ------------------------------------------------------------------------------------------

struct OwnerEntry {
  std::string name;
  std::size_t begin = 0, end = 0;  // its rows of the stream dimension ([0, 0): none)
  std::optional<VerifyKey> key;    // nullopt: its uploads are not signed
};

struct Manifest {
  std::filesystem::path path;
  std::string run_id;  // 32 hex digits
  std::string program, program_digest, params_digest, key_id;
  std::optional<std::size_t> rows;  // the stream dimension's size, when keygen fixed it
  std::vector<OwnerEntry> owners;
  VerifyKey coordinator{};
  std::optional<VerifyKey> server;
  std::map<std::string, std::string> bindings;  // "bind.KEY VALUE" lines
  // "size.NAME V" lines: size parameters keygen fixed (--size), for the sizes no upload
  // carries (a parameter the server computes with, e.g. `x / (M + 1)`, whose only input the
  // program does not read); an upload that carries one must agree.
  std::map<std::string, std::size_t> sizes;

  const OwnerEntry* owner(const std::string& name) const;
  // Throws naming `doc`'s file unless it was made in this run (run id, program digest).
  void check_same_run(const MetaDoc& doc, const std::string& what) const;
  // Verifies `doc`'s signature against the key its "signer" names in this manifest (the
  // coordinator, the server or an owner); throws naming the file and the signer unless it is
  // valid. A party without a registered key may not sign and its documents pass unsigned only
  // if `allow_unsigned_when_unregistered`.
  void check_signature(const MetaDoc& doc, const std::string& expected_signer) const;
};

// A fresh run id (libsodium randombytes_buf), hex.
std::string new_run_id();
Manifest read_manifest(const std::filesystem::path& path);
Manifest parse_manifest(const MetaDoc& doc);

}  // namespace hec::program
