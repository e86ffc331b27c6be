// Prime generation and roots of unity (see primes.h).
#include "math/primes.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hec::math {
namespace {

u64 mul_mod_u128(u64 a, u64 b, u64 n) { return static_cast<u64>(static_cast<u128>(a) * b % n); }

u64 pow_mod_u128(u64 base, u64 exponent, u64 n) {
  u64 result = 1 % n;
  base %= n;
  while (exponent != 0) {
    if (exponent & 1) result = mul_mod_u128(result, base, n);
    base = mul_mod_u128(base, base, n);
    exponent >>= 1;
  }
  return result;
}

bool is_power_of_two(std::size_t x) { return x != 0 && (x & (x - 1)) == 0; }

void check_prime_request(const char* what, int bits, int max_bits, std::size_t ring_dim) {
  if (bits < 2 || bits > max_bits) {
    throw std::invalid_argument(std::string(what) + ": bits = " + std::to_string(bits) +
                                " must be in [2, " + std::to_string(max_bits) + "]");
  }
  if (ring_dim < 2 || !is_power_of_two(ring_dim)) {
    throw std::invalid_argument(std::string(what) + ": ring_dim = " + std::to_string(ring_dim) +
                                " must be a power of two >= 2");
  }
}

bool excluded(u64 q, const std::vector<u64>& exclude, const std::vector<u64>& taken) {
  return std::find(exclude.begin(), exclude.end(), q) != exclude.end() ||
         std::find(taken.begin(), taken.end(), q) != taken.end();
}

}  // namespace

bool is_prime(u64 n) {
  if (n < 2) return false;
  static constexpr u64 kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (u64 p : kBases) {
    if (n % p == 0) return n == p;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (u64 a : kBases) {
    u64 x = pow_mod_u128(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s; ++r) {
      x = mul_mod_u128(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) return false;
  }
  return true;
}

std::vector<u64> ntt_primes(int bits, std::size_t count, std::size_t ring_dim,
                            const std::vector<u64>& exclude) {
  check_prime_request("ntt_primes", bits, kMaxModulusBits, ring_dim);
  const u64 step = 2 * static_cast<u64>(ring_dim);
  const u64 upper = u64{1} << bits;
  const u64 lower = u64{1} << (bits - 1);
  std::vector<u64> primes;
  if (upper <= step) {
    throw std::invalid_argument("ntt_primes: 2^bits = " + std::to_string(upper) +
                                " leaves no room for q = 1 mod 2N = " + std::to_string(step));
  }
  // Largest candidate below 2^bits that is 1 mod 2N: 2^bits - 2N + 1.
  for (u64 q = upper - step + 1; q > lower && primes.size() < count; q -= step) {
    if (is_prime(q) && !excluded(q, exclude, primes)) primes.push_back(q);
    if (q <= step) break;
  }
  if (primes.size() < count) {
    throw std::invalid_argument("ntt_primes: only " + std::to_string(primes.size()) +
                                " primes of " + std::to_string(bits) + " bits are 1 mod " +
                                std::to_string(step) + ", " + std::to_string(count) + " requested");
  }
  return primes;
}

std::vector<u64> ntt_primes_alternating(int bits, std::size_t count, std::size_t ring_dim,
                                        const std::vector<u64>& exclude) {
  check_prime_request("ntt_primes_alternating", bits, kMaxModulusBits - 1, ring_dim);
  const u64 step = 2 * static_cast<u64>(ring_dim);
  const u64 center = u64{1} << bits;
  if (center <= step) {
    throw std::invalid_argument("ntt_primes_alternating: 2^bits = " + std::to_string(center) +
                                " leaves no room for q = 1 mod 2N = " + std::to_string(step));
  }
  const u64 lowest = center >> 1;
  const u64 highest = center << 1;
  std::vector<u64> primes;
  u64 next_above = center + 1;         // candidates 2^bits + 1 + k*2N
  u64 next_below = center - step + 1;  // candidates 2^bits + 1 - k*2N, k >= 1
  bool above = true;
  bool above_exhausted = false, below_exhausted = false;
  while (primes.size() < count && !(above_exhausted && below_exhausted)) {
    if (above && !above_exhausted) {
      while (next_above < highest &&
             !(is_prime(next_above) && !excluded(next_above, exclude, primes))) {
        next_above += step;
      }
      if (next_above < highest) {
        primes.push_back(next_above);
        next_above += step;
      } else {
        above_exhausted = true;
      }
    } else if (!above && !below_exhausted) {
      while (next_below > lowest &&
             !(is_prime(next_below) && !excluded(next_below, exclude, primes))) {
        next_below -= step;
      }
      if (next_below > lowest) {
        primes.push_back(next_below);
        next_below -= step;
      } else {
        below_exhausted = true;
      }
    }
    above = !above;
  }
  if (primes.size() < count) {
    throw std::invalid_argument("ntt_primes_alternating: only " + std::to_string(primes.size()) +
                                " primes 1 mod " + std::to_string(step) + " near 2^" +
                                std::to_string(bits) + ", " + std::to_string(count) + " requested");
  }
  return primes;
}

u64 minimal_primitive_root(u64 order, u64 q) {
  if (!is_prime(q)) {
    throw std::invalid_argument("minimal_primitive_root: q = " + std::to_string(q) +
                                " is not prime");
  }
  if (order < 2 || (order & (order - 1)) != 0 || (q - 1) % order != 0) {
    throw std::invalid_argument(
        "minimal_primitive_root: order = " + std::to_string(order) +
        " must be a power of two >= 2 dividing q - 1 = " + std::to_string(q - 1));
  }
  const Modulus m(q);
  const u64 cofactor = (q - 1) / order;
  // Any x with (x^cofactor)^(order/2) = -1 gives a primitive root g = x^cofactor.
  u64 g = 0;
  for (u64 x = 2; x < q; ++x) {
    const u64 candidate = pow_mod(x, cofactor, m);
    if (pow_mod(candidate, order / 2, m) == q - 1) {
      g = candidate;
      break;
    }
  }
  // The primitive roots are g^k for odd k; take the smallest.
  const u64 g_squared = mul_mod(g, g, m);
  u64 current = g, smallest = g;
  for (u64 k = 1; k < order; k += 2) {
    smallest = std::min(smallest, current);
    current = mul_mod(current, g_squared, m);
  }
  return smallest;
}

}  // namespace hec::math
