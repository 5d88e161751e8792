// Desync bundles (desync_bundle.hpp, schemas/bundle.fbs).
#include "lockstep/desync_bundle.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/wire/bundle_generated.h"

namespace lockstep {

namespace {

constexpr char kMagic[8] = {'L', 'S', 'D', 'E', 'S', 'Y', 'N', 'C'};
constexpr std::size_t kHeader = 12;
constexpr std::size_t kMaxNameBytes = 64, kMaxWriterBytes = 16;

}  // namespace

const BundleState* BundleParty::state(Tick t) const {
  for (const BundleState& s : states)
    if (s.tick == t) return &s;
  return nullptr;
}

bool is_bundle_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char sig[8] = {};
  in.read(sig, 8);
  return in.gcount() == 8 && std::memcmp(sig, kMagic, 8) == 0;
}

std::string bundle_path(const std::string& dir, Tick tick, std::int32_t slot) {
  return (dir.empty() ? std::string(".") : dir) + "/desync-" + std::to_string(tick) + "-" + std::to_string(slot) +
         ".bundle";
}

bool write_bundle(const std::string& path, const DesyncBundle& b, std::string* error) {
  // The replay within its bound: frames go from the front, then it keeps its header alone.
  std::vector<std::uint8_t> replay = replay_bytes(b.replay);
  if (replay.size() > kMaxBundleReplayBytes) {
    Replay header_only;
    header_only.header = b.replay.header;
    header_only.header.start_tick = b.tick;
    header_only.frames_from = b.tick;
    header_only.end_reason = "frames left out: over the bundle's bound";
    replay = replay_bytes(header_only);
  }
  flatbuffers::FlatBufferBuilder fbb(replay.size() + 4096);
  std::vector<flatbuffers::Offset<bundle::Party>> parties;
  std::size_t state_bytes = 0;
  for (std::size_t p = 0; p < b.parties.size() && p < kMaxBundleParties; ++p) {
    const BundleParty& party = b.parties[p];
    std::vector<std::uint32_t> ticks;
    std::vector<std::uint64_t> hashes;
    const std::size_t skip = party.hashes.size() > kMaxBundleHashes ? party.hashes.size() - kMaxBundleHashes : 0;
    for (std::size_t i = skip; i < party.hashes.size(); ++i) {
      ticks.push_back(party.hashes[i].first);
      hashes.push_back(party.hashes[i].second);
    }
    std::vector<flatbuffers::Offset<bundle::State>> states;
    const std::size_t first = party.states.size() > kMaxBundleStates ? party.states.size() - kMaxBundleStates : 0;
    for (std::size_t i = party.states.size(); i-- > first;) {  // newest first, so the bound cuts the oldest
      const BundleState& s = party.states[i];
      if (s.bytes.empty() || s.bytes.size() > kMaxKeyframeBytes ||
          state_bytes + s.bytes.size() + replay.size() > kMaxBundleBytes - (1u << 20))
        continue;
      state_bytes += s.bytes.size();
      states.push_back(bundle::CreateState(fbb, s.tick, s.hash, fbb.CreateVector(s.bytes)));
    }
    std::reverse(states.begin(), states.end());
    parties.push_back(bundle::CreatePartyDirect(fbb, party.name.substr(0, kMaxNameBytes).c_str(), &ticks, &hashes,
                                                &states));
  }
  std::string report = json_text(b.report);
  if (report.size() > kMaxBundleReportBytes) report = json_text(Json{{"note", "the report was over the bundle's bound"}});
  const auto root = bundle::CreateBundleDirect(fbb, kBundleFormatVersion, b.written_by.substr(0, kMaxWriterBytes).c_str(),
                                               b.tick, report.c_str(), &replay, &parties);
  fbb.Finish(root, bundle::BundleIdentifier());
  std::vector<std::uint8_t> head;
  ByteWriter w(head);
  w.u32(static_cast<std::uint32_t>(fbb.GetSize()));
  w.u64(hash_bytes({fbb.GetBufferPointer(), fbb.GetSize()}));
  // Written beside and renamed, so a reader never sees half a bundle.
  const std::string tmp = path + ".part";
  std::error_code ec;  // a folder of its own is made with its first file, as write_report does
  std::filesystem::create_directories(std::filesystem::path(tmp).parent_path(), ec);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    if (error) *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(kMagic, 1, sizeof kMagic, f) == sizeof kMagic &&
            std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
            std::fwrite(fbb.GetBufferPointer(), 1, fbb.GetSize(), f) == fbb.GetSize();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

ReplayError read_bundle(const std::string& path, DesyncBundle* out, std::string* detail) {
  *out = DesyncBundle{};
  auto fail = [&](ReplayError e, const std::string& why) {
    if (detail) *detail = why;
    return e;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ReplayError::CannotOpen, "cannot open " + path + ": " + std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  {
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      bytes.insert(bytes.end(), buf, buf + in.gcount());
      if (bytes.size() > kMaxBundleBytes + sizeof kMagic + kHeader)
        return fail(ReplayError::Corrupt, path + " is larger than a bundle may be (64 MiB)");
    }
  }
  const ReplayError e = parse_bundle(bytes, out, detail);
  if (e == ReplayError::NotAReplay && detail) *detail = path + " is " + *detail;
  return e;
}

ReplayError parse_bundle(std::span<const std::uint8_t> bytes, DesyncBundle* out, std::string* detail) {
  *out = DesyncBundle{};
  auto fail = [&](ReplayError e, const std::string& why) {
    if (detail) *detail = why;
    return e;
  };
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail(ReplayError::NotAReplay, "not a lockstep desync bundle (no LSDESYNC signature)");
  if (bytes.size() > kMaxBundleBytes + sizeof kMagic + kHeader) return fail(ReplayError::Corrupt, "larger than a bundle may be (64 MiB)");
  if (bytes.size() < sizeof kMagic + kHeader) return fail(ReplayError::Truncated, "truncated bundle header");
  ByteReader r(std::span<const std::uint8_t>(bytes.data() + sizeof kMagic, kHeader));
  const std::uint32_t len = r.u32();
  const std::uint64_t sum = r.u64();
  if (len == 0 || len > kMaxBundleBytes) return fail(ReplayError::Corrupt, "bundle length " + std::to_string(len) + " out of range");
  const std::size_t have = bytes.size() - sizeof kMagic - kHeader;
  if (have < len) return fail(ReplayError::Truncated, "truncated bundle: " + std::to_string(have) + " of " + std::to_string(len) + " bytes");
  if (have > len) return fail(ReplayError::Corrupt, "data after the bundle");
  std::vector<std::uint64_t> aligned((len + 7) / 8);
  std::memcpy(aligned.data(), bytes.data() + sizeof kMagic + kHeader, len);
  const auto* data = reinterpret_cast<const std::uint8_t*>(aligned.data());
  if (hash_bytes({data, len}) != sum) return fail(ReplayError::Corrupt, "checksum mismatch in the bundle");
  flatbuffers::Verifier v(data, len);
  if (!bundle::VerifyBundleBuffer(v)) return fail(ReplayError::Corrupt, "the bundle does not verify");
  const bundle::Bundle& b = *bundle::GetBundle(data);
  if (b.format_version() != kBundleFormatVersion)
    return fail(ReplayError::Unsupported, "bundle format version " + std::to_string(b.format_version()) +
                                              " is not supported (this build reads " + std::to_string(kBundleFormatVersion) + ")");
  if (!b.written_by() || b.written_by()->size() > kMaxWriterBytes || !b.report() ||
      b.report()->size() > kMaxBundleReportBytes || !b.replay() || b.replay()->size() > kMaxBundleReplayBytes ||
      (b.parties() && b.parties()->size() > kMaxBundleParties))
    return fail(ReplayError::Corrupt, "bundle values out of range");
  out->written_by = b.written_by()->str();
  out->tick = b.tick();
  out->report = json_parse(b.report()->str());
  if (out->report.is_discarded() || !out->report.is_object())
    return fail(ReplayError::Corrupt, "the bundle's report is not a JSON object");
  std::string why;
  const ReplayError re = parse_replay({b.replay()->data(), b.replay()->size()}, &out->replay, &why);
  if (re != ReplayError::None) return fail(ReplayError::Corrupt, "the bundle's replay: " + why);
  if (out->replay.last_tick > out->tick) return fail(ReplayError::Corrupt, "the bundle's replay goes past its tick");
  if (b.parties())
    for (const bundle::Party* p : *b.parties()) {
      BundleParty party;
      const std::size_t n = p->hash_ticks() ? p->hash_ticks()->size() : 0;
      if (!p->name() || p->name()->size() > kMaxNameBytes || n > kMaxBundleHashes ||
          (p->hashes() ? p->hashes()->size() : 0) != n || (p->states() && p->states()->size() > kMaxBundleStates))
        return fail(ReplayError::Corrupt, "a party of the bundle is out of range");
      party.name = p->name()->str();
      for (flatbuffers::uoffset_t i = 0; i < n; ++i) {
        const Tick t = p->hash_ticks()->Get(i);
        if (i > 0 && t <= party.hashes.back().first) return fail(ReplayError::Corrupt, "a party's hash ticks are out of order");
        party.hashes.emplace_back(t, p->hashes()->Get(i));
      }
      if (p->states())
        for (const bundle::State* s : *p->states()) {
          if (!s->bytes() || s->bytes()->size() == 0 || s->bytes()->size() > kMaxKeyframeBytes)
            return fail(ReplayError::Corrupt, "a state of the bundle is out of range");
          if (!party.states.empty() && s->tick() <= party.states.back().tick)
            return fail(ReplayError::Corrupt, "a party's states are out of order");
          BundleState st{s->tick(), s->hash(), {s->bytes()->begin(), s->bytes()->end()}};
          if (hash_bytes(st.bytes) != st.hash)
            return fail(ReplayError::Corrupt, "the state of tick " + std::to_string(st.tick) + " of " + party.name +
                                                  " does not hash to its recorded hash");
          party.states.push_back(std::move(st));
        }
      out->parties.push_back(std::move(party));
    }
  return ReplayError::None;
}

}  // namespace lockstep
