#include "math/pack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "math/cpu_features.h"

namespace hec::math {
namespace {

using u64 = std::uint64_t;

TEST(PackResidues, WidthIsTheModulusBitsOr64AboveTheLimit) {
  EXPECT_EQ(packed_bits((u64{1} << 42) - 11), 42u);
  EXPECT_EQ(packed_bits((u64{1} << 42) + 15), 43u);
  EXPECT_EQ(packed_bits(u64{1} << 42), 42u);  // residues below 2^42
  EXPECT_EQ(packed_bits((u64{1} << 56) - 5), 56u);
  EXPECT_EQ(packed_bits((u64{1} << 56) + 81), 64u);
  EXPECT_EQ(packed_bits((u64{1} << 60) - 93), 64u);
  EXPECT_EQ(packed_limb_bytes(4096, 42), 4096u * 42 / 8);
}

// Every width round-trips, out of place and in place (the packed bytes at the tail of the
// words' own storage, as ckks/io.cpp reads them), on the AVX-512 VBMI path where the CPU has
// it and on the portable path.
TEST(PackResidues, EveryWidthRoundTripsInPlaceAndOutOfPlace) {
  std::mt19937_64 rng(11);
  const std::size_t n = 256;
  for (int path = 0; path < 2; ++path) {
    force_portable_path(path == 1);
    for (unsigned bits = 1; bits <= 64; ++bits) {
      if (bits > kMaxPackedBits && bits != 64) continue;
      const u64 q = bits == 64 ? ~u64{0} : (u64{1} << bits);
      std::vector<u64> in(n);
      for (auto& v : in) v = bits == 64 ? rng() % q : rng() & (q - 1);
      std::vector<std::uint8_t> packed(packed_limb_bytes(n, bits));
      pack_residues(in.data(), n, bits, packed.data());
      std::vector<u64> out(n, 0);
      EXPECT_EQ(unpack_residues(packed.data(), n, bits, q, out.data()), n) << bits;
      EXPECT_EQ(out, in) << bits;
      std::vector<u64> buf(n, 0xdeadbeef);
      auto* tail = reinterpret_cast<std::uint8_t*>(buf.data()) + 8 * n - packed.size();
      std::memcpy(tail, packed.data(), packed.size());
      EXPECT_EQ(unpack_residues(tail, n, bits, q, buf.data()), n) << bits;
      EXPECT_EQ(buf, in) << bits;
      // A residue at the modulus, found on this path too.
      if (bits > 1 && bits < 64) {
        for (auto& v : in) v %= q - 1;
        in[n - 3] = q - 1;
        pack_residues(in.data(), n, bits, packed.data());
        EXPECT_EQ(unpack_residues(packed.data(), n, bits, q - 1, out.data()), n - 3) << bits;
      }
    }
  }
  force_portable_path(false);
}

// Limbs of different widths one after another, unpacked in place limb by limb from the tail
// of one buffer (a ciphertext's polynomials and limbs).
TEST(PackResidues, MixedWidthsUnpackInPlaceLimbByLimb) {
  std::mt19937_64 rng(5);
  const std::size_t n = 128;
  const std::vector<u64> moduli = {(u64{1} << 60) - 93, (u64{1} << 42) - 11, (u64{1} << 45) - 55,
                                   (u64{1} << 20) - 3, (u64{1} << 56) - 27};
  std::vector<u64> words(n * moduli.size());
  std::vector<std::uint8_t> packed;
  for (std::size_t l = 0; l < moduli.size(); ++l) {
    for (std::size_t i = 0; i < n; ++i) words[l * n + i] = rng() % moduli[l];
    const unsigned bits = packed_bits(moduli[l]);
    const std::size_t at = packed.size();
    packed.resize(at + packed_limb_bytes(n, bits));
    pack_residues(words.data() + l * n, n, bits, packed.data() + at);
  }
  std::vector<u64> buf(words.size(), 0);
  auto* bytes = reinterpret_cast<std::uint8_t*>(buf.data()) + 8 * buf.size() - packed.size();
  std::memcpy(bytes, packed.data(), packed.size());
  for (std::size_t l = 0; l < moduli.size(); ++l) {
    const unsigned bits = packed_bits(moduli[l]);
    ASSERT_EQ(unpack_residues(bytes, n, bits, moduli[l], buf.data() + l * n), n);
    bytes += packed_limb_bytes(n, bits);
  }
  EXPECT_EQ(buf, words);
}

TEST(PackResidues, AResidueAtOrAboveTheModulusIsReportedByIndex) {
  const std::size_t n = 64;
  const u64 q = (u64{1} << 42) - 11;
  std::vector<u64> in(n, 7);
  in[37] = q;  // fits in 42 bits, but is not a residue
  std::vector<std::uint8_t> packed(packed_limb_bytes(n, 42));
  pack_residues(in.data(), n, 42, packed.data());
  std::vector<u64> out(n);
  EXPECT_EQ(unpack_residues(packed.data(), n, 42, q, out.data()), 37u);
}

TEST(PackResidues, RefusesWhatItCannotPack) {
  std::vector<u64> in(100);
  std::vector<std::uint8_t> out(1000);
  EXPECT_THROW(pack_residues(in.data(), 100, 42, out.data()), std::invalid_argument);
  EXPECT_THROW(pack_residues(in.data(), 64, 60, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace hec::math
