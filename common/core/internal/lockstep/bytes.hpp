// Canonical little-endian byte writing and bounds-checked reading, for state and files.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/export.h"

namespace lockstep {

// The canonical form is little-endian. On a little-endian host an array of floats or integers
// is already in canonical form, which lets hashing and serialization read memory directly.
static_assert(std::endian::native == std::endian::little, "lockstep supports little-endian hosts");

/// Appends canonical little-endian values to a byte vector it does not own.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  void u8(std::uint8_t v) { raw(&v, sizeof v); }
  void u16(std::uint16_t v) { raw(&v, sizeof v); }
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void f32(float v) { raw(&v, sizeof v); }
  template <class T>
  void array(std::span<const T> values) { raw(values.data(), values.size_bytes()); }
  void raw(const void* data, std::size_t n) {
    if (n == 0) return;  // an empty field (its buffer may be null)
    const auto* p = static_cast<const std::uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }

 private:
  std::vector<std::uint8_t>& out_;
};

/// Reads canonical little-endian values from a span; every read is bounds-checked and a failed
/// read sets ok() to false and yields zero, so callers check once at the end.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}
  std::uint8_t u8() { std::uint8_t v = 0; raw(&v, sizeof v); return v; }
  std::uint16_t u16() { std::uint16_t v = 0; raw(&v, sizeof v); return v; }
  std::uint32_t u32() { std::uint32_t v = 0; raw(&v, sizeof v); return v; }
  std::uint64_t u64() { std::uint64_t v = 0; raw(&v, sizeof v); return v; }
  float f32() { float v = 0; raw(&v, sizeof v); return v; }
  template <class T>
  void array(std::span<T> values) { raw(values.data(), values.size_bytes()); }
  void raw(void* data, std::size_t n) {
    if (n == 0) return;  // an empty field (its buffer may be null)
    if (!ok_ || in_.size() - pos_ < n) { ok_ = false; std::memset(data, 0, n); return; }
    std::memcpy(data, in_.data() + pos_, n);
    pos_ += n;
  }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] std::size_t remaining() const { return in_.size() - pos_; }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

/// Lower-case hexadecimal, two digits a byte.
LOCKSTEP_API std::string bytes_hex(std::span<const std::uint8_t> bytes);  // exported: liblockstep_net calls it
/// Hexadecimal digits in pairs (either case; one trailing line end is ignored) into bytes; false,
/// with `out` unspecified, for anything else.
LOCKSTEP_API bool parse_bytes_hex(std::string_view text, std::vector<std::uint8_t>* out);  // exported: as bytes_hex

}  // namespace lockstep
