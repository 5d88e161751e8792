// The server's phase machine (lobby, running, draining, closing, finished) and each message in to
// the part that handles it; create() and the public API are server_session_api.cpp. The parts: server_admission.cpp (connections, tokens,
// joins, seats), server_ticks.cpp (inputs, frames, stepping), server_send.cpp (what goes out),
// server_referee.cpp (hashes, desyncs); see server_session_impl.hpp.
#include <algorithm>

#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "lockstep/websocket_door.hpp"
#include "drop_log.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {
constexpr std::int64_t kMaxStartDelayNs = 3'000'000'000;  // the start waits at most this long for far players
constexpr std::int64_t kStartRepeatNs = 20'000'000;       // Start's unreliable copies go out this often until tick 1
constexpr std::int64_t kLobbyBeatNs = 100'000'000;        // lobby heartbeats on the play channel this often
constexpr std::int64_t kFinalAckNs = 100'000'000;         // the final hashes' acknowledgement repeats this long
// What a datagram from a client that failed decoding is counted as.
constexpr DecodeDrops<DropReason> drop_reason{DropReason::TooLarge, DropReason::FieldOutOfRange, DropReason::Malformed,
                                              DropReason::Malformed};

}  // namespace

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::TooLarge: return "too large";
    case DropReason::Malformed: return "malformed";
    case DropReason::FieldOutOfRange: return "field out of range";
    case DropReason::WrongChannel: return "wrong channel";
    case DropReason::UnexpectedMessage: return "unexpected message type";
    case DropReason::NotJoined: return "play message before join";
    case DropReason::InputTooFarAhead: return "input for a tick too far ahead";
    case DropReason::HashForFutureTick: return "hash for a tick not yet executed";
    case DropReason::HashTooOld: return "hash for a tick no longer kept";
    case DropReason::FrameAckOutOfRange: return "frame ack out of range";
    case DropReason::BadInputs: return "inputs not of the simulation's size, or commands over a limit";
    case DropReason::Count: break;
  }
  return "?";
}

std::uint64_t ServerStats::total_drops() const { return total_of(drops); }

std::int64_t ServerSession::Impl::update(std::int64_t now) {
  receive_can_wait = false;
  for (NetEvent ev = transport->poll(); ev.type != NetEvent::Type::None; ev = transport->poll()) {
    switch (ev.type) {
      case NetEvent::Type::Connect: on_connect(ev.peer, now); break;
      case NetEvent::Type::Disconnect: on_disconnect(ev.peer, now); break;
      case NetEvent::Type::Receive: on_receive(ev, now); break;
      case NetEvent::Type::None: break;
    }
    if (phase == Phase::Finished) return now;
  }
  stats.handshakes_cut = transport->handshakes_cut();
  note_drops(now);
  check_peers(now);
  if (stop_requested && phase != Phase::Closing && phase != Phase::Finished)
    end_session(wire::EndReason::Stopped, "stopped by the operator", now);
  switch (phase) {
    case Phase::Lobby:
      if (joined_players() < cfg.players) return run_lobby(now);
      begin(now);
      [[fallthrough]];
    case Phase::Running: return run_ticks(now);
    case Phase::Draining: return run_draining(now);
    case Phase::Closing:
      if (peers.empty() || now >= phase_deadline) {
        transport->flush();
        phase = Phase::Finished;
        emit(SessionEvent::Kind::Ended, executed(), -1, "", "the session is over", exit);
        return now;
      }
      return now + 10'000'000;
    case Phase::Finished: return now + 1'000'000'000;
  }
  return now;
}

