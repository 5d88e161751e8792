// Replay files written as a session runs and read back with every record checked (replay.hpp).
#include "lockstep/replay.hpp"

#include <flatbuffers/flatbuffers.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "lockstep/bytes.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "lockstep/wire/replay_generated.h"
#include "packed_table.hpp"
#include "replay_records.hpp"

namespace lockstep {

using namespace replay_io;

ReplayWriter::~ReplayWriter() {
  if (file_) std::fclose(file_);
}

void ReplayWriter::note(std::uint8_t kind, Tick first) {
  index_offsets_.push_back(offset_);
  index_ticks_.push_back(first);
  index_kinds_.push_back(kind);
}

void ReplayWriter::write_record(const std::uint8_t* data, std::size_t size) {
  offset_ += kRecordHeader + size;
  std::vector<std::uint8_t> head;
  ByteWriter w(head);
  w.u32(static_cast<std::uint32_t>(size));
  w.u64(hash_bytes({data, size}));
  if (memory_) {
    memory_->insert(memory_->end(), head.begin(), head.end());
    memory_->insert(memory_->end(), data, data + size);
    return;
  }
  std::fwrite(head.data(), 1, head.size(), file_);
  std::fwrite(data, 1, size, file_);
  std::fflush(file_);
}

bool ReplayWriter::open(const std::string& path, const ReplayHeader& h, std::string* error) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  std::fwrite(kMagic, 1, sizeof kMagic, file_);
  offset_ = sizeof kMagic;
  write_header(h);
  return true;
}

void ReplayWriter::open_memory(std::vector<std::uint8_t>* out, const ReplayHeader& h) {
  memory_ = out;
  memory_->insert(memory_->end(), kMagic, kMagic + sizeof kMagic);
  offset_ = sizeof kMagic;
  write_header(h);
}

void ReplayWriter::write_header(const ReplayHeader& h) {
  interval_ = h.keyframe_interval;
  flatbuffers::FlatBufferBuilder fbb(512);
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  for (const auto& n : h.names) names.push_back(fbb.CreateString(n.substr(0, 32)));
  const auto nv = fbb.CreateVector(names);
  const auto settings = fbb.CreateVector(h.world.settings);
  const auto module = fbb.CreateString(h.module.substr(0, 32));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<replay::Library>>> libs = 0;
  if (!h.libraries.empty()) {
    std::vector<flatbuffers::Offset<replay::Library>> v;
    for (std::size_t i = 0; i < h.libraries.size() && i < kMaxLibraries; ++i)
      v.push_back(replay::CreateLibrary(fbb, fbb.CreateString(h.libraries[i].name.substr(0, kMaxLibraryNameBytes)),
                                        fbb.CreateString(h.libraries[i].build.substr(0, kMaxLibraryBuildBytes))));
    libs = fbb.CreateVector(v);
  }
  const auto header = replay::CreateHeader(fbb, kReplayFormatVersion, h.protocol_version, h.fingerprint,
                                           h.world.players, h.input_delay, h.start_tick, nv, settings, h.input_size,
                                           module, libs, h.keyframe_interval);
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::Header, header.Union()), replay::RecordIdentifier());
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
}

void ReplayWriter::add(const InputFrame& frame, std::uint64_t hash) {
  if (!is_open()) return;
  pending_.push_back(frame);
  pending_hashes_.push_back(hash);
  if (pending_.size() >= static_cast<std::size_t>(kTickRate)) flush_frames();
}

void ReplayWriter::add_keyframe(Tick tick, std::uint64_t hash, std::span<const std::uint8_t> state) {
  if (!is_open() || state.size() > kMaxKeyframeBytes) return;
  flush_frames();  // the keyframe follows the record that ends with its tick
  flatbuffers::FlatBufferBuilder fbb(state.size() + 128);
  const auto sv = fbb.CreateVector(state.data(), state.size());
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::Keyframe, replay::CreateKeyframe(fbb, tick, hash, sv).Union()),
             replay::RecordIdentifier());
  note(kIndexKeyframe, tick);
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
}

