// The shard index of server.h: which files hold which rows of which input, checked against
// the run manifest before anything is read (scheme-independent: only container headers and
// .meta files are read here).
#include "program/server.h"

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>

namespace hec::program {

ShardIndex::ShardIndex(const ProgramSpec& spec, const Manifest& manifest,
                       const std::filesystem::path& ct_dir, const core::KeyId& key_id)
    : spec_(spec), dir_(ct_dir), key_id_(key_id) {
  if (!std::filesystem::is_directory(dir_)) {
    throw std::runtime_error(dir_.string() + ": the ciphertext directory does not exist");
  }
  // Every .cts file in the directory must be a shard of an input of this program: an extra
  // file is refused rather than ignored (it may be the upload someone meant to be read).
  std::set<std::string> ids;
  for (const auto& in : spec_.inputs) ids.insert(in.id);
  const std::regex block_name(R"((.+)\.rows-(\d+)-(\d+)\.cts)");
  std::map<std::string, std::vector<Block>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, block_name)) {
      if (!ids.count(m[1])) {
        throw std::runtime_error(entry.path().string() +
                                 ": an extra file: this program has no "
                                 "input array '" +
                                 std::string(m[1]) + "'");
      }
      found[m[1]].push_back({entry.path(), std::stoull(m[2]), std::stoull(m[3])});
    } else if (name.size() > 4 && name.substr(name.size() - 4) == ".cts" &&
               !ids.count(name.substr(0, name.size() - 4))) {
      throw std::runtime_error(entry.path().string() +
                               ": an extra file: not a shard of any input of this program");
    }
  }
  // Checks one upload against the manifest; returns its metadata and the digest its signed
  // metadata binds (every later read of the file requires that digest: core::Expectation).
  auto check_file = [&](const std::filesystem::path& path, const InputSpec& in,
                        const std::string& shard, core::Checksum& content) {
    const MetaDoc meta = read_meta(path.string() + ".meta");
    check_program(spec_, meta);
    if (meta.field("key_id") != key_hex(key_id_)) {
      throw std::runtime_error(path.string() + ": encrypted under key id " + meta.field("key_id") +
                               " but the evaluation keys are key id " + key_hex(key_id_) +
                               " (wrong keys: encrypt with KEYDIR/public of " +
                               "the same keygen run)");
    }
    manifest.check_same_run(meta, "an upload");
    if (meta.field("id") != in.id) {
      throw std::runtime_error(path.string() + ": its metadata holds array '" + meta.field("id") +
                               "', the file name says '" + in.id + "' (swapped or renamed files)");
    }
    if (meta.field("shard") != shard) {
      throw std::runtime_error(path.string() + ": its metadata says shard '" + meta.field("shard") +
                               "', the file name '" + shard + "' (a renamed file?)");
    }
    const std::string& owner = meta.field("owner");
    const OwnerEntry* entry = manifest.owner(owner);
    if (!manifest.owners.empty() && entry == nullptr) {
      throw std::runtime_error(path.string() + ": uploaded by '" + owner +
                               "', who is not a data owner of this run (" + manifest.path.string() +
                               ")");
    }
    manifest.check_signature(meta, owner);
    if (entry != nullptr && in.streamed && entry->end > entry->begin) {
      const auto sp = shard.find(' ');
      const std::size_t a = std::stoull(shard.substr(5, sp)), b = std::stoull(shard.substr(sp + 1));
      if (a < entry->begin || b > entry->end) {
        throw std::runtime_error(path.string() + ": rows " + std::to_string(a) + ":" +
                                 std::to_string(b) + " uploaded by '" + owner +
                                 "', whose rows are " + std::to_string(entry->begin) + ":" +
                                 std::to_string(entry->end));
      }
    }
    // The container's header first: a file of another format version is named as such.
    const Peek p = peek_container(path);
    content = core::checksum_from_hex(meta.field("content_checksum"), meta.path.string());
    if (meta.field("content_checksum") != container_trailer_hex(path)) {
      throw std::runtime_error(path.string() + ": its content is not the one its metadata (" +
                               meta.path.string() +
                               ") describes: the file was replaced or swapped with another");
    }
    if (p.header.key_id != key_id_) {
      throw std::runtime_error(path.string() + ": the ciphertexts carry key id " +
                               key_hex(p.header.key_id) + ", the evaluation keys " +
                               key_hex(key_id_) + " (wrong keys)");
    }
    return meta;
  };
  for (const auto& in : spec_.inputs) {
    MetaDoc meta;
    if (in.streamed) {
      auto it = found.find(in.id);
      if (it == found.end()) {
        throw std::runtime_error("missing input '" + in.source + "': no " + in.id +
                                 ".rows-A-B.cts in " + dir_.string() + " (run encrypt --input " +
                                 in.source + "=FILE.npy)");
      }
      auto blocks = it->second;
      std::sort(blocks.begin(), blocks.end(),
                [](const Block& a, const Block& b) { return a.begin < b.begin; });
      std::size_t next = 0;
      auto owner_of = [&](std::size_t row) {
        for (const auto& o : manifest.owners) {
          if (row >= o.begin && row < o.end) return " (data owner '" + o.name + "')";
        }
        return std::string();
      };
      for (auto& b : blocks) {
        if (b.begin != next) {
          throw std::runtime_error(
              "input '" + in.source + "': rows " + std::to_string(std::min(next, b.begin)) + ":" +
              std::to_string(std::max(next, b.begin)) +
              (b.begin > next ? " are missing" + owner_of(next)
                              : " are uploaded twice (" + b.path.string() + ")") +
              " (row blocks in " + dir_.string() + " must cover 0:N exactly once)");
        }
        next = b.end;
        meta = check_file(
            b.path, in, "rows " + std::to_string(b.begin) + " " + std::to_string(b.end), b.content);
      }
      if (manifest.rows && next != *manifest.rows) {
        throw std::runtime_error(
            "input '" + in.source + "': rows " + std::to_string(std::min(next, *manifest.rows)) +
            ":" + std::to_string(std::max(next, *manifest.rows)) +
            (next < *manifest.rows ? " are missing" + owner_of(next)
                                   : " are beyond the run's " + std::to_string(*manifest.rows)) +
            " (the manifest " + manifest.path.string() + " fixes " + spec_.stream_dim + " = " +
            std::to_string(*manifest.rows) + ")");
      }
      if (sizes_.count(spec_.stream_dim) && sizes_[spec_.stream_dim] != next) {
        throw std::runtime_error("input '" + in.source + "' has " + std::to_string(next) +
                                 " rows but another streamed input has " +
                                 std::to_string(sizes_[spec_.stream_dim]));
      }
      sizes_[spec_.stream_dim] = next;
      blocks_[in.id] = blocks;
    } else {
      const auto path = dir_ / (in.id + ".cts");
      if (!std::filesystem::exists(path)) {
        throw std::runtime_error("missing input '" + in.source + "': no " + path.string() +
                                 " (run encrypt --input " + in.source + "=FILE.npy)");
      }
      meta = check_file(path, in, "whole", whole_content_[in.id]);
    }
    const Sizes dims = parse_sizes_text(meta.field("sizes"));
    for (const auto& [k, v] : dims) {
      auto [pos, inserted] = sizes_.emplace(k, v);
      if (!inserted && pos->second != v) {
        throw std::runtime_error("input '" + in.source + "' has " + k + " = " + std::to_string(v) +
                                 " but another input has " + k + " = " +
                                 std::to_string(pos->second));
      }
    }
  }
  // Sizes the run manifest fixes (keygen --size): those no upload carries, and a check of
  // those the uploads carry.
  for (const auto& [name, value] : manifest.sizes) {
    if (!has_param(spec_, name)) {
      throw std::runtime_error(manifest.path.string() + ": fixes size " + name +
                               ", which this program does not have");
    }
    auto [pos, inserted] = sizes_.emplace(name, value);
    if (!inserted && pos->second != value) {
      throw std::runtime_error("the uploads in " + dir_.string() + " have " + name + " = " +
                               std::to_string(pos->second) + " but the run manifest " +
                               manifest.path.string() + " fixes " + name + " = " +
                               std::to_string(value));
    }
  }
  for (const auto& [name, bound] : spec_.params) {
    if (sizes_.count(name) == 0) {
      throw std::runtime_error("size " + name + " is not given by any input in " + dir_.string() +
                               " (no upload carries it: the coordinator fixes it with keygen "
                               "--size " +
                               name + "=V)");
    }
    if (sizes_[name] > bound) {
      throw std::runtime_error("size " + name + " = " + std::to_string(sizes_[name]) +
                               " exceeds the bound " + std::to_string(bound) +
                               " this program was compiled for");
    }
  }
}

std::size_t ShardIndex::size(const std::string& name) const {
  auto it = sizes_.find(name);
  if (it == sizes_.end()) throw std::logic_error("no size " + name);
  return it->second;
}

std::size_t ShardIndex::rows() const {
  return spec_.stream_dim.empty() ? 0 : size(spec_.stream_dim);
}

std::size_t ShardIndex::stream_units() const {
  return (rows() + spec_.stream_block - 1) / spec_.stream_block;
}

const InputSpec& ShardIndex::input(const std::string& id) const {
  for (const auto& in : spec_.inputs) {
    if (in.id == id) return in;
  }
  throw std::logic_error("no input array " + id);
}

const std::vector<ShardIndex::Block>& ShardIndex::blocks(const std::string& id) const {
  return blocks_.at(id);
}

}  // namespace hec::program
