// Block scheduling and streaming for the server role, over any scheme binding S (see
// roles.h for what a binding provides): the index of the uploaded shards (ShardIndex: every
// file checked against the run manifest, scheme-independent) and ServerOf<S>, the server as the
// generated compute function sees it: whole inputs (load), passes over the rows (stream, with
// row accumulators folded after every chunk) and the revealed values (output).
//
// Streaming: when the program's large inputs share a leading size parameter (the individuals N),
// `compute` reads them a chunk of rows at a time (a few rows per thread, positioned reads in
// parallel, the block file's checksum verified when its last row is read), runs the row bodies in
// parallel and folds the chunk into accumulators (RowSink), so memory is bounded by the
// accumulators and one chunk, not by N.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/serialize.h"
#include "program/arrays.h"
#include "program/files.h"
#include "program/manifest.h"
#include "program/progress.h"
#include "program/spec.h"

namespace hec::program {

// Finds and checks every shard of every input in `ct_dir` against the run's manifest (run
// id, array name, shard, owner and signature, content): missing, extra, stale, duplicated
// and swapped shards are refused naming the file. Binds the size parameters the uploads give.
class ShardIndex {
 public:
  struct Block {
    std::filesystem::path path;
    std::size_t begin, end;
    core::Checksum content{};  // the digest its signed .meta binds; every read requires it
  };
  ShardIndex(const ProgramSpec& spec, const Manifest& manifest, const std::filesystem::path& ct_dir,
             const core::KeyId& key_id);

  const Sizes& sizes() const { return sizes_; }
  std::size_t size(const std::string& name) const;
  std::size_t rows() const;  // the stream dimension's size (0 when nothing streams)
  // The streamed units: rows, or blocks of spec.stream_block rows (a grid layout's R).
  std::size_t stream_units() const;
  const InputSpec& input(const std::string& id) const;
  const std::vector<Block>& blocks(const std::string& id) const;  // a streamed input's blocks

 protected:
  const ProgramSpec& spec_;
  std::filesystem::path dir_;
  core::KeyId key_id_;
  Sizes sizes_;
  std::map<std::string, std::vector<Block>> blocks_;
  std::map<std::string, core::Checksum> whole_content_;  // a whole input's signed digest
};

template <class S>
class ServerOf : public ShardIndex {
 public:
  using Ct = typename S::Ct;
  using CtArray = CtArrayOf<Ct>;
  using Ops = typename S::Ops;
  using ContextPtr = typename S::ContextPtr;

  ServerOf(const ProgramSpec& spec, const Manifest& manifest, const std::filesystem::path& ct_dir,
           const Ops& ops, const ContextPtr& context, const core::KeyId& key_id)
      : ShardIndex(spec, manifest, ct_dir, key_id), ops_(ops), context_(context) {}

  const Ops& ops() const { return ops_; }
  int threads() const { return default_threads(); }

  // Where stream() spent its time (wall seconds, summed over passes): reading the uploads'
  // rows and verifying their digests, and the rows' arithmetic (row bodies and the folds of
  // the sinks). The two alternate, so they add up to the passes' time; `compute` reports them.
  struct StreamTimes {
    double read_seconds = 0.0;
    double arithmetic_seconds = 0.0;
    std::uint64_t read_bytes = 0;  // the sizes of the block files the passes read
    // Chunks of rows read, and how many were read and folded over more than one thread.
    std::size_t chunks = 0, read_split = 0, arithmetic_split = 0;
  };
  const StreamTimes& stream_times() const { return times_; }

