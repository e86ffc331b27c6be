// BFV serialization on the shared core/ container (see serialize.h).
#include "bfv/serialize.h"

#include <fstream>
#include <stdexcept>

#include "bfv/keyswitch.h"
#include "core/bytes.h"
#include "core/serialize.h"
#include "math/galois.h"

namespace hec::bfv {

using core::ByteReader;
using core::ByteWriter;
using core::ObjectKind;
using math::PolyForm;
using math::RnsPoly;

namespace {

core::ObjectHeader header(const BfvContext& ctx, ObjectKind kind, const KeyId& id,
                          std::uint32_t degree = 0) {
  core::ObjectHeader h;
  h.scheme = core::Scheme::kBfv;
  h.kind = kind;
  h.params_digest = params_digest(ctx);
  h.key_id = id;
  h.degree = degree;
  return h;
}

void put_poly(ByteWriter& w, const RnsPoly& p) {
  w.put_u32(static_cast<std::uint32_t>(p.num_limbs()));
  w.put_u8(p.form() == PolyForm::kEvaluation ? 1 : 0);
  w.put_u64s(p.data(), p.num_limbs() * p.ring_dim());
}

// want_limbs = 0: any level of Q (1 to q_size() limbs; ciphertexts after modulus switching).
RnsPoly get_poly(ByteReader& r, const BfvContext& ctx, std::size_t want_limbs,
                 const std::string& source, const char* what) {
  const std::uint32_t limbs = r.get_u32();
  const std::uint8_t form = r.get_u8();
  const bool limbs_ok = want_limbs == 0 ? limbs >= 1 && limbs <= ctx.q_size() : limbs == want_limbs;
  if (!limbs_ok || form > 1) {
    throw std::runtime_error(
        source + ": " + what + " has " + std::to_string(limbs) + " limbs and form " +
        std::to_string(form) + ", expected " +
        (want_limbs == 0 ? "1 to " + std::to_string(ctx.q_size()) : std::to_string(want_limbs)) +
        " limbs and form 0 or 1");
  }
  RnsPoly p(ctx.key_context(), limbs, form ? PolyForm::kEvaluation : PolyForm::kCoefficient);
  const std::size_t n = ctx.ring_dim();
  r.get_u64s(p.data(), limbs * n);
  for (std::size_t i = 0; i < limbs; ++i) {
    const u64 q = p.modulus(i).value();
    const u64* l = p.limb(i);
    for (std::size_t c = 0; c < n; ++c) {
      if (l[c] >= q) {
        throw std::runtime_error(source + ": " + what + " limb " + std::to_string(i) +
                                 " coefficient " + std::to_string(c) + " = " +
                                 std::to_string(l[c]) + " is not below q = " + std::to_string(q));
      }
    }
  }
  return p;
}

void put_ks_key(ByteWriter& w, const KeySwitchKey& k) {
  w.put_u32(static_cast<std::uint32_t>(k.b.size()));
  for (std::size_t d = 0; d < k.b.size(); ++d) {
    put_poly(w, k.b[d]);
    put_poly(w, k.a[d]);
  }
}

KeySwitchKey get_ks_key(ByteReader& r, const BfvContext& ctx, const std::string& source) {
  const std::uint32_t digits = r.get_u32();
  if (digits != ctx.dnum()) {
    throw std::runtime_error(source + ": key-switching key has " + std::to_string(digits) +
                             " digits, the parameters have dnum = " + std::to_string(ctx.dnum()));
  }
  const std::size_t limbs = ctx.q_size() + ctx.p_ks_size();
  KeySwitchKey k;
  for (std::uint32_t d = 0; d < digits; ++d) {
    k.b.push_back(get_poly(r, ctx, limbs, source, "key-switching key b"));
    k.a.push_back(get_poly(r, ctx, limbs, source, "key-switching key a"));
  }
  return k;
}

core::Object decode(const BfvContext& ctx, const std::vector<std::uint8_t>& bytes, ObjectKind kind,
                    const std::string& source, const std::optional<KeyId>& key_id) {
  core::Expectation e;
  e.scheme = core::Scheme::kBfv;
  e.kind = kind;
  e.params_digest = params_digest(ctx);
  if (key_id) e.key_id = *key_id;
  return core::decode_object(bytes, e, source);
}

}  // namespace

core::Digest params_digest(const BfvContext& ctx) {
  const auto enc = ctx.canonical_encoding();
  return core::blake2b_256(enc.data(), enc.size());
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx) {
  const BfvParams& p = ctx.params();
  ByteWriter w;
  w.put_u32(static_cast<std::uint32_t>(p.log_n));
  w.put_u64(p.plain_modulus);
  for (const auto* list : {&p.q, &p.p_mult, &p.p_ks}) {
    w.put_u32(static_cast<std::uint32_t>(list->size()));
    w.put_u64s(list->data(), list->size());
  }
  w.put_u32(static_cast<std::uint32_t>(p.dnum));
  w.put_u8(p.allow_insecure ? 1 : 0);
  return core::encode_object(header(ctx, ObjectKind::kParameters, KeyId{}), w.take());
}

BfvParams params_from_bytes(const std::vector<std::uint8_t>& bytes, const std::string& source) {
  core::Expectation e;
  e.scheme = core::Scheme::kBfv;
  e.kind = ObjectKind::kParameters;
  const core::Object obj = core::decode_object(bytes, e, source);
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  BfvParams p;
  p.log_n = static_cast<int>(r.get_u32());
  p.plain_modulus = r.get_u64();
  for (auto* list : {&p.q, &p.p_mult, &p.p_ks}) {
    const std::uint32_t count = r.get_u32();
    if (count > 256) {
      throw std::runtime_error(source + ": prime list of " + std::to_string(count) +
                               " entries (at most 256)");
    }
    list->resize(count);
    r.get_u64s(list->data(), count);
  }
  p.dnum = r.get_u32();
  p.allow_insecure = r.get_u8() != 0;
  r.expect_end();
  // The digest in the header must be that of the parameters it carries.
  const BfvContext ctx(p);
  if (params_digest(ctx) != obj.header.params_digest) {
    throw std::runtime_error(source +
                             ": parameter digest in the header does not match the payload");
  }
  return p;
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const Ciphertext& ct) {
  ByteWriter w;
  for (const auto& p : ct.polys) put_poly(w, p);
  return core::encode_object(
      header(ctx, ObjectKind::kCiphertext, ct.key_id, static_cast<std::uint32_t>(ct.size())),
      w.take());
}

Ciphertext ciphertext_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                 const std::vector<std::uint8_t>& bytes, const std::string& source,
                                 const std::optional<KeyId>& key_id) {
  const core::Object obj = decode(*ctx, bytes, ObjectKind::kCiphertext, source, key_id);
  if (obj.header.degree < 2 || obj.header.degree > 3) {
    throw std::runtime_error(source + ": ciphertext of " + std::to_string(obj.header.degree) +
                             " polynomials (expected 2 or 3)");
  }
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  Ciphertext ct;
  for (std::uint32_t j = 0; j < obj.header.degree; ++j) {
    // The first polynomial fixes the level (modulus switching drops primes); the others match.
    ct.polys.push_back(get_poly(r, *ctx, j == 0 ? 0 : ct.limbs(), source, "ciphertext polynomial"));
    if (ct.polys.back().form() != PolyForm::kEvaluation) {
      throw std::runtime_error(source + ": ciphertext polynomial not in evaluation form");
    }
  }
  r.expect_end();
  ct.key_id = obj.header.key_id;
  return ct;
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const PublicKey& pk) {
  ByteWriter w;
  put_poly(w, pk.b);
  put_poly(w, pk.a);
  return core::encode_object(header(ctx, ObjectKind::kPublicKey, pk.key_id), w.take());
}