// A flood is logged once a window (kDropNoteNs), with what was dropped and its busiest source,
// not once a datagram.
void ServerSession::Impl::note_drops(std::int64_t now) {
  if (now - drops_noted_at < kDropNoteNs) return;
  const std::int64_t window = drops_noted_at == 0 ? 0 : now - drops_noted_at;
  drops_noted_at = now;
  const NetTraffic h = transport->traffic();
  const std::array<std::uint64_t, 5> counts{h.datagrams_refused, h.datagrams_empty, h.datagrams_oversized,
                                            h.datagrams_unknown, h.datagrams_overflowed};
  std::array<std::uint64_t, 5> d{};
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) total += d[i] = counts[i] - std::min(counts[i], drops_noted[i]);
  drops_noted = counts;
  const std::string sources = transport->take_drop_sources();
  if (total == 0 || window == 0) return;
  LOCKSTEP_LOG_WARN("%llu datagrams dropped unread in the last %lld s (failed check %llu, empty %llu, oversized %llu, "
                    "unknown connection %llu, socket buffer full %llu)%s%s",
                    static_cast<unsigned long long>(total), static_cast<long long>(window / 1'000'000'000),
                    static_cast<unsigned long long>(d[0]), static_cast<unsigned long long>(d[1]),
                    static_cast<unsigned long long>(d[2]), static_cast<unsigned long long>(d[3]),
                    static_cast<unsigned long long>(d[4]), sources.empty() ? "" : "; ", sources.c_str());
}

// Timeouts: connections that never join, peers gone silent, players whose hashes stop, probes
// that get no answer.
void ServerSession::Impl::check_peers(std::int64_t now) {
  for (auto& [id, p] : peers) {
    // A player's ENet figures, copied while its connection is open: ENet resets them before it
    // reports the disconnect, and the summary and status give them after.
    if (p.role == Role::Player && p.link) remember_link(slots[static_cast<std::size_t>(p.slot)], p.link);
    if (p.closing) continue;
    if (p.role == Role::Pending) {
      if (now - p.connected_at > cfg.join_timeout_ns) {
        LOCKSTEP_LOG_WARN("%s sent no join within %lld ms; disconnecting", peer_address(p.link).c_str(),
                          static_cast<long long>(cfg.join_timeout_ns / 1'000'000));
        peer_disconnect_later(p.link);
        p.closing = true;
      }
      continue;
    }
    // A joined peer from which nothing at all has arrived for the silence bound, not even ENet's
    // acknowledgements, is gone; in play a player is held to more: its messages must keep coming.
    const bool gone = p.link && now - std::max(p.connected_at, transport->heard_ns(p.link)) > cfg.silent_drop_ns;
    const std::int64_t play_silence = cfg.play_silence_ns > 0 ? cfg.play_silence_ns : cfg.silent_drop_ns;
    const bool mute = phase == Phase::Running && p.role == Role::Player &&
                      now - slots[static_cast<std::size_t>(p.slot)].last_heard > play_silence;
    if (gone || mute) {
      kick(p, "silent for " + std::to_string((gone ? cfg.silent_drop_ns : play_silence) / 1'000'000) + " ms");
      continue;
    }
    if (p.role == Role::Player) check_hash_silence(p, now);
  }
  if (relay()) {
    check_fetches(now);
    if (phase == Phase::Running || phase == Phase::Draining) settle_ticks(now, /*force=*/false);
    if (phase == Phase::Running) fetch_keyframe(now);
  } else {
    fit_history();
  }
  if (referee.has_pending()) settle_reports(now, /*force=*/false, /*act=*/phase != Phase::Closing && phase != Phase::Finished);
  expire_probes(now);
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
  const LogScope scope(p.slot);  // what it leads to is logged as this seat's (-1: not seated)
  gate.arrived(p.index, data.size());
  // A sealed connection's messages open before anything of them is read (§4.7), and only those
  // that open count toward its rate: anyone on the path can send datagrams in its name.
  if (gate.entry(p.index).seal) {
    if (!open_sealed(p, data, channel)) return;
    data = gate.opened();
  }
  // Rate limit (a bucket): a peer above it is flooding. Chunks of a state the server asked for
  // are excused here and refunded once read (on_state_answer).
  if (!gate.admit_message(p.index, now, cfg.message_burst, cfg.max_messages_per_second, [&] { return asked_for(p, data); }))
    return kick(p, "sent more than " + std::to_string(static_cast<long long>(std::min(cfg.max_messages_per_second, 1e15))) + " messages a second");
  protocol::DecodeError err;
  // On the play channel, a datagram that is not a Message is the client's play message (§6.6).
  if (channel == static_cast<std::uint8_t>(Channel::Play) && !protocol::is_message(data)) {
    thread_local protocol::ClientPlay play;
    err = protocol::decode_client_play(data, input_size, play);
    if (err == protocol::DecodeError::None) return on_client_play(p, play, now, arrived);
    return drop(p, drop_reason(err));
  }
  const wire::Message* m = protocol::decode(data, &err, protocol::kMaxDetailMessageBytes);
  if (!m && !protocol::is_message(data)) {  // a play message on the control channel is on the wrong one
    thread_local protocol::ClientPlay play;
    if (protocol::decode_client_play(data, input_size, play) == protocol::DecodeError::None)
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
      if (tokens_required() && !gate.entry(p.index).by_token)
        return refuse(p, wire::RefuseReason::TokenRequired, "this server admits only players with a connect token");
      return on_join(p, *m->body_as_JoinRequest(), now, arrived);
    case wire::Body::ConnectRequest: return on_connect_request(p, *m->body_as_ConnectRequest());
    case wire::Body::StatusRequest: return on_status(p, *m->body_as_StatusRequest(), data.size());
    case wire::Body::DesyncDetail: return on_detail(p, *m->body_as_DesyncDetail(), data.size(), now);
    case wire::Body::Snapshot: return on_state_answer(p, *m->body_as_Snapshot(), now);
    case wire::Body::DesyncLocated: return on_located(p, *m->body_as_DesyncLocated(), now);
    case wire::Body::GameResult: return on_game_result(p, *m->body_as_GameResult());
    case wire::Body::Leave: return on_leave(p, *m->body_as_Leave());
    default: return drop(p, DropReason::UnexpectedMessage);
  }
}

