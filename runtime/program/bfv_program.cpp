// The BFV binding of the program layer (bfv_program.h): the array ops of the bfv dialect on
// bfv::Ciphertext, the BFV row accumulators, the ciphertext-array files, and BfvScheme
// (parameters, keys, integer encoding and encryption of a row block, centred decryption), over
// which roles_impl.h's roles are instantiated once here.
#include "program/bfv_program.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <sstream>
#include <stdexcept>

#include "bfv/serialize.h"
#include "core/wipe.h"
#include "math/ntt.h"
#include "math/primes.h"
#include "program/roles_impl.h"

namespace hec::program::bfv_program {

namespace {

using math::u64;

// c mod t as a residue in [0, t).
u64 residue(std::int64_t c, u64 t) {
  const auto m = static_cast<std::int64_t>(t);
  std::int64_t r = c % m;
  if (r < 0) r += m;
  return static_cast<u64>(r);
}

// A residue in [0, t) as the centred integer in (-(t-1)/2, (t-1)/2].
std::int64_t centred(u64 v, u64 t) {
  return v > t / 2 ? -static_cast<std::int64_t>(t - v) : static_cast<std::int64_t>(v);
}

std::vector<Ct> collect(const std::vector<std::optional<Ct>>& acc) {
  std::vector<Ct> out;
  out.reserve(acc.size());
  for (const auto& c : acc) out.push_back(*c);
  return out;
}

Ct sum_of(const Ops& ops, std::vector<Ct> terms) {
  if (terms.empty()) throw std::logic_error("a sum of no ciphertexts");
  // Binary tree: the noise of a sum of m terms grows with m either way; the tree keeps the
  // intermediate sizes balanced.
  while (terms.size() > 1) {
    std::vector<Ct> next;
    for (std::size_t i = 0; i + 1 < terms.size(); i += 2) {
      ops.evaluator().add_inplace(terms[i], terms[i + 1]);
      next.push_back(std::move(terms[i]));
    }
    if (terms.size() % 2 == 1) next.push_back(std::move(terms.back()));
    terms = std::move(next);
  }
  return std::move(terms[0]);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Ops
// ------------------------------------------------------------------------------------------

Ops::Ops(ContextPtr context, const bfv::RelinKey* relin, const bfv::GaloisKeys* galois)
    : context_(context), evaluator_(context), relin_(relin), galois_(galois) {}

const bfv::RelinKey& Ops::relin_key() const {
  if (relin_ == nullptr) throw std::logic_error("the program relinearizes but has no relin key");
  return *relin_;
}

const bfv::GaloisKeys& Ops::galois_keys() const {
  if (galois_ == nullptr) throw std::logic_error("the program rotates but has no Galois keys");
  return *galois_;
}

PtArray encode_plain(const Ops& ops, Layout layout, const std::vector<std::size_t>& dims,
                     const std::vector<std::int64_t>& values) {
  if (layout != Layout::kPacked && layout != Layout::kReplicated) {
    throw std::logic_error("BFV plaintexts are packed or replicated");
  }
  if (values.size() != product(dims)) {
    throw std::logic_error("encode_plain: " + std::to_string(values.size()) +
                           " values for the shape " + format_shape(dims));
  }
  const bfv::Encoder encoder(ops.context());
  const u64 t = ops.context()->plain_modulus();
  PtArray out;
  out.shape = array_shape(layout, dims, ops.slots());
  if (layout == Layout::kReplicated) {
    for (std::int64_t v : values) out.pts.push_back(encoder.encode_scalar(residue(v, t)));
    return out;
  }
  const std::size_t width = dims.back(), blocks = out.shape.back(), n = ops.slots();
  for (std::size_t l = 0; l < values.size() / width; ++l) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t lo = b * n, hi = std::min(width, lo + n);
      out.pts.push_back(encoder.encode_batch_signed(
          std::span<const std::int64_t>(values.data() + l * width + lo, hi - lo)));
    }
  }
  return out;
}

std::int64_t integer_constant(double value) {
  if (value != std::nearbyint(value) || std::fabs(value) > 9.0e18) {
    throw std::logic_error("a BFV program multiplies and adds integer constants only, not " +
                           std::to_string(value));
  }
  return static_cast<std::int64_t>(value);
}

CtArray add(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2<Ct>("add", a, b, [&](const Ct& x, const Ct& y) {
    Ct z = x;
    ops.evaluator().add_inplace(z, y);
    return z;
  });
}

CtArray sub(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2<Ct>("sub", a, b, [&](const Ct& x, const Ct& y) {
    Ct z = x;
    ops.evaluator().sub_inplace(z, y);
    return z;
  });
}

CtArray negate(const Ops& ops, const CtArray& a) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().negate_inplace(y);
    return y;
  });
}

