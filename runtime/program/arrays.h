// Arrays of ciphertexts and the scheme-independent parts of the array ops, for every scheme
// binding (ckks_program.h, bfv_program.h): the array type over a ciphertext type, the parallel
// loops the ops run in, the ops that only move ciphertexts (broadcast, transpose), and the row
// accumulator interface Server::stream folds after every chunk of rows (RowSink) with the
// collector of per-row outputs. Templates over the ciphertext type only: what a ciphertext
// operation does is the binding's (its hot loops stay in the scheme's own kernels).
#pragma once

#include <omp.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "math/parallel.h"
#include "program/npy.h"

namespace hec::program {

template <class Ct>
struct CtArrayOf {
  std::vector<std::size_t> shape;              // ciphertext-array axes (spec.h's layouts)
  std::vector<std::shared_ptr<const Ct>> cts;  // C order

  std::size_t size() const { return cts.size(); }
  const Ct& at(std::size_t i) const { return *cts[i]; }
};

inline std::size_t product(const std::vector<std::size_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

// The runtime's one process-wide thread cap (math/parallel.h: HEC_THREADS or all cores).
inline int default_threads() { return math::thread_cap(); }

// Runs body(i) for i in [0, count) over OpenMP threads; body gets its thread number. The first
// exception is captured and rethrown after the loop (none escapes the parallel region).
void parallel_rows(std::size_t count, int threads,
                   const std::function<void(std::size_t, int)>& body);

template <class Ct>
CtArrayOf<Ct> make_array(std::vector<std::size_t> shape, std::vector<Ct>&& values) {
  CtArrayOf<Ct> out;
  out.shape = std::move(shape);
  out.cts.reserve(values.size());
  for (auto& v : values) out.cts.push_back(std::make_shared<const Ct>(std::move(v)));
  return out;
}

void check_same_shape_of(const char* what, const std::vector<std::size_t>& a,
                         const std::vector<std::size_t>& b);

template <class Ct, class F>
CtArrayOf<Ct> map1(const CtArrayOf<Ct>& a, const F& f) {
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) { out[i] = f(a.at(i)); });
  return make_array(a.shape, std::move(out));
}

// map1 with the ciphertext's index in the array (C order) passed to f.
template <class Ct, class F>
CtArrayOf<Ct> map1_indexed(const CtArrayOf<Ct>& a, const F& f) {
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) { out[i] = f(i, a.at(i)); });
  return make_array(a.shape, std::move(out));
}

template <class Ct, class F>
CtArrayOf<Ct> map2(const char* what, const CtArrayOf<Ct>& a, const CtArrayOf<Ct>& b, const F& f) {
  check_same_shape_of(what, a.shape, b.shape);
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(),
                [&](std::size_t i, int) { out[i] = f(a.at(i), b.at(i)); });
  return make_array(a.shape, std::move(out));
}

// Splits a C-order shape around `axis`: outer * len * inner.
struct AxisSplit {
  std::size_t outer, len, inner;
};
AxisSplit split_axis(const std::vector<std::size_t>& shape, std::size_t axis);
std::vector<std::size_t> without_axis(const std::vector<std::size_t>& shape, std::size_t axis);

// broadcast(): for each result element (C order), the index of the operand ciphertext it
// shares; throws std::logic_error when the operand does not fit the result.
std::vector<std::size_t> broadcast_sources(const std::vector<std::size_t>& operand_shape,
                                           const std::vector<std::size_t>& dims,
                                           const std::vector<std::size_t>& shape,
                                           bool replicated_to_packed);

// Operand axis i becomes result axis dims[i] of the ciphertext-array shape `shape`; when
// `replicated_to_packed`, the last result axis is new or stretched and every block reuses
// the operand's ciphertext. Ciphertexts are shared, not copied.
template <class Ct>
CtArrayOf<Ct> broadcast(const CtArrayOf<Ct>& a, const std::vector<std::size_t>& dims,
                        const std::vector<std::size_t>& shape, bool replicated_to_packed) {
  CtArrayOf<Ct> out;
  out.shape = shape;
  for (std::size_t src : broadcast_sources(a.shape, dims, shape, replicated_to_packed)) {
    out.cts.push_back(a.cts[src]);
  }
  return out;
}

