#include "lockstep/replay.hpp"

#include <flatbuffers/flatbuffers.h>

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

namespace lockstep {

namespace {
}  // namespace

namespace {

constexpr char kMagic[8] = {'L', 'S', 'R', 'E', 'P', 'L', 'A', 'Y'};
constexpr std::size_t kMaxRecord = 1 << 20;
constexpr std::size_t kRecordHeader = 12;

}  // namespace

ReplayWriter::~ReplayWriter() {
  if (file_) std::fclose(file_);
}

void ReplayWriter::write_record(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> head;
  ByteWriter w(head);
  w.u32(static_cast<std::uint32_t>(size));
  w.u64(hash_bytes({data, size}));
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
  const auto header = replay::CreateHeader(fbb, kReplayFormatVersion, h.protocol_version, h.fingerprint, h.world.players,
                                           h.input_delay, h.start_tick, nv, settings, h.input_size, module, libs);
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::Header, header.Union()), replay::RecordIdentifier());
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
  return true;
}

void ReplayWriter::add(const InputFrame& frame, std::uint64_t hash) {
  if (!file_) return;
  pending_.push_back(frame);
  pending_hashes_.push_back(hash);
  if (pending_.size() >= static_cast<std::size_t>(kTickRate)) flush_frames();
}

void ReplayWriter::flush_frames() {
  if (!file_ || pending_.empty()) return;
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
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
  pending_.clear();
  pending_hashes_.clear();
}

void ReplayWriter::close(Tick last_tick, const std::string& reason) {
  if (!file_) return;
  flush_frames();
  flatbuffers::FlatBufferBuilder fbb(128);
  const auto r = fbb.CreateString(reason.substr(0, 256));
  fbb.Finish(replay::CreateRecord(fbb, replay::Chunk::ReplayEnd, replay::CreateReplayEnd(fbb, last_tick, r).Union()),
             replay::RecordIdentifier());
  write_record(fbb.GetBufferPointer(), fbb.GetSize());
  std::fclose(file_);
  file_ = nullptr;
}

namespace {

// Reads the records of a replay file one by one into a Replay.
struct RecordReader {
  Replay* out;
  bool have_header = false;
  Tick next_tick = 0;
  std::string why;  // set with the error

  ReplayError fail(ReplayError e, std::string text) {
    why = std::move(text);
    return e;
  }

  ReplayError header(const replay::Header& h, const std::string& at) {
    if (have_header) return fail(ReplayError::Corrupt, "second header" + at);
    if (h.format_version() != kReplayFormatVersion)
      return fail(ReplayError::Unsupported,
                  "replay format version " + std::to_string(h.format_version()) + " is not supported (this build reads " +
                      std::to_string(kReplayFormatVersion) + "; formats 1 and 2 held one built-in world's 16-bit inputs, not a module's input bytes and commands: record the session again)");
    if (h.players() < 1 || h.players() > kMaxPlayers || h.input_delay() > 50 ||
        (h.settings() && h.settings()->size() > kMaxSettingsBytes) || h.input_size() > kMaxInputBytes ||
        (h.module_name() && h.module_name()->size() > 32) ||
        (h.libraries() && h.libraries()->size() > kMaxLibraries))
      return fail(ReplayError::Corrupt, "header values out of range" + at);
    if (h.libraries())
      for (const auto* l : *h.libraries()) {
        if (!l->name() || l->name()->size() == 0 || l->name()->size() > kMaxLibraryNameBytes ||
            (l->build() && l->build()->size() > kMaxLibraryBuildBytes))
          return fail(ReplayError::Corrupt, "a library in the header is out of range" + at);
        out->header.libraries.push_back({l->name()->str(), l->build() ? l->build()->str() : ""});
      }
    ReplayHeader& hd = out->header;
    hd.protocol_version = h.protocol_version();
    hd.fingerprint = h.fingerprint();
    hd.world.players = h.players();
    if (h.settings()) hd.world.settings.assign(h.settings()->begin(), h.settings()->end());
    hd.input_size = h.input_size();
    hd.module = h.module_name() ? h.module_name()->str() : "";
    hd.input_delay = h.input_delay();
    hd.start_tick = h.start_tick();
    if (h.names())
      for (const auto* n : *h.names()) hd.names.push_back(n->str().substr(0, 32));
    have_header = true;
    next_tick = hd.start_tick + 1;
    return ReplayError::None;
  }

  ReplayError frames(const replay::Frames& f, const std::string& at) {
    if (!have_header) return fail(ReplayError::Corrupt, "frames before the header" + at);
    const std::uint32_t players = out->header.world.players;
    const std::size_t n = f.present() ? f.present()->size() : 0;
    if (n == 0 || !f.filled() || f.filled()->size() != n || !f.hashes() || f.hashes()->size() != n)
      return fail(ReplayError::Corrupt, "inconsistent frame record" + at);
    const std::uint32_t input_size = out->header.input_size;
    const PackedView v = packed_view(f);
    if (const std::string fault = check_packed(v, n * players, input_size); !fault.empty())
      return fail(ReplayError::Corrupt, "inconsistent frame record: " + fault + at);
    PackedReader r(v, input_size);
    Commands scratch;
    if (f.first_tick() != next_tick)
      return fail(ReplayError::Corrupt, "frames start at tick " + std::to_string(f.first_tick()) + ", expected " +
                                            std::to_string(next_tick) + at);
    for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
      InputFrame fr;
      read_frame(r, next_tick++, players, input_size, f.present()->Get(i), f.filled()->Get(i), fr, scratch);
      out->frames.push_back(std::move(fr));
      out->hashes.push_back(f.hashes()->Get(i));
    }
    return ReplayError::None;
  }