CtArray mul(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2<Ct>("mul", a, b,
                  [&](const Ct& x, const Ct& y) { return ops.evaluator().multiply(x, y); });
}

namespace {
void check_plain_shape(const char* what, const CtArray& a, const PtArray& p) {
  check_same_shape_of(what, a.shape, p.shape);
  if (p.pts.size() != a.size()) throw std::logic_error(std::string(what) + ": plaintext count");
}
}  // namespace

CtArray mul_plain(const Ops& ops, const CtArray& a, const PtArray& p) {
  check_plain_shape("mul_plain", a, p);
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) {
    out[i] = a.at(i);
    ops.evaluator().multiply_plain_inplace(out[i], p.pts[i]);
  });
  return make_array(a.shape, std::move(out));
}

CtArray add_plain(const Ops& ops, const CtArray& a, const PtArray& p) {
  check_plain_shape("add_plain", a, p);
  std::vector<Ct> out(a.size());
  parallel_rows(a.size(), default_threads(), [&](std::size_t i, int) {
    out[i] = a.at(i);
    ops.evaluator().add_plain_inplace(out[i], p.pts[i]);
  });
  return make_array(a.shape, std::move(out));
}

CtArray mul_const(const Ops& ops, const CtArray& a, std::int64_t c) {
  const u64 k = residue(c, ops.context()->plain_modulus());
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().multiply_scalar_inplace(y, k);
    return y;
  });
}

CtArray add_const(const Ops& ops, const CtArray& a, std::int64_t c) {
  const bfv::Encoder encoder(ops.context());
  const bfv::Plaintext k = encoder.encode_scalar(residue(c, ops.context()->plain_modulus()));
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().add_plain_inplace(y, k);
    return y;
  });
}

CtArray relinearize(const Ops& ops, const CtArray& a) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    if (y.size() > 3) {
      throw std::logic_error("relinearize: a BFV ciphertext of degree " +
                             std::to_string(y.size() - 1) + " (the runtime relinearizes degree 2)");
    }
    if (y.size() == 3) ops.evaluator().relinearize_inplace(y, ops.relin_key());
    return y;
  });
}

CtArray mod_switch(const Ops& ops, const CtArray& a) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().mod_switch_to_next_inplace(y);
    return y;
  });
}

CtArray rotate(const Ops& ops, const CtArray& a, int offset) {
  const std::size_t n = ops.slots(), half = n / 2;
  const auto nn = static_cast<long long>(n);
  const std::size_t k = static_cast<std::size_t>(((offset % nn) + nn) % nn);
  const std::size_t steps = k % half;
  const bool swapped = k >= half;
  const auto& ev = ops.evaluator();
  if (steps == 0) {
    return map1<Ct>(a, [&](const Ct& x) {
      Ct y = x;
      if (swapped) ev.rotate_columns_inplace(y, ops.galois_keys());
      return y;
    });
  }
  // Column c keeps the row-rotated value while c + steps stays inside the row, else takes the
  // other row's (the row swap of the rotation); with k >= N/2 the roles of the two swap.
  std::vector<std::int64_t> keep(n), other(n);
  for (std::size_t j = 0; j < n; ++j) {
    const bool inside = (j % half) + steps < half;
    keep[j] = inside != swapped ? 1 : 0;
    other[j] = 1 - keep[j];
  }
  const bfv::Encoder encoder(ops.context());
  const bfv::PlaintextNtt keep_pt = ev.prepare_plain(encoder.encode_batch_signed(keep));
  const bfv::PlaintextNtt other_pt = ev.prepare_plain(encoder.encode_batch_signed(other));
  return map1<Ct>(a, [&](const Ct& x) {
    Ct r = x;
    ev.rotate_rows_inplace(r, static_cast<long long>(steps), ops.galois_keys());
    Ct s = r;
    ev.rotate_columns_inplace(s, ops.galois_keys());
    ev.multiply_plain_inplace(r, keep_pt);
    ev.multiply_plain_inplace(s, other_pt);
    ev.add_inplace(r, s);
    return r;
  });
}

