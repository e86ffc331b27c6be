// The CKKS binding of the program layer (ckks_program.h): the array ops on ckks::Ciphertext,
// the CKKS row accumulators, and CkksScheme (parameters, keys, encoding and encryption of a row
// block, ciphertext-array files, decryption and decoding), over which roles_impl.h's roles are
// instantiated once here.
#include "program/ckks_program.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <span>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "ckks/flooding.h"
#include "core/wipe.h"
#include "math/sampling.h"
#include "program/coeff_layout.h"
#include "program/roles_impl.h"

namespace hec::program {

namespace {

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
  return map2<Ct>("add", a, b, [&](const Ct& x, const Ct& y) { return ops.evaluator().add(x, y); });
}

CtArray sub(const Ops& ops, const CtArray& a, const CtArray& b) {
  return map2<Ct>("sub", a, b, [&](const Ct& x, const Ct& y) { return ops.evaluator().sub(x, y); });
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

CtArray mul_const(const Ops& ops, const CtArray& a, double c, double const_scale_bits) {
  if (const_scale_bits == 0.0) {
    const double k = std::nearbyint(c);
    if (k != c || std::fabs(k) > 9.0e18) {
      throw std::logic_error("mul_const: " + std::to_string(c) +
                             " is not an integer that fits in 63 bits (const_scale 0)");
    }
    return map1<Ct>(a, [&](const Ct& x) {
      Ct y = x;
      ops.evaluator().multiply_integer_inplace(y, static_cast<std::int64_t>(k));
      return y;
    });
  }
  const double scale = std::exp2(const_scale_bits);
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().multiply_constant_inplace(y, c, scale);
    return y;
  });
}

CtArray mul_mask(const Ops& ops, const CtArray& a, double c, double const_scale_bits,
                 std::size_t width) {
  const std::size_t slots = ops.slots();
  const std::size_t blocks = (width + slots - 1) / slots;
  if (const_scale_bits <= 0.0 || width == 0 || a.shape.empty() || a.shape.back() != blocks) {
    throw std::logic_error("mul_mask: " + std::to_string(width) + " valid slots need " +
                           std::to_string(blocks) +
                           " ciphertexts on the packed axis, and a "
                           "const_scale above 1");
  }
  const double scale = std::exp2(const_scale_bits);
  const std::size_t tail = width - (blocks - 1) * slots;  // valid slots of the last block
  // The last block's plaintext, per level met (the array's ciphertexts share one).
  std::map<int, ckks::Plaintext> masks;
  if (tail < slots) {
    const ckks::Encoder encoder(ops.context());
    std::vector<double> values(slots, 0.0);
    std::fill(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(tail), c);
    for (std::size_t i = blocks - 1; i < a.size(); i += blocks) {
      const ckks::Level level = a.at(i).level;
      if (!masks.contains(level.value)) {
        masks.emplace(level.value, encoder.encode(std::span<const double>(values), level, scale));
      }
    }
  }
  return map1_indexed<Ct>(a, [&](std::size_t i, const Ct& x) {
    Ct y = x;
    if (i % blocks == blocks - 1 && tail < slots) {
      ops.evaluator().multiply_plain_inplace(y, masks.at(x.level.value));
    } else {
      ops.evaluator().multiply_constant_inplace(y, c, scale);
    }
    return y;
  });
}

