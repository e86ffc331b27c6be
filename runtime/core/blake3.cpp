// BLAKE3-256 (see blake3.h): the portable compression function and kernels, the incremental
// hasher with its chaining-value stack, and the threaded hashing of aligned 1 MiB subtrees.
#include "core/blake3.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/blake3_kernels.h"
#include "math/cpu_features.h"

namespace hec::core {

using namespace blake3_detail;

namespace {

inline std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

inline void load_block(const std::uint8_t* p, std::uint32_t m[16]) {
  for (int i = 0; i < 16; ++i) m[i] = load_le32(p + 4 * i);
}

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// The quarter-round G (section 2.2): mixes words a, b, c, d of the state with two message words.
inline void g(std::uint32_t* v, int a, int b, int c, int d, std::uint32_t x, std::uint32_t y) {
  v[a] = v[a] + v[b] + x;
  v[d] = rotr(v[d] ^ v[a], 16);
  v[c] = v[c] + v[d];
  v[b] = rotr(v[b] ^ v[c], 12);
  v[a] = v[a] + v[b] + y;
  v[d] = rotr(v[d] ^ v[a], 8);
  v[c] = v[c] + v[d];
  v[b] = rotr(v[b] ^ v[c], 7);
}

// One round: columns, then diagonals, with round R's message schedule (compile-time indices).
template <int R>
inline void round(std::uint32_t* v, const std::uint32_t m[16]) {
  constexpr auto s = kSchedule[R];
  g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
  g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
  g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
  g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
  g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
  g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
  g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
  g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
}

// The compression function (section 2.2) up to its feed-forward: v holds the 16 state words
// after 7 rounds; the chaining value is v[i] ^ v[i + 8] for i < 8.
inline void compress_rounds(const std::uint32_t cv[8], const std::uint32_t m[16],
                            std::uint64_t counter, std::uint32_t block_len, std::uint32_t flags,
                            std::uint32_t v[16]) {
  for (int i = 0; i < 8; ++i) v[i] = cv[i];
  for (int i = 0; i < 4; ++i) v[8 + i] = kIv[i];
  v[12] = static_cast<std::uint32_t>(counter);
  v[13] = static_cast<std::uint32_t>(counter >> 32);
  v[14] = block_len;
  v[15] = flags;
  round<0>(v, m);
  round<1>(v, m);
  round<2>(v, m);
  round<3>(v, m);
  round<4>(v, m);
  round<5>(v, m);
  round<6>(v, m);
}

// cv <- the first 8 words of the compression of block m under cv.
inline void compress_chain(std::uint32_t cv[8], const std::uint32_t m[16], std::uint64_t counter,
                           std::uint32_t block_len, std::uint32_t flags) {
  std::uint32_t v[16];
  compress_rounds(cv, m, counter, block_len, flags, v);
  for (int i = 0; i < 8; ++i) cv[i] = v[i] ^ v[i + 8];
}

struct Kernels {
  void (*hash_chunks)(const std::uint8_t*, std::size_t, std::uint64_t, std::uint32_t*);
  void (*hash_parents)(const std::uint32_t*, std::size_t, std::uint32_t*);
};

const Kernels& kernels_of(Blake3Kernel kernel) {
  static const Kernels portable{hash_chunks_portable, hash_parents_portable};
  static const Kernels avx512{hash_chunks_avx512, hash_parents_avx512};
  return kernel == Blake3Kernel::kAvx512 ? avx512 : portable;
}

constexpr unsigned kMaxSubtreeLog = 10;  // subtrees hashed in one go: up to 1024 chunks (1 MiB)

// The chaining value of the complete subtree of `chunks` (a power of two, at most 2^10) whole
// chunks at `data`, the first with counter `first_counter`: all leaves through the kernel, then
// every level of parents through the kernel.
std::array<std::uint32_t, 8> subtree_cv_of(const Kernels& k, const std::uint8_t* data,
                                           std::size_t chunks, std::uint64_t first_counter) {
  std::uint32_t level_a[(std::size_t{1} << kMaxSubtreeLog) * 8];
  std::uint32_t level_b[(std::size_t{1} << (kMaxSubtreeLog - 1)) * 8];
  k.hash_chunks(data, chunks, first_counter, level_a);
  std::uint32_t* cur = level_a;
  std::uint32_t* next = level_b;
  for (std::size_t n = chunks; n > 1; n /= 2) {
    k.hash_parents(cur, n / 2, next);
    std::swap(cur, next);
  }
  std::array<std::uint32_t, 8> cv;
  std::copy(cur, cur + 8, cv.begin());
  return cv;
}

}  // namespace

namespace blake3_detail {

void hash_chunks_portable(const std::uint8_t* data, std::size_t count, std::uint64_t first_counter,
                          std::uint32_t* cvs) {
  for (std::size_t c = 0; c < count; ++c) {
    std::uint32_t cv[8];
    std::copy(kIv, kIv + 8, cv);
    const std::uint8_t* chunk = data + c * kChunkLen;
    for (std::size_t b = 0; b < kBlocksPerChunk; ++b) {
      std::uint32_t m[16];
      load_block(chunk + b * kBlockLen, m);
      const std::uint32_t flags =
          (b == 0 ? kChunkStart : 0) | (b + 1 == kBlocksPerChunk ? kChunkEnd : 0);
      compress_chain(cv, m, first_counter + c, kBlockLen, flags);
    }
    std::copy(cv, cv + 8, cvs + 8 * c);
  }
}

void hash_parents_portable(const std::uint32_t* children, std::size_t count, std::uint32_t* out) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t cv[8];
    std::copy(kIv, kIv + 8, cv);
    compress_chain(cv, children + 16 * i, 0, kBlockLen, kParent);
    std::copy(cv, cv + 8, out + 8 * i);
  }
}

}  // namespace blake3_detail

