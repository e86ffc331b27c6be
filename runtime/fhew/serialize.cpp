// The FHEW file container and payloads (see serialize.h for the layout and the checks).
#include "fhew/serialize.h"

#include <sodium.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "core/serialize.h"

namespace hec::fhew {

namespace {

constexpr char kMagic[4] = {'H', 'E', 'C', '1'};

std::string hex(const std::uint8_t* data, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < size; ++i) {
    s += digits[data[i] >> 4];
    s += digits[data[i] & 15];
  }
  return s;
}

const char* kind_name(std::uint8_t k) {
  switch (k) {
    case 2:
      return "secret key";
    case 3:
      return "public key";
    case 8:
      return "ciphertext array";
    case 9:
      return "FHEW evaluation key";
    default:
      return "unknown kind";
  }
}

struct Writer {
  std::vector<std::uint8_t> bytes;
  void put(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
};

struct Reader {
  const std::uint8_t* p;
  std::size_t size, pos = 0;
  std::uint64_t get(int width) {
    std::uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(p[pos + i]) << (8 * i);
    pos += width;
    return v;
  }
  void raw(void* out, std::size_t n) {
    std::memcpy(out, p + pos, n);
    pos += n;
  }
};

std::array<std::uint8_t, 32> blake2b(const std::uint8_t* data, std::size_t size) {
  if (sodium_init() < 0) throw std::runtime_error("fhew serialize: sodium_init failed");
  std::array<std::uint8_t, 32> out{};
  crypto_generichash(out.data(), out.size(), data, size, nullptr, 0);
  return out;
}

std::vector<std::uint8_t> encode(ObjectKind kind, const Params& params, const KeyId& key_id,
                                 std::uint32_t degree, const std::vector<std::uint8_t>& payload) {
  Writer w;
  w.raw(kMagic, 4);
  w.put(kFormatVersion, 4);
  w.put(kSchemeFhew, 1);
  w.put(static_cast<std::uint8_t>(kind), 1);
  w.put(0, 2);
  const auto digest = params.digest();
  w.raw(digest.data(), digest.size());
  w.raw(key_id.data(), key_id.size());
  w.put(static_cast<std::uint32_t>(-1), 4);
  w.put(0, 8);  // scale 0.0
  w.put(degree, 4);
  w.put(payload.size(), 8);
  w.bytes.reserve(kHeaderSize + payload.size() + kChecksumSize);
  w.raw(payload.data(), payload.size());
  const auto sum = blake2b(w.bytes.data(), w.bytes.size());
  w.raw(sum.data(), sum.size());
  return w.bytes;
}

struct Decoded {
  KeyId key_id{};
  std::uint32_t degree = 0;
  const std::uint8_t* payload = nullptr;
  std::size_t payload_size = 0;
};

Decoded decode(const std::vector<std::uint8_t>& bytes, ObjectKind kind, const Params& params,
               const std::optional<KeyId>& expect_key_id, const std::string& source) {
  auto fail = [&](const std::string& what) { throw std::runtime_error(source + ": " + what); };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    fail("not a hec file (bad magic " + hex(bytes.data(), std::min<std::size_t>(4, bytes.size())) +
         ", expected 48454331)");
  }
  Reader r{bytes.data(), bytes.size()};
  r.pos = 4;
  const std::uint32_t version = static_cast<std::uint32_t>(r.get(4));
  if (version != kFormatVersion) {
    fail("format version " + std::to_string(version) + ", this build reads version " +
         std::to_string(kFormatVersion));
  }
  if (bytes.size() < kHeaderSize + kChecksumSize) {
    fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
         std::to_string(kHeaderSize + kChecksumSize) + "-byte header and checksum");
  }
  r.pos = 76;
  const std::uint64_t payload_length = r.get(8);
  if (payload_length > bytes.size() ||
      bytes.size() != kHeaderSize + payload_length + kChecksumSize) {
    fail("truncated or padded: " + std::to_string(bytes.size()) + " bytes, header announces " +
         std::to_string(payload_length) + " payload bytes (" +
         std::to_string(kHeaderSize + payload_length + kChecksumSize) + " in all)");
  }
  const auto sum = blake2b(bytes.data(), kHeaderSize + payload_length);
  // Fuzzing builds skip the checksum so that mutated inputs reach the parser behind it.
  if (!core::kSkipChecksums &&
      std::memcmp(sum.data(), bytes.data() + kHeaderSize + payload_length, kChecksumSize) != 0) {
    fail("checksum mismatch (stored " +
         hex(bytes.data() + kHeaderSize + payload_length, kChecksumSize) + ", computed " +
         hex(sum.data(), sum.size()) + "): the file is corrupted");
  }
  const std::uint8_t scheme = bytes[8], got_kind = bytes[9];
  if (scheme != kSchemeFhew) {
    fail("scheme " + std::to_string(scheme) + ", expected " + std::to_string(kSchemeFhew) +
         " (FHEW)");
  }
  if (got_kind != static_cast<std::uint8_t>(kind)) {
    fail(std::string("object kind ") + kind_name(got_kind) + " (" + std::to_string(got_kind) +
         "), expected " + kind_name(static_cast<std::uint8_t>(kind)));
  }
  const auto digest = params.digest();
  if (std::memcmp(bytes.data() + 12, digest.data(), digest.size()) != 0) {
    fail("parameter digest " + hex(bytes.data() + 12, 32) + " does not match parameters '" +
         params.name + "' (" + hex(digest.data(), digest.size()) + ")");
  }
  Decoded d;
  std::memcpy(d.key_id.data(), bytes.data() + 44, d.key_id.size());
  if (expect_key_id && *expect_key_id != d.key_id) {
    fail("key id " + hex(d.key_id.data(), d.key_id.size()) + " does not match the expected " +
         hex(expect_key_id->data(), expect_key_id->size()));
  }
  r.pos = 72;
  d.degree = static_cast<std::uint32_t>(r.get(4));
  d.payload = bytes.data() + kHeaderSize;
  d.payload_size = payload_length;
  return d;
}

