// Tests for core/blake3.h: the official test-vector input (byte i = i mod 251) at the
// lengths of the BLAKE3 team's test vectors and a few large ones, against digests produced by
// the PyPI `blake3` package (the team's binding; tests/test_blake3_vectors.py recomputes this
// table with it); incremental updates split anywhere equal the one-shot digest; the portable
// and AVX-512 kernels agree, on random lengths and across a 2^32 chunk counter.
#include "core/blake3.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/blake3_kernels.h"
#include "core/serialize.h"
#include "math/cpu_features.h"

namespace hec::core {
namespace {

struct Vector {
  std::size_t length;
  const char* digest;  // BLAKE3-256, hex
};

// blake3.blake3(bytes(i % 251 for i in range(length))).hexdigest(), blake3 1.0.11.
const Vector kVectors[] = {
    {0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
    {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
    {63, "e9bc37a594daad83be9470df7f7b3798297c3d834ce80ba85d6e207627b7db7b"},
    {64, "4eed7141ea4a5cd4b788606bd23f46e212af9cacebacdc7d1f4c6dc7f2511b98"},
    {65, "de1e5fa0be70df6d2be8fffd0e99ceaa8eb6e8c93a63f2d8d1c30ecb6b263dee"},
    {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
    {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
    {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
    {2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
    {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
    {3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
    {3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
    {4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
    {4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
    {5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"},
    {5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
    {6144, "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205"},
    {6145, "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f"},
    {7168, "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a"},
    {7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"},
    {8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
    {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
    {16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
    {31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
    {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
    {1048583, "89541f1047f7a56806fe16efda4c2cdc45f141c838e413019f0124189fa55232"},
    {2097153, "52dc212cb4cc61cb94d25bd7b1d47b256e4c3a6d68956df50c235c37a2aeacd7"},
    {16778216, "69073d701694620a2eab4310a1e34cdcec19349de14a2af1b1df574469c2b717"},
};

std::vector<std::uint8_t> test_input(std::size_t length) {
  std::vector<std::uint8_t> data(length);
  for (std::size_t i = 0; i < length; ++i) data[i] = static_cast<std::uint8_t>(i % 251);
  return data;
}

std::string hex(const Blake3Digest& d) { return to_hex(d.data(), d.size()); }

std::vector<Blake3Kernel> kernels() {
  std::vector<Blake3Kernel> ks = {Blake3Kernel::kPortable};
  if (blake3_kernel_available(Blake3Kernel::kAvx512)) ks.push_back(Blake3Kernel::kAvx512);
  return ks;
}

TEST(Blake3, KnownAnswersOneShot) {
  for (const Blake3Kernel k : kernels()) {
    for (const Vector& v : kVectors) {
      const auto data = test_input(v.length);
      EXPECT_EQ(hex(blake3_256(data.data(), data.size(), k)), v.digest)
          << "length " << v.length << ", " << blake3_kernel_name(k) << " kernel";
    }
  }
}

// Piece sizes that cut blocks, chunks and 16-chunk batches at every kind of offset.
TEST(Blake3, IncrementalSplitsEqualKnownAnswers) {
  const std::vector<std::size_t> steps = {1,     7, 63, 64, 65, 1023, 1024, 1025, 16 * 1024 + 1,
                                          100000};
  for (const Blake3Kernel k : kernels()) {
    for (const Vector& v : kVectors) {
      if (v.length > (std::size_t{3} << 20)) continue;  // the 16 MiB one: one-shot only
      const auto data = test_input(v.length);
      for (const std::size_t step : steps) {
        if (step == 1 && v.length > 8193) continue;
        Blake3 h(k);
        for (std::size_t at = 0; at < data.size(); at += step) {
          h.update(data.data() + at, std::min(step, data.size() - at));
        }
        EXPECT_EQ(hex(h.finalize()), v.digest)
            << "length " << v.length << " in pieces of " << step << ", " << blake3_kernel_name(k);
      }
    }
  }
}

TEST(Blake3, RandomSplitsEqualOneShot) {
  std::mt19937_64 rng(2022);
  std::vector<std::uint8_t> data(3 << 20);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (int trial = 0; trial < 12; ++trial) {
    const std::size_t length = rng() % data.size();
    const Blake3Digest expected = blake3_256(data.data(), length);
    Blake3 h;
    std::size_t at = 0;
    while (at < length) {
      // Mostly small pieces, sometimes a large run (the bulk path after an odd offset).
      const std::size_t piece =
          rng() % 4 == 0 ? rng() % (length - at + 1) : std::size_t{1} + rng() % 3000;
      const std::size_t take = std::min(piece, length - at);
      h.update(data.data() + at, take);
      at += take;
    }
    EXPECT_EQ(hex(h.finalize()), hex(expected)) << "length " << length;
    EXPECT_EQ(h.bytes_hashed(), length);
  }
}

TEST(Blake3, FinalizeDoesNotEndTheInput) {
  const auto data = test_input(5000);
  Blake3 h;
  h.update(data.data(), 2048);
  EXPECT_EQ(hex(h.finalize()), kVectors[8].digest);  // 2048
  h.update(data.data() + 2048, 5000 - 2048);
  EXPECT_EQ(hex(h.finalize()), hex(blake3_256(data.data(), data.size())));
}

TEST(Blake3, PortableEqualsAvx512OnRandomLengths) {
  if (!blake3_kernel_available(Blake3Kernel::kAvx512)) GTEST_SKIP() << "no AVX-512F";
  std::mt19937_64 rng(22);
  std::vector<std::uint8_t> data(600 * 1024);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (int trial = 0; trial < 60; ++trial) {
    // Half of them short (a few chunks), half up to the buffer's size.
    const std::size_t bound = trial % 2 == 0 ? 40 * 1024 : data.size();
    const std::size_t length = rng() % (bound + 1);
    const std::size_t offset = rng() % 64;  // unaligned input too
    const std::size_t n = std::min(length, data.size() - offset);
    EXPECT_EQ(hex(blake3_256(data.data() + offset, n, Blake3Kernel::kPortable)),
              hex(blake3_256(data.data() + offset, n, Blake3Kernel::kAvx512)))
        << "length " << n;
  }
}

// The kernels' chunk counters across 2^32 (the AVX-512 lanes carry into the high word).
TEST(Blake3, KernelsAgreeAcrossTheCounterCarry) {
  if (!blake3_kernel_available(Blake3Kernel::kAvx512)) GTEST_SKIP() << "no AVX-512F";
  const auto data = test_input(20 * 1024);
  for (const std::uint64_t first : {std::uint64_t{0xFFFFFFF8}, std::uint64_t{0x1FFFFFFFF}}) {
    std::vector<std::uint32_t> portable(20 * 8), avx512(20 * 8);
    blake3_detail::hash_chunks_portable(data.data(), 20, first, portable.data());
    blake3_detail::hash_chunks_avx512(data.data(), 20, first, avx512.data());
    EXPECT_EQ(portable, avx512) << "first counter " << first;
  }
  std::vector<std::uint32_t> children(16 * 19);
  for (std::size_t i = 0; i < children.size(); ++i) children[i] = 0x9E3779B9u * (i + 1);
  std::vector<std::uint32_t> portable(8 * 19), avx512(8 * 19);
  blake3_detail::hash_parents_portable(children.data(), 19, portable.data());
  blake3_detail::hash_parents_avx512(children.data(), 19, avx512.data());
  EXPECT_EQ(portable, avx512);
}

// update_parallel over scattered pieces (a ciphertext array's 16-byte heads and bodies),
// after an unaligned prefix, ending inside, or exactly at the end of, a 1 MiB subtree.
TEST(Blake3, ParallelUpdateEqualsSerial) {
  std::mt19937_64 rng(7);
  std::vector<std::uint8_t> data((6 << 20) + 5000);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (const std::size_t prefix : {std::size_t{0}, std::size_t{84}, std::size_t{1} << 20}) {
    for (const std::size_t end : {data.size(), std::size_t{5} << 20, (std::size_t{4} << 20) + 16}) {
      for (const int threads : {1, 2, 3}) {
        Blake3 h;
        h.update(data.data(), prefix);
        std::vector<Blake3::Span> pieces;
        for (std::size_t at = prefix; at < end;) {
          const std::size_t size =
              std::min(at % 2 == 0 ? std::size_t{16} : std::size_t{257749}, end - at);
          pieces.push_back({data.data() + at, size});
          at += size;
        }
        h.update_parallel(pieces, threads);
        EXPECT_EQ(hex(h.finalize()), hex(blake3_256(data.data(), end)))
            << "prefix " << prefix << ", end " << end << ", threads " << threads;
      }
    }
  }
}

// math::force_portable_path (and HEC_FORCE_PORTABLE=1 at start-up) selects the portable kernel.
TEST(Blake3, ForcedPortable) {
  const bool was_forced = math::portable_path_forced();
  math::force_portable_path(true);
  EXPECT_EQ(blake3_active_kernel(), Blake3Kernel::kPortable);
  math::force_portable_path(false);
  EXPECT_EQ(blake3_active_kernel(), blake3_kernel_available(Blake3Kernel::kAvx512)
                                        ? Blake3Kernel::kAvx512
                                        : Blake3Kernel::kPortable);
  math::force_portable_path(was_forced);
}

}  // namespace
}  // namespace hec::core
