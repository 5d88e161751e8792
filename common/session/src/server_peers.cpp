// The server's peers in and out: connections, joins and refusals, kicks and drops, status
// queries, and the messages that bring a peer into a session (welcome, start, snapshot).
#include <algorithm>
#include <random>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {

// What a datagram that failed decoding is counted as.
DropReason drop_reason(protocol::DecodeError e) {
  return e == protocol::DecodeError::TooLarge         ? DropReason::TooLarge
         : e == protocol::DecodeError::FieldOutOfRange ? DropReason::FieldOutOfRange
                                                       : DropReason::Malformed;
}

// Rejoin secrets come from the OS's random source: they guard a seat, not the simulation.
std::string new_secret() {
  std::random_device rd;
  char buf[33];
  for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(rd()));
  return std::string(buf, 32);
}

}  // namespace

void ServerSession::Impl::on_connect(EnetPeer* enet, std::int64_t now) {
  if (!admit_pending(peer_ip(enet), now)) {
    ++stats.pending_refused;
    if (stats.pending_refused <= kLogFirstDrops || stats.pending_refused % 1000 == 0)
      LOCKSTEP_LOG_WARN("refused a connection from %s: %u connections (at most %u from one address) are already waiting to join",
                        peer_address(enet).c_str(), count_role(Role::Pending), cfg.max_pending_per_address);
    peer_disconnect_now(enet);
    return;
  }
  const std::uint32_t id = next_peer_id++;
  peer_set_tag(enet, id);
  peer_set_backstop_timeout(enet, backstop_ms(cfg.silent_drop_ns));
  Peer p;
  p.enet = enet;
  p.id = id;
  p.connected_at = now;
  p.tokens = cfg.message_burst;
  p.tokens_at = now;
  p.ip = peer_ip(enet);
  auto& added = peers.emplace(id, std::move(p)).first->second;
  if (peer_channel_count(enet) < kChannelCount)
    refuse(added, wire::RefuseReason::TooFewChannels,
           "the connection opened " + std::to_string(peer_channel_count(enet)) + " ENet channel(s); the protocol uses " +
               std::to_string(kChannelCount) + " (0 control, 1 play)");
}

void ServerSession::Impl::on_disconnect(EnetPeer* enet) {
  const auto it = peers.find(static_cast<std::uint32_t>(peer_tag(enet)));
  if (it == peers.end()) return;
  Peer& p = it->second;
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];  // s.net keeps the figures last measured (check_peers)
    if (!s.leaving) {
      s.leaving = true;
      s.leave_reason = "disconnected";
    }
    LOCKSTEP_LOG_INFO("player %d (%s) %s", p.slot, p.name.c_str(), s.leave_reason.c_str());
    if (phase == Phase::Lobby) free_slot(static_cast<std::size_t>(p.slot));
  } else if (p.role == Role::Spectator) {
    LOCKSTEP_LOG_INFO("spectator %s left", p.name.c_str());
  }
  peers.erase(it);
}

void ServerSession::Impl::on_receive(const NetEvent& ev, std::int64_t now) {
  // Input slack counts from when the datagram reached the socket, not from when it was read.
  const std::int64_t arrived = ev.arrived_ns > 0 && ev.arrived_ns <= now ? ev.arrived_ns : now;
  const auto it = peers.find(static_cast<std::uint32_t>(peer_tag(ev.peer)));
  if (it != peers.end()) receive(it->second, ev.data, ev.channel, now, arrived);
}

