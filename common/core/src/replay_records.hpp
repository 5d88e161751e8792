// The records of a replay file, for its reader (replay.cpp) and its indexed reader
// (replay_index.cpp): the file's constants, one record's place, and the checks and decoding of
// each kind of record.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/replay.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "lockstep/wire/replay_generated.h"
#include "packed_table.hpp"

namespace lockstep::replay_io {

inline constexpr char kMagic[8] = {'L', 'S', 'R', 'E', 'P', 'L', 'A', 'Y'};
inline constexpr std::size_t kMaxRecord = 1 << 20;
inline constexpr std::size_t kMaxKeyframeRecord = kMaxKeyframeBytes + (1 << 20);
inline constexpr std::size_t kRecordHeader = 12;
/// An index (in the end record) of more records than this is not written: such a file is read whole.
inline constexpr std::size_t kMaxIndexEntries = 60000;
/// The index's kinds of record.
inline constexpr std::uint8_t kIndexFrames = 1, kIndexKeyframe = 2;

// One checked record: where its payload is, what it holds.
struct RecordEntry {
  std::size_t pos = 0, len = 0;
  replay::Chunk type = replay::Chunk::NONE;
  Tick first = 0, last = 0;  // Frames: its ticks; Keyframe: its tick (both)
};

// Reads the records of a replay: the first pass checks every record and notes where it is; the
// second decodes what the range asks for.
struct RecordReader {
  Replay* out;
  bool have_header = false;
  Tick next_tick = 0;
  std::vector<std::uint64_t> recorded_hashes;  // every tick's, from header.start_tick + 1
  std::string why;  // set with the error

  ReplayError fail(ReplayError e, std::string text) {
    why = std::move(text);
    return e;
  }

  ReplayError header(const replay::Header& h, const std::string& at) {
    if (have_header) return fail(ReplayError::Corrupt, "second header" + at);
    if (h.format_version() < kOldestReplayFormat || h.format_version() > kReplayFormatVersion)
      return fail(ReplayError::Unsupported,
                  "replay format version " + std::to_string(h.format_version()) + " is not supported (this build reads " +
                      std::to_string(kOldestReplayFormat) + " to " + std::to_string(kReplayFormatVersion) +
                      "; formats 1 and 2 held one built-in world's 16-bit inputs, not a module's input bytes and commands: record the session again)");
    if (h.players() < 1 || h.players() > kMaxPlayers || h.input_delay() > 50 ||
        (h.settings() && h.settings()->size() > kMaxSettingsBytes) || h.input_size() > kMaxInputBytes ||
        (h.module_name() && h.module_name()->size() > 32) ||
        (h.libraries() && h.libraries()->size() > kMaxLibraries) || h.start_tick() >= kMaxReplayTick)
      return fail(ReplayError::Corrupt, "header values out of range" + at);
    if (h.libraries())
      for (const auto* l : *h.libraries()) {
        if (!l->name() || l->name()->size() == 0 || l->name()->size() > kMaxLibraryNameBytes ||
            (l->build() && l->build()->size() > kMaxLibraryBuildBytes))
          return fail(ReplayError::Corrupt, "a library in the header is out of range" + at);
        out->header.libraries.push_back({l->name()->str(), l->build() ? l->build()->str() : ""});
      }
    ReplayHeader& hd = out->header;
    hd.format_version = h.format_version();
    hd.protocol_version = h.protocol_version();
    hd.fingerprint = h.fingerprint();
    hd.world.players = h.players();
    if (h.settings()) hd.world.settings.assign(h.settings()->begin(), h.settings()->end());
    hd.input_size = h.input_size();
    hd.module = h.module_name() ? h.module_name()->str() : "";
    hd.input_delay = h.input_delay();
    hd.start_tick = h.start_tick();
    hd.keyframe_interval = h.keyframe_interval();
    if (h.names())
      for (const auto* n : *h.names()) hd.names.push_back(n->str().substr(0, 32));
    have_header = true;
    next_tick = hd.start_tick + 1;
    out->frames_from = hd.start_tick;
    return ReplayError::None;
  }

