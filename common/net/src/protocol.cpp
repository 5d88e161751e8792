// The wire protocol: verified decoding and the message builders (protocol.hpp).
#include "lockstep/protocol.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>


namespace lockstep::protocol {
namespace {

using flatbuffers::FlatBufferBuilder;

Bytes finish(FlatBufferBuilder& fbb, wire::Body type, flatbuffers::Offset<void> body) {
  fbb.Finish(wire::CreateMessage(fbb, type, body), wire::MessageIdentifier());
  return Bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

template <class V>
bool at_most(const V* v, std::size_t n) {
  return v == nullptr || v->size() <= n;
}

bool field_ranges_ok(const wire::Message& m) {
  using wire::Body;
  switch (m.body_type()) {
    case Body::JoinRequest: {
      const auto* b = m.body_as_JoinRequest();
      if (!at_most(b->token(), kMaxJoinSecretBytes) || !at_most(b->name(), kMaxNameBytes) ||
          !at_most(b->rejoin_secret(), kMaxSecretBytes) || !at_most(b->libraries(), kMaxLibraries) ||
          !at_most(b->code(), kMaxLibraryBuildBytes))
        return false;
      if (b->libraries())
        for (const auto* l : *b->libraries())
          if (!at_most(l->name(), kMaxLibraryNameBytes) || !at_most(l->build(), kMaxLibraryBuildBytes)) return false;
      return true;
    }
    case Body::Welcome: {
      const auto* b = m.body_as_Welcome();
      if (b->players() < 1 || b->players() > kMaxPlayers || b->input_delay() > kMaxInputDelay ||
          b->send_every() > kMaxSendEvery)
        return false;
      if (b->slot() < -1 || b->slot() >= static_cast<std::int32_t>(b->players())) return false;
      if (!at_most(b->roster(), kMaxPlayers) || !at_most(b->rejoin_secret(), kMaxSecretBytes) ||
          !at_most(b->settings(), kMaxSettingsBytes))
        return false;
      if (b->roster())
        for (const auto* seat : *b->roster())
          if (seat->slot() >= b->players() || !at_most(seat->name(), kMaxNameBytes)) return false;
      return true;
    }
    case Body::Refuse: return at_most(m.body_as_Refuse()->detail(), kMaxDetailBytes);
    case Body::SessionStart: return m.body_as_SessionStart()->starts_in_us() <= 10'000'000;
    // Protocol 6's play messages: version 7 sends ClientPlay and ServerPlay (§6.6) instead.
    case Body::ClientTick: return false;
    case Body::ServerTick: return false;
    case Body::PlayerJoined: return at_most(m.body_as_PlayerJoined()->name(), kMaxNameBytes);
    case Body::PlayerLeft: return at_most(m.body_as_PlayerLeft()->reason(), kMaxDetailBytes);
    case Body::Leave: return at_most(m.body_as_Leave()->reason(), kMaxDetailBytes);
    case Body::Kick: return at_most(m.body_as_Kick()->reason(), kMaxDetailBytes);
    case Body::SessionEnd: return at_most(m.body_as_SessionEnd()->detail(), kMaxDetailBytes);
    case Body::DesyncNotice: return true;
    case Body::StatusRequest: {
      const auto* b = m.body_as_StatusRequest();
      return at_most(b->padding(), kMaxStatusPadding) && at_most(b->key_proof(), kMaxStatusProofBytes);
    }
    case Body::ConnectRequest: {
      const auto* t = m.body_as_ConnectRequest()->token();
      return t && t->size() <= kMaxSealedTokenBytes;
    }
    case Body::ConnectChallenge: {
      const auto* n = m.body_as_ConnectChallenge()->nonce();
      return n && n->size() == kChallengeNonceBytes;
    }
    case Body::StatusReply: {
      const auto* b = m.body_as_StatusReply();
      if (!at_most(b->phase(), 16) || !at_most(b->seats(), kMaxPlayers) || !at_most(b->sealed(), kMaxMessageBytes / 2))
        return false;
      if (b->seats())
        for (const auto* s : *b->seats())
          if (!at_most(s->name(), kMaxNameBytes)) return false;
      return true;
    }
    case Body::DesyncProbe: {
      const auto* b = m.body_as_DesyncProbe();
      // A Blocks question needs blocks of at least one entity; the other levels ignore block_size.
      return b->count() <= kMaxProbeHashes && b->block_size() <= 1'000'000 &&
             (b->level() != wire::ProbeLevel::Blocks || b->block_size() >= 1);
    }
    case Body::DesyncDetail: {
      const auto* b = m.body_as_DesyncDetail();
      return at_most(b->hashes(), kMaxProbeHashes) && at_most(b->values(), kMaxProbeValues);
    }
    case Body::Snapshot: {
      const auto* b = m.body_as_Snapshot();
      const std::size_t n = b->data() ? b->data()->size() : 0;
      return b->total_size() <= kMaxSnapshotBytes && n <= kSnapshotChunkBytes && b->offset() <= b->total_size() &&
             n <= b->total_size() - b->offset();
    }
    case Body::StateRequest: return m.body_as_StateRequest()->request() != 0;
    case Body::GameResult: return at_most(m.body_as_GameResult()->result(), 256);
    case Body::DesyncLocated: {
      const auto* b = m.body_as_DesyncLocated();
      if (!at_most(b->where(), 32) || !at_most(b->fields(), kMaxProbeValues)) return false;
      if (b->fields())
        for (const auto* f : *b->fields())
          if (!at_most(f->name(), 64) || f->kind() > 3) return false;
      return true;
    }
    case Body::NONE: return false;
  }
  return false;
}

}  // namespace

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::None: return "none";
    case DecodeError::TooLarge: return "too large";
    case DecodeError::NotFlatBuffer: return "not a valid message";
    case DecodeError::NoBody: return "no message body";
    case DecodeError::FieldOutOfRange: return "field out of range";
    case DecodeError::UnknownBase: return "frames against a base frame not held";
  }
  return "?";
}