CtArray mul_mask_grid(const Ops& ops, const CtArray& a, double c, double const_scale_bits,
                      const GridLayout& grid, const std::vector<std::size_t>& dims,
                      std::size_t row_block) {
  const std::size_t slots = ops.slots();
  const std::size_t columns = grid.columns(slots);
  const auto full = array_shape(Layout::kGrid, dims, slots, 1, grid);
  const bool row_local = row_block != kWholeArray;
  const std::vector<std::size_t> expect =
      row_local ? std::vector<std::size_t>(full.begin() + 1, full.end()) : full;
  if (const_scale_bits <= 0.0 || a.shape != expect ||
      (row_local && (grid.roles.empty() || grid.roles[0] != GridRole::kRow))) {
    throw std::logic_error(
        "mul_mask_grid: the array does not have the shape of its grid layout "
        "(or a row block of it), or the const_scale is not above 1");
  }
  const double scale = std::exp2(const_scale_bits);
  // Per ciphertext: its valid rows and columns (R and C when nothing is padding).
  auto valid = [&](std::size_t i) {
    std::size_t rows_valid = grid.rows, cols_valid = columns;
    std::size_t rest = i;
    for (std::size_t k = full.size(); k-- > 0;) {
      std::size_t block = 0;
      if (row_local && k == 0) {
        block = row_block;
      } else {
        const std::size_t extent = full[k];
        block = rest % extent;
        rest /= extent;
      }
      if (grid.roles[k] == GridRole::kRow) {
        rows_valid = std::min(grid.rows, dims[k] - std::min(dims[k], block * grid.rows));
      } else if (grid.roles[k] == GridRole::kCol) {
        cols_valid = std::min(columns, dims[k] - std::min(dims[k], block * columns));
      }
    }
    return std::make_pair(rows_valid, cols_valid);
  };
  // The mask plaintexts, made before the parallel loop: one per padding shape and level.
  std::map<std::tuple<std::size_t, std::size_t, int>, ckks::Plaintext> masks;
  const ckks::Encoder encoder(ops.context());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto [rv, cv] = valid(i);
    if (rv == grid.rows && cv == columns) continue;
    const auto key = std::make_tuple(rv, cv, a.at(i).level.value);
    if (masks.contains(key)) continue;
    std::vector<double> values(slots, 0.0);
    for (std::size_t r = 0; r < rv; ++r) {
      std::fill_n(values.begin() + static_cast<std::ptrdiff_t>(r * columns), cv, c);
    }
    masks.emplace(key, encoder.encode(std::span<const double>(values), a.at(i).level, scale));
  }
  return map1_indexed<Ct>(a, [&](std::size_t i, const Ct& x) {
    Ct y = x;
    const auto [rv, cv] = valid(i);
    if (rv == grid.rows && cv == columns) {
      ops.evaluator().multiply_constant_inplace(y, c, scale);
    } else {
      ops.evaluator().multiply_plain_inplace(y, masks.at(std::make_tuple(rv, cv, x.level.value)));
    }
    return y;
  });
}

CtArray add_const(const Ops& ops, const CtArray& a, double c) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().add_constant_inplace(y, c);
    return y;
  });
}

CtArray add_const_complex(const Ops& ops, const CtArray& a, double c) {
  return map1<Ct>(a, [&](const Ct& x) {
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
  return map1<Ct>(a, [&](const Ct& x) {
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
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y;  // written by the rescale (no copy of x first)
    ops.evaluator().rescale(x, y);
    return y;
  });
}

CtArray level_down(const Ops& ops, const CtArray& a, int level) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().drop_to_level_inplace(y, ckks::Level(level));
    return y;
  });
}

CtArray rotate(const Ops& ops, const CtArray& a, int offset) {
  return map1<Ct>(a, [&](const Ct& x) {
    Ct y;  // written by the rotation (no copy of x first)
    ops.evaluator().rotate(x, offset, ops.galois_keys(), y);
    return y;
  });
}

namespace {
// Per index of the array without its block axis: the blocks added up, then `fold` (the slot
// sum of one ciphertext) applied to the total.
template <class Fold>
CtArray sum_blocks_then(const CtArray& a, const Fold& fold) {
  if (a.shape.empty()) throw std::logic_error("sum_slots of an array without a block axis");
  const std::size_t blocks = a.shape.back();
  const std::vector<std::size_t> out_shape(a.shape.begin(), a.shape.end() - 1);
  const std::size_t count = product(out_shape);
  std::vector<Ct> out(count);
  parallel_rows(count, default_threads(), [&](std::size_t i, int) {
    Ct acc = a.at(i * blocks);
    for (std::size_t b = 1; b < blocks; ++b) fold.add(acc, a.at(i * blocks + b));
    out[i] = fold(std::move(acc));
  });
  return make_array(out_shape, std::move(out));
}
}  // namespace

