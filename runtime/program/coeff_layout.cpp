// Encoding and exact decoding of the `coeff` layout (see coeff_layout.h).
#include "program/coeff_layout.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ckks/context_impl.h"
#include "core/wipe.h"
#include "math/modarith.h"
#include "math/ntt.h"

namespace hec::program {

namespace {

using u64 = std::uint64_t;
using math::u128;

// Radices of the digits of one coefficient, in order: group x per-element, then per-row.
struct DigitOrder {
  std::vector<u64> radix;
  std::vector<std::size_t> digit;   // index into packing.digits
  std::vector<std::size_t> column;  // column offset within the group (per-element digits)
};

DigitOrder digit_order(const CoeffPacking& p) {
  DigitOrder o;
  for (std::size_t c = 0; c < p.group; ++c) {
    for (std::size_t k = 0; k < p.digits.size(); ++k) {
      if (p.digits[k].per_row) continue;
      o.radix.push_back(p.digits[k].radix);
      o.digit.push_back(k);
      o.column.push_back(c);
    }
  }
  for (std::size_t k = 0; k < p.digits.size(); ++k) {
    if (!p.digits[k].per_row) continue;
    o.radix.push_back(p.digits[k].radix);
    o.digit.push_back(k);
    o.column.push_back(0);
  }
  return o;
}

// Little-endian multiword unsigned integer, just what CRT reconstruction needs.
struct Wide {
  std::vector<u64> w;

  explicit Wide(std::size_t words) : w(words, 0) {}

  // this += a * b
  void add_mul(const Wide& a, u64 b) {
    u128 carry = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const u128 t = static_cast<u128>(a.w[i]) * b + w[i] + carry;
      w[i] = static_cast<u64>(t);
      carry = t >> 64;
    }
  }
  bool less(const Wide& b) const {
    for (std::size_t i = w.size(); i-- > 0;) {
      if (w[i] != b.w[i]) return w[i] < b.w[i];
    }
    return false;
  }
  void sub(const Wide& b) {
    u64 borrow = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const u64 x = w[i], y = b.w[i];
      const u64 d = x - y - borrow;
      borrow = (x < y || (x == y && borrow)) ? 1 : 0;
      w[i] = d;
    }
  }
  void add_pow2(unsigned bit) {
    std::size_t i = bit / 64;
    u64 add = u64{1} << (bit % 64);
    for (; i < w.size() && add; ++i) {
      const u64 s = w[i] + add;
      add = s < w[i] ? 1 : 0;
      w[i] = s;
    }
  }
  void shift_right(unsigned bits) {
    const std::size_t words = bits / 64, r = bits % 64;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::size_t j = i + words;
      u64 lo = j < w.size() ? w[j] : 0;
      const u64 hi = j + 1 < w.size() ? w[j + 1] : 0;
      w[i] = r ? (lo >> r) | (hi << (64 - r)) : lo;
    }
  }
  // Returns this mod d and sets this = floor(this / d).
  u64 divmod(u64 d) {
    u128 rem = 0;
    for (std::size_t i = w.size(); i-- > 0;) {
      const u128 cur = (rem << 64) | w[i];
      w[i] = static_cast<u64>(cur / d);
      rem = cur % d;
    }
    return static_cast<u64>(rem);
  }
  bool is_zero() const {
    return std::all_of(w.begin(), w.end(), [](u64 x) { return x == 0; });
  }
};

}  // namespace