void expect_payload(const Decoded& d, std::size_t expected, const Params& params,
                    const std::string& source) {
  if (d.payload_size != expected) {
    throw std::runtime_error(source + ": payload of " + std::to_string(d.payload_size) +
                             " bytes, expected " + std::to_string(expected) + " for parameters '" +
                             params.name + "'");
  }
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open for reading");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (!in) throw std::runtime_error(path.string() + ": read failed");
  return bytes;
}

void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  // Atomic, fsync'ed, and 0600 from the first moment for a secret key (core/serialize.h).
  core::write_bytes_atomic(path, bytes.data(), bytes.size(), core::file_mode_of(bytes));
}

void put_ternary(Writer& w, const TernaryKey& k) {
  for (std::int8_t v : k) w.put(static_cast<std::uint8_t>(v), 1);
}

TernaryKey get_ternary(Reader& r, std::size_t n, const std::string& source) {
  TernaryKey k(n);
  for (auto& v : k) {
    v = static_cast<std::int8_t>(r.get(1));
    if (v < -1 || v > 1) {
      throw std::runtime_error(source + ": secret key coefficient " + std::to_string(v) +
                               " is not in {-1, 0, 1}");
    }
  }
  return k;
}

}  // namespace

std::vector<std::uint8_t> encode_secret_key(const SecretKey& sk) {
  Writer w;
  put_ternary(w, sk.lwe);
  put_ternary(w, sk.ring.z);
  return encode(ObjectKind::kSecretKey, sk.params, sk.key_id, 0, w.bytes);
}

SecretKey decode_secret_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                            const std::string& source) {
  const Decoded d = decode(bytes, ObjectKind::kSecretKey, params, std::nullopt, source);
  expect_payload(d, params.lwe_dim + params.ring_dim, params, source);
  Reader r{d.payload, d.payload_size};
  SecretKey sk;
  sk.params = params;
  sk.key_id = d.key_id;
  sk.lwe = get_ternary(r, params.lwe_dim, source);
  if (params.lwe_secret == LweSecret::kBinary) {
    for (std::int8_t v : sk.lwe) {
      if (v < 0) {
        throw std::runtime_error(source + ": LWE secret coefficient " + std::to_string(v) +
                                 " is not in {0, 1} (parameters '" + params.name +
                                 "' have a binary secret)");
      }
    }
  }
  sk.ring.z = get_ternary(r, params.ring_dim, source);
  const RingContext ring(params);
  sk.ring.z_ntt.resize(params.ring_dim);
  for (std::size_t j = 0; j < params.ring_dim; ++j) {
    sk.ring.z_ntt[j] =
        sk.ring.z[j] >= 0 ? static_cast<std::uint64_t>(sk.ring.z[j]) : params.ring_modulus - 1;
  }
  math::ntt_forward_inplace(sk.ring.z_ntt.data(), ring.ntt());
  return sk;
}

