// Array ops, row streaming and the four roles of a generated CKKS program (see
// ckks_program.h). Files a run writes:
//   KEYDIR/secret, KEYDIR/public              ckks/io.h containers
//   KEYDIR/eval/keyset                        which program and key id the keys belong to
//   KEYDIR/eval/relin, KEYDIR/eval/galois     only when the program needs them
//   CTDIR/<id>.rows-<a>-<b>.cts (+ .meta)     rows [a, b) of a streamed input
//   CTDIR/<id>.cts (+ .meta)                  a whole (not streamed) input
//   RESDIR/<name>.cts (+ .meta)               a revealed value, still encrypted
//   KEYDIR/manifest (a copy in KEYDIR/eval/)   the run manifest (program/manifest.h)
//   KEYDIR/coordinator.sign (+ .pub)          the coordinator's Ed25519 signing key
// A .meta file (program/manifest.h) is a few "key value" lines (program, program digest, run id,
// key id, array or output name, shard, owner, content checksum) closed by a BLAKE2b checksum and
// the signature of the party that made it; every reader checks them against the run manifest
// and names the file on mismatch.
#include "program/ckks_program.h"
#include "program/coeff_layout.h"

#include <omp.h>
#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ckks/encoder.h"
#include "ckks/encryptor.h"
#include "ckks/io.h"
#include "core/serialize.h"
#include "core/wipe.h"
#include "math/parallel.h"
#include "program/args.h"
#include "program/manifest.h"
#include "program/npy.h"
#include "program/output.h"
#include "program/progress.h"
#include "program/resources.h"

namespace hec::program {

namespace {

std::size_t product(const std::vector<std::size_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

std::string hex(const std::uint8_t* data, std::size_t size) { return core::to_hex(data, size); }

std::string key_hex(const core::KeyId& id) { return hex(id.data(), id.size()); }

// Runs body(i) for i in [0, count) over OpenMP threads; body gets its thread number. The first
// exception is captured and rethrown after the loop (none escapes the parallel region).
void parallel_rows(std::size_t count, int threads,
                   const std::function<void(std::size_t, int)>& body) {
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (std::size_t i = 0; i < count; ++i) {
    {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (error) continue;
    }
    try {
      body(i, omp_get_thread_num());
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// The runtime's one process-wide thread cap (math/parallel.h: HEC_THREADS or all cores).
int default_threads() { return math::thread_cap(); }

CtArray make_array(std::vector<std::size_t> shape, std::vector<Ct>&& values) {
  CtArray out;
  out.shape = std::move(shape);
  out.cts.reserve(values.size());
  for (auto& v : values) out.cts.push_back(std::make_shared<const Ct>(std::move(v)));
  return out;
}

void check_same_shape(const char* what, const CtArray& a, const CtArray& b) {
  if (a.shape != b.shape) {
    throw std::logic_error(std::string(what) + ": array shapes " + format_shape(a.shape) + " and " +
                           format_shape(b.shape) + " differ");
  }
}

CtArray map1(const CtArray& a, const std::function<Ct(const Ct&)>& f) {
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) { out[i] = f(a.at(i)); });
  return make_array(a.shape, std::move(out));
}

CtArray map2(const char* what, const CtArray& a, const CtArray& b,
             const std::function<Ct(const Ct&, const Ct&)>& f) {
  check_same_shape(what, a, b);
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(),
                [&](std::size_t i, int) { out[i] = f(a.at(i), b.at(i)); });
  return make_array(a.shape, std::move(out));
}

// (a + b) mod q elementwise on n words.
void add_mod(std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t q) {
  for (std::size_t t = 0; t < n; ++t) {
    const std::uint64_t s = a[t] + b[t];
    a[t] = s >= q ? s - q : s;
  }
}

// Lowers the degree of `c` by one (degree >= 3) with the degree-2 relinearization key.
void lower_degree_once(const Ops& ops, Ct& c) {
  const std::size_t d = c.degree;
  const std::size_t words = c.limbs * c.n;
  Ct top = ops.context()->make_ciphertext(c.level, 2, c.scale);
  top.key_id = c.key_id;
  std::fill(top.data.begin(), top.data.end(), 0);
  std::copy(c.poly(d), c.poly(d) + words, top.poly(2));
  ops.evaluator().relinearize_inplace(top, ops.relin_key());
  const auto& chain = ops.context()->params().chain();
  for (std::size_t j = 0; j < c.limbs; ++j) {
    add_mod(c.limb(d - 2, j), top.limb(0, j), c.n, chain[j]);
    add_mod(c.limb(d - 1, j), top.limb(1, j), c.n, chain[j]);
  }
  c.degree = d - 1;
  c.data.resize((d)*words);
}

}  // namespace

std::vector<std::size_t> array_shape(Layout layout, const std::vector<std::size_t>& dims,
                                     std::size_t slots, std::size_t group) {
  if (layout == Layout::kReplicated) return dims;
  if (dims.empty()) throw std::logic_error("a packed array needs at least one axis");
  std::vector<std::size_t> out(dims.begin(), dims.end() - 1);
  if (layout == Layout::kCoeff) {
    const std::size_t coefs = (dims.back() + group - 1) / group;
    out.push_back((coefs + 2 * slots - 1) / (2 * slots));
    return out;
  }
  const std::size_t per_ct = layout == Layout::kComplex ? 2 * slots : slots;
  out.push_back((dims.back() + per_ct - 1) / per_ct);
  return out;
}

// ------------------------------------------------------------------------------------------
// Ops
// ------------------------------------------------------------------------------------------

Ops::Ops(ckks::ContextPtr context, const ckks::RelinKey* relin, const ckks::GaloisKeys* galois)
    : context_(context), evaluator_(context), relin_(relin), galois_(galois) {}

const ckks::RelinKey& Ops::relin_key() const {
  if (relin_ == nullptr) throw std::logic_error("the program relinearizes but has no relin key");
  return *relin_;
}

const ckks::GaloisKeys& Ops::galois_keys() const {
  if (galois_ == nullptr) throw std::logic_error("the program rotates but has no Galois keys");
  return *galois_;
}

CtArray add(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2("add", a, b, [&](const Ct& x, const Ct& y) { return ops.evaluator().add(x, y); });
}

CtArray sub(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2("sub", a, b, [&](const Ct& x, const Ct& y) { return ops.evaluator().sub(x, y); });
}

CtArray negate(const Ops& ops, const CtArray& a) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().negate_inplace(y);
    return y;
  });
}

CtArray mul(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2("mul", a, b,
              [&](const Ct& x, const Ct& y) { return ops.evaluator().multiply(x, y); });
}