CtArray sum_slots(const Ops& ops, const CtArray& a) {
  struct Tree {
    const Ops& ops;
    void add(Ct& acc, const Ct& x) const { ops.evaluator().add_inplace(acc, x); }
    Ct operator()(Ct acc) const {
      for (std::size_t offset = 1; offset < ops.slots(); offset <<= 1) {
        Ct rotated = acc;
        ops.evaluator().rotate_inplace(rotated, static_cast<int>(offset), ops.galois_keys());
        ops.evaluator().add_inplace(acc, rotated);
      }
      return acc;
    }
  };
  return sum_blocks_then(a, Tree{ops});
}

CtArray sum_slots_staged(const Ops& ops, const CtArray& a, const std::vector<int>& radices) {
  std::size_t covered = 1;
  for (int r : radices) {
    if (r < 2) throw std::logic_error("sum_slots_staged: radix " + std::to_string(r) + " < 2");
    covered *= static_cast<std::size_t>(r);
  }
  if (covered != ops.slots()) {
    throw std::logic_error("sum_slots_staged: the radices cover " + std::to_string(covered) +
                           " slots, the ring has " + std::to_string(ops.slots()));
  }
  struct Staged {
    const Ops& ops;
    std::vector<std::vector<int>> stages;  // the rotation steps of each stage
    void add(Ct& acc, const Ct& x) const { ops.evaluator().add_inplace(acc, x); }
    Ct operator()(Ct acc) const {
      for (const std::vector<int>& steps : stages) {
        acc = ops.evaluator().rotate_sum_hoisted(acc, steps, ops.galois_keys());
      }
      return acc;
    }
  };
  Staged staged{ops, {}};
  int stride = 1;
  for (int r : radices) {
    std::vector<int> steps;
    for (int t = 0; t < r; ++t) steps.push_back(t * stride);
    staged.stages.push_back(std::move(steps));
    stride *= r;
  }
  return sum_blocks_then(a, staged);
}

CtArray fold_grid_rows(const Ops& ops, const CtArray& a, std::size_t rows) {
  const std::size_t slots = ops.slots();
  if (rows == 0 || (rows & (rows - 1)) != 0 || slots % rows != 0) {
    throw std::logic_error("fold_grid_rows: " + std::to_string(rows) +
                           " grid rows are not a power of two dividing " + std::to_string(slots) +
                           " slots");
  }
  return map1<Ct>(a, [&](const Ct& x) {
    Ct acc = x;
    for (std::size_t stride = slots / rows; stride < slots; stride <<= 1) {
      Ct rotated = acc;
      ops.evaluator().rotate_inplace(rotated, static_cast<int>(stride), ops.galois_keys());
      ops.evaluator().add_inplace(acc, rotated);
    }
    return acc;
  });
}

CtArray replicate_period(const Ops& ops, const CtArray& a, std::size_t period) {
  const std::size_t slots = ops.slots();
  if (period == 0 || (period & (period - 1)) != 0 || slots % period != 0 || a.size() != 1) {
    throw std::logic_error("replicate_period: one ciphertext and a period of " +
                           std::to_string(period) + " dividing " + std::to_string(slots) +
                           " slots (a power of two) are needed");
  }
  return map1<Ct>(a, [&](const Ct& x) {
    Ct acc = x;
    for (std::size_t step = period; step < slots; step <<= 1) {
      Ct rotated = acc;
      ops.evaluator().rotate_inplace(rotated, static_cast<int>(slots - step), ops.galois_keys());
      ops.evaluator().add_inplace(acc, rotated);
    }
    return acc;
  });
}

CtArray sum_grid_rows(const Ops& ops, const CtArray& a, std::size_t axis, std::size_t rows) {
  return fold_grid_rows(ops, reduce(ops, a, axis), rows);
}

