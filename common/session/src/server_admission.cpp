// Admission on the server: connections in and out, room for new ones, connect tokens and their
// challenge (docs/PROTOCOL.md §4.6, §4.7), joins and refusals, kicks, seats, and status queries.
// A connect token is followed here from its ConnectRequest to the seat it binds.
#include <algorithm>
#include <random>

#include "lockstep/datagram_check.hpp"
#include "lockstep/log.hpp"
#include "lockstep/version.hpp"
#include "drop_log.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {

constexpr std::int64_t kIdlePendingNs = 1'000'000'000;  // a pending connection silent this long may make room
constexpr const char* kTokenUsedElsewhere = "this connect token was already used from another address";

wire::RefuseReason refusal_for(TokenError e) {
  switch (e) {
    case TokenError::Expired:
    case TokenError::NotYetValid: return wire::RefuseReason::TokenExpired;  // outside its time, whichever side
    case TokenError::WrongProtocol:
    case TokenError::WrongServer: return wire::RefuseReason::WrongServer;
    default: return wire::RefuseReason::BadToken;
  }
}

// Rejoin secrets come from the OS's random source: they guard a seat, not the simulation.
std::string new_secret() {
  std::random_device rd;
  char buf[33];
  for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(rd()));
  return std::string(buf, 32);
}

}  // namespace

void ServerSession::Impl::on_connect(NetPeer* link, std::int64_t now) {
  if (!admit_pending(peer_ip(link), now)) {
    ++stats.pending_refused;
    if (drop_worth_logging(stats.pending_refused))
      LOCKSTEP_LOG_WARN("refused a connection from %s: %u connections (at most %u from one address) are already waiting to join",
                        peer_address(link).c_str(), count_role(Role::Pending), cfg.max_pending_per_address);
    peer_disconnect_now(link);
    return;
  }
  const std::uint32_t id = next_peer_id++;
  peer_set_tag(link, id);
  peer_set_backstop_timeout(link, backstop_ms(cfg.silent_drop_ns));
  Peer p;
  p.link = link;
  p.id = id;
  p.index = take_index();
  p.connected_at = now;
  gate.open(p.index, peer_ip(link), cfg.message_burst, now);
  auto& added = peers.emplace(id, std::move(p)).first->second;
  if (peer_channel_count(link) < kChannelCount)
    refuse(added, wire::RefuseReason::TooFewChannels,
           "the connection opened " + std::to_string(peer_channel_count(link)) + " ENet channel(s); the protocol uses " +
               std::to_string(kChannelCount) + " (0 control, 1 play)");
}

bool ServerSession::Impl::admit_pending(std::uint32_t ip, std::int64_t now) {
  // A connection refused (or timed out) before joining holds no place once its answer has been
  // acknowledged: only ENet's disconnect handshake is left, which a client that exits on the
  // answer never completes. It is closed at once, so the peers ENet holds stay bounded too.
  for (auto it = peers.begin(); it != peers.end();) {
    if (it->second.role == Role::Pending && it->second.closing && peer_told_all(it->second.link)) {
      peer_disconnect_now(it->second.link);
      it = erase_peer(it, now);
    } else {
      ++it;
    }
  }
  std::vector<PendingView> pending;
  for (const auto& [id, q] : peers)
    if (q.role == Role::Pending)  // one whose token waits for the server's key is not stale: the wait is the server's
      pending.push_back({id, entry(q).ip, q.closing, entry(q).deferred_token.empty() ? q.connected_at : now, entry(q).last_received,
                         entry(q).bad > 0 || entry(q).unopened > 0});
  PendingLimits limits;
  limits.max_pending = cfg.max_pending;
  limits.max_per_address = cfg.max_pending_per_address;
  limits.idle_ns = kIdlePendingNs;
  const RoomDecision room = make_room(pending, ip, now, limits);
  if (!room.admit) return false;
  if (room.evict == 0) return true;
  const std::uint32_t victim = room.evict;
  const auto it = peers.find(victim);
  if (!it->second.closing)
    LOCKSTEP_LOG_INFO("closing %s, which has not joined yet: a new connection needs its place",
                      peer_address(it->second.link).c_str());
  ++stats.pending_evicted;
  peer_disconnect_now(it->second.link);
  erase_peer(it, now);
  return true;
}

