// Straus and Pippenger multi-exponentiation (see multiexp.h).
#include "labhe/multiexp.h"

#include <algorithm>
#include <stdexcept>

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

// A product that may still be the empty product (saves multiplications by 1).
struct Acc {
  Int v;
  bool set = false;
  void times(const ModRing& ring, const Int& x) {
    if (set) {
      ring.mul(v, v, x);
    } else {
      v = x;
      set = true;
    }
  }
};

std::size_t max_bits(const std::vector<const Int*>& exps, std::size_t begin, std::size_t end) {
  std::size_t b = 0;
  for (std::size_t i = begin; i < end; ++i) b = std::max(b, exps[i]->bits());
  return b;
}

// Straus with 4-bit windows over bases [begin, end).
Int straus(const ModRing& ring, const std::vector<const Int*>& bases,
           const std::vector<const Int*>& exps, std::size_t begin, std::size_t end) {
  constexpr unsigned w = 4;
  const std::size_t bits = max_bits(exps, begin, end);
  const std::size_t count = end - begin;
  std::vector<Int> table(count * (1u << w));
  for (std::size_t i = 0; i < count; ++i) {
    Int* t = &table[i << w];
    t[0] = Int(1);
    t[1] = *bases[begin + i];
    for (unsigned j = 2; j < (1u << w); ++j) ring.mul(t[j], t[j - 1], t[1]);
  }
  Acc acc;
  const std::size_t windows = (bits + w - 1) / w;
  for (std::size_t win = windows; win-- > 0;) {
    if (acc.set) {
      for (unsigned s = 0; s < w; ++s) ring.sqr(acc.v, acc.v);
    }
    for (std::size_t i = 0; i < count; ++i) {
      unsigned d = digit(*exps[begin + i], win * w, w);
      if (d != 0) acc.times(ring, table[(i << w) + d]);
    }
  }
  return acc.set ? acc.v : Int(1);
}

Int pippenger(const ModRing& ring, const std::vector<const Int*>& bases,
              const std::vector<const Int*>& exps, std::size_t begin, std::size_t end) {
  const std::size_t bits = max_bits(exps, begin, end);
  if (bits == 0) return Int(1);
  const unsigned c = pippenger_window(end - begin, bits);
  std::vector<Acc> buckets(std::size_t{1} << c);
  Acc result;
  const std::size_t windows = (bits + c - 1) / c;
  for (std::size_t win = windows; win-- > 0;) {
    if (result.set) {
      for (unsigned s = 0; s < c; ++s) ring.sqr(result.v, result.v);
    }
    for (auto& b : buckets) b.set = false;
    // Step (1): each base into the bucket of its digit.
    for (std::size_t i = begin; i < end; ++i) {
      unsigned d = digit(*exps[i], win * c, c);
      if (d != 0) buckets[d].times(ring, *bases[i]);
    }
    // Step (2): prod_j bucket_j^j as a product of running products from the top bucket down.
    Acc running, sum;
    for (std::size_t j = buckets.size() - 1; j >= 1; --j) {
      if (buckets[j].set) running.times(ring, buckets[j].v);
      if (running.set) sum.times(ring, running.v);
    }
    if (sum.set) result.times(ring, sum.v);
  }
  return result.set ? result.v : Int(1);
}

Int serial(const ModRing& ring, const std::vector<const Int*>& bases,
           const std::vector<const Int*>& exps, std::size_t begin, std::size_t end) {
  return end - begin <= 8 ? straus(ring, bases, exps, begin, end)
                          : pippenger(ring, bases, exps, begin, end);
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

Int multiexp(const ModRing& ring, const std::vector<const Int*>& bases,
             const std::vector<const Int*>& exps) {
  if (bases.size() != exps.size()) {
    throw std::invalid_argument("multiexp: " + std::to_string(bases.size()) + " bases but " +
                                std::to_string(exps.size()) + " exponents");
  }
  for (const Int* e : exps) {
    if (e->sign() < 0) throw std::invalid_argument("multiexp: negative exponent");
  }
  const std::size_t n = bases.size();
  // One chunk per thread when there is enough work for each (a chunk of 256 bases costs
  // thousands of modular products).
  const std::size_t chunks =
      std::max<std::size_t>(1, std::min<std::size_t>(math::thread_cap(), n / 256));
  if (chunks == 1) return serial(ring, bases, exps, 0, n);
  std::vector<Int> partial(chunks);
  math::parallel_for(chunks, [&](std::size_t t) {
    std::size_t begin = n * t / chunks, end = n * (t + 1) / chunks;
    partial[t] = serial(ring, bases, exps, begin, end);
  });
  Int out = partial[0];
  for (std::size_t t = 1; t < chunks; ++t) ring.mul(out, out, partial[t]);
  return out;
}

}  // namespace hec::labhe
