// The roles of a generated labeled-HE program (see program.h).
#include "labhe/program.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>
#include <stdexcept>

#include "math/parallel.h"
#include "program/args.h"
#include "program/npy.h"
#include "program/output.h"

namespace hec::labhe {

namespace fs = std::filesystem;
using program::CommandLine;
using program::ParsedArgs;
using program::UsageError;

std::uint64_t input_rows(const PlanInput& in) { return in.shape.empty() ? 1 : in.shape[0]; }
std::uint64_t input_cols(const PlanInput& in) { return in.shape.size() == 2 ? in.shape[1] : 1; }

std::vector<Part> PublicSetup::parts_of(std::uint32_t provider) const {
  std::vector<Part> out;
  for (const auto& p : parts) {
    if (p.provider == provider) out.push_back(p);
  }
  return out;
}

std::vector<Part> ownership(const Plan& plan, std::uint32_t providers,
                            const std::map<std::string, std::uint32_t>& owners,
                            std::uint32_t* provider_count) {
  if (providers == 0) throw std::invalid_argument("--providers must be at least 1");
  std::uint32_t count = providers;
  for (const auto& [name, who] : owners) {
    plan.input(name);  // throws for an unknown input
    count = std::max(count, who + 1);
  }
  std::vector<Part> parts;
  for (const auto& in : plan.inputs) {
    const std::uint64_t rows = input_rows(in);
    // A derived input is uploaded by the providers of its source, row for row.
    auto owner = owners.find(in.source.empty() ? in.name : in.source);
    if (owner != owners.end()) {
      parts.push_back({in.name, owner->second, 0, rows});
      continue;
    }
    if (rows < providers) {
      throw std::invalid_argument("input '" + in.name + "' has " + std::to_string(rows) +
                                  " rows, fewer than the " + std::to_string(providers) +
                                  " providers sharing it; give it one owner (--owner " + in.name +
                                  "=I)");
    }
    for (std::uint32_t i = 0; i < providers; ++i) {
      parts.push_back({in.name, i, rows * i / providers, rows * (i + 1) / providers});
    }
  }
  std::vector<bool> has(count, false);
  for (const auto& p : parts) has[p.provider] = true;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (!has[i]) throw std::invalid_argument("provider " + std::to_string(i) + " owns no input");
  }
  *provider_count = count;
  return parts;
}

