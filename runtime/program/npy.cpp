// .npy reading and writing (see npy.h). The header is a Python dict literal; we parse exactly
// the three keys the format defines ('descr', 'fortran_order', 'shape') and nothing else.
#include "program/npy.h"

#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "program/output.h"

namespace hec::program {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": not a valid .npy file: " + what);
}

// A tiny cursor over the header dict text.
struct Cursor {
  const std::string& s;
  std::size_t i = 0;
  void skip_space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) ++i;
  }
  bool eat(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
};

std::string parse_string(Cursor& c, const std::filesystem::path& path) {
  c.skip_space();
  if (c.i >= c.s.size() || (c.s[c.i] != '\'' && c.s[c.i] != '"')) fail(path, "expected a string");
  const char quote = c.s[c.i++];
  const std::size_t end = c.s.find(quote, c.i);
  if (end == std::string::npos) fail(path, "unterminated string in the header");
  std::string out = c.s.substr(c.i, end - c.i);
  c.i = end + 1;
  return out;
}

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<std::size_t> shape;
};

Header parse_header(const std::string& text, const std::filesystem::path& path) {
  Header h;
  Cursor c{text};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!c.eat('{')) fail(path, "the header is not a dictionary: " + text);
  while (!c.eat('}')) {
    const std::string key = parse_string(c, path);
    if (!c.eat(':')) fail(path, "expected ':' after '" + key + "' in the header");
    if (key == "descr") {
      h.descr = parse_string(c, path);
      have_descr = true;
    } else if (key == "fortran_order") {
      c.skip_space();
      if (text.compare(c.i, 4, "True") == 0) {
        h.fortran = true;
        c.i += 4;
      } else if (text.compare(c.i, 5, "False") == 0) {
        c.i += 5;
      } else {
        fail(path, "fortran_order must be True or False");
      }
      have_order = true;
    } else if (key == "shape") {
      if (!c.eat('(')) fail(path, "the shape must be a tuple");
      while (!c.eat(')')) {
        c.skip_space();
        std::size_t start = c.i;
        while (c.i < text.size() && text[c.i] >= '0' && text[c.i] <= '9') ++c.i;
        if (start == c.i) fail(path, "the shape must hold non-negative integers: " + text);
        std::size_t dim = 0;
        try {
          dim = std::stoull(text.substr(start, c.i - start));
        } catch (const std::exception&) {
          fail(path, "a dimension of the shape is out of range: " + text);
        }
        h.shape.push_back(dim);
        c.skip_space();
        if (c.s[c.i] == 'L') ++c.i;  // Python 2 long literal
        if (!c.eat(',') && (c.skip_space(), c.i >= text.size() || text[c.i] != ')')) {
          fail(path, "bad shape tuple: " + text);
        }
      }
      have_shape = true;
    } else {
      fail(path, "unexpected key '" + key + "' in the header");
    }
    if (!c.eat(',')) {
      if (!c.eat('}')) fail(path, "expected ',' or '}' in the header: " + text);
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) {
    fail(path, "the header lacks one of 'descr', 'fortran_order', 'shape': " + text);
  }
  return h;
}

template <typename T>
void convert(const char* raw, std::size_t n, std::vector<double>& out) {
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

}  // namespace

std::size_t NpyArray::size() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::string format_shape(const std::vector<std::size_t>& shape) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s << ", ";
    s << shape[i];
  }
  if (shape.size() == 1) s << ",";
  s << ")";
  return s.str();
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open the file (does it exist?)");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    fail(path, "the file does not start with the magic string \\x93NUMPY");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    if (bytes.size() < 10) fail(path, "truncated header");
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "truncated header");
    for (int k = 0; k < 4; ++k) {
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    }
    offset = 12;
  } else {
    fail(path, "unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (1.0, 2.0 and 3.0 are supported)");
  }
  if (bytes.size() < offset + header_len) {
    fail(path, "truncated: the header says " + std::to_string(header_len) +
                   " bytes but the file has " + std::to_string(bytes.size() - offset));
  }
  const Header h = parse_header(bytes.substr(offset, header_len), path);
  if (h.fortran) {
    fail(path, "the array is in Fortran order; save it in C order (numpy.ascontiguousarray)");
  }
  NpyArray out;
  out.shape = h.shape;
  out.descr = h.descr;
  const std::size_t n = out.size();
  const char* raw = bytes.data() + offset + header_len;
  const std::size_t have = bytes.size() - offset - header_len;
  std::size_t item = 0;
  const std::string& d = h.descr;
  if (d.size() < 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=')) {
    fail(path, "unsupported dtype '" + d + "' (little-endian numbers or booleans are supported)");
  }
  const char kind = d[1];
  try {
    item = std::stoul(d.substr(2));
  } catch (const std::exception&) {
    fail(path, "unsupported dtype '" + d + "'");
  }
  const bool supported =
      (kind == 'f' && (item == 4 || item == 8)) ||
      ((kind == 'i' || kind == 'u') && (item == 1 || item == 2 || item == 4 || item == 8)) ||
      (kind == 'b' && item == 1);
  if (!supported) {
    fail(path,
         "unsupported dtype '" + d + "' (float64/32, int8-64, uint8-64 and bool are supported)");
  }
  if (have != n * item) {
    fail(path, std::string(have < n * item ? "truncated" : "trailing bytes") + ": shape " +
                   format_shape(h.shape) + " of " + d + " needs " + std::to_string(n * item) +
                   " data bytes, the file has " + std::to_string(have));
  }
  if (kind == 'f' && item == 8) {
    convert<double>(raw, n, out.data);
  } else if (kind == 'f' && item == 4) {
    convert<float>(raw, n, out.data);
  } else if (kind == 'i' && item == 8) {
    convert<std::int64_t>(raw, n, out.data);
  } else if (kind == 'i' && item == 4) {
    convert<std::int32_t>(raw, n, out.data);
  } else if (kind == 'i' && item == 2) {
    convert<std::int16_t>(raw, n, out.data);
  } else if (kind == 'i' && item == 1) {
    convert<std::int8_t>(raw, n, out.data);
  } else if (kind == 'u' && item == 8) {
    convert<std::uint64_t>(raw, n, out.data);
  } else if (kind == 'u' && item == 4) {
    convert<std::uint32_t>(raw, n, out.data);
  } else if (kind == 'u' && item == 2) {
    convert<std::uint16_t>(raw, n, out.data);
  } else if ((kind == 'u' || kind == 'b') && item == 1) {
    convert<std::uint8_t>(raw, n, out.data);
  } else {
    fail(path,
         "unsupported dtype '" + d + "' (float64/32, int8-64, uint8-64 and bool are supported)");
  }
  if (kind == 'f') {
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(out.data[i])) {
        fail(path, "element " + std::to_string(i) + " is not a finite number");
      }
    }
  }
  return out;
}