void ServerSession::Impl::on_disconnect(NetPeer* link, std::int64_t now) {
  const auto it = peers.find(static_cast<std::uint32_t>(peer_tag(link)));
  if (it == peers.end()) return;
  Peer& p = it->second;
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];  // s.net keeps the figures last measured (check_peers)
    if (!s.leaving) {
      s.leaving = true;
      s.leave_reason = "disconnected";
    }
    const LogScope scope(p.slot);
    LOCKSTEP_LOG_INFO("player %d (%s) %s", p.slot, p.name.c_str(), s.leave_reason.c_str());
    if (phase == Phase::Lobby) free_slot(static_cast<std::size_t>(p.slot));
  } else if (p.role == Role::Spectator) {
    LOCKSTEP_LOG_INFO("spectator %s left", p.name.c_str());
  }
  erase_peer(it, now);
}

std::map<std::uint32_t, ServerSession::Impl::Peer>::iterator ServerSession::Impl::erase_peer(
    std::map<std::uint32_t, Peer>::iterator it, std::int64_t now) {
  if (it->second.role != Role::Pending) close_report(it->second, "its connection closed", now);
  const std::uint32_t index = it->second.index;
  gate.forget(index);
  feed.forget(index);
  referee.forget(index);
  relay_mode.forget(index);
  free_indices.push_back(index);
  return peers.erase(it);
}

// Drops a peer that broke a limit; everyone else plays on.
void ServerSession::Impl::kick(Peer& p, const std::string& reason) {
  if (p.closing) return;
  ++stats.kicked;
  LOCKSTEP_LOG_WARN("dropping %s (%s): %s", peer_address(p.link).c_str(), p.name.empty() ? "not joined" : p.name.c_str(),
                    reason.c_str());
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];
    s.leaving = true;
    s.leave_reason = "dropped: " + reason;
    if (p.link) remember_link(s, p.link);
  }
  send(p, Channel::Control, protocol::kick(reason));  // reliable, so it arrives before the disconnect
  p.closing = true;
  peer_disconnect_later(p.link);
}

void ServerSession::Impl::refuse(Peer& p, wire::RefuseReason reason, const std::string& detail) {
  PeerGate::Entry& e = entry(p);
  ++stats.refused;
  ++stats.refusals[std::min<std::size_t>(static_cast<std::size_t>(reason), stats.refusals.size() - 1)];
  LOCKSTEP_LOG_INFO("refused %s: %s", peer_address(p.link).c_str(), detail.c_str());
  protocol::Bytes msg = protocol::refuse(reason, detail);
  // Before authentication a refusal is no larger than what the peer sent: its detail is cut.
  if (tokens_required() && !e.authenticated && p.link) {
    const std::size_t budget = e.bytes_in - std::min(e.bytes_in, e.bytes_out) - (e.seal ? PacketSeal::overhead(Channel::Control) : 0);
    for (std::string d = detail; msg.size() > budget && !d.empty();) {
      d.resize(d.size() > 16 ? d.size() - 16 : 0);
      msg = protocol::refuse(reason, d);
    }
  }
  send(p, Channel::Control, msg);
  peer_disconnect_later(p.link);
  p.role = Role::Pending;
  p.closing = true;
}

void ServerSession::Impl::on_connect_request(Peer& p, const wire::ConnectRequest& m) {
  PeerGate::Entry& e = entry(p);
  if (!tokens_required()) return drop(p, DropReason::UnexpectedMessage, " (a connect token: this server takes plain joins)");
  if (p.role != Role::Pending || e.by_token || p.closing || !e.deferred_token.empty())
    return drop(p, DropReason::UnexpectedMessage, " (second connect request)");
  // Before the key arrives (an allocation hands it over) the request waits for it, within the
  // join timeout: a player the matchmaker sent at once is not turned away.
  if (!cfg.token_key) {
    e.deferred_token.assign(m.token()->begin(), m.token()->end());
    return;
  }
  open_token(p, {m.token()->data(), m.token()->size()});
}

void ServerSession::Impl::take_token_key(const SecretKey& key, const std::vector<TokenAddress>& addresses) {
  if (!cfg.result_key) result_key = result_key_from(key);  // results are authenticated with the match's key
  cfg.token_key = key;
  if (!addresses.empty()) cfg.public_addresses = addresses;
  for (auto& [id, p] : peers)
    if (!entry(p).deferred_token.empty() && !p.closing) {
      const std::vector<std::uint8_t> token = std::move(entry(p).deferred_token);
      entry(p).deferred_token.clear();
      open_token(p, token);
    }
}