Blake3Kernel blake3_active_kernel() {
  return blake3_kernel_available(Blake3Kernel::kAvx512) && !math::portable_path_forced()
             ? Blake3Kernel::kAvx512
             : Blake3Kernel::kPortable;
}

bool blake3_kernel_available(Blake3Kernel kernel) {
  return kernel == Blake3Kernel::kPortable || math::cpu_features().avx512f;
}

const char* blake3_kernel_name(Blake3Kernel kernel) {
  return kernel == Blake3Kernel::kAvx512 ? "avx512" : "portable";
}

// The inputs of a compression not yet done: the last block of the input (a chunk's last block
// or a parent), which becomes the root or a chaining value.
struct Blake3::Output {
  Cv cv;
  std::uint32_t block[16];
  std::uint64_t counter;
  std::uint32_t block_len;
  std::uint32_t flags;

  Cv chaining_value() const {
    Cv out = cv;
    compress_chain(out.data(), block, counter, block_len, flags);
    return out;
  }
  // The root compression has output block counter 0 (section 2.6); 32 bytes of it.
  Blake3Digest root() const {
    std::uint32_t v[16];
    compress_rounds(cv.data(), block, 0, block_len, flags | kRoot, v);
    Blake3Digest d;
    for (int i = 0; i < 8; ++i) {
      const std::uint32_t w = v[i] ^ v[i + 8];
      for (int j = 0; j < 4; ++j) d[4 * i + j] = static_cast<std::uint8_t>(w >> (8 * j));
    }
    return d;
  }
};

namespace {

using ChainingValue = std::array<std::uint32_t, 8>;

// The chaining value of the parent of two subtrees (a non-root parent node, section 2.5).
ChainingValue parent_cv(const ChainingValue& left, const ChainingValue& right) {
  std::uint32_t block[16];
  std::copy(left.begin(), left.end(), block);
  std::copy(right.begin(), right.end(), block + 8);
  ChainingValue cv;
  std::copy(kIv, kIv + 8, cv.begin());
  compress_chain(cv.data(), block, 0, kBlockLen, kParent);
  return cv;
}

}  // namespace

Blake3::Blake3(Blake3Kernel kernel) : Blake3(kernel, 0) {}

Blake3::Blake3(Blake3Kernel kernel, std::uint64_t first_chunk)
    : kernel_(kernel), first_chunk_(first_chunk) {
  if (!blake3_kernel_available(kernel)) {
    throw std::invalid_argument(std::string("BLAKE3: the ") + blake3_kernel_name(kernel) +
                                " kernel needs AVX-512F, which this CPU does not have");
  }
  start_chunk(first_chunk);
}

