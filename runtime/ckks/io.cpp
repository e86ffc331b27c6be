// CKKS objects in the shared container format (see io.h and core/serialize.h). Payloads are
// the objects' words, little-endian; shapes are checked against the Context on reading.
#include "ckks/io.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "core/bytes.h"
#include "core/serialize.h"
#include "core/wipe.h"
#include "math/pack.h"
#include "math/parallel.h"

namespace hec::ckks {
namespace {

using core::ByteReader;
using core::ByteWriter;
using core::ObjectHeader;
using core::ObjectKind;

ObjectHeader header_for(const Context& ctx, ObjectKind kind, const core::KeyId& key_id) {
  ObjectHeader h;
  h.scheme = core::Scheme::kCkks;
  h.kind = kind;
  h.params_digest = ctx.params().digest();
  h.key_id = key_id;
  return h;
}

core::Object read(const std::filesystem::path& path, const Context& ctx, ObjectKind kind,
                  const core::KeyId* key_id) {
  core::Expectation e;
  e.scheme = core::Scheme::kCkks;
  e.kind = kind;
  e.params_digest = ctx.params().digest();
  if (key_id) e.key_id = *key_id;
  return core::read_object(path, e);
}

std::vector<u64> read_words(ByteReader& r, std::size_t count, const std::string& what,
                            const std::filesystem::path& path) {
  if (r.remaining() < 8 * count) {
    throw std::runtime_error(path.string() + ": " + what + " needs " + std::to_string(count) +
                             " words but the payload has " + std::to_string(r.remaining()) +
                             " bytes left");
  }
  std::vector<u64> v(count);
  r.get_u64s(v.data(), count);
  return v;
}

Level checked_level(const Context& ctx, std::int32_t level, const std::filesystem::path& path) {
  if (level < 0 || level > ctx.params().max_level()) {
    throw std::runtime_error(path.string() + ": level " + std::to_string(level) + " outside [0, " +
                             std::to_string(ctx.params().max_level()) + "]");
  }
  return Level(level);
}

void put_switch_key(ByteWriter& w, const KeySwitchKey& k) {
  w.put_u32(static_cast<std::uint32_t>(k.digits.size()));
  for (const auto& d : k.digits) w.put_u64s(d.data(), d.size());
}

KeySwitchKey get_switch_key(ByteReader& r, const Context& ctx, Level level, const core::KeyId& id,
                            const std::filesystem::path& path) {
  const Parameters& p = ctx.params();
  const std::size_t limbs = p.limbs_at(level);
  const std::size_t expected_digits = (limbs + p.digit_size() - 1) / p.digit_size();
  const std::uint32_t digits = r.get_u32();
  if (digits != expected_digits) {
    throw std::runtime_error(path.string() + ": key-switching key has " + std::to_string(digits) +
                             " digits, expected " + std::to_string(expected_digits) + " at level " +
                             std::to_string(level.value));
  }
  KeySwitchKey k;
  k.level = level;
  k.key_id = id;
  const std::size_t words = 2 * (limbs + p.special_moduli().size()) * ctx.n();
  for (std::uint32_t j = 0; j < digits; ++j) {
    k.digits.push_back(read_words(r, words, "key-switching digit", path));
  }
  return k;
}

}  // namespace

void save_parameters(const std::filesystem::path& path, const Parameters& params) {
  ObjectHeader h;
  h.scheme = core::Scheme::kCkks;
  h.kind = ObjectKind::kParameters;
  h.params_digest = params.digest();
  core::write_object(path, h, params.canonical_encoding());
}

Parameters load_parameters(const std::filesystem::path& path) {
  core::Expectation e;
  e.scheme = core::Scheme::kCkks;
  e.kind = ObjectKind::kParameters;
  core::Object obj = core::read_object(path, e);
  Parameters p = Parameters::from_canonical_encoding(obj.payload);
  if (p.digest() != obj.header.params_digest) {
    throw std::runtime_error(path.string() +
                             ": parameter digest mismatch between header and payload");
  }
  return p;
}

void save(const std::filesystem::path& path, const Context& ctx, const SecretKey& sk) {
  ByteWriter w;
  w.put_u64s(sk.data.data(), sk.data.size());
  std::vector<std::uint8_t> words = w.take();
  try {
    core::write_object(path, header_for(ctx, ObjectKind::kSecretKey, sk.key_id), words);
  } catch (...) {
    core::wipe(words);
    throw;
  }
  core::wipe(words);
}

void save(const std::filesystem::path& path, const Context& ctx, const PublicKey& pk) {
  ObjectHeader h = header_for(ctx, ObjectKind::kPublicKey, pk.key_id);
  h.level = pk.level.value;
  ByteWriter w;
  w.put_u64s(pk.data.data(), pk.data.size());
  core::write_object(path, h, w.take());
}

void save(const std::filesystem::path& path, const Context& ctx, const RelinKey& rk) {
  ObjectHeader h = header_for(ctx, ObjectKind::kRelinKey, rk.key.key_id);
  h.level = rk.key.level.value;
  ByteWriter w;
  put_switch_key(w, rk.key);
  core::write_object(path, h, w.take());
}

void save(const std::filesystem::path& path, const Context& ctx, const GaloisKeys& gk) {
  ObjectHeader h = header_for(ctx, ObjectKind::kGaloisKeys, gk.key_id);
  h.level = gk.level.value;
  h.degree = static_cast<std::uint32_t>(gk.keys.size());
  ByteWriter w;
  for (const auto& [g, k] : gk.keys) {
    w.put_u64(g);
    // Files keep the plain layout; memory holds key o perm^-1 (keys.h).
    KeySwitchKey plain = k;
    detail::permute_galois_key(plain, ctx.impl().galois_permutation(g), ctx.n());
    put_switch_key(w, plain);
  }
  core::write_object(path, h, w.take());
}

void save(const std::filesystem::path& path, const Context& ctx, const Ciphertext& ct) {
  ObjectHeader h = header_for(ctx, ObjectKind::kCiphertext, ct.key_id);
  h.level = ct.level.value;
  h.scale = ct.scale;
  h.degree = static_cast<std::uint32_t>(ct.degree);
  ByteWriter w;
  w.put_u64s(ct.data.data(), ct.data.size());
  core::write_object(path, h, w.take());
}

void save(const std::filesystem::path& path, const Context& ctx, const Plaintext& pt) {
  ObjectHeader h = header_for(ctx, ObjectKind::kPlaintext, core::KeyId{});
  h.level = pt.level.value;
  h.scale = pt.scale;
  ByteWriter w;
  w.put_u64s(pt.data.data(), pt.data.size());
  core::write_object(path, h, w.take());
}

void save(const std::filesystem::path& path, const Context& ctx,
          const std::vector<Ciphertext>& cts) {
  std::vector<const Ciphertext*> ptrs;
  for (const auto& ct : cts) ptrs.push_back(&ct);
  save(path, ctx, ptrs);
}

void save(const std::filesystem::path& path, const Context& ctx,
          const std::vector<const Ciphertext*>& cts) {
  if (cts.empty()) throw std::invalid_argument("save: empty ciphertext array for " + path.string());
  std::uint64_t payload = 0;
  for (const Ciphertext* ct : cts) payload += CiphertextArrayWriter::record_bytes(ctx, *ct);
  CiphertextArrayWriter w(path, ctx, cts[0]->key_id, cts.size(), payload);
  for (const Ciphertext* ct : cts) w.append(*ct);
  w.finish();
}

std::uint64_t CiphertextArrayWriter::record_bytes(const Context& ctx, Level level,
                                                  std::size_t degree) {
  std::uint64_t limbs = 0;
  const auto& chain = ctx.params().chain();
  for (std::size_t i = 0; i < ctx.params().limbs_at(level); ++i) {
    limbs += math::packed_limb_bytes(ctx.n(), math::packed_bits(chain[i]));
  }
  return 16 + (degree + 1) * limbs;
}

CiphertextArrayWriter::CiphertextArrayWriter(const std::filesystem::path& path, const Context& ctx,
                                             const core::KeyId& key_id, std::size_t count,
                                             std::uint64_t payload_bytes)
    : ctx_(ctx), key_id_(key_id), count_(count), writer_(path, [&] {
        ObjectHeader h = header_for(ctx, ObjectKind::kPackedCiphertextArray, key_id);
        h.degree = static_cast<std::uint32_t>(count);
        h.payload_length = payload_bytes;
        return h;
      }()) {}

void CiphertextArrayWriter::append(const Ciphertext& ct) {
  if (ct.key_id != key_id_) {
    throw std::invalid_argument("save: ciphertext array mixes key ids");
  }
  if (written_ == count_) throw std::logic_error("save: more ciphertexts than announced");
  writer_.put_u32(static_cast<std::uint32_t>(ct.level.value));
  writer_.put_f64(ct.scale);
  writer_.put_u32(static_cast<std::uint32_t>(ct.degree));
  const auto& chain = ctx_.params().chain();
  for (std::size_t k = 0; k <= ct.degree; ++k) {
    for (std::size_t i = 0; i < ct.limbs; ++i) {
      const unsigned bits = math::packed_bits(chain[i]);
      packed_.resize(math::packed_limb_bytes(ct.n, bits));
      math::pack_residues(ct.limb(k, i), ct.n, bits, packed_.data());
      writer_.put(packed_.data(), packed_.size());
    }
  }
  ++written_;
}

void CiphertextArrayWriter::finish() {
  if (written_ != count_) {
    throw std::logic_error("save: " + std::to_string(written_) + " ciphertexts written, " +
                           std::to_string(count_) + " announced");
  }
  writer_.finish();
}

void save(const std::filesystem::path& path, const Context& ctx, const CompactCiphertext& ct) {
  ObjectHeader h = header_for(ctx, ObjectKind::kCompactCiphertext, ct.key_id);
  h.level = ct.level.value;
  h.scale = ct.scale;
  h.degree = 1;
  ByteWriter w;
  w.put_bytes(ct.seed.data(), ct.seed.size());
  w.put_u64s(ct.c0.data(), ct.c0.size());
  core::write_object(path, h, w.take());
}

SecretKey load_secret_key(const std::filesystem::path& path, const Context& ctx) {
  core::Object obj = read(path, ctx, ObjectKind::kSecretKey, nullptr);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  SecretKey sk;
  sk.key_id = obj.header.key_id;
  const std::size_t words =
      (ctx.params().chain().size() + ctx.params().special_moduli().size()) * ctx.n();
  sk.data = read_words(r, words, "secret key", path);
  r.expect_end();
  return sk;
}

PublicKey load_public_key(const std::filesystem::path& path, const Context& ctx,
                          const core::KeyId& key_id) {
  core::Object obj = read(path, ctx, ObjectKind::kPublicKey, &key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  PublicKey pk;
  pk.key_id = key_id;
  pk.level = checked_level(ctx, obj.header.level, path);
  pk.data = read_words(r, 2 * ctx.params().limbs_at(pk.level) * ctx.n(), "public key", path);
  r.expect_end();
  return pk;
}

RelinKey load_relin_key(const std::filesystem::path& path, const Context& ctx,
                        const core::KeyId& key_id) {
  core::Object obj = read(path, ctx, ObjectKind::kRelinKey, &key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  const Level level = checked_level(ctx, obj.header.level, path);
  RelinKey rk{get_switch_key(r, ctx, level, key_id, path)};
  r.expect_end();
  return rk;
}

GaloisKeys load_galois_keys(const std::filesystem::path& path, const Context& ctx,
                            const core::KeyId& key_id) {
  core::Object obj = read(path, ctx, ObjectKind::kGaloisKeys, &key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  GaloisKeys gk;
  gk.key_id = key_id;
  gk.level = checked_level(ctx, obj.header.level, path);
  for (std::uint32_t i = 0; i < obj.header.degree; ++i) {
    const std::uint64_t g = r.get_u64();
    if (g % 2 == 0 || g >= 2 * ctx.n()) {
      throw std::runtime_error(path.string() + ": Galois element " + std::to_string(g) +
                               " is not an odd number below 2N");
    }
    KeySwitchKey key = get_switch_key(r, ctx, gk.level, key_id, path);
    detail::permute_galois_key(key, ctx.impl().galois_permutation(ctx.inverse_galois_element(g)),
                               ctx.n());
    gk.keys.emplace(g, std::move(key));
  }
  r.expect_end();
  return gk;
}

namespace {
// The degree and scale a ciphertext record may carry.
void check_record(std::uint32_t degree, double scale, const std::filesystem::path& path) {
  if (degree < 1 || degree > 64) {
    throw std::runtime_error(path.string() + ": ciphertext degree " + std::to_string(degree) +
                             " outside [1, 64]");
  }
  if (!(scale > 0) || !std::isfinite(scale)) {
    throw std::runtime_error(path.string() + ": ciphertext scale " + std::to_string(scale) +
                             " is not finite and positive");
  }
}

Ciphertext read_ciphertext_body(ByteReader& r, const Context& ctx, std::int32_t level, double scale,
                                std::uint32_t degree, const core::KeyId& key_id,
                                const std::filesystem::path& path) {
  check_record(degree, scale, path);
  Ciphertext ct = ctx.make_ciphertext(checked_level(ctx, level, path), degree, scale);
  ct.key_id = key_id;
  {
    const std::vector<u64> words = read_words(r, ct.data.size(), "ciphertext", path);
    std::copy(words.begin(), words.end(), ct.data.begin());
  }
  return ct;
}
}  // namespace

Ciphertext load_ciphertext(const std::filesystem::path& path, const Context& ctx,
                           const core::KeyId& key_id) {
  core::Object obj = read(path, ctx, ObjectKind::kCiphertext, &key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  Ciphertext ct = read_ciphertext_body(r, ctx, obj.header.level, obj.header.scale,
                                       obj.header.degree, key_id, path);
  r.expect_end();
  return ct;
}

Plaintext load_plaintext(const std::filesystem::path& path, const Context& ctx) {
  core::Object obj = read(path, ctx, ObjectKind::kPlaintext, nullptr);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  Plaintext pt = ctx.make_plaintext(checked_level(ctx, obj.header.level, path), obj.header.scale);
  pt.data = read_words(r, pt.data.size(), "plaintext", path);
  r.expect_end();
  return pt;
}

CompactCiphertext load_compact_ciphertext(const std::filesystem::path& path, const Context& ctx,
                                          const core::KeyId& key_id) {
  core::Object obj = read(path, ctx, ObjectKind::kCompactCiphertext, &key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), path.string());
  CompactCiphertext ct;
  ct.level = checked_level(ctx, obj.header.level, path);
  ct.scale = obj.header.scale;
  if (!(ct.scale > 0) || !std::isfinite(ct.scale)) {
    throw std::runtime_error(path.string() + ": ciphertext scale " + std::to_string(ct.scale) +
                             " is not finite and positive");
  }
  ct.n = ctx.n();
  ct.limbs = ctx.params().limbs_at(ct.level);
  ct.key_id = key_id;
  r.get_bytes(ct.seed.data(), ct.seed.size());
  ct.c0 = read_words(r, ct.limbs * ct.n, "compact ciphertext", path);
  r.expect_end();
  return ct;
}

std::vector<Ciphertext> load_ciphertexts(const std::filesystem::path& path, const Context& ctx,
                                         const core::KeyId& key_id,
                                         const std::optional<core::Checksum>& content) {
  CiphertextArrayReader r(path, ctx, key_id, content);
  std::vector<Ciphertext> out(r.count());
  for (auto& ct : out) r.next(ct);
  r.finish();
  return out;
}

namespace {
core::Expectation array_expectation(const Context& ctx, const core::KeyId& key_id,
                                    const std::optional<core::Checksum>& content) {
  core::Expectation e;
  e.content = content;
  e.scheme = core::Scheme::kCkks;
  e.kind = ObjectKind::kPackedCiphertextArray;
  e.params_digest = ctx.params().digest();
  e.key_id = key_id;
  return e;
}
}  // namespace

CiphertextArrayReader::CiphertextArrayReader(const std::filesystem::path& path, const Context& ctx,
                                             const core::KeyId& key_id,
                                             const std::optional<core::Checksum>& content)
    : ctx_(ctx), key_id_(key_id), reader_(path, array_expectation(ctx, key_id, content)) {
  // Every record holds at least a degree-1 ciphertext at level 0: a count the payload cannot
  // hold is refused before anything is sized by it.
  const std::uint64_t smallest = CiphertextArrayWriter::record_bytes(ctx, Level(0), 1);
  if (count() > reader_.header().payload_length / smallest) {
    throw std::runtime_error(
        path.string() + ": the header announces " + std::to_string(count()) +
        " ciphertexts, but its payload of " + std::to_string(reader_.header().payload_length) +
        " bytes holds at most " + std::to_string(reader_.header().payload_length / smallest));
  }
}

void CiphertextArrayReader::next(Ciphertext& ct) {
  const std::filesystem::path& path = reader_.path();
  if (read_ == count()) {
    throw std::runtime_error(path.string() + ": asked for ciphertext " + std::to_string(read_) +
                             " of an array of " + std::to_string(count()));
  }
  const std::int32_t level = static_cast<std::int32_t>(reader_.get_u32());
  const double scale = reader_.get_f64();
  const std::uint32_t degree = reader_.get_u32();
  check_record(degree, scale, path);
  const Level lv = checked_level(ctx_, level, path);
  const std::size_t limbs = ctx_.params().limbs_at(lv);
  const std::size_t words = (degree + 1) * limbs * ctx_.n();
  const std::uint64_t packed = CiphertextArrayWriter::record_bytes(ctx_, lv, degree) - 16;
  if (reader_.remaining() < packed) {
    throw std::runtime_error(path.string() + ": ciphertext needs " + std::to_string(packed) +
                             " bytes but the payload has " + std::to_string(reader_.remaining()) +
                             " bytes left");
  }
  // Reuses ct's storage when it has the same shape (no allocation, no page faults).
  ct.n = ctx_.n();
  ct.limbs = limbs;
  ct.degree = degree;
  ct.level = lv;
  ct.scale = scale;
  ct.key_id = key_id_;
  ct.data.resize(words);
  reader_.get(packed_tail(ct, packed), packed);
  unpack(ct, packed, read_);
  if (read_ == 0) {
    first_.level = lv;
    first_.limbs = limbs;
    first_.degree = degree;
    first_.scale = scale;
  }
  ++read_;
}

void CiphertextArrayReader::next_batch(Ciphertext* const* out, std::size_t count, int threads) {
  const std::filesystem::path& path = reader_.path();
  std::size_t k = 0;
  if (count > 0 && read_ == 0) next(*out[k++]);  // the first fixes the shape
  if (k == count) return;
  if (read_ + (count - k) > this->count()) {
    throw std::runtime_error(path.string() + ": asked for ciphertexts up to " +
                             std::to_string(read_ + count - k) + " of an array of " +
                             std::to_string(this->count()));
  }
  const std::size_t words = (first_.degree + 1) * first_.limbs * ctx_.n();
  const std::uint64_t packed =
      CiphertextArrayWriter::record_bytes(ctx_, first_.level, first_.degree) - 16;
  const auto shape = [&](Ciphertext& ct) {
    ct.n = ctx_.n();
    ct.limbs = first_.limbs;
    ct.degree = first_.degree;
    ct.level = first_.level;
    ct.scale = first_.scale;
    ct.key_id = key_id_;
    ct.data.resize(words);
  };
  const auto check_head = [&](const std::uint8_t* head, std::size_t index) {
    ByteReader r(head, 16, path.string());
    const std::int32_t level = static_cast<std::int32_t>(r.get_u32());
    const double scale = r.get_f64();
    const std::uint32_t degree = r.get_u32();
    if (level != first_.level.value || degree != first_.degree || scale != first_.scale) {
      throw std::runtime_error(path.string() + ": ciphertext " + std::to_string(index) +
                               " has level " + std::to_string(level) + ", degree " +
                               std::to_string(degree) + " and scale " + std::to_string(scale) +
                               ", the first has level " + std::to_string(first_.level.value) +
                               ", degree " + std::to_string(first_.degree) + " and scale " +
                               std::to_string(first_.scale) + " (an input array is uniform)");
    }
  };
  if (threads <= 1) {
    // One thread: each record read, hashed and unpacked while it is still in cache (one pass
    // over memory instead of three: read+verify is bound by memory bandwidth).
    std::array<std::uint8_t, 16> head{};
    std::vector<core::ObjectReader::Piece> pieces(2);
    for (std::size_t i = k; i < count; ++i) {
      Ciphertext& ct = *out[i];
      shape(ct);
      pieces[0] = {head.data(), 16};
      pieces[1] = {packed_tail(ct, packed), packed};
      reader_.get_scattered(pieces, 1);
      check_head(head.data(), read_);
      unpack(ct, packed, read_);
      ++read_;
    }
    return;
  }
  std::vector<std::array<std::uint8_t, 16>> heads(count - k);
  std::vector<core::ObjectReader::Piece> pieces;
  pieces.reserve(2 * (count - k));
  for (std::size_t i = k; i < count; ++i) {
    Ciphertext& ct = *out[i];
    shape(ct);
    pieces.push_back({heads[i - k].data(), 16});
    pieces.push_back({packed_tail(ct, packed), packed});
  }
  reader_.get_scattered(pieces, threads);
  for (std::size_t i = 0; i < heads.size(); ++i) check_head(heads[i].data(), read_ + i);
  // Then unpacked in place, ciphertext by ciphertext, by the same threads.
  math::parallel_for(count - k, [&](std::size_t i) { unpack(*out[k + i], packed, read_ + i); });
  read_ += count - k;
}

std::uint8_t* CiphertextArrayReader::packed_tail(Ciphertext& ct, std::uint64_t packed) {
  return reinterpret_cast<std::uint8_t*>(ct.data.data()) + 8 * ct.data.size() - packed;
}

void CiphertextArrayReader::unpack(Ciphertext& ct, std::uint64_t packed, std::size_t index) const {
  const auto& chain = ctx_.params().chain();
  const std::uint8_t* in = packed_tail(ct, packed);
  for (std::size_t k = 0; k <= ct.degree; ++k) {
    for (std::size_t i = 0; i < ct.limbs; ++i) {
      const unsigned bits = math::packed_bits(chain[i]);
      const std::size_t bad = math::unpack_residues(in, ct.n, bits, chain[i], ct.limb(k, i));
      if (bad != ct.n) {
        throw std::runtime_error(reader_.path().string() + ": ciphertext " + std::to_string(index) +
                                 ", polynomial " + std::to_string(k) + ", limb " +
                                 std::to_string(i) + ": coefficient " + std::to_string(bad) +
                                 " is not below its modulus " + std::to_string(chain[i]));
      }
      in += math::packed_limb_bytes(ct.n, bits);
    }
  }
}

void CiphertextArrayReader::finish() {
  if (read_ != count()) {
    throw std::runtime_error(reader_.path().string() + ": " + std::to_string(count() - read_) +
                             " ciphertexts left unread");
  }
  reader_.finish();
}

}  // namespace hec::ckks
