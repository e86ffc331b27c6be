// Tests for core/serialize.h: round trip, and one test per malformed-file case, each checking
// that the message names the file and the mismatch.
#include "core/serialize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>

#include "core/blake3.h"

namespace hec::core {
namespace {

namespace fs = std::filesystem;

class Serialize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("hec_serialize_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    header.scheme = Scheme::kCkks;
    header.kind = ObjectKind::kCiphertext;
    header.params_digest.fill(0xab);
    header.key_id = new_key_id();
    header.level = 3;
    header.scale = 1099511627776.5;
    header.degree = 2;
    payload = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    expect.scheme = Scheme::kCkks;
    expect.kind = ObjectKind::kCiphertext;
    expect.params_digest = header.params_digest;
    expect.key_id = header.key_id;
    path = dir / "object.hec";
    write_object(path, header, payload);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<std::uint8_t> bytes() const {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void overwrite(const std::vector<std::uint8_t>& b) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  // The error message of reading `path`, which must fail.
  std::string error_of(const Expectation& e) const {
    try {
      read_object(path, e);
    } catch (const std::runtime_error& err) {
      const std::string msg = err.what();
      EXPECT_NE(msg.find(path.string()), std::string::npos) << "message lacks the path: " << msg;
      return msg;
    }
    ADD_FAILURE() << "read_object did not throw";
    return "";
  }

  fs::path dir, path;
  ObjectHeader header;
  std::vector<std::uint8_t> payload;
  Expectation expect;
};

TEST_F(Serialize, RoundTrip) {
  const Object obj = read_object(path, expect);
  EXPECT_EQ(obj.payload, payload);
  EXPECT_EQ(obj.header.level, 3);
  EXPECT_EQ(obj.header.scale, 1099511627776.5);
  EXPECT_EQ(obj.header.degree, 2u);
  EXPECT_EQ(obj.header.key_id, header.key_id);
  EXPECT_EQ(obj.header.payload_length, payload.size());
  EXPECT_EQ(bytes().size(), kHeaderSize + payload.size() + kChecksumSize);
  EXPECT_FALSE(fs::exists(dir / "object.hec.tmp"));
}

TEST_F(Serialize, BadMagic) {
  auto b = bytes();
  b[0] = 'X';
  overwrite(b);
  EXPECT_NE(error_of(expect).find("bad magic"), std::string::npos);
}

TEST_F(Serialize, WrongVersion) {
  auto b = bytes();
  b[4] = 99;
  overwrite(b);
  EXPECT_NE(error_of(expect).find("unsupported format version 99"), std::string::npos);
}

// Format 2 ended in an XXH3-128 checksum (not cryptographic); its files are refused by version.
TEST_F(Serialize, OlderVersionIsNamedAsSuch) {
  auto b = bytes();
  b[4] = 2;
  overwrite(b);
  const std::string error = error_of(expect);
  EXPECT_NE(error.find("unsupported format version 2"), std::string::npos) << error;
  EXPECT_NE(error.find("an older hec wrote it"), std::string::npos) << error;
}

// Format 5 ended in a chunked SHA-256 digest; this build reads format 6 (BLAKE3) only.
TEST_F(Serialize, Version5IsRefusedByVersion) {
  auto b = bytes();
  b[4] = 5;
  overwrite(b);
  const std::string error = error_of(expect);
  EXPECT_NE(error.find("unsupported format version 5 (this build reads version 6, whose files "
                       "end in a BLAKE3-256 digest)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("an older hec wrote it"), std::string::npos) << error;
}

// The trailer (format 6) is BLAKE3-256 of header and payload (core/blake3.h, whose own tests
// check it against the BLAKE3 team's implementation).
std::array<std::uint8_t, 32> reference_digest(const std::uint8_t* data, std::size_t size) {
  return blake3_256(data, size, Blake3Kernel::kPortable);
}

TEST_F(Serialize, TrailerIsTheBlake3OfTheContent) {
  const auto b = bytes();
  ASSERT_EQ(kChecksumSize, 32u);
  const auto want = reference_digest(b.data(), b.size() - 32);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), b.end() - 32));
}

TEST_F(Serialize, TruncatedHeader) {
  auto b = bytes();
  b.resize(40);
  overwrite(b);
  EXPECT_NE(error_of(expect).find("smaller than the 84-byte header"), std::string::npos);
}

TEST_F(Serialize, TruncatedPayload) {
  auto b = bytes();
  b.resize(b.size() - 5);
  overwrite(b);
  const std::string msg = error_of(expect);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("announces 12 payload bytes"), std::string::npos) << msg;
}

TEST_F(Serialize, TrailingBytes) {
  auto b = bytes();
  b.push_back(0);
  overwrite(b);
  EXPECT_NE(error_of(expect).find("trailing bytes"), std::string::npos);
}

TEST_F(Serialize, ChecksumFailure) {
  auto b = bytes();
  b[kHeaderSize + 3] ^= 1;  // one payload bit
  overwrite(b);
  EXPECT_NE(error_of(expect).find("checksum failure"), std::string::npos);
}

TEST_F(Serialize, WrongScheme) {
  Expectation e = expect;
  e.scheme = Scheme::kBfv;
  const std::string msg = error_of(e);
  EXPECT_NE(msg.find("wrong scheme: file holds CKKS"), std::string::npos) << msg;
}

TEST_F(Serialize, WrongKind) {
  Expectation e = expect;
  e.kind = ObjectKind::kRelinKey;
  const std::string msg = error_of(e);
  EXPECT_NE(msg.find("wrong kind: file holds a ciphertext"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a relinearization key"), std::string::npos) << msg;
}

TEST_F(Serialize, ParameterDigestMismatch) {
  Expectation e = expect;
  e.params_digest->fill(0xcd);
  const std::string msg = error_of(e);
  EXPECT_NE(msg.find("parameter digest mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("abababab"), std::string::npos) << msg;
}

TEST_F(Serialize, KeyIdMismatch) {
  Expectation e = expect;
  e.key_id = new_key_id();
  const std::string msg = error_of(e);
  EXPECT_NE(msg.find("key id mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find(to_hex(header.key_id.data(), 16)), std::string::npos) << msg;
}

TEST_F(Serialize, MissingFile) {
  fs::remove(path);
  EXPECT_NE(error_of(expect).find("cannot open"), std::string::npos);
}

TEST_F(Serialize, UnwritableDirectoryLeavesNothing) {
  const fs::path bad = dir / "no_such_dir" / "x.hec";
  EXPECT_THROW(write_object(bad, header, payload), std::runtime_error);
  EXPECT_FALSE(fs::exists(bad));
}

TEST_F(Serialize, InMemoryEncodeDecode) {
  const auto b = encode_object(header, payload);
  EXPECT_EQ(decode_object(b, expect, "memory").payload, payload);
  EXPECT_EQ(blake2b_256(b.data(), 0), blake2b_256(nullptr, 0));
  EXPECT_NE(new_key_id(), new_key_id());
}

// --- streaming writer and reader (the ciphertext-array path) ---------------------------

namespace streaming {

// A payload large enough to pass the writer's and the reader's direct (unbuffered) path.
std::vector<std::uint8_t> big_payload() {
  std::vector<std::uint8_t> p(3 * 1024 * 1024 + 17);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint8_t>(i * 2654435761u >> 7);
  return p;
}

// Writes `p` in pieces of varied sizes (small fields, then large runs).
void write_streamed(const fs::path& path, ObjectHeader h, const std::vector<std::uint8_t>& p) {
  h.payload_length = p.size();
  ObjectWriter w(path, h);
  std::size_t at = 0;
  for (std::size_t piece : {4u, 8u, 1u, 2000000u, 5u}) {
    piece = std::min(piece, p.size() - at);
    w.put(p.data() + at, piece);
    at += piece;
  }
  w.put(p.data() + at, p.size() - at);
  w.finish();
}

}  // namespace streaming

TEST_F(Serialize, StreamedFileIsTheSameContainer) {
  const auto p = streaming::big_payload();
  streaming::write_streamed(path, header, p);
  EXPECT_FALSE(fs::exists(dir / "object.hec.tmp"));
  // The whole-file reader accepts it ...
  EXPECT_EQ(read_object(path, expect).payload, p);
  // ... and the streaming reader gives it back in pieces of any size.
  ObjectReader r(path, expect);
  EXPECT_EQ(r.header().payload_length, p.size());
  std::vector<std::uint8_t> got(p.size());
  r.get(got.data(), 3);
  r.get(got.data() + 3, 1500000);
  r.get(got.data() + 1500003, p.size() - 1500003);
  r.finish();
  EXPECT_EQ(got, p);
}

// A file of several 1 MiB subtrees: the writer's serial digest is the reference's, and the
// reader's scattered reads (pieces across subtree boundaries, two threads hashing whole
// subtrees) verify it.
TEST_F(Serialize, ScatteredReadsVerifyTheDigestOnThreads) {
  const auto p = streaming::big_payload();
  streaming::write_streamed(path, header, p);
  const auto b = bytes();
  const auto want = reference_digest(b.data(), b.size() - 32);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), b.end() - 32));
  for (const int threads : {1, 2}) {
    ObjectReader r(path, expect);
    std::vector<std::uint8_t> got(p.size());
    std::size_t at = 0;
    r.get(got.data(), 10);  // through the buffer: a subtree opened serially
    at = 10;
    for (const std::size_t piece : {std::size_t{700000}, std::size_t{1} << 20, std::size_t{3}}) {
      std::vector<ObjectReader::Piece> pieces;
      for (int k = 0; k < 3 && at < p.size(); ++k) {
        const std::size_t size = std::min(piece, p.size() - at);
        pieces.push_back({got.data() + at, size});
        at += size;
      }
      r.get_scattered(pieces, threads);
    }
    r.get(got.data() + at, p.size() - at);
    r.finish();
    EXPECT_EQ(got, p) << threads;
  }
  // One changed byte in the middle subtree is found by the threaded reader too.
  auto bad = b;
  bad[kHeaderSize + 1500000] ^= 1;
  overwrite(bad);
  ObjectReader r(path, expect);
  std::vector<std::uint8_t> got(p.size());
  r.get_scattered({{got.data(), p.size()}}, 2);
  try {
    r.finish();
    ADD_FAILURE() << "a changed byte passed";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find("checksum failure"), std::string::npos) << err.what();
  }
}

TEST_F(Serialize, StreamedReaderFindsCorruptionAtFinish) {
  const auto p = streaming::big_payload();
  streaming::write_streamed(path, header, p);
  auto b = bytes();
  b[kHeaderSize + 2500000] ^= 0x10;
  overwrite(b);
  ObjectReader r(path, expect);
  std::vector<std::uint8_t> got(p.size());
  r.get(got.data(), got.size());
  try {
    r.finish();
    ADD_FAILURE() << "finish() did not throw";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("checksum failure"), std::string::npos) << msg;
  }
}

// A signed record binds a file to its digest (Expectation::content): another valid file,
// consistent with its own trailer, is refused by the read itself, streamed or whole, while the
// file the record names passes. (Was: the server compared the signed digest with the trailer
// when it indexed the uploads and read them later against the trailer only, so a file swapped
// in between passed.)
TEST_F(Serialize, PinnedDigestRefusesAnotherValidFile) {
  const Checksum pinned = checksum(bytes().data(), bytes().size() - kChecksumSize);
  EXPECT_EQ(checksum_from_hex(to_hex(pinned.data(), pinned.size()), "meta"), pinned);
  Expectation pinned_expect = expect;
  pinned_expect.content = pinned;
  EXPECT_EQ(read_object(path, pinned_expect).payload, payload);
  {
    ObjectReader r(path, pinned_expect);
    std::vector<std::uint8_t> got(payload.size());
    r.get(got.data(), got.size());
    r.finish();
  }
  payload[0] ^= 1;  // another file with its own, correct trailer
  write_object(path, header, payload);
  EXPECT_NE(error_of(pinned_expect).find("replaced after it was checked"), std::string::npos);
  EXPECT_EQ(read_object(path, expect).payload, payload);  // unpinned, it is a valid file
  ObjectReader r(path, pinned_expect);
  std::vector<std::uint8_t> got(payload.size());
  r.get(got.data(), got.size());
  try {
    r.finish();
    ADD_FAILURE() << "finish() did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not the one its signed metadata binds"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChecksumHex, RefusesWhatIsNotADigest) {
  const std::string bads[] = {"", "abc", std::string(63, 'a'), std::string(64, 'g')};
  for (const std::string& bad : bads) {
    try {
      checksum_from_hex(bad, "x.meta");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("x.meta: "), std::string::npos) << e.what();
    }
  }
}

TEST_F(Serialize, StreamedReaderChecksHeaderAndSizeFirst) {
  const auto p = streaming::big_payload();
  streaming::write_streamed(path, header, p);
  auto b = bytes();
  b.resize(b.size() - 100);  // truncated
  overwrite(b);
  try {
    ObjectReader r(path, expect);
    ADD_FAILURE() << "a truncated file was opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  streaming::write_streamed(path, header, p);
  Expectation other = expect;
  other.key_id->fill(7);
  try {
    ObjectReader r(path, other);
    ADD_FAILURE() << "a file under other keys was opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("key id mismatch"), std::string::npos) << e.what();
  }
}

TEST_F(Serialize, StreamedReaderRefusesOverreadAndUnderread) {
  streaming::write_streamed(path, header, payload);
  {
    ObjectReader r(path, expect);
    std::vector<std::uint8_t> got(payload.size() + 1);
    EXPECT_THROW(r.get(got.data(), got.size()), std::runtime_error);
  }
  ObjectReader r(path, expect);
  std::uint8_t one;
  r.get(&one, 1);
  EXPECT_THROW(r.finish(), std::runtime_error);  // payload bytes left unread
}

TEST_F(Serialize, AbandonedWriterLeavesNothing) {
  const fs::path fresh = dir / "fresh.hec";
  ObjectHeader h = header;
  h.payload_length = 100;
  {
    ObjectWriter w(fresh, h);
    std::vector<std::uint8_t> half(50, 1);
    w.put(half.data(), half.size());
    EXPECT_THROW(w.finish(), std::logic_error);  // 50 bytes short
  }
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(dir / "fresh.hec.tmp"));
  {
    ObjectWriter w(fresh, h);
    std::vector<std::uint8_t> too_much(101, 1);
    EXPECT_THROW(w.put(too_much.data(), too_much.size()), std::logic_error);
  }
  EXPECT_FALSE(fs::exists(fresh));
}

}  // namespace
}  // namespace hec::core
