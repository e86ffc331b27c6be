// Tests for program/npy.h: round trips, every dtype we accept, and one test per malformed-file
// message (each names the file and what is wrong).
#include "program/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "program/output.h"
#include "tests/program/test_dir.h"

namespace hec::program {
namespace {

using testing::TempDir;

std::string raw_file(const std::string& header_dict, const std::string& data, int major = 1) {
  std::string dict = header_dict;
  dict.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  if (major == 1) {
    out.push_back(static_cast<char>(dict.size() & 0xff));
    out.push_back(static_cast<char>(dict.size() >> 8));
  } else {
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((dict.size() >> (8 * k)) & 0xff));
  }
  return out + dict + data;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string error_of(const std::filesystem::path& path) {
  try {
    read_npy(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, Float64RoundTrip) {
  TempDir dir;
  const std::vector<double> values{1.5, -2.0, 3.25, 0.0, 1e300, -1e-300};
  write_npy(dir / "a.npy", {2, 3}, values);
  const NpyArray a = read_npy(dir / "a.npy");
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(a.data, values);
  EXPECT_EQ(a.descr, "<f8");
}

TEST(Npy, HeaderIsPaddedTo64Bytes) {
  const std::vector<double> v{1.0};
  const std::string bytes = npy_bytes({1}, "<f8", v.data(), 8);
  EXPECT_EQ((bytes.size() - 8) % 64, 0u);
  EXPECT_EQ(bytes[bytes.size() - 9], '\n');
}

TEST(Npy, ScalarAndEmptyShapes) {
  TempDir dir;
  write_npy(dir / "s.npy", {}, {4.5});
  const NpyArray s = read_npy(dir / "s.npy");
  EXPECT_TRUE(s.shape.empty());
  ASSERT_EQ(s.data.size(), 1u);
  EXPECT_EQ(s.data[0], 4.5);
  write_npy(dir / "e.npy", {0, 3}, {});
  EXPECT_EQ(read_npy(dir / "e.npy").size(), 0u);
}

TEST(Npy, Int64RoundTrip) {
  TempDir dir;
  write_npy_int64(dir / "i.npy", {3}, {-7, 0, 1LL << 40});
  const NpyArray a = read_npy(dir / "i.npy");
  EXPECT_EQ(a.descr, "<i8");
  EXPECT_EQ(a.data, (std::vector<double>{-7.0, 0.0, static_cast<double>(1LL << 40)}));
}

TEST(Npy, AcceptsSmallIntegerFloatAndBoolDtypes) {
  TempDir dir;
  struct Case {
    std::string descr, data;
  };
  const std::vector<Case> cases{
      {"<f4", bytes_of(std::vector<float>{1.5f, -2.0f})},
      {"<i4", bytes_of(std::vector<std::int32_t>{1, -2})},
      {"<i2", bytes_of(std::vector<std::int16_t>{1, -2})},
      {"|i1", bytes_of(std::vector<std::int8_t>{1, -2})},
      {"<u8", bytes_of(std::vector<std::uint64_t>{1, 2})},
      {"<u4", bytes_of(std::vector<std::uint32_t>{1, 2})},
      {"<u2", bytes_of(std::vector<std::uint16_t>{1, 2})},
      {"|u1", bytes_of(std::vector<std::uint8_t>{1, 2})},
      {"|b1", bytes_of(std::vector<std::uint8_t>{1, 0})},
  };
  for (const auto& c : cases) {
    const auto path = dir / "t.npy";
    write_file_atomic(
        path,
        raw_file("{'descr': '" + c.descr + "', 'fortran_order': False, 'shape': (2,), }", c.data));
    const NpyArray a = read_npy(path);
    ASSERT_EQ(a.data.size(), 2u) << c.descr;
    EXPECT_EQ(a.data[0], c.descr == "<f4" ? 1.5 : 1.0) << c.descr;
  }
}

TEST(Npy, AcceptsVersion2HeaderAndKeysInAnyOrder) {
  TempDir dir;
  write_file_atomic(dir / "v2.npy",
                    raw_file("{'shape': (1, 2), 'fortran_order': False, 'descr': '<f8'}",
                             bytes_of(std::vector<double>{3.0, 4.0}), 2));
  const NpyArray a = read_npy(dir / "v2.npy");
  EXPECT_EQ(a.shape, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(a.data[1], 4.0);
}

TEST(Npy, MissingFile) {
  TempDir dir;
  const std::string e = error_of(dir / "nope.npy");
  EXPECT_NE(e.find("nope.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot open"), std::string::npos) << e;
}

TEST(Npy, BadMagic) {
  TempDir dir;
  write_file_atomic(dir / "m.npy", "hello world, not numpy");
  const std::string e = error_of(dir / "m.npy");
  EXPECT_NE(e.find("m.npy"), std::string::npos) << e;
  EXPECT_NE(e.find("magic"), std::string::npos) << e;
}

TEST(Npy, UnsupportedVersion) {
  TempDir dir;
  std::string f = raw_file("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                           bytes_of(std::vector<double>{1.0}));
  f[6] = 9;
  write_file_atomic(dir / "v.npy", f);
  EXPECT_NE(error_of(dir / "v.npy").find("unsupported format version 9.0"), std::string::npos);
}

TEST(Npy, TruncatedHeader) {
  TempDir dir;
  const std::string f = raw_file("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", "");
  write_file_atomic(dir / "h.npy", f.substr(0, 20));
  EXPECT_NE(error_of(dir / "h.npy").find("truncated"), std::string::npos);
}

TEST(Npy, TruncatedData) {
  TempDir dir;
  write_file_atomic(dir / "d.npy",
                    raw_file("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
                             bytes_of(std::vector<double>{1.0, 2.0})));
  const std::string e = error_of(dir / "d.npy");
  EXPECT_NE(e.find("truncated: shape (3,) of <f8 needs 24 data bytes, the file has 16"),
            std::string::npos)
      << e;
}

TEST(Npy, TrailingData) {
  TempDir dir;
  write_file_atomic(dir / "t.npy",
                    raw_file("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
                             bytes_of(std::vector<double>{1.0, 2.0})));
  EXPECT_NE(error_of(dir / "t.npy").find("trailing bytes"), std::string::npos);
}

TEST(Npy, FortranOrderRefused) {
  TempDir dir;
  write_file_atomic(dir / "f.npy",
                    raw_file("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1), }",
                             bytes_of(std::vector<double>{1.0})));
  EXPECT_NE(error_of(dir / "f.npy").find("Fortran order"), std::string::npos);
}

TEST(Npy, BigEndianAndComplexRefused) {
  TempDir dir;
  for (const std::string descr : {">f8", "<c16", "|O", "<U3"}) {
    write_file_atomic(dir / "b.npy",
                      raw_file("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (), }",
                               std::string(8, '\0')));
    const std::string e = error_of(dir / "b.npy");
    EXPECT_NE(e.find("unsupported dtype"), std::string::npos) << descr << ": " << e;
  }
}

TEST(Npy, MalformedHeaderDict) {
  TempDir dir;
  write_file_atomic(dir / "x.npy", raw_file("not a dict", ""));
  EXPECT_NE(error_of(dir / "x.npy").find("not a dictionary"), std::string::npos);
  write_file_atomic(dir / "y.npy", raw_file("{'descr': '<f8', 'shape': (), }", ""));
  EXPECT_NE(error_of(dir / "y.npy").find("lacks"), std::string::npos);
  write_file_atomic(dir / "z.npy",
                    raw_file("{'descr': '<f8', 'fortran_order': False, 'shape': (a,), }", ""));
  EXPECT_NE(error_of(dir / "z.npy").find("shape"), std::string::npos);
}

TEST(Npy, NonFiniteValuesRefused) {
  TempDir dir;
  write_npy(dir / "n.npy", {2}, {1.0, std::numeric_limits<double>::quiet_NaN()});
  EXPECT_NE(error_of(dir / "n.npy").find("element 1 is not a finite number"), std::string::npos);
}

TEST(Npy, WriteChecksShape) {
  TempDir dir;
  EXPECT_THROW(write_npy(dir / "w.npy", {2, 2}, {1.0}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir / "w.npy"));
}

TEST(Npz, Crc32KnownAnswer) {
  // The standard check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32("", 0), 0u);
}

TEST(Npz, ArchiveLayout) {
  TempDir dir;
  const std::vector<double> a{1.0, 2.0};
  const std::string member = npy_bytes({2}, "<f8", a.data(), 16);
  write_npz(dir / "r.npz", {{"a", member}, {"b", member}});
  std::ifstream in(dir / "r.npz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.compare(0, 4, "PK\x03\x04"), 0);
  EXPECT_NE(bytes.find("a.npy"), std::string::npos);
  EXPECT_NE(bytes.find("b.npy"), std::string::npos);
  EXPECT_EQ(bytes.compare(bytes.size() - 22, 4, "PK\x05\x06"), 0);  // end record, 2 entries
  EXPECT_EQ(bytes[bytes.size() - 22 + 10], 2);
  EXPECT_THROW(write_npz(dir / "d.npz", {{"a", member}, {"a", member}}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir / "d.npz"));
}

TEST(Npy, FormatShapeLikeNumpy) {
  EXPECT_EQ(format_shape({}), "()");
  EXPECT_EQ(format_shape({5}), "(5,)");
  EXPECT_EQ(format_shape({3, 4}), "(3, 4)");
}

}  // namespace
}  // namespace hec::program
