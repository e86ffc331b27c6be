// The run's file checks of files.h (moved out of the CKKS program layer: every scheme's roles
// read and write the same metadata).
#include "program/files.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace hec::program {

void check_program(const ProgramSpec& spec, const MetaDoc& meta) {
  const std::string& digest = meta.field("program_digest");
  if (digest != spec.digest) {
    throw std::runtime_error(meta.path.string() + ": made for program '" + meta.field("program") +
                             "' (digest " + digest.substr(0, 16) + "...), not for this program '" +
                             spec.name + "' (digest " + spec.digest.substr(0, 16) +
                             "...): a file from another program or another compilation");
  }
}

std::string container_trailer_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (does it exist?)");
  const std::streamoff size = in.tellg();
  if (size < static_cast<std::streamoff>(core::kHeaderSize + core::kChecksumSize)) {
    throw std::runtime_error(path.string() + ": truncated (shorter than a header and checksum)");
  }
  in.seekg(size - static_cast<std::streamoff>(core::kChecksumSize));
  std::uint8_t sum[core::kChecksumSize];
  in.read(reinterpret_cast<char*>(sum), core::kChecksumSize);
  if (!in) throw std::runtime_error(path.string() + ": read failed");
  return hex(sum, core::kChecksumSize);
}

Peek peek_container(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (does it exist?)");
  std::uint8_t h[core::kHeaderSize];
  in.read(reinterpret_cast<char*>(h), core::kHeaderSize);
  if (in.gcount() != static_cast<std::streamsize>(core::kHeaderSize)) {
    throw std::runtime_error(path.string() + ": truncated: shorter than the " +
                             std::to_string(core::kHeaderSize) + "-byte header");
  }
  if (std::memcmp(h, core::kMagic, 4) != 0) {
    throw std::runtime_error(path.string() + ": not a hec key or ciphertext file (bad magic)");
  }
  auto u32 = [&](std::size_t o) {
    std::uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | h[o + static_cast<std::size_t>(k)];
    return v;
  };
  auto u64 = [&](std::size_t o) {
    std::uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | h[o + static_cast<std::size_t>(k)];
    return v;
  };
  // The version first: an older file's trailer has another size (core/serialize.h).
  if (const std::uint32_t version = u32(4); version != core::kFormatVersion) {
    throw std::runtime_error(
        path.string() + ": unsupported format version " + std::to_string(version) +
        " (this program reads version " + std::to_string(core::kFormatVersion) +
        ", whose files end in a BLAKE3-256 digest)" +
        (version < core::kFormatVersion ? ": an older hec wrote it; make it again with this build"
                                        : ": a newer hec wrote it"));
  }
  Peek p;
  p.header.scheme = static_cast<core::Scheme>(h[8]);
  p.header.kind = static_cast<core::ObjectKind>(h[9]);
  std::copy(h + 12, h + 44, p.header.params_digest.begin());
  std::copy(h + 44, h + 60, p.header.key_id.begin());
  p.header.level = static_cast<std::int32_t>(u32(60));
  const std::uint64_t scale_bits = u64(64);
  std::memcpy(&p.header.scale, &scale_bits, sizeof(double));
  p.header.degree = u32(72);
  p.header.payload_length = u64(76);
  p.file_size = std::filesystem::file_size(path);
  const std::uintmax_t want = core::kHeaderSize + p.header.payload_length + core::kChecksumSize;
  if (p.file_size < want) {
    throw std::runtime_error(path.string() + ": truncated: the header announces " +
                             std::to_string(want) + " bytes, the file has " +
                             std::to_string(p.file_size));
  }
  return p;
}

std::size_t resolve_dim(const std::string& dim, const Sizes& sizes) {
  if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) return std::stoull(dim);
  auto it = sizes.find(dim);
  if (it == sizes.end()) throw std::logic_error("no size for dimension " + dim);
  return it->second;
}

std::vector<std::size_t> resolve(const std::vector<std::string>& dims, const Sizes& sizes) {
  std::vector<std::size_t> out;
  for (const auto& d : dims) out.push_back(resolve_dim(d, sizes));
  return out;
}

bool has_param(const ProgramSpec& spec, const std::string& name) {
  for (const auto& [param, bound] : spec.params) {
    if (param == name) return true;
  }
  return false;
}

std::size_t bound_of(const ProgramSpec& spec, const std::string& name) {
  for (const auto& [p, b] : spec.params) {
    if (p == name) return b;
  }
  return 0;
}

std::string sizes_text(const Sizes& sizes) {
  std::string s;
  for (const auto& [k, v] : sizes) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

Sizes parse_sizes_text(const std::string& text) {
  Sizes out;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    out[item.substr(0, eq)] = std::stoull(item.substr(eq + 1));
  }
  return out;
}

void print_stamp(const ProgramSpec& spec, std::ostream& out) {
  if (spec.insecure) {
    out << "WARNING: program '" << spec.name
        << "' was compiled with --insecure: its parameters are NOT 128-bit secure\n";
  }
}

Meta base_meta(const ProgramSpec& spec, const std::string& kind) {
  return {{"kind", kind},
          {"program", spec.name},
          {"program_digest", spec.digest},
          {"insecure", spec.insecure ? "true" : "false"}};
}

core::KeyId read_keyset(const ProgramSpec& spec, const std::filesystem::path& eval_dir,
                        const Manifest& manifest) {
  const auto path = eval_dir / "keyset";
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(eval_dir.string() +
                             ": not an evaluation-key directory (no keyset file; give "
                             "--eval KEYDIR/eval as written by keygen)");
  }
  const MetaDoc meta = read_meta(path);
  check_program(spec, meta);
  manifest.check_signature(meta, "coordinator");
  const std::string& text = meta.field("key_id");
  if (text != manifest.key_id) {
    throw std::runtime_error(path.string() + ": key id " + text + ", but the run manifest " +
                             manifest.path.string() + " names key id " + manifest.key_id);
  }
  core::KeyId id{};
  if (text.size() != 32) throw std::runtime_error(path.string() + ": bad key_id");
  for (std::size_t i = 0; i < 16; ++i) {
    id[i] = static_cast<std::uint8_t>(std::stoul(text.substr(2 * i, 2), nullptr, 16));
  }
  return id;
}

Manifest role_manifest(const ProgramSpec& spec, const ParsedArgs& args,
                       const std::filesystem::path& fallback) {
  const auto given = args.get("manifest");
  const Manifest m = read_manifest(given ? std::filesystem::path(*given) : fallback);
  if (m.program_digest != spec.digest) {
    throw std::runtime_error(m.path.string() + ": the manifest of a run of program '" + m.program +
                             "', not of this program '" + spec.name +
                             "' (another program or another compilation)");
  }
  return m;
}

std::optional<SigningKey> role_signing_key(const ParsedArgs& args) {
  if (auto path = args.get("sign")) return SigningKey::load(*path);
  return std::nullopt;
}

}  // namespace hec::program