CtArray sum_slots(const Ops& ops, const CtArray& a) {
  if (a.shape.empty()) throw std::logic_error("sum_slots of an array without a block axis");
  const std::size_t blocks = a.shape.back();
  const std::vector<std::size_t> out_shape(a.shape.begin(), a.shape.end() - 1);
  const std::size_t count = product(out_shape);
  const auto& ev = ops.evaluator();
  std::vector<Ct> out(count);
  parallel_rows(count, default_threads(), [&](std::size_t i, int) {
    Ct acc = a.at(i * blocks);
    for (std::size_t b = 1; b < blocks; ++b) ev.add_inplace(acc, a.at(i * blocks + b));
    for (std::size_t offset = 1; offset < ops.slots() / 2; offset <<= 1) {
      Ct rotated = acc;
      ev.rotate_rows_inplace(rotated, static_cast<long long>(offset), ops.galois_keys());
      ev.add_inplace(acc, rotated);
    }
    Ct swapped = acc;
    ev.rotate_columns_inplace(swapped, ops.galois_keys());
    ev.add_inplace(acc, swapped);
    out[i] = std::move(acc);
  });
  return make_array(out_shape, std::move(out));
}

CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis) {
  const AxisSplit s = split_axis(a.shape, axis);
  std::vector<Ct> out(s.outer * s.inner);
  parallel_rows(out.size(), default_threads(), [&](std::size_t e, int) {
    const std::size_t o = e / s.inner, i = e % s.inner;
    std::vector<Ct> terms;
    terms.reserve(s.len);
    for (std::size_t k = 0; k < s.len; ++k) terms.push_back(a.at((o * s.len + k) * s.inner + i));
    out[e] = sum_of(ops, std::move(terms));
  });
  return make_array(without_axis(a.shape, axis), std::move(out));
}

CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis) {
  check_same_shape_of("dot", a.shape, b.shape);
  const AxisSplit s = split_axis(a.shape, axis);
  std::vector<Ct> out(s.outer * s.inner);
  parallel_rows(out.size(), default_threads(), [&](std::size_t e, int) {
    const std::size_t o = e / s.inner, i = e % s.inner;
    std::vector<Ct> terms;
    terms.reserve(s.len);
    for (std::size_t k = 0; k < s.len; ++k) {
      const std::size_t at = (o * s.len + k) * s.inner + i;
      terms.push_back(ops.evaluator().multiply(a.at(at), b.at(at)));
    }
    out[e] = sum_of(ops, std::move(terms));
  });
  return make_array(without_axis(a.shape, axis), std::move(out));
}

void expect_type(const CtArray& a, const char* value, int level, int degree) {
  if (a.cts.empty()) return;
  const Ct& c = a.at(0);
  const int have_level = static_cast<int>(c.polys.at(0).num_limbs()) - 1;
  const int have_degree = static_cast<int>(c.size()) - 1;
  if (have_level != level || have_degree != degree) {
    std::ostringstream m;
    m << "value " << value << ": the compiler expects level " << level << ", degree " << degree
      << " but the runtime has level " << have_level << ", degree " << have_degree
      << " (a compiler/runtime mismatch)";
    throw std::logic_error(m.str());
  }
}

// ------------------------------------------------------------------------------------------
// Sinks: one work unit per element of the row arrays (the BFV multiply has no batch kernel)
// ------------------------------------------------------------------------------------------

DotSink::DotSink(const Ops& ops, int threads)
    : ops_(ops),
      threads_(static_cast<std::size_t>(std::max(1, threads))),
      pending_(static_cast<std::size_t>(threads)) {}

void DotSink::add(int thread, const CtArray& a, const CtArray& b) {
  check_same_shape_of("dot over rows", a.shape, b.shape);
  pending_.at(static_cast<std::size_t>(thread)).emplace_back(a, b);
}

