// The files of a run, the same for every scheme: the checks every reader makes on a .meta file
// against the program and the run manifest, the container header read without the payload,
// content checksums, size parameters written into metadata, and the manifest and signing key
// a role reads. Files a run writes:
//   KEYDIR/secret, KEYDIR/public              the scheme's key containers (core/serialize.h)
//   KEYDIR/eval/keyset                        which program and key id the keys belong to
//   KEYDIR/eval/relin, KEYDIR/eval/galois     only when the program needs them
//   CTDIR/<id>.rows-<a>-<b>.cts (+ .meta)     rows [a, b) of a streamed input
//   CTDIR/<id>.cts (+ .meta)                  a whole (not streamed) input
//   RESDIR/<name>.cts (+ .meta)               a revealed value, still encrypted
//   KEYDIR/manifest (a copy in KEYDIR/eval/)  the run manifest (program/manifest.h)
//   KEYDIR/coordinator.sign (+ .pub)          the coordinator's Ed25519 signing key
// A .meta file (program/manifest.h) is a few "key value" lines (program, program digest, run id,
// key id, array or output name, shard, owner, content checksum) closed by a BLAKE2b checksum and
// the signature of the party that made it; every reader checks them against the run manifest
// and names the file on mismatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/serialize.h"
#include "program/args.h"
#include "program/manifest.h"
#include "program/spec.h"

namespace hec::program {

using Meta = MetaLines;

inline std::string hex(const std::uint8_t* data, std::size_t size) {
  return core::to_hex(data, size);
}
inline std::string key_hex(const core::KeyId& id) { return hex(id.data(), id.size()); }

// Throws naming the file when `meta` was made for another program (or compilation).
void check_program(const ProgramSpec& spec, const MetaDoc& meta);
// The digest trailer (BLAKE3-256) of a container file (its last 32 bytes,
// core/serialize.h), hex: what an upload's signed metadata binds (the streaming reader verifies
// the trailer against the content, so a signature over it covers every byte). Uploads and
// results alike; every read of such a file also requires this digest (core::Expectation::content).
std::string container_trailer_hex(const std::filesystem::path& path);

// The header fields of a HEC1 container (core/serialize.h layout), read without the payload.
struct Peek {
  core::ObjectHeader header;
  std::uintmax_t file_size = 0;
};
Peek peek_container(const std::filesystem::path& path);

std::size_t resolve_dim(const std::string& dim, const Sizes& sizes);
std::vector<std::size_t> resolve(const std::vector<std::string>& dims, const Sizes& sizes);
std::size_t bound_of(const ProgramSpec& spec, const std::string& name);
bool has_param(const ProgramSpec& spec, const std::string& name);  // a size parameter?
std::string sizes_text(const Sizes& sizes);
Sizes parse_sizes_text(const std::string& text);

// The --insecure warning every role but info prints first.
void print_stamp(const ProgramSpec& spec, std::ostream& out);
Meta base_meta(const ProgramSpec& spec, const std::string& kind);
// KEYDIR/eval/keyset, checked against the program and the manifest: the evaluation keys' id.
core::KeyId read_keyset(const ProgramSpec& spec, const std::filesystem::path& eval_dir,
                        const Manifest& manifest);
// The manifest a role reads: --manifest, else `fallback` (KEYDIR/manifest beside the public
// or secret key; KEYDIR/eval/manifest for the server).
Manifest role_manifest(const ProgramSpec& spec, const ParsedArgs& args,
                       const std::filesystem::path& fallback);
std::optional<SigningKey> role_signing_key(const ParsedArgs& args);

}  // namespace hec::program