namespace {

std::string part_text(const Part& p) {
  return "rows " + std::to_string(p.begin) + ":" + std::to_string(p.end) + " of '" + p.input + "'";
}

// --- files -----------------------------------------------------------------------------

void write_public_key(Writer& w, const PublicKey& pk) {
  w.u8(static_cast<std::uint8_t>(pk.scheme));
  w.u32(pk.modulus_bits);
  w.u32(pk.message_bits);
  w.big(pk.n);
  w.big(pk.y);
}

PublicKey read_public_key(Reader& r) {
  PublicKey pk;
  std::uint8_t s = r.u8();
  if (s != 1 && s != 2) throw std::runtime_error("public key: unknown scheme");
  pk.scheme = static_cast<Scheme>(s);
  pk.modulus_bits = r.u32();
  pk.message_bits = r.u32();
  pk.n = r.big();
  pk.y = r.big();
  pk.finish();
  return pk;
}

PublicSetup load_setup(const fs::path& path, const Plan& plan) {
  PublicSetup s;
  std::string payload =
      read_object(path, FileKind::kPublicKey, plan.digest, s.key_id, true, &s.key_id);
  Reader r(path.string(), payload);
  s.pk = read_public_key(r);
  s.providers = r.u32();
  std::uint32_t nparts = r.u32();
  for (std::uint32_t i = 0; i < nparts; ++i) {
    Part p;
    p.input = r.bytes();
    p.provider = r.u32();
    p.begin = r.u64();
    p.end = r.u64();
    s.parts.push_back(p);
  }
  s.key_checks.resize(s.providers);
  for (auto& kc : s.key_checks) r.raw(kc.data(), kc.size());
  r.expect_done();
  return s;
}

struct ReceiverSecret {
  SecretKey sk;
  PrfKey master{};
  ~ReceiverSecret() { sodium_memzero(master.data(), master.size()); }
};

void load_receiver(const fs::path& path, const Plan& plan, const PublicSetup& setup,
                   ReceiverSecret& out) {
  std::string payload = read_object(path, FileKind::kReceiverSecret, plan.digest, setup.key_id);
  Reader r(path.string(), payload);
  out.sk.p = r.big();
  out.sk.q = r.big();
  out.sk.exp = r.big();
  out.sk.aux = r.big();
  r.raw(out.master.data(), out.master.size());
  r.expect_done();
  sodium_memzero(payload.data(), payload.size());
  check_key_pair(setup.pk, out.sk);
}

struct ProviderKey {
  std::uint32_t provider = 0;
  PrfKey key{};
  ~ProviderKey() { sodium_memzero(key.data(), key.size()); }
};

void load_provider_key(const fs::path& path, const Plan& plan, const PublicSetup& setup,
                       std::uint32_t claimed, ProviderKey& out) {
  std::string payload = read_object(path, FileKind::kProviderKey, plan.digest, setup.key_id);
  Reader r(path.string(), payload);
  out.provider = r.u32();
  r.raw(out.key.data(), out.key.size());
  r.expect_done();
  sodium_memzero(payload.data(), payload.size());
  if (out.provider != claimed) {
    throw std::runtime_error(path.string() + " is the key of provider " +
                             std::to_string(out.provider) + ", not of provider " +
                             std::to_string(claimed) + ": a provider encrypts with its own key");
  }
  if (out.provider >= setup.providers || key_check(out.key) != setup.key_checks[out.provider]) {
    throw std::runtime_error(path.string() +
                             ": key does not match the key check the setup "
                             "recorded for provider " +
                             std::to_string(out.provider));
  }
}

fs::path provider_file(const fs::path& dir, const std::string& stem, std::uint32_t i,
                       const std::string& ext) {
  return dir / (stem + "-" + std::to_string(i) + ext);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void report_time(const std::string& role, double s, const std::string& extra = "") {
  std::cerr << "labhe " << role << ": " << s << " s" << (extra.empty() ? "" : " (" + extra + ")")
            << "\n";
}

// --- roles -------------------------------------------------------------------------------

int run_setup(const Plan& plan, const ParsedArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  const fs::path out = args.require("out");
  Scheme scheme = scheme_from_name(args.get("scheme").value_or("jl"));
  const std::uint32_t bits =
      static_cast<std::uint32_t>(std::stoul(args.get("modulus-bits").value_or("3072")));
  if (modulus_security_bits(bits) < 128) {
    std::cerr << "WARNING: a " << bits << "-bit modulus gives " << modulus_security_bits(bits)
              << "-bit security, below the 128 bits of the default (3072)\n";
  }
  const std::uint32_t providers =
      static_cast<std::uint32_t>(std::stoul(args.get("providers").value_or("1")));
  std::map<std::string, std::uint32_t> owners;
  for (const auto& o : args.all("owner")) {
    auto [name, who] = program::split_assignment("--owner", o);
    owners[name] = static_cast<std::uint32_t>(std::stoul(who));
  }
  PublicSetup setup;
  setup.parts = ownership(plan, providers, owners, &setup.providers);
  KeyPair kp = keygen(scheme, bits, plan.message_bits);
  setup.pk = kp.pk;
  randombytes_buf(setup.key_id.data(), setup.key_id.size());
  ReceiverSecret secret;
  secret.master = random_prf_key();
  std::vector<PrfKey> keys(setup.providers);
  for (std::uint32_t i = 0; i < setup.providers; ++i) {
    keys[i] = derive_provider_key(secret.master, i);
    setup.key_checks.push_back(key_check(keys[i]));
  }
  program::OutputSet outputs;
  outputs.create_dir(out);
  Writer pub;
  write_public_key(pub, setup.pk);
  pub.u32(setup.providers);
  pub.u32(static_cast<std::uint32_t>(setup.parts.size()));
  for (const auto& p : setup.parts) {
    pub.bytes(p.input);
    pub.u32(p.provider);
    pub.u64(p.begin);
    pub.u64(p.end);
  }
  for (const auto& kc : setup.key_checks) pub.raw(kc.data(), kc.size());
  FileHeader h{FileKind::kPublicKey, plan.digest, setup.key_id};
  write_object(out / "public.key", h, pub.data(), false);
  outputs.add(out / "public.key");
  Writer sec;
  sec.big(kp.sk.p);
  sec.big(kp.sk.q);
  sec.big(kp.sk.exp);
  sec.big(kp.sk.aux);
  sec.raw(secret.master.data(), secret.master.size());
  h.kind = FileKind::kReceiverSecret;
  write_object(out / "receiver.secret", h, sec.data(), true);
  sodium_memzero(sec.data().data(), sec.data().size());
  outputs.add(out / "receiver.secret");
  h.kind = FileKind::kProviderKey;
  for (std::uint32_t i = 0; i < setup.providers; ++i) {
    Writer w;
    w.u32(i);
    w.raw(keys[i].data(), keys[i].size());
    write_object(provider_file(out, "provider", i, ".key"), h, w.data(), true);
    sodium_memzero(w.data().data(), w.data().size());
    sodium_memzero(keys[i].data(), keys[i].size());
    outputs.add(provider_file(out, "provider", i, ".key"));
  }
  outputs.finish();
  report_time("setup", seconds_since(t0),
              scheme_name(scheme) + ", " + std::to_string(bits) + "-bit modulus, " +
                  std::to_string(modulus_security_bits(bits)) + "-bit security, message space " +
                  (scheme == Scheme::kJoyeLibert ? "2^" + std::to_string(plan.message_bits)
                                                 : std::string("Z_N")) +
                  ", " + std::to_string(setup.providers) + " providers");
  return 0;
}

// The labels of one part, in row-major order.
std::vector<Label> part_labels(const Plan& plan, const Part& p) {
  const std::uint64_t cols = input_cols(plan.input(p.input));
  std::vector<Label> out;
  out.reserve((p.end - p.begin) * cols);
  for (std::uint64_t r = p.begin; r < p.end; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) out.push_back({p.input, r, c});
  }
  return out;
}

int run_encrypt_offline(const Plan& plan, const ParsedArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  PublicSetup setup = load_setup(args.require("pk"), plan);
  const std::uint32_t who = static_cast<std::uint32_t>(std::stoul(args.require("provider")));
  ProviderKey key;
  load_provider_key(args.require("key"), plan, setup, who, key);
  const PublicKey& pk = setup.pk;
  Writer w;
  w.u32(who);
  std::size_t values = 0;
  for (const Part& p : setup.parts_of(who)) {
    auto labels = part_labels(plan, p);
    std::vector<Int> b(labels.size()), beta(labels.size());
    const Encryptor encryptor(pk);
    math::parallel_for(labels.size(), [&](std::size_t i) {
      b[i] = prf_mask(key.key, labels[i], pk.msg_modulus);
      beta[i] = encryptor.encrypt(b[i]);
    });
    w.bytes(p.input);
    w.u64(p.begin);
    w.u64(p.end);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      w.fixed(b[i], pk.message_bytes());
      w.fixed(beta[i], pk.ciphertext_bytes());
      b[i].wipe();
    }
    values += labels.size();
  }
  FileHeader h{FileKind::kOffline, plan.digest, setup.key_id};
  write_object(args.require("out"), h, w.data(), true);
  sodium_memzero(w.data().data(), w.data().size());
  double s = seconds_since(t0);
  report_time("encrypt-offline", s,
              std::to_string(values) + " values, " + std::to_string(values ? s / values * 1e3 : 0) +
                  " ms per value");
  return 0;
}