std::size_t DotSink::prepare() {
  for (const auto& rows : pending_) {
    for (const auto& [a, b] : rows) {
      if (acc_.empty() && terms_.empty()) {
        shape_ = a.shape;
        acc_.resize(a.size());
        terms_.assign(a.size(), {});
        // Elements enough to keep every thread busy: each unit folds one element straight into
        // its sum. Fewer: each element's rows are split over the threads (slices), whose
        // partial sums complete() adds in (compiler/analysis/streaming.py counts the same).
        slices_ = a.size() >= threads_ ? 1 : threads_;
        if (slices_ > 1) partial_.resize(a.size() * slices_);
      } else if (a.shape != shape_) {
        throw std::logic_error("dot over rows: row shapes differ");
      }
      for (std::size_t i = 0; i < a.size(); ++i) terms_[i].emplace_back(&a.at(i), &b.at(i));
    }
  }
  return terms_.size() * slices_;
}

void DotSink::fold_unit(std::size_t unit) {
  const std::size_t i = unit / slices_, k = unit % slices_;
  std::optional<Ct>& sum = slices_ > 1 ? partial_[unit] : acc_[i];
  for (std::size_t r = k; r < terms_[i].size(); r += slices_) {
    Ct p = ops_.evaluator().multiply(*terms_[i][r].first, *terms_[i][r].second);
    if (sum) {
      ops_.evaluator().add_inplace(*sum, p);
    } else {
      sum = std::move(p);
    }
  }
}

void DotSink::complete() {
  for (std::size_t i = 0; slices_ > 1 && i < acc_.size(); ++i) {
    for (std::size_t k = 0; k < slices_; ++k) {
      std::optional<Ct>& sum = partial_[i * slices_ + k];
      if (!sum) continue;
      if (acc_[i]) {
        ops_.evaluator().add_inplace(*acc_[i], *sum);
      } else {
        acc_[i] = std::move(*sum);
      }
      sum.reset();
    }
  }
  for (auto& v : terms_) v.clear();
  for (auto& rows : pending_) rows.clear();
}

CtArray DotSink::finish() {
  fold();
  if (acc_.empty() || !acc_[0]) throw std::runtime_error("a sum over rows saw no rows");
  return make_array(shape_, collect(acc_));
}

SumSink::SumSink(const Ops& ops, int threads)
    : ops_(ops), pending_(static_cast<std::size_t>(threads)) {}

void SumSink::add(int thread, const CtArray& a) {
  pending_.at(static_cast<std::size_t>(thread)).push_back(a);
}

std::size_t SumSink::prepare() {
  for (const auto& rows : pending_) {
    for (const auto& a : rows) {
      if (acc_.empty() && terms_.empty()) {
        shape_ = a.shape;
        acc_.resize(a.size());
        terms_.assign(a.size(), {});
      } else if (a.shape != shape_) {
        throw std::logic_error("sum over rows: row shapes differ");
      }
      for (std::size_t i = 0; i < a.size(); ++i) terms_[i].push_back(&a.at(i));
    }
  }
  return terms_.size();
}

void SumSink::fold_unit(std::size_t unit) {
  for (const Ct* x : terms_[unit]) {
    if (acc_[unit]) {
      ops_.evaluator().add_inplace(*acc_[unit], *x);
    } else {
      acc_[unit] = *x;
    }
  }
}

void SumSink::complete() {
  for (auto& v : terms_) v.clear();
  for (auto& rows : pending_) rows.clear();
}

CtArray SumSink::finish() {
  fold();
  if (acc_.empty() || !acc_[0]) throw std::runtime_error("a sum over rows saw no rows");
  return make_array(shape_, collect(acc_));
}

// ------------------------------------------------------------------------------------------
// Ciphertext-array files
// ------------------------------------------------------------------------------------------

namespace {
core::ObjectHeader array_header(const bfv::BfvContext& ctx, const core::KeyId& key_id,
                                std::size_t count, std::uint64_t payload_bytes) {
  core::ObjectHeader h;
  h.scheme = core::Scheme::kBfv;
  h.kind = core::ObjectKind::kCiphertextArray;
  h.params_digest = bfv::params_digest(ctx);
  h.key_id = key_id;
  h.level = static_cast<std::int32_t>(ctx.q_size()) - 1;
  h.degree = static_cast<std::uint32_t>(count);
  h.payload_length = payload_bytes;
  return h;
}

core::Expectation array_expectation(const bfv::BfvContext& ctx, const core::KeyId& key_id,
                                    const std::optional<core::Checksum>& content = {}) {
  core::Expectation e;
  e.content = content;
  e.scheme = core::Scheme::kBfv;
  e.kind = core::ObjectKind::kCiphertextArray;
  e.params_digest = bfv::params_digest(ctx);
  e.key_id = key_id;
  return e;
}
}  // namespace