void ServerSession::Impl::open_token(Peer& p, std::span<const std::uint8_t> sealed_token) {
  PeerGate::Entry& record = entry(p);
  OpenedToken t;
  TokenError e = open_connect_token(sealed_token, *cfg.token_key, cfg.protocol_id, unix_now(), &t);
  // A token's expiry bounds a client's first join; a client that holds a seat may come back with it.
  if (e == TokenError::Expired &&
      std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.taken && s.bound && s.client_id == t.client_id; }))
    e = TokenError::None;
  if (e == TokenError::None && !names_this_server(t.servers)) e = TokenError::WrongServer;
  if (e != TokenError::None) return refuse(p, refusal_for(e), to_string(e));
  // A token is good from the address that first used it; from another it is a replay. It is
  // claimed when the peer proves it holds the keys (claim_token): the request itself travels in
  // the clear, and an observer who replays it first must not tie the token to its own address.
  if (gate.tokens.claimed_elsewhere(t.nonce, record.ip))
    return refuse(p, wire::RefuseReason::TokenInUse, kTokenUsedElsewhere);
  record.token_nonce = t.nonce;
  record.token_expire = t.expire_time;
  record.client_id = t.client_id;
  record.user_data = t.user_data;
  record.token_slot = t.slot;
  std::array<std::uint8_t, protocol::kChallengeNonceBytes> nonce;
  random_bytes(nonce);
  record.by_token = true;
  if (p.link && p.link->stream()) {
    // Through the WebSocket door the stream carries every message in order, and TLS keeps it
    // from being read, altered or replayed on the way (§17): the request itself proves the
    // token is this connection's, and nothing is sealed. The challenge tells the client to join.
    record.authenticated = true;
    if (!claim_token(p)) return;
    return send(p, Channel::Control, protocol::connect_challenge(nonce));
  }
  send(p, Channel::Control, protocol::connect_challenge(nonce));  // in the clear: the keys follow from it
  const ConnectionKeys keys = derive_connection_keys(t.client_to_server, t.server_to_client, nonce, /*server_side=*/true);
  record.seal = std::make_unique<PacketSeal>(keys);
  // Its datagrams are checked with the keys as soon as the client, which has them next, uses them (§1.1).
  transport->authenticate(p.link, datagram_keys(keys), /*speaks_first=*/false);
}

bool ServerSession::Impl::open_sealed(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel) {
  PeerGate::Entry& record = entry(p);
  const Channel ch = channel == static_cast<std::uint8_t>(Channel::Play) ? Channel::Play : Channel::Control;
  const OpenError e = gate.open_message(p.index, ch, data);
  if (e == OpenError::None) {
    if (!record.authenticated) {
      record.authenticated = true;
      if (!claim_token(p)) return false;
    }
    return true;
  }
  // Counted, never held against a joined peer: anyone on the path can send such a datagram. (A
  // connection that has not joined yet may give up its place for it when places run out.)
  ++record.unopened;
  const std::uint64_t n = e == OpenError::Replayed ? ++stats.sealed_replayed : ++stats.sealed_forged;
  if (drop_worth_logging(n))
    LOCKSTEP_LOG_WARN("dropped a sealed message from %s (%s): %s [%llu so far]", peer_address(p.link).c_str(),
                      p.name.empty() ? "not joined" : p.name.c_str(), to_string(e), static_cast<unsigned long long>(n));
  // Control messages are reliable and counted by both sides: one that did not open was lost for
  // good (ENet acknowledged the forgery in its place), so the connection cannot go on.
  if (ch == Channel::Control && e != OpenError::Replayed && record.authenticated)
    kick(p, "a control message failed authentication");
  return false;
}

std::function<bool(std::uint64_t)> ServerSession::Impl::seated_client() const {
  return [this](std::uint64_t client_id) {
    return std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.bound && s.client_id == client_id; });
  };
}

// The peer has proved it holds its token's keys: the token is now this address's. False, with the
// peer refused, when another address proved it first or the ledger is full.
bool ServerSession::Impl::claim_token(Peer& p) {
  PeerGate::Entry& e = entry(p);
  switch (gate.tokens.claim(e.token_nonce, e.ip, e.token_expire, e.client_id, unix_now(),
                             seated_client())) {
    case TokenLedger::Claim::Ok: return true;
    case TokenLedger::Claim::InUse:
      refuse(p, wire::RefuseReason::TokenInUse, kTokenUsedElsewhere);
      return false;
    case TokenLedger::Claim::Full:
      refuse(p, wire::RefuseReason::Full, "too many connect tokens in use; try again later");
      return false;
  }
  return false;
}