std::string npy_bytes(const std::vector<std::size_t>& shape, const std::string& descr,
                      const void* data, std::size_t data_bytes) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + format_shape(shape) + ", }";
  // Pad so that magic + version + length + dict + '\n' is a multiple of 64 bytes.
  const std::size_t unpadded = kMagicLen + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  if (dict.size() > 65535) throw std::runtime_error("npy header too long");
  std::string out(kMagic, kMagicLen);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  out += dict;
  out.append(static_cast<const char*>(data), data_bytes);
  return out;
}

namespace {
std::size_t product(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}
}  // namespace

void write_npy(const std::filesystem::path& path, const std::vector<std::size_t>& shape,
               const std::vector<double>& data) {
  if (product(shape) != data.size()) {
    throw std::invalid_argument("write_npy " + path.string() + ": shape " + format_shape(shape) +
                                " holds " + std::to_string(product(shape)) + " values, got " +
                                std::to_string(data.size()));
  }
  write_file_atomic(path, npy_bytes(shape, "<f8", data.data(), data.size() * sizeof(double)));
}

void write_npy_int64(const std::filesystem::path& path, const std::vector<std::size_t>& shape,
                     const std::vector<std::int64_t>& data) {
  if (product(shape) != data.size()) {
    throw std::invalid_argument("write_npy_int64 " + path.string() + ": shape " +
                                format_shape(shape) + " holds " + std::to_string(product(shape)) +
                                " values, got " + std::to_string(data.size()));
  }
  write_file_atomic(path, npy_bytes(shape, "<i8", data.data(), data.size() * sizeof(std::int64_t)));
}

std::uint32_t crc32(const void* data, std::size_t size) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace {
void put16(std::string& out, std::uint32_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>((v >> 8) & 0xFF));
}
void put32(std::string& out, std::uint32_t v) {
  put16(out, v & 0xFFFF);
  put16(out, v >> 16);
}
}  // namespace

void write_npz(const std::filesystem::path& path,
               const std::vector<std::pair<std::string, std::string>>& members) {
  // ZIP (PKWARE APPNOTE 6.3): local header + data per member, central directory, end record;
  // method 0 (stored), date 1980-01-01, no ZIP64.
  std::string out, central;
  std::vector<std::string> names;
  for (const auto& [stem, bytes] : members) {
    const std::string name = stem + ".npy";
    for (const auto& n : names) {
      if (n == name)
        throw std::invalid_argument("write_npz " + path.string() + ": " + name + " twice");
    }
    names.push_back(name);
    if (bytes.size() >= 0xFFFFFFFFull || out.size() >= 0xFFFFFFFFull) {
      throw std::invalid_argument("write_npz " + path.string() + ": " + name +
                                  " needs ZIP64 (4 GiB or more); write a directory instead");
    }
    const std::uint32_t crc = crc32(bytes.data(), bytes.size());
    const auto offset = static_cast<std::uint32_t>(out.size());
    const auto size = static_cast<std::uint32_t>(bytes.size());
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0x21);
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, static_cast<std::uint32_t>(name.size()));
    put16(out, 0);
    out += name;
    out += bytes;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, static_cast<std::uint32_t>(name.size()));
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, offset);
    central += name;
  }
  const auto cd_offset = static_cast<std::uint32_t>(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<std::uint32_t>(members.size()));
  put16(out, static_cast<std::uint32_t>(members.size()));
  put32(out, static_cast<std::uint32_t>(central.size()));
  put32(out, cd_offset);
  put16(out, 0);
  write_file_atomic(path, out);
}

}  // namespace hec::program
