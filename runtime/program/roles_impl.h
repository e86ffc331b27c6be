// The roles of every generated program, written once over a scheme binding S (roles.h says
// what S provides): keygen, encrypt, compute, decrypt, info and their file checks. Included
// only by the bindings' .cpp files (ckks_program.cpp, bfv_program.cpp), each of which
// instantiates run_roles<S> once, so generated programs compile no role code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "math/parallel.h"
#include "program/args.h"
#include "program/arrays.h"
#include "program/files.h"
#include "program/manifest.h"
#include "program/npy.h"
#include "program/output.h"
#include "program/progress.h"
#include "program/resources.h"
#include "program/roles.h"
#include "program/server.h"

namespace hec::program::roles {

template <class S>
int keygen(const ProgramSpec& spec, const ParsedArgs& args) {
  const std::filesystem::path dir = args.require("out");
  for (const char* existing : {"secret", "public", "eval/keyset", "manifest"}) {
    if (std::filesystem::exists(dir / existing)) {
      throw std::runtime_error((dir / existing).string() +
                               " exists: keygen never overwrites keys (data encrypted under them "
                               "could no longer be decrypted); choose a new --out directory");
    }
  }
  // The run's parties and rows, checked before any key is made.
  std::vector<OwnerEntry> owners;
  std::optional<std::size_t> rows;
  if (auto r = args.get("rows")) rows = parse_positive("keygen: --rows", *r);
  for (const auto& item : args.all("owner")) {
    // NAME=A:B (its rows of the stream dimension) or NAME (a program that streams nothing).
    const bool has_rows = item.find('=') != std::string::npos;
    const auto [name, range] = has_rows ? split_assignment("--owner", item, "NAME=A:B")
                                        : std::make_pair(item, std::string());
    if (name.empty() || name.find_first_of(" \n.") != std::string::npos) {
      throw UsageError("--owner '" + name + "': a name without spaces or dots");
    }
    for (const auto& o : owners) {
      if (o.name == name) throw UsageError("--owner " + name + " is given twice");
    }
    if (has_rows == spec.stream_dim.empty()) {
      throw UsageError(
          "--owner " + item + ": " +
          (has_rows ? "this program streams no rows: give --owner NAME"
                    : "give the owner's rows of " + spec.stream_dim + " as --owner NAME=A:B"));
    }
    RowRange rr;
    if (has_rows) rr = parse_row_range("--owner " + name, range);
    owners.push_back({name, rr.begin, rr.end, std::nullopt});
  }
  if (!owners.empty() && !spec.stream_dim.empty()) {
    auto sorted = owners;
    std::sort(sorted.begin(), sorted.end(),
              [](const OwnerEntry& a, const OwnerEntry& b) { return a.begin < b.begin; });
    std::size_t next = 0;
    for (const auto& o : sorted) {
      if (o.begin != next) {
        throw UsageError(
            "--owner " + o.name + "=" + std::to_string(o.begin) + ":" + std::to_string(o.end) +
            ": the owners' rows must cover 0:N once, in "
            "order without gaps or overlaps (row " +
            std::to_string(next) + (o.begin > next ? " has no owner)" : " has two owners)"));
      }
      next = o.end;
    }
    if (rows && *rows != next) {
      throw UsageError("--rows " + std::to_string(*rows) + " but the owners' rows end at " +
                       std::to_string(next));
    }
    rows = next;
  }
  if (rows && !spec.stream_dim.empty()) {
    const std::size_t bound = bound_of(spec, spec.stream_dim);
    if (*rows > bound) {
      throw UsageError("keygen: " + std::to_string(*rows) + " rows exceed the bound " +
                       spec.stream_dim + " <= " + std::to_string(bound));
    }
  }
  for (const auto& item : args.all("owner-key")) {
    const auto assignment = split_assignment("--owner-key", item);
    const std::string& name = assignment.first;
    const std::string& file = assignment.second;
    auto it = std::find_if(owners.begin(), owners.end(),
                           [&](const OwnerEntry& o) { return o.name == name; });
    if (it == owners.end()) {
      throw UsageError("--owner-key " + name + ": no --owner " + name + "=A:B was given");
    }
    it->key = load_verify_key(file);
  }
  std::optional<VerifyKey> server;
  if (auto f = args.get("server-key")) server = load_verify_key(*f);
  MetaLines fixed_sizes;
  for (const auto& item : args.all("size")) {
    const auto [name, value] = split_assignment("--size", item, "NAME=VALUE");
    if (!has_param(spec, name)) {
      throw UsageError("--size " + item + ": this program has no size parameter '" + name + "'");
    }
    const std::size_t size = parse_positive("--size " + name, value);
    if (size > bound_of(spec, name)) {
      throw UsageError("--size " + item + " exceeds the bound " + name +
                       " <= " + std::to_string(bound_of(spec, name)));
    }
    for (const auto& [k, v] : fixed_sizes) {
      if (k == "size." + name) throw UsageError("--size " + name + " is given twice");
    }
    fixed_sizes.push_back({"size." + name, std::to_string(size)});
  }
  MetaLines bindings;
  for (const auto& item : args.all("bind")) {
    auto [key, value] = split_assignment("--bind", item, "KEY=VALUE");
    if (key.find_first_of(" \n") != std::string::npos || value.find('\n') != std::string::npos) {
      throw UsageError("--bind " + key + ": keys have no spaces, values no line breaks");
    }
    bindings.push_back({"bind." + key, value});
  }

  auto ctx = S::make_context(spec);
  OutputSet outputs;
  outputs.create_dir(dir);
  outputs.create_dir(dir / "eval");
  // The scheme's keys: secret (0600), public, and eval/relin, eval/galois when needed.
  const core::KeyId key_id = S::make_keys(spec, ctx, dir, outputs);
  const core::Digest params_digest = S::params_digest(*ctx);
  const SigningKey coordinator;
  coordinator.save(dir / "coordinator.sign");
  outputs.add(dir / "coordinator.sign");
  outputs.add(dir / "coordinator.sign.pub");
  Meta meta = base_meta(spec, "keyset");
  meta.push_back({"key_id", key_hex(key_id)});
  meta.push_back({"params_digest", hex(params_digest.data(), 32)});
  meta.push_back({"relin", spec.relinearizes ? "yes" : "no"});
  std::string rot;
  for (int r : spec.rotations) {
    if (!rot.empty()) rot += ' ';
    rot += std::to_string(r);
  }
  meta.push_back({"rotations", rot});
  meta.push_back({"conjugation", spec.conjugates ? "yes" : "no"});
  write_meta(dir / "eval" / "keyset", meta, &coordinator, "coordinator");
  outputs.add(dir / "eval" / "keyset");

  // The run manifest, signed by the coordinator.
  const std::string run_id = new_run_id();
  Meta man = base_meta(spec, "manifest");
  man.push_back({"run_id", run_id});
  man.push_back({"key_id", key_hex(key_id)});
  man.push_back({"params_digest", hex(params_digest.data(), 32)});
  man.push_back({"stream_dim", spec.stream_dim.empty() ? "-" : spec.stream_dim});
  if (rows) man.push_back({"rows", std::to_string(*rows)});
  for (const auto& in : spec.inputs) {
    std::string dims;
    for (const auto& d : in.dims) dims += (dims.empty() ? "" : ",") + d;
    man.push_back(
        {"input." + in.id, in.source + " [" + dims + "]" + (in.streamed ? " streamed" : " whole")});
  }
  for (const auto& o : spec.outputs) man.push_back({"output." + o.name, "revealed"});
  man.push_back({"party.coordinator", verify_key_hex(coordinator.verify_key())});
  if (server) man.push_back({"party.server", verify_key_hex(*server)});
  for (const auto& o : owners) {
    man.push_back({"owner." + o.name, std::to_string(o.begin) + ":" + std::to_string(o.end) + " " +
                                          (o.key ? verify_key_hex(*o.key) : "-")});
  }
  man.insert(man.end(), fixed_sizes.begin(), fixed_sizes.end());
  man.insert(man.end(), bindings.begin(), bindings.end());
  // One copy for the coordinator and the data owners (beside public), one in eval/ (what the
  // server is handed).
  write_meta(dir / "manifest", man, &coordinator, "coordinator");
  outputs.add(dir / "manifest");
  std::filesystem::copy_file(dir / "manifest", dir / "eval" / "manifest");
  outputs.add(dir / "eval" / "manifest");
  outputs.finish();
  std::cerr << "[keygen] run " << run_id << ", key id " << key_hex(key_id) << ": " << dir / "secret"
            << " (coordinator only), " << dir / "public"
            << ", " << dir / "eval" << (spec.relinearizes ? " (relinearization key)" : "")
            << (spec.rotations.empty()
                    ? ""
                    : " (" + std::to_string(spec.rotations.size()) + " rotation keys)")
            << (spec.conjugates ? " (conjugation key)" : "") << ", " << dir / "manifest"
            << (rows ? "" : " (no --rows/--owner: a missing last row block cannot be detected)")
            << "\n";
  return 0;
}

template <class S>
int encrypt(const ProgramSpec& spec, const ParsedArgs& args) {
  using Ct = typename S::Ct;
  const std::filesystem::path pk_path = args.require("pk");
  const std::filesystem::path out_dir = args.require("out");
  std::map<std::string, std::filesystem::path> files;
  for (const auto& item : args.all("input")) {
    auto [name, file] = split_assignment("--input", item);
    bool known = false;
    for (const auto& src : spec.sources) known = known || src.name == name;
    if (!known) {
      std::string names;
      for (const auto& src : spec.sources) names += (names.empty() ? "" : ", ") + src.name;
      throw UsageError("--input " + name +
                       ": the program has no input of that name (inputs: " + names + ")");
    }
    if (files.count(name)) throw UsageError("--input " + name + " is given twice");
    files[name] = file;
  }
  std::optional<RowRange> rows;
  if (auto r = args.get("rows")) rows = parse_row_range("--rows", *r);
  std::size_t block_rows = 0;
  if (auto b = args.get("block-rows")) block_rows = parse_positive("encrypt: --block-rows", *b);
  // Who uploads: a data owner of the run's manifest, with its signing key when it has one.
  const Manifest manifest = role_manifest(spec, args, pk_path.parent_path() / "manifest");
  std::string owner = args.get("owner").value_or("");
  if (owner.empty()) owner = manifest.owners.size() == 1 ? manifest.owners[0].name : "owner";
  const OwnerEntry* entry = manifest.owner(owner);
  if (!manifest.owners.empty() && entry == nullptr) {
    std::string names;
    for (const auto& o : manifest.owners) names += (names.empty() ? "" : ", ") + o.name;
    throw UsageError("encrypt: --owner " + owner + " is not a data owner of this run (" + names +
                     ")");
  }
  if (owner.find_first_of(" \n") != std::string::npos) {
    throw UsageError("encrypt: --owner '" + owner + "': a name without spaces");
  }
  const std::optional<SigningKey> signer = role_signing_key(args);
  if (entry != nullptr && entry->key && !signer) {
    throw UsageError("encrypt: owner " + owner + " has a signing key in " + manifest.path.string() +
                     ": give it with --sign FILE");
  }
  if (signer && (entry == nullptr || !entry->key || *entry->key != signer->verify_key())) {
    throw std::runtime_error("encrypt: the key given with --sign is not the one " +
                             manifest.path.string() + " registers for owner " + owner);
  }
  if (entry != nullptr && entry->end > entry->begin) {
    if (!rows) {
      rows = RowRange{entry->begin, entry->end};
    } else if (rows->begin < entry->begin || rows->end > entry->end) {
      throw UsageError("encrypt: --rows " + std::to_string(rows->begin) + ":" +
                       std::to_string(rows->end) + " are not owner " + owner + "'s rows " +
                       std::to_string(entry->begin) + ":" + std::to_string(entry->end));
    }
  }

  auto ctx = S::make_context(spec);
  const Peek pk_head = peek_container(pk_path);
  if (key_hex(pk_head.header.key_id) != manifest.key_id) {
    throw std::runtime_error(pk_path.string() + ": key id " + key_hex(pk_head.header.key_id) +
                             ", but the run manifest " + manifest.path.string() + " names key id " +
                             manifest.key_id + " (keys of another run)");
  }
  const core::KeyId key_id = pk_head.header.key_id;
  typename S::Encoder encoder(ctx, pk_path, key_id);
  const std::size_t slots = S::slots(*ctx);

  // Read every given input once; bind the sizes its shape gives.
  std::map<std::string, NpyArray> arrays;
  Sizes sizes;
  std::map<std::string, std::string> where;
  for (const auto& [name, file] : files) arrays[name] = read_npy(file);
  auto streamed_source = [&](const SourceSpec& src) {
    return !spec.stream_dim.empty() && !src.dims.empty() && src.dims[0] == spec.stream_dim;
  };
  for (const auto& src : spec.sources) {
    auto it = arrays.find(src.name);
    if (it == arrays.end()) continue;
    const NpyArray& a = it->second;
    const auto& file = files[src.name];
    const SourceSpec& in = src;
    const bool in_streamed = streamed_source(src);
    if (a.shape.size() != in.dims.size()) {
      std::string dims;
      for (const auto& d : in.dims) dims += (dims.empty() ? "" : ", ") + d;
      throw std::runtime_error(file.string() + ": input '" + in.name + "' has shape " +
                               format_shape(a.shape) + ", the program declares [" + dims + "]");
    }
    for (std::size_t k = 0; k < in.dims.size(); ++k) {
      const std::string& d = in.dims[k];
      if (std::isdigit(static_cast<unsigned char>(d[0]))) {
        if (std::stoull(d) != a.shape[k]) {
          throw std::runtime_error(file.string() + ": axis " + std::to_string(k) + " has length " +
                                   std::to_string(a.shape[k]) + ", expected " + d);
        }
        continue;
      }
      if (in_streamed && k == 0) {
        if (rows && rows->end - rows->begin != a.shape[0]) {
          throw std::runtime_error(file.string() + ": --rows " + std::to_string(rows->begin) + ":" +
                                   std::to_string(rows->end) + " is " +
                                   std::to_string(rows->end - rows->begin) +
                                   " rows but the file has " + std::to_string(a.shape[0]));
        }
        const std::size_t end = (rows ? rows->begin : 0) + a.shape[0];
        if (end > bound_of(spec, d)) {
          throw std::runtime_error(file.string() + ": rows up to " + std::to_string(end) +
                                   " exceed the bound " + d +
                                   " <= " + std::to_string(bound_of(spec, d)));
        }
        continue;
      }
      auto [pos, inserted] = sizes.emplace(d, a.shape[k]);
      if (!inserted && pos->second != a.shape[k]) {
        throw std::runtime_error(file.string() + ": axis " + std::to_string(k) + " gives " + d +
                                 " = " + std::to_string(a.shape[k]) + " but " + where[d] +
                                 " gives " + std::to_string(pos->second));
      }
      where[d] = files[in.name].string();
      if (a.shape[k] > bound_of(spec, d)) {
        throw std::runtime_error(file.string() + ": " + d + " = " + std::to_string(a.shape[k]) +
                                 " exceeds the bound " + std::to_string(bound_of(spec, d)) +
                                 " this program was compiled for");
      }
    }
    check_domain(in, file, a);
    S::check_values(spec, in, file, a);
  }
  std::size_t stream_rows = 0;
  for (const auto& src : spec.sources) {
    if (streamed_source(src) && arrays.count(src.name)) {
      const std::size_t r = arrays[src.name].shape[0];
      if (stream_rows != 0 && r != stream_rows) {
        throw std::runtime_error("the streamed inputs have different numbers of rows (" +
                                 std::to_string(stream_rows) + " and " + std::to_string(r) + ")");
      }
      stream_rows = r;
    }
  }

  // A diagonal matrix (or a cyclic vector) is one owner's, encrypted whole: each of its
  // ciphertexts mixes every row (spec.h), so no owner can encrypt a range of its rows.
  if (args.get("rows")) {
    for (const auto& in : spec.inputs) {
      if (in.layout != Layout::kDiagonal && in.layout != Layout::kCyclic) continue;
      const std::vector<std::string> needed =
          in.sources.empty() ? std::vector<std::string>{in.source} : in.sources;
      for (const auto& name : needed) {
        if (!arrays.count(name)) continue;
        const bool matrix = in.layout == Layout::kDiagonal;
        throw UsageError(
            "encrypt: input '" + name + "' is encrypted whole in the " + layout_name(in.layout) +
            " layout of the diagonal matrix-vector product (" +
            (matrix ? "every ciphertext mixes all of its rows" : "one ciphertext holds all of it") +
            "), so --rows cannot split it: encrypt it without --rows");
      }
    }
  }

  OutputSet outputs;
  outputs.create_dir(out_dir);
  const int threads = default_threads();
  for (const auto& in : spec.inputs) {
    // The owner's source arrays this input is computed from (itself, for a plain input).
    const std::vector<std::string> needed =
        in.sources.empty() ? std::vector<std::string>{in.source} : in.sources;
    std::string missing;
    std::size_t given = 0;
    for (const auto& name : needed) {
      if (arrays.count(name)) {
        ++given;
      } else {
        missing += (missing.empty() ? "" : ", ") + name;
      }
    }
    if (given == 0) continue;
    if (given != needed.size()) {
      throw UsageError("input '" + in.id + "' is computed by the data owner from its own rows of " +
                       std::to_string(needed.size()) + " inputs; give --input for " + missing +
                       " as well");
    }
    const NpyArray& a = arrays.at(needed[0]);
    // Logical row-local shape (everything but the streamed axis) and its ciphertext layout.
    std::vector<std::size_t> local;
    for (std::size_t k = in.streamed ? 1 : 0; k < in.dims.size(); ++k) {
      local.push_back(resolve_dim(in.dims[k], sizes));
    }
    const std::size_t nrows = in.streamed ? a.shape[0] : 1;
    const std::size_t row_values = product(local);
    // A streamed grid input is encrypted a block of R rows at a time (the unit): its logical
    // shape is [R, row shape...] and its ciphertexts those of one row block.
    const std::size_t unit_rows = in.streamed && in.layout == Layout::kGrid ? in.grid.rows : 1;
    std::vector<std::size_t> unit_local = local;
    if (unit_rows > 1) unit_local.insert(unit_local.begin(), unit_rows);
    const auto local_arr =
        array_shape(in.layout, unit_local, slots, in.packing.group, in.grid, in.diagonal);
    const std::size_t per_row = product(local_arr);
    // The owner's first row may lie inside a block (another owner holds the rows before it):
    // `lead` rows of its first block are not its own and stay zero.
    const std::size_t base = rows ? rows->begin : 0;
    const std::size_t lead = base % unit_rows;
    const std::size_t nunits = (lead + nrows + unit_rows - 1) / unit_rows;
    // Row r of every source (an owner-side value reads them side by side).
    auto owner_row = [&](std::size_t r) {
      OwnerRow row;
      for (const auto& name : needed) {
        const NpyArray& src = arrays.at(name);
        const std::size_t width = nrows == 1 ? src.data.size() : src.data.size() / nrows;
        row.data.push_back(src.data.data() + r * width);
      }
      return row;
    };
    // Encrypts row r (or the whole array) into out[0..per_row): the row's values (an
    // owner-side value formed from the row first), then the binding encodes and encrypts them.
    auto encrypt_row = [&](std::size_t r, Ct* out) {
      std::vector<double> derived;
      const double* x = a.data.data() + r * row_values;
      OwnerRow row;
      if (in.value != nullptr || in.layout == Layout::kCoeff) row = owner_row(r);
      if (in.value != nullptr) {
        derived.resize(row_values);
        in.value(row, row_values, derived.data());
        x = derived.data();
      }
      encoder.encrypt_row(RowToEncrypt{in, r, x, row, local, local_arr}, out);
    };
    // The owner's rows [r0, r1) of unit u: row u, or those of the grid's block u (rows
    // [uR - lead, uR + R - lead) of the owner's file).
    auto unit_rows_of = [&](std::size_t u) {
      const std::size_t r0 = u * unit_rows < lead ? 0 : u * unit_rows - lead;
      return std::make_pair(r0, std::min(nrows, (u + 1) * unit_rows - lead));
    };
    // Encrypts unit u; a block's rows the owner does not hold (before its first or past its
    // last row) are zero: padding rows, which the row sums count on being zero, or another
    // owner's rows, which the server adds from that owner's upload.
    auto encrypt_unit = [&](std::size_t u, Ct* out) {
      if (unit_rows == 1) return encrypt_row(u, out);
      std::vector<double> block(unit_rows * row_values, 0.0);
      const auto [first, last] = unit_rows_of(u);
      for (std::size_t r = first; r < last; ++r) {
        double* to = block.data() + (r + lead - u * unit_rows) * row_values;
        if (in.value != nullptr) {
          in.value(owner_row(r), row_values, to);
        } else {
          std::copy_n(a.data.data() + r * row_values, row_values, to);
        }
      }
      const OwnerRow none;
      encoder.encrypt_row(RowToEncrypt{in, u, block.data(), none, unit_local, local_arr}, out);
    };
    Meta meta = base_meta(spec, "ciphertext-array");
    meta.push_back({"run_id", manifest.run_id});
    meta.push_back({"owner", owner});
    meta.push_back({"id", in.id});
    meta.push_back({"input", in.source});
    meta.push_back({"layout", layout_name(in.layout)});
    meta.push_back({"level", std::to_string(in.level)});
    meta.push_back({"key_id", key_hex(key_id)});
    Sizes own;
    for (std::size_t k = in.streamed ? 1 : 0; k < in.dims.size(); ++k) {
      if (!std::isdigit(static_cast<unsigned char>(in.dims[k][0]))) {
        own[in.dims[k]] = local[k - (in.streamed ? 1 : 0)];
      }
    }
    meta.push_back({"sizes", sizes_text(own)});
    if (!in.streamed) {
      std::vector<Ct> cts(per_row);
      Progress progress("encrypt " + in.id, 1);
      encrypt_row(0, cts.data());
      progress.advance();
      const auto path = out_dir / (in.id + ".cts");
      std::vector<const Ct*> ptrs;
      for (const Ct& c : cts) ptrs.push_back(&c);
      S::save_array(path, *ctx, key_id, ptrs);
      outputs.add(path);
      meta.push_back({"shard", "whole"});
      meta.push_back({"count", std::to_string(cts.size())});
      meta.push_back({"content_checksum", container_trailer_hex(path)});
      write_meta(path.string() + ".meta", meta, signer ? &*signer : nullptr, owner);
      outputs.add(path.string() + ".meta");
      continue;
    }
    // Row blocks of about 64 MiB of ciphertexts each (or --block-rows). Each thread encrypts
    // whole blocks and writes each into its own file, so the threads never share a file (threads
    // writing one file only queue on its inode lock: measured, a fifth of the role's time spinning)
    // and each thread's encryption and its file copies interleave.
    const std::uint64_t record = encoder.record_bytes(in);  // one ciphertext in an array file
    if (block_rows % unit_rows != 0) {
      throw UsageError("encrypt: input '" + in.id + "' is in a grid layout of " +
                       std::to_string(unit_rows) + " rows per ciphertext: --block-rows " +
                       std::to_string(block_rows) + " must be a multiple of " +
                       std::to_string(unit_rows));
    }
    // Units (rows, or grid blocks of rows) per file.
    std::size_t per_block = block_rows / unit_rows;
    if (per_block == 0) per_block = std::max<std::size_t>(1, (64u << 20) / (per_row * record));
    const std::size_t n_files = (nunits + per_block - 1) / per_block;
    Progress progress("encrypt " + in.id + " rows", nrows);
    std::mutex outputs_mutex;
    parallel_rows(n_files, threads, [&](std::size_t f, int) {
      const std::size_t u0 = f * per_block, u1 = std::min(nunits, u0 + per_block);
      const std::size_t r0 = unit_rows_of(u0).first, r1 = unit_rows_of(u1 - 1).second;
      const std::string stem =
          in.id + ".rows-" + std::to_string(base + r0) + "-" + std::to_string(base + r1) + ".cts";
      const auto path = out_dir / stem;
      const std::size_t count = (u1 - u0) * per_row;
      typename S::ArrayWriter writer(path, *ctx, key_id, count, count * record);
      std::vector<Ct> cts(per_row);
      for (std::size_t u = u0; u < u1; ++u) {
        encrypt_unit(u, cts.data());
        progress.advance(unit_rows_of(u).second - unit_rows_of(u).first);
        for (const Ct& ct : cts) writer.append(ct);
      }
      writer.finish();
      {
        std::lock_guard<std::mutex> lock(outputs_mutex);
        outputs.add(path);
      }
      Meta m = meta;
      m.push_back({"shard", "rows " + std::to_string(base + r0) + " " + std::to_string(base + r1)});
      m.push_back({"count", std::to_string(count)});
      m.push_back({"content_checksum", container_trailer_hex(path)});
      write_meta(path.string() + ".meta", m, signer ? &*signer : nullptr, owner);
      std::lock_guard<std::mutex> lock(outputs_mutex);
      outputs.add(path.string() + ".meta");
    });
    progress.done();
  }
  if (arrays.empty()) throw UsageError("encrypt: give at least one --input NAME=FILE.npy");
  outputs.finish();
  return 0;
}

template <class S>
int compute(const ProgramSpec& spec, void (*fn)(ServerOf<S>&), const ParsedArgs& args) {
  using Ct = typename S::Ct;
  const std::filesystem::path eval_dir = args.require("eval");
  const std::filesystem::path in_dir = args.require("in");
  const std::filesystem::path out_dir = args.require("out");
  if (auto t = args.get("threads")) {
    if (t->empty() || t->find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(*t) < 1) {
      throw UsageError("compute: --threads must be a positive integer, got '" + *t + "'");
    }
    math::set_thread_cap(std::stoi(*t));
  }
  const Manifest manifest = role_manifest(spec, args, eval_dir / "manifest");
  const std::optional<SigningKey> signer = role_signing_key(args);
  if (manifest.server && !signer) {
    throw UsageError("compute: " + manifest.path.string() +
                     " registers the server's signing key: give it with --sign FILE");
  }
  if (signer && (!manifest.server || *manifest.server != signer->verify_key())) {
    throw std::runtime_error("compute: the key given with --sign is not the server key " +
                             manifest.path.string() + " registers");
  }
  auto ctx = S::make_context(spec);
  const core::KeyId key_id = read_keyset(spec, eval_dir, manifest);
  const typename S::EvalKeys keys = S::load_eval_keys(spec, ctx, eval_dir, key_id);
  const typename S::Ops ops = S::make_ops(ctx, keys);
  ServerOf<S> server(spec, manifest, in_dir, ops, ctx, key_id);
  fn(server);
  OutputSet outputs;
  outputs.create_dir(out_dir);
  for (const auto& r : server.results()) {
    const auto path = out_dir / (r.name + ".cts");
    std::vector<const Ct*> cts;
    for (const auto& c : r.value.cts) cts.push_back(c.get());
    S::save_array(path, *ctx, key_id, cts);
    outputs.add(path);
    Meta meta = base_meta(spec, "result");
    meta.push_back({"run_id", manifest.run_id});
    meta.push_back({"name", r.name});
    meta.push_back({"key_id", key_hex(key_id)});
    meta.push_back({"sizes", sizes_text(server.sizes())});
    char factor[64];
    std::snprintf(factor, sizeof factor, "%.17g", r.factor);
    meta.push_back({"factor", factor});
    meta.push_back({"count", std::to_string(cts.size())});
    meta.push_back({"content_checksum", container_trailer_hex(path)});
    write_meta(path.string() + ".meta", meta, signer ? &*signer : nullptr, "server");
    outputs.add(path.string() + ".meta");
  }
  outputs.finish();
  const auto& times = server.stream_times();
  char line[384];
  std::snprintf(line, sizeof line,
                "[compute] passes over the rows: %.3f s reading %s of uploads and verifying their "
                "digests, %.3f s of arithmetic; of %zu chunks of rows, %zu read and %zu folded "
                "over the threads (read_seconds=%.6f arithmetic_seconds=%.6f read_bytes=%llu "
                "chunks=%zu read_split=%zu arithmetic_split=%zu)\n",
                times.read_seconds, format_bytes(times.read_bytes).c_str(),
                times.arithmetic_seconds, times.chunks, times.read_split, times.arithmetic_split,
                times.read_seconds, times.arithmetic_seconds,
                static_cast<unsigned long long>(times.read_bytes), times.chunks, times.read_split,
                times.arithmetic_split);
  std::cerr << line;
  std::cerr << "[compute] peak resident set " << format_bytes(peak_rss_bytes())
            << " (peak_rss_bytes=" << peak_rss_bytes() << ")\n";
  return 0;
}

// The name of the override's stamp: DIR/precision_shortfall.txt, or that member of the .npz.
inline constexpr const char* kShortfallStamp = "precision_shortfall";

// Why output `o` cannot be revealed at `sizes` under its promise, or "" when it can: its bits
// relative to the range bound at these sizes (the largest range row the sizes reach, over the
// error bound, less the flooding cost when decrypt floods) against the promised bits.
inline std::string precision_shortfall(const ProgramSpec& spec, const OutputSpec& o,
                                       const Sizes& sizes, bool flooding) {
  if (o.range_rows.empty() || o.error_bound <= 0.0) return "";
  auto reached = [&](const RangeRow& row) {
    return std::all_of(row.corner.begin(), row.corner.end(), [&](const auto& c) {
      const auto it = sizes.find(c.first);
      return it != sizes.end() && it->second >= c.second;
    });
  };
  const double cost = flooding ? spec.flooding_cost_bits : 0.0;
  auto bits_of = [&](double range) {
    return range > 0.0 ? std::log2(range) - std::log2(o.error_bound) - cost : -INFINITY;
  };
  double range = 0.0;
  for (const auto& row : o.range_rows) {
    if (reached(row)) range = std::max(range, row.range);
  }
  const double bits = bits_of(range);
  constexpr double kSlackBits = 0.01;  // check-precision's rounding slack
  if (bits >= o.promised_bits - kSlackBits) return "";
  std::ostringstream m;
  m << std::fixed << std::setprecision(1) << "output '" << o.name << "': at the run's sizes ("
    << sizes_text(sizes) << ") its error bound " << std::scientific << std::setprecision(3)
    << o.error_bound << std::fixed << std::setprecision(1) << " leaves " << bits
    << " bits relative to its range bound, below the " << o.promised_bits
    << " bits promised at the declared sizes" << (cost > 0.0 ? " (after noise flooding)" : "");
  // Where the promise holds: the first corner whose range meets it.
  for (const auto& row : o.range_rows) {
    if (bits_of(row.range) >= o.promised_bits - kSlackBits) {
      m << "; it holds from";
      for (const auto& [p, v] : row.corner) m << " " << p << " >= " << v;
      break;
    }
  }
  m << "; compile for these sizes (--size) to get the promise back";
  return m.str();
}

template <class S>
int decrypt(const ProgramSpec& spec, const ParsedArgs& args) {
  const std::filesystem::path sk_path = args.require("sk");
  const std::filesystem::path in_dir = args.require("in");
  const std::filesystem::path out_dir = args.require("out");
  const Manifest manifest = role_manifest(spec, args, sk_path.parent_path() / "manifest");
  auto ctx = S::make_context(spec);
  typename S::Decoder decoder(ctx, sk_path);  // holds the secret key
  const core::KeyId sk_id = decoder.key_id();
  decoder.flooding = !args.has("no-flooding");
  if (key_hex(sk_id) != manifest.key_id) {
    throw std::runtime_error(sk_path.string() + ": key id " + key_hex(sk_id) +
                             ", but the run manifest " + manifest.path.string() + " names key id " +
                             manifest.key_id);
  }
  // --out DIR: one NAME.npy per revealed value; --out FILE.npz: one archive (numpy.load).
  const bool npz = out_dir.extension() == ".npz";
  std::vector<std::pair<std::string, std::string>> members;
  OutputSet outputs;
  if (!npz) outputs.create_dir(out_dir);
  const bool accept_shortfall = args.has("accept-precision-shortfall");
  std::vector<std::string> stamps;  // the outputs revealed below their promise (overridden)
  for (const auto& o : spec.outputs) {
    const std::string file = o.result.empty() ? o.name : o.result;
    const auto path = in_dir / (file + ".cts");
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error("missing result '" + o.name + "': no " + path.string() +
                               " (run compute first)");
    }
    const MetaDoc meta = read_meta(path.string() + ".meta");
    check_program(spec, meta);
    if (meta.field("key_id") != key_hex(sk_id)) {
      throw std::runtime_error(path.string() + ": computed under key id " + meta.field("key_id") +
                               " but " + sk_path.string() + " is key id " + key_hex(sk_id) +
                               " (wrong keys)");
    }
    manifest.check_same_run(meta, "a result");
    if (meta.field("kind") != "result" || meta.field("name") != file) {
      throw std::runtime_error(path.string() + ": holds result '" + meta.field("name") +
                               "', not '" + file + "' (swapped or renamed result files)");
    }
    manifest.check_signature(meta, "server");
    // The digest the server's signature binds: checked against the file's trailer now (a
    // replaced file is named before anything is read) and required again by the read itself
    // (load_checked), so a file swapped in between cannot pass.
    const core::Checksum content =
        core::checksum_from_hex(meta.field("content_checksum"), meta.path.string());
    if (meta.field("content_checksum") != container_trailer_hex(path)) {
      throw std::runtime_error(path.string() + ": its content is not the one its metadata (" +
                               meta.path.string() + ") describes: the file was replaced");
    }
    const Sizes sizes = parse_sizes_text(meta.field("sizes"));
    const double factor = std::stod(meta.field("factor"));
    if (!std::isfinite(factor) || factor == 0.0) {
      throw std::runtime_error(meta.path.string() + ": factor " + meta.field("factor") +
                               " is not a finite non-zero number");
    }
    auto dims = resolve(o.dims, sizes);
    const auto arr = array_shape(o.layout, dims, S::slots(*ctx), o.packing.group, o.grid);
    auto load_checked = [&] {
      auto cts = S::load_array(path, *ctx, sk_id, content);
      if (cts.size() != product(arr)) {
        throw std::runtime_error(path.string() + ": " + std::to_string(cts.size()) +
                                 " ciphertexts, the shape needs " + std::to_string(product(arr)));
      }
      return cts;
    };
    // After every check of the files, before decrypting: an output flooding would drown is
    // refused, not revealed (OutputSet removes the outputs already written).
    if (decoder.flooding && o.flood_sigma > 0.0 && o.flooded_precision_bits < 1.0) {
      std::ostringstream m;
      m << "output '" << o.name << "': noise flooding (against key recovery from shared "
        << "results) leaves " << std::fixed << std::setprecision(1) << o.flooded_precision_bits
        << " bits of precision, so the values would be noise; compile with more precision "
        << "(hec report shows each output's bits with flooding), or, when the key holder alone "
        << "sees results and ciphertexts, decrypt --no-flooding";
      throw std::runtime_error(m.str());
    }
    // The promise at the actual sizes (compiler/analysis/actual_sizes.py), checked before
    // decrypting: refused, or revealed under --accept-precision-shortfall and stamped.
    if (const std::string shortfall = precision_shortfall(spec, o, sizes, decoder.flooding);
        !shortfall.empty()) {
      if (!accept_shortfall) {
        throw std::runtime_error(shortfall +
                                 "; decrypt --accept-precision-shortfall reveals it anyway, "
                                 "stamped as such on the output");
      }
      stamps.push_back(shortfall);
    }
    // The revealed values in C order over `dims` (the binding may drop axes: a per-row count).
    const std::vector<typename S::Value> values =
        decoder.decrypt_output(o, file, dims, arr, factor, load_checked);
    if (npz) {
      members.emplace_back(o.name, npy_bytes(dims, S::kNpyDescr, values.data(),
                                             values.size() * sizeof(typename S::Value)));
      continue;
    }
    const auto out = out_dir / (o.name + ".npy");
    write_values(out, dims, values);
    outputs.add(out);
  }
  // The override's stamp travels with the values: a member of the .npz, a file beside the
  // .npy files, and a warning.
  if (!stamps.empty()) {
    std::string text = "PRECISION NOT GUARANTEED (decrypt --accept-precision-shortfall):\n";
    for (const auto& s : stamps) text += s + "\n";
    std::cerr << "WARNING: " << text;
    if (npz) {
      members.emplace_back(kShortfallStamp, npy_bytes({}, "|S" + std::to_string(text.size()),
                                                      text.data(), text.size()));
    } else {
      const auto stamp = out_dir / (std::string(kShortfallStamp) + ".txt");
      write_file_atomic(stamp, text);
      outputs.add(stamp);
    }
  }
  if (npz) write_npz(out_dir, members);
  outputs.finish();
  // After the values are out (a refused decryption says only why it was refused).
  const bool floods = std::any_of(spec.outputs.begin(), spec.outputs.end(),
                                  [](const OutputSpec& o) { return o.flood_sigma > 0.0; });
  if (!decoder.flooding && floods) {
    std::cerr << "WARNING: decrypt --no-flooding: the revealed values carry their encryption "
                 "error unmasked; anyone who also sees the result ciphertexts can solve for the "
                 "secret key (Li-Micciancio). Use only when the results stay with the key "
                 "holder (single-party use).\n";
  }
  return 0;
}