void ReplayWriter::flush_frames() {
  if (!is_open() || pending_.empty()) return;
  std::vector<const InputFrame*> frames_of;
  for (const InputFrame& f : pending_) frames_of.push_back(&f);
  PackedFrames packed;
  pack_frames(frames_of, packed);
  flatbuffers::FlatBufferBuilder fbb(pending_.size() * 20 + packed.items.input_bytes.size() +
                                     packed.items.command_bytes.size() + 256);
  const auto pv = fbb.CreateVector(packed.present);
  const auto fv = fbb.CreateVector(packed.filled);
  const auto hv = fbb.CreateVector(pending_hashes_);
  const auto ib = fbb.CreateVector(packed.items.input_bytes);
  const auto cc = packed.items.command_counts.empty() ? 0 : fbb.CreateVector(packed.items.command_counts);
  const auto cs = packed.items.command_sizes.empty() ? 0 : fbb.CreateVector(packed.items.command_sizes);
  const auto cb = packed.items.command_bytes.empty() ? 0 : fbb.CreateVector(packed.items.command_bytes);
  const auto frames = replay::CreateFrames(fbb, pending_.front().tick, pv, fv, hv, ib, cc, cs, cb);
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::Frames, frames.Union()), replay::RecordIdentifier());
  note(kIndexFrames, pending_.front().tick);
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
  pending_.clear();
  pending_hashes_.clear();
}

void ReplayWriter::close(Tick last_tick, const std::string& reason) {
  if (!is_open()) return;
  flush_frames();
  flatbuffers::FlatBufferBuilder fbb(128 + index_offsets_.size() * 13);
  const auto r = fbb.CreateString(reason.substr(0, 256));
  const bool index = !index_offsets_.empty() && index_offsets_.size() <= kMaxIndexEntries;
  const auto offsets = index ? fbb.CreateVector(index_offsets_) : 0;
  const auto ticks = index ? fbb.CreateVector(index_ticks_) : 0;
  const auto kinds = index ? fbb.CreateVector(index_kinds_) : 0;
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::ReplayEnd,
                                  replay::CreateReplayEnd(fbb, last_tick, r, offsets, ticks, kinds).Union()),
             replay::RecordIdentifier());
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
  if (file_) std::fclose(file_);
  file_ = nullptr;
  memory_ = nullptr;
}

const ReplayKeyframe* Replay::keyframe(Tick t) const {
  for (const ReplayKeyframe& k : keyframes)
    if (k.tick == t) return &k;
  return nullptr;
}

std::optional<std::uint64_t> Replay::hash_at(Tick t) const {
  if (t <= frames_from || t - frames_from > frames.size()) return std::nullopt;
  return hashes[t - frames_from - 1];
}


