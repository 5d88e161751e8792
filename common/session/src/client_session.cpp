// The client's connection and phase machine: connecting (with retries), joining, waiting in
// the lobby, playing (client_play.cpp), leaving, and the ways a session ends.
#include <algorithm>

#include "client_session_impl.hpp"
#include "drop_log.hpp"
// The web build (web/) has no libsodium and no ENet: its only transport is the WebSocket door's
// stream, which TLS protects in place of sealed messages (docs/PROTOCOL.md §17), so it leaves the
// sealing out.
#if !LOCKSTEP_WEB
#include "lockstep/datagram_check.hpp"
#endif
#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/session_result.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {
// What a datagram from the server that failed decoding is counted as: on the play channel a
// field out of range is a batch of frames that contradicts itself.
constexpr DecodeDrops<ClientDrop> kPlayDrops{ClientDrop::TooLarge, ClientDrop::InconsistentFrames, ClientDrop::UnknownBase,
                                             ClientDrop::Malformed};
constexpr DecodeDrops<ClientDrop> kControlDrops{ClientDrop::TooLarge, ClientDrop::FieldOutOfRange, ClientDrop::Malformed,
                                                ClientDrop::Malformed};
}  // namespace

const char* to_string(ClientDrop r) {
  switch (r) {
    case ClientDrop::TooLarge: return "too large";
    case ClientDrop::Malformed: return "malformed";
    case ClientDrop::FieldOutOfRange: return "field out of range";
    case ClientDrop::UnexpectedMessage: return "unexpected message";
    case ClientDrop::InconsistentFrames: return "inconsistent frames";
    case ClientDrop::ProbeOutOfRange: return "desync probe out of range";
    case ClientDrop::SnapshotOutOfPlace: return "snapshot chunk out of place";
    case ClientDrop::SnapshotInvalid: return "invalid snapshot";
    case ClientDrop::UnknownBase: return "frames against a base not held";
    case ClientDrop::Forged: return "failed authentication";
    case ClientDrop::Replayed: return "replayed";
    case ClientDrop::Count: break;
  }
  return "?";
}

std::uint64_t ClientStats::total_drops() const { return total_of(drops); }

void ClientSession::Impl::drop(ClientDrop reason, const std::string& detail) {
  const auto n = ++stats.drops[static_cast<std::size_t>(reason)];
  if (drop_worth_logging(n))
    LOCKSTEP_LOG_WARN("dropped a message from the server (%s): %s [%llu so far]", to_string(reason), detail.c_str(),
                      static_cast<unsigned long long>(n));
}

void ClientSession::Impl::send(Channel channel, const protocol::Bytes& bytes) {
  if (!seal) return transport->send(server, channel, bytes);
#if !LOCKSTEP_WEB
  seal->seal(channel, bytes, send_scratch);
  transport->send(server, channel, send_scratch);
#endif
}

void ClientSession::Impl::lose(const std::string& why) {
  connection_lost = true;
  end(4, why);
}

void ClientSession::Impl::end(int code, const std::string& why) {
  if (phase == Phase::Ended) return;
  const Phase phase_before = phase;
  phase = Phase::Ended;
  exit = code;
  message = why;
  emit({SessionEvent::Kind::Ended, executed, slot, "", why, code});
  if (server) {
    // A failure of this client's own (exit 1: its game's callback, its module): the other players
    // hear why this player leaves instead of a bare disconnect. The Leave goes ahead of a graceful
    // disconnect (ENet drops what a peer received but not yet handed out when a DISCONNECT comes
    // with it); the seat leaves at the server's next tick either way.
    if (code == 1 && (phase_before == Phase::Joined || phase_before == Phase::Running)) {
      std::string reason = why.substr(0, protocol::kMaxReasonBytes);
      for (char& c : reason)
        if (c < 0x20 || c > 0x7e) c = ' ';  // a reason is printable ASCII (an exception's newlines)
      send(Channel::Control, protocol::leave(reason));
      peer_disconnect_later(server);
      transport->flush();
      server = nullptr;
      return;
    }
    peer_disconnect_now(server);
    transport->flush();
    server = nullptr;
  }
}