const wire::Message* decode(std::span<const std::uint8_t> bytes, DecodeError* error, std::size_t max_bytes) {
  auto fail = [&](DecodeError e) -> const wire::Message* {
    if (error) *error = e;
    return nullptr;
  };
  if (bytes.size() > max_bytes) return fail(DecodeError::TooLarge);
  if (bytes.size() < 8 || !flatbuffers::BufferHasIdentifier(bytes.data(), wire::MessageIdentifier()))
    return fail(DecodeError::NotFlatBuffer);
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/16, /*max_tables=*/256);
  // Messages are small and flat; the snapshot's byte vector is one object however large.
  if (!wire::VerifyMessageBuffer(verifier)) return fail(DecodeError::NotFlatBuffer);
  const wire::Message* m = wire::GetMessage(bytes.data());
  if (m->body_type() == wire::Body::NONE || m->body() == nullptr) return fail(DecodeError::NoBody);
  // (A Snapshot chunk is at most kSnapshotChunkBytes of state plus a few fields.)
  const bool large_allowed = m->body_type() == wire::Body::DesyncDetail || m->body_type() == wire::Body::Snapshot;
  if (!large_allowed && bytes.size() > kMaxMessageBytes) return fail(DecodeError::TooLarge);
  if (!field_ranges_ok(*m)) return fail(DecodeError::FieldOutOfRange);
  if (error) *error = DecodeError::None;
  return m;
}

Bytes join_request(std::uint32_t protocol_version, std::uint64_t fingerprint, const std::string& token,
                   const std::string& name, bool spectate, const std::string& rejoin_secret,
                   std::span<const LibraryBuild> libraries, const std::string& code, std::uint32_t fma) {
  FlatBufferBuilder fbb(256);
  const auto t = fbb.CreateString(token);
  const auto n = fbb.CreateString(name);
  const auto r = fbb.CreateString(rejoin_secret);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::LibraryBuild>>> libs = 0;
  if (!libraries.empty()) {
    std::vector<flatbuffers::Offset<wire::LibraryBuild>> v;
    for (const LibraryBuild& l : libraries.first(std::min(libraries.size(), kMaxLibraries)))
      v.push_back(wire::CreateLibraryBuild(fbb, fbb.CreateString(l.name.substr(0, kMaxLibraryNameBytes)),
                                           fbb.CreateString(l.build.substr(0, kMaxLibraryBuildBytes))));
    libs = fbb.CreateVector(v);
  }
  const auto c = code.empty() ? flatbuffers::Offset<flatbuffers::String>() : fbb.CreateString(code.substr(0, kMaxLibraryBuildBytes));
  return finish(fbb, wire::Body::JoinRequest,
                wire::CreateJoinRequest(fbb, protocol_version, fingerprint, t, n, spectate, r, libs, c, fma).Union());
}

