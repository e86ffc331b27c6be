// BLAKE3-256 in its plain hash mode (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, "BLAKE3: one
// function, fast everywhere", 2020; sections 2.1-2.6 of the specification): the input is cut
// into 1024-byte chunks, each chunk's 64-byte blocks are compressed in a chain (7 rounds of
// the BLAKE2s-style G function), and the chunks' chaining values are combined by a binary
// tree of parent compressions whose left subtrees always hold a power of two chunks. The root
// compression carries the ROOT flag; its first 32 bytes are the digest. The container digest
// of serialize.h (format 6) is this hash of header and payload.
//
// Written from the paper; no code of the reference implementations. Two kernels, chosen at run
// time: portable C++, and AVX-512F (blake3_avx512.cpp), which compresses 16 chunks (or 16
// parents) at once, one per 32-bit lane. HEC_FORCE_PORTABLE=1 (math/cpu_features.h) forces
// the portable kernel; the two give identical digests (tests/core/blake3_test.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hec::core {

using Blake3Digest = std::array<std::uint8_t, 32>;

enum class Blake3Kernel { kPortable, kAvx512 };

// The kernel a default-constructed hasher uses: AVX-512 when the CPU has AVX-512F and the
// portable path is not forced (HEC_FORCE_PORTABLE, math::force_portable_path).
Blake3Kernel blake3_active_kernel();
bool blake3_kernel_available(Blake3Kernel kernel);
const char* blake3_kernel_name(Blake3Kernel kernel);

// Incremental hasher: update() with the input in any number of pieces of any sizes, then
// finalize() (which does not change the state, so more input may follow). The chaining
// values of finished subtrees wait on a stack (one per level, at most 54 for 2^64 bytes) and
// are merged as soon as a subtree is complete and more input follows it (paper section 5.1.2):
// the last chunk is only compressed when it is known to be the last, since only then does it
// know whether it is the root.
class Blake3 {
 public:
  explicit Blake3(Blake3Kernel kernel = blake3_active_kernel());

  void update(const void* data, std::size_t size);

  // A piece of input in caller memory; update_parallel hashes pieces in order.
  struct Span {
    const void* data;
    std::size_t size;
  };
  // Same result as update() of every piece in order. Whole subtrees of kParallelSubtree bytes
  // (aligned in the stream) are hashed by up to `threads` threads at once; the rest serially.
  void update_parallel(const std::vector<Span>& pieces, int threads);
  static constexpr std::size_t kParallelSubtree = std::size_t{1} << 20;

  Blake3Digest finalize() const;

  std::uint64_t bytes_hashed() const { return bytes_; }

 private:
  using Cv = std::array<std::uint32_t, 8>;
  struct ChunkState {
    Cv cv;
    std::uint64_t counter = 0;  // chunk index in the whole input
    std::uint8_t block[64] = {};
    std::size_t block_len = 0;    // bytes in `block`, not yet compressed
    std::size_t blocks_done = 0;  // blocks of this chunk already compressed
    std::size_t length() const { return 64 * blocks_done + block_len; }
  };
  struct Output;  // the last compression's inputs, compressed as root or as a chaining value

  // A hasher for the subtree that starts at chunk `first_chunk` (a multiple of the subtree's
  // chunk count), for update_parallel's workers.
  Blake3(Blake3Kernel kernel, std::uint64_t first_chunk);
  Output final_output() const;
  Cv subtree_cv() const;  // the chaining value of everything hashed (not a root)

  void start_chunk(std::uint64_t counter);
  void chunk_update(const std::uint8_t* p, std::size_t size);
  // Appends the chaining value of 2^log2_chunks chunks that start at the current chunk
  // position (aligned to their count) and are followed by more input; merges completed pairs.
  void push_subtree(const Cv& cv, unsigned log2_chunks);
  // Whole chunks straight from the caller's memory (the chunk state is empty, more than
  // `size` > 1024 bytes remain); returns the bytes consumed (a multiple of 1024, < size).
  std::size_t hash_whole_chunks(const std::uint8_t* p, std::size_t size);

  Blake3Kernel kernel_;
  std::uint64_t first_chunk_ = 0;    // nonzero for a subtree hasher
  std::uint64_t chunks_pushed_ = 0;  // chunks whose chaining values went to the stack
  std::uint64_t bytes_ = 0;
  ChunkState chunk_;
  Cv stack_[54];
  std::size_t stack_size_ = 0;
};

// One-shot BLAKE3-256 of a byte string.
Blake3Digest blake3_256(const void* data, std::size_t size,
                        Blake3Kernel kernel = blake3_active_kernel());

}  // namespace hec::core