CtArray diag_matvec(const Ops& ops, const CtArray& m, const CtArray& v,
                    const DiagonalLayout& diagonal) {
  const std::size_t count = diagonal.count(), baby = diagonal.baby, slots = ops.slots();
  const std::size_t period = diagonal.period();
  if (baby == 0 || count % baby != 0 || period > slots || slots % period != 0) {
    throw std::logic_error("diag_matvec: diagonal<" + std::to_string(diagonal.rows) + ", " +
                           std::to_string(diagonal.cols) + ", " + std::to_string(baby) +
                           "> is not a layout of " + std::to_string(slots) + " slots");
  }
  if (m.shape != std::vector<std::size_t>{count} || v.shape != std::vector<std::size_t>{1}) {
    throw std::logic_error("diag_matvec: a matrix of " + std::to_string(count) +
                           " diagonals and a vector of one ciphertext expected, got " +
                           format_shape(m.shape) + " and " + format_shape(v.shape));
  }
  const auto& ev = ops.evaluator();
  const Ct& x = v.at(0);
  // Baby steps: rot(v, k) for k = 0 .. b-1 from one digit decomposition of v (0: a copy).
  std::vector<Ct> babies;
  if (baby > 1) {
    std::vector<int> steps(baby);
    for (std::size_t k = 0; k < baby; ++k) steps[k] = static_cast<int>(k);
    babies = ev.rotate_hoisted(x, steps, ops.galois_keys());
  } else {
    babies.push_back(x);
  }
  // Giant groups: the b products summed at degree 2 (fused), relinearized once, rotated by g b
  // into place (the owner pre-rotated the group's diagonals by -g b).
  const std::size_t giants = count / baby;
  std::vector<Ct> groups(giants);
  parallel_rows(giants, default_threads(), [&](std::size_t g, int) {
    ckks::DotAccumulator acc(ops.context(), x.level);
    for (std::size_t k = 0; k < baby; ++k) acc.add_product(m.at(g * baby + k), babies[k]);
    Ct y = acc.finish();
    ev.relinearize_inplace(y, ops.relin_key());
    if (g > 0) ev.rotate_inplace(y, static_cast<int>(g * baby), ops.galois_keys());
    groups[g] = std::move(y);
  });
  Ct total = std::move(groups[0]);
  for (std::size_t g = 1; g < giants; ++g) ev.add_inplace(total, groups[g]);
  // A wide matrix (P < Q): row r's partial sums lie at the slots r + t P, t < Q / P.
  for (std::size_t stride = diagonal.rows; stride < diagonal.cols; stride <<= 1) {
    Ct rotated = total;
    ev.rotate_inplace(rotated, static_cast<int>(stride), ops.galois_keys());
    ev.add_inplace(total, rotated);
  }
  std::vector<Ct> out;
  out.push_back(std::move(total));
  return make_array({1}, std::move(out));
}

CtArray reduce(const Ops& ops, const CtArray& a, std::size_t axis) {
  const AxisSplit s = split_axis(a.shape, axis);
  std::vector<Ct> out(s.outer * s.inner);
  for (std::size_t o = 0; o < s.outer; ++o) {
    for (std::size_t i = 0; i < s.inner; ++i) {
      std::vector<Ct> terms;
      terms.reserve(s.len);
      for (std::size_t k = 0; k < s.len; ++k) terms.push_back(a.at((o * s.len + k) * s.inner + i));
      out[o * s.inner + i] = ckks::sum_tree(ops.evaluator(), terms);
    }
  }
  return make_array(without_axis(a.shape, axis), std::move(out));
}

CtArray dot(const Ops& ops, const CtArray& a, const CtArray& b, std::size_t axis) {
  check_same_shape_of("dot", a.shape, b.shape);
  const AxisSplit s = split_axis(a.shape, axis);
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
  return make_array(without_axis(a.shape, axis), std::move(out));
}