void ServerSession::Impl::receive(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel, std::int64_t now,
                                  std::int64_t arrived) {
  if (p.closing) return;
  if (!p.authenticated) p.bytes_in += data.size();
  // A sealed connection's messages open before anything of them is read (§4.7), and only those
  // that open count toward its rate: anyone on the path can send datagrams in its name.
  if (p.seal) {
    if (!open_sealed(p, data, channel)) return;
    data = opened_scratch;
  }
  // Token bucket: a sustained rate and a burst; a peer above it is flooding.
  p.tokens = std::min(cfg.message_burst, p.tokens + static_cast<double>(now - p.tokens_at) * 1e-9 * cfg.max_messages_per_second);
  p.tokens_at = now;
  if ((p.tokens -= 1.0) < 0.0)
    return kick(p, "sent more than " + std::to_string(static_cast<long long>(std::min(cfg.max_messages_per_second, 1e15))) + " messages a second");
  p.last_received = now;
  protocol::DecodeError err;
  // On the play channel, a datagram that is not a Message is the client's play message (§6.6).
  if (channel == static_cast<std::uint8_t>(Channel::Play) && !protocol::is_message(data)) {
    thread_local protocol::ClientPlay play;
    err = protocol::decode_client_play(data, sim->input_size(), play);
    if (err == protocol::DecodeError::None) return on_client_play(p, play, now, arrived);
    return drop(p, drop_reason(err));
  }
  const wire::Message* m = protocol::decode(data, &err, protocol::kMaxDetailMessageBytes);
  if (!m && !protocol::is_message(data)) {  // a play message on the control channel is on the wrong one
    thread_local protocol::ClientPlay play;
    if (protocol::decode_client_play(data, sim->input_size(), play) == protocol::DecodeError::None)
      return drop(p, DropReason::WrongChannel);
  }
  if (!m) {
    const DropReason r = drop_reason(err);
    std::size_t limit = 0;
    if (r == DropReason::FieldOutOfRange && p.role == Role::Pending) {
      const std::string field = protocol::overlong_join_field(data, &limit);
      if (!field.empty()) {
        ++stats.drops[static_cast<std::size_t>(r)];
        return refuse(p, wire::RefuseReason::BadRequest,
                      "the join's " + field + " is longer than " + std::to_string(limit) + " bytes");
      }
    }
    return drop(p, r);
  }
  // Messages from a client travel on the control channel; its play messages are not Messages.
  if (channel != static_cast<std::uint8_t>(Channel::Control)) return drop(p, DropReason::WrongChannel);
  switch (m->body_type()) {
    case wire::Body::JoinRequest:
      if (tokens_required() && !p.seal)
        return refuse(p, wire::RefuseReason::TokenRequired, "this server admits only players with a connect token");
      return on_join(p, *m->body_as_JoinRequest(), now, arrived);
    case wire::Body::ConnectRequest: return on_connect_request(p, *m->body_as_ConnectRequest());
    case wire::Body::StatusRequest: return on_status(p, *m->body_as_StatusRequest(), data.size());
    case wire::Body::DesyncDetail: return on_detail(p, *m->body_as_DesyncDetail(), data.size(), now);
    case wire::Body::Leave:
      if (p.role == Role::Player) {
        Slot& s = slots[static_cast<std::size_t>(p.slot)];
        const auto* why = m->body_as_Leave()->reason();
        s.leaving = true;
        s.leave_reason = why && protocol::valid_name(why->string_view()) ? "left (" + why->str() + ")" : "left";
      }
      return;
    default: return drop(p, DropReason::UnexpectedMessage);
  }
}

void ServerSession::Impl::drop(Peer& p, DropReason r, const char* detail) {
  const auto n = ++stats.drops[static_cast<std::size_t>(r)];
  // Inputs too far ahead can come from an honest client whose estimate of a slowed session
  // clock is early; they are dropped and counted but do not count toward a kick.
  if (r != DropReason::InputTooFarAhead && ++p.bad > cfg.max_bad_messages && !p.closing)
    kick(p, "sent too many malformed or unexpected messages");
  if (n <= kLogFirstDrops || n % 1000 == 0)
    LOCKSTEP_LOG_WARN("dropped a message from %s (%s): %s%s [%llu so far]", peer_address(p.enet).c_str(),
                      p.name.empty() ? "not joined" : p.name.c_str(), to_string(r), detail,
                      static_cast<unsigned long long>(n));
}

// Drops a peer that broke a limit; everyone else plays on.
void ServerSession::Impl::kick(Peer& p, const std::string& reason) {
  if (p.closing) return;
  ++stats.kicked;
  LOCKSTEP_LOG_WARN("dropping %s (%s): %s", peer_address(p.enet).c_str(), p.name.empty() ? "not joined" : p.name.c_str(),
                    reason.c_str());
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];
    s.leaving = true;
    s.leave_reason = "dropped: " + reason;
    if (p.enet) s.net = peer_net(p.enet);
  }
  send(p, Channel::Control, protocol::kick(reason));  // reliable, so it arrives before the disconnect
  p.closing = true;
  peer_disconnect_later(p.enet);
}

void ServerSession::Impl::refuse(Peer& p, wire::RefuseReason reason, const std::string& detail) {
  ++stats.refused;
  ++stats.refusals[std::min<std::size_t>(static_cast<std::size_t>(reason), stats.refusals.size() - 1)];
  LOCKSTEP_LOG_INFO("refused %s: %s", peer_address(p.enet).c_str(), detail.c_str());
  protocol::Bytes msg = protocol::refuse(reason, detail);
  // Before authentication a refusal is no larger than what the peer sent: its detail is cut.
  if (tokens_required() && !p.authenticated && p.enet) {
    const std::size_t budget = p.bytes_in - std::min(p.bytes_in, p.bytes_out) - (p.seal ? PacketSeal::overhead(Channel::Control) : 0);
    for (std::string d = detail; msg.size() > budget && !d.empty();) {
      d.resize(d.size() > 16 ? d.size() - 16 : 0);
      msg = protocol::refuse(reason, d);
    }
  }
  send(p, Channel::Control, msg);
  peer_disconnect_later(p.enet);
  p.role = Role::Pending;
  p.closing = true;
}