// The addresses a token must name one of: the --public-address list, or without it any address
// with the server's port (the server cannot know the address players reach it at: behind NAT its
// own differs; it warns at start).
bool ServerSession::Impl::names_this_server(const std::vector<TokenAddress>& servers) const {
  for (const TokenAddress& a : servers) {
    if (cfg.public_addresses.empty() ? a.port == transport->port()
                                     : std::find(cfg.public_addresses.begin(), cfg.public_addresses.end(), a) !=
                                           cfg.public_addresses.end())
      return true;
  }
  return false;
}

void ServerSession::Impl::on_join(Peer& p, const wire::JoinRequest& m, std::int64_t now, std::int64_t arrived) {
  PeerGate::Entry& e = entry(p);
  if (p.join_rtt == 0) p.join_rtt = std::max<std::int64_t>(1, arrived - p.connected_at);
  if (p.role != Role::Pending || p.closing) return drop(p, DropReason::UnexpectedMessage, " (second join)");
  JoinFacts q;
  q.protocol_version = m.protocol_version();
  q.fingerprint = m.fingerprint();
  q.join_secret = m.token() ? m.token()->str() : "";
  q.name = m.name() ? m.name()->str() : "";
  q.rejoin_secret = m.rejoin_secret() ? m.rejoin_secret()->str() : "";
  q.spectate = m.spectate();
  q.libraries = protocol::join_libraries(m);
  q.code = m.code() ? m.code()->str() : "";
  q.code_fma = m.fma();
  if (e.by_token) {  // joined with a connect token: the seat is bound to its client
    q.has_client_id = true;
    q.client_id = e.client_id;
    q.token_slot = e.token_slot;
  }
  AdmissionRules rules;
  rules.protocol_version = kProtocolVersion;
  rules.fingerprint = join_fingerprint;
  rules.libraries = cfg.libraries;
  rules.code = cfg.code;
  rules.code_fma = cfg.code_fma;
  rules.equal_builds = cfg.equal_builds;
  rules.join_secret = cfg.token;
  rules.lobby = phase == Phase::Lobby;
  rules.allow_late_join = cfg.allow_late_join;
  rules.draining = shutting_down;
  rules.spectators = count_role(Role::Spectator);
  rules.max_spectators = cfg.max_spectators;
  for (const auto& [id, other] : peers)
    if (other.role == Role::Spectator && entry(other).authenticated && !other.closing)  // one on its way out holds no seat
      rules.spectating_clients.push_back(entry(other).client_id);
  std::vector<SeatView> seats;
  for (const Slot& s : slots) seats.push_back({s.taken, vacant(s), s.secret, s.bound, s.client_id});
  const JoinDecision d = decide_join(q, rules, seats);
  if (d.kind != JoinDecision::Kind::Refuse) {  // from the connection to the seat: what a joining player waits
    stats.join_latency.add_us((now - p.connected_at) / 1000);
    if (d.kind == JoinDecision::Kind::Seat || d.kind == JoinDecision::Kind::LateJoin) ++stats.joins;
    if (d.kind == JoinDecision::Kind::Rejoin) ++stats.rejoins;
  }
  switch (d.kind) {
    case JoinDecision::Kind::Refuse: return refuse(p, d.reason, d.detail);
    case JoinDecision::Kind::Spectate: return seat_spectator(p, q.name, now);
    case JoinDecision::Kind::Seat: return seat_in_lobby(p, d.slot, q.name);
    case JoinDecision::Kind::LateJoin:
      close_old_holder(d.slot, p, "a late joiner takes its seat", now);
      return admit_running(p, d.slot, q.name, /*rejoin=*/false, now);
    case JoinDecision::Kind::Rejoin:
      // The old connection may not have timed out yet: the holder of the secret wins.
      close_old_holder(d.slot, p, "it is back", now);
      return admit_running(p, d.slot, q.name, /*rejoin=*/true, now);
  }
}

// The connection that held `slot` before p, still open or on its way out, is closed at once
// (no event follows), so that it can never touch the seat again.
void ServerSession::Impl::close_old_holder(std::size_t slot, const Peer& p, const char* why, std::int64_t now) {
  const Slot& s = slots[slot];
  if (s.peer_id == p.id) return;
  const auto old = peers.find(s.peer_id);
  if (old == peers.end()) return;
  LOCKSTEP_LOG_INFO("player %zu (%s): %s; closing its old connection", slot, s.name.c_str(), why);
  peer_disconnect_now(old->second.link);
  erase_peer(old, now);
}