int run_encrypt_online(const Plan& plan, const ParsedArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  PublicSetup setup = load_setup(args.require("pk"), plan);
  const std::uint32_t who = static_cast<std::uint32_t>(std::stoul(args.require("provider")));
  ProviderKey key;
  load_provider_key(args.require("key"), plan, setup, who, key);
  const PublicKey& pk = setup.pk;
  const fs::path offline_path = args.require("offline");
  std::string offline = read_object(offline_path, FileKind::kOffline, plan.digest, setup.key_id);
  Reader off(offline_path.string(), offline);
  if (off.u32() != who) {
    throw std::runtime_error(offline_path.string() + " was made by another provider");
  }
  std::map<std::string, fs::path> files;
  for (const auto& item : args.all("input")) {
    auto [name, path] = program::split_assignment("--input", item);
    files[name] = path;
  }
  auto mine = setup.parts_of(who);
  Writer w;
  w.u32(who);
  KeyCheck kc = key_check(key.key);
  w.raw(kc.data(), kc.size());
  w.u32(static_cast<std::uint32_t>(mine.size()));
  std::size_t values = 0;
  for (const Part& p : mine) {
    const PlanInput& in = plan.input(p.input);
    const std::string file_input = in.source.empty() ? p.input : in.source;
    auto f = files.find(file_input);
    if (f == files.end()) {
      throw UsageError("provider " + std::to_string(who) + " owns " + part_text(p) +
                       ": give them as --input " + file_input + "=FILE.npy");
    }
    program::NpyArray x = program::read_npy(f->second);
    const std::uint64_t cols = input_cols(in);
    const std::uint64_t rows = p.end - p.begin;
    std::vector<std::size_t> want;
    if (!in.shape.empty()) want.push_back(rows);
    if (in.shape.size() == 2) want.push_back(cols);
    if (x.shape != want) {
      throw std::runtime_error(f->second.string() + ": provider " + std::to_string(who) + " owns " +
                               part_text(p) + ", an array of shape " + program::format_shape(want) +
                               "; the file holds " + program::format_shape(x.shape));
    }
    if (off.bytes() != p.input || off.u64() != p.begin || off.u64() != p.end) {
      throw std::runtime_error(offline_path.string() + ": its labels are not those of " +
                               part_text(p));
    }
    w.bytes(p.input);
    w.u64(p.begin);
    w.u64(p.end);
    const double scale = mpz_get_d(in.scale.get());
    if (!in.source.empty()) {  // owner-side precomputation of a derived input
      for (double& v : x.data) v = in.coeffs[0] + in.coeffs[1] * v + in.coeffs[2] * v * v;
    }
    for (std::size_t i = 0; i < x.data.size(); ++i) {
      Int b = off.fixed(pk.message_bytes());
      Int beta = off.fixed(pk.ciphertext_bytes());
      const double scaled = x.data[i] * scale;
      const double rounded = std::nearbyint(scaled);
      if (scale == 1.0 && rounded != scaled) {
        throw std::runtime_error(f->second.string() + ": input '" + p.input +
                                 "' takes integers; row " + std::to_string(p.begin + i / cols) +
                                 " column " + std::to_string(i % cols) + " holds " +
                                 std::to_string(x.data[i]));
      }
      if (std::fabs(rounded) >= 9.0e15) {
        throw std::runtime_error(f->second.string() +
                                 ": value too large for its fixed-point scale");
      }
      Int a(static_cast<long>(rounded));
      mpz_sub(a.get(), a.get(), b.get());
      mpz_mod(a.get(), a.get(), pk.msg_modulus.get());
      b.wipe();
      w.fixed(a, pk.message_bytes());
      w.fixed(beta, pk.ciphertext_bytes());
    }
    values += x.data.size();
  }
  sodium_memzero(offline.data(), offline.size());
  FileHeader h{FileKind::kUpload, plan.digest, setup.key_id};
  write_object(args.require("out"), h, w.data(), false);
  report_time("encrypt-online", seconds_since(t0), std::to_string(values) + " values");
  return 0;
}

