// XXH3-64 over canonical bytes, fed piece by piece so large arrays are hashed in place.
#pragma once

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>

#include "lockstep/export.h"

namespace lockstep {

/// Streaming XXH3-64 (seed 0). Feeding pieces gives the same hash as one call over their concatenation.
class LOCKSTEP_API StateHasher {
 public:
  StateHasher();
  ~StateHasher();
  StateHasher(const StateHasher&) = delete;
  StateHasher& operator=(const StateHasher&) = delete;

  void update(const void* data, std::size_t n);
  template <class T>
  void update(std::span<const T> values) { update(values.data(), values.size_bytes()); }
  [[nodiscard]] std::uint64_t digest() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

/// XXH3-64 of a byte range.
LOCKSTEP_API std::uint64_t hash_bytes(std::span<const std::uint8_t> bytes);
/// A simulation's fingerprint over its code's (`code`: identity, version, constants, build) and
/// its world settings' canonical bytes: two worlds with one fingerprint give the same results.
LOCKSTEP_API std::uint64_t world_fingerprint(std::uint64_t code, std::span<const std::uint8_t> settings);
/// The same, always on the portable (non-AVX2) path: for tests that the paths agree.
LOCKSTEP_API std::uint64_t hash_bytes_portable(std::span<const std::uint8_t> bytes);

/// The hash-log and report form: 16 lowercase hex digits.
LOCKSTEP_API std::string hash_hex(std::uint64_t hash);
/// That form read back: exactly 16 hex digits (either case); nullopt for anything else.
LOCKSTEP_API std::optional<std::uint64_t> parse_hash_hex(std::string_view text);

}  // namespace lockstep