  ReplayError end(const replay::ReplayEnd& e, const std::string& at) {
    if (!have_header) return fail(ReplayError::Corrupt, "end before the header" + at);
    if (e.last_tick() != next_tick - 1) return fail(ReplayError::Corrupt, "end record names the wrong last tick" + at);
    out->complete = true;
    out->end_reason = e.reason() ? e.reason()->str().substr(0, 256) : "";
    return ReplayError::None;
  }

  // One record's checked payload (8-byte aligned, FlatBuffers reads 64-bit fields in place).
  ReplayError record(std::span<const std::uint8_t> payload, const std::string& at) {
    flatbuffers::Verifier v(payload.data(), payload.size());
    if (!replay::VerifyRecordBuffer(v)) return fail(ReplayError::Corrupt, "record does not verify" + at);
    const replay::Record* rec = replay::GetRecord(payload.data());
    switch (rec->chunk_type()) {
      case replay::Chunk::Header: return header(*rec->chunk_as_Header(), at);
      case replay::Chunk::Frames: return frames(*rec->chunk_as_Frames(), at);
      case replay::Chunk::ReplayEnd: return end(*rec->chunk_as_ReplayEnd(), at);
      case replay::Chunk::NONE: break;
    }
    return fail(ReplayError::Corrupt, "empty record" + at);
  }
};

}  // namespace

ReplayError read_replay(const std::string& path, Replay* out, std::string* detail) {
  *out = Replay{};
  RecordReader reader{out, false, 0, {}};
  auto fail = [&](ReplayError e, const std::string& why) {
    if (detail) *detail = why;
    return e;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ReplayError::CannotOpen, "cannot open " + path + ": " + std::strerror(errno));
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail(ReplayError::NotAReplay, path + " is not a lockstep replay (no LSREPLAY signature)");
  std::size_t pos = sizeof kMagic;
  std::vector<std::uint64_t> aligned;
  while (pos < bytes.size()) {
    const std::string at = " at byte " + std::to_string(pos);
    if (out->complete) return fail(ReplayError::Corrupt, "data after the end record" + at);
    if (bytes.size() - pos < kRecordHeader) return fail(ReplayError::Truncated, "truncated record header" + at);
    ByteReader r(std::span<const std::uint8_t>(bytes.data() + pos, kRecordHeader));
    const std::uint32_t len = r.u32();
    const std::uint64_t sum = r.u64();
    if (len == 0 || len > kMaxRecord) return fail(ReplayError::Corrupt, "record length " + std::to_string(len) + " out of range" + at);
    if (bytes.size() - pos - kRecordHeader < len) return fail(ReplayError::Truncated, "truncated record" + at);
    const std::span<const std::uint8_t> raw(bytes.data() + pos + kRecordHeader, len);
    if (hash_bytes(raw) != sum) return fail(ReplayError::Corrupt, "checksum mismatch in the record" + at);
    aligned.assign((len + 7) / 8, 0);
    std::memcpy(aligned.data(), raw.data(), len);
    const ReplayError e = reader.record({reinterpret_cast<const std::uint8_t*>(aligned.data()), len}, at);
    if (e != ReplayError::None) return fail(e, reader.why);
    pos += kRecordHeader + len;
  }
  if (!reader.have_header) return fail(ReplayError::Truncated, "no header record");
  if (!out->complete) return fail(ReplayError::Truncated, "no end record: the recording stopped after tick " +
                                                               std::to_string(reader.next_tick - 1) + " (crash or kill?)");
  return ReplayError::None;
}

Replay scenario_replay(const Scenario& scenario, Tick ticks) {
  Replay r;
  auto sim = scenario.module->create(scenario.world);
  r.header.protocol_version = kProtocolVersion;
  r.header.fingerprint = sim->fingerprint();
  r.header.world = scenario.world;
  r.header.input_size = sim->input_size();
  r.header.module = std::string(scenario.module->name);
  r.header.libraries.assign(scenario.module->libraries.begin(), scenario.module->libraries.end());
  for (std::uint32_t p = 0; p < scenario.world.players; ++p) r.header.names.push_back("bot" + std::to_string(p));
  for (Tick t = 1; t <= ticks; ++t) {
    r.frames.push_back(scenario_frame(scenario, t));
    sim->step(r.frames.back());
    r.hashes.push_back(sim->hash());
  }
  r.complete = true;
  r.end_reason = "scenario";
  return r;
}

bool write_replay(const std::string& path, const Replay& replay, std::string* error) {
  ReplayWriter w;
  if (!w.open(path, replay.header, error)) return false;
  for (std::size_t i = 0; i < replay.frames.size(); ++i) w.add(replay.frames[i], replay.hashes[i]);
  w.close(replay.header.start_tick + static_cast<Tick>(replay.frames.size()), replay.end_reason);
  return true;
}

}  // namespace lockstep