Upload read_upload(const fs::path& path, const Plan& plan, const PublicSetup& setup) {
  Upload u;
  u.file = path.string();
  std::string payload = read_object(path, FileKind::kUpload, plan.digest, setup.key_id);
  Reader r(u.file, payload);
  u.provider = r.u32();
  r.raw(u.key_check.data(), u.key_check.size());
  std::uint32_t nparts = r.u32();
  for (std::uint32_t k = 0; k < nparts; ++k) {
    Part p;
    p.input = r.bytes();
    p.provider = u.provider;
    p.begin = r.u64();
    p.end = r.u64();
    const PlanInput* in = nullptr;
    for (const auto& i : plan.inputs) {
      if (i.name == p.input) in = &i;
    }
    if (in == nullptr || p.end > input_rows(*in) || p.begin >= p.end) {
      throw std::runtime_error(u.file + ": labels " + part_text(p) +
                               " are not labels of this program");
    }
    const std::uint64_t count = (p.end - p.begin) * input_cols(*in);
    std::vector<Int> a(count), beta(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      a[i] = r.fixed(setup.pk.message_bytes());
      beta[i] = r.fixed(setup.pk.ciphertext_bytes());
      if (mpz_cmp(a[i].get(), setup.pk.msg_modulus.get()) >= 0 || beta[i].sign() == 0 ||
          mpz_cmp(beta[i].get(), setup.pk.ct_modulus.get()) >= 0) {
        throw std::runtime_error(u.file + ": value " + std::to_string(i) + " of " + part_text(p) +
                                 " is outside the message or ciphertext space");
      }
    }
    u.parts.push_back(p);
    u.a.push_back(std::move(a));
    u.beta.push_back(std::move(beta));
  }
  r.expect_done();
  return u;
}

}  // namespace

