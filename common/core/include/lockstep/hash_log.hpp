// The hash-log format, one line per executed tick: "<tick> <16 lowercase hex digits>".
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
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
/// Each tick is in the file once, with the hash it was written with last: a tick written again
/// (a client that loads an older state and steps again, as a relay-mode resync may) replaces
/// its line and the lines after it, while it is among the last kRecent lines.
class LOCKSTEP_API HashLogWriter {
 public:
  HashLogWriter() = default;
  ~HashLogWriter();
  HashLogWriter(const HashLogWriter&) = delete;
  HashLogWriter& operator=(const HashLogWriter&) = delete;

  static constexpr std::size_t kRecent = 8192;  ///< lines a tick written again can replace

  /// Opens `path`, truncating it unless `append` (then its last kRecent lines can be replaced
  /// too); false with errno set when it cannot.
  bool open(const std::string& path, bool append = false);
  [[nodiscard]] bool is_open() const { return file_ != nullptr; }
  void write(Tick tick, std::uint64_t hash);
  void close();
  /// Ticks written again that were older than the last kRecent lines: appended, not replaced.
  [[nodiscard]] std::uint64_t unreplaced() const { return unreplaced_; }

 private:
  std::FILE* file_ = nullptr;
  std::deque<std::pair<Tick, long>> recent_;  // the last lines' ticks and where each begins
  long end_ = 0;                               // the file's length, written lines included
  std::uint64_t unreplaced_ = 0;
};

/// Formats one line without the newline.
LOCKSTEP_API std::string format_hash_line(Tick tick, std::uint64_t hash);
/// Parses one line; nullopt when it is not exactly "<tick> <16 hex>".
LOCKSTEP_API std::optional<TickHash> parse_hash_line(const std::string& line);

}  // namespace lockstep