CiphertextArrayWriter::CiphertextArrayWriter(const std::filesystem::path& path,
                                             const bfv::BfvContext& ctx, const core::KeyId& key_id,
                                             std::size_t count, std::uint64_t payload_bytes)
    : q_size_(ctx.q_size()),
      n_(ctx.ring_dim()),
      count_(count),
      writer_(path, array_header(ctx, key_id, count, payload_bytes)) {}

std::uint64_t CiphertextArrayWriter::record_bytes(const Ct& ct) {
  const std::size_t limbs = ct.polys.empty() ? 0 : ct.polys[0].num_limbs();
  const std::size_t n = ct.polys.empty() ? 0 : ct.polys[0].ring_dim();
  return 8 + ct.size() * limbs * n * sizeof(std::uint64_t);
}

void CiphertextArrayWriter::append(const Ct& ct) {
  if (written_ == count_) throw std::logic_error("save: more ciphertexts than announced");
  if (ct.size() < 2) throw std::logic_error("save: a BFV ciphertext has at least 2 polynomials");
  const std::size_t limbs = ct.polys[0].num_limbs();
  for (const auto& p : ct.polys) {
    if (p.num_limbs() != limbs || limbs > q_size_ || p.ring_dim() != n_ ||
        p.form() != math::PolyForm::kEvaluation) {
      throw std::logic_error("save: a BFV ciphertext polynomial not over Q in evaluation form");
    }
  }
  writer_.put_u32(static_cast<std::uint32_t>(ct.size()));
  writer_.put_u32(static_cast<std::uint32_t>(limbs));
  for (const auto& p : ct.polys) writer_.put_u64s(p.data(), limbs * n_);
  ++written_;
}

void CiphertextArrayWriter::finish() {
  if (written_ != count_) {
    throw std::logic_error("save: " + std::to_string(written_) + " ciphertexts written, " +
                           std::to_string(count_) + " announced");
  }
  writer_.finish();
}

CiphertextArrayReader::CiphertextArrayReader(const std::filesystem::path& path,
                                             const bfv::BfvContext& ctx, const core::KeyId& key_id,
                                             const std::optional<core::Checksum>& content)
    : ctx_(ctx), key_id_(key_id), reader_(path, array_expectation(ctx, key_id, content)) {
  // The announced count must fit the payload (every record is at least two one-limb
  // polynomials): a damaged or hostile header must not make a reader allocate for it.
  const std::uint64_t smallest = 8 + 2 * ctx.ring_dim() * sizeof(std::uint64_t);
  if (count() > reader_.remaining() / smallest) {
    throw std::runtime_error(path.string() + ": announces " + std::to_string(count()) +
                             " ciphertexts, its payload of " + std::to_string(reader_.remaining()) +
                             " bytes holds at most " +
                             std::to_string(reader_.remaining() / smallest));
  }
}

void CiphertextArrayReader::next_batch(Ct* const* out, std::size_t count, int threads) {
  const std::string where = reader_.path().string();
  if (read_ + count > this->count()) {
    throw std::runtime_error(where + ": holds " + std::to_string(this->count()) +
                             " ciphertexts, more were asked for");
  }
  const std::size_t n = ctx_.ring_dim();
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint32_t polys = reader_.get_u32();
    const std::uint32_t limbs = reader_.get_u32();
    if (polys < 2 || polys > 3 || limbs < 1 || limbs > ctx_.q_size()) {
      throw std::runtime_error(where + ": ciphertext " + std::to_string(read_ + k) + " has " +
                               std::to_string(polys) + " polynomials of " + std::to_string(limbs) +
                               " limbs (a BFV ciphertext has 2 or 3, of 1 to " +
                               std::to_string(ctx_.q_size()) + " limbs)");
    }
    Ct& ct = *out[k];
    ct.key_id = key_id_;
    ct.polys.assign(polys, math::RnsPoly(ctx_.key_context(), limbs, math::PolyForm::kEvaluation));
    for (auto& p : ct.polys) reader_.get_u64s(p.data(), limbs * n);
  }
  // Every residue below its prime (what the operations assume).
  parallel_rows(count, std::max(1, threads), [&](std::size_t k, int) {
    for (const auto& p : out[k]->polys) {
      for (std::size_t i = 0; i < p.num_limbs(); ++i) {
        const u64 q = p.modulus(i).value();
        const u64* l = p.limb(i);
        for (std::size_t c = 0; c < n; ++c) {
          if (l[c] >= q) {
            throw std::runtime_error(where + ": ciphertext " + std::to_string(read_ + k) +
                                     " limb " + std::to_string(i) + " holds " +
                                     std::to_string(l[c]) + ", not below q = " + std::to_string(q));
          }
        }
      }
    }
  });
  read_ += count;
}

