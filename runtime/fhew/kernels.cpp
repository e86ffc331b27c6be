// Portable versions of the blind-rotation kernels and the run-time dispatch (kernels.h).
#include "fhew/kernels.h"

#include <stdexcept>
#include <string>

#include "math/cpu_features.h"
#include "math/modarith.h"

namespace hec::fhew::kernels {

using math::u128;
using u64 = std::uint64_t;

namespace {

bool use_avx512() { return math::active_kernel_path() == math::KernelPath::kAvx512Ifma; }

// HEC_DEBUG builds check the kernels' input contracts (kernels.h); release builds do not.
void debug_check_residues([[maybe_unused]] const RingConstants& rc, [[maybe_unused]] const u64* x,
                          [[maybe_unused]] std::size_t count, [[maybe_unused]] const char* what) {
#ifdef HEC_DEBUG
  if (rc.n % 8 != 0) throw std::logic_error(std::string(what) + ": n not a multiple of 8");
  for (std::size_t i = 0; i < count; ++i) {
    if (x[i] >= rc.q) {
      throw std::logic_error(std::string(what) + ": residue " + std::to_string(x[i]) +
                             " >= Q = " + std::to_string(rc.q) + " at " + std::to_string(i));
    }
  }
#endif
}

// x mod Q for any 64-bit x: the Barrett quotient estimate is at most one below the true one.
inline u64 reduce64(u64 x, u64 q, u64 m) {
  const u64 qhat = static_cast<u64>((static_cast<u128>(x) * m) >> 64);
  const u64 r = x - qhat * q;
  return r >= q ? r - q : r;
}

}  // namespace

namespace portable {

void decompose(const RingConstants& rc, const u64* a, const u64* b, u64* digits) {
  const std::size_t n = rc.n, dg = rc.gadget_digits;
  const int log_b = static_cast<int>(rc.gadget_log_base);
  const std::int64_t base = std::int64_t{1} << log_b, half = base / 2, mask = base - 1;
  const std::int64_t q = static_cast<std::int64_t>(rc.q), q_half = q / 2;
  const int drop = static_cast<int>(rc.gadget_dropped_bits);
  const std::int64_t round_half = drop == 0 ? 0 : std::int64_t{1} << (drop - 1);
  const u64* polys[2] = {a, b};
  for (std::size_t t = 0; t < 2; ++t) {
    const u64* x = polys[t];
    u64* out = digits + t * dg * n;
    for (std::size_t j = 0; j < n; ++j) {
      std::int64_t v = static_cast<std::int64_t>(x[j]);
      if (v > q_half) v -= q;
      v = (v + round_half) >> drop;
      for (std::size_t l = 0; l + 1 < dg; ++l) {
        std::int64_t d = v & mask;
        if (d >= half) d -= base;
        v = (v - d) >> log_b;
        out[l * n + j] = static_cast<u64>(d < 0 ? d + q : d);
      }
      out[(dg - 1) * n + j] = static_cast<u64>(v < 0 ? v + q : v);
    }
  }
}

void mac(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
         std::size_t key_count, u64* out) {
  const std::size_t n = rc.n, rows = 2 * static_cast<std::size_t>(rc.gadget_digits);
  for (std::size_t k = 0; k < key_count; ++k) {
    u64* oa = out + 2 * k * n;
    u64* ob = oa + n;
    for (std::size_t j = 0; j < n; ++j) oa[j] = ob[j] = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const u64* d = digits + r * n;
      for (std::size_t j = 0; j < n; ++j) {
        const std::uint32_t* block = keys[k] + ((j / 8) * rows + r) * 2 * 8 + j % 8;
        const u64 dj = static_cast<std::uint32_t>(d[j]);
        oa[j] += dj * block[0];
        ob[j] += dj * block[8];
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      oa[j] = reduce64(oa[j], rc.q, rc.barrett);
      ob[j] = reduce64(ob[j], rc.q, rc.barrett);
    }
  }
}

void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, u64* pa, u64* pb, const u64* ma,
                      const u64* mb) {
  const std::size_t n = rc.n, mask = 2 * n - 1, minus_c = (2 * n - c) & mask;
  const u64 q = rc.q;
  for (std::size_t j = 0; j < n; ++j) {
    const u64 plus = psi_pow[(c * odd[j]) & mask] + q - 1;  // in [0, 2Q)
    const u64 minus = psi_pow[(minus_c * odd[j]) & mask] + q - 1;
    pa[j] = reduce64(pa[j] * plus + ma[j] * minus, q, rc.barrett);
    pb[j] = reduce64(pb[j] * plus + mb[j] * minus, q, rc.barrett);
  }
}

void add_shifted_difference(const RingConstants& rc, std::size_t c, const u64* p, u64* acc) {
  // (X^c p)[j] = p[j - c] for j >= c, -p[j - c + n] below (c < n); c >= n negates all.
  const std::size_t n = rc.n;
  const u64 q = rc.q;
  const bool negate = c >= n;
  const std::size_t s = negate ? c - n : c;
  for (std::size_t j = 0; j < n; ++j) {
    const bool wrapped = j < s;
    const u64 v = p[wrapped ? j + n - s : j - s];
    const bool minus = wrapped != negate;
    // acc + (+-v) - p[j], each term in [0, Q).
    u64 x = acc[j] + (minus ? (v == 0 ? 0 : q - v) : v);
    x = x >= q ? x - q : x;
    x += q - p[j];
    acc[j] = x >= q ? x - q : x;
  }
}

void mac3_monomial_sum(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
                       const std::uint32_t* psi_pow, const std::uint32_t* odd,
                       const std::size_t* exponents, u64* out) {
  const std::size_t n = rc.n, rows = 2 * static_cast<std::size_t>(rc.gadget_digits);
  const std::size_t mask = 2 * n - 1;
  const u64 q = rc.q;
  for (std::size_t j = 0; j < n; ++j) {
    u64 xa = 0, xb = 0;
    for (std::size_t t = 0; t < 3; ++t) {
      u64 a = 0, b = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        const std::uint32_t* block = keys[t] + ((j / 8) * rows + r) * 2 * 8 + j % 8;
        const u64 d = digits[r * n + j];
        a += d * block[0];
        b += d * block[8];
      }
      const u64 f = psi_pow[(exponents[t] * odd[j]) & mask] + q - 1;  // in [0, 2Q)
      xa += reduce64(a, q, rc.barrett) * f;
      xb += reduce64(b, q, rc.barrett) * f;
    }
    out[j] = reduce64(xa, q, rc.barrett);
    out[n + j] = reduce64(xb, q, rc.barrett);
  }
}