void Blake3::start_chunk(std::uint64_t counter) {
  std::copy(kIv, kIv + 8, chunk_.cv.begin());
  chunk_.counter = counter;
  std::memset(chunk_.block, 0, sizeof chunk_.block);
  chunk_.block_len = 0;
  chunk_.blocks_done = 0;
}

void Blake3::chunk_update(const std::uint8_t* p, std::size_t size) {
  while (size > 0) {
    // A full block is compressed only once more input shows it is not the chunk's last.
    if (chunk_.block_len == kBlockLen) {
      std::uint32_t m[16];
      load_block(chunk_.block, m);
      compress_chain(chunk_.cv.data(), m, chunk_.counter, kBlockLen,
                     chunk_.blocks_done == 0 ? kChunkStart : 0);
      ++chunk_.blocks_done;
      std::memset(chunk_.block, 0, sizeof chunk_.block);
      chunk_.block_len = 0;
    }
    const std::size_t take = std::min(kBlockLen - chunk_.block_len, size);
    std::memcpy(chunk_.block + chunk_.block_len, p, take);
    chunk_.block_len += take;
    p += take;
    size -= take;
  }
}

void Blake3::push_subtree(const Cv& cv, unsigned log2_chunks) {
  // Step (1): count the new chunks. Step (2): every trailing zero bit of the count (above the
  // subtree's own level) is a left sibling on the stack whose pair is now complete, and more
  // input follows it, so the pair is merged into their parent (paper section 5.1.2).
  chunks_pushed_ += std::uint64_t{1} << log2_chunks;
  std::uint64_t total = chunks_pushed_ >> log2_chunks;
  Cv merged = cv;
  while ((total & 1) == 0) {
    merged = parent_cv(stack_[--stack_size_], merged);
    total >>= 1;
  }
  stack_[stack_size_++] = merged;
}

std::size_t Blake3::hash_whole_chunks(const std::uint8_t* p, std::size_t size) {
  const Kernels& k = kernels_of(kernel_);
  const std::uint64_t counter = chunk_.counter;
  const std::size_t available = (size - 1) / kChunkLen;  // leaves at least one byte
  std::size_t done = 0;
  if (counter % 16 == 0 && available >= 16) {
    // A whole aligned subtree of 2^log chunks: its parents are hashed 16 at a time too.
    unsigned log = 4;
    while (log < kMaxSubtreeLog && (std::size_t{2} << log) <= available &&
           counter % (std::uint64_t{2} << log) == 0) {
      ++log;
    }
    done = std::size_t{1} << log;
    push_subtree(subtree_cv_of(k, p, done, counter), log);
  } else {
    // Up to the next multiple of 16 chunks: the leaves in one kernel call, parents one by one.
    done = std::min<std::size_t>(available, 16 - counter % 16);
    std::uint32_t cvs[16 * 8];
    k.hash_chunks(p, done, counter, cvs);
    for (std::size_t i = 0; i < done; ++i) {
      Cv cv;
      std::copy(cvs + 8 * i, cvs + 8 * i + 8, cv.begin());
      push_subtree(cv, 0);
    }
  }
  start_chunk(first_chunk_ + chunks_pushed_);
  return done * kChunkLen;
}

void Blake3::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  bytes_ += size;
  while (size > 0) {
    if (chunk_.length() == kChunkLen) {  // full, and more input follows: not the last chunk
      push_subtree(final_output().chaining_value(), 0);  // the chunk's own output
      start_chunk(first_chunk_ + chunks_pushed_);
    }
    if (chunk_.length() == 0 && size > kChunkLen) {
      const std::size_t done = hash_whole_chunks(p, size);
      p += done;
      size -= done;
      continue;
    }
    const std::size_t take = std::min(kChunkLen - chunk_.length(), size);
    chunk_update(p, take);
    p += take;
    size -= take;
  }
}

Blake3::Output Blake3::final_output() const {
  Output out{};
  out.cv = chunk_.cv;
  load_block(chunk_.block, out.block);
  out.counter = chunk_.counter;
  out.block_len = static_cast<std::uint32_t>(chunk_.block_len);
  out.flags = (chunk_.blocks_done == 0 ? kChunkStart : 0) | kChunkEnd;
  return out;
}