void CiphertextArrayReader::finish() {
  if (read_ != count()) {
    throw std::runtime_error(reader_.path().string() + ": " + std::to_string(read_) + " of " +
                             std::to_string(count()) + " ciphertexts read");
  }
  reader_.finish();
}

// ------------------------------------------------------------------------------------------
// The binding
// ------------------------------------------------------------------------------------------

BfvScheme::ContextPtr BfvScheme::make_context(const ProgramSpec& spec) {
  if (spec.plain_modulus < 2) {
    throw std::invalid_argument("program '" + spec.name + "': no BFV plaintext modulus");
  }
  bfv::BfvParams p;
  p.log_n = spec.log_n;
  p.plain_modulus = spec.plain_modulus;
  p.q = spec.moduli;
  p.p_ks = spec.special_moduli;
  p.dnum = static_cast<std::size_t>(std::max(1, spec.dnum));
  p.allow_insecure = spec.insecure;
  // The auxiliary basis of the HPS multiply, as BfvParams::generate sizes it: |round(t c / Q)|
  // <= t N Q / 2 + 1 needs log2 P_mult >= log2 Q + log2 t + log2 N + 3 (bfv/README.md §Bounds);
  // primes below 2^50 (the IFMA NTT path), none of them in Q, P_ks or t.
  if (spec.log_n < 1 || spec.log_n > 17) {
    throw std::invalid_argument("program '" + spec.name +
                                "': log_n = " + std::to_string(spec.log_n) + " out of range");
  }
  const std::size_t n = std::size_t{1} << spec.log_n;
  double log_q = 0;
  for (u64 q : p.q) log_q += std::log2(static_cast<double>(q));
  const double need = log_q + std::log2(static_cast<double>(p.plain_modulus)) + spec.log_n + 3.0;
  std::vector<u64> used = {p.plain_modulus};
  used.insert(used.end(), p.q.begin(), p.q.end());
  used.insert(used.end(), p.p_ks.begin(), p.p_ks.end());
  for (std::size_t count = 1;; ++count) {
    p.p_mult = math::ntt_primes(math::kIfmaMaxModulusBits, count, n, used);
    double have = 0;
    for (u64 q : p.p_mult) have += std::log2(static_cast<double>(q));
    if (have >= need) break;
  }
  return bfv::BfvContext::create(p);
}

core::Digest BfvScheme::params_digest(const Context& ctx) { return bfv::params_digest(ctx); }

core::KeyId BfvScheme::make_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                 const std::filesystem::path& dir, OutputSet& outputs) {
  bfv::KeyGenerator gen(ctx);
  {
    std::vector<std::uint8_t> bytes = bfv::to_bytes(*ctx, gen.secret_key());
    bfv::write_file(dir / "secret", bytes);  // 0600 from the start (core::file_mode_of)
    core::wipe(bytes);
  }
  outputs.add(dir / "secret");
  bfv::write_file(dir / "public", bfv::to_bytes(*ctx, gen.make_public_key()));
  outputs.add(dir / "public");
  if (spec.relinearizes) {
    bfv::write_file(dir / "eval" / "relin", bfv::to_bytes(*ctx, gen.make_relin_key()));
    outputs.add(dir / "eval" / "relin");
  }
  if (!spec.rotations.empty()) {
    // The rotations the program asks for, and the row swap (sum_slots and rotate use it).
    const std::vector<long long> steps(spec.rotations.begin(), spec.rotations.end());
    bfv::write_file(dir / "eval" / "galois",
                    bfv::to_bytes(*ctx, gen.make_galois_keys(steps, /*row_swap=*/true)));
    outputs.add(dir / "eval" / "galois");
  }
  return gen.secret_key().key_id;
}

