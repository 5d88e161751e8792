// Replay files (schemas/replay.fbs): written incrementally while a session runs, read back
// with every record's checksum verified. A replay file is untrusted input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

inline constexpr std::uint32_t kReplayFormatVersion = 3;

struct LOCKSTEP_API ReplayHeader {
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  WorldParams world;
  std::uint32_t input_size = 0;  ///< bytes of one player's input (the module's)
  std::string module;            ///< the module's name, for messages
  std::uint32_t input_delay = 0;
  Tick start_tick = 0;
  std::vector<std::string> names;  ///< by slot
  /// The libraries the recorder's module linked and their builds (Module::libraries); a build
  /// with another build of one is refused by `lockstep-replay verify` unless told otherwise.
  std::vector<LibraryBuild> libraries;
};

/// Writes a replay as the session runs. Frames are flushed to the file once a second of ticks.
class LOCKSTEP_API ReplayWriter {
 public:
  ReplayWriter() = default;
  ~ReplayWriter();
  ReplayWriter(const ReplayWriter&) = delete;
  ReplayWriter& operator=(const ReplayWriter&) = delete;

  /// Creates `path` and writes the header; false with `error` set when it cannot.
  bool open(const std::string& path, const ReplayHeader& header, std::string* error);
  [[nodiscard]] bool is_open() const { return file_ != nullptr; }
  /// Appends one executed tick (frames must come in tick order).
  void add(const InputFrame& frame, std::uint64_t hash);
  /// Flushes what is buffered and writes the End record.
  void close(Tick last_tick, const std::string& reason);

 private:
  void flush_frames();
  void write_record(const std::uint8_t* data, std::size_t size);
  std::FILE* file_ = nullptr;
  std::vector<InputFrame> pending_;
  std::vector<std::uint64_t> pending_hashes_;
};

struct LOCKSTEP_API Replay {
  ReplayHeader header;
  std::vector<InputFrame> frames;     ///< consecutive, from header.start_tick + 1
  std::vector<std::uint64_t> hashes;  ///< per frame
  bool complete = false;              ///< an End record closed it
  std::string end_reason;
};

enum class ReplayError { None, CannotOpen, NotAReplay, Corrupt, Truncated, Unsupported };

/// Reads and checks a whole replay. On failure returns the kind and a readable `detail`
/// (with the byte offset); `out` then holds what was read before the fault.
LOCKSTEP_API ReplayError read_replay(const std::string& path, Replay* out, std::string* detail);

/// Builds a replay in memory from a scenario (for tests and the golden files).
LOCKSTEP_API Replay scenario_replay(const struct Scenario& scenario, Tick ticks);
/// Writes `replay` to `path` with ReplayWriter.
LOCKSTEP_API bool write_replay(const std::string& path, const Replay& replay, std::string* error);

}  // namespace lockstep