CtArray broadcast_both_parts(const Ops& ops, const CtArray& a, const std::vector<std::size_t>& dims,
                             const std::vector<std::size_t>& shape) {
  const CtArray both = map1<Ct>(a, [&](const Ct& x) {
    Ct y = x;
    ops.evaluator().multiply_by_i_inplace(y);
    ops.evaluator().add_inplace(y, x);
    return y;
  });
  return broadcast(both, dims, shape, true);
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

DotSink::DotSink(const Ops& ops, int level, int threads)
    : ops_(ops), level_(level), pending_(static_cast<std::size_t>(threads)) {}

void DotSink::add(int thread, const CtArray& a, const CtArray& b) {
  check_same_shape_of("dot over rows", a.shape, b.shape);
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

// ------------------------------------------------------------------------------------------
// The binding
// ------------------------------------------------------------------------------------------

CkksScheme::ContextPtr CkksScheme::make_context(const ProgramSpec& spec) {
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

core::KeyId CkksScheme::make_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                  const std::filesystem::path& dir, OutputSet& outputs) {
  ckks::KeyGenerator gen(ctx);
  const auto sk = gen.secret_key();
  const auto pk = gen.public_key(sk);
  ckks::save(dir / "secret", *ctx, sk);
  outputs.add(dir / "secret");
  ckks::save(dir / "public", *ctx, pk);
  outputs.add(dir / "public");
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
  return sk.key_id;
}

CkksScheme::Encoder::Encoder(const ContextPtr& ctx, const std::filesystem::path& pk_path,
                             const core::KeyId& id)
    : ctx_(ctx),
      pk_(ckks::load_public_key(pk_path, *ctx, id)),
      encryptor_(ctx, pk_),
      encoder_(ctx) {}

std::uint64_t CkksScheme::Encoder::record_bytes(const InputSpec& in) const {
  // level, scale, degree, then c_0 and c_1, packed (ckks/io.h)
  return ckks::CiphertextArrayWriter::record_bytes(*ctx_, ckks::Level(in.level), 1);
}

void CkksScheme::Encoder::encrypt_row(const RowToEncrypt& row, Ct* out) {
  const InputSpec& in = row.in;
  const ckks::Level level(in.level);
  const double scale = std::exp2(in.log_scale);
  const std::size_t slots = ctx_->slots();
  const std::size_t per_row = product(row.local_arr);
  if (in.layout == Layout::kCoeff) {
    std::vector<ckks::Plaintext> pts;
    encode_coeff_row(*ctx_, in, row.owner_row, row.row, row.local.back(), scale, pts);
    for (std::size_t i = 0; i < per_row; ++i) out[i] = encryptor_.encrypt(pts[i]);
    return;
  }
  const double* x = row.values;
  if (in.layout == Layout::kDiagonal || in.layout == Layout::kCyclic) {
    // Whole arrays only (never streamed): each element at its slot(s), spec.h.
    const auto cts =
        in.layout == Layout::kDiagonal
            ? diagonal_slots(in.diagonal, row.local.at(0), row.local.at(1), x, slots)
            : std::vector<std::vector<double>>{cyclic_slots(in.period, row.local.at(0), x, slots)};
    if (cts.size() != per_row) {
      throw std::logic_error("input '" + in.id + "': " + std::to_string(cts.size()) +
                             " ciphertexts for an array of " + std::to_string(per_row));
    }
    for (std::size_t i = 0; i < per_row; ++i) {
      out[i] = encryptor_.encrypt(encoder_.encode(std::span<const double>(cts[i]), level, scale,
                                                  nullptr, encoder_.fresh_noise_tolerance()));
    }
    return;
  }
  if (in.layout == Layout::kGrid) {
    // Each element at its ciphertext and slot (spec.h), copied to every replica: every grid
    // row when no axis is on the rows, every column when none is on the columns.
    const GridLayout& grid = in.grid;
    const std::size_t columns = grid.columns(slots);
    const bool on_rows = grid.axis(GridRole::kRow) >= 0, on_cols = grid.axis(GridRole::kCol) >= 0;
    std::vector<std::vector<double>> cts(per_row, std::vector<double>(slots, 0.0));
    const std::size_t count = product(row.local);
    for (std::size_t e = 0; e < count; ++e) {
      const GridPlace at = grid_place(grid, row.local, slots, e);
      std::vector<double>& v = cts.at(at.ct);
      const std::size_t r0 = at.slot / columns, c0 = at.slot % columns;
      for (std::size_t r = on_rows ? r0 : 0; r < (on_rows ? r0 + 1 : grid.rows); ++r) {
        for (std::size_t c = on_cols ? c0 : 0; c < (on_cols ? c0 + 1 : columns); ++c) {
          v[r * columns + c] = x[e];
        }
      }
    }
    for (std::size_t i = 0; i < per_row; ++i) {
      out[i] = encryptor_.encrypt(encoder_.encode(std::span<const double>(cts[i]), level, scale,
                                                  nullptr, encoder_.fresh_noise_tolerance()));
    }
    return;
  }
  if (in.layout == Layout::kReplicated) {
    for (std::size_t i = 0; i < per_row; ++i) {
      out[i] = encryptor_.encrypt(encoder_.encode_constant(x[i], level, scale));
    }
    return;
  }
  const std::size_t width = row.local.back();
  const std::size_t blocks = row.local_arr.back();
  const std::size_t lead = per_row / blocks;
  if (in.layout == Layout::kComplex) {
    // Pair b: columns of block 2b in the real parts, of block 2b + 1 in the imaginary ones.
    std::vector<std::complex<double>> z(slots);
    for (std::size_t l = 0; l < lead; ++l) {
      const double* r = x + l * width;
      for (std::size_t b = 0; b < blocks; ++b) {
        for (std::size_t s = 0; s < slots; ++s) {
          const std::size_t re = 2 * b * slots + s, im = re + slots;
          z[s] = {re < width ? r[re] : 0.0, im < width ? r[im] : 0.0};
        }
        out[l * blocks + b] = encryptor_.encrypt(
            encoder_.encode(z, level, scale, nullptr, encoder_.fresh_noise_tolerance()));
      }
    }
    return;
  }
  for (std::size_t l = 0; l < lead; ++l) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t lo = b * slots, hi = std::min(width, lo + slots);
      std::span<const double> values(x + l * width + lo, hi - lo);
      out[l * blocks + b] = encryptor_.encrypt(
          encoder_.encode(values, level, scale, nullptr, encoder_.fresh_noise_tolerance()));
    }
  }
}