void BfvScheme::check_values(const ProgramSpec& spec, const SourceSpec& source,
                             const std::filesystem::path& file, const NpyArray& a) {
  const double limit = static_cast<double>((spec.plain_modulus - 1) / 2);
  const std::size_t width =
      a.shape.size() >= 2 ? a.data.size() / std::max<std::size_t>(1, a.shape[0]) : 1;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::size_t chunks = (a.data.size() + kChunk - 1) / kChunk;
  std::vector<std::size_t> first_bad(chunks, a.data.size());
  math::parallel_for(chunks, [&](std::size_t c) {
    const std::size_t end = std::min(a.data.size(), (c + 1) * kChunk);
    for (std::size_t i = c * kChunk; i < end; ++i) {
      const double v = a.data[i];
      if (v != std::nearbyint(v) || std::fabs(v) > limit) {
        first_bad[c] = i;
        return;
      }
    }
  });
  for (std::size_t i : first_bad) {
    if (i == a.data.size()) continue;
    const double v = a.data[i];
    std::ostringstream m;
    m.precision(17);
    m << file.string() << ": input '" << source.name << "' ";
    if (a.shape.size() >= 2) {
      m << "sample " << i / width << " column " << i % width;
    } else if (a.shape.size() == 1 && !spec.stream_dim.empty() && !source.dims.empty() &&
               source.dims[0] == spec.stream_dim) {
      m << "sample " << i;
    } else {
      m << "element " << i;
    }
    m << " is " << v;
    if (v != std::nearbyint(v)) {
      m << ", not an integer (this program encrypts with BFV, which holds integers exactly)";
    } else {
      m << ", outside the plaintext range [-" << static_cast<std::uint64_t>(limit) << ", "
        << static_cast<std::uint64_t>(limit) << "] of t = " << spec.plain_modulus;
    }
    throw std::runtime_error(m.str());
  }
}

BfvScheme::Encoder::Encoder(const ContextPtr& ctx, const std::filesystem::path& pk_path,
                            const core::KeyId& id)
    : ctx_(ctx),
      pk_(bfv::public_key_from_bytes(ctx, bfv::read_file(pk_path), pk_path.string(), id)),
      encoder_(ctx),
      encryptors_(
          static_cast<std::size_t>(std::max({1, omp_get_max_threads(), math::thread_cap()}))) {}

std::uint64_t BfvScheme::Encoder::record_bytes(const InputSpec&) const {
  return 8 + 2 * ctx_->q_size() * ctx_->ring_dim() * sizeof(std::uint64_t);
}

void BfvScheme::Encoder::encrypt_row(const RowToEncrypt& row, Ct* out) {
  const InputSpec& in = row.in;
  if (in.layout != Layout::kPacked && in.layout != Layout::kReplicated) {
    throw std::logic_error("input '" + in.id + "': BFV arrays are packed or replicated");
  }
  // This thread's encryptor (a thread number beyond the table, e.g. under a changed thread
  // cap, gets one of its own for the call).
  const auto tid = static_cast<std::size_t>(omp_get_thread_num());
  std::unique_ptr<bfv::Encryptor> own;
  std::unique_ptr<bfv::Encryptor>& slot = tid < encryptors_.size() ? encryptors_[tid] : own;
  if (!slot) slot = std::make_unique<bfv::Encryptor>(ctx_, pk_);
  bfv::Encryptor& encryptor = *slot;
  const u64 t = ctx_->plain_modulus();
  const std::size_t per_row = product(row.local_arr);
  const double* x = row.values;
  if (in.layout == Layout::kReplicated) {
    for (std::size_t i = 0; i < per_row; ++i) {
      out[i] = encryptor.encrypt(encoder_.encode_scalar(residue(std::llround(x[i]), t)));
    }
    return;
  }
  const std::size_t n = ctx_->ring_dim();
  const std::size_t width = row.local.back();
  const std::size_t blocks = row.local_arr.back();
  const std::size_t lead = per_row / blocks;
  std::vector<std::int64_t> values;
  for (std::size_t l = 0; l < lead; ++l) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t lo = b * n, hi = std::min(width, lo + n);
      values.resize(hi - lo);
      for (std::size_t j = lo; j < hi; ++j) values[j - lo] = std::llround(x[l * width + j]);
      out[l * blocks + b] = encryptor.encrypt(encoder_.encode_batch_signed(values));
    }
  }
}

