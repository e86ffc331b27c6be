// Array kernels: fused dot products with lazy 128-bit accumulation, array sums, elementwise
// operations, parallel over arrays (see kernels.h).
#include "ckks/kernels.h"

#include <cmath>
#include <stdexcept>

#include "ckks/context_impl.h"
#include "ckks/poly_ops.h"
#include "math/parallel.h"

namespace hec::ckks {
namespace {

using math::u128;

// Pairs that can be added to a 128-bit sum before reducing: each Karatsuba term is below
// 4 q^2 and the reduced carry below q.
std::size_t flush_interval(const Context::Impl& impl, std::size_t limbs) {
  u64 q_max = 0;
  for (std::size_t i = 0; i < limbs; ++i) q_max = std::max(q_max, impl.moduli[i].value());
  const u128 term = static_cast<u128>(4) * q_max * q_max;
  const u128 all = ~static_cast<u128>(0);
  const u128 k = all / term - 1;
  return static_cast<std::size_t>(std::min<u128>(k, 1u << 20));
}

// Coefficient block of the tiled dot product: 3 accumulators of 16 bytes per coefficient
// (384 KiB at 8192: L2), each pair read as 4 runs of block * 8 bytes. Long runs matter more
// than small accumulators: every run starts on a page the TLB has not seen (1,000 pairs touch
// 4,000+ pages a block). Measured at N = 2^13, 3 limbs, 1,000 pairs, one thread (the bench's
// fused-dot row, median CPU ms, 3 alternating runs, load 3-4): block 512 103-128, 1024 86-90,
// 2048 73-93, 4096 65-77, 8192 58-60.
constexpr std::size_t kDotBlock = 8192;

// The block for n coefficients and `limbs` limbs: kDotBlock, halved (down to 1024) until
// there are at least two tasks per thread.
std::size_t dot_block(std::size_t n, std::size_t limbs) {
  std::size_t block = std::min(kDotBlock, n);
  const std::size_t want = 2 * static_cast<std::size_t>(std::max(1, math::thread_cap()));
  while (block > 1024 && limbs * (n / block) < want) block /= 2;
  return block;
}

std::string lvl(Level l) { return std::to_string(l.value); }

void check_dot_operand(const Context& ctx, const Ciphertext& a, Level level, const char* where) {
  const std::size_t limbs = ctx.params().limbs_at(level);
  if (a.level != level || a.limbs != limbs || a.n != ctx.n() || a.degree != 1 ||
      a.data.size() != 2 * limbs * a.n) {
    throw std::invalid_argument(std::string(where) + ": operand at level " + lvl(a.level) +
                                " of degree " + std::to_string(a.degree) + ", expected level " +
                                lvl(level) + " and degree 1");
  }
}

}  // namespace

struct DotAccumulator::State {
  ContextPtr ctx;
  Level level{0};
  std::size_t limbs = 0, n = 0;
  int kind = 0;  // 0 empty, 3: ct x ct (c0, c2, mid), 2: ct x pt (c0, c1)
  std::size_t count = 0, pending = 0, flush_every = 1;
  double scale = 0;
  core::KeyId key_id{};
  std::vector<u128> acc;  // kind * limbs * n