void CkksScheme::save_array(const std::filesystem::path& path, const Context& ctx,
                            const core::KeyId&, const std::vector<const Ct*>& cts) {
  ckks::save(path, ctx, cts);
}

std::vector<CkksScheme::Ct> CkksScheme::load_array(const std::filesystem::path& path,
                                                   const Context& ctx, const core::KeyId& key_id,
                                                   const std::optional<core::Checksum>& content) {
  return ckks::load_ciphertexts(path, ctx, key_id, content);
}

CkksScheme::EvalKeys CkksScheme::load_eval_keys(const ProgramSpec& spec, const ContextPtr& ctx,
                                                const std::filesystem::path& eval_dir,
                                                const core::KeyId& key_id) {
  EvalKeys keys;
  if (spec.relinearizes) keys.relin = ckks::load_relin_key(eval_dir / "relin", *ctx, key_id);
  if (!spec.rotations.empty() || spec.conjugates) {
    keys.galois = ckks::load_galois_keys(eval_dir / "galois", *ctx, key_id);
  }
  return keys;
}

Ops CkksScheme::make_ops(const ContextPtr& ctx, const EvalKeys& keys) {
  return Ops(ctx, keys.relin ? &*keys.relin : nullptr, keys.galois ? &*keys.galois : nullptr);
}

CkksScheme::Decoder::Decoder(const ContextPtr& ctx, const std::filesystem::path& sk_path)
    : ctx_(ctx), sk_(ckks::load_secret_key(sk_path, *ctx)), decryptor_(ctx, sk_), encoder_(ctx) {}