std::vector<LibraryBuild> join_libraries(const wire::JoinRequest& m) {
  std::vector<LibraryBuild> out;
  if (!m.libraries()) return out;
  for (const auto* l : *m.libraries())
    out.push_back({l->name() ? l->name()->str() : "", l->build() ? l->build()->str() : ""});
  return out;
}

Bytes welcome(std::int32_t slot, std::uint32_t input_delay, Tick last_tick, const WorldParams& world,
              const std::vector<Seat>& roster, const std::string& rejoin_secret, bool joining,
              std::uint64_t world_fingerprint, std::uint32_t send_every) {
  FlatBufferBuilder fbb(256);
  std::vector<flatbuffers::Offset<wire::PlayerInfo>> seats;
  for (const Seat& s : roster) seats.push_back(wire::CreatePlayerInfo(fbb, s.slot, fbb.CreateString(s.name)));
  const auto r = fbb.CreateVector(seats);
  const auto secret = fbb.CreateString(rejoin_secret);
  const auto settings = fbb.CreateVector(world.settings);
  return finish(fbb, wire::Body::Welcome,
                wire::CreateWelcome(fbb, slot, input_delay, last_tick, world.players, r, secret, joining, settings,
                                                    world_fingerprint, send_every)
                                    .Union());
}

Bytes refuse(wire::RefuseReason reason, const std::string& detail) {
  FlatBufferBuilder fbb(128);
  const auto d = fbb.CreateString(detail.substr(0, kMaxDetailBytes));
  return finish(fbb, wire::Body::Refuse, wire::CreateRefuse(fbb, reason, d).Union());
}

Bytes start(std::uint32_t starts_in_us) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Body::SessionStart, wire::CreateSessionStart(fbb, starts_in_us).Union());
}

Bytes desync_notice(Tick tick, std::int32_t slot, std::uint64_t server_hash, std::uint64_t client_hash) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Body::DesyncNotice, wire::CreateDesyncNotice(fbb, tick, slot, server_hash, client_hash).Union());
}

Bytes player_joined(std::uint32_t slot, const std::string& name) {
  FlatBufferBuilder fbb(64);
  const auto n = fbb.CreateString(name);
  return finish(fbb, wire::Body::PlayerJoined, wire::CreatePlayerJoined(fbb, slot, n).Union());
}

Bytes player_left(std::uint32_t slot, Tick tick, const std::string& reason) {
  FlatBufferBuilder fbb(64);
  const auto r = fbb.CreateString(reason);
  return finish(fbb, wire::Body::PlayerLeft, wire::CreatePlayerLeft(fbb, slot, tick, r).Union());
}

Bytes leave(const std::string& reason) {
  FlatBufferBuilder fbb(64);
  const auto r = fbb.CreateString(reason);
  return finish(fbb, wire::Body::Leave, wire::CreateLeave(fbb, r).Union());
}

Bytes session_end(wire::EndReason reason, Tick last_tick, const std::string& detail) {
  FlatBufferBuilder fbb(128);
  const auto d = fbb.CreateString(detail.substr(0, kMaxDetailBytes));
  return finish(fbb, wire::Body::SessionEnd, wire::CreateSessionEnd(fbb, reason, last_tick, d).Union());
}

Bytes kick(const std::string& reason) {
  FlatBufferBuilder fbb(128);
  const auto r = fbb.CreateString(reason.substr(0, kMaxDetailBytes));
  return finish(fbb, wire::Body::Kick, wire::CreateKick(fbb, r).Union());
}

