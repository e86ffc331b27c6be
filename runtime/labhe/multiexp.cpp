// Straus and Pippenger multi-exponentiation (see multiexp.h).
#include "labhe/multiexp.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "math/parallel.h"

namespace hec::labhe {

namespace {

// Bits [start, start + width) of x >= 0 (width <= 32).
unsigned digit(const Int& x, std::size_t start, unsigned width) {
  const std::size_t limb_bits = GMP_NUMB_BITS;
  const std::size_t limb = start / limb_bits;
  const std::size_t shift = start % limb_bits;
  const std::size_t size = mpz_size(x.get());
  if (limb >= size) return 0;
  unsigned long long v = mpz_getlimbn(x.get(), static_cast<mp_size_t>(limb)) >> shift;
  if (shift + width > limb_bits && limb + 1 < size) {
    v |= static_cast<unsigned long long>(mpz_getlimbn(x.get(), static_cast<mp_size_t>(limb + 1)))
         << (limb_bits - shift);
  }
  return static_cast<unsigned>(v & ((1ull << width) - 1));
}

// Montgomery products on one thread: its scratch space and the modulus.
struct Arith {
  const Montgomery& mont;
  std::size_t s;
  std::vector<mp_limb_t> scratch;
  explicit Arith(const Montgomery& m) : mont(m), s(m.limbs()), scratch(2 * m.limbs()) {}
  void mul(mp_limb_t* out, const mp_limb_t* a, const mp_limb_t* b) {
    mont.mul(out, a, b, scratch.data());
  }
  void sqr(mp_limb_t* out) { mont.sqr(out, out, scratch.data()); }
};

// A product that may still be the empty product (saves multiplications by 1), in limbs.
struct Acc {
  mp_limb_t* v;
  bool set = false;
  void times(Arith& ar, const mp_limb_t* x) {
    if (set) {
      ar.mul(v, v, x);
    } else {
      std::copy(x, x + ar.s, v);
      set = true;
    }
  }
};

std::size_t max_bits(const std::vector<const Int*>& exps, std::size_t begin, std::size_t end) {
  std::size_t b = 0;
  for (std::size_t i = begin; i < end; ++i) b = std::max(b, exps[i]->bits());
  return b;
}

// Straus with 4-bit windows over bases [begin, end); the product (or R mod m) into out.
void straus(Arith& ar, const std::vector<const mp_limb_t*>& bases,
            const std::vector<const Int*>& exps, std::size_t begin, std::size_t end,
            mp_limb_t* out) {
  constexpr unsigned w = 4;
  const std::size_t s = ar.s;
  const std::size_t bits = max_bits(exps, begin, end);
  const std::size_t count = end - begin;
  // table[i][j] = base_i^j for j in [1, 16).
  std::vector<mp_limb_t> table(count * (1u << w) * s);
  auto entry = [&](std::size_t i, unsigned j) { return table.data() + ((i << w) + j) * s; };
  for (std::size_t i = 0; i < count; ++i) {
    std::copy(bases[begin + i], bases[begin + i] + s, entry(i, 1));
    for (unsigned j = 2; j < (1u << w); ++j) ar.mul(entry(i, j), entry(i, j - 1), entry(i, 1));
  }
  Acc acc{out};
  const std::size_t windows = (bits + w - 1) / w;
  for (std::size_t win = windows; win-- > 0;) {
    if (acc.set) {
      for (unsigned k = 0; k < w; ++k) ar.sqr(acc.v);
    }
    for (std::size_t i = 0; i < count; ++i) {
      unsigned d = digit(*exps[begin + i], win * w, w);
      if (d != 0) acc.times(ar, entry(i, d));
    }
  }
  if (!acc.set) ar.mont.one(out);
}

void pippenger(Arith& ar, const std::vector<const mp_limb_t*>& bases,
               const std::vector<const Int*>& exps, std::size_t begin, std::size_t end,
               mp_limb_t* out) {
  const std::size_t s = ar.s;
  const std::size_t bits = max_bits(exps, begin, end);
  if (bits == 0) {
    ar.mont.one(out);
    return;
  }
  const unsigned c = pippenger_window(end - begin, bits);
  const std::size_t nb = std::size_t{1} << c;
  std::vector<mp_limb_t> store((nb + 2) * s);
  std::vector<Acc> buckets(nb);
  for (std::size_t j = 0; j < nb; ++j) buckets[j].v = store.data() + j * s;
  Acc result{out};
  const std::size_t windows = (bits + c - 1) / c;
  for (std::size_t win = windows; win-- > 0;) {
    if (result.set) {
      for (unsigned k = 0; k < c; ++k) ar.sqr(result.v);
    }
    for (auto& b : buckets) b.set = false;
    // Step (1): each base into the bucket of its digit.
    for (std::size_t i = begin; i < end; ++i) {
      unsigned d = digit(*exps[i], win * c, c);
      if (d != 0) buckets[d].times(ar, bases[i]);
    }
    // Step (2): prod_j bucket_j^j as a product of running products from the top bucket down.
    Acc running{store.data() + nb * s}, sum{store.data() + (nb + 1) * s};
    for (std::size_t j = nb - 1; j >= 1; --j) {
      if (buckets[j].set) running.times(ar, buckets[j].v);
      if (running.set) sum.times(ar, running.v);
    }
    if (sum.set) result.times(ar, sum.v);
  }
  if (!result.set) ar.mont.one(out);
}

void serial(const Montgomery& mont, const std::vector<const mp_limb_t*>& bases,
            const std::vector<const Int*>& exps, std::size_t begin, std::size_t end,
            mp_limb_t* out) {
  Arith ar(mont);
  if (end - begin <= 8) {
    straus(ar, bases, exps, begin, end, out);
  } else {
    pippenger(ar, bases, exps, begin, end, out);
  }
}

}  // namespace

unsigned pippenger_window(std::size_t n, std::size_t bits) {
  unsigned best = 1;
  double best_cost = 0;
  for (unsigned c = 1; c <= 20; ++c) {
    double windows = static_cast<double>((bits + c - 1) / c);
    double cost = windows * (static_cast<double>(n) + static_cast<double>(2ull << c));
    if (c == 1 || cost < best_cost) {
      best = c;
      best_cost = cost;
    }
  }
  return best;
}

void multiexp(const Montgomery& mont, const std::vector<const mp_limb_t*>& bases,
              const std::vector<const Int*>& exps, mp_limb_t* out) {
  if (bases.size() != exps.size()) {
    throw std::invalid_argument("multiexp: " + std::to_string(bases.size()) + " bases but " +
                                std::to_string(exps.size()) + " exponents");
  }
  for (const Int* e : exps) {
    if (e->sign() < 0) throw std::invalid_argument("multiexp: negative exponent");
  }
  const std::size_t n = bases.size();
  const std::size_t s = mont.limbs();
  // One chunk per thread when there is enough work for each (a chunk of 256 bases costs
  // thousands of modular products).
  const std::size_t chunks =
      std::max<std::size_t>(1, std::min<std::size_t>(math::thread_cap(), n / 256));
  if (chunks == 1) {
    serial(mont, bases, exps, 0, n, out);
    return;
  }
  std::vector<mp_limb_t> partial(chunks * s);
  math::parallel_for(chunks, [&](std::size_t t) {
    serial(mont, bases, exps, n * t / chunks, n * (t + 1) / chunks, partial.data() + t * s);
  });
  Arith ar(mont);
  std::copy(partial.begin(), partial.begin() + static_cast<std::ptrdiff_t>(s), out);
  for (std::size_t t = 1; t < chunks; ++t) ar.mul(out, out, partial.data() + t * s);
}

Int multiexp(const ModRing& ring, const std::vector<const Int*>& bases,
             const std::vector<const Int*>& exps) {
  if (bases.size() != exps.size()) {
    throw std::invalid_argument("multiexp: " + std::to_string(bases.size()) + " bases but " +
                                std::to_string(exps.size()) + " exponents");
  }
  const Montgomery mont(ring.modulus());
  const std::size_t s = mont.limbs();
  std::vector<mp_limb_t> limbs(bases.size() * s), out(s);
  std::vector<const mp_limb_t*> ptrs(bases.size());
  for (std::size_t i = 0; i < bases.size(); ++i) {
    mont.to(limbs.data() + i * s, *bases[i]);
    ptrs[i] = limbs.data() + i * s;
  }
  multiexp(mont, ptrs, exps, out.data());
  return mont.from(out.data());
}

}  // namespace hec::labhe