std::vector<double> CkksScheme::Decoder::decrypt_output(
    const OutputSpec& o, const std::string& file, std::vector<std::size_t>& dims,
    const std::vector<std::size_t>& arr, double factor,
    const std::function<std::vector<Ct>()>& load) {
  std::vector<double> values;
  if (o.layout == Layout::kCoeff) {  // packed counts: every digit of the file decoded once
    auto found = coeff_digits_.find(file);
    if (found == coeff_digits_.end()) {
      const auto cts = load();
      std::vector<ckks::Plaintext> phases(cts.size());
      parallel_rows(cts.size(), default_threads(),
                    [&](std::size_t i, int) { phases[i] = decryptor_.decrypt(cts[i]); });
      found =
          coeff_digits_.emplace(file, decode_coeff(*ctx_, o.packing, phases, dims.back())).first;
    }
    values = found->second.at(static_cast<std::size_t>(o.digit));
    if (o.packing.digits.at(static_cast<std::size_t>(o.digit)).per_row) dims.clear();
    return values;
  }
  if (o.layout == Layout::kDiagonal) {
    throw std::logic_error("output '" + o.name + "': a diagonal array is not decrypted");
  }
  // kCyclic: one ciphertext, elements 0..K-1 in slots 0..K-1: read as a packed block below.
  const auto cts = load();
  values.assign(product(dims), 0.0);
  const std::size_t slots = ctx_->slots();
  const double flood_sigma = flooding ? o.flood_sigma : 0.0;
  if (o.layout == Layout::kGrid) {  // every ciphertext decoded, then each element read at its slot
    std::vector<std::vector<double>> decoded(cts.size());
    parallel_rows(cts.size(), default_threads(), [&](std::size_t i, int) {
      ckks::Plaintext phase = decryptor_.decrypt(cts[i]);
      auto slots_i = encoder_.decode(phase);
      core::wipe(phase.data);
      if (flood_sigma > 0.0) {
        math::Prng prng;
        ckks::flood_slots(slots_i.values, flood_sigma, prng);
      }
      decoded[i].resize(slots);
      for (std::size_t s = 0; s < slots; ++s) decoded[i][s] = slots_i.values[s].real();
    });
    for (std::size_t e = 0; e < values.size(); ++e) {
      const GridPlace at = grid_place(o.grid, dims, slots, e);
      values[e] = decoded.at(at.ct)[at.slot] * factor;
    }
    return values;
  }
  parallel_rows(cts.size(), default_threads(), [&](std::size_t i, int) {
    ckks::Plaintext phase = decryptor_.decrypt(cts[i]);  // Delta m + e
    auto decoded = encoder_.decode(phase);
    core::wipe(phase.data);
    if (flood_sigma > 0.0) {  // before any value leaves: the decoded e is never revealed
      math::Prng prng;        // one generator per ciphertext (thread safety), seeded by the OS
      ckks::flood_slots(decoded.values, flood_sigma, prng);
    }
    if (o.layout == Layout::kReplicated) {
      values[i] = decoded.values[0].real() * factor;
      return;
    }
    const std::size_t width = dims.back(), blocks = arr.back();
    const std::size_t lead = i / blocks, b = i % blocks;
    if (o.layout == Layout::kComplex) {  // the coordinator splits the complex slots
      for (std::size_t s = 0; s < slots; ++s) {
        const std::size_t re = 2 * b * slots + s, im = re + slots;
        if (re < width) values[lead * width + re] = decoded.values[s].real() * factor;
        if (im < width) values[lead * width + im] = decoded.values[s].imag() * factor;
      }
      return;
    }
    for (std::size_t s = 0; s < slots && b * slots + s < width; ++s) {
      values[lead * width + b * slots + s] = decoded.values[s].real() * factor;
    }
  });
  return values;
}

int run_main(const ProgramSpec& spec, ComputeFn compute_fn, int argc, const char* const* argv) {
  return roles::run_roles<CkksScheme>(spec, compute_fn, argc, argv);
}

}  // namespace hec::program
