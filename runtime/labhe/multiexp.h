// Multi-exponentiation prod_i g_i^(e_i) mod m with public exponents: the server's inner loop
// in labeled HE (a sum of products of ciphertexts by plaintext halves is one such product).
// Few bases: Straus's interleaved windows (one shared chain of squarings, 4-bit tables per
// base). Many bases: Pippenger's bucket method (N. Pippenger, "On the evaluation of powers and
// monomials", SIAM J. Comput. 1980; the bucket form of Bernstein et al.'s ed25519 batch
// verification): per c-bit window, each base is multiplied into the bucket of its digit, and
// the buckets are combined with 2^(c+1) products by running sums; cost about
// (b/c)(n + 2^(c+1)) + b modular products for n bases of b-bit exponents, against 1.5 n b
// for separate square-and-multiply. The bases are split into one chunk per thread
// (math::parallel_for, thread_cap()) whose partial products are multiplied at the end.
// The products are Montgomery products on fixed-size limb arrays (Montgomery in bigint.h).
#pragma once
#include <cstddef>
#include <vector>

#include "labhe/bigint.h"

namespace hec::labhe {

// prod_i bases[i]^exps[i] mod ring.modulus(). Exponents must be >= 0 (they are the server's
// public values: variable time is fine). bases.size() == exps.size(). Converts the bases to
// Montgomery form and back (callers with many products over the same bases convert once and
// call the limb form below).
Int multiexp(const ModRing& ring, const std::vector<const Int*>& bases,
             const std::vector<const Int*>& exps);

// The same over bases already in Montgomery form (mont.limbs() limbs each); writes the
// product, in Montgomery form, to out (mont.limbs() limbs).
void multiexp(const Montgomery& mont, const std::vector<const mp_limb_t*>& bases,
              const std::vector<const Int*>& exps, mp_limb_t* out);

// The window Pippenger uses for n bases of b-bit exponents (exposed for tests).
unsigned pippenger_window(std::size_t n, std::size_t bits);

}  // namespace hec::labhe