  void reduce_all() {
    const Context::Impl& impl = ctx->impl();
    math::parallel_for(limbs, [&](std::size_t i) {
      const math::Modulus& m = impl.moduli[i];
      for (int k = 0; k < kind; ++k) {
        u128* s = acc.data() + (static_cast<std::size_t>(k) * limbs + i) * n;
        for (std::size_t t = 0; t < n; ++t) s[t] = math::barrett_reduce_128(s[t], m);
      }
    });
    pending = 0;
  }
  void start(int k, double s, const core::KeyId& id) {
    kind = k;
    scale = s;
    key_id = id;
    acc.assign(static_cast<std::size_t>(kind) * limbs * n, 0);
  }
  void check_next(int k, double s, const core::KeyId& id, const char* where) {
    if (kind == 0) {
      start(k, s, id);
      return;
    }
    if (kind != k) {
      throw std::invalid_argument(std::string(where) +
                                  ": cannot mix ciphertext and plaintext products");
    }
    if (id != key_id) throw std::invalid_argument(std::string(where) + ": key ids differ");
    if (std::fabs(s - scale) > 1e-9 * scale) {
      throw std::invalid_argument(std::string(where) + ": product scale " + std::to_string(s) +
                                  " differs from the accumulator's " + std::to_string(scale));
    }
  }
};

DotAccumulator::DotAccumulator(ContextPtr context, Level level) : state_(new State) {
  state_->limbs = context->params().limbs_at(level);
  state_->n = context->n();
  state_->level = level;
  state_->flush_every = flush_interval(context->impl(), state_->limbs);
  state_->ctx = std::move(context);
}
DotAccumulator::~DotAccumulator() = default;
DotAccumulator::DotAccumulator(DotAccumulator&&) noexcept = default;
DotAccumulator& DotAccumulator::operator=(DotAccumulator&&) noexcept = default;

std::size_t DotAccumulator::count() const { return state_->count; }

void DotAccumulator::add_product(const Ciphertext& a, const Ciphertext& b) {
  State& s = *state_;
  check_dot_operand(*s.ctx, a, s.level, "DotAccumulator::add_product");
  check_dot_operand(*s.ctx, b, s.level, "DotAccumulator::add_product");
  if (a.key_id != b.key_id) {
    throw std::invalid_argument("DotAccumulator::add_product: key ids differ");
  }
  s.check_next(3, a.scale * b.scale, a.key_id, "DotAccumulator::add_product");
  if (s.pending + 1 > s.flush_every) s.reduce_all();
  const std::size_t n = s.n, limbs = s.limbs;
  math::parallel_for(limbs, [&](std::size_t i) {
    const u64 *a0 = a.limb(0, i), *a1 = a.limb(1, i), *b0 = b.limb(0, i), *b1 = b.limb(1, i);
    u128* s0 = s.acc.data() + i * n;
    u128* s2 = s.acc.data() + (limbs + i) * n;
    u128* sm = s.acc.data() + (2 * limbs + i) * n;
    for (std::size_t t = 0; t < n; ++t) {
      s0[t] += static_cast<u128>(a0[t]) * b0[t];
      s2[t] += static_cast<u128>(a1[t]) * b1[t];
      sm[t] += static_cast<u128>(a0[t] + a1[t]) * (b0[t] + b1[t]);
    }
  });
  ++s.pending;
  ++s.count;
}

namespace {
constexpr std::size_t kTile = 1024;  // coefficients per tile: 8 KiB per limb of one operand
}  // namespace

void check_dot_batch(const Context& ctx, const Ciphertext& acc,
                     std::span<const Ciphertext* const> a, std::span<const Ciphertext* const> b) {
  const char* where = "dot batch";
  if (a.size() != b.size()) {
    throw std::invalid_argument(std::string(where) + ": " + std::to_string(a.size()) +
                                " left and " + std::to_string(b.size()) + " right operands");
  }
  if (acc.degree != 2 || acc.n != ctx.n() ||
      acc.data.size() != 3 * ctx.params().limbs_at(acc.level) * acc.n) {
    throw std::invalid_argument(std::string(where) + ": the accumulator must be of degree 2");
  }
  for (std::size_t k = 0; k < a.size(); ++k) {
    check_dot_operand(ctx, *a[k], acc.level, where);
    check_dot_operand(ctx, *b[k], acc.level, where);
    if (a[k]->key_id != acc.key_id || b[k]->key_id != acc.key_id) {
      throw std::invalid_argument(std::string(where) + ": key ids differ");
    }
    const double s = a[k]->scale * b[k]->scale;
    if (std::fabs(s - acc.scale) > 1e-9 * acc.scale) {
      throw std::invalid_argument(std::string(where) + ": product scale " + std::to_string(s) +
                                  " differs from the accumulator's " + std::to_string(acc.scale));
    }
  }
}

std::size_t dot_batch_units(const Ciphertext& acc) {
  return acc.limbs * ((acc.n + kTile - 1) / kTile);
}

void dot_batch_unit(const Context& ctx, Ciphertext& acc, std::span<const Ciphertext* const> a,
                    std::span<const Ciphertext* const> b, std::size_t unit) {
  const std::size_t terms = a.size();
  if (terms == 0) return;
  const std::size_t n = acc.n, tiles = (n + kTile - 1) / kTile;
  const std::size_t i = unit / tiles, off = (unit % tiles) * kTile;
  const std::size_t len = std::min(kTile, n - off);
  const math::Modulus& m = ctx.impl().moduli[i];
  std::vector<const u64*> xs(2 * terms), ys(2 * terms);
  u64 d[kTile];
  // d0 = sum a0 b0 into polynomial 0, d2 = sum a1 b1 into 2, d1 = sum a0 b1 + a1 b0 into 1.
  for (std::size_t k = 0; k < terms; ++k) {
    xs[k] = a[k]->limb(0, i) + off;
    ys[k] = b[k]->limb(0, i) + off;
  }
  detail::mul_acc_limbs(d, xs.data(), ys.data(), terms, len, m);
  detail::add_limb(acc.limb(0, i) + off, d, len, m.value());
  for (std::size_t k = 0; k < terms; ++k) {
    xs[k] = a[k]->limb(1, i) + off;
    ys[k] = b[k]->limb(1, i) + off;
  }
  detail::mul_acc_limbs(d, xs.data(), ys.data(), terms, len, m);
  detail::add_limb(acc.limb(2, i) + off, d, len, m.value());
  for (std::size_t k = 0; k < terms; ++k) {
    xs[k] = a[k]->limb(0, i) + off;
    ys[k] = b[k]->limb(1, i) + off;
    xs[terms + k] = a[k]->limb(1, i) + off;
    ys[terms + k] = b[k]->limb(0, i) + off;
  }
  detail::mul_acc_limbs(d, xs.data(), ys.data(), 2 * terms, len, m);
  detail::add_limb(acc.limb(1, i) + off, d, len, m.value());
}

void check_sum_batch(const Context& ctx, const Ciphertext& acc,
                     std::span<const Ciphertext* const> xs) {
  for (const Ciphertext* x : xs) {
    if (x->level != acc.level || x->degree != acc.degree || x->n != ctx.n() ||
        x->limbs != acc.limbs || x->data.size() != acc.data.size()) {
      throw std::invalid_argument("sum batch: operand at level " + lvl(x->level) + " degree " +
                                  std::to_string(x->degree) + ", the sum at level " +
                                  lvl(acc.level) + " degree " + std::to_string(acc.degree));
    }
    if (x->key_id != acc.key_id) throw std::invalid_argument("sum batch: key ids differ");
    if (std::fabs(x->scale - acc.scale) > 1e-9 * acc.scale) {
      throw std::invalid_argument("sum batch: scale " + std::to_string(x->scale) +
                                  " differs from the sum's " + std::to_string(acc.scale));
    }
  }
}

std::size_t sum_batch_units(const Ciphertext& acc) {
  return acc.size() * acc.limbs * ((acc.n + kTile - 1) / kTile);
}

void sum_batch_unit(const Context& ctx, Ciphertext& acc, std::span<const Ciphertext* const> xs,
                    std::size_t unit) {
  const std::size_t n = acc.n, limbs = acc.limbs, tiles = (n + kTile - 1) / kTile;
  const std::size_t k = unit / (limbs * tiles), i = (unit / tiles) % limbs;
  const std::size_t off = (unit % tiles) * kTile, len = std::min(kTile, n - off);
  const u64 q = ctx.impl().moduli[i].value();
  u64* dst = acc.limb(k, i) + off;
  for (const Ciphertext* x : xs) detail::add_limb(dst, x->limb(k, i) + off, len, q);
}

void DotAccumulator::add_product(const Ciphertext& a, const Plaintext& b) {
  State& s = *state_;
  check_dot_operand(*s.ctx, a, s.level, "DotAccumulator::add_product");
  if (b.level != s.level || b.limbs != s.limbs || b.n != s.n) {
    throw std::invalid_argument("DotAccumulator::add_product: plaintext level " + lvl(b.level) +
                                ", expected " + lvl(s.level));
  }
  s.check_next(2, a.scale * b.scale, a.key_id, "DotAccumulator::add_product");
  if (s.pending + 1 > s.flush_every) s.reduce_all();
  const std::size_t n = s.n, limbs = s.limbs;
  math::parallel_for(limbs, [&](std::size_t i) {
    const u64 *a0 = a.limb(0, i), *a1 = a.limb(1, i), *p = b.limb(i);
    u128* s0 = s.acc.data() + i * n;
    u128* s1 = s.acc.data() + (limbs + i) * n;
    for (std::size_t t = 0; t < n; ++t) {
      s0[t] += static_cast<u128>(a0[t]) * p[t];
      s1[t] += static_cast<u128>(a1[t]) * p[t];
    }
  });
  ++s.pending;
  ++s.count;
}

void DotAccumulator::merge(DotAccumulator&& other) {
  State& s = *state_;
  State& o = *other.state_;
  if (o.kind == 0) return;
  if (o.ctx != s.ctx || o.level != s.level) {
    throw std::invalid_argument("DotAccumulator::merge: different context or level");
  }
  s.check_next(o.kind, o.scale, o.key_id, "DotAccumulator::merge");
  s.reduce_all();
  o.reduce_all();
  for (std::size_t t = 0; t < s.acc.size(); ++t) s.acc[t] += o.acc[t];
  s.pending = 1;
  s.count += o.count;
  o.kind = 0;
  o.count = 0;
  o.acc.clear();
}

Ciphertext DotAccumulator::finish() {
  State& s = *state_;
  if (s.kind == 0) throw std::invalid_argument("DotAccumulator::finish: no products added");
  const Context::Impl& impl = s.ctx->impl();
  const std::size_t n = s.n, limbs = s.limbs;
  Ciphertext out = s.ctx->make_ciphertext(s.level, s.kind == 3 ? 2 : 1, s.scale);
  out.key_id = s.key_id;
  math::parallel_for(limbs, [&](std::size_t i) {
    const math::Modulus& m = impl.moduli[i];
    const u64 q = m.value();
    if (s.kind == 2) {
      for (int k = 0; k < 2; ++k) {
        const u128* src = s.acc.data() + (static_cast<std::size_t>(k) * limbs + i) * n;
        u64* dst = out.limb(static_cast<std::size_t>(k), i);
        for (std::size_t t = 0; t < n; ++t) dst[t] = math::barrett_reduce_128(src[t], m);
      }
      return;
    }
    const u128* s0 = s.acc.data() + i * n;
    const u128* s2 = s.acc.data() + (limbs + i) * n;
    const u128* sm = s.acc.data() + (2 * limbs + i) * n;
    u64 *c0 = out.limb(0, i), *c1 = out.limb(1, i), *c2 = out.limb(2, i);
    for (std::size_t t = 0; t < n; ++t) {
      c0[t] = math::barrett_reduce_128(s0[t], m);
      c2[t] = math::barrett_reduce_128(s2[t], m);
      const u64 mid = math::barrett_reduce_128(sm[t], m);
      c1[t] = math::sub_mod(math::sub_mod(mid, c0[t], q), c2[t], q);
    }
  });
  s.kind = 0;
  s.count = 0;
  s.pending = 0;
  s.acc.clear();
  return out;
}

Ciphertext dot(const ContextPtr& context, std::span<const Ciphertext> a,
               std::span<const Ciphertext> b) {
  // Tiled over (limb, coefficient block): each tile keeps its three 128-bit accumulators in
  // cache and streams every pair through once.
  if (a.size() != b.size() || a.empty()) {
    throw std::invalid_argument("dot: array lengths " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " (need equal and non-zero)");
  }
  const Level level = a[0].level;
  const double scale = a[0].scale * b[0].scale;
  for (std::size_t p = 0; p < a.size(); ++p) {
    check_dot_operand(*context, a[p], level, "dot");
    check_dot_operand(*context, b[p], level, "dot");
    if (a[p].key_id != a[0].key_id || b[p].key_id != a[0].key_id) {
      throw std::invalid_argument("dot: pair " + std::to_string(p) + " has another key id");
    }
    if (std::fabs(a[p].scale * b[p].scale - scale) > 1e-9 * scale) {
      throw std::invalid_argument("dot: pair " + std::to_string(p) + " has product scale " +
                                  std::to_string(a[p].scale * b[p].scale) + ", pair 0 has " +
                                  std::to_string(scale));
    }
  }
  const Context::Impl& impl = context->impl();
  const std::size_t n = context->n();
  const std::size_t limbs = a[0].limbs;
  const std::size_t flush = flush_interval(impl, limbs);
  Ciphertext out = context->make_ciphertext(level, 2, scale);
  out.key_id = a[0].key_id;
  const std::size_t block = dot_block(n, limbs);
  const std::size_t blocks = n / block;
  math::parallel_for(limbs * blocks, [&](std::size_t task) {
    const std::size_t i = task / blocks;
    const std::size_t t0 = (task % blocks) * block;
    const math::Modulus& m = impl.moduli[i];
    const u64 q = m.value();
    thread_local std::vector<u128> sums;
    sums.assign(3 * block, 0);
    u128* const s0 = sums.data();
    u128* const s2 = s0 + block;
    u128* const sm = s2 + block;
    std::size_t pending = 0;
    for (std::size_t p = 0; p < a.size(); ++p) {
      if (pending == flush) {
        for (std::size_t t = 0; t < block; ++t) {
          s0[t] = math::barrett_reduce_128(s0[t], m);
          s2[t] = math::barrett_reduce_128(s2[t], m);
          sm[t] = math::barrett_reduce_128(sm[t], m);
        }
        pending = 0;
      }
      const u64* a0 = a[p].limb(0, i) + t0;
      const u64* a1 = a[p].limb(1, i) + t0;
      const u64* b0 = b[p].limb(0, i) + t0;
      const u64* b1 = b[p].limb(1, i) + t0;
      for (std::size_t t = 0; t < block; ++t) {
        s0[t] += static_cast<u128>(a0[t]) * b0[t];
        s2[t] += static_cast<u128>(a1[t]) * b1[t];
        sm[t] += static_cast<u128>(a0[t] + a1[t]) * (b0[t] + b1[t]);
      }
      ++pending;
    }
    u64* c0 = out.limb(0, i) + t0;
    u64* c1 = out.limb(1, i) + t0;
    u64* c2 = out.limb(2, i) + t0;
    for (std::size_t t = 0; t < block; ++t) {
      c0[t] = math::barrett_reduce_128(s0[t], m);
      c2[t] = math::barrett_reduce_128(s2[t], m);
      const u64 mid = math::barrett_reduce_128(sm[t], m);
      c1[t] = math::sub_mod(math::sub_mod(mid, c0[t], q), c2[t], q);
    }
  });
  return out;
}

Ciphertext dot_plain(const ContextPtr& context, std::span<const Ciphertext> a,
                     std::span<const Plaintext> b) {
  if (a.size() != b.size() || a.empty()) {
    throw std::invalid_argument("dot_plain: array lengths " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " (need equal and non-zero)");
  }
  DotAccumulator acc(context, a[0].level);
  for (std::size_t p = 0; p < a.size(); ++p) acc.add_product(a[p], b[p]);
  return acc.finish();
}

Ciphertext dot_stream(const ContextPtr& context, Level level, std::size_t count,
                      const std::function<void(std::size_t, Ciphertext&, Ciphertext&)>& pair) {
  if (count == 0) throw std::invalid_argument("dot_stream: count is 0");
  DotAccumulator acc(context, level);
  Ciphertext a, b;
  for (std::size_t p = 0; p < count; ++p) {
    pair(p, a, b);
    acc.add_product(a, b);
  }
  return acc.finish();
}

void parallel_for(std::size_t count, const std::function<void(std::size_t)>& body) {
  math::parallel_for(count, body);
}

Ciphertext sum_tree(const Evaluator& evaluator, std::span<const Ciphertext> values) {
  if (values.empty()) throw std::invalid_argument("sum_tree: empty array");
  const std::size_t chunks =
      std::min<std::size_t>(values.size(), static_cast<std::size_t>(math::thread_cap()));
  std::vector<Ciphertext> partial(chunks);
  const std::size_t per = (values.size() + chunks - 1) / chunks;
  math::parallel_for(chunks, [&](std::size_t c) {
    const std::size_t begin = c * per, end = std::min(values.size(), begin + per);
    if (begin >= end) return;
    partial[c] = values[begin];
    for (std::size_t i = begin + 1; i < end; ++i) evaluator.add_inplace(partial[c], values[i]);
  });
  // Pairwise layers over the partial sums.
  std::vector<Ciphertext> live;
  for (auto& p : partial) {
    if (!p.data.empty()) live.push_back(std::move(p));
  }
  partial = std::move(live);
  while (partial.size() > 1) {
    const std::size_t half = partial.size() / 2;
    math::parallel_for(
        half, [&](std::size_t i) { evaluator.add_inplace(partial[2 * i], partial[2 * i + 1]); });
    std::vector<Ciphertext> next;
    for (std::size_t i = 0; i < partial.size(); i += 2) next.push_back(std::move(partial[i]));
    partial = std::move(next);
  }
  return std::move(partial[0]);
}

namespace {
void check_lengths(std::size_t a, std::size_t b, const char* where) {
  if (a != b) {
    throw std::invalid_argument(std::string(where) + ": array lengths " + std::to_string(a) +
                                " and " + std::to_string(b) + " differ");
  }
}
}  // namespace

void add_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                     std::span<const Ciphertext> b) {
  check_lengths(a.size(), b.size(), "add_elementwise");
  math::parallel_for(a.size(), [&](std::size_t i) { evaluator.add_inplace(a[i], b[i]); });
}