std::int64_t ClientSession::Impl::update(std::int64_t now) {
  if (started_at < 0) {
    started_at = attempt_at = server_since = now;
    last_heard = now;
    stats.connect_attempts = 1;
  }
  for (NetEvent ev = transport->poll(); ev.type != NetEvent::Type::None; ev = transport->poll()) {
    on_event(ev, now);
    if (phase == Phase::Ended) return now;
  }
  // A client that has fallen behind catches up a few frames per update, so the socket is
  // serviced in between and ENet never sees a silent peer.
  bool more_frames = false;
  if (cfg.execute_on_arrival) {
    int ran = 0;
    while (ran < kMaxFramesPerUpdate && execute_next(now)) ++ran;
    more_frames = ran == kMaxFramesPerUpdate && executed < intake.received();
  }
  if (end_after_frames) {
    if (finish_after_end(now)) return now;
    return executed < intake.received() ? now : now + 10'000'000;
  }
  if (phase == Phase::Running) sample(now);
  if (trickle && server && trickle->sent < trickle->state.size() && now - trickle->sent_at >= 2'000'000'000) {
    // Test hook (inject_trickled_states): one byte of the state every 2 s.
    send(Channel::Control, protocol::snapshot_chunk(trickle->tick, epoch, trickle->hash,
                                                    static_cast<std::uint32_t>(trickle->state.size()), trickle->sent,
                                                    {trickle->state.data() + trickle->sent, 1}, false, trickle->request));
    transport->flush();
    ++trickle->sent;
    trickle->sent_at = now;
  }
  // Waiting for the session to start: a heartbeat, as the server sends one (ENet's own pings
  // stop while a reliable message is being resent).
  if (phase == Phase::Joined && server && now - last_sent >= kLobbyBeatNs) {
    send_tick(now);
    transport->flush();
    last_sent = now;
  }
  check_connection(now);
  if (server) {
    PeerNet net = peer_net(server);
    // A transport that measures no round trip (a browser's WebSocket: the page cannot ping) has
    // the join's: the JoinRequest to the Welcome, over the same path.
    if (net.rtt_us == 0 && join_sent_at > 0 && welcome_at > join_sent_at)
      net.rtt_us = static_cast<std::uint32_t>(std::min<std::int64_t>((welcome_at - join_sent_at) / 1000, 10'000'000));
    stats.rtt_ms = net.rtt_us / 1000;
    stats.rtt_var_ms = net.rtt_var_us / 1000;
    stats.loss = down_loss.loss();
    stats.loss_enet = static_cast<double>(net.loss_ppm) / 1e6;
    // Past states for desync probes cover the round trip: a probe at any latency finds its tick.
    if (history) {
      const std::size_t want =
          history_for_round_trip(std::int64_t{net.rtt_us} * 1000, cfg.state_history, cfg.state_history_max);
      if (want > history->capacity() || 2 * want < history->capacity()) history->resize(want);
    }
  }
  std::int64_t next = now + 100'000'000;
  if (phase == Phase::Running)
    next = std::min(next, sample_held ? now + 5'000'000 : clock.due_at(sample_tick) - lead.lead_ns());
  if (phase == Phase::Leaving) next = std::min(next, now + 10'000'000);
  if (more_frames) next = now;
  return next;
}

void ClientSession::Impl::on_event(const NetEvent& ev, std::int64_t now) {
  switch (ev.type) {
    case NetEvent::Type::Connect:
      connected = true;
      answered = false;
      last_heard = now;
      join_sent_at = now;
      seal.reset();  // a new connection: a token gets a new challenge and new keys
      stream_admitted = false;
      if (cfg.connect_token) transport->send(server, Channel::Control, protocol::connect_request(cfg.connect_token->sealed));
      else
        send_join();
      break;
    case NetEvent::Type::Disconnect: on_disconnect(now); break;
    case NetEvent::Type::Receive: on_receive(ev, now); break;
    case NetEvent::Type::None: break;
  }
}