PublicKey public_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                const std::vector<std::uint8_t>& bytes, const std::string& source,
                                const std::optional<KeyId>& key_id) {
  const core::Object obj = decode(*ctx, bytes, ObjectKind::kPublicKey, source, key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  PublicKey pk;
  pk.b = get_poly(r, *ctx, ctx->q_size(), source, "public key b");
  pk.a = get_poly(r, *ctx, ctx->q_size(), source, "public key a");
  r.expect_end();
  pk.key_id = obj.header.key_id;
  return pk;
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const SecretKey& sk) {
  ByteWriter w;
  put_poly(w, sk.s);
  return core::encode_object(header(ctx, ObjectKind::kSecretKey, sk.key_id), w.take());
}

SecretKey secret_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                const std::vector<std::uint8_t>& bytes, const std::string& source) {
  const core::Object obj = decode(*ctx, bytes, ObjectKind::kSecretKey, source, std::nullopt);
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  SecretKey sk;
  sk.s = get_poly(r, *ctx, ctx->q_size() + ctx->p_ks_size(), source, "secret key");
  r.expect_end();
  sk.key_id = obj.header.key_id;
  return sk;
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const RelinKey& rk) {
  ByteWriter w;
  put_ks_key(w, rk.key);
  return core::encode_object(header(ctx, ObjectKind::kRelinKey, rk.key_id), w.take());
}

