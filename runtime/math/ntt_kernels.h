// Internal: the NTT kernels behind ntt.h's dispatch. The *_ifma functions live in
// ntt_avx512.cpp (compiled with the AVX-512 flags) and may only run when
// cpu_has_avx512_ifma() and tables.avx512_capable() (IFMA multiplier when
// tables.ifma_capable(), emulated 64-bit Shoup multiplier otherwise).
#pragma once

#include "math/ntt.h"

namespace hec::math::detail {

void ntt_forward_lazy_portable(u64* a, const NttTables& tables);
void ntt_inverse_lazy_portable(u64* a, const NttTables& tables);

void ntt_forward_lazy_ifma(u64* a, const NttTables& tables);
void ntt_forward_ifma(u64* a, const NttTables& tables);
void ntt_inverse_lazy_ifma(u64* a, const NttTables& tables);
void ntt_inverse_ifma(u64* a, const NttTables& tables);
// out = inverse(in), fully reduced, reading in during the first pass (in == out allowed).
void ntt_inverse_ifma(const u64* in, u64* out, const NttTables& tables);

}  // namespace hec::math::detail