std::string overlong_join_field(std::span<const std::uint8_t> data, std::size_t* limit) {
  DecodeError err;
  if (decode(data, &err, kMaxMessageBytes) != nullptr || err != DecodeError::FieldOutOfRange) return "";
  const wire::Message* m = wire::GetMessage(data.data());  // verified by decode() above
  if (m->body_type() != wire::Body::JoinRequest) return "";
  const auto* b = m->body_as_JoinRequest();
  const struct {
    const flatbuffers::String* field;
    const char* name;
    std::size_t limit;
  } fields[] = {{b->name(), "name", kMaxNameBytes}, {b->token(), "token", kMaxJoinSecretBytes},
                {b->rejoin_secret(), "rejoin_secret", kMaxSecretBytes}};
  for (const auto& f : fields)
    if (!at_most(f.field, f.limit)) {
      if (limit) *limit = f.limit;
      return f.name;
    }
  return "";
}

Bytes desync_probe(Tick tick, wire::ProbeLevel level, std::uint32_t first, std::uint32_t count, std::uint32_t block_size) {
  FlatBufferBuilder fbb(64);
  return finish(fbb, wire::Body::DesyncProbe, wire::CreateDesyncProbe(fbb, tick, level, first, count, block_size).Union());
}

Bytes desync_detail(Tick tick, wire::ProbeLevel level, std::uint32_t first, bool available,
                    std::span<const std::uint64_t> hashes, std::span<const std::uint64_t> values) {
  FlatBufferBuilder fbb(64 + hashes.size_bytes() + values.size_bytes());
  const auto hv = fbb.CreateVector(hashes.data(), hashes.size());
  const auto vv = fbb.CreateVector(values.data(), values.size());
  return finish(fbb, wire::Body::DesyncDetail,
                wire::CreateDesyncDetail(fbb, tick, level, first, available, hv, vv).Union());
}

Bytes snapshot_chunk(Tick tick, std::uint32_t epoch, std::uint64_t hash, std::uint32_t total, std::uint32_t offset,
                     std::span<const std::uint8_t> data, bool join, std::uint32_t request, bool compare) {
  FlatBufferBuilder fbb(data.size() + 128);
  const auto dv = fbb.CreateVector(data.data(), data.size());
  return finish(fbb, wire::Body::Snapshot,
                wire::CreateSnapshot(fbb, tick, epoch, hash, total, offset, dv, join, request, compare).Union());
}

std::vector<Bytes> snapshot(Tick tick, std::uint32_t epoch, std::uint64_t hash, std::span<const std::uint8_t> state,
                            bool join, std::uint32_t request, bool compare) {
  std::vector<Bytes> out;
  std::size_t offset = 0;
  do {
    const std::size_t n = std::min(kSnapshotChunkBytes, state.size() - offset);
    out.push_back(snapshot_chunk(tick, epoch, hash, static_cast<std::uint32_t>(state.size()),
                                 static_cast<std::uint32_t>(offset), state.subspan(offset, n), join, request, compare));
    offset += n;
  } while (offset < state.size());
  return out;
}

Bytes desync_located(const DesyncReport& r, bool available, std::int64_t first_byte) {
  FlatBufferBuilder fbb(256);
  std::vector<flatbuffers::Offset<wire::LocatedField>> fields;
  for (std::size_t i = 0; i < r.server_fields.size() && i < r.client_fields.size() && i < kMaxProbeValues; ++i) {
    const auto name = fbb.CreateString(r.server_fields[i].name.substr(0, 64));
    fields.push_back(wire::CreateLocatedField(fbb, name, static_cast<std::uint8_t>(r.server_fields[i].kind),
                                              r.server_fields[i].bits, r.client_fields[i].bits));
  }
  const auto fv = fbb.CreateVector(fields);
  const auto where = fbb.CreateString(r.where.substr(0, 32));
  return finish(fbb, wire::Body::DesyncLocated,
                wire::CreateDesyncLocated(fbb, r.tick, available, where, r.entity, fv, first_byte,
                                          static_cast<std::uint32_t>(std::min<std::uint64_t>(r.state_bytes, UINT32_MAX)))
                    .Union());
}

Bytes game_result(Tick tick, std::span<const std::uint8_t> result) {
  FlatBufferBuilder fbb(64 + result.size());
  const auto rv = fbb.CreateVector(result.data(), result.size());
  return finish(fbb, wire::Body::GameResult, wire::CreateGameResult(fbb, tick, rv).Union());
}