ReplayError parse_replay(std::span<const std::uint8_t> bytes, Replay* out, std::string* detail, ReplayRange range) {
  *out = Replay{};
  RecordReader reader{out, false, 0, {}, {}};
  auto fail = [&](ReplayError e, const std::string& why) {
    if (detail) *detail = why;
    return e;
  };
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail(ReplayError::NotAReplay, "not a lockstep replay (no LSREPLAY signature)");
  // Pass 1: every record checked, in order.
  std::vector<RecordEntry> entries;
  std::size_t pos = sizeof kMagic;
  std::vector<std::uint64_t> aligned;
  ReplayError fault = ReplayError::None;
  std::string fault_why;
  while (pos < bytes.size()) {
    const std::string at = " at byte " + std::to_string(pos);
    auto stop = [&](ReplayError e, std::string why) {
      fault = e;
      fault_why = std::move(why);
    };
    if (out->complete) {
      stop(ReplayError::Corrupt, "data after the end record" + at);
      break;
    }
    if (bytes.size() - pos < kRecordHeader) {
      stop(ReplayError::Truncated, "truncated record header" + at);
      break;
    }
    ByteReader r(bytes.subspan(pos, kRecordHeader));
    const std::uint32_t len = r.u32();
    const std::uint64_t sum = r.u64();
    if (len == 0 || len > kMaxKeyframeRecord) {
      stop(ReplayError::Corrupt, "record length " + std::to_string(len) + " out of range" + at);
      break;
    }
    if (bytes.size() - pos - kRecordHeader < len) {
      stop(ReplayError::Truncated, "truncated record" + at);
      break;
    }
    const std::span<const std::uint8_t> raw = bytes.subspan(pos + kRecordHeader, len);
    if (hash_bytes(raw) != sum) {
      stop(ReplayError::Corrupt, "checksum mismatch in the record" + at);
      break;
    }
    const replay::Record* rec = aligned_record(raw, aligned);
    flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(aligned.data()), len);
    if (!replay::VerifyRecordBuffer(v)) {
      stop(ReplayError::Corrupt, "record does not verify" + at);
      break;
    }
    if (rec->chunk() == nullptr) {  // a kind without its table (the Verifier lets an absent one pass)
      stop(ReplayError::Corrupt, "empty record" + at);
      break;
    }
    RecordEntry e{pos + kRecordHeader, len, rec->chunk_type(), 0, 0};
    if (e.type != replay::Chunk::Keyframe && len > kMaxRecord) {
      stop(ReplayError::Corrupt, "record length " + std::to_string(len) + " out of range" + at);
      break;
    }
    ReplayError err = ReplayError::None;
    switch (e.type) {
      case replay::Chunk::Header: err = reader.header(*rec->chunk_as_Header(), at); break;
      case replay::Chunk::Frames: err = reader.check_frames(*rec->chunk_as_Frames(), at, &e); break;
      case replay::Chunk::ReplayEnd: err = reader.end(*rec->chunk_as_ReplayEnd(), at); break;
      case replay::Chunk::Keyframe: {
        // The recorded hash of a tick: every frame record's hashes are kept as they are checked
        // (8 bytes a tick, fewer than the file holds), so a keyframe costs one lookup.
        const auto recorded = [&](Tick t) -> std::optional<std::uint64_t> {
          const Tick first = out->header.start_tick + 1;
          if (t < first || t - first >= reader.recorded_hashes.size()) return std::nullopt;
          return reader.recorded_hashes[t - first];
        };
        err = reader.check_keyframe(*rec->chunk_as_Keyframe(), at, &e, recorded);
        break;
      }
      case replay::Chunk::NONE:
      default: err = reader.fail(ReplayError::Corrupt, "a record of no known kind" + at); break;
    }
    if (err != ReplayError::None) {
      stop(err, reader.why);
      break;
    }
    entries.push_back(e);
    pos += kRecordHeader + len;
  }
  if (fault == ReplayError::None && !reader.have_header) {
    fault = ReplayError::Truncated;
    fault_why = "no header record";
  }
  if (fault == ReplayError::None && !out->complete) {
    fault = ReplayError::Truncated;
    fault_why = "no end record: the recording stopped after tick " + std::to_string(reader.next_tick - 1) + " (crash or kill?)";
  }
  out->last_tick = reader.have_header ? reader.next_tick - 1 : 0;
  // Pass 2: what the range asks for, from the latest keyframe at or before range.from (a faulty
  // file: everything before the fault, from the start).
  // A whole read holds every keyframe; a ranged one only the one it starts from (if any).
  const bool ranged = range.from != 0 || range.to != 0 || !range.frames;
  Tick base = out->header.start_tick;
  if (fault == ReplayError::None && range.from != 0)
    for (const Tick k : out->keyframe_ticks)
      if (k <= range.from) base = k;
  out->frames_from = base;
  for (const RecordEntry& e : entries) {
    if (e.type == replay::Chunk::Frames && range.frames && e.last > base && (range.to == 0 || e.first <= range.to)) {
      const replay::Record* rec = aligned_record(bytes.subspan(e.pos, e.len), aligned);
      const ReplayError err =
          reader.decode_frames(*rec->chunk_as_Frames(), e.first, base, range.to, " at byte " + std::to_string(e.pos));
      if (err != ReplayError::None) return fail(err, reader.why);
    } else if (e.type == replay::Chunk::Keyframe && (!ranged || e.first == base)) {
      const replay::Record* rec = aligned_record(bytes.subspan(e.pos, e.len), aligned);
      const replay::Keyframe& k = *rec->chunk_as_Keyframe();
      out->keyframes.push_back({k.tick(), k.hash(), {k.state()->begin(), k.state()->end()}});
    }
  }
  if (fault != ReplayError::None) return fail(fault, fault_why);
  return ReplayError::None;
}

namespace {
// The whole file in one read (its size from fstat): a one-hour replay is about 10 MB.
bool read_file(const std::string& path, std::vector<std::uint8_t>* bytes, std::string* detail) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (detail) *detail = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  bytes->clear();
  if (::fstat(fileno(f), &st) == 0 && st.st_size > 0) bytes->resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = std::fread(bytes->data(), 1, bytes->size(), f);
  bytes->resize(got);
  // A file still being written (a replay read while its session runs) may have grown since.
  std::uint8_t more[65536];
  for (std::size_t n; (n = std::fread(more, 1, sizeof more, f)) > 0;) bytes->insert(bytes->end(), more, more + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok && detail) *detail = "cannot read " + path + ": " + std::strerror(errno);
  return ok;
}
}  // namespace