void ServerSession::Impl::seat_spectator(Peer& p, const std::string& name, std::int64_t now) {
  p.role = Role::Spectator;
  p.name = name;
  send(p, Channel::Control,
       protocol::welcome(-1, cfg.input_delay, cfg.last_tick, cfg.world, roster(), "", phase != Phase::Lobby,
                         world_fingerprint, cfg.send_every));
  if (phase != Phase::Lobby) {
    feed.starts_at(p.index, executed(), now);
    send_start(p, now);
    if (relay()) serve_state(p, StateFetch::Purpose::Join, now);
    else send_snapshot(p, /*join=*/true);
  }
  LOCKSTEP_LOG_INFO("spectator %s joined from %s", name.c_str(), peer_address(p.link).c_str());
  note_peak();
}

// ", client N" for a peer that came with a connect token, for the operator's log.
std::string ServerSession::Impl::token_note(const Peer& p) const {
  return entry(p).by_token ? ", client " + std::to_string(entry(p).client_id) : "";
}

// A seat taken (or taken back) with a connect token is bound to its client; the token's user
// data goes with it.
void ServerSession::Impl::bind_seat(Slot& s, const Peer& p) {
  PeerGate::Entry& e = entry(p);
  s.up_loss.set_every(cfg.send_every);
  s.up_loss.restart();  // a new connection: the time without one is not loss
  s.bound = e.by_token;
  s.client_id = e.client_id;
  s.user_data = e.user_data;
  if (p.link) remember_link(s, p.link);
}

void ServerSession::Impl::remember_link(Slot& s, NetPeer* link) {
  s.net = peer_net(link);
  s.stream = peer_stream(link);
}

void ServerSession::Impl::seat_in_lobby(Peer& p, std::size_t slot, const std::string& name) {
  Slot& s = slots[slot];
  s.taken = true;
  s.name = name;
  s.secret = new_secret();
  bind_seat(s, p);
  s.peer_id = p.id;
  p.role = Role::Player;
  p.slot = static_cast<std::int32_t>(slot);
  p.name = name;
  send(p, Channel::Control, protocol::welcome(p.slot, cfg.input_delay, cfg.last_tick, cfg.world, roster(), s.secret,
                                              /*joining=*/false, world_fingerprint, cfg.send_every));
  broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(slot), name));
  emit(SessionEvent::Kind::PlayerJoined, executed(), p.slot, name);
  note_peak();
  const LogScope scope(p.slot);
  LOCKSTEP_LOG_INFO("player %zu (%s) joined from %s%s [%u/%u]", slot, name.c_str(), peer_address(p.link).c_str(),
                    token_note(p).c_str(), joined_players(), cfg.players);
}

// Brings a player into a running session: welcome, the tick clock, then the current state.
// The slot counts again only once the player's first hash after the snapshot matches.
void ServerSession::Impl::admit_running(Peer& p, std::size_t slot, const std::string& name, bool rejoin, std::int64_t now) {
  Slot& s = slots[slot];
  if (!rejoin) {
    s = fresh_slot();  // a new player: it joins the session once verified; the old secret is void
    s.secret = new_secret();
  }
  bind_seat(s, p);
  s.taken = true;
  s.leaving = false;
  s.name = name;
  s.peer_id = p.id;
  s.last_heard = now;
  s.inputs.settle(executed());
  p.role = Role::Player;
  p.slot = static_cast<std::int32_t>(slot);
  p.name = name;
  audit(p).verifying = true;
  audit(p).verify_tick = executed();
  feed.starts_at(p.index, executed(), now);
  ++stats.joins_running;
  send(p, Channel::Control,
       protocol::welcome(p.slot, cfg.input_delay, cfg.last_tick, cfg.world, roster(), s.secret, /*joining=*/true,
                         world_fingerprint, cfg.send_every));
  send_start(p, now);
  // Relay mode: a peer's saved state follows once it hashes to the settled value.
  if (relay()) serve_state(p, StateFetch::Purpose::Join, now);
  else send_snapshot(p, /*join=*/true);
  emit(SessionEvent::Kind::PlayerJoined, executed(), p.slot, name, "", rejoin ? 1 : 0);
  note_peak();
  const LogScope scope(p.slot);
  if (!relay())
    LOCKSTEP_LOG_INFO("player %zu (%s) %s at tick %u from %s%s: sent a %lld-byte snapshot", slot, name.c_str(),
                      rejoin ? "rejoins" : "joins late", executed(), peer_address(p.link).c_str(), token_note(p).c_str(),
                      static_cast<long long>(stats.last_snapshot_bytes));
}

