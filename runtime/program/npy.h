// Plain arrays in and out of generated programs: the NumPy .npy format (versions 1.0, 2.0 and
// 3.0), as described in numpy/lib/format.py ("A simple format for saving numpy arrays to disk").
// Reading accepts little-endian float64/float32 and signed/unsigned integers of 1-8 bytes and
// booleans, C order only, and converts to double; every malformed file gets an error naming the
// file and what is wrong. Writing produces version 1.0 files (float64 or int64), atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hec::program {

// A dense array in C (row-major) order, converted to double on reading.
struct NpyArray {
  std::vector<std::size_t> shape;  // empty for a 0-d (scalar) array
  std::vector<double> data;        // product(shape) values, C order
  std::string descr;               // the dtype the file held, e.g. "<f8", "|u1"

  std::size_t size() const;
};

// Reads `path`. Throws std::runtime_error naming the file for: a missing or unreadable file,
// a bad magic string, an unsupported format version, a header that is not the expected
// dictionary, an unsupported dtype (big-endian, complex, object, strings), Fortran order,
// a data section shorter or longer than the shape requires, and (for float data) NaN values.
NpyArray read_npy(const std::filesystem::path& path);

// Writes `data` (product(shape) values, C order) as a version 1.0 .npy file of float64
// ("<f8") or int64 ("<i8"). Written to a temporary name and renamed when complete.
void write_npy(const std::filesystem::path& path, const std::vector<std::size_t>& shape,
               const std::vector<double>& data);
void write_npy_int64(const std::filesystem::path& path, const std::vector<std::size_t>& shape,
                     const std::vector<std::int64_t>& data);

// The bytes of a .npy file (header and data) for an in-memory write; used by write_npy.
std::string npy_bytes(const std::vector<std::size_t>& shape, const std::string& descr,
                      const void* data, std::size_t data_bytes);

// An uncompressed .npz archive (a ZIP file of stored .npy members, as numpy.savez writes):
// `members` are (name without ".npy", .npy bytes from npy_bytes). Written atomically. Throws
// std::invalid_argument for a member of 4 GiB or more (no ZIP64) or a duplicate name.
void write_npz(const std::filesystem::path& path,
               const std::vector<std::pair<std::string, std::string>>& members);

// CRC-32 (ISO-HDLC, the ZIP checksum) of `size` bytes.
std::uint32_t crc32(const void* data, std::size_t size);

// "(3, 4)", "(5,)" or "()": the shape as NumPy prints it, for messages.
std::string format_shape(const std::vector<std::size_t>& shape);

}  // namespace hec::program