std::vector<std::uint8_t> encode_public_key(const PublicKey& pk) {
  Writer w;
  w.raw(pk.lwe.seed().data(), pk.lwe.seed().size());
  for (std::uint16_t v : pk.lwe.betas()) w.put(v, 2);
  return encode(ObjectKind::kPublicKey, pk.params, pk.key_id, 0, w.bytes);
}

PublicKey decode_public_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                            const std::string& source) {
  const Decoded d = decode(bytes, ObjectKind::kPublicKey, params, std::nullopt, source);
  expect_payload(d, 32 + static_cast<std::size_t>(params.lwe_dim) * 2, params, source);
  Reader r{d.payload, d.payload_size};
  math::Seed seed;
  r.raw(seed.data(), seed.size());
  std::vector<std::uint16_t> betas(params.lwe_dim);
  for (auto& v : betas) v = static_cast<std::uint16_t>(r.get(2));
  PublicKey pk;
  pk.params = params;
  pk.key_id = d.key_id;
  try {
    pk.lwe = LwePublicKey::from_seed(params.lwe_dim, params.lwe_dim, params.ks_modulus, seed,
                                     std::move(betas));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
  return pk;
}

std::vector<std::uint8_t> encode_eval_key(const EvalKey& ek) {
  const RingContext ring(ek.params);
  const auto b_halves = blind_rotation_key_b_halves(ring, ek.brk);
  const auto betas = ek.ksk.betas();
  Writer w;
  w.bytes.reserve(1 + 64 + b_halves.size() * 4 + betas.size() * 2);
  w.put(static_cast<std::uint8_t>(ek.brk.method), 1);
  w.raw(ek.brk.seed.data(), ek.brk.seed.size());
  for (std::uint32_t v : b_halves) w.put(v, 4);
  w.raw(ek.ksk.seed().data(), ek.ksk.seed().size());
  for (std::uint16_t v : betas) w.put(v, 2);
  return encode(ObjectKind::kEvalKey, ek.params, ek.key_id, 0, w.bytes);
}

EvalKey decode_eval_key(const std::vector<std::uint8_t>& bytes, const Params& params,
                        const std::optional<KeyId>& expect_key_id, const std::string& source) {
  const Decoded d = decode(bytes, ObjectKind::kEvalKey, params, expect_key_id, source);
  const std::size_t words =
      blind_rotation_key_count(params) * 2 * params.gadget_digits * params.ring_dim;
  const std::size_t betas =
      static_cast<std::size_t>(params.ring_dim) * params.ks_digits * params.ks_base;
  expect_payload(d, 1 + 32 + words * 4 + 32 + betas * 2, params, source);
  Reader r{d.payload, d.payload_size};
  const auto method = static_cast<BlindRotation>(r.get(1));
  if (method != params.method) {
    throw std::runtime_error(source + ": blind-rotation method " +
                             std::to_string(static_cast<int>(method)) + ", parameters '" +
                             params.name + "' use " + blind_rotation_name(params.method));
  }
  EvalKey ek;
  ek.params = params;
  ek.key_id = d.key_id;
  math::Seed seed;
  r.raw(seed.data(), seed.size());
  std::vector<std::uint32_t> b_halves(words);
  for (auto& v : b_halves) v = static_cast<std::uint32_t>(r.get(4));
  const RingContext ring(params);
  try {
    ek.brk = blind_rotation_key_from_seed(ring, method, seed, b_halves);
    b_halves.clear();
    b_halves.shrink_to_fit();
    math::Seed ks_seed;
    r.raw(ks_seed.data(), ks_seed.size());
    std::vector<std::uint16_t> beta_values(betas);
    for (auto& v : beta_values) v = static_cast<std::uint16_t>(r.get(2));
    ek.ksk =
        KeySwitchKey::from_seed(params.ring_dim, params.lwe_dim, params.ks_modulus, params.ks_base,
                                params.ks_digits, ks_seed, std::move(beta_values));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
  return ek;
}

std::vector<std::uint8_t> encode_ciphertexts(const std::vector<Ciphertext>& cts,
                                             const Params& params) {
  KeyId id{};
  if (!cts.empty()) id = cts[0].key_id;
  Writer w;
  for (std::size_t i = 0; i < cts.size(); ++i) {
    const Ciphertext& c = cts[i];
    if (c.key_id != id || c.lwe.modulus != params.lwe_modulus || c.lwe.a.size() != params.lwe_dim) {
      throw std::invalid_argument("encode_ciphertexts: ciphertext " + std::to_string(i) +
                                  " does not match the first one's key or parameters '" +
                                  params.name + "'");
    }
    for (std::uint32_t v : c.lwe.a) w.put(v, 2);
    w.put(c.lwe.b, 2);
  }
  return encode(ObjectKind::kCiphertextArray, params, id, static_cast<std::uint32_t>(cts.size()),
                w.bytes);
}

std::vector<Ciphertext> decode_ciphertexts(const std::vector<std::uint8_t>& bytes,
                                           const Params& params,
                                           const std::optional<KeyId>& expect_key_id,
                                           const std::string& source) {
  const Decoded d = decode(bytes, ObjectKind::kCiphertextArray, params, expect_key_id, source);
  expect_payload(d, static_cast<std::size_t>(d.degree) * (params.lwe_dim + 1) * 2, params, source);
  Reader r{d.payload, d.payload_size};
  std::vector<Ciphertext> out(d.degree);
  for (std::size_t i = 0; i < out.size(); ++i) {
    Ciphertext& c = out[i];
    c.key_id = d.key_id;
    c.lwe.modulus = params.lwe_modulus;
    c.lwe.a.resize(params.lwe_dim);
    for (auto& v : c.lwe.a) v = static_cast<std::uint32_t>(r.get(2));
    c.lwe.b = static_cast<std::uint32_t>(r.get(2));
    for (std::size_t j = 0; j <= params.lwe_dim; ++j) {
      const std::uint32_t v = j < params.lwe_dim ? c.lwe.a[j] : c.lwe.b;
      if (v >= params.lwe_modulus) {
        throw std::runtime_error(source + ": ciphertext " + std::to_string(i) + " coefficient " +
                                 std::to_string(v) +
                                 " >= q = " + std::to_string(params.lwe_modulus));
      }
    }
  }
  return out;
}

void save_secret_key(const std::filesystem::path& path, const SecretKey& sk) {
  write_file(path, encode_secret_key(sk));
}
SecretKey load_secret_key(const std::filesystem::path& path, const Params& params) {
  return decode_secret_key(read_file(path), params, path.string());
}
void save_public_key(const std::filesystem::path& path, const PublicKey& pk) {
  write_file(path, encode_public_key(pk));
}
PublicKey load_public_key(const std::filesystem::path& path, const Params& params) {
  return decode_public_key(read_file(path), params, path.string());
}
void save_eval_key(const std::filesystem::path& path, const EvalKey& ek) {
  write_file(path, encode_eval_key(ek));
}
EvalKey load_eval_key(const std::filesystem::path& path, const Params& params,
                      const std::optional<KeyId>& expect_key_id) {
  return decode_eval_key(read_file(path), params, expect_key_id, path.string());
}
void save_ciphertexts(const std::filesystem::path& path, const std::vector<Ciphertext>& cts,
                      const Params& params) {
  write_file(path, encode_ciphertexts(cts, params));
}
std::vector<Ciphertext> load_ciphertexts(const std::filesystem::path& path, const Params& params,
                                         const std::optional<KeyId>& expect_key_id) {
  return decode_ciphertexts(read_file(path), params, expect_key_id, path.string());
}

}  // namespace hec::fhew
