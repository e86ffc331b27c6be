// The scheme-independent array helpers of arrays.h and spec.h's array_shape.
#include "program/arrays.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "program/spec.h"

namespace hec::program {

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

void check_same_shape_of(const char* what, const std::vector<std::size_t>& a,
                         const std::vector<std::size_t>& b) {
  if (a != b) {
    throw std::logic_error(std::string(what) + ": array shapes " + format_shape(a) + " and " +
                           format_shape(b) + " differ");
  }
}

AxisSplit split_axis(const std::vector<std::size_t>& shape, std::size_t axis) {
  if (axis >= shape.size()) throw std::logic_error("axis out of range");
  AxisSplit s{1, shape[axis], 1};
  for (std::size_t i = 0; i < axis; ++i) s.outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) s.inner *= shape[i];
  return s;
}

std::vector<std::size_t> without_axis(const std::vector<std::size_t>& shape, std::size_t axis) {
  std::vector<std::size_t> out = shape;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
  return out;
}

std::vector<std::size_t> broadcast_sources(const std::vector<std::size_t>& operand_shape,
                                           const std::vector<std::size_t>& dims,
                                           const std::vector<std::size_t>& shape,
                                           bool replicated_to_packed) {
  // Operand axis i sits at result axis dims[i]; other result axes repeat it.
  std::vector<std::size_t> source_extent(shape.size(), 1);
  for (std::size_t i = 0; i < dims.size() && i < operand_shape.size(); ++i) {
    source_extent[dims[i]] = operand_shape[i];
  }
  if (replicated_to_packed && !shape.empty()) source_extent.back() = 1;
  if (product(source_extent) != product(operand_shape)) {
    throw std::logic_error("broadcast: operand of array shape " + format_shape(operand_shape) +
                           " does not fit result " + format_shape(shape));
  }
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (source_extent[k] != 1 && source_extent[k] != shape[k]) {
      throw std::logic_error("broadcast: operand array shape " + format_shape(operand_shape) +
                             " cannot stretch to " + format_shape(shape));
    }
  }
  const std::size_t count = product(shape);
  std::vector<std::size_t> out;
  out.reserve(count);
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t flat = 0; flat < count; ++flat) {
    std::size_t src = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      src = src * source_extent[k] + (source_extent[k] == 1 ? 0 : index[k]);
    }
    out.push_back(src);
    for (std::size_t k = shape.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

void RowSink::fold() {
  const std::size_t units = prepare();
  for (std::size_t u = 0; u < units; ++u) fold_unit(u);
  complete();
}

void ChunkSplit::record(double seconds) {
  if (decided_) return;
  if (chunks_++ == 0) {
    decided_ = seconds >= kSureSeconds;
    threads_ = decided_ ? all_ : 1;
    return;
  }
  trials_[threads_ > 1 ? 1 : 0].push_back(seconds);
  if (trials_[0].size() + trials_[1].size() < 2 * kTrials) {
    threads_ = threads_ > 1 ? 1 : all_;
    return;
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  threads_ = median(trials_[1]) < median(trials_[0]) ? all_ : 1;
  decided_ = true;
}

void fold_sinks(const std::vector<RowSink*>& sinks, bool parallel) {
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
  const auto fold = [&](std::size_t j) { sinks[units[j].sink]->fold_unit(units[j].unit); };
  if (parallel) {
    math::parallel_for(units.size(), fold);
  } else {
    for (std::size_t j = 0; j < units.size(); ++j) fold(j);
  }
  for (RowSink* sink : sinks) sink->complete();
}

int GridLayout::axis(GridRole role) const {
  for (std::size_t k = 0; k < roles.size(); ++k) {
    if (roles[k] == role) return static_cast<int>(k);
  }
  return -1;
}

GridLayout GridLayout::without_first() const {
  if (roles.empty()) throw std::logic_error("a grid layout without axes has no first axis");
  return GridLayout{rows, std::vector<GridRole>(roles.begin() + 1, roles.end())};
}

namespace {
// Elements per ciphertext along an axis of this role.
std::size_t grid_per(const GridLayout& grid, GridRole role, std::size_t slots) {
  switch (role) {
    case GridRole::kRow:
      return grid.rows;
    case GridRole::kCol:
      return grid.columns(slots);
    case GridRole::kUnrolled:
      return 1;
  }
  return 1;
}

std::vector<std::size_t> grid_shape(const GridLayout& grid, const std::vector<std::size_t>& dims,
                                    std::size_t slots) {
  if (grid.roles.size() != dims.size()) {
    throw std::logic_error("grid layout: " + std::to_string(grid.roles.size()) + " roles for " +
                           std::to_string(dims.size()) + " axes");
  }
  if (grid.rows == 0 || slots % grid.rows != 0) {
    throw std::logic_error("grid layout: " + std::to_string(grid.rows) + " rows do not divide " +
                           std::to_string(slots) + " slots");
  }
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const std::size_t per = grid_per(grid, grid.roles[k], slots);
    out.push_back((dims[k] + per - 1) / per);
  }
  return out;
}
}  // namespace

GridPlace grid_place(const GridLayout& grid, const std::vector<std::size_t>& dims,
                     std::size_t slots, std::size_t index) {
  const auto arr = grid_shape(grid, dims, slots);
  std::size_t ct = 0, row = 0, col = 0, rest = index;
  std::vector<std::size_t> at(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    at[k] = rest % dims[k];
    rest /= dims[k];
  }
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const std::size_t per = grid_per(grid, grid.roles[k], slots);
    ct = ct * arr[k] + at[k] / per;
    if (grid.roles[k] == GridRole::kRow) row = at[k] % per;
    if (grid.roles[k] == GridRole::kCol) col = at[k] % per;
  }
  return {ct, row * grid.columns(slots) + col};
}