CtArray mul_const(const Ops& ops, const CtArray& a, double c, double const_scale_bits) {
  if (const_scale_bits == 0.0) {
    const double k = std::nearbyint(c);
    if (k != c || std::fabs(k) > 9.0e18) {
      throw std::logic_error("mul_const: " + std::to_string(c) +
                             " is not an integer that fits in 63 bits (const_scale 0)");
    }
    return map1(a, [&](const Ct& x) {
      Ct y = x;
      ops.evaluator().multiply_integer_inplace(y, static_cast<std::int64_t>(k));
      return y;
    });
  }
  const double scale = std::exp2(const_scale_bits);
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().multiply_constant_inplace(y, c, scale);
    return y;
  });
}

CtArray add_const(const Ops& ops, const CtArray& a, double c) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().add_constant_inplace(y, c);
    return y;
  });
}

CtArray add_const_complex(const Ops& ops, const CtArray& a, double c) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().add_complex_constant_inplace(y, c, c);
    return y;
  });
}

namespace {
void relinearize_ct(const Ops& ops, Ct& y) {
  while (y.degree > 2) lower_degree_once(ops, y);
  if (y.degree == 2) ops.evaluator().relinearize_inplace(y, ops.relin_key());
}
}  // namespace

CtArray relinearize(const Ops& ops, const CtArray& a) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    relinearize_ct(ops, y);
    return y;
  });
}

CtArray unpack_complex(const Ops& ops, const CtArray& a,
                       const std::vector<std::size_t>& packed_shape) {
  if (a.shape.empty() || packed_shape.size() != a.shape.size()) {
    throw std::logic_error("unpack_complex: array shape " + format_shape(a.shape) +
                           " does not match the packed shape " + format_shape(packed_shape));
  }
  const std::size_t pairs = a.shape.back(), blocks = packed_shape.back();
  if ((blocks + 1) / 2 != pairs || product(packed_shape) / blocks != a.size() / pairs) {
    throw std::logic_error("unpack_complex: " + format_shape(a.shape) +
                           " complex cannot unpack to " + format_shape(packed_shape));
  }
  std::vector<Ct> out(product(packed_shape));
  const auto& ev = ops.evaluator();
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) {
    Ct z = a.at(i);
    relinearize_ct(ops, z);
    Ct conj = z;
    ev.conjugate_inplace(conj, ops.galois_keys());
    const std::size_t lead = i / pairs, b = 2 * (i % pairs);
    Ct im = ev.sub(z, conj);  // 2i Im z
    ev.add_inplace(z, conj);  // 2 Re z
    z.scale *= 2.0;
    out[lead * blocks + b] = std::move(z);
    if (b + 1 < blocks) {
      ev.multiply_by_i_inplace(im);  // -2 Im z
      ev.negate_inplace(im);
      im.scale *= 2.0;
      out[lead * blocks + b + 1] = std::move(im);
    }
  });
  return make_array(packed_shape, std::move(out));
}

CtArray rescale(const Ops& ops, const CtArray& a) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().rescale_inplace(y);
    return y;
  });
}

CtArray level_down(const Ops& ops, const CtArray& a, int level) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().drop_to_level_inplace(y, ckks::Level(level));
    return y;
  });
}

CtArray rotate(const Ops& ops, const CtArray& a, int offset) {
  return map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().rotate_inplace(y, offset, ops.galois_keys());
    return y;
  });
}

CtArray sum_slots(const Ops& ops, const CtArray& a) {
  if (a.shape.empty()) throw std::logic_error("sum_slots of an array without a block axis");
  const std::size_t blocks = a.shape.back();
  const std::vector<std::size_t> out_shape(a.shape.begin(), a.shape.end() - 1);
  const std::size_t count = product(out_shape);
  std::vector<Ct> out(count);
  parallel_rows(count, default_threads(), [&](std::size_t i, int) {
    Ct acc = a.at(i * blocks);
    for (std::size_t b = 1; b < blocks; ++b) ops.evaluator().add_inplace(acc, a.at(i * blocks + b));
    for (std::size_t offset = 1; offset < ops.slots(); offset <<= 1) {
      Ct rotated = acc;
      ops.evaluator().rotate_inplace(rotated, static_cast<int>(offset), ops.galois_keys());
      ops.evaluator().add_inplace(acc, rotated);
    }
    out[i] = std::move(acc);
  });
  return make_array(out_shape, std::move(out));
}

namespace {
// Splits a C-order shape around `axis`: outer * len * inner.
struct AxisSplit {
  std::size_t outer, len, inner;
};
AxisSplit split(const std::vector<std::size_t>& shape, std::size_t axis) {
  if (axis >= shape.size()) throw std::logic_error("axis out of range");
  AxisSplit s{1, shape[axis], 1};
  for (std::size_t i = 0; i < axis; ++i) s.outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}
std::vector<std::size_t> without(const std::vector<std::size_t>& shape, std::size_t axis) {
  std::vector<std::size_t> out = shape;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  return out;
}
}  // namespace

CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis) {
  const AxisSplit s = split(a.shape, axis);
  std::vector<Ct> out(s.outer * s.inner);
  for (std::size_t o = 0; o < s.outer; ++o) {
    for (std::size_t i = 0; i < s.inner; ++i) {
      std::vector<Ct> terms;
      terms.reserve(s.len);
      for (std::size_t k = 0; k < s.len; ++k) terms.push_back(a.at((o * s.len + k) * s.inner + i));
      out[o * s.inner + i] = ckks::sum_tree(ops.evaluator(), terms);
    }
  }
  return make_array(without(a.shape, axis), std::move(out));
}

CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis) {
  check_same_shape("dot", a, b);
  const AxisSplit s = split(a.shape, axis);
  std::vector<Ct> out(s.outer * s.inner);
  for (std::size_t o = 0; o < s.outer; ++o) {
    for (std::size_t i = 0; i < s.inner; ++i) {
      std::vector<Ct> x, y;
      for (std::size_t k = 0; k < s.len; ++k) {
        x.push_back(a.at((o * s.len + k) * s.inner + i));
        y.push_back(b.at((o * s.len + k) * s.inner + i));
      }
      out[o * s.inner + i] = ckks::dot(ops.context(), x, y);
    }
  }
  return make_array(without(a.shape, axis), std::move(out));
}

CtArray broadcast(const CtArray& a, const std::vector<std::size_t>& dims,
                  const std::vector<std::size_t>& shape, bool replicated_to_packed) {
  // Operand axis i sits at result axis dims[i]; other result axes repeat it.
  std::vector<std::size_t> source_extent(shape.size(), 1);
  for (std::size_t i = 0; i < dims.size() && i < a.shape.size(); ++i) {
    source_extent[dims[i]] = a.shape[i];
  }
  if (replicated_to_packed && !shape.empty()) source_extent.back() = 1;
  if (product(source_extent) != a.size()) {
    throw std::logic_error("broadcast: operand of array shape " + format_shape(a.shape) +
                           " does not fit result " + format_shape(shape));
  }
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (source_extent[k] != 1 && source_extent[k] != shape[k]) {
      throw std::logic_error("broadcast: operand array shape " + format_shape(a.shape) +
                             " cannot stretch to " + format_shape(shape));
    }
  }
  CtArray out;
  out.shape = shape;
  const std::size_t count = product(shape);
  out.cts.reserve(count);
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t flat = 0; flat < count; ++flat) {
    std::size_t src = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      src = src * source_extent[k] + (source_extent[k] == 1 ? 0 : index[k]);
    }
    out.cts.push_back(a.cts[src]);
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