void sub_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                     std::span<const Ciphertext> b) {
  check_lengths(a.size(), b.size(), "sub_elementwise");
  math::parallel_for(a.size(), [&](std::size_t i) { evaluator.sub_inplace(a[i], b[i]); });
}

std::vector<Ciphertext> multiply_elementwise(const Evaluator& evaluator,
                                             std::span<const Ciphertext> a,
                                             std::span<const Ciphertext> b) {
  check_lengths(a.size(), b.size(), "multiply_elementwise");
  std::vector<Ciphertext> out(a.size());
  math::parallel_for(a.size(), [&](std::size_t i) { out[i] = evaluator.multiply(a[i], b[i]); });
  return out;
}

void multiply_plain_elementwise(const Evaluator& evaluator, std::span<Ciphertext> a,
                                std::span<const Plaintext> b) {
  check_lengths(a.size(), b.size(), "multiply_plain_elementwise");
  math::parallel_for(a.size(),
                     [&](std::size_t i) { evaluator.multiply_plain_inplace(a[i], b[i]); });
}

void relinearize_all(const Evaluator& evaluator, std::span<Ciphertext> a, const RelinKey& key) {
  math::parallel_for(a.size(), [&](std::size_t i) { evaluator.relinearize_inplace(a[i], key); });
}

void rescale_all(const Evaluator& evaluator, std::span<Ciphertext> a) {
  math::parallel_for(a.size(), [&](std::size_t i) { evaluator.rescale_inplace(a[i]); });
}

}  // namespace hec::ckks