  // Pass 1: the record's ticks follow on; nothing is decoded.
  ReplayError check_frames(const replay::Frames& f, const std::string& at, RecordEntry* e) {
    if (!have_header) return fail(ReplayError::Corrupt, "frames before the header" + at);
    const std::size_t n = f.present() ? f.present()->size() : 0;
    if (n == 0 || !f.filled() || f.filled()->size() != n || !f.hashes() || f.hashes()->size() != n)
      return fail(ReplayError::Corrupt, "inconsistent frame record" + at);
    if (f.first_tick() != next_tick)
      return fail(ReplayError::Corrupt, "frames start at tick " + std::to_string(f.first_tick()) + ", expected " +
                                            std::to_string(next_tick) + at);
    if (n > kMaxReplayTick - next_tick) return fail(ReplayError::Corrupt, "too many ticks" + at);
    e->first = next_tick;
    e->last = next_tick + static_cast<Tick>(n) - 1;
    next_tick += static_cast<Tick>(n);
    recorded_hashes.insert(recorded_hashes.end(), f.hashes()->begin(), f.hashes()->end());
    return ReplayError::None;
  }

  // Pass 2: the frames of a checked record, from tick `from` (later ticks than the record's first).
  ReplayError decode_frames(const replay::Frames& f, Tick first, Tick from, Tick to, const std::string& at) {
    const std::uint32_t players = out->header.world.players;
    const std::size_t n = f.present()->size();
    const std::uint32_t input_size = out->header.input_size;
    const PackedView v = packed_view(f);
    if (const std::string fault = check_packed(v, n * players, input_size); !fault.empty())
      return fail(ReplayError::Corrupt, "inconsistent frame record: " + fault + at);
    PackedReader r(v, input_size);
    Commands scratch;
    for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
      const Tick t = first + i;
      InputFrame fr;
      read_frame(r, t, players, input_size, f.present()->Get(i), f.filled()->Get(i), fr, scratch);
      if (t <= from || (to != 0 && t > to)) continue;  // (read anyway: the items are packed in order)
      out->frames.push_back(std::move(fr));
      out->hashes.push_back(f.hashes()->Get(i));
    }
    return ReplayError::None;
  }

  // A keyframe comes after the record holding its tick (right after it when written as the tick
  // ran; later when its state came from a peer, in relay mode), in ascending ticks, and holds the
  // state whose hash was recorded for its tick. `recorded(t)`: that hash, or nullopt.
  template <class Recorded>
  ReplayError check_keyframe(const replay::Keyframe& k, const std::string& at, RecordEntry* e, const Recorded& recorded) {
    if (!have_header) return fail(ReplayError::Corrupt, "keyframe before the header" + at);
    if (out->header.format_version < 4) return fail(ReplayError::Corrupt, "a keyframe in a format 3 replay" + at);
    const Tick t = k.tick();
    if (t > next_tick - 1 || t < out->header.start_tick || (!out->keyframe_ticks.empty() && t <= out->keyframe_ticks.back()))
      return fail(ReplayError::Corrupt, "the keyframe of tick " + std::to_string(t) + " is out of place (the ticks so far end at " +
                                            std::to_string(next_tick - 1) + ")" + at);
    const std::span<const std::uint8_t> state = span_of(k.state());
    if (state.empty() || state.size() > kMaxKeyframeBytes) return fail(ReplayError::Corrupt, "keyframe size out of range" + at);
    if (hash_bytes(state) != k.hash()) return fail(ReplayError::Corrupt, "the keyframe of tick " + std::to_string(t) + " does not hash to its recorded hash" + at);
    if (t != out->header.start_tick && recorded(t) != std::optional<std::uint64_t>(k.hash()))
      return fail(ReplayError::Corrupt, "the keyframe of tick " + std::to_string(t) +
                                            " differs from the hash recorded for its tick" + at);
    e->first = e->last = t;
    out->keyframe_ticks.push_back(t);
    return ReplayError::None;
  }

  ReplayError end(const replay::ReplayEnd& e, const std::string& at) {
    if (!have_header) return fail(ReplayError::Corrupt, "end before the header" + at);
    if (e.last_tick() != next_tick - 1) return fail(ReplayError::Corrupt, "end record names the wrong last tick" + at);
    out->complete = true;
    out->end_reason = e.reason() ? e.reason()->str().substr(0, 256) : "";
    return ReplayError::None;
  }
};

// A record's payload copied to 8-byte aligned memory (FlatBuffers reads 64-bit fields in place).
inline const replay::Record* aligned_record(std::span<const std::uint8_t> raw, std::vector<std::uint64_t>& aligned) {
  aligned.assign((raw.size() + 7) / 8, 0);
  std::memcpy(aligned.data(), raw.data(), raw.size());
  return replay::GetRecord(aligned.data());
}


/// A ranged read through the end record's index: the header, the index and the records the range
/// needs, each checked; nullopt when the file has no index, or one that does not hold together
/// (the caller then reads the file whole, which names any fault).
std::optional<ReplayError> read_replay_indexed(const std::string& path, Replay* out, std::string* detail, ReplayRange range);

}  // namespace lockstep::replay_io