ReplayError read_replay(const std::string& path, Replay* out, std::string* detail, ReplayRange range) {
  if (range.from != 0 || range.to != 0 || !range.frames)
    if (const std::optional<ReplayError> e = read_replay_indexed(path, out, detail, range)) return *e;
  std::vector<std::uint8_t> bytes;
  if (!read_file(path, &bytes, detail)) {
    *out = Replay{};
    return ReplayError::CannotOpen;
  }
  const ReplayError e = parse_replay(bytes, out, detail, range);
  out->bytes_read = bytes.size();
  if (e == ReplayError::NotAReplay && detail) *detail = path + " is " + *detail;
  return e;
}

ReplayError read_replay_header(const std::string& path, ReplayHeader* out, std::string* detail) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (detail) *detail = "cannot open " + path + ": " + std::strerror(errno);
    return ReplayError::CannotOpen;
  }
  // The signature and the first record, which must be the header.
  std::vector<std::uint8_t> bytes(sizeof kMagic + kRecordHeader);
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), f));
  bool whole = false;  // the first record read to its end
  if (bytes.size() == sizeof kMagic + kRecordHeader) {
    ByteReader r(std::span<const std::uint8_t>(bytes).subspan(sizeof kMagic, kRecordHeader));
    const std::uint32_t len = r.u32();
    if (len > 0 && len <= kMaxRecord) {
      bytes.resize(bytes.size() + len);
      const std::size_t got = std::fread(bytes.data() + sizeof kMagic + kRecordHeader, 1, len, f);
      bytes.resize(sizeof kMagic + kRecordHeader + got);
      whole = got == len;
    }
  }
  std::fclose(f);
  Replay r;
  const ReplayError e = parse_replay(bytes, &r, detail, {0, 0, false});
  *out = r.header;
  // A whole first record that is a header, and nothing after it read: the missing end record is
  // expected. A fault in the record itself is the file's.
  if (e == ReplayError::Truncated && whole && r.last_tick == r.header.start_tick && !r.complete) {
    if (detail) detail->clear();
    return ReplayError::None;
  }
  if (e == ReplayError::NotAReplay && detail) *detail = path + " is " + *detail;
  return e;
}

Replay scenario_replay(const Scenario& scenario, Tick ticks, std::uint32_t keyframe_interval) {
  Replay r;
  auto sim = scenario.module->create(scenario.world);
  r.header.protocol_version = kProtocolVersion;
  r.header.fingerprint = sim->fingerprint();
  r.header.world = scenario.world;
  r.header.input_size = sim->input_size();
  r.header.module = std::string(scenario.module->name);
  r.header.libraries.assign(scenario.module->libraries.begin(), scenario.module->libraries.end());
  r.header.keyframe_interval = keyframe_interval;
  for (std::uint32_t p = 0; p < scenario.world.players; ++p) r.header.names.push_back("bot" + std::to_string(p));
  for (Tick t = 1; t <= ticks; ++t) {
    r.frames.push_back(scenario_frame(scenario, t));
    sim->step(r.frames.back());
    r.hashes.push_back(sim->hash());
    if (keyframe_interval != 0 && t % keyframe_interval == 0) {
      ReplayKeyframe k{t, r.hashes.back(), {}};
      sim->serialize(k.state);
      r.keyframes.push_back(std::move(k));
    }
  }
  r.last_tick = ticks;
  for (const ReplayKeyframe& k : r.keyframes) r.keyframe_ticks.push_back(k.tick);
  r.complete = true;
  r.end_reason = "scenario";
  return r;
}

namespace {

void write_all(ReplayWriter& w, const Replay& replay) {
  std::size_t k = 0;
  const auto keyframes_to = [&](Tick t) {
    for (; k < replay.keyframes.size() && replay.keyframes[k].tick <= t; ++k)
      if (replay.keyframes[k].tick == t) w.add_keyframe(t, replay.keyframes[k].hash, replay.keyframes[k].state);
  };
  keyframes_to(replay.frames_from);
  for (std::size_t i = 0; i < replay.frames.size(); ++i) {
    w.add(replay.frames[i], replay.hashes[i]);
    keyframes_to(replay.frames[i].tick);
  }
  w.close(replay.frames_from + static_cast<Tick>(replay.frames.size()), replay.end_reason);
}

}  // namespace

bool write_replay(const std::string& path, const Replay& replay, std::string* error) {
  ReplayWriter w;
  if (!w.open(path, replay.header, error)) return false;
  write_all(w, replay);
  return true;
}

std::vector<std::uint8_t> replay_bytes(const Replay& replay) {
  std::vector<std::uint8_t> out;
  ReplayWriter w;
  w.open_memory(&out, replay.header);
  write_all(w, replay);
  return out;
}

}  // namespace lockstep