void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint16_t* w = table + static_cast<std::size_t>(rows[k]) * row_len;
    for (std::size_t i = 0; i < row_len; ++i) acc[i] = static_cast<std::uint16_t>(acc[i] - w[i]);
  }
}

}  // namespace portable

void subtract_rows_u16(std::uint16_t* acc, const std::uint16_t* table, std::size_t row_len,
                       const std::uint32_t* rows, std::size_t count) {
  if (use_avx512()) return avx512::subtract_rows_u16(acc, table, row_len, rows, count);
  portable::subtract_rows_u16(acc, table, row_len, rows, count);
}

void decompose(const RingConstants& rc, const u64* a, const u64* b, u64* digits) {
  debug_check_residues(rc, a, rc.n, "kernels::decompose (a)");
  debug_check_residues(rc, b, rc.n, "kernels::decompose (b)");
  if (use_avx512()) return avx512::decompose(rc, a, b, digits);
  portable::decompose(rc, a, b, digits);
}

void mac(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
         std::size_t key_count, u64* out) {
  debug_check_residues(rc, digits, 2 * rc.gadget_digits * rc.n, "kernels::mac (digits)");
  if (use_avx512()) return avx512::mac(rc, digits, keys, key_count, out);
  portable::mac(rc, digits, keys, key_count, out);
}

void monomial_combine(const RingConstants& rc, const std::uint32_t* psi_pow,
                      const std::uint32_t* odd, std::size_t c, u64* pa, u64* pb, const u64* ma,
                      const u64* mb) {
  debug_check_residues(rc, pa, rc.n, "kernels::monomial_combine (pa)");
  debug_check_residues(rc, ma, rc.n, "kernels::monomial_combine (ma)");
  if (use_avx512()) return avx512::monomial_combine(rc, psi_pow, odd, c, pa, pb, ma, mb);
  portable::monomial_combine(rc, psi_pow, odd, c, pa, pb, ma, mb);
}

void mac3_monomial_sum(const RingConstants& rc, const u64* digits, const std::uint32_t* const* keys,
                       const std::uint32_t* psi_pow, const std::uint32_t* odd,
                       const std::size_t* exponents, u64* out) {
  debug_check_residues(rc, digits, 2 * rc.gadget_digits * rc.n, "kernels::mac3_monomial_sum");
  if (use_avx512())
    return avx512::mac3_monomial_sum(rc, digits, keys, psi_pow, odd, exponents, out);
  portable::mac3_monomial_sum(rc, digits, keys, psi_pow, odd, exponents, out);
}

void add_shifted_difference(const RingConstants& rc, std::size_t c, const u64* p, u64* acc) {
  debug_check_residues(rc, p, rc.n, "kernels::add_shifted_difference (p)");
  if (use_avx512()) return avx512::add_shifted_difference(rc, c, p, acc);
  portable::add_shifted_difference(rc, c, p, acc);
}

}  // namespace hec::fhew::kernels