void ClientSession::Impl::on_disconnect(std::int64_t now) {
  server = nullptr;
  if (phase == Phase::Leaving) return end(desynced ? 3 : 0, message);
  if (end_after_frames) return;  // the frames in hand are executed by update()
  if (completed_without_end())
    return end(0, "the session reached its last tick " + std::to_string(session_last_tick) +
                      "; the server left before its end message arrived");
  if (phase == Phase::Connecting && !connected && now - started_at < cfg.connect_timeout_ns)
    return;  // a failed attempt: the next one starts in check_connection()
  // Closed before a welcome without a word (its pending places full, its join timeout): the
  // token's next server, if any.
  if (phase == Phase::Connecting && next_server(now, "closed the connection before a welcome")) return;
  if (phase == Phase::Connecting && stats.frames_received == 0 && last_heard == started_at)
    return lose("could not connect to " + cfg.host + ":" + std::to_string(cfg.port));
  lose("the connection to the server was lost");
}

// The connect token's next server, if there is one: the connection to this one is dropped.
bool ClientSession::Impl::next_server(std::int64_t now, const std::string& why) {
  if (server_index + 1 >= servers.size()) return false;
  const std::string was = cfg.host + ":" + std::to_string(cfg.port);
  ++server_index;
  cfg.host = servers[server_index].first;
  cfg.port = servers[server_index].second;
  LOCKSTEP_LOG_INFO("%s: %s; trying the connect token's next server, %s:%u", was.c_str(), why.c_str(), cfg.host.c_str(),
                    static_cast<unsigned>(cfg.port));
  reconnect(now);
  server_since = last_heard = now;
  ++stats.servers_tried;
  return true;
}

// The connection is closed, the server told (so a join already on its way does not hold a seat
// there), and a fresh attempt starts to cfg.host:cfg.port.
void ClientSession::Impl::reconnect(std::int64_t now) {
  if (server) {
    peer_disconnect_now(server);
    transport->flush();
  }
  connected = false;
  seal.reset();
  stream_admitted = false;
  attempt(now);
}

// A fresh connection attempt to cfg.host:cfg.port (the one create() opened is the first).
void ClientSession::Impl::attempt(std::int64_t now) {
  std::string err;
  server = transport->connect(cfg.host, cfg.port, &err);
  if (server) peer_set_backstop_timeout(server, backstop_ms(cfg.silence_timeout_ns));
  attempt_at = now;
  ++stats.connect_attempts;
}