CtArray broadcast_both_parts(const Ops& ops, const CtArray& a, const std::vector<std::size_t>& dims,
                             const std::vector<std::size_t>& shape) {
  const CtArray both = map1(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().multiply_by_i_inplace(y);
    ops.evaluator().add_inplace(y, x);
    return y;
  });
  return broadcast(both, dims, shape, true);
}

CtArray transpose(const CtArray& a) {
  if (a.shape.size() != 2) throw std::logic_error("transpose needs a rank-2 array");
  CtArray out;
  out.shape = {a.shape[1], a.shape[0]};
  for (std::size_t j = 0; j < a.shape[1]; ++j) {
    for (std::size_t i = 0; i < a.shape[0]; ++i) out.cts.push_back(a.cts[i * a.shape[1] + j]);
  }
  return out;
}

void expect_type(const CtArray& a, const char* value, int level, double log_scale, int degree) {
  if (a.cts.empty()) return;
  const Ct& c = a.at(0);
  const double log_s = std::log2(c.scale);
  if (c.level.value != level || static_cast<int>(c.degree) != degree ||
      std::fabs(log_s - log_scale) > 1e-6 * std::max(1.0, std::fabs(log_scale))) {
    std::ostringstream m;
    m.precision(12);
    m << "value " << value << ": the compiler expects level " << level << ", scale 2^" << log_scale
      << ", degree " << degree << " but the runtime has level " << c.level.value << ", scale 2^"
      << log_s << ", degree " << c.degree << " (a compiler/runtime mismatch)";
    throw std::logic_error(m.str());
  }
}

// ------------------------------------------------------------------------------------------
// Sinks
// ------------------------------------------------------------------------------------------

void RowSink::fold() {
  const std::size_t units = prepare();
  for (std::size_t u = 0; u < units; ++u) fold_unit(u);
  complete();
}

DotSink::DotSink(const Ops& ops, int level, int threads)
    : ops_(ops), level_(level), pending_(static_cast<std::size_t>(threads)) {}

void DotSink::add(int thread, const CtArray& a, const CtArray& b) {
  check_same_shape("dot over rows", a, b);
  pending_.at(static_cast<std::size_t>(thread)).emplace_back(a, b);
}

std::size_t DotSink::prepare() {
  const ckks::Context& ctx = *ops_.context();
  for (const auto& rows : pending_) {
    for (const auto& [a, b] : rows) {
      if (acc_.empty()) {
        // The first row fixes the shape, level, scale and key of the sums.
        shape_ = a.shape;
        for (std::size_t i = 0; i < a.size(); ++i) {
          Ct z = ctx.make_ciphertext(ckks::Level(level_), 2, a.at(i).scale * b.at(i).scale);
          z.key_id = a.at(i).key_id;
          acc_.push_back(std::move(z));
        }
        lhs_.assign(a.size(), {});
        rhs_.assign(a.size(), {});
        units_per_element_ = ckks::dot_batch_units(acc_[0]);
      } else if (a.shape != shape_) {
        throw std::logic_error("dot over rows: row shapes differ");
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        lhs_[i].push_back(&a.at(i));
        rhs_[i].push_back(&b.at(i));
      }
    }
  }
  for (std::size_t i = 0; i < lhs_.size(); ++i)
    ckks::check_dot_batch(ctx, acc_[i], lhs_[i], rhs_[i]);
  return lhs_.size() * units_per_element_;
}

std::size_t DotSink::unit_key(std::size_t unit) const {
  return unit % units_per_element_;  // dot_batch_unit: limb * tiles + tile
}

void DotSink::fold_unit(std::size_t unit) {
  const std::size_t i = unit / units_per_element_;
  ckks::dot_batch_unit(*ops_.context(), acc_[i], lhs_[i], rhs_[i], unit % units_per_element_);
}

void DotSink::complete() {
  for (auto& v : lhs_) v.clear();
  for (auto& v : rhs_) v.clear();
  for (auto& rows : pending_) rows.clear();
}

CtArray DotSink::finish() {
  fold();
  if (acc_.empty()) throw std::runtime_error("a sum over rows saw no rows");
  return make_array(shape_, std::move(acc_));
}

SumSink::SumSink(const Ops& ops, int threads)
    : ops_(ops), pending_(static_cast<std::size_t>(threads)) {}

void SumSink::add(int thread, const CtArray& a) {
  pending_.at(static_cast<std::size_t>(thread)).push_back(a);
}

std::size_t SumSink::prepare() {
  for (const auto& rows : pending_) {
    for (const auto& a : rows) {
      if (acc_.empty()) {
        // The first row starts the sums (a copy); the rest are added to them.
        shape_ = a.shape;
        for (std::size_t i = 0; i < a.size(); ++i) acc_.push_back(a.at(i));
        terms_.assign(a.size(), {});
        units_per_element_ = ckks::sum_batch_units(acc_[0]);
        continue;
      }
      if (a.shape != shape_) throw std::logic_error("sum over rows: row shapes differ");
      for (std::size_t i = 0; i < a.size(); ++i) terms_[i].push_back(&a.at(i));
    }
  }
  for (std::size_t i = 0; i < terms_.size(); ++i) {
    ckks::check_sum_batch(*ops_.context(), acc_[i], terms_[i]);
  }
  return terms_.size() * units_per_element_;
}

std::size_t SumSink::unit_key(std::size_t unit) const {
  // sum_batch_unit: (polynomial * limbs + limb) * tiles + tile, polynomials = acc degree + 1.
  return (unit % units_per_element_) % (units_per_element_ / acc_[0].size());
}

void SumSink::fold_unit(std::size_t unit) {
  const std::size_t i = unit / units_per_element_;
  ckks::sum_batch_unit(*ops_.context(), acc_[i], terms_[i], unit % units_per_element_);
}

void SumSink::complete() {
  for (auto& v : terms_) v.clear();
  for (auto& rows : pending_) rows.clear();
}

CtArray SumSink::finish() {
  fold();
  if (acc_.empty()) throw std::runtime_error("a sum over rows saw no rows");
  return make_array(shape_, std::move(acc_));
}

void RowCollector::put(std::size_t row, const CtArray& value) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (values_.empty()) values_.resize(rows_);
  values_.at(row) = value;
}

CtArray RowCollector::finish() {
  CtArray out;
  if (values_.empty()) throw std::runtime_error("no rows were collected");
  out.shape = {rows_};
  out.shape.insert(out.shape.end(), values_[0].shape.begin(), values_[0].shape.end());
  for (auto& v : values_) out.cts.insert(out.cts.end(), v.cts.begin(), v.cts.end());
  return out;
}