template <class S>
int info(const ProgramSpec& spec, const ParsedArgs& args) {
  const std::filesystem::path path = args.positional(0);
  const std::string name = path.string();
  if ((name.size() > 5 && name.substr(name.size() - 5) == ".meta") || path.filename() == "keyset" ||
      path.filename() == "manifest") {
    const MetaDoc doc = read_meta(path);
    for (const auto& [k, v] : doc.fields) std::cout << k << ": " << v << "\n";
    std::cout << "checksum: ok\n"
              << "signature: "
              << (doc.signature.empty() ? "none"
                                        : "present (verified by the roles "
                                          "against the run manifest)")
              << "\n";
    return 0;
  }
  const Peek p = peek_container(path);
  const auto& h = p.header;
  std::cout << "file: " << name << "\n"
            << "scheme: " << core::scheme_name(h.scheme) << "\n"
            << "kind: " << core::object_kind_name(h.kind) << "\n"
            << "params_digest: " << hex(h.params_digest.data(), 32) << "\n"
            << "key_id: " << key_hex(h.key_id) << "\n"
            << "level: " << h.level << "\n";
  std::cout.precision(17);
  if (h.scheme != core::Scheme::kBfv) {  // BFV has no scale: integers mod t
    std::cout << "scale: " << h.scale;
    if (h.scale > 0) std::cout << " (2^" << std::log2(h.scale) << ")";
    std::cout << "\n";
  }
  std::cout << (h.kind == core::ObjectKind::kCiphertextArray ||
                        h.kind == core::ObjectKind::kPackedCiphertextArray
                    ? "count: "
                    : "degree: ")
            << h.degree << "\n"
            << "payload_bytes: " << h.payload_length << "\n"
            << "file_bytes: " << p.file_size << "\n";
  auto ctx = S::make_context(spec);
  std::cout << "this program: " << spec.name << " ("
            << (h.params_digest == S::params_digest(*ctx) ? "same parameters" : "OTHER parameters")
            << ")\n";
  return 0;
}

template <class S>
int run_roles(const ProgramSpec& spec, void (*compute_fn)(ServerOf<S>&), int argc,
              const char* const* argv) {
  const CommandLine cl = command_line(spec);
  try {
    const ParsedArgs args = cl.parse(argc, argv);
    if (args.subcommand == "help") {
      std::cout << (args.positionals.empty() ? cl.usage() : cl.usage(args.positionals[0]));
      return 0;
    }
    if (args.subcommand != "info") print_stamp(spec, std::cerr);
    if (args.subcommand == "keygen") return keygen<S>(spec, args);
    if (args.subcommand == "signkey") return signkey(args);
    if (args.subcommand == "encrypt") return encrypt<S>(spec, args);
    if (args.subcommand == "compute") return compute<S>(spec, compute_fn, args);
    if (args.subcommand == "decrypt") return decrypt<S>(spec, args);
    if (args.subcommand == "info") return info<S>(spec, args);
    throw UsageError("unknown command " + args.subcommand);
  } catch (const UsageError& e) {
    std::cerr << spec.name << ": usage error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << spec.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace hec::program::roles