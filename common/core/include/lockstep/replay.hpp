// Replay files (schemas/replay.fbs): written incrementally while a session runs, read back
// with every record's checksum verified. A replay file is untrusted input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

inline constexpr std::uint32_t kReplayFormatVersion = 4;
/// Replays of format 3 (no keyframes) are still read.
inline constexpr std::uint32_t kOldestReplayFormat = 3;
/// Keyframes by default every 10 seconds of play (docs/PERFORMANCE.md gives what they cost).
inline constexpr std::uint32_t kDefaultKeyframeInterval = 10 * kTickRate;
/// The largest state a keyframe holds; a bigger world is recorded without keyframes.
inline constexpr std::size_t kMaxKeyframeBytes = 16u << 20;
/// The last tick a replay may hold (about 248 days of play).
inline constexpr Tick kMaxReplayTick = 1u << 31;

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
  /// A keyframe (the whole state) every this many ticks; 0: none. Set by the writer's caller.
  std::uint32_t keyframe_interval = 0;
  std::uint32_t format_version = kReplayFormatVersion;  ///< as read (a written file has the current one)
};

/// The whole state after `tick` (Simulation::serialize), stored so a reader can start there; its
/// hash is checked against the bytes and against the recorded hash of its tick when read.
struct LOCKSTEP_API ReplayKeyframe {
  Tick tick = 0;
  std::uint64_t hash = 0;
  std::vector<std::uint8_t> state;
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
  /// Writes the replay into `out` (appended to) instead of a file.
  void open_memory(std::vector<std::uint8_t>* out, const ReplayHeader& header);
  [[nodiscard]] bool is_open() const { return file_ != nullptr || memory_ != nullptr; }
  /// Appends one executed tick (frames must come in tick order).
  void add(const InputFrame& frame, std::uint64_t hash);
  /// Whether the header's interval asks for a keyframe after tick `t`.
  [[nodiscard]] bool keyframe_due(Tick t) const { return interval_ != 0 && t % interval_ == 0; }
  /// Stores the state after tick `tick`: the last added one, an earlier one (a state that came
  /// later, from a peer in relay mode; after any earlier keyframe), or before any frame the
  /// header's start_tick. Its hash must be the one added with that tick. A state over
  /// kMaxKeyframeBytes is left out.
  void add_keyframe(Tick tick, std::uint64_t hash, std::span<const std::uint8_t> state);
  /// Flushes what is buffered and writes the End record.
  void close(Tick last_tick, const std::string& reason);

 private:
  void write_header(const ReplayHeader& h);
  void flush_frames();
  void write_record(const std::uint8_t* data, std::size_t size);
  void note(std::uint8_t kind, Tick first);
  std::FILE* file_ = nullptr;
  std::vector<std::uint8_t>* memory_ = nullptr;
  std::uint64_t offset_ = 0;  // bytes written, from the file's first
  std::vector<std::uint64_t> index_offsets_;  // the end record's index (replay.fbs)
  std::vector<std::uint32_t> index_ticks_;
  std::vector<std::uint8_t> index_kinds_;
  std::uint32_t interval_ = 0;
  std::vector<InputFrame> pending_;
  std::vector<std::uint64_t> pending_hashes_;
};

struct LOCKSTEP_API Replay {
  ReplayHeader header;
  /// The tick of the state frames[0] applies to: header.start_tick, or the keyframe a ranged read
  /// starts from. When it is not 0, the keyframe of that tick holds the state.
  Tick frames_from = 0;
  std::vector<InputFrame> frames;     ///< consecutive, from frames_from + 1
  std::vector<std::uint64_t> hashes;  ///< per frame
  /// In tick order. A ranged read holds only the one it starts from (if any) with its state.
  std::vector<ReplayKeyframe> keyframes;
  bool complete = false;              ///< an End record closed it
  std::string end_reason;
  Tick last_tick = 0;                 ///< of the whole file (a ranged read decodes fewer frames)
  std::vector<Tick> keyframe_ticks;   ///< every keyframe of the whole file
  std::uint64_t bytes_read = 0;       ///< of the file, by this read (less than its size through its index)

  /// The keyframe of tick t, or nullptr.
  [[nodiscard]] const ReplayKeyframe* keyframe(Tick t) const;
  /// The recorded hash of tick t when the read holds it.
  [[nodiscard]] std::optional<std::uint64_t> hash_at(Tick t) const;
};

enum class ReplayError { None, CannotOpen, NotAReplay, Corrupt, Truncated, Unsupported };

/// What a read decodes. A whole read checks every record (its checksum, its structure, the ticks
/// in order, every keyframe against its bytes and its recorded hash); only these frames are
/// decoded, and their inputs and commands checked. A ranged read (`from`, `to` or no frames) of a
/// file whose end record has its index reads only the header, the end record and the records the
/// range needs, each checked the same way (Replay::bytes_read says how much it read).
struct LOCKSTEP_API ReplayRange {
  /// Start from the latest keyframe at or before this tick (0: from the start).
  Tick from = 0;
  /// Decode frames up to this tick (0: to the end).
  Tick to = 0;
  /// false: decode no frames at all (the header, the keyframe `from` names, the totals).
  bool frames = true;
};

/// Reads and checks a whole replay. On failure returns the kind and a readable `detail`
/// (with the byte offset); `out` then holds what was read before the fault.
LOCKSTEP_API ReplayError read_replay(const std::string& path, Replay* out, std::string* detail,
                                     ReplayRange range = {});
/// The header alone: the file's first record, checked; the rest is not read. For a tool that needs
/// to know which module a replay names before it reads the replay.
LOCKSTEP_API ReplayError read_replay_header(const std::string& path, ReplayHeader* out, std::string* detail);
/// The same from bytes in memory (a replay inside a desync bundle).
LOCKSTEP_API ReplayError parse_replay(std::span<const std::uint8_t> bytes, Replay* out, std::string* detail,
                                      ReplayRange range = {});
/// A replay's file bytes (its header, keyframes, frames and end record), as write_replay writes them.
LOCKSTEP_API std::vector<std::uint8_t> replay_bytes(const Replay& replay);

/// Builds a replay in memory from a scenario (for tests and the golden files), with a keyframe
/// every `keyframe_interval` ticks (0: none).
LOCKSTEP_API Replay scenario_replay(const struct Scenario& scenario, Tick ticks, std::uint32_t keyframe_interval = 0);
/// Writes `replay` to `path` with ReplayWriter (its keyframes too).
LOCKSTEP_API bool write_replay(const std::string& path, const Replay& replay, std::string* error);

}  // namespace lockstep