// ------------------------------------------------------------------------------------------
// Metadata files
// ------------------------------------------------------------------------------------------

namespace {

using Meta = MetaLines;

void check_program(const ProgramSpec& spec, const MetaDoc& meta) {
  const std::string& digest = meta.field("program_digest");
  if (digest != spec.digest) {
    throw std::runtime_error(meta.path.string() + ": made for program '" + meta.field("program") +
                             "' (digest " + digest.substr(0, 16) + "...), not for this program '" +
                             spec.name + "' (digest " + spec.digest.substr(0, 16) +
                             "...): a file from another program or another compilation");
  }
}

// The XXH3-128 trailer of a container file (its last 16 bytes), hex: what an upload's signed
// metadata binds (the streaming reader verifies the trailer against the content).
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

// BLAKE2b-256 of a whole file, hex: what a result's signed metadata binds (results are small).
std::string file_blake2b_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (does it exist?)");
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, 32);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = in.gcount();
    if (n > 0) {
      crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(buffer.data()),
                                static_cast<unsigned long long>(n));
    }
  }
  std::uint8_t digest[32];
  crypto_generichash_final(&state, digest, sizeof digest);
  return hex(digest, sizeof digest);
}

// The header fields of a HEC1 container (core/serialize.h layout), read without the payload.
struct Peek {
  core::ObjectHeader header;
  std::uintmax_t file_size = 0;
};

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
  if (u32(4) != core::kFormatVersion) {
    throw std::runtime_error(path.string() + ": format version " + std::to_string(u32(4)) +
                             ", this program reads version " +
                             std::to_string(core::kFormatVersion));
  }
  return p;
}

ckks::ContextPtr make_program_context(const ProgramSpec& spec) {
  std::vector<std::uint64_t> special = spec.special_moduli;
  const int dnum = std::max(1, spec.dnum);
  const auto security = spec.insecure ? ckks::Security::kInsecure : ckks::Security::k128;
  // Keys only up to key_level: the security bound counts Q_key_level * P, not Q_L * P.
  // Built insecure-tolerant first: the full Q_L * P may exceed the bound the limited set meets.
  const auto full =
      ckks::Parameters::from_primes(ckks::LogN(spec.log_n), spec.output_moduli, spec.moduli,
                                    special, dnum, ckks::Security::kInsecure);
  if (special.empty() || spec.key_level >= full.max_level()) {
    return ckks::make_context(ckks::Parameters::from_primes(
        ckks::LogN(spec.log_n), spec.output_moduli, spec.moduli, special, dnum, security));
  }
  return ckks::make_context(full.with_key_level(ckks::Level(spec.key_level), security));
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

}  // namespace

// ------------------------------------------------------------------------------------------
// Server
// ------------------------------------------------------------------------------------------