// Connection attempts, and the silences that end a session.
void ClientSession::Impl::check_connection(std::int64_t now) {
  // A connect token's server that has not welcomed the player in its share of the time hands
  // over to the next.
  const std::int64_t share = cfg.connect_timeout_ns / static_cast<std::int64_t>(servers.size());
  if (phase == Phase::Connecting && server_index + 1 < servers.size() && now - server_since > share)
    next_server(now, "no welcome in " + std::to_string(share / 1'000'000) + " ms");
  // A connection attempt that gets no answer (a lossy path, a server not up yet) is replaced by
  // a fresh one every connect_retry_ns, until connect_timeout_ns.
  if (phase == Phase::Connecting && !connected && now - attempt_at > cfg.connect_retry_ns &&
      now - started_at < cfg.connect_timeout_ns) {
    if (server) peer_reset(server);
    attempt(now);
  }
  // A connection the server has never spoken on, twice that long after it opened: the server
  // may have closed its half of the handshake (its acknowledgement lost each time it went), and
  // nothing on it will ever be answered. A fresh one.
  if (phase == Phase::Connecting && connected && !answered && now - join_sent_at > 2 * cfg.connect_retry_ns &&
      now - started_at < cfg.connect_timeout_ns) {
    LOCKSTEP_LOG_INFO("no answer on the connection to %s:%u in %lld ms; connecting again", cfg.host.c_str(),
                      static_cast<unsigned>(cfg.port), static_cast<long long>(2 * cfg.connect_retry_ns / 1'000'000));
    reconnect(now);
  }
  if (phase == Phase::Connecting && now - started_at > cfg.connect_timeout_ns)
    lose("could not connect to " + cfg.host + ":" + std::to_string(cfg.port) +
               (servers.size() > 1 ? " or the token's " + std::to_string(servers.size() - 1) + " other server(s)" : "") +
               " (no answer in " + std::to_string(cfg.connect_timeout_ns / 1'000'000'000) + " s, " +
               std::to_string(stats.connect_attempts) + " attempts)");
  else if (phase != Phase::Connecting && phase != Phase::Leaving &&
           now - std::max(last_heard, transport->heard_ns(server)) > cfg.silence_timeout_ns) {
    if (completed_without_end())
      end(0, "the session reached its last tick " + std::to_string(session_last_tick) +
                 "; the server went quiet before its end message arrived");
    else
      lose("the server stopped answering at tick " + std::to_string(executed));
  } else if (phase == Phase::Leaving && now >= leave_deadline)
    end(desynced ? 3 : 0, message);
}

void ClientSession::Impl::on_receive(const NetEvent& ev, std::int64_t now) {
  answered = true;
  if (!cfg.connect_token || stream_admitted) return on_message(ev.channel, ev.data, now);
#if !LOCKSTEP_WEB
  if (seal) {  // a sealed connection's messages open before anything of them is read (§4.7)
    const Channel ch = ev.channel == static_cast<std::uint8_t>(Channel::Play) ? Channel::Play : Channel::Control;
    const OpenError e = seal->open(ch, ev.data, seal_scratch);
    if (e == OpenError::None) return on_message(ev.channel, seal_scratch, now);
    drop(e == OpenError::Replayed ? ClientDrop::Replayed : ClientDrop::Forged, "a sealed message");
    // A reliable message that did not open is lost for good: the connection cannot go on.
    if (ch == Channel::Control && e != OpenError::Replayed)
      end(4, "a control message from the server failed authentication (altered on the way)");
    return;
  }
#endif
  // Before the challenge only the server's answer to the token comes, in the clear.
  protocol::DecodeError err;
  const wire::Message* m = protocol::decode(ev.data, &err);
  if (m && m->body_type() == wire::Body::ConnectChallenge) {
    last_heard = now;
    if (peer_stream(server)) {  // the WebSocket door: TLS protects the stream, nothing is sealed (§17)
      stream_admitted = true;
      return send_join();
    }
#if LOCKSTEP_WEB
    return end(4, "this build seals nothing: it joins with a connect token only through a WebSocket door");
#else
    const auto* n = m->body_as_ConnectChallenge()->nonce();
    const ConnectToken& t = *cfg.connect_token;
    const ConnectionKeys keys = derive_connection_keys(t.client_to_server, t.server_to_client, {n->data(), n->size()},
                                                       /*server_side=*/false);
    seal = std::make_unique<PacketSeal>(keys);
    // The server has had the keys since it sent the challenge: every datagram from now on is keyed (§1.1).
    transport->authenticate(server, datagram_keys(keys), /*speaks_first=*/true);
    return send_join();
#endif
  }
  if (m && m->body_type() == wire::Body::Refuse) return on_message(ev.channel, ev.data, now);
  drop(m ? ClientDrop::UnexpectedMessage : ClientDrop::Malformed, "before the connect challenge");
}

void ClientSession::Impl::on_message(std::uint8_t channel, std::span<const std::uint8_t> data, std::int64_t now) {
  protocol::DecodeError err;
  // On the play channel, a datagram that is not a Message is the server's play message (§6.6).
  if (channel == static_cast<std::uint8_t>(Channel::Play) && !protocol::is_message(data)) {
    if (!sim) {  // before the welcome (they cross on the way): only a sign of life
      last_heard = now;
      return;
    }
    thread_local protocol::ServerPlay play;
    err = protocol::decode_server_play(data, players, sim->input_size(), base_frame, play);
    if (err == protocol::DecodeError::None) {
      last_heard = now;
      return on_server_play(play, now);
    }
    return drop(kPlayDrops(err), protocol::to_string(err));
  }
  const wire::Message* m = protocol::decode(data, &err, protocol::kMaxDetailMessageBytes);
  if (!m) {
    return drop(kControlDrops(err), protocol::to_string(err));
  }
  last_heard = now;
  switch (m->body_type()) {
    case wire::Body::Welcome:
      welcome_at = now;
      on_welcome(*m->body_as_Welcome());
      if (result_set && phase != Phase::Connecting && phase != Phase::Ended) send_result();  // set before the join
      return;
    case wire::Body::Refuse: {
      const auto* r = m->body_as_Refuse();
      // Reasons of this server alone: the token's next server may still take the player. A rejoin
      // also goes on past servers that do not know its secret (or take its expired token only
      // back to its own seat): its seat is on one of the others.
      const auto reason = r->reason();
      using R = wire::RefuseReason;
      const bool this_server = reason == R::Full || reason == R::AlreadyStarted || reason == R::WrongServer ||
                               reason == R::Draining ||
                               (!cfg.rejoin_secret.empty() &&
                                (reason == R::BadRequest || reason == R::TokenExpired || reason == R::TokenInUse));
      if (phase == Phase::Connecting && this_server &&
          next_server(now, std::string("refused (") + wire::EnumNameRefuseReason(reason) + ")"))
        return;
      stats.refusal = wire::EnumNameRefuseReason(r->reason());
      return end(4, std::string("refused by the server (") + wire::EnumNameRefuseReason(r->reason()) +
                        "): " + (r->detail() ? r->detail()->str() : ""));
    }
    case wire::Body::SessionStart: return on_start(*m->body_as_SessionStart(), now);
    case wire::Body::DesyncNotice: {
      const auto* d = m->body_as_DesyncNotice();
      desynced = true;
      // The server's questions about that tick follow: its state stays until they are answered.
      if (history) history->pin(d->tick());
      emit({SessionEvent::Kind::Desync, d->tick(), d->slot(), "", "the server reports this client diverged", 3});
      LOCKSTEP_LOG_ERROR("DESYNC: the server reports that this client (slot %d) diverged at tick %u (ours %s, server %s)",
                         d->slot(), d->tick(), hash_hex(d->client_hash()).c_str(), hash_hex(d->server_hash()).c_str());
      if (!cfg.desync_dir.empty()) write_desync_bundle(d->tick(), d->client_hash(), d->server_hash());
      return;
    }
    case wire::Body::PlayerJoined: {
      const auto* j = m->body_as_PlayerJoined();
      LOCKSTEP_LOG_INFO("player %u (%s) joined", j->slot(), j->name() ? j->name()->c_str() : "");
      emit({SessionEvent::Kind::PlayerJoined, executed, static_cast<std::int32_t>(j->slot()), j->name() ? j->name()->str() : "", "", 0});
      return;
    }
    case wire::Body::PlayerLeft: {
      const auto* l = m->body_as_PlayerLeft();
      LOCKSTEP_LOG_INFO("player %u %s at tick %u", l->slot(), l->reason() ? l->reason()->c_str() : "left", l->tick());
      emit({SessionEvent::Kind::PlayerLeft, l->tick(), static_cast<std::int32_t>(l->slot()), "", l->reason() ? l->reason()->str() : "left", 0});
      return;
    }
    case wire::Body::SessionEnd: return on_session_end(*m->body_as_SessionEnd(), now);
    case wire::Body::Kick: {
      const auto* k = m->body_as_Kick();
      emit({SessionEvent::Kind::Kicked, executed, slot, "", k->reason() ? k->reason()->str() : "no reason given", 4});
      return end(4, "dropped by the server: " + (k->reason() ? k->reason()->str() : std::string("no reason given")) +
                        " (at tick " + std::to_string(executed) + ")");
    }
    case wire::Body::DesyncProbe: return on_probe(*m->body_as_DesyncProbe());
    case wire::Body::Snapshot: return on_snapshot(*m->body_as_Snapshot(), now);
    case wire::Body::StateRequest: return on_state_request(*m->body_as_StateRequest());
    default: return drop(ClientDrop::UnexpectedMessage, std::string("a ") + wire::EnumNameBody(m->body_type()));
  }
}

void ClientSession::Impl::on_welcome(const wire::Welcome& m) {
  if (phase != Phase::Connecting) return drop(ClientDrop::UnexpectedMessage, "a second welcome");
  slot = m.slot();
  players = m.players();
  input_delay = m.input_delay();
  send_every = std::max<std::uint32_t>(1, m.send_every());
  down_loss.set_every(send_every);
  session_last_tick = m.last_tick();
  if (m.rejoin_secret()) secret = m.rejoin_secret()->str();
  joining = m.joining();
  joined_running = m.joining();
  world = WorldParams{};
  world.players = m.players();
  if (m.settings()) world.settings.assign(m.settings()->begin(), m.settings()->end());
  roster_names.assign(world.players, "");
  if (m.roster())
    for (const auto* seat : *m.roster())
      if (seat->slot() < roster_names.size() && seat->name()) roster_names[seat->slot()] = seat->name()->str().substr(0, 32);
  emit({SessionEvent::Kind::Joined, 0, slot, cfg.name, secret, 0});
  // The players seated before us, as if we had seen them join: a late joiner knows their names.
  for (std::size_t i = 0; i < roster_names.size(); ++i)
    if (static_cast<std::int32_t>(i) != slot && !roster_names[i].empty())
      emit({SessionEvent::Kind::PlayerJoined, 0, static_cast<std::int32_t>(i), roster_names[i], "", 0});
  sim = cfg.factory(world);
  if (!sim) return end(1, "this client's simulation module cannot build the server's world settings");
  if (m.world_fingerprint() != 0 && sim->fingerprint() != m.world_fingerprint())
    return end(4, "this client's module builds another world from the server's settings (fingerprint " +
                      hash_hex(sim->fingerprint()) + ", the server's " + hash_hex(m.world_fingerprint()) + ")");
  if (cfg.keep_previous) prev = sim->clone();
  scratch = sim->clone();
  history = std::make_unique<StateHistory>(std::max<std::size_t>(1, cfg.state_history));
  history->record(*sim);
  phase = Phase::Joined;
  std::string roster;
  if (m.roster())
    for (const auto* seat : *m.roster())
      roster += (roster.empty() ? "" : ", ") + std::to_string(seat->slot()) + " " + (seat->name() ? seat->name()->str() : "");
  LOCKSTEP_LOG_INFO("joined as %s; %u slots (taken: %s), %zu bytes of world settings, input delay %u",
                    slot >= 0 ? ("player " + std::to_string(slot)).c_str() : "spectator", players,
                    roster.empty() ? "none" : roster.c_str(), world.settings.size(), input_delay);
}

void ClientSession::Impl::on_session_end(const wire::SessionEnd& m, std::int64_t now) {
  const std::string detail = m.detail() ? m.detail()->str() : "";
  LOCKSTEP_LOG_INFO("the server ended the session at tick %u: %s", m.last_tick(), detail.c_str());
  end_after_frames = true;
  end_code_after_frames = desynced || m.reason() == wire::EndReason::Desync ? 3 : 0;
  end_tick = m.last_tick();
  end_deadline = now + cfg.silence_timeout_ns;
  message = "session ended: " + detail;
}

/// After SessionEnd: every confirmed frame up to the session's last tick is executed (and
/// hashed) first; a client that cannot get them all says how far it got and exits 4.
/// Returns true once the session has ended.
bool ClientSession::Impl::finish_after_end(std::int64_t now) {
  if (cfg.execute_on_arrival)
    while (executed < end_target() && execute_next(now)) {
    }
  if (executed >= end_target()) {
    end(end_code_after_frames, message);
    return true;
  }
  if (intake.received() < end_target() && (!server || now > end_deadline)) {
    end(4, "the session ended at tick " + std::to_string(end_tick) + ", but frames arrived only up to tick " +
               std::to_string(intake.received()) + " (executed " + std::to_string(executed) + ")");
    return true;
  }
  return false;
}

/// The session had a last tick, this client executed it and the server confirmed its hashes up
/// to it: the session is complete even if its end message never arrived.
bool ClientSession::Impl::completed_without_end() const {
  return session_last_tick != 0 && executed >= session_last_tick && hash_ack >= session_last_tick && !desynced;
}

void ClientSession::Impl::begin_leave(std::int64_t now, const std::string& reason) {
  if (phase == Phase::Leaving || phase == Phase::Ended || !server) return;
  send_tick(now);  // the final hashes
  send(Channel::Control, protocol::leave(reason));
  peer_disconnect_later(server);
  transport->flush();
  phase = Phase::Leaving;
  leave_deadline = now + 1'000'000'000;
  message = "left: " + reason;
}

std::uint64_t ClientSession::Impl::sim_fingerprint() const {
  // The server's settings come with the welcome: the join names the module's default world.
  return join_fingerprint(cfg.factory);
}

void ClientSession::Impl::send_join() {
  const std::uint64_t fingerprint = sim_fingerprint();
  if (fingerprint == 0) return end(1, "the simulation cannot build its default world: there is nothing to join with");
  send(Channel::Control, protocol::join_request(cfg.protocol_version, fingerprint, cfg.token, cfg.name, cfg.spectate,
                                                cfg.rejoin_secret, cfg.libraries, cfg.code, cfg.code_fma));
}

std::unique_ptr<ClientSession> ClientSession::create(const ClientConfig& config, Error* error) {
  return create_on(udp_network(), config, error);
}

std::unique_ptr<ClientSession> ClientSession::create_on(Network& network, const ClientConfig& config, Error* error) {
  auto fail = [&](ErrorKind kind, const std::string& why, const char* field = "") -> std::unique_ptr<ClientSession> {
    if (error) *error = {kind, why, field};
    return nullptr;
  };
  if (!config.factory) return fail(ErrorKind::Usage, "factory is not set: a session needs a simulation module", "factory");
  if (!protocol::valid_name(config.name)) return fail(ErrorKind::Usage, "name must be 1-32 printable ASCII characters", "name");
  if (config.token.size() > protocol::kMaxJoinSecretBytes) return fail(ErrorKind::Usage, "token must be at most 128 bytes", "token");
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->lead = LeadController(config.lead);
  impl->stats.lead_ns = impl->lead.lead_ns();
  std::string err;
  impl->transport = network.client(config.limits, &err, config.bind);
  if (!impl->transport) return fail(ErrorKind::Runtime, err);
  if (config.host.empty()) {
    if (!config.connect_token) return fail(ErrorKind::Usage, "host is empty and there is no connect token to name servers", "host");
    for (const TokenAddress& a : config.connect_token->servers) {
      auto& [host, port] = impl->servers.emplace_back();
      split_host_port(a.text(), &host, &port);
    }
    if (impl->servers.empty()) return fail(ErrorKind::Usage, "the connect token names no server", "connect_token");
    impl->cfg.host = impl->servers.front().first;
    impl->cfg.port = impl->servers.front().second;
  } else {
    impl->servers.emplace_back(config.host, config.port);
  }
  impl->server = impl->transport->connect(impl->cfg.host, impl->cfg.port, &err);
  if (!impl->server) return fail(ErrorKind::Connection, err);
  peer_set_backstop_timeout(impl->server, backstop_ms(config.silence_timeout_ns));
  return std::unique_ptr<ClientSession>(new ClientSession(std::move(impl)));
}

ClientSession::ClientSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientSession::~ClientSession() = default;
std::int64_t ClientSession::update(std::int64_t now_ns) { return impl_->update(now_ns); }
void ClientSession::abort(int code, const std::string& why) { impl_->end(code, why); }

std::vector<SessionEvent> ClientSession::take_events() {
  std::vector<SessionEvent> out;
  out.swap(impl_->events);
  return out;
}

int ClientSession::fd() const { return impl_->transport->fd(); }
void ClientSession::set_input_source(InputSource source) { impl_->input_source = std::move(source); }
void ClientSession::set_hash_log(HashLogWriter* log) { impl_->hash_log = log; }
void ClientSession::on_tick(std::function<void(Tick, std::uint64_t)> fn) { impl_->tick_fn = std::move(fn); }
void ClientSession::leave(const std::string& reason) {
  if (impl_->phase == Phase::Connecting || impl_->phase == Phase::Joined) impl_->end(0, "left: " + reason);
  else impl_->begin_leave(impl_->last_heard, reason);
}
bool ClientSession::set_result(std::span<const std::uint8_t> result) {
  if (result.size() > kMaxResultBytes || impl_->phase == Phase::Ended) return false;
  impl_->result.assign(result.begin(), result.end());
  impl_->result_set = true;
  if (impl_->phase != Phase::Connecting) impl_->send_result();
  return true;
}
std::int64_t ClientSession::tick_due_ns(Tick t) const { return impl_->clock.known() ? impl_->clock.due_at(t) : 0; }
Tick ClientSession::last_sampled() const { return impl_->last_input; }
Tick ClientSession::first_sampled() const { return impl_->first_input; }
std::int64_t ClientSession::sample_due_ns(Tick t) const {
  if (!impl_->clock.known()) return 0;
  const Tick at = t > impl_->input_delay ? t - impl_->input_delay : 0;
  return impl_->clock.due_at(at) - impl_->lead.lead_ns();
}
std::size_t ClientSession::frames_buffered() const { return impl_->intake.received() - impl_->executed; }
bool ClientSession::execute_next(std::int64_t now_ns) { return impl_->execute_next(now_ns); }
ClientSession::Phase ClientSession::phase() const { return impl_->phase; }
int ClientSession::exit_code() const { return impl_->exit; }
const std::string& ClientSession::end_message() const { return impl_->message; }
const Simulation* ClientSession::simulation() const { return impl_->sim.get(); }
const Simulation* ClientSession::previous() const { return impl_->prev.get(); }
Tick ClientSession::executed_tick() const { return impl_->executed; }
std::uint64_t ClientSession::last_hash() const { return impl_->last_hash; }
std::int32_t ClientSession::slot() const { return impl_->slot; }
bool ClientSession::desynced() const { return impl_->desynced; }
bool ClientSession::connection_lost() const { return impl_->phase == Phase::Ended && impl_->connection_lost; }
const std::string& ClientSession::rejoin_secret() const { return impl_->secret; }
Tick ClientSession::joined_at() const { return impl_->joined_at; }
std::uint32_t ClientSession::players() const { return impl_->world.players; }
Tick ClientSession::last_tick() const {
  const Tick session = impl_->session_last_tick, mine = impl_->cfg.last_tick;
  return session == 0 ? mine : mine == 0 ? session : std::min(session, mine);
}
const ClientStats& ClientSession::stats() const { return impl_->stats; }
NetTraffic ClientSession::traffic() const { return impl_->transport->traffic(); }

}  // namespace lockstep