void ServerSession::Impl::on_join(Peer& p, const wire::JoinRequest& m, std::int64_t now, std::int64_t arrived) {
  if (p.join_rtt == 0) p.join_rtt = std::max<std::int64_t>(1, arrived - p.connected_at);
  if (p.role != Role::Pending || p.closing) return drop(p, DropReason::UnexpectedMessage, " (second join)");
  JoinFacts q;
  q.protocol_version = m.protocol_version();
  q.fingerprint = m.fingerprint();
  q.token = m.token() ? m.token()->str() : "";
  q.name = m.name() ? m.name()->str() : "";
  q.rejoin_secret = m.rejoin_secret() ? m.rejoin_secret()->str() : "";
  q.spectate = m.spectate();
  if (p.seal) {  // joined with a connect token: the seat is bound to its client
    q.has_client_id = true;
    q.client_id = p.client_id;
    q.token_slot = p.token_slot;
  }
  AdmissionRules rules;
  rules.protocol_version = kProtocolVersion;
  rules.fingerprint = module_fingerprint;
  rules.token = cfg.token;
  rules.lobby = phase == Phase::Lobby;
  rules.allow_late_join = cfg.allow_late_join;
  rules.spectators = count_role(Role::Spectator);
  rules.max_spectators = cfg.max_spectators;
  std::vector<SeatView> seats;
  for (const Slot& s : slots) seats.push_back({s.taken, vacant(s), s.secret, s.bound, s.client_id});
  const JoinDecision d = decide_join(q, rules, seats);
  switch (d.kind) {
    case JoinDecision::Kind::Refuse: return refuse(p, d.reason, d.detail);
    case JoinDecision::Kind::Spectate: return seat_spectator(p, q.name, now);
    case JoinDecision::Kind::Seat: return seat_in_lobby(p, d.slot, q.name);
    case JoinDecision::Kind::LateJoin: return admit_running(p, d.slot, q.name, /*rejoin=*/false, now);
    case JoinDecision::Kind::Rejoin: {
      // The old connection may not have timed out yet: the holder of the secret wins.
      const Slot& s = slots[d.slot];
      if (s.peer_id != p.id) {
        if (const auto old = peers.find(s.peer_id); old != peers.end()) {
          LOCKSTEP_LOG_INFO("player %zu (%s) is back; closing its old connection", d.slot, s.name.c_str());
          peer_disconnect_now(old->second.enet);
          peers.erase(old);
        }
      }
      return admit_running(p, d.slot, q.name, /*rejoin=*/true, now);
    }
  }
}

void ServerSession::Impl::seat_spectator(Peer& p, const std::string& name, std::int64_t now) {
  p.role = Role::Spectator;
  p.name = name;
  send(p, Channel::Control,
       protocol::welcome(-1, cfg.input_delay, cfg.last_tick, cfg.world, roster(), "", phase != Phase::Lobby,
                         sim->fingerprint(), cfg.send_every));
  if (phase != Phase::Lobby) {
    p.frame_ack = executed();
    p.hashes.reset_to(executed());
    send_start(p, now);
    send_snapshot(p, /*join=*/true);
  }
  LOCKSTEP_LOG_INFO("spectator %s joined from %s", name.c_str(), peer_address(p.enet).c_str());
  note_peak();
}

// ", client N" for a peer that came with a connect token, for the operator's log.
std::string ServerSession::Impl::token_note(const Peer& p) {
  return p.seal ? ", client " + std::to_string(p.client_id) : "";
}

// A seat taken (or taken back) with a connect token is bound to its client; the token's user
// data goes with it.
void ServerSession::Impl::bind_seat(Slot& s, const Peer& p) {
  s.bound = p.seal != nullptr;
  s.client_id = p.client_id;
  s.user_data = p.user_data;
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
                                              /*joining=*/false, sim->fingerprint(), cfg.send_every));
  broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(slot), name));
  note_peak();
  LOCKSTEP_LOG_INFO("player %zu (%s) joined from %s%s [%u/%u]", slot, name.c_str(), peer_address(p.enet).c_str(),
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
  p.verifying = true;
  p.verify_tick = executed();
  p.frame_ack = executed();
  p.hashes.reset_to(executed());
  ++stats.joins_running;
  send(p, Channel::Control,
       protocol::welcome(p.slot, cfg.input_delay, cfg.last_tick, cfg.world, roster(), s.secret, /*joining=*/true,
                         sim->fingerprint(), cfg.send_every));
  send_start(p, now);
  send_snapshot(p, /*join=*/true);
  note_peak();
  LOCKSTEP_LOG_INFO("player %zu (%s) %s at tick %u from %s%s: sent a %lld-byte snapshot", slot, name.c_str(),
                    rejoin ? "rejoins" : "joins late", executed(), peer_address(p.enet).c_str(), token_note(p).c_str(),
                    static_cast<long long>(stats.last_snapshot_bytes));
}