Server::Server(const ProgramSpec& spec, const Manifest& manifest,
               const std::filesystem::path& ct_dir, const Ops& ops, const ckks::ContextPtr& context,
               const core::KeyId& key_id)
    : spec_(spec), dir_(ct_dir), ops_(ops), context_(context), key_id_(key_id) {
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
  auto check_file = [&](const std::filesystem::path& path, const InputSpec& in,
                        const std::string& shard) {
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
    if (meta.field("content_checksum") != container_trailer_hex(path)) {
      throw std::runtime_error(path.string() + ": its content is not the one its metadata (" +
                               meta.path.string() +
                               ") describes: the file was replaced or swapped with another");
    }
    const Peek p = peek_container(path);
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
      for (const auto& b : blocks) {
        if (b.begin != next) {
          throw std::runtime_error(
              "input '" + in.source + "': rows " + std::to_string(std::min(next, b.begin)) + ":" +
              std::to_string(std::max(next, b.begin)) +
              (b.begin > next ? " are missing" + owner_of(next)
                              : " are uploaded twice (" + b.path.string() + ")") +
              " (row blocks in " + dir_.string() + " must cover 0:N exactly once)");
        }
        next = b.end;
        meta =
            check_file(b.path, in, "rows " + std::to_string(b.begin) + " " + std::to_string(b.end));
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
      meta = check_file(path, in, "whole");
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
  for (const auto& [name, bound] : spec_.params) {
    if (sizes_.count(name) == 0) {
      throw std::runtime_error("size " + name + " is not given by any input in " + dir_.string());
    }
    if (sizes_[name] > bound) {
      throw std::runtime_error("size " + name + " = " + std::to_string(sizes_[name]) +
                               " exceeds the bound " + std::to_string(bound) +
                               " this program was compiled for");
    }
  }
}

std::size_t Server::size(const std::string& name) const {
  auto it = sizes_.find(name);
  if (it == sizes_.end()) throw std::logic_error("no size " + name);
  return it->second;
}

int Server::threads() const { return default_threads(); }

std::size_t Server::rows() const { return spec_.stream_dim.empty() ? 0 : size(spec_.stream_dim); }

const InputSpec& Server::input(const std::string& id) const {
  for (const auto& in : spec_.inputs) {
    if (in.id == id) return in;
  }
  throw std::logic_error("no input array " + id);
}

CtArray Server::load(const std::string& id) const {
  const InputSpec& in = input(id);
  const auto shape =
      array_shape(in.layout, resolve(in.dims, sizes_), context_->slots(), in.packing.group);
  CtArray out;
  out.shape = shape;
  auto append = [&](const std::filesystem::path& path) {
    for (auto& c : ckks::load_ciphertexts(path, *context_, key_id_)) {
      out.cts.push_back(std::make_shared<const Ct>(std::move(c)));
    }
  };
  if (in.streamed) {
    for (const auto& b : blocks_.at(id)) append(b.path);
  } else {
    append(dir_ / (id + ".cts"));
  }
  if (out.cts.size() != product(shape)) {
    throw std::runtime_error("input '" + in.source + "': " + std::to_string(out.cts.size()) +
                             " ciphertexts in " + dir_.string() + ", the shape needs " +
                             std::to_string(product(shape)));
  }
  return out;
}

namespace {

// Every sink's work units for the chunk in one parallel region, ordered by (limb, tile) so
// that the units reading the same tiles run back to back on one thread (static schedule).
void fold_sinks(const std::vector<RowSink*>& sinks) {
  struct Unit {
    std::size_t key, sink, unit;
  };
  std::vector<Unit> units;
  for (std::size_t k = 0; k < sinks.size(); ++k) {
    const std::size_t count = sinks[k]->prepare();
    for (std::size_t u = 0; u < count; ++u) units.push_back({sinks[k]->unit_key(u), k, u});
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const Unit& a, const Unit& b) { return a.key < b.key; });
  math::parallel_for(units.size(),
                     [&](std::size_t j) { sinks[units[j].sink]->fold_unit(units[j].unit); });
  for (RowSink* sink : sinks) sink->complete();
}

}  // namespace

void Server::stream(const std::string& phase, const std::vector<std::string>& ids,
                    const RowBody& body, const std::vector<RowSink*>& sinks) const {
  const std::size_t n = rows();
  Progress progress(phase, n);
  // Per input: the row-local array shape and the current block.
  struct Cursor {
    const InputSpec* in;
    std::vector<std::size_t> row_shape;
    std::size_t per_row;
    std::size_t block = 0;
    std::unique_ptr<ckks::CiphertextArrayReader> reader;  // the current block's file
    std::vector<CtPtr> cts;                               // the current chunk's ciphertexts
    std::vector<std::shared_ptr<Ct>> pool;                // their storage, reused chunk to chunk
    std::size_t begin = 0, end = 0;
  };
  std::vector<Cursor> cursors;
  for (const auto& id : ids) {
    Cursor c;
    c.in = &input(id);
    const auto full = array_shape(c.in->layout, resolve(c.in->dims, sizes_), context_->slots(),
                                  c.in->packing.group);
    c.row_shape.assign(full.begin() + 1, full.end());
    c.per_row = product(c.row_shape);
    cursors.push_back(std::move(c));
  }
  // Rows are read a chunk at a time (a few per thread) from each input's current block file
  // and folded in parallel; a block's checksum is verified when its last row has been read,
  // and the results are written only after every block has passed (compute's OutputSet).
  const std::size_t chunk = 4 * static_cast<std::size_t>(std::max(1, threads()));
  std::size_t row = 0;
  while (row < n) {
    std::size_t chunk_end = std::min(n, row + chunk);
    for (auto& c : cursors) {
      if (row >= c.end) {
        if (c.reader) c.reader->finish();
        const auto& blocks = blocks_.at(c.in->id);
        while (c.block < blocks.size() && blocks[c.block].end <= row) ++c.block;
        const Block& b = blocks.at(c.block);
        c.reader = std::make_unique<ckks::CiphertextArrayReader>(b.path, *context_, key_id_);
        if (c.reader->count() != (b.end - b.begin) * c.per_row) {
          throw std::runtime_error(b.path.string() + ": holds " +
                                   std::to_string(c.reader->count()) + " ciphertexts, rows " +
                                   std::to_string(b.begin) + ":" + std::to_string(b.end) +
                                   " need " + std::to_string((b.end - b.begin) * c.per_row));
        }
        c.begin = b.begin;
        c.end = b.end;
      }
      chunk_end = std::min(chunk_end, c.end);
    }
    const std::size_t first = row;
    for (auto& c : cursors) {
      c.cts.clear();
      const std::size_t count = (chunk_end - first) * c.per_row;
      if (c.pool.size() < count) c.pool.resize(count);
      std::vector<Ct*> slots_out(count);
      for (std::size_t k = 0; k < count; ++k) {
        // Reuse the previous chunk's ciphertext storage unless the row body kept it.
        if (!c.pool[k] || c.pool[k].use_count() != 1) c.pool[k] = std::make_shared<Ct>();
        slots_out[k] = c.pool[k].get();
        c.cts.push_back(c.pool[k]);
      }
      c.reader->next_batch(slots_out.data(), count, threads());
    }
    parallel_rows(chunk_end - first, threads(), [&](std::size_t k, int thread) {
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
      progress.advance();
    });
    fold_sinks(sinks);
    row = chunk_end;
  }
  for (auto& c : cursors) {
    c.cts.clear();
    if (c.reader) c.reader->finish();
  }
  progress.done();
}

void Server::output(const std::string& name, const CtArray& value, double factor) {
  results_.push_back({name, value, factor});
}

// ------------------------------------------------------------------------------------------
// Roles
// ------------------------------------------------------------------------------------------

namespace {

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

// The manifest a role reads: --manifest, else `fallback` (KEYDIR/manifest beside the public
// or secret key; KEYDIR/eval/manifest for the server).
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

int signkey(const ParsedArgs& args) {
  const std::filesystem::path out = args.require("out");
  if (std::filesystem::exists(out)) {
    throw std::runtime_error(out.string() + " exists: signkey never overwrites a key");
  }
  SigningKey key;
  key.save(out);
  std::cerr << "[signkey] " << out << " (keep it; 0600) and " << out.string() + ".pub"
            << " (give it to the coordinator): " << verify_key_hex(key.verify_key()) << "\n";
  return 0;
}

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
  if (auto r = args.get("rows")) {
    if (r->empty() || r->find_first_not_of("0123456789") != std::string::npos || *r == "0") {
      throw UsageError("keygen: --rows must be a positive integer, got '" + *r + "'");
    }
    rows = std::stoull(*r);
  }
  for (const auto& item : args.all("owner")) {
    // NAME=A:B (its rows of the stream dimension) or NAME (a program that streams nothing).
    const bool has_rows = item.find('=') != std::string::npos;
    const auto [name, range] =
        has_rows ? split_assignment("--owner", item) : std::make_pair(item, std::string());
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
  MetaLines bindings;
  for (const auto& item : args.all("bind")) {
    auto [key, value] = split_assignment("--bind", item);
    if (key.find_first_of(" \n") != std::string::npos || value.find('\n') != std::string::npos) {
      throw UsageError("--bind " + key + ": keys have no spaces, values no line breaks");
    }
    bindings.push_back({"bind." + key, value});
  }

  auto ctx = make_program_context(spec);
  OutputSet outputs;
  outputs.create_dir(dir);
  outputs.create_dir(dir / "eval");
  ckks::KeyGenerator gen(ctx);
  const auto sk = gen.secret_key();
  const auto pk = gen.public_key(sk);
  ckks::save(dir / "secret", *ctx, sk);
  outputs.add(dir / "secret");
  ckks::save(dir / "public", *ctx, pk);
  outputs.add(dir / "public");
  const SigningKey coordinator;
  coordinator.save(dir / "coordinator.sign");
  outputs.add(dir / "coordinator.sign");
  outputs.add(dir / "coordinator.sign.pub");
  Meta meta = base_meta(spec, "keyset");
  meta.push_back({"key_id", key_hex(sk.key_id)});
  meta.push_back({"params_digest", hex(ctx->params().digest().data(), 32)});
  meta.push_back({"relin", spec.relinearizes ? "yes" : "no"});
  std::string rot;
  for (int r : spec.rotations) {
    if (!rot.empty()) rot += ' ';
    rot += std::to_string(r);
  }
  meta.push_back({"rotations", rot});
  meta.push_back({"conjugation", spec.conjugates ? "yes" : "no"});
  const ckks::Level key_level(spec.key_level);
  if (spec.relinearizes) {
    ckks::save(dir / "eval" / "relin", *ctx, gen.relin_key(sk, key_level));
    outputs.add(dir / "eval" / "relin");
  }
  if (!spec.rotations.empty() || spec.conjugates) {
    ckks::save(dir / "eval" / "galois", *ctx,
               gen.galois_keys(sk, spec.rotations, spec.conjugates, key_level));
    outputs.add(dir / "eval" / "galois");
  }
  write_meta(dir / "eval" / "keyset", meta, &coordinator, "coordinator");
  outputs.add(dir / "eval" / "keyset");

  // The run manifest, signed by the coordinator.
  const std::string run_id = new_run_id();
  Meta man = base_meta(spec, "manifest");
  man.push_back({"run_id", run_id});
  man.push_back({"key_id", key_hex(sk.key_id)});
  man.push_back({"params_digest", hex(ctx->params().digest().data(), 32)});
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
  man.insert(man.end(), bindings.begin(), bindings.end());
  // One copy for the coordinator and the data owners (beside public), one in eval/ (what the
  // server is handed).
  write_meta(dir / "manifest", man, &coordinator, "coordinator");
  outputs.add(dir / "manifest");
  std::filesystem::copy_file(dir / "manifest", dir / "eval" / "manifest");
  outputs.add(dir / "eval" / "manifest");
  outputs.finish();
  std::cerr << "[keygen] run " << run_id << ", key id " << key_hex(sk.key_id) << ": "
            << dir / "secret"
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

void check_domain(const SourceSpec& in, const std::filesystem::path& file, const NpyArray& a) {
  if (!in.domain.bounded) return;
  // A set of small non-negative integers (genotype counts, 0/1 indicators): a table lookup
  // per element instead of a search of the set (a tenth of the encrypt role's time at
  // N = 5000, M = 16384).
  std::array<bool, 256> small{};
  const bool small_set = !in.domain.set.empty() &&
                         std::all_of(in.domain.set.begin(), in.domain.set.end(), [](double x) {
                           return x >= 0 && x < 256 && x == std::floor(x);
                         });
  if (small_set) {
    for (double x : in.domain.set) small[static_cast<std::size_t>(x)] = true;
  }
  auto ok = [&](double v) {
    if (small_set) {
      return v >= 0 && v < 256 && static_cast<double>(static_cast<std::size_t>(v)) == v &&
             small[static_cast<std::size_t>(v)];
    }
    if (!in.domain.set.empty()) {
      return std::find(in.domain.set.begin(), in.domain.set.end(), v) != in.domain.set.end();
    }
    return v >= in.domain.lo && v <= in.domain.hi;
  };
  // Chunks in parallel (a genotype matrix is 10^8 elements), then the first bad element.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::size_t chunks = (a.data.size() + kChunk - 1) / kChunk;
  std::vector<std::size_t> first_bad(chunks, a.data.size());
  math::parallel_for(chunks, [&](std::size_t c) {
    const std::size_t end = std::min(a.data.size(), (c + 1) * kChunk);
    for (std::size_t i = c * kChunk; i < end; ++i) {
      if (!ok(a.data[i])) {
        first_bad[c] = i;
        return;
      }
    }
  });
  for (std::size_t i : first_bad) {
    if (i == a.data.size()) continue;
    const double v = a.data[i];
    {
      std::ostringstream m;
      m << file.string() << ": input '" << in.name << "' element " << i << " is " << v
        << ", outside its declared domain ";
      if (!in.domain.set.empty()) {
        m << "{";
        for (std::size_t k = 0; k < in.domain.set.size(); ++k) {
          m << (k ? ", " : "") << in.domain.set[k];
        }
        m << "}";
      } else {
        m << "[" << in.domain.lo << ", " << in.domain.hi << "]";
      }
      throw std::runtime_error(m.str());
    }
  }
}

int encrypt(const ProgramSpec& spec, const ParsedArgs& args) {
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
  if (auto b = args.get("block-rows")) {
    if (b->empty() || b->find_first_not_of("0123456789") != std::string::npos || *b == "0") {
      throw UsageError("encrypt: --block-rows must be a positive integer, got '" + *b + "'");
    }
    block_rows = std::stoull(*b);
  }
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

  auto ctx = make_program_context(spec);
  const Peek pk_head = peek_container(pk_path);
  if (key_hex(pk_head.header.key_id) != manifest.key_id) {
    throw std::runtime_error(pk_path.string() + ": key id " + key_hex(pk_head.header.key_id) +
                             ", but the run manifest " + manifest.path.string() + " names key id " +
                             manifest.key_id + " (keys of another run)");
  }
  const auto pk = ckks::load_public_key(pk_path, *ctx, pk_head.header.key_id);
  ckks::Encryptor encryptor(ctx, pk);
  ckks::Encoder encoder(ctx);
  const std::size_t slots = ctx->slots();

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
    const ckks::Level level(in.level);
    const double scale = std::exp2(in.log_scale);
    // Logical row-local shape (everything but the streamed axis) and its ciphertext layout.
    std::vector<std::size_t> local;
    for (std::size_t k = in.streamed ? 1 : 0; k < in.dims.size(); ++k) {
      local.push_back(resolve_dim(in.dims[k], sizes));
    }
    const std::size_t nrows = in.streamed ? a.shape[0] : 1;
    const std::size_t row_values = product(local);
    const auto local_arr = array_shape(in.layout, local, slots, in.packing.group);
    const std::size_t per_row = product(local_arr);
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
    // Encrypts row r (or the whole array) into out[0..per_row).
    auto encrypt_row = [&](std::size_t r, Ct* out) {
      if (in.layout == Layout::kCoeff) {
        std::vector<ckks::Plaintext> pts;
        encode_coeff_row(*ctx, in, owner_row(r), r, local.back(), scale, pts);
        for (std::size_t i = 0; i < per_row; ++i) out[i] = encryptor.encrypt(pts[i]);
        return;
      }
      std::vector<double> derived;
      const double* x = a.data.data() + r * row_values;
      if (in.value != nullptr) {  // an owner-side value: formed from the row before encrypting
        const OwnerRow row = owner_row(r);
        derived.resize(row_values);
        in.value(row, row_values, derived.data());
        x = derived.data();
      }
      if (in.layout == Layout::kReplicated) {
        for (std::size_t i = 0; i < per_row; ++i) {
          out[i] = encryptor.encrypt(encoder.encode_constant(x[i], level, scale));
        }
        return;
      }
      const std::size_t width = local.back();
      const std::size_t blocks = local_arr.back();
      const std::size_t lead = per_row / blocks;
      if (in.layout == Layout::kComplex) {
        // Pair b: columns of block 2b in the real parts, of block 2b + 1 in the imaginary ones.
        std::vector<std::complex<double>> z(slots);
        for (std::size_t l = 0; l < lead; ++l) {
          const double* row = x + l * width;
          for (std::size_t b = 0; b < blocks; ++b) {
            for (std::size_t s = 0; s < slots; ++s) {
              const std::size_t re = 2 * b * slots + s, im = re + slots;
              z[s] = {re < width ? row[re] : 0.0, im < width ? row[im] : 0.0};
            }
            out[l * blocks + b] = encryptor.encrypt(
                encoder.encode(z, level, scale, nullptr, encoder.fresh_noise_tolerance()));
          }
        }
        return;
      }
      for (std::size_t l = 0; l < lead; ++l) {
        for (std::size_t b = 0; b < blocks; ++b) {
          const std::size_t lo = b * slots, hi = std::min(width, lo + slots);
          std::span<const double> values(x + l * width + lo, hi - lo);
          out[l * blocks + b] = encryptor.encrypt(
              encoder.encode(values, level, scale, nullptr, encoder.fresh_noise_tolerance()));
        }
      }
    };
    Meta meta = base_meta(spec, "ciphertext-array");
    meta.push_back({"run_id", manifest.run_id});
    meta.push_back({"owner", owner});
    meta.push_back({"id", in.id});
    meta.push_back({"input", in.source});
    meta.push_back({"layout", in.layout == Layout::kPacked    ? "packed"
                              : in.layout == Layout::kComplex ? "complex"
                              : in.layout == Layout::kCoeff   ? "coeff"
                                                              : "replicated"});
    meta.push_back({"level", std::to_string(in.level)});
    meta.push_back({"key_id", key_hex(pk.key_id)});
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
      ckks::save(path, *ctx, cts);
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
    const std::size_t ct_bytes =
        2 * ctx->params().limbs_at(level) * ctx->n() * sizeof(std::uint64_t);
    std::size_t per_block = block_rows;
    if (per_block == 0) per_block = std::max<std::size_t>(1, (64u << 20) / (per_row * ct_bytes));
    const std::size_t base = rows ? rows->begin : 0;
    const std::size_t n_files = (nrows + per_block - 1) / per_block;
    Progress progress("encrypt " + in.id + " rows", nrows);
    std::mutex outputs_mutex;
    parallel_rows(n_files, threads, [&](std::size_t f, int) {
      const std::size_t r0 = f * per_block, r1 = std::min(nrows, r0 + per_block);
      const std::string stem =
          in.id + ".rows-" + std::to_string(base + r0) + "-" + std::to_string(base + r1) + ".cts";
      const auto path = out_dir / stem;
      const std::size_t count = (r1 - r0) * per_row;
      const std::uint64_t record = 16 + ct_bytes;  // level, scale, degree, then c_0 and c_1
      ckks::CiphertextArrayWriter writer(path, *ctx, pk.key_id, count, count * record);
      std::vector<Ct> cts(per_row);
      for (std::size_t r = r0; r < r1; ++r) {
        encrypt_row(r, cts.data());
        progress.advance();
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

int compute(const ProgramSpec& spec, ComputeFn fn, const ParsedArgs& args) {
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
  auto ctx = make_program_context(spec);
  const core::KeyId key_id = read_keyset(spec, eval_dir, manifest);
  std::optional<ckks::RelinKey> relin;
  std::optional<ckks::GaloisKeys> galois;
  if (spec.relinearizes) relin = ckks::load_relin_key(eval_dir / "relin", *ctx, key_id);
  if (!spec.rotations.empty() || spec.conjugates) {
    galois = ckks::load_galois_keys(eval_dir / "galois", *ctx, key_id);
  }
  Ops ops(ctx, relin ? &*relin : nullptr, galois ? &*galois : nullptr);
  Server server(spec, manifest, in_dir, ops, ctx, key_id);
  fn(server);
  OutputSet outputs;
  outputs.create_dir(out_dir);
  for (const auto& r : server.results()) {
    const auto path = out_dir / (r.name + ".cts");
    std::vector<Ct> cts;
    for (const auto& c : r.value.cts) cts.push_back(*c);
    ckks::save(path, *ctx, cts);
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
    meta.push_back({"content_blake2b", file_blake2b_hex(path)});
    write_meta(path.string() + ".meta", meta, signer ? &*signer : nullptr, "server");
    outputs.add(path.string() + ".meta");
  }
  outputs.finish();
  std::cerr << "[compute] peak resident set " << format_bytes(peak_rss_bytes())
            << " (peak_rss_bytes=" << peak_rss_bytes() << ")\n";
  return 0;
}

int decrypt(const ProgramSpec& spec, const ParsedArgs& args) {
  const std::filesystem::path sk_path = args.require("sk");
  const std::filesystem::path in_dir = args.require("in");
  const std::filesystem::path out_dir = args.require("out");
  const Manifest manifest = role_manifest(spec, args, sk_path.parent_path() / "manifest");
  auto ctx = make_program_context(spec);
  const auto sk = ckks::load_secret_key(sk_path, *ctx);
  if (key_hex(sk.key_id) != manifest.key_id) {
    throw std::runtime_error(sk_path.string() + ": key id " + key_hex(sk.key_id) +
                             ", but the run manifest " + manifest.path.string() + " names key id " +
                             manifest.key_id);
  }
  ckks::Decryptor decryptor(ctx, sk);
  ckks::Encoder encoder(ctx);
  // --out DIR: one NAME.npy per revealed value; --out FILE.npz: one archive (numpy.load).
  const bool npz = out_dir.extension() == ".npz";
  std::vector<std::pair<std::string, std::string>> members;
  OutputSet outputs;
  if (!npz) outputs.create_dir(out_dir);
  // kCoeff results: every count of one result file, decoded once.
  std::map<std::string, std::vector<std::vector<double>>> coeff_digits;
  for (const auto& o : spec.outputs) {
    const std::string file = o.result.empty() ? o.name : o.result;
    const auto path = in_dir / (file + ".cts");
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error("missing result '" + o.name + "': no " + path.string() +
                               " (run compute first)");
    }
    const MetaDoc meta = read_meta(path.string() + ".meta");
    check_program(spec, meta);
    if (meta.field("key_id") != key_hex(sk.key_id)) {
      throw std::runtime_error(path.string() + ": computed under key id " + meta.field("key_id") +
                               " but " + sk_path.string() + " is key id " + key_hex(sk.key_id) +
                               " (wrong keys)");
    }
    manifest.check_same_run(meta, "a result");
    if (meta.field("kind") != "result" || meta.field("name") != file) {
      throw std::runtime_error(path.string() + ": holds result '" + meta.field("name") +
                               "', not '" + file + "' (swapped or renamed result files)");
    }
    manifest.check_signature(meta, "server");
    if (meta.field("content_blake2b") != file_blake2b_hex(path)) {
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
    const auto arr = array_shape(o.layout, dims, ctx->slots(), o.packing.group);
    std::vector<double> values;
    auto load_checked = [&] {
      auto cts = ckks::load_ciphertexts(path, *ctx, sk.key_id);
      if (cts.size() != product(arr)) {
        throw std::runtime_error(path.string() + ": " + std::to_string(cts.size()) +
                                 " ciphertexts, the shape needs " + std::to_string(product(arr)));
      }
      return cts;
    };
    if (o.layout == Layout::kCoeff) {  // packed counts: every digit of the file decoded once
      auto found = coeff_digits.find(file);
      if (found == coeff_digits.end()) {
        const auto cts = load_checked();
        std::vector<ckks::Plaintext> phases(cts.size());
        parallel_rows(cts.size(), default_threads(),
                      [&](std::size_t i, int) { phases[i] = decryptor.decrypt(cts[i]); });
        found =
            coeff_digits.emplace(file, decode_coeff(*ctx, o.packing, phases, dims.back())).first;
      }
      values = found->second.at(static_cast<std::size_t>(o.digit));
      if (o.packing.digits.at(static_cast<std::size_t>(o.digit)).per_row) dims.clear();
    } else {
      const auto cts = load_checked();
      values.assign(product(dims), 0.0);
      parallel_rows(cts.size(), default_threads(), [&](std::size_t i, int) {
        ckks::Plaintext phase = decryptor.decrypt(cts[i]);  // Delta m + e
        const auto decoded = encoder.decode(phase);
        core::wipe(phase.data);
        if (o.layout == Layout::kReplicated) {
          values[i] = decoded.values[0].real() * factor;
          return;
        }
        const std::size_t width = dims.back(), blocks = arr.back();
        const std::size_t lead = i / blocks, b = i % blocks;
        if (o.layout == Layout::kComplex) {  // the coordinator splits the complex slots
          const std::size_t slots = ctx->slots();
          for (std::size_t s = 0; s < slots; ++s) {
            const std::size_t re = 2 * b * slots + s, im = re + slots;
            if (re < width) values[lead * width + re] = decoded.values[s].real() * factor;
            if (im < width) values[lead * width + im] = decoded.values[s].imag() * factor;
          }
          return;
        }
        for (std::size_t s = 0; s < ctx->slots() && b * ctx->slots() + s < width; ++s) {
          values[lead * width + b * ctx->slots() + s] = decoded.values[s].real() * factor;
        }
      });
    }
    if (npz) {
      members.emplace_back(o.name,
                           npy_bytes(dims, "<f8", values.data(), values.size() * sizeof(double)));
      continue;
    }
    const auto out = out_dir / (o.name + ".npy");
    write_npy(out, dims, values);
    outputs.add(out);
  }
  if (npz) write_npz(out_dir, members);
  outputs.finish();
  return 0;
}

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
  std::cout << "scale: " << h.scale;
  if (h.scale > 0) std::cout << " (2^" << std::log2(h.scale) << ")";
  std::cout << "\n"
            << (h.kind == core::ObjectKind::kCiphertextArray ? "count: " : "degree: ") << h.degree
            << "\n"
            << "payload_bytes: " << h.payload_length << "\n"
            << "file_bytes: " << p.file_size << "\n";
  auto ctx = make_program_context(spec);
  std::cout << "this program: " << spec.name << " ("
            << (h.params_digest == ctx->params().digest() ? "same parameters" : "OTHER parameters")
            << ")\n";
  return 0;
}

CommandLine command_line(const ProgramSpec& spec) {
  CommandLine cl(spec.name, "hec program '" + spec.name + "' compiled from " + spec.source +
                                (spec.insecure ? " (INSECURE parameters)" : ""));
  cl.add({"keygen",
          "coordinator: make the secret key, the public key and the evaluation keys",
          {{"out", "KEYDIR", "directory for secret, public, eval/ and the run manifest", true},
           {"rows", "N", "the stream dimension's size (fixes it: a missing last block is refused)"},
           {"owner", "NAME=A:B", "a data owner and its rows (repeat; they cover 0:N)", false, true},
           {"owner-key", "NAME=FILE.pub", "an owner's signing key (its uploads must be signed)",
            false, true},
           {"server-key", "FILE.pub", "the server's signing key (its results must be signed)"},
           {"bind", "KEY=VALUE", "a fact the run is bound to (e.g. a digest of the SNP list)",
            false, true}},
          {}});
  cl.add({"signkey",
          "any party: make an Ed25519 signing key FILE (0600) and FILE.pub for the coordinator",
          {{"out", "FILE", "the signing key file", true}},
          {}});
  cl.add({"encrypt",
          "data owner: encrypt input arrays under the public key",
          {{"pk", "KEYDIR/public", "the public key", true},
           {"input", "NAME=FILE.npy", "an input array (repeat for several)", true, true},
           {"rows", "A:B", "the files hold rows A..B-1 of the streamed inputs"},
           {"block-rows", "R", "rows per ciphertext file (default: about 64 MiB per file)"},
           {"manifest", "FILE", "the run manifest (default: beside the public key)"},
           {"owner", "NAME", "the data owner uploading (default: the manifest's only owner)"},
           {"sign", "FILE", "the owner's signing key (required when the manifest has one)"},
           {"out", "CTDIR", "directory for the ciphertexts", true}},
          {}});
  cl.add({"compute",
          "server: evaluate the program on ciphertexts (evaluation keys only)",
          {{"eval", "KEYDIR/eval", "the evaluation keys", true},
           {"in", "CTDIR", "the ciphertexts of every input", true},
           {"out", "RESDIR", "directory for the encrypted results", true},
           {"threads", "T", "OpenMP threads (default: HEC_THREADS or all)"},
           {"manifest", "FILE", "the run manifest (default: KEYDIR/eval/manifest)"},
           {"sign", "FILE", "the server's signing key (required when the manifest has one)"}},
          {}});
  cl.add({"decrypt",
          "coordinator: decrypt the results into NAME.npy files (or one .npz)",
          {{"sk", "KEYDIR/secret", "the secret key", true},
           {"in", "RESDIR", "the encrypted results", true},
           {"out", "DIR|FILE.npz", "a directory of NAME.npy files, or one .npz archive", true},
           {"manifest", "FILE", "the run manifest (default: beside the secret key)"}},
          {}});
  cl.add({"info", "print the header of a key, ciphertext or metadata file", {}, {"FILE"}});
  return cl;
}

}  // namespace

int run_main(const ProgramSpec& spec, ComputeFn compute_fn, int argc, const char* const* argv) {
  const CommandLine cl = command_line(spec);
  try {
    const ParsedArgs args = cl.parse(argc, argv);
    if (args.subcommand == "help") {
      std::cout << (args.positionals.empty() ? cl.usage() : cl.usage(args.positionals[0]));
      return 0;
    }
    if (args.subcommand != "info") print_stamp(spec, std::cerr);
    if (args.subcommand == "keygen") return keygen(spec, args);
    if (args.subcommand == "signkey") return signkey(args);
    if (args.subcommand == "encrypt") return encrypt(spec, args);
    if (args.subcommand == "compute") return compute(spec, compute_fn, args);
    if (args.subcommand == "decrypt") return decrypt(spec, args);
    if (args.subcommand == "info") return info(spec, args);
    throw UsageError("unknown command " + args.subcommand);
  } catch (const UsageError& e) {
    std::cerr << spec.name << ": usage error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << spec.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace hec::program