void encode_coeff_row(const ckks::Context& ctx, const InputSpec& in, const OwnerRow& row,
                      std::size_t row_index, std::size_t columns, double scale,
                      std::vector<ckks::Plaintext>& out) {
  const CoeffPacking& p = in.packing;
  const auto& impl = ctx.impl();
  const std::size_t n = impl.n;
  const std::size_t limbs = ctx.params().limbs_at(ckks::Level(0));
  const DigitOrder order = digit_order(p);
  const std::size_t coefs = columns ? (columns + p.group - 1) / p.group : 1;
  const std::size_t count = (coefs + n - 1) / n;
  const int d = static_cast<int>(std::lround(std::log2(scale)));
  // Digits in chunks whose mixed-radix value is exact in 64 bits: chunk j spans digits
  // [start_j, start_{j+1}) and weighs W_{start_j}. Per prime, V 2^d mod q is then
  // sum_j (c_j mod q) (W_{start_j} 2^d mod q): one reduction and one Shoup product per chunk,
  // not one per digit. When V 2^d itself fits below the (single) prime, it is the coefficient.
  const std::size_t T = order.radix.size();
  std::vector<std::size_t> start;
  std::vector<u64> inner;  // per digit: its weight inside its chunk
  u128 in_chunk = 1;
  for (std::size_t t = 0; t < T; ++t) {
    if (t == 0 || in_chunk * order.radix[t] >= (u128{1} << 63)) {
      start.push_back(t);
      in_chunk = 1;
    }
    inner.push_back(static_cast<u64>(in_chunk));
    in_chunk *= order.radix[t];
  }
  start.push_back(T);
  const std::size_t chunks = start.size() - 1;
  bool direct = limbs == 1 && chunks == 1;
  std::vector<std::vector<u64>> weight(limbs), weight_shoup(limbs);
  for (std::size_t i = 0; i < limbs; ++i) {
    const u64 q = impl.moduli[i].value();
    u64 w = math::pow_mod(2, static_cast<u64>(d), impl.moduli[i]);  // W_{start_j} 2^d mod q
    for (std::size_t j = 0; j < chunks; ++j) {
      weight[i].push_back(w);
      weight_shoup[i].push_back(math::shoup_precompute(w, q));
      for (std::size_t t = start[j]; t < start[j + 1]; ++t) {
        w = math::mul_mod(w, order.radix[t] % q, impl.moduli[i]);
      }
    }
  }
  // Every digit's values over the row, computed and checked once: integers in [0, top] (the
  // radix proves only sums of values up to the domain's largest element). They are kept as
  // integers padded to whole coefficients (a per-row digit in coefficient 0 only), so the
  // coefficient loop below has no branch.
  const std::size_t padded = coefs * p.group;
  std::vector<double> buffer(columns ? columns : 1);
  std::vector<std::vector<u64>> value(p.digits.size());
  for (std::size_t k = 0; k < p.digits.size(); ++k) {
    const CoeffDigit& dg = p.digits[k];
    const std::size_t size = dg.per_row ? 1 : columns;
    dg.value(row, size, buffer.data());
    value[k].assign(std::max(padded, std::size_t{1}), 0);
    const double top = static_cast<double>(dg.top);
    for (std::size_t col = 0; col < size; ++col) {
      const double v = buffer[col];
      if (!(v >= 0.0 && v <= top && static_cast<double>(static_cast<u64>(v)) == v)) {
        throw std::runtime_error("row " + std::to_string(row_index) + ", column " +
                                 std::to_string(col) + ": packed count '" + dg.name + "' is " +
                                 std::to_string(v) + ", not an integer in [0, " +
                                 std::to_string(dg.top) + "]");
      }
      value[k][col] = static_cast<u64>(v);
    }
  }
  // Digit t of coefficient g reads value[digit_t][g * group + column_t]; a per-row digit reads
  // index g * group (non-zero for g = 0 only).
  std::vector<const u64*> source(T);
  for (std::size_t t = 0; t < T; ++t) {
    source[t] =
        value[order.digit[t]].data() + (p.digits[order.digit[t]].per_row ? 0 : order.column[t]);
  }
  std::vector<u64> chunk_value(chunks);
  out.resize(count);
  for (std::size_t b = 0; b < count; ++b) {
    ckks::Plaintext& pt = out[b];
    pt = ctx.make_plaintext(ckks::Level(0), scale);
    for (std::size_t i = 0; i < limbs; ++i) std::fill(pt.limb(i), pt.limb(i) + n, 0);
    const std::size_t end = std::min(n, coefs - b * n);
    for (std::size_t s = 0; s < end; ++s) {
      const std::size_t at = (b * n + s) * p.group;
      u64 any = 0;
      for (std::size_t j = 0; j < chunks; ++j) {
        u64 c = 0;
        for (std::size_t t = start[j]; t < start[j + 1]; ++t) c += source[t][at] * inner[t];
        chunk_value[j] = c;
        any |= c;
      }
      if (any == 0) continue;
      if (direct) {  // V 2^d < Q / 2 < 2^61: the coefficient itself
        pt.limb(0)[s] = chunk_value[0] << d;
        continue;
      }
      for (std::size_t i = 0; i < limbs; ++i) {
        const u64 q = impl.moduli[i].value();
        u64 acc = 0;
        for (std::size_t j = 0; j < chunks; ++j) {
          // Shoup's product takes any 64-bit multiplicand: the chunk needs no reduction first.
          acc = math::add_mod(
              acc, math::mul_shoup(chunk_value[j], weight[i][j], weight_shoup[i][j], q), q);
        }
        pt.limb(i)[s] = acc;
      }
    }
    for (std::size_t i = 0; i < limbs; ++i) math::ntt_forward_inplace(pt.limb(i), impl.ntt[i]);
  }
}