RelinKey relin_key_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                              const std::vector<std::uint8_t>& bytes, const std::string& source,
                              const std::optional<KeyId>& key_id) {
  const core::Object obj = decode(*ctx, bytes, ObjectKind::kRelinKey, source, key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  RelinKey rk;
  rk.key = get_ks_key(r, *ctx, source);
  r.expect_end();
  rk.key_id = obj.header.key_id;
  return rk;
}

std::vector<std::uint8_t> to_bytes(const BfvContext& ctx, const GaloisKeys& gk) {
  ByteWriter w;
  w.put_u32(static_cast<std::uint32_t>(gk.keys.size()));
  for (const auto& [g, key] : gk.keys) {
    w.put_u64(g);
    // Files keep the plain layout; memory holds key o p^-1 (ciphertext.h GaloisKeys).
    KeySwitchKey plain = key;
    permute_galois_key(plain, ctx.galois_permutation(g));
    put_ks_key(w, plain);
  }
  return core::encode_object(
      header(ctx, ObjectKind::kGaloisKeys, gk.key_id, static_cast<std::uint32_t>(gk.keys.size())),
      w.take());
}

GaloisKeys galois_keys_from_bytes(const std::shared_ptr<const BfvContext>& ctx,
                                  const std::vector<std::uint8_t>& bytes, const std::string& source,
                                  const std::optional<KeyId>& key_id) {
  const core::Object obj = decode(*ctx, bytes, ObjectKind::kGaloisKeys, source, key_id);
  ByteReader r(obj.payload.data(), obj.payload.size(), source);
  GaloisKeys gk;
  const std::uint32_t count = r.get_u32();
  for (std::uint32_t i = 0; i < count; ++i) {
    const u64 g = r.get_u64();
    if (g % 2 == 0 || g >= 2 * ctx->ring_dim()) {
      throw std::runtime_error(source + ": Galois element " + std::to_string(g) +
                               " is not odd and below 2N = " + std::to_string(2 * ctx->ring_dim()));
    }
    KeySwitchKey key = get_ks_key(r, *ctx, source);
    permute_galois_key(key,
                       ctx->galois_permutation(math::inverse_galois_element(g, ctx->ring_dim())));
    gk.keys.emplace(g, std::move(key));
  }
  r.expect_end();
  gk.key_id = obj.header.key_id;
  return gk;
}

void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& object_bytes) {
  // Atomic, fsync'ed, and 0600 from the first moment for a secret key (core/serialize.h).
  core::write_bytes_atomic(path, object_bytes.data(), object_bytes.size(),
                           core::file_mode_of(object_bytes));
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open for reading");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace hec::bfv
