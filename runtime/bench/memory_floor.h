// The memory floor of a pass (bench only): the same words read and written as an operation
// over ciphertext limbs, with no arithmetic in between (an XOR per word). An operation whose
// time is near its floor is bound by the memory traffic, not by its arithmetic; half a
// reference's time below the floor is beyond any implementation on this machine.
// AVX-512 loads and stores where the CPU has AVX-512F (as the runtime's own kernels), else
// plain 64-bit words.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hec::bench {

// x[t] ^= y[t]: the traffic of an in-place add (two limbs read, one written in place).
void floor_read2_write1(std::uint64_t* x, const std::uint64_t* y, std::size_t n);

// z[t] = x[t] ^ y[t] (^ s[t] when s is not null): the traffic of a product by a prepared
// operand into a separate output (s: a per-word constant table, such as Shoup's). stream:
// z written with streaming stores, as the runtime does for an output of a MiB or more.
void floor_read_write_to(std::uint64_t* z, const std::uint64_t* x, const std::uint64_t* y,
                         const std::uint64_t* s, std::size_t n, bool stream);

// The same for two operands by one shared y (and s), read once for both: z0 = x0 ^ y (^ s),
// z1 = x1 ^ y (^ s) (BFV's multiply by a plaintext, both components in one pass).
void floor_read_write_to2(std::uint64_t* z0, std::uint64_t* z1, const std::uint64_t* x0,
                          const std::uint64_t* x1, const std::uint64_t* y, const std::uint64_t* s,
                          std::size_t n, bool stream);

}  // namespace hec::bench