Bytes state_request(Tick tick, std::uint32_t request) {
  FlatBufferBuilder fbb(48);
  return finish(fbb, wire::Body::StateRequest, wire::CreateStateRequest(fbb, tick, request).Union());
}

Bytes status_request(std::span<const std::uint8_t> key_proof, std::size_t pad_to) {
  FlatBufferBuilder fbb(pad_to + 64);
  const auto proof = key_proof.empty() ? 0 : fbb.CreateVector(key_proof.data(), key_proof.size());
  // The padding makes the request at least `pad_to` bytes (a few over: FlatBuffers aligns).
  const std::vector<std::uint8_t> zeros(pad_to > 40 + key_proof.size() ? pad_to - 40 - key_proof.size() : 0, 0);
  const auto pad = fbb.CreateVector(zeros);
  return finish(fbb, wire::Body::StatusRequest, wire::CreateStatusRequest(fbb, pad, proof).Union());
}

Bytes status_reply(const Status& st) {
  FlatBufferBuilder fbb(256);
  const auto ph = fbb.CreateString(st.phase);
  std::vector<flatbuffers::Offset<wire::SeatStatus>> seats;
  for (const SeatStatus& s : st.seats) {
    const auto name = fbb.CreateString(s.name.substr(0, kMaxNameBytes));
    seats.push_back(wire::CreateSeatStatus(fbb, s.slot, name, s.rtt_us, s.jitter_us, s.loss_ppm, s.lead_us,
                                           s.fills_late, s.fills_lost, s.fills_silent, s.latency_p50_us,
                                           s.latency_p99_us, s.hashes_checked));
  }
  const auto sv = fbb.CreateVector(seats);
  const Status::Drops& d = st.dropped;
  const auto dropped = wire::CreateDatagramDrops(fbb, d.refused, d.empty, d.oversized, d.unknown_connection,
                                                 d.socket_buffer_full, d.websocket_refused, d.messages_dropped, d.kicked,
                                                 d.pending_refused, d.pending_evicted, d.handshakes_cut,
                                                 d.replies_withheld, d.states_unanswered, d.states_forged);
  return finish(fbb, wire::Body::StatusReply,
                wire::CreateStatusReply(fbb, ph, st.tick, st.players, st.joined, st.active, st.spectators, st.desyncs,
                                        st.lateness_p99_us, sv, st.protocol_version, st.fingerprint, st.last_tick, 0,
                                        dropped)
                    .Union());
}

Bytes public_status_reply(const Status& st, std::span<const std::uint8_t> sealed) {
  FlatBufferBuilder fbb(64 + sealed.size());
  const auto ph = fbb.CreateString(st.phase);
  const auto sv = sealed.empty() ? 0 : fbb.CreateVector(sealed.data(), sealed.size());
  return finish(fbb, wire::Body::StatusReply,
                wire::CreateStatusReply(fbb, ph, 0, st.players, st.joined, 0, 0, 0, 0, 0, st.protocol_version,
                                        st.fingerprint, 0, sv)
                    .Union());
}

Bytes connect_request(std::span<const std::uint8_t> sealed_token) {
  FlatBufferBuilder fbb(64 + sealed_token.size());
  const auto t = fbb.CreateVector(sealed_token.data(), sealed_token.size());
  return finish(fbb, wire::Body::ConnectRequest, wire::CreateConnectRequest(fbb, t).Union());
}

Bytes connect_challenge(std::span<const std::uint8_t> nonce) {
  FlatBufferBuilder fbb(96);
  const auto n = fbb.CreateVector(nonce.data(), nonce.size());
  return finish(fbb, wire::Body::ConnectChallenge, wire::CreateConnectChallenge(fbb, n).Union());
}

namespace {
bool printable(std::string_view text, std::size_t most) {
  if (text.empty() || text.size() > most) return false;
  for (char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}
}  // namespace

bool valid_name(std::string_view name) { return printable(name, kMaxNameBytes); }
bool valid_reason(std::string_view reason) { return printable(reason, kMaxReasonBytes); }

}  // namespace lockstep::protocol