std::map<std::string, Array> assemble_uploads(const Plan& plan, const PublicSetup& setup,
                                              std::vector<Upload> uploads) {
  std::map<std::uint32_t, const Upload*> by_provider;
  for (const auto& u : uploads) {
    if (u.provider >= setup.providers) {
      throw std::runtime_error(u.file + ": provider " + std::to_string(u.provider) +
                               " is not a provider of this run (it has " +
                               std::to_string(setup.providers) + ")");
    }
    if (!by_provider.emplace(u.provider, &u).second) {
      throw std::runtime_error(u.file + ": a second upload from provider " +
                               std::to_string(u.provider) + " (also " +
                               by_provider[u.provider]->file + ")");
    }
    if (u.key_check != setup.key_checks[u.provider]) {
      throw std::runtime_error(u.file + ": provider " + std::to_string(u.provider) +
                               "'s upload was made with another key (its key check differs from "
                               "the one the setup recorded): a provider's key used for another "
                               "provider's data?");
    }
    auto want = setup.parts_of(u.provider);
    bool same = want.size() == u.parts.size();
    for (std::size_t i = 0; same && i < want.size(); ++i) {
      same = want[i].input == u.parts[i].input && want[i].begin == u.parts[i].begin &&
             want[i].end == u.parts[i].end;
    }
    if (!same) {
      std::string got, exp;
      for (const auto& p : u.parts) got += (got.empty() ? "" : ", ") + part_text(p);
      for (const auto& p : want) exp += (exp.empty() ? "" : ", ") + part_text(p);
      throw std::runtime_error(u.file + ": wrong label set: provider " +
                               std::to_string(u.provider) + " uploaded " + got + "; it owns " +
                               exp);
    }
  }
  for (std::uint32_t i = 0; i < setup.providers; ++i) {
    if (!by_provider.count(i)) {
      std::string exp;
      for (const auto& p : setup.parts_of(i)) exp += (exp.empty() ? "" : ", ") + part_text(p);
      throw std::runtime_error("no upload from provider " + std::to_string(i) + " (" + exp + ")");
    }
  }
  std::map<std::string, Array> arrays;
  for (const auto& in : plan.inputs) {
    Array& x = arrays[in.name];
    x.shape = in.shape;
    x.a.resize(shape_size(in.shape));
    x.c.resize(shape_size(in.shape));
  }
  for (auto& u : uploads) {
    for (std::size_t k = 0; k < u.parts.size(); ++k) {
      const Part& p = u.parts[k];
      Array& x = arrays[p.input];
      const std::uint64_t offset = p.begin * input_cols(plan.input(p.input));
      for (std::size_t i = 0; i < u.a[k].size(); ++i) {
        x.a[offset + i] = std::move(u.a[k][i]);
        x.c[offset + i] = std::move(u.beta[k][i]);
      }
    }
  }
  return arrays;
}