DiagonalPlace diagonal_place(const DiagonalLayout& diagonal, std::size_t row, std::size_t col) {
  const std::size_t p = diagonal.rows, q = diagonal.cols, b = diagonal.baby;
  const std::size_t period = diagonal.period();
  // The slot j < L of diagonal i holding M[row, col]: j = row mod P and j + i = col mod Q.
  // Tall (P >= Q): j = row, i = (col - row) mod Q. Wide (P < Q, P divides Q): j runs over
  // row, row + P, ..., and i = (col - j) mod Q < P picks i = (col - row) mod P, j = col - i.
  std::size_t i = 0, j = 0;
  if (p >= q) {
    j = row;
    i = (col + q - row % q) % q;
  } else {
    i = (col + p - row % p) % p;
    j = (col + q - i) % q;
  }
  return {i, (j + (i / b) * b) % period};
}

std::vector<std::vector<double>> diagonal_slots(const DiagonalLayout& diagonal, std::size_t a,
                                                std::size_t k, const double* values,
                                                std::size_t slots) {
  const std::size_t period = diagonal.period();
  if (a > diagonal.rows || k > diagonal.cols || period > slots || slots % period != 0 ||
      diagonal.baby == 0 || diagonal.count() % diagonal.baby != 0) {
    throw std::invalid_argument(
        "diagonal layout <" + std::to_string(diagonal.rows) + ", " + std::to_string(diagonal.cols) +
        ", " + std::to_string(diagonal.baby) + "> cannot hold a [" + std::to_string(a) + ", " +
        std::to_string(k) + "] matrix in " + std::to_string(slots) + " slots");
  }
  std::vector<std::vector<double>> out(diagonal.count(), std::vector<double>(slots, 0.0));
  for (std::size_t r = 0; r < a; ++r) {
    for (std::size_t c = 0; c < k; ++c) {
      const DiagonalPlace at = diagonal_place(diagonal, r, c);
      std::vector<double>& v = out[at.ct];
      for (std::size_t s = at.slot; s < slots; s += period) v[s] = values[r * k + c];
    }
  }
  return out;
}

std::vector<double> cyclic_slots(std::size_t period, std::size_t k, const double* values,
                                 std::size_t slots) {
  if (period == 0 || k > period || period > slots || slots % period != 0) {
    throw std::invalid_argument("cyclic layout <" + std::to_string(period) +
                                "> cannot hold a vector of " + std::to_string(k) + " in " +
                                std::to_string(slots) + " slots");
  }
  std::vector<double> out(slots, 0.0);
  for (std::size_t s = 0; s < slots; s += period) std::copy_n(values, k, out.begin() + s);
  return out;
}

std::vector<std::size_t> array_shape(Layout layout, const std::vector<std::size_t>& dims,
                                     std::size_t slots, std::size_t group, const GridLayout& grid,
                                     const DiagonalLayout& diagonal) {
  if (layout == Layout::kReplicated) return dims;
  if (layout == Layout::kGrid) return grid_shape(grid, dims, slots);
  if (layout == Layout::kDiagonal) {
    if (dims.size() != 2) throw std::logic_error("a diagonal array is a matrix (two axes)");
    return {diagonal.count()};
  }
  if (layout == Layout::kCyclic) {
    if (dims.size() != 1) throw std::logic_error("a cyclic array is a vector (one axis)");
    return {1};
  }
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

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kPacked:
      return "packed";
    case Layout::kComplex:
      return "complex";
    case Layout::kCoeff:
      return "coeff";
    case Layout::kReplicated:
      return "replicated";
    case Layout::kGrid:
      return "grid";
    case Layout::kDiagonal:
      return "diagonal";
    case Layout::kCyclic:
      return "cyclic";
  }
  return "?";
}

}  // namespace hec::program