// A lobby slot given up (its player left, disconnected or was dropped): free for the next join,
// and everyone is told why.
void ServerSession::Impl::free_slot(std::size_t slot) {
  const std::string why = slots[slot].leaving && !slots[slot].leave_reason.empty() ? slots[slot].leave_reason : "left";
  slots[slot] = fresh_slot();
  broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(slot), next_tick, why));
}

// A slot a late joiner may take: out of the session, and its connection gone or on its way out
// (dropped or left: ENet may take 30 s to close a dead peer's, which holds the seat no longer).
bool ServerSession::Impl::vacant(const Slot& s) const {
  if (!s.taken) return true;
  const auto holder = peers.find(s.peer_id);
  return !s.present && !s.return_pending && (holder == peers.end() || holder->second.closing);
}

void ServerSession::Impl::on_status(Peer& p, const wire::StatusRequest& m, std::size_t request_bytes) {
  if (p.role != Role::Pending || p.closing) return drop(p, DropReason::UnexpectedMessage, " (status from a joined peer)");
  static const char* const names[] = {"lobby", "running", "draining", "closing", "finished"};
  protocol::Status st;
  st.phase = names[static_cast<int>(phase)];
  st.tick = executed();
  st.players = cfg.players;
  st.joined = joined_players();
  st.active = active_players_count();
  st.spectators = count_role(Role::Spectator);
  st.desyncs = static_cast<std::uint32_t>(stats.desyncs);
  st.lateness_p99_us = static_cast<std::uint32_t>(stats.lateness.percentile_us(99));
  st.seats = seat_statuses();
  st.protocol_version = kProtocolVersion;
  st.fingerprint = join_fingerprint;
  st.last_tick = cfg.last_tick;
  const NetTraffic h = transport->traffic();
  const DoorStats door = transport->door_stats();
  st.dropped = {h.datagrams_refused,     h.datagrams_empty,  h.datagrams_oversized,
                h.datagrams_unknown,     h.datagrams_overflowed,
                door.refused() + door.closed_before_request,
                stats.total_drops(),     stats.kicked,       stats.pending_refused,
                stats.pending_evicted,   stats.handshakes_cut, stats.replies_withheld,
                stats.states_unanswered, stats.states_forged};
  // Names and figures go to a holder of the status key, sealed; to anyone only on a server with
  // no keys at all (a LAN). A reply to an unproven asker is never larger than its request (§11).
  bool keyed = false;
  if (cfg.status_key && m.key_proof()) {
    // Each proof is taken once while its time is good: a replayed one gets only the public part.
    std::array<std::uint8_t, 24> nonce{};
    const std::uint64_t now_s = unix_now();
    std::erase_if(gate.status_proofs, [&](const auto& seen) { return seen.second + 2 * kStatusProofSeconds < now_s; });
    if (gate.status_proofs.size() < PeerGate::kMaxStatusProofs &&
        check_status_proof({m.key_proof()->data(), m.key_proof()->size()}, *cfg.status_key, now_s, &nonce) &&
        gate.status_proofs.emplace(nonce, now_s).second)
      keyed = true;
  }
  // The full reply goes sealed to a key holder, in the clear only on a server with no keys; the
  // public part to anyone else, if it fits the request.
  bool full = keyed || (!tokens_required() && !cfg.status_key);
  protocol::Bytes reply;
  if (keyed) {
    reply = protocol::public_status_reply(st, seal_with_key(*cfg.status_key, protocol::status_reply(st), "lockstep status reply"));
    entry(p).authenticated = true;
  } else if (full) {
    reply = protocol::status_reply(st);
  }
  if (!keyed && (reply.empty() || reply.size() > request_bytes)) {
    reply = protocol::public_status_reply(st);
    full = false;
  }
  if (!keyed && reply.size() > request_bytes) {
    ++stats.replies_withheld;
  } else {
    ++(full ? stats.status_full : stats.status_public);
    send(p, Channel::Control, reply);
  }
  peer_disconnect_later(p.link);
  p.closing = true;
}

}  // namespace lockstep