namespace {

int run_evaluate(const Plan& plan, const ParsedArgs& args) {
  PublicSetup setup = load_setup(args.require("pk"), plan);
  const fs::path dir = args.require("in");
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + " is not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".upload") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  auto t_read = std::chrono::steady_clock::now();
  std::vector<Upload> uploads;
  for (const auto& f : files) uploads.push_back(read_upload(f, plan, setup));
  auto inputs = assemble_uploads(plan, setup, std::move(uploads));
  double read_s = seconds_since(t_read);
  auto t0 = std::chrono::steady_clock::now();
  auto results = evaluate(plan, Mode::kServer, setup.pk.msg_modulus, &setup.pk, inputs);
  double eval_s = seconds_since(t0);
  Writer w;
  w.u32(static_cast<std::uint32_t>(results.size()));
  std::size_t result_bytes = 0;
  for (std::size_t k = 0; k < results.size(); ++k) {
    const Array& x = results[k];
    w.bytes(plan.reveals[k].name);
    w.u8(x.level2 ? 2 : 1);
    const auto& vals = x.level2 ? x.c : x.a;
    const std::size_t width = x.level2 ? setup.pk.ciphertext_bytes() : setup.pk.message_bytes();
    w.u64(vals.size());
    for (const auto& v : vals) w.fixed(v, width);
    result_bytes += vals.size() * width;
  }
  FileHeader h{FileKind::kResult, plan.digest, setup.key_id};
  write_object(args.require("out"), h, w.data(), false);
  report_time("evaluate", eval_s,
              "reading uploads " + std::to_string(read_s) + " s; result " +
                  std::to_string(result_bytes) + " bytes");
  return 0;
}

// The plan's input arrays of PRF masks b, for every provider's labels.
std::map<std::string, Array> all_masks(const Plan& plan, const PublicSetup& setup,
                                       const PrfKey& master) {
  std::map<std::string, Array> arrays;
  for (const auto& in : plan.inputs) {
    Array& x = arrays[in.name];
    x.shape = in.shape;
    x.a.resize(shape_size(in.shape));
  }
  for (const Part& p : setup.parts) {
    PrfKey key = derive_provider_key(master, p.provider);
    auto labels = part_labels(plan, p);
    Array& x = arrays[p.input];
    const std::uint64_t offset = p.begin * input_cols(plan.input(p.input));
    math::parallel_for(
        labels.size(),
        [&](std::size_t i) { x.a[offset + i] = prf_mask(key, labels[i], setup.pk.msg_modulus); },
        64);
    sodium_memzero(key.data(), key.size());
  }
  return arrays;
}

int run_decrypt_offline(const Plan& plan, const ParsedArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  PublicSetup setup = load_setup(args.require("pk"), plan);
  ReceiverSecret secret;
  load_receiver(args.require("sk"), plan, setup, secret);
  auto masks = evaluate(plan, Mode::kMask, setup.pk.msg_modulus, nullptr,
                        all_masks(plan, setup, secret.master));
  Writer w;
  w.u32(static_cast<std::uint32_t>(masks.size()));
  for (const auto& m : masks) {
    w.u64(m.a.size());
    for (const auto& v : m.a) w.fixed(v, setup.pk.message_bytes());
  }
  FileHeader h{FileKind::kMasks, plan.digest, setup.key_id};
  write_object(args.require("out"), h, w.data(), true);
  report_time("decrypt-offline", seconds_since(t0));
  return 0;
}

int run_decrypt_online(const Plan& plan, const ParsedArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  PublicSetup setup = load_setup(args.require("pk"), plan);
  ReceiverSecret secret;
  load_receiver(args.require("sk"), plan, setup, secret);
  const fs::path masks_path = args.require("masks");
  std::string mp = read_object(masks_path, FileKind::kMasks, plan.digest, setup.key_id);
  Reader mr(masks_path.string(), mp);
  const fs::path in = args.require("in");
  std::string rp = read_object(in, FileKind::kResult, plan.digest, setup.key_id);
  Reader rr(in.string(), rp);
  const PublicKey& pk = setup.pk;
  std::uint32_t n = rr.u32();
  if (n != plan.reveals.size() || mr.u32() != n) {
    throw std::runtime_error(in.string() + ": holds " + std::to_string(n) +
                             " values, the program reveals " + std::to_string(plan.reveals.size()));
  }
  program::OutputSet outputs;
  const fs::path out = args.require("out");
  outputs.create_dir(out);
  for (std::uint32_t k = 0; k < n; ++k) {
    const PlanReveal& rev = plan.reveals[k];
    if (rr.bytes() != rev.name) throw std::runtime_error(in.string() + ": values out of order");
    const bool l2 = rr.u8() == 2;
    if (l2 != plan.level2[rev.value])
      throw std::runtime_error(in.string() + ": wrong level for " + rev.name);
    const std::uint64_t count = rr.u64();
    if (count != shape_size(plan.shapes[rev.value]) || mr.u64() != count) {
      throw std::runtime_error(in.string() + ": wrong number of values for " + rev.name);
    }
    std::vector<Int> cts(count);
    for (auto& c : cts) c = rr.fixed(l2 ? pk.ciphertext_bytes() : pk.message_bytes());
    std::vector<Int> mask(count);
    for (auto& m : mask) m = mr.fixed(pk.message_bytes());
    std::vector<double> values(count);
    math::parallel_for(
        count,
        [&](std::size_t i) {
          Int raw = l2 ? decrypt(pk, secret.sk, cts[i]) : cts[i];
          mpz_add(raw.get(), raw.get(), mask[i].get());
          mpz_mod(raw.get(), raw.get(), pk.msg_modulus.get());
          values[i] = decode_reveal(rev, raw, pk.msg_modulus);
        },
        4096);
    const Shape& sh = plan.shapes[rev.value];
    program::write_npy(out / (rev.name + ".npy"), std::vector<std::size_t>(sh.begin(), sh.end()),
                       values);
    outputs.add(out / (rev.name + ".npy"));
  }
  rr.expect_done();
  outputs.finish();
  const int sec = modulus_security_bits(pk.modulus_bits);
  report_time("decrypt-online", seconds_since(t0));
  if (sec < 128) {
    std::cerr << "WARNING: decrypted under a " << pk.modulus_bits << "-bit modulus (" << sec
              << "-bit security)\n";
  }
  return 0;
}

CommandLine command_line(const Plan& plan) {
  CommandLine cl(plan.name, "labeled-HE program '" + plan.name + "' (hec targets/labhe)");
  cl.add({"setup",
          "receiver: keys of the linear scheme, PRF keys per provider, ownership table",
          {{"out", "DIR", "where the keys go", true},
           {"scheme", "jl|paillier", "linear scheme (default jl: Joye-Libert)"},
           {"modulus-bits", "BITS", "modulus size (default 3072: 128-bit security)"},
           {"providers", "P", "providers sharing the rows of each input (default 1)"},
           {"owner", "NAME=I", "input NAME belongs wholly to provider I", false, true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"encrypt-offline",
          "provider: PRF masks and their encryptions, before the data exists",
          {{"pk", "FILE", "public.key", true},
           {"key", "FILE", "this provider's key", true},
           {"provider", "I", "this provider's number", true},
           {"out", "FILE", "offline file", true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"encrypt-online",
          "provider: the upload a = m - b for its rows",
          {{"pk", "FILE", "public.key", true},
           {"key", "FILE", "this provider's key", true},
           {"provider", "I", "this provider's number", true},
           {"offline", "FILE", "its offline file", true},
           {"input", "NAME=FILE.npy", "its rows of an input", false, true},
           {"out", "FILE", "upload file", true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"evaluate",
          "server: run the program on the uploads (public key only)",
          {{"pk", "FILE", "public.key", true},
           {"in", "DIR", "directory of *.upload files", true},
           {"out", "FILE", "result file", true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"decrypt-offline",
          "receiver: the masks of the revealed values, from the PRF keys",
          {{"pk", "FILE", "public.key", true},
           {"sk", "FILE", "receiver.secret", true},
           {"out", "FILE", "masks file", true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"decrypt-online",
          "receiver: decrypt the result, one .npy per revealed value",
          {{"pk", "FILE", "public.key", true},
           {"sk", "FILE", "receiver.secret", true},
           {"masks", "FILE", "masks file", true},
           {"in", "FILE", "result file", true},
           {"out", "DIR", "output directory", true},
           {"threads", "T", "threads"}},
          {}});
  cl.add({"plan", "print the labeled program", {}, {}});
  return cl;
}

}  // namespace

int program_main(int argc, char** argv, const char* plan_text) {
  math::reexec_with_passive_openmp_wait(argv);
  Plan plan;
  try {
    plan = Plan::parse(plan_text);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
  CommandLine cl = command_line(plan);
  ParsedArgs args;
  try {
    args = cl.parse(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "usage error: " << e.what() << "\n" << cl.usage();
    return 2;
  }
  try {
    if (args.subcommand == "help") {
      std::cout << (args.positionals.empty() ? cl.usage() : cl.usage(args.positional(0)));
      return 0;
    }
    if (auto t = args.get("threads")) math::set_thread_cap(std::stoi(*t));
    if (args.subcommand == "setup") return run_setup(plan, args);
    if (args.subcommand == "encrypt-offline") return run_encrypt_offline(plan, args);
    if (args.subcommand == "encrypt-online") return run_encrypt_online(plan, args);
    if (args.subcommand == "evaluate") return run_evaluate(plan, args);
    if (args.subcommand == "decrypt-offline") return run_decrypt_offline(plan, args);
    if (args.subcommand == "decrypt-online") return run_decrypt_online(plan, args);
    if (args.subcommand == "plan") {
      std::cout << plan.text;
      return 0;
    }
  } catch (const UsageError& e) {
    std::cerr << "usage error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace hec::labhe