  // A whole input array (a global input, or a streamed one read in full).
  CtArray load(const std::string& id) const {
    const InputSpec& in = input(id);
    const auto shape = array_shape(in.layout, resolve(in.dims, sizes_), S::slots(*context_),
                                   in.packing.group, in.grid, in.diagonal);
    CtArray out;
    out.shape = shape;
    auto append = [&](const std::filesystem::path& path, const core::Checksum& content) {
      for (auto& c : S::load_array(path, *context_, key_id_, content)) {
        out.cts.push_back(std::make_shared<const Ct>(std::move(c)));
      }
    };
    if (in.streamed) {
      // A grid block two uploads share (stream()): the later file's first unit is added into
      // the earlier file's last.
      const std::size_t unit = spec_.stream_block;
      const std::size_t per_unit =
          shape.empty() ? 1 : product(shape) / std::max<std::size_t>(1, shape[0]);
      std::size_t last_end = 0;
      for (const auto& b : blocks_.at(id)) {
        if (b.begin / unit < (last_end + unit - 1) / unit && !out.cts.empty()) {
          auto cts = S::load_array(b.path, *context_, key_id_, b.content);
          const std::size_t base = out.cts.size() - per_unit;
          for (std::size_t j = 0; j < per_unit && j < cts.size(); ++j) {
            Ct sum = *out.cts[base + j];
            ops_.evaluator().add_inplace(sum, cts[j]);
            out.cts[base + j] = std::make_shared<const Ct>(std::move(sum));
          }
          for (std::size_t j = per_unit; j < cts.size(); ++j) {
            out.cts.push_back(std::make_shared<const Ct>(std::move(cts[j])));
          }
        } else {
          append(b.path, b.content);
        }
        last_end = b.end;
      }
    } else {
      append(dir_ / (id + ".cts"), whole_content_.at(id));
    }
    if (out.cts.size() != product(shape)) {
      throw std::runtime_error("input '" + in.source + "': " + std::to_string(out.cts.size()) +
                               " ciphertexts in " + dir_.string() + ", the shape needs " +
                               std::to_string(product(shape)));
    }
    return out;
  }

