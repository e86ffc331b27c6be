// Ed25519 signing keys, signed metadata documents and the run manifest (see manifest.h).
#include "program/manifest.h"

#include <sodium.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/serialize.h"
#include "program/output.h"

namespace hec::program {

namespace {

constexpr const char* kMetaHeader = "hec-meta 2\n";
constexpr const char* kKeyHeader = "hec-signing-key 1\n";
constexpr const char* kPubHeader = "hec-verify-key 1\n";

void ensure_sodium() {
  static const int status = sodium_init();
  if (status < 0) throw std::runtime_error("libsodium failed to initialise");
}

std::string hex(const std::uint8_t* data, std::size_t size) { return core::to_hex(data, size); }

// Hex text -> bytes; false unless it is exactly `size` bytes of hex.
bool unhex(const std::string& text, std::uint8_t* out, std::size_t size) {
  if (text.size() != 2 * size) return false;
  std::size_t bin_len = 0;
  return sodium_hex2bin(out, size, text.data(), text.size(), nullptr, &bin_len, nullptr) == 0 &&
         bin_len == size;
}

std::string read_text(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (missing " + what + ")");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string strip(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Signing keys
// ------------------------------------------------------------------------------------------

SigningKey::SigningKey() {
  ensure_sodium();
  crypto_sign_keypair(public_.data(), secret_.data());
}

SigningKey::~SigningKey() { sodium_memzero(secret_.data(), secret_.size()); }

SigningKey::SigningKey(SigningKey&& other) noexcept
    : secret_(other.secret_), public_(other.public_) {
  sodium_memzero(other.secret_.data(), other.secret_.size());
}

std::string SigningKey::sign(const std::string& text) const {
  std::array<std::uint8_t, crypto_sign_BYTES> sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(text.data()),
                       text.size(), secret_.data());
  return hex(sig.data(), sig.size());
}

void SigningKey::save(const std::filesystem::path& path) const {
  std::string text = std::string(kKeyHeader) + hex(secret_.data(), secret_.size()) + "\n";
  core::write_bytes_atomic(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size(),
                           core::FileMode::kPrivate);
  sodium_memzero(text.data(), text.size());
  const std::string pub = std::string(kPubHeader) + verify_key_hex(public_) + "\n";
  core::write_bytes_atomic(path.string() + ".pub",
                           reinterpret_cast<const std::uint8_t*>(pub.data()), pub.size(),
                           core::FileMode::kPublic);
}

SigningKey SigningKey::load(const std::filesystem::path& path) {
  ensure_sodium();
  std::string text = read_text(path, "signing key");
  SigningKey key;
  const std::size_t header = std::string(kKeyHeader).size();
  const bool ok = text.rfind(kKeyHeader, 0) == 0 &&
                  unhex(strip(text.substr(header)), key.secret_.data(), key.secret_.size());
  sodium_memzero(text.data(), text.size());
  if (!ok) throw std::runtime_error(path.string() + ": not a hec signing key");
  crypto_sign_ed25519_sk_to_pk(key.public_.data(), key.secret_.data());
  return key;
}

std::string verify_key_hex(const VerifyKey& key) { return hex(key.data(), key.size()); }

VerifyKey parse_verify_key(const std::string& text, const std::string& where) {
  VerifyKey key{};
  if (!unhex(text, key.data(), key.size())) {
    throw std::runtime_error(where + ": not an Ed25519 public key (64 hex digits)");
  }
  return key;
}

VerifyKey load_verify_key(const std::filesystem::path& path) {
  const std::string text = read_text(path, "public signing key");
  if (text.rfind(kKeyHeader, 0) == 0) return SigningKey::load(path).verify_key();
  if (text.rfind(kPubHeader, 0) != 0) {
    throw std::runtime_error(path.string() + ": not a hec public signing key (" +
                             "made by the program's signkey command as FILE.pub)");
  }
  return parse_verify_key(strip(text.substr(std::string(kPubHeader).size())), path.string());
}

bool verify_signature(const VerifyKey& key, const std::string& text, const std::string& sig_hex) {
  ensure_sodium();
  std::array<std::uint8_t, crypto_sign_BYTES> sig{};
  if (!unhex(sig_hex, sig.data(), sig.size())) return false;
  return crypto_sign_verify_detached(sig.data(),
                                     reinterpret_cast<const unsigned char*>(text.data()),
                                     text.size(), key.data()) == 0;
}

// ------------------------------------------------------------------------------------------
// Metadata documents
// ------------------------------------------------------------------------------------------

const std::string& MetaDoc::field(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end())
    throw std::runtime_error(path.string() + ": metadata lacks '" + key + "'");
  return it->second;
}

std::optional<std::string> MetaDoc::find(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  return it->second;
}

std::string meta_document(const MetaLines& lines, const SigningKey* signer,
                          const std::string& signer_name) {
  std::string body = kMetaHeader;
  for (const auto& [k, v] : lines) {
    if (k.empty() || k.find_first_of(" \n") != std::string::npos ||
        v.find('\n') != std::string::npos) {
      throw std::logic_error("metadata line '" + k + "' cannot be written");
    }
    body += k + " " + v + "\n";
  }
  if (signer != nullptr) body += "signer " + signer_name + "\n";
  ensure_sodium();
  const auto digest =
      core::blake2b_256(reinterpret_cast<const std::uint8_t*>(body.data()), body.size());
  std::string text = body + "checksum " + hex(digest.data(), digest.size()) + "\n";
  if (signer != nullptr) text += "signature " + signer->sign(body) + "\n";
  return text;
}

void write_meta(const std::filesystem::path& path, const MetaLines& lines, const SigningKey* signer,
                const std::string& signer_name) {
  write_file_atomic(path, meta_document(lines, signer, signer_name));
}

MetaDoc parse_meta(const std::string& all, const std::filesystem::path& path) {
  if (all.rfind("hec-meta 1\n", 0) == 0) {
    throw std::runtime_error(path.string() +
                             ": metadata format 1 (an older hec): it carries no run id; "
                             "encrypt again under this run's manifest");
  }
  const auto pos = all.rfind("\nchecksum ");
  if (all.rfind(kMetaHeader, 0) != 0 || pos == std::string::npos) {
    throw std::runtime_error(path.string() + ": not a hec metadata file (bad header)");
  }
  MetaDoc doc;
  doc.path = path;
  doc.body = all.substr(0, pos + 1);
  std::istringstream tail(all.substr(pos + 1));
  std::string line, checksum_hex;
  while (std::getline(tail, line)) {
    line = strip(line);
    if (line.rfind("checksum ", 0) == 0) {
      checksum_hex = line.substr(9);
    } else if (line.rfind("signature ", 0) == 0) {
      doc.signature = line.substr(10);
    } else if (!line.empty()) {
      throw std::runtime_error(path.string() + ": unexpected line after the checksum");
    }
  }
  ensure_sodium();
  const auto digest =
      core::blake2b_256(reinterpret_cast<const std::uint8_t*>(doc.body.data()), doc.body.size());
  if (!core::kSkipChecksums && checksum_hex != hex(digest.data(), digest.size())) {
    throw std::runtime_error(path.string() + ": checksum mismatch (the file is damaged)");
  }
  std::istringstream lines(doc.body);
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    if (!doc.fields.emplace(key, sp == std::string::npos ? "" : line.substr(sp + 1)).second) {
      throw std::runtime_error(path.string() + ": metadata key '" + key + "' appears twice");
    }
  }
  return doc;
}