// A Leave. A player in a running session leaves at the next tick (server_ticks.cpp) and stays
// connected until its end message; in the lobby its slot is free at once and its connection is
// closed. A spectator's connection is closed. Before a join there is nothing to leave.
void ServerSession::Impl::on_leave(Peer& p, const wire::Leave& m) {
  if (p.role == Role::Pending) return drop(p, DropReason::UnexpectedMessage);
  if (p.role == Role::Spectator) {
    p.closing = true;
    return peer_disconnect_later(p.link);
  }
  Slot& s = slots[static_cast<std::size_t>(p.slot)];
  const auto* why = m.reason();
  s.leaving = true;
  s.leave_reason = why && protocol::valid_reason(why->string_view()) ? "left (" + why->str() + ")" : "left";
  if (phase != Phase::Lobby) return;
  const LogScope scope(p.slot);
  LOCKSTEP_LOG_INFO("player %d (%s) %s", p.slot, p.name.c_str(), s.leave_reason.c_str());
  free_slot(static_cast<std::size_t>(p.slot));
  p.role = Role::Pending;  // holds no slot any more; its close finds nothing to free
  p.closing = true;
  peer_disconnect_later(p.link);
}

void ServerSession::Impl::drop(Peer& p, DropReason r, const char* detail) {
  const auto n = ++stats.drops[static_cast<std::size_t>(r)];
  // Inputs too far ahead can come from an honest client whose estimate of a slowed session
  // clock is early; they are dropped and counted but do not count toward a kick.
  if (r != DropReason::InputTooFarAhead && gate.count_bad(p.index) > cfg.max_bad_messages && !p.closing)
    kick(p, "sent too many malformed or unexpected messages");
  // A connection through the WebSocket door that has not joined and sends what no client would
  // is closed at once: on a stream only the peer itself writes, so it is not a client, and its
  // place among the pending connections goes to the next. (A datagram could be anyone's.)
  const bool undecodable = r == DropReason::TooLarge || r == DropReason::Malformed || r == DropReason::FieldOutOfRange ||
                           r == DropReason::WrongChannel;
  if (undecodable && p.role == Role::Pending && peer_stream(p.link) && !p.closing)
    kick(p, std::string("sent a malformed message before joining (") + to_string(r) + ")");
  if (drop_worth_logging(n))
    LOCKSTEP_LOG_WARN("dropped a message from %s (%s): %s%s [%llu so far]", peer_address(p.link).c_str(),
                      p.name.empty() ? "not joined" : p.name.c_str(), to_string(r), detail,
                      static_cast<unsigned long long>(n));
}