Blake3::Cv Blake3::subtree_cv() const {
  Cv cv = final_output().chaining_value();
  for (std::size_t i = stack_size_; i > 0; --i) cv = parent_cv(stack_[i - 1], cv);
  return cv;
}

Blake3Digest Blake3::finalize() const {
  // The last chunk's output, then its parents up the right edge of the tree; the topmost is
  // the root.
  Output out = final_output();
  for (std::size_t i = stack_size_; i > 0; --i) {
    const Cv right = out.chaining_value();
    std::copy(kIv, kIv + 8, out.cv.begin());
    std::copy(stack_[i - 1].begin(), stack_[i - 1].end(), out.block);
    std::copy(right.begin(), right.end(), out.block + 8);
    out.counter = 0;
    out.block_len = kBlockLen;
    out.flags = kParent;
  }
  return out.root();
}

void Blake3::update_parallel(const std::vector<Span>& pieces, int threads) {
  std::uint64_t total = 0;
  for (const Span& s : pieces) total += s.size;
  if (threads <= 1 || total < 2 * kParallelSubtree) {
    for (const Span& s : pieces) update(s.data, s.size);
    return;
  }
  // Step (1): serially up to a multiple of kParallelSubtree bytes in the stream.
  struct Segment {
    const std::uint8_t* data;
    std::size_t size;
  };
  std::vector<Segment> rest;
  rest.reserve(pieces.size());
  for (const Span& s : pieces) {
    const auto* p = static_cast<const std::uint8_t*>(s.data);
    std::size_t size = s.size;
    if (rest.empty()) {
      const std::size_t to_boundary = static_cast<std::size_t>(
          (kParallelSubtree - bytes_ % kParallelSubtree) % kParallelSubtree);
      const std::size_t take = std::min(size, to_boundary);
      update(p, take);
      p += take;
      size -= take;
    }
    if (size > 0) rest.push_back({p, size});
  }
  // Step (2): whole subtrees, each a list of segments, every one followed by more input
  // (the input's last byte must stay with the serial tail, which decides the root).
  std::vector<std::vector<Segment>> jobs;
  std::vector<Segment> current;
  std::size_t filled = 0;
  for (Segment seg : rest) {
    while (seg.size > 0) {
      const std::size_t take = std::min(seg.size, kParallelSubtree - filled);
      current.push_back({seg.data, take});
      filled += take;
      seg.data += take;
      seg.size -= take;
      if (filled == kParallelSubtree) {
        jobs.push_back(std::move(current));
        current.clear();
        filled = 0;
      }
    }
  }
  if (current.empty() && !jobs.empty()) {
    current = std::move(jobs.back());
    jobs.pop_back();
  }
  if (jobs.empty()) {
    for (const Segment& seg : current) update(seg.data, seg.size);
    return;
  }
  // Step (3): the subtrees on up to `threads` threads. No exception may leave the parallel
  // region: the first is kept and rethrown after it.
  // The chunk that ends at the boundary is complete and followed by the jobs: push it first.
  if (chunk_.length() == kChunkLen) {
    push_subtree(final_output().chaining_value(), 0);
    start_chunk(first_chunk_ + chunks_pushed_);
  }
  const std::uint64_t first = chunk_.counter;
  constexpr std::uint64_t kChunksPerJob = kParallelSubtree / kChunkLen;
  std::vector<Cv> cvs(jobs.size());
  std::exception_ptr error;
  std::mutex error_lock;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    try {
      Blake3 subtree(kernel_, first + j * kChunksPerJob);
      for (const Segment& seg : jobs[j]) subtree.update(seg.data, seg.size);
      cvs[j] = subtree.subtree_cv();
    } catch (...) {
      const std::lock_guard<std::mutex> guard(error_lock);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  // Step (4): the subtrees onto the stack in order, then the tail serially.
  for (const Cv& cv : cvs) push_subtree(cv, 10);
  static_assert(kParallelSubtree == (std::size_t{1} << 10) * kChunkLen);
  bytes_ += jobs.size() * kParallelSubtree;
  start_chunk(first_chunk_ + chunks_pushed_);
  for (const Segment& seg : current) update(seg.data, seg.size);
}

Blake3Digest blake3_256(const void* data, std::size_t size, Blake3Kernel kernel) {
  Blake3 h(kernel);
  h.update(data, size);
  return h.finalize();
}

}  // namespace hec::core
