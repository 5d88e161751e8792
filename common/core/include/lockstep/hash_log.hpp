// The hash-log format, one line per executed tick: "<tick> <16 lowercase hex digits>".
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"

namespace lockstep {

struct LOCKSTEP_API TickHash {
  Tick tick = 0;
  std::uint64_t hash = 0;
  friend bool operator==(const TickHash&, const TickHash&) = default;
};

/// Writes a hash log to a file it owns; lines are flushed at least once a second of ticks.
class LOCKSTEP_API HashLogWriter {
 public:
  HashLogWriter() = default;
  ~HashLogWriter();
  HashLogWriter(const HashLogWriter&) = delete;
  HashLogWriter& operator=(const HashLogWriter&) = delete;

  /// Opens `path`, truncating it unless `append`; false with errno set when it cannot.
  bool open(const std::string& path, bool append = false);
  [[nodiscard]] bool is_open() const { return file_ != nullptr; }
  void write(Tick tick, std::uint64_t hash);
  void close();

 private:
  std::FILE* file_ = nullptr;
};

/// Formats one line without the newline.
LOCKSTEP_API std::string format_hash_line(Tick tick, std::uint64_t hash);
/// Parses one line; nullopt when it is not exactly "<tick> <16 hex>".
LOCKSTEP_API std::optional<TickHash> parse_hash_line(const std::string& line);

}  // namespace lockstep