void ServerSession::Impl::free_slot(std::size_t slot) {
  slots[slot] = fresh_slot();
  broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(slot), next_tick, "left"));
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
  st.fingerprint = module_fingerprint;
  st.last_tick = cfg.last_tick;
  // Names and figures go to a holder of the status key, sealed; to anyone only on a server with
  // no keys at all (a LAN). A reply to an unproven asker is never larger than its request (§11).
  bool keyed = false;
  if (cfg.status_key && m.key_proof()) {
    // Each proof is taken once while its time is good: a replayed one gets only the public part.
    std::array<std::uint8_t, 24> nonce{};
    const std::uint64_t now_s = unix_now();
    std::erase_if(status_proofs, [&](const auto& seen) { return seen.second + 2 * kStatusProofSeconds < now_s; });
    if (status_proofs.size() < kMaxStatusProofs &&
        check_status_proof({m.key_proof()->data(), m.key_proof()->size()}, *cfg.status_key, now_s, &nonce) &&
        status_proofs.emplace(nonce, now_s).second)
      keyed = true;
  }
  // The full reply goes sealed to a key holder, in the clear only on a server with no keys; the
  // public part to anyone else, if it fits the request.
  bool full = keyed || (!tokens_required() && !cfg.status_key);
  protocol::Bytes reply;
  if (keyed) {
    reply = protocol::public_status_reply(st, seal_with_key(*cfg.status_key, protocol::status_reply(st), "lockstep status reply"));
    p.authenticated = true;
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
  peer_disconnect_later(p.enet);
  p.closing = true;
}

void ServerSession::Impl::send_snapshot(Peer& p, bool join) {
  std::vector<std::uint8_t> state;
  sim->serialize(state);
  for (const auto& chunk : protocol::snapshot(executed(), p.epoch, sim->hash(), state, join)) send(p, Channel::Control, chunk);
  p.base_from = executed() + 1;
  stats.last_snapshot_bytes = static_cast<std::int64_t>(state.size());
  host->flush();
}

void ServerSession::Impl::send_start(Peer& p, std::int64_t now, Channel channel) {
  // Tell the time to tick 0's deadline; a peer joining later gets the same origin.
  const std::int64_t in = std::max<std::int64_t>(0, deadline_of(0) - now);
  send(p, channel, protocol::start(static_cast<std::uint32_t>(std::min<std::int64_t>(in / 1000, 10'000'000))));
}

void ServerSession::Impl::broadcast(Channel ch, const protocol::Bytes& bytes) {
  for (auto& [id, p] : peers)
    if (p.role != Role::Pending) send(p, ch, bytes);
}

std::vector<protocol::Seat> ServerSession::Impl::roster() const {
  std::vector<protocol::Seat> r;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].taken) r.push_back({static_cast<std::uint32_t>(i), slots[i].name});
  return r;
}

// A slot a late joiner may take: nobody holds it and it is out of the session.
bool ServerSession::Impl::vacant(const Slot& s) const {
  return !s.taken || (!s.present && !s.return_pending && peers.count(s.peer_id) == 0);
}

// ENet's figures of a player's connection: live while it is connected, as last measured after.
PeerNet ServerSession::Impl::net_of(const Slot& s) const {
  const auto it = s.taken ? peers.find(s.peer_id) : peers.end();
  return it != peers.end() && it->second.enet ? peer_net(it->second.enet) : s.net;
}

protocol::SeatStatus ServerSession::Impl::seat_status(std::size_t i) const {
  const Slot& s = slots[i];
  const PeerNet net = net_of(s);
  protocol::SeatStatus st;
  st.slot = static_cast<std::uint32_t>(i);
  st.name = s.name;
  st.rtt_us = net.rtt_us;
  st.jitter_us = net.rtt_var_us;
  st.loss_ppm = net.loss_ppm;
  st.lead_us = s.lead_us;
  st.hashes_checked = s.hashes_checked;
  st.fills_late = static_cast<std::uint32_t>(s.inputs.fills_late());
  st.fills_lost = static_cast<std::uint32_t>(s.inputs.fills_lost());
  st.fills_silent = static_cast<std::uint32_t>(s.inputs.fills_silent());
  st.latency_p50_us = static_cast<std::uint32_t>(s.inputs.latency().percentile_us(50));
  st.latency_p99_us = static_cast<std::uint32_t>(s.inputs.latency().percentile_us(99));
  return st;
}

std::vector<protocol::SeatStatus> ServerSession::Impl::seat_statuses() const {
  std::vector<protocol::SeatStatus> r;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].taken) r.push_back(seat_status(i));
  return r;
}

}  // namespace lockstep