std::int64_t ServerSession::Impl::run_lobby(std::int64_t now) {
  // A heartbeat on the play channel while the lobby waits: ENet sends no pings while a reliable
  // message is being resent, and on a lossy path its resends back off for seconds.
  if (now - last_lobby_beat >= kLobbyBeatNs) {
    last_lobby_beat = now;
    for (auto& [id, p] : peers)
      if (p.role != Role::Pending && !p.closing) send_play(p, 1, 0);
    transport->flush();
  }
  return now + kLobbyBeatNs;
}

std::int64_t ServerSession::Impl::run_ticks(std::int64_t now) {
  int ran = 0;
  while (phase == Phase::Running && ran < kMaxTicksPerUpdate) {
    const std::int64_t deadline = pacer.next_deadline();
    if (now < deadline) break;
    if (!inputs_complete(next_tick, now) && now < deadline + cfg.input_grace_ns) break;
    assemble_and_step(now);
    ++ran;
    if (cfg.last_tick != 0 && executed() >= cfg.last_tick) {
      phase = Phase::Draining;
      phase_deadline = now + cfg.drain_timeout_ns;
    }
  }
  // Play messages go when a tick that is a multiple of send_every was executed, and at the end.
  const Tick n = cfg.send_every;
  if (ran > 0 && (executed() / n != (executed() - static_cast<Tick>(ran)) / n || phase != Phase::Running)) {
    send_frames(now);
    transport->flush();  // out now, not at the next poll
  }
  if (phase == Phase::Running && joined_players() > 0 && active_players_count() == 0 && ran > 0)
    end_session(wire::EndReason::Empty, "every player left", now);
  if (phase != Phase::Running) {
    last_resend = now;
    return now;
  }
  const std::int64_t deadline = pacer.next_deadline();
  if (ran == kMaxTicksPerUpdate) return now;
  if (now >= deadline) return deadline + cfg.input_grace_ns;  // waiting for late inputs: read them as they come
  // Under a flood the round's reads are spent with datagrams still waiting: the socket is
  // watched, and read again at once, so players' datagrams are not lost behind the flood's.
  receive_can_wait = quiet() && !transport->backlogged();
  if (next_tick == 1) return std::min(deadline, repeat_start(now));
  return deadline;
}

std::int64_t ServerSession::Impl::run_draining(std::int64_t now) {
  // Once every final hash is in, its acknowledgement goes out every tick for kFinalAckNs before
  // the end message: a client that has it knows the session is complete even if the end message
  // never reaches it (a lossy path, a server gone after its close timeout).
  if (all_hashes_in() && final_acks_from == 0) final_acks_from = now;
  if ((final_acks_from != 0 && now - final_acks_from >= kFinalAckNs) || now >= phase_deadline) {
    if (!all_hashes_in()) LOCKSTEP_LOG_WARN("some clients did not report their final hashes in time");
    send_frames(now);
    end_session(wire::EndReason::Complete, "reached the last tick " + std::to_string(cfg.last_tick), now);
    return now + 10'000'000;
  }
  if (now - last_resend >= kTickNs) {
    send_frames(now);
    transport->flush();
    last_resend = now;
  }
  return now + kTickNs / 2;
}

void ServerSession::Impl::begin(std::int64_t now) {
  phase = Phase::Running;
  // Start must reach the farthest player, and its first inputs come back, before the first tick
  // that takes inputs: the delay grows with the longest join round trip (plus a quarter and
  // 50 ms for jitter), up to kMaxStartDelayNs.
  std::int64_t longest = 0;
  for (const auto& [id, p] : peers)
    if (p.role == Role::Player) longest = std::max({longest, p.join_rtt, rtt_ns(p)});
  const std::int64_t start_delay =
      std::clamp(longest + longest / 4 + 50'000'000 - std::int64_t{cfg.input_delay} * kTickNs, cfg.start_delay_ns,
                 std::max(cfg.start_delay_ns, kMaxStartDelayNs));
  std::int64_t tick0 = now + start_delay;
  if (cfg.tick_phase_ns >= 0) tick0 += ((cfg.tick_phase_ns - tick0) % kTickNs + kTickNs) % kTickNs;
  pacer.start(tick0 + kTickNs);  // the first deadline is tick 1's
  first_input_tick = std::max<Tick>(1, cfg.input_delay);
  for (Slot& s : slots) {
    s.present = s.taken;
    s.last_heard = tick0;
  }
  for (auto& [id, p] : peers)
    if (p.role != Role::Pending) send_start(p, now);
  LOCKSTEP_LOG_INFO("session starting in %lld ms: %u players, input delay %u, %s",
                    static_cast<long long>((tick0 - now) / 1'000'000), cfg.players, cfg.input_delay,
                    cfg.last_tick ? ("until tick " + std::to_string(cfg.last_tick)).c_str() : "until stopped");
}