  // One pass over the rows: reads the row blocks of `ids` in order and calls
  // body(unit, inputs, thread) for every streamed unit (a row, or a grid block of
  // spec.stream_block rows), in parallel over the units of a block file, with inputs[k] the
  // unit's row-local array of ids[k]. Prints progress as "[phase] rows/N".
  // `sinks` are folded after every chunk of units (see RowSink).
  using RowBody = std::function<void(std::size_t, const std::vector<CtArray>&, int)>;
  void stream(const std::string& phase, const std::vector<std::string>& ids, const RowBody& body,
              const std::vector<RowSink*>& sinks = {}) const {
    const std::size_t n = stream_units();
    const std::size_t unit = spec_.stream_block;
    Progress progress(phase, rows());
    // Per input: the row-local array shape and the current block.
    struct Cursor {
      const InputSpec* in;
      std::vector<std::size_t> row_shape;
      std::size_t per_row;
      std::size_t block = 0;
      std::unique_ptr<typename S::ArrayReader> reader;  // the current block's file
      std::vector<std::shared_ptr<const Ct>> cts;       // the current chunk's ciphertexts
      std::vector<std::shared_ptr<Ct>> pool;            // their storage, reused chunk to chunk
      std::size_t begin = 0, end = 0;  // the current file's next unit to read, and its end
      std::uint64_t bytes = 0;         // the sizes of the files opened
    };
    // A block file's rows in units: from the unit of its first row to that of its last.
    auto units_end = [&](const Block& b) { return (b.end + unit - 1) / unit; };
    std::vector<Cursor> cursors;
    for (const auto& id : ids) {
      Cursor c;
      c.in = &input(id);
      const auto full = array_shape(c.in->layout, resolve(c.in->dims, sizes_), S::slots(*context_),
                                    c.in->packing.group, c.in->grid, c.in->diagonal);
      c.row_shape.assign(full.begin() + 1, full.end());
      c.per_row = product(c.row_shape);
      cursors.push_back(std::move(c));
    }
    // Units are read a chunk at a time (a few per thread) from each input's block files in
    // order and folded in parallel; a block file's checksum is verified when its last unit has
    // been read, and the results are written only after every file has passed (compute's
    // OutputSet). A grid block whose rows two uploads share (two owners' rows meet inside it:
    // each encrypted its own rows, zeros elsewhere) is the sum of their ciphertexts, added
    // here before any op (the rows are disjoint, so the sum is the whole block).
    auto open_next = [&](Cursor& c) {
      if (c.reader) c.reader->finish();
      const auto& blocks = blocks_.at(c.in->id);
      c.block = c.reader ? c.block + 1 : 0;
      const Block& b = blocks.at(c.block);
      c.reader = std::make_unique<typename S::ArrayReader>(b.path, *context_, key_id_, b.content);
      c.bytes += std::filesystem::file_size(b.path);
      const std::size_t units = units_end(b) - b.begin / unit;
      if (c.reader->count() != units * c.per_row) {
        throw std::runtime_error(
            b.path.string() + ": holds " + std::to_string(c.reader->count()) +
            " ciphertexts, rows " + std::to_string(b.begin) + ":" + std::to_string(b.end) +
            " need " + std::to_string(units * c.per_row) +
            (unit > 1
                 ? " (" + std::to_string(units) + " blocks of " + std::to_string(unit) + " rows)"
                 : ""));
      }
      c.begin = b.begin / unit;
      c.end = units_end(b);
    };
    auto shares_next = [&](const Cursor& c) {
      const auto& blocks = blocks_.at(c.in->id);
      return c.block + 1 < blocks.size() && blocks[c.block + 1].begin / unit < c.end;
    };
    auto read_units = [&](Cursor& c, Ct** out, std::size_t count, int read_threads) {
      std::size_t done = 0;
      while (done < count) {
        if (!c.reader || c.begin == c.end) open_next(c);
        const std::size_t take = std::min(count - done, c.end - c.begin);
        c.reader->next_batch(out + done * c.per_row, take * c.per_row, read_threads);
        c.begin += take;
        done += take;
        while (c.begin == c.end && shares_next(c)) {
          open_next(c);  // its first unit is the one just read: added into it
          std::vector<Ct> extra(c.per_row);
          std::vector<Ct*> to(c.per_row);
          for (std::size_t j = 0; j < c.per_row; ++j) to[j] = &extra[j];
          c.reader->next_batch(to.data(), c.per_row, read_threads);
          for (std::size_t j = 0; j < c.per_row; ++j) {
            ops_.evaluator().add_inplace(*out[(done - 1) * c.per_row + j], extra[j]);
          }
          c.begin += 1;
        }
      }
    };
    // A few rows per thread, or one grid block per thread (a block's ciphertexts and the
    // sinks' pending operands are R times larger; compiler/analysis/streaming.py counts the
    // same).
    const std::size_t per_thread = unit > 1 ? 1 : 4;
    const std::size_t chunk = per_thread * static_cast<std::size_t>(std::max(1, threads()));
    using Clock = std::chrono::steady_clock;
    const auto since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    // How a chunk is read: the inputs side by side, one input per thread (each thread reads
    // and hashes its input's batch whole, in order), when their sizes balance over the threads
    // (largest first, each to the least loaded thread: at most 0.7 of the total on one); else
    // one input after another, each batch's reads and digest chunks spread over the threads
    // (whose serial part, the digest chunk a batch starts or ends inside, is then a larger
    // share: measured, read+verify of `hec gwas logistic` took longer at 2 threads than at 1).
    std::vector<std::size_t> order(cursors.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return cursors[a].per_row > cursors[b].per_row;
    });
    const int nthreads = std::max(1, threads());
    bool side_by_side = false;
    if (nthreads > 1 && cursors.size() > 1) {
      std::vector<std::size_t> load(static_cast<std::size_t>(nthreads), 0);
      std::size_t total = 0;
      for (const std::size_t i : order) {
        *std::min_element(load.begin(), load.end()) += cursors[i].per_row;
        total += cursors[i].per_row;
      }
      side_by_side = 10 * *std::max_element(load.begin(), load.end()) <= 7 * total;
    }
    std::vector<std::vector<Ct*>> slots_out(cursors.size());
    // Whether a chunk's reading and its arithmetic run over the threads is measured, step by
    // step (ChunkSplit, arrays.h).
    // (Inputs read side by side take one thread each: nothing to decide.)
    ChunkSplit read_split(side_by_side ? 1 : nthreads), arithmetic_split(nthreads);
    bool first_chunk = true;
    std::size_t row = 0;
    while (row < n) {
      const auto read_start = Clock::now();
      const std::size_t chunk_end = std::min(n, row + chunk);
      const std::size_t first = row;
      for (std::size_t i = 0; i < cursors.size(); ++i) {
        Cursor& c = cursors[i];
        c.cts.clear();
        const std::size_t count = (chunk_end - first) * c.per_row;
        if (c.pool.size() < count) c.pool.resize(count);
        slots_out[i].assign(count, nullptr);
        for (std::size_t k = 0; k < count; ++k) {
          // Reuse the previous chunk's ciphertext storage unless the row body kept it.
          if (!c.pool[k] || c.pool[k].use_count() != 1) c.pool[k] = std::make_shared<Ct>();
          slots_out[i][k] = c.pool[k].get();
          c.cts.push_back(c.pool[k]);
        }
      }
      if (side_by_side) {
        parallel_rows(order.size(), std::min<int>(nthreads, static_cast<int>(order.size())),
                      [&](std::size_t k, int) {
                        const std::size_t i = order[k];
                        read_units(cursors[i], slots_out[i].data(), chunk_end - first, 1);
                      });
      } else {
        for (std::size_t i = 0; i < cursors.size(); ++i) {
          read_units(cursors[i], slots_out[i].data(), chunk_end - first, read_split.threads());
        }
      }
      const double read_chunk = since(read_start);
      times_.read_seconds += read_chunk;
      const auto arithmetic_start = Clock::now();
      parallel_rows(chunk_end - first, arithmetic_split.threads(), [&](std::size_t k, int thread) {
        const std::size_t r = first + k;
        std::vector<CtArray> local;
        local.reserve(cursors.size());
        for (const auto& c : cursors) {
          CtArray a;
          a.shape = c.row_shape;
          const std::size_t offset = k * c.per_row;
          a.cts.assign(c.cts.begin() + static_cast<std::ptrdiff_t>(offset),
                       c.cts.begin() + static_cast<std::ptrdiff_t>(offset + c.per_row));
          local.push_back(std::move(a));
        }
        body(r, local, thread);
        progress.advance(std::min(rows(), (r + 1) * unit) - r * unit);
      });
      fold_sinks(sinks, arithmetic_split.threads() > 1);
      const double arithmetic_chunk = since(arithmetic_start);
      times_.arithmetic_seconds += arithmetic_chunk;
      ++times_.chunks;
      if (read_split.threads() > 1 || side_by_side) ++times_.read_split;
      if (arithmetic_split.threads() > 1) ++times_.arithmetic_split;
      // The arithmetic's trials start once the reading's are over (a step's time depends on
      // whether the other one just woke the threads).
      const bool reading_on_trial = !read_split.decided();
      read_split.record(read_chunk);
      if (first_chunk || !reading_on_trial) arithmetic_split.record(arithmetic_chunk);
      first_chunk = false;
      row = chunk_end;
    }
    const auto finish_start = Clock::now();
    for (auto& c : cursors) {
      c.cts.clear();
      if (c.reader) c.reader->finish();
      times_.read_bytes += c.bytes;
    }
    times_.read_seconds += since(finish_start);
    progress.done();
  }

  // Records a revealed value for `compute` to write (with the public factor the coordinator
  // multiplies the decoded values by, 1 when none).
  void output(const std::string& name, const CtArray& value, double factor = 1.0) {
    results_.push_back({name, value, factor});
  }

  struct Result {
    std::string name;
    CtArray value;
    double factor;
  };
  const std::vector<Result>& results() const { return results_; }

 private:
  const Ops& ops_;
  ContextPtr context_;
  std::vector<Result> results_;
  mutable StreamTimes times_;  // stream() is const to the generated code; this is bookkeeping
};

}  // namespace hec::program