MetaDoc read_meta(const std::filesystem::path& path) {
  return parse_meta(read_text(path, "metadata file"), path);
}

// ------------------------------------------------------------------------------------------
// Manifest
// ------------------------------------------------------------------------------------------

std::string new_run_id() {
  ensure_sodium();
  std::array<std::uint8_t, 16> id{};
  randombytes_buf(id.data(), id.size());
  return hex(id.data(), id.size());
}

const OwnerEntry* Manifest::owner(const std::string& name) const {
  for (const auto& o : owners) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

void Manifest::check_same_run(const MetaDoc& doc, const std::string& what) const {
  const std::string& digest = doc.field("program_digest");
  if (digest != program_digest) {
    throw std::runtime_error(doc.path.string() + ": " + what + " made for program '" +
                             doc.field("program") + "' (digest " + digest.substr(0, 16) +
                             "...), not for this run's program '" + program + "' (digest " +
                             program_digest.substr(0, 16) + "...)");
  }
  const std::string& run = doc.field("run_id");
  if (run != run_id) {
    throw std::runtime_error(doc.path.string() + ": " + what + " of run " + run +
                             ", not of this run " + run_id + " (" + path.string() +
                             "): a stale or foreign file");
  }
}

void Manifest::check_signature(const MetaDoc& doc, const std::string& expected_signer) const {
  std::optional<VerifyKey> key;
  if (expected_signer == "coordinator") {
    key = coordinator;
  } else if (expected_signer == "server") {
    key = server;
  } else if (const OwnerEntry* o = owner(expected_signer)) {
    key = o->key;
  }
  const auto signer = doc.find("signer");
  if (!key) {
    if (signer) {
      throw std::runtime_error(doc.path.string() + ": signed by '" + *signer + "', but " +
                               expected_signer + " has no signing key in " + path.string());
    }
    return;  // an unregistered party's documents are unsigned
  }
  if (!signer || doc.signature.empty()) {
    throw std::runtime_error(doc.path.string() + ": not signed, but " + path.string() +
                             " registers a signing key for " + expected_signer +
                             " (refused: anyone could have written it)");
  }
  if (*signer != expected_signer) {
    throw std::runtime_error(doc.path.string() + ": signed by '" + *signer + "', expected " +
                             expected_signer);
  }
  if (!verify_signature(*key, doc.body, doc.signature)) {
    throw std::runtime_error(doc.path.string() + ": the signature of " + expected_signer +
                             " does not verify (the file was changed after signing, or signed "
                             "with another key)");
  }
}

Manifest parse_manifest(const MetaDoc& doc) {
  if (doc.field("kind") != "manifest") {
    throw std::runtime_error(doc.path.string() + ": not a run manifest (kind " + doc.field("kind") +
                             ")");
  }
  Manifest m;
  m.path = doc.path;
  m.run_id = doc.field("run_id");
  m.program = doc.field("program");
  m.program_digest = doc.field("program_digest");
  m.params_digest = doc.field("params_digest");
  m.key_id = doc.field("key_id");
  m.coordinator = parse_verify_key(doc.field("party.coordinator"), doc.path.string());
  if (auto s = doc.find("party.server")) m.server = parse_verify_key(*s, doc.path.string());
  if (auto r = doc.find("rows")) m.rows = std::stoull(*r);
  for (const auto& [k, v] : doc.fields) {
    if (k.rfind("owner.", 0) == 0) {
      // "owner.NAME A:B KEYHEX|-"
      OwnerEntry o;
      o.name = k.substr(6);
      std::istringstream in(v);
      std::string range, key;
      in >> range >> key;
      const auto colon = range.find(':');
      if (colon == std::string::npos) throw std::runtime_error(doc.path.string() + ": bad " + k);
      o.begin = std::stoull(range.substr(0, colon));
      o.end = std::stoull(range.substr(colon + 1));
      if (key != "-") o.key = parse_verify_key(key, doc.path.string());
      m.owners.push_back(o);
    } else if (k.rfind("bind.", 0) == 0) {
      m.bindings[k.substr(5)] = v;
    } else if (k.rfind("size.", 0) == 0) {
      if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) {
        throw std::runtime_error(doc.path.string() + ": bad " + k + " '" + v + "'");
      }
      m.sizes[k.substr(5)] = std::stoull(v);
    }
  }
  // The manifest is signed by the coordinator whose key it names: parties check that key
  // against the one the coordinator gave them out of band (the run id and the key's hex).
  if (doc.field("signer") != "coordinator" ||
      !verify_signature(m.coordinator, doc.body, doc.signature)) {
    throw std::runtime_error(doc.path.string() +
                             ": the coordinator's signature does not verify (a changed manifest)");
  }
  return m;
}

Manifest read_manifest(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(path.string() +
                             ": no run manifest (keygen writes KEYDIR/manifest; give --manifest)");
  }
  return parse_manifest(read_meta(path));
}

}  // namespace hec::program
