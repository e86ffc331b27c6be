// Residues stored at their modulus's bit width instead of 64 bits (ciphertext array files,
// ckks/io.h). A residue modulo q < 2^w takes w bits; the residues of one limb (n of them, n a
// multiple of 64) are laid out least significant bit first, so a limb takes n * w / 8 bytes
// and every 64 residues end on a 64-bit word boundary. Widths above kMaxPackedBits are stored
// as plain 64-bit words (packed_bits returns 64): the gain there is under 12%, and w <= 56
// lets a residue be read with one unaligned 64-bit load.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hec::math {

inline constexpr unsigned kMaxPackedBits = 56;

// The bits one residue modulo q takes in a packed limb: bit_width(q - 1), or 64 above
// kMaxPackedBits.
unsigned packed_bits(std::uint64_t q);

// Bytes of one packed limb of n residues at `bits` (n a multiple of 64).
inline std::size_t packed_limb_bytes(std::size_t n, unsigned bits) { return n / 8 * bits; }

// Packs n residues (each < 2^bits) into packed_limb_bytes(n, bits) bytes at `out`.
void pack_residues(const std::uint64_t* in, std::size_t n, unsigned bits, std::uint8_t* out);

// Unpacks n residues from `in` into `out`, checking each against q; returns the index of the
// first residue >= q, or n when all are below it. `in` may lie inside the same buffer as
// `out`, ending where out's n words end (the reader reads the packed bytes into the tail of
// the ciphertext's own storage and unpacks them forward): every 64 residues' packed bytes are
// read before their words are written, and a group's words never reach the packed bytes of a
// later group.
std::size_t unpack_residues(const std::uint8_t* in, std::size_t n, unsigned bits, std::uint64_t q,
                            std::uint64_t* out);

}  // namespace hec::math
