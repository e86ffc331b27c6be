// Little-endian byte writer and bounds-checked reader: the payload encoding of every
// serialized object (core/serialize.h). Readers throw std::runtime_error naming the source
// and the offset when the bytes run out.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace hec::core {

class ByteWriter {
 public:
  void put_u8(std::uint8_t v) { bytes_.push_back(v); }
  void put_u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void put_u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void put_f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    put_u64(bits);
  }
  void put_bytes(const std::uint8_t* data, std::size_t size) {
    bytes_.insert(bytes_.end(), data, data + size);
  }
  // A run of 64-bit words (bulk path: this runtime targets little-endian x86-64).
  void put_u64s(const std::uint64_t* data, std::size_t count) {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian host assumed");
    const std::size_t at = bytes_.size();
    bytes_.resize(at + 8 * count);
    std::memcpy(bytes_.data() + at, data, 8 * count);
  }
  std::size_t size() const { return bytes_.size(); }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size, std::string source)
      : data_(data), size_(size), source_(std::move(source)) {}

  std::uint8_t get_u8() { return *need(1); }
  std::uint32_t get_u32() {
    const std::uint8_t* p = need(4);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    return v;
  }
  std::uint64_t get_u64() {
    const std::uint8_t* p = need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
  }
  double get_f64() {
    const std::uint64_t bits = get_u64();
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  // A zero-length read copies nothing (memcpy with an empty vector's null data() is undefined
  // behaviour: found by fuzz_bfv).
  void get_bytes(std::uint8_t* out, std::size_t size) {
    const std::uint8_t* p = need(size);
    if (size != 0) std::memcpy(out, p, size);
  }
  void get_u64s(std::uint64_t* out, std::size_t count) {
    const std::uint8_t* p = need(8 * count);
    if (count != 0) std::memcpy(out, p, 8 * count);
  }
  std::size_t remaining() const { return size_ - pos_; }
  void expect_end() const {
    if (pos_ != size_) {
      throw std::runtime_error(source_ + ": " + std::to_string(size_ - pos_) +
                               " unexpected trailing bytes at offset " + std::to_string(pos_));
    }
  }

 private:
  const std::uint8_t* need(std::size_t n) {
    if (n > size_ - pos_) {
      throw std::runtime_error(source_ + ": truncated, needs " + std::to_string(n) +
                               " bytes at offset " + std::to_string(pos_) + " but only " +
                               std::to_string(size_ - pos_) + " remain");
    }
    const std::uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::string source_;
};

}  // namespace hec::core