void BfvScheme::save_array(const std::filesystem::path& path, const Context& ctx,
                           const core::KeyId& key_id, const std::vector<const Ct*>& cts) {
  std::uint64_t bytes = 0;
  for (const Ct* c : cts) bytes += CiphertextArrayWriter::record_bytes(*c);
  CiphertextArrayWriter writer(path, ctx, key_id, cts.size(), bytes);
  for (const Ct* c : cts) writer.append(*c);
  writer.finish();
}

std::vector<BfvScheme::Ct> BfvScheme::load_array(const std::filesystem::path& path,
                                                 const Context& ctx, const core::KeyId& key_id,
                                                 const std::optional<core::Checksum>& content) {
  CiphertextArrayReader reader(path, ctx, key_id, content);
  std::vector<Ct> cts(reader.count());
  std::vector<Ct*> ptrs;
  for (auto& c : cts) ptrs.push_back(&c);
  reader.next_batch(ptrs.data(), cts.size(), default_threads());
  reader.finish();
  return cts;
}

BfvScheme::EvalKeys BfvScheme::load_eval_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                              const std::filesystem::path& eval_dir,
                                              const core::KeyId& key_id) {
  EvalKeys keys;
  if (spec.relinearizes) {
    const auto path = eval_dir / "relin";
    keys.relin = bfv::relin_key_from_bytes(ctx, bfv::read_file(path), path.string(), key_id);
  }
  if (!spec.rotations.empty()) {
    const auto path = eval_dir / "galois";
    keys.galois = bfv::galois_keys_from_bytes(ctx, bfv::read_file(path), path.string(), key_id);
  }
  return keys;
}

Ops BfvScheme::make_ops(const ContextPtr& ctx, const EvalKeys& keys) {
  return Ops(ctx, keys.relin ? &*keys.relin : nullptr, keys.galois ? &*keys.galois : nullptr);
}

BfvScheme::Decoder::Decoder(const ContextPtr& ctx, const std::filesystem::path& sk_path)
    : ctx_(ctx),
      sk_([&] {
        std::vector<std::uint8_t> bytes = bfv::read_file(sk_path);
        bfv::SecretKey sk = bfv::secret_key_from_bytes(ctx, bytes, sk_path.string());
        core::wipe(bytes);
        return sk;
      }()),
      decryptor_(ctx, sk_),
      encoder_(ctx) {}

std::vector<std::int64_t> BfvScheme::Decoder::decrypt_output(
    const OutputSpec& o, const std::string&, std::vector<std::size_t>& dims,
    const std::vector<std::size_t>& arr, double factor,
    const std::function<std::vector<Ct>()>& load) {
  if (factor != 1.0) {
    throw std::runtime_error("result '" + o.name + "': factor " + std::to_string(factor) +
                             " (a BFV result is an exact integer: its factor is 1)");
  }
  if (o.layout != Layout::kPacked && o.layout != Layout::kReplicated) {
    throw std::logic_error("result '" + o.name + "': BFV arrays are packed or replicated");
  }
  const auto cts = load();
  const u64 t = ctx_->plain_modulus();
  const std::size_t n = ctx_->ring_dim();
  std::vector<std::int64_t> values(product(dims), 0);
  parallel_rows(cts.size(), default_threads(), [&](std::size_t i, int) {
    bfv::Plaintext pt = decryptor_.decrypt(cts[i]);
    std::vector<u64> slots = encoder_.decode_batch(pt);
    core::wipe(pt.coeffs);
    if (o.layout == Layout::kReplicated) {
      values[i] = centred(slots[0], t);
    } else {
      const std::size_t width = dims.back(), blocks = arr.back();
      const std::size_t lead = i / blocks, b = i % blocks;
      for (std::size_t s = 0; s < n && b * n + s < width; ++s) {
        values[lead * width + b * n + s] = centred(slots[s], t);
      }
    }
    core::wipe(slots);
  });
  return values;
}

int run_main(const ProgramSpec& spec, ComputeFn compute, int argc, const char* const* argv) {
  return roles::run_roles<BfvScheme>(spec, compute, argc, argv);
}

}  // namespace hec::program::bfv_program