std::vector<std::vector<double>> decode_coeff(const ckks::Context& ctx, const CoeffPacking& p,
                                              std::vector<ckks::Plaintext>& phases,
                                              std::size_t columns) {
  const auto& impl = ctx.impl();
  const std::size_t n = impl.n;
  const std::size_t limbs = ctx.params().limbs_at(ckks::Level(0));
  const DigitOrder order = digit_order(p);
  const std::size_t coefs = columns ? (columns + p.group - 1) / p.group : 1;
  std::vector<std::vector<double>> digits(p.digits.size());
  for (std::size_t k = 0; k < p.digits.size(); ++k) {
    digits[k].assign(p.digits[k].per_row ? 1 : columns, 0.0);
  }
  if (phases.empty()) return digits;
  const int d = static_cast<int>(std::lround(std::log2(phases[0].scale)));
  // CRT: x = sum_i [r_i (Q/q_i)^{-1} mod q_i] (Q/q_i) mod Q.
  const std::size_t words = limbs + 1;
  Wide big_q(words);
  big_q.w[0] = 1;
  for (std::size_t i = 0; i < limbs; ++i) {
    Wide t(words);
    t.add_mul(big_q, impl.moduli[i].value());
    big_q = t;
  }
  std::vector<Wide> q_hat;
  std::vector<u64> q_hat_inv(limbs);
  for (std::size_t i = 0; i < limbs; ++i) {
    Wide h(words);
    h.w[0] = 1;
    u64 h_mod = 1;
    for (std::size_t j = 0; j < limbs; ++j) {
      if (j == i) continue;
      Wide t(words);
      t.add_mul(h, impl.moduli[j].value());
      h = t;
      h_mod = math::mul_mod(h_mod, impl.moduli[j].value() % impl.moduli[i].value(), impl.moduli[i]);
    }
    q_hat.push_back(h);
    q_hat_inv[i] = math::inverse_mod(h_mod, impl.moduli[i].value());
  }
  for (auto& pt : phases) {
    for (std::size_t i = 0; i < limbs; ++i) math::ntt_inverse_inplace(pt.limb(i), impl.ntt[i]);
  }
  for (std::size_t g = 0; g < coefs; ++g) {
    const std::size_t b = g / n, s = g % n;
    if (b >= phases.size()) break;
    Wide x(words);
    for (std::size_t i = 0; i < limbs; ++i) {
      const u64 r = math::mul_mod(phases[b].limb(i)[s], q_hat_inv[i], impl.moduli[i]);
      x.add_mul(q_hat[i], r);
    }
    while (!x.less(big_q)) x.sub(big_q);
    // Round: (x + 2^(d-1)) mod Q, then drop d bits (|e| < 2^(d-1), V 2^d < Q / 2).
    if (d > 0) x.add_pow2(static_cast<unsigned>(d - 1));
    if (!x.less(big_q)) x.sub(big_q);
    x.shift_right(static_cast<unsigned>(d));
    for (std::size_t t = 0; t < order.radix.size(); ++t) {
      const u64 v = x.divmod(order.radix[t]);
      const CoeffDigit& dg = p.digits[order.digit[t]];
      if (dg.per_row) {
        if (g == 0) digits[order.digit[t]][0] = static_cast<double>(v);
      } else {
        const std::size_t col = g * p.group + order.column[t];
        if (col < columns) digits[order.digit[t]][col] = static_cast<double>(v);
      }
    }
    if (!x.is_zero()) {
      throw std::runtime_error("coefficient " + std::to_string(g) +
                               " decodes above its packed capacity (wrong keys, or a result "
                               "that is not the sum this program computes)");
    }
  }
  for (auto& pt : phases) core::wipe(pt.data);
  return digits;
}

}  // namespace hec::program