template <class Ct>
CtArrayOf<Ct> transpose(const CtArrayOf<Ct>& a) {
  if (a.shape.size() != 2) throw std::logic_error("transpose needs a rank-2 array");
  CtArrayOf<Ct> out;
  out.shape = {a.shape[1], a.shape[0]};
  for (std::size_t j = 0; j < a.shape[1]; ++j) {
    for (std::size_t i = 0; i < a.shape[0]; ++i) out.cts.push_back(a.cts[i * a.shape[1] + j]);
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Row accumulators (the bindings' DotSink and SumSink implement them)
// ------------------------------------------------------------------------------------------

// Accumulators over rows. The row bodies (running in parallel, one row per thread) only
// record their operands with add(); after every chunk of rows Server::stream has the sinks
// fold the chunk in: prepare() gathers and checks it and returns a number of independent work
// units, fold_unit() runs one (any thread), complete() drops the chunk. All sinks' units of
// a chunk run in one parallel region (fold_sinks). finish() folds what is left and returns
// the sums.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual std::size_t prepare() = 0;
  // The key a unit works on: units of different sinks with the same key read the same data
  // (CKKS: the same (limb, tile) of a sum and a dot product over the same input), so they run
  // back to back on one thread while that data is in cache.
  virtual std::size_t unit_key(std::size_t unit) const = 0;
  virtual void fold_unit(std::size_t unit) = 0;
  virtual void complete() = 0;
  // prepare, every unit on this thread, complete.
  void fold();
};

// Whether one step of a pass over the rows (reading a chunk, or its arithmetic) runs over the
// threads, measured rather than assumed (Server::stream). The first chunk runs on all
// threads; a step that took kSureSeconds or more stays there (a parallel region costs about
// 70 us here: waking the sleeping threads, passive waiting). A lighter step alternates the
// next 2 kTrials chunks between one thread and all, timed, and keeps the one with the
// smaller median for the rest of the pass (the first chunk also pays the first touch of its
// storage, so it is not compared). Measured: chi-square at N = 1000, M = 8192 reads and folds
// a chunk of 8 rows in 0.4 ms and 25 us on one thread; split, a read makes three passes over
// memory where one thread makes one, and the compute role took 0.108 s at 2 threads against
// 0.068 s at 1. With the split measured (medians of 8 runs, same session): 0.082 s at 2
// threads against 0.102 s always split and 0.078 s at 1 (3 trials a side decided less well:
// 0.094 s).
class ChunkSplit {
 public:
  static constexpr double kSureSeconds = 10e-3;
  static constexpr std::size_t kTrials = 5;

  explicit ChunkSplit(int threads) : all_(threads), threads_(threads), decided_(threads <= 1) {}
  // The threads of the next chunk.
  int threads() const { return threads_; }
  bool decided() const { return decided_; }
  // The chunk just run on threads() took `seconds`.
  void record(double seconds);

 private:
  int all_, threads_;
  bool decided_;
  std::size_t chunks_ = 0;
  std::vector<double> trials_[2];  // seconds of the trial chunks on one thread, on all
};

// Every sink's work units for the chunk in one parallel region, ordered by unit key (static
// schedule); on the calling thread when `parallel` is false.
void fold_sinks(const std::vector<RowSink*>& sinks, bool parallel = true);

// Collects one row value per row (an output whose leading axis is the stream dimension).
template <class Ct>
class RowCollectorOf {
 public:
  explicit RowCollectorOf(std::size_t rows) : rows_(rows) {}
  void put(std::size_t row, const CtArrayOf<Ct>& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (values_.empty()) values_.resize(rows_);
    values_.at(row) = value;
  }
  CtArrayOf<Ct> finish() {
    CtArrayOf<Ct> out;
    if (values_.empty()) throw std::runtime_error("no rows were collected");
    out.shape = {rows_};
    out.shape.insert(out.shape.end(), values_[0].shape.begin(), values_[0].shape.end());
    for (auto& v : values_) out.cts.insert(out.cts.end(), v.cts.begin(), v.cts.end());
    return out;
  }

 private:
  std::size_t rows_;
  std::mutex mutex_;
  std::vector<CtArrayOf<Ct>> values_;
};

// One op of a generated program: an error the runtime raises while running `f` (scales,
// levels, degrees, keys) is rethrown as an OpError whose message starts with `op`, the IR value
// and op name ("%28 = ckks.add: Evaluator::add: scales differ (...)"), so a failure names what
// failed. An OpError from an op nested in `f` passes through unchanged.
class OpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class F>
auto run_op(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const OpError&) {
    throw;
  } catch (const std::exception& e) {
    throw OpError(std::string(op) + ": " + e.what());
  }
}

}  // namespace hec::program