void ServerSession::Impl::end_session(wire::EndReason reason, const std::string& detail, std::int64_t now) {
  if (phase == Phase::Closing || phase == Phase::Finished) return;
  if (relay()) settle_ticks(now, /*force=*/true);  // every executed tick decided, with the votes that came
  close_reports(now);
  incomplete = reason == wire::EndReason::Stopped && phase != Phase::Lobby;
  settle_result();
  LOCKSTEP_LOG_INFO("session over at tick %u: %s", executed(), detail.c_str());
  broadcast(Channel::Control, protocol::session_end(reason, executed(), detail));
  for (auto& [id, p] : peers) {
    peer_disconnect_later(p.link);
    p.closing = true;  // told the end: no timeouts or kicks from here, later messages ignored
  }
  transport->flush();
  phase = Phase::Closing;
  phase_deadline = now + cfg.close_timeout_ns;
  if (reason == wire::EndReason::Desync || stats.desyncs > 0 || stats.states_forged > 0) exit = 3;
  for (const auto& [id, p] : peers)
    if (p.role == Role::Player && audit(p).hashes.ack() < executed())
      LOCKSTEP_LOG_WARN("player %d (%s): hashes checked only up to tick %u of %u: not counted as in sync", p.slot,
                        p.name.c_str(), audit(p).hashes.ack(), executed());
}

// Until tick 1, Start also goes out unreliably every kStartRepeatNs: a reliable Start waits
// behind any lost reliable message before it, and a client's clock (and with it when its first
// inputs are sampled) takes the earliest-arriving copy. Returns when to send again.
std::int64_t ServerSession::Impl::repeat_start(std::int64_t now) {
  if (now - last_start_send >= kStartRepeatNs) {
    last_start_send = now;
    for (auto& [id, p] : peers)
      if (p.role != Role::Pending && !p.closing) send_start(p, now, Channel::Play);
    transport->flush();
  }
  return last_start_send + kStartRepeatNs;
}

bool ServerSession::Impl::all_hashes_in() const {
  for (const auto& [id, p] : peers)
    // Players owe their final hashes; a spectator is waited for only if it reports any.
    if (p.role != Role::Pending && !p.closing && (p.role == Role::Player || audit(p).hashes.ack() > 0) &&
        (audit(p).hashes.ack() < cfg.last_tick || examined(p)))
      return false;
  return true;
}

// Steady play: nobody joining, being probed or verified, and ENet has nothing reliable to
// deliver. Then every message can wait for the next tick's deadline.
bool ServerSession::Impl::quiet() const {
  for (const auto& [id, p] : peers)
    if (p.role == Role::Pending || p.closing || examined(p) || audit(p).verifying) return false;
  return relay_mode.fetches.empty() && !transport->reliable_in_flight();
}

std::pair<Tick, std::uint64_t> ServerSession::Impl::latest_settled() const {
  if (simulation) return {executed(), simulation->hash_at(executed())};
  for (Tick t = relay_mode.consensus.decided_through(); t > 0 && relay_mode.consensus.decided_through() - t < TickConsensus::kHistory; --t) {
    std::uint64_t h = 0;
    if (relay_mode.consensus.settled_hash(t, &h)) return {t, h};
  }
  return {0, 0};
}

std::uint32_t ServerSession::Impl::joined_players() const {
  std::uint32_t n = 0;
  for (const Slot& s : slots) n += s.taken ? 1u : 0u;
  return n;
}

std::uint32_t ServerSession::Impl::active_players_count() const {
  std::uint32_t n = 0;
  for (const Slot& s : slots) n += (s.taken && s.present && !s.leaving) ? 1u : 0u;
  return n;
}

std::uint32_t ServerSession::Impl::count_role(Role role) const {
  std::uint32_t n = 0;
  for (const auto& [id, p] : peers) n += p.role == role ? 1u : 0u;
  return n;
}

}  // namespace lockstep
