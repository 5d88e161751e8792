#include "lockstep/client_session.hpp"

#include <algorithm>
#include <array>
#include <deque>

#include "lockstep/desync.hpp"
#include "lockstep/log.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {
constexpr std::size_t kRing = 256;          // frames, inputs and hashes kept by tick
constexpr std::size_t kOriginWindow = 128;  // frames the tick-clock estimate looks back over
constexpr int kMaxFramesPerUpdate = 4;      // catch-up frames executed before the socket is serviced again
constexpr Tick kMaxSampleAhead = 200;       // ticks of sampling ahead of the received frames (> the lead limit)
constexpr std::int64_t kLobbyBeatNs = 100'000'000;  // heartbeats while the lobby waits

}  // namespace

struct ClientSession::Impl {
  ClientConfig cfg;
  std::unique_ptr<NetHost> host;
  EnetPeer* server = nullptr;
  Phase phase = Phase::Connecting;
  int exit = 0;
  std::string message;
  std::int64_t started_at = -1;
  bool connected = false;       // ENet's connection is up (the join may still be on its way)
  std::int64_t attempt_at = 0;  // when the current connection attempt started
  std::int64_t last_heard = 0;
  std::int64_t leave_deadline = 0;

  // From the welcome.
  std::int32_t slot = -1;
  std::uint32_t players = 0;
  std::uint32_t input_delay = 0;
  Tick session_last_tick = 0;
  std::unique_ptr<Simulation> sim, prev;

  // Confirmed frames by tick; [executed+1, received] are buffered.
  std::array<InputFrame, kRing> frames{};
  std::array<bool, kRing> have_frame{};
  Tick received = 0;  // every frame up to here is in
  Tick executed = 0;

  // The server's tick clock: tick T is due at origin + (T + clock_shift) periods. origin is the
  // monotonic time of tick 0's deadline as seen here, the minimum over recent frames of
  // (arrival - (tick + shift) * period): the least-delayed arrival is the best estimate. The
  // server reports its shift, the ticks it has moved its clock later after falling behind.
  bool clock_known = false;
  std::deque<std::int64_t> origin_samples;
  std::int64_t origin = 0;
  std::uint32_t clock_shift = 0;
  Tick sample_tick = 0;  // the next tick clock reading at which to sample
  LeadController lead{LeadConfig{}};  // how long before the server's deadline to sample (adapts)
  bool lead_limit_told = false;
  bool sample_held = false;  // sampling waits for frames to catch up
  std::int64_t last_sent = 0;

  // Our inputs and hashes, by tick, until acknowledged.
  std::array<Tick, kRing> input_tick{};
  std::array<std::uint16_t, kRing> input{};
  std::array<std::int64_t, kRing> sampled_at{};
  Tick first_input = 0, last_input = 0;  // range of sampled target ticks
  Tick input_ack = 0, hash_ack = 0;
  std::int64_t hash_ack_moved = 0;  // when hash_ack last advanced
  std::int64_t last_gap_send = 0;   // when hashes after hash_ack were last sent again
  std::array<std::uint64_t, kRing> hashes{};
  std::uint64_t last_hash = 0;
  bool desynced = false;
  bool end_after_frames = false;  // SessionEnd arrived: end once every frame up to end_tick is executed
  int end_code_after_frames = 0;
  Tick end_tick = 0;              // the session's last executed tick, from SessionEnd
  std::int64_t end_deadline = 0;  // give up waiting for missing final frames then

  std::unique_ptr<StateHistory> history;
  std::unique_ptr<Simulation> scratch;  // a past state, loaded to answer probes
  std::uint32_t epoch = 0;
  std::string secret;   // from the welcome
  bool joining = false;  // the welcome said a snapshot comes first
  bool joined_running = false;  // ... and so the session was running when this client came in
  Tick joined_at = 0;
  // A snapshot being received in chunks.
  std::vector<std::uint8_t> snap;
  Tick snap_tick = 0;
  std::uint64_t snap_hash = 0;
  std::uint32_t snap_total = 0, snap_epoch = 0;
  bool snap_join = false;
  std::int64_t snap_started = 0;
  std::int64_t welcome_at = 0;
  std::int64_t join_sent_at = 0;  // the join's round trip (to the welcome) seeds the input lead

  InputSource input_source;
  HashLogWriter* hash_log = nullptr;
  std::function<void(Tick, std::uint64_t)> tick_fn;
  ClientStats stats;

  void end(int code, const std::string& why) {
    if (phase == Phase::Ended) return;
    phase = Phase::Ended;
    exit = code;
    message = why;
    if (server) {
      peer_disconnect_now(server);
      host->flush();
      server = nullptr;
    }
  }

  void on_welcome(const wire::Welcome& m) {
    if (phase != Phase::Connecting) return;
    slot = m.slot();
    players = m.players();
    input_delay = m.input_delay();
    session_last_tick = m.last_tick();
    if (m.rejoin_secret()) secret = m.rejoin_secret()->str();
    joining = m.joining();
    joined_running = m.joining();
    const WorldParams world{m.seed(), m.bodies(), m.players()};
    sim = cfg.factory(world);
    if (!sim) return end(1, "the server's world parameters are out of range for this simulation");
    if (cfg.keep_previous) prev = sim->clone();
    scratch = sim->clone();
    history = std::make_unique<StateHistory>(std::max<std::size_t>(1, cfg.state_history));
    history->record(*sim);
    phase = Phase::Joined;
    LOCKSTEP_LOG_INFO("joined as %s; %u slots, seed %llu, %u bodies, input delay %u",
                      slot >= 0 ? ("player " + std::to_string(slot)).c_str() : "spectator", players,
                      static_cast<unsigned long long>(m.seed()), m.bodies(), input_delay);
  }

  void on_start(const wire::SessionStart& m, std::int64_t now) {
    // Start comes reliably once and unreliably until tick 1; like the frames, the copy that
    // arrives earliest says best when the server's ticks fall due here.
    const std::int64_t estimate = now + std::int64_t{m.starts_in_us()} * 1000;
    if (clock_known) {
      if (phase == Phase::Running && estimate < origin) {
        origin_samples.push_back(estimate);
        if (origin_samples.size() > kOriginWindow) origin_samples.pop_front();
        origin = estimate;
      }
      return;
    }
    if (phase != Phase::Joined) return;
    origin = estimate;
    origin_samples.push_back(estimate);
    clock_known = true;
    phase = Phase::Running;
    // The first inputs go out before any report on them can come back: start from the join's
    // round trip (plus a quarter for jitter) less the input delay, and let the reports correct it.
    if (join_sent_at > 0 && welcome_at > join_sent_at) {
      const std::int64_t rtt = welcome_at - join_sent_at;
      lead.seed(rtt + rtt / 4 - std::int64_t{input_delay} * kTickNs + lead.config().margin_ns);
      stats.lead_ns = lead.lead_ns();
      LOCKSTEP_LOG_INFO("the join took %lld ms there and back: sampling starts %.1f ms ahead", static_cast<long long>(rtt / 1'000'000),
                        static_cast<double>(lead.lead_ns()) / 1e6);
    }
    // A spectator joining a running session starts sampling at the current tick.
    const std::int64_t since = now - origin + lead.lead_ns();
    sample_tick = since > 0 ? static_cast<Tick>(since / kTickNs) : 0;
  }

  /// When the server's deadline for tick t falls, by this client's clock.
  [[nodiscard]] std::int64_t due_at(Tick t) const {
    return origin + (std::int64_t{t} + std::int64_t{clock_shift}) * kTickNs;
  }

  void on_server_tick(const wire::ServerTick& m, std::int64_t now) {
    if (phase != Phase::Running && phase != Phase::Leaving) return;
    if (joining) return;  // frames count only after the snapshot
    clock_shift = std::max(clock_shift, m.clock_shift());  // a reordered datagram carries an older one
    input_ack = std::max(input_ack, std::min(m.input_ack(), last_input));
    if (m.slack_tick() != 0) {
      lead.report(m.slack_tick(), std::int64_t{m.input_slack_us()} * 1000);
      stats.lead_ns = lead.lead_ns();
      if (lead.over_limit() && !lead_limit_told) {
        lead_limit_told = true;
        LOCKSTEP_LOG_WARN("round trip %u ms exceeds the session's limit: a lead of %lld ms would be needed, at most "
                          "%lld ms is allowed, so some of this player's inputs will be filled",
                          server ? peer_rtt_ms(server) : 0u, static_cast<long long>(lead.wanted_ns() / 1'000'000),
                          static_cast<long long>(lead.config().max_ns / 1'000'000));
      }
    }
    if (std::min(m.hash_ack(), executed) > hash_ack) {
      hash_ack = std::min(m.hash_ack(), executed);
      hash_ack_moved = now;
    }
    const std::size_t n = protocol::frame_count(m, players);
    if (n == 0 && m.present() && m.present()->size() > 0) {
      ++stats.dropped_messages;
      return;
    }
    bool newest = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Tick t = m.first_tick() + static_cast<Tick>(i);
      if (t <= received || t > executed + kRing - 1) continue;  // have it, or beyond the buffer
      frames[t % kRing] = protocol::frame_at(m, players, i);
      have_frame[t % kRing] = true;
      newest = true;
      ++stats.frames_received;
    }
    while (have_frame[(received + 1) % kRing] && frames[(received + 1) % kRing].tick == received + 1) ++received;
    if (newest && n > 0) {
      const Tick last = m.first_tick() + static_cast<Tick>(n) - 1;
      origin_samples.push_back(now - (std::int64_t{last} + std::int64_t{m.clock_shift()}) * kTickNs);
      if (origin_samples.size() > kOriginWindow) origin_samples.pop_front();
      origin = *std::min_element(origin_samples.begin(), origin_samples.end());
    }
  }

  void on_session_end(const wire::SessionEnd& m, std::int64_t now) {
    const std::string detail = m.detail() ? m.detail()->str() : "";
    int code = desynced ? 3 : 0;
    if (m.reason() == wire::EndReason::Desync) code = 3;
    LOCKSTEP_LOG_INFO("the server ended the session at tick %u: %s", m.last_tick(), detail.c_str());
    end_after_frames = true;
    end_code_after_frames = code;
    end_tick = m.last_tick();
    end_deadline = now + cfg.silence_timeout_ns;
    message = "session ended: " + detail;
  }

  /// The tick this client must have executed before it may exit 0 after the session's end.
  [[nodiscard]] Tick end_target() const {
    return cfg.last_tick != 0 ? std::min(cfg.last_tick, end_tick) : end_tick;
  }

  /// After SessionEnd: every confirmed frame up to the session's last tick is executed (and
  /// hashed) first; a client that cannot get them all says how far it got and exits 4.
  /// Returns true once the session has ended.
  bool finish_after_end(std::int64_t now) {
    if (cfg.execute_on_arrival)
      while (executed < end_target() && execute_next(now)) {
      }
    if (executed >= end_target()) {
      end(end_code_after_frames, message);
      return true;
    }
    if (received < end_target() && (!server || now > end_deadline)) {
      end(4, "the session ended at tick " + std::to_string(end_tick) + ", but frames arrived only up to tick " +
                 std::to_string(received) + " (executed " + std::to_string(executed) + ")");
      return true;
    }
    return false;
  }

  /// The session had a last tick, this client executed it and the server confirmed its hashes up
  /// to it: the session is complete even if its end message never arrived.
  [[nodiscard]] bool completed_without_end() const {
    return session_last_tick != 0 && executed >= session_last_tick && hash_ack >= session_last_tick && !desynced;
  }

  void on_receive(NetEvent& ev, std::int64_t now) {
    protocol::DecodeError err;
    const wire::Message* m = protocol::decode(ev.data, &err, protocol::kMaxDetailMessageBytes);
    if (!m) {
      ++stats.dropped_messages;
      LOCKSTEP_LOG_WARN("dropped a message from the server: %s", protocol::to_string(err));
      return;
    }
    last_heard = now;
    switch (m->body_type()) {
      case wire::Body::Welcome:
        welcome_at = now;
        return on_welcome(*m->body_as_Welcome());
      case wire::Body::Refuse: {
        const auto* r = m->body_as_Refuse();
        return end(4, std::string("refused by the server (") + wire::EnumNameRefuseReason(r->reason()) +
                          "): " + (r->detail() ? r->detail()->str() : ""));
      }
      case wire::Body::SessionStart: return on_start(*m->body_as_SessionStart(), now);
      case wire::Body::ServerTick: return on_server_tick(*m->body_as_ServerTick(), now);
      case wire::Body::DesyncNotice: {
        const auto* d = m->body_as_DesyncNotice();
        desynced = true;
        LOCKSTEP_LOG_ERROR("DESYNC: the server reports that this client diverged at tick %u (ours %s, server %s)",
                           d->tick(), hash_hex(d->client_hash()).c_str(), hash_hex(d->server_hash()).c_str());
        return;
      }
      case wire::Body::PlayerJoined: {
        const auto* j = m->body_as_PlayerJoined();
        LOCKSTEP_LOG_INFO("player %u (%s) joined", j->slot(), j->name() ? j->name()->c_str() : "");
        return;
      }
      case wire::Body::PlayerLeft: {
        const auto* l = m->body_as_PlayerLeft();
        LOCKSTEP_LOG_INFO("player %u %s at tick %u", l->slot(), l->reason() ? l->reason()->c_str() : "left", l->tick());
        return;
      }
      case wire::Body::SessionEnd: return on_session_end(*m->body_as_SessionEnd(), now);
      case wire::Body::Kick: {
        const auto* k = m->body_as_Kick();
        return end(4, "dropped by the server: " + (k->reason() ? k->reason()->str() : std::string("no reason given")) +
                          " (at tick " + std::to_string(executed) + ")");
      }
      case wire::Body::DesyncProbe: return on_probe(*m->body_as_DesyncProbe());
      case wire::Body::Snapshot: return on_snapshot(*m->body_as_Snapshot(), now);
      default:
        ++stats.dropped_messages;
        LOCKSTEP_LOG_WARN("dropped an unexpected %s from the server", wire::EnumNameBody(m->body_type()));
        return;
    }
  }

  // The server localizes a desync by asking about our state at its tick, level by level.
  void on_probe(const wire::DesyncProbe& m) {
    if (!sim || !server) return;
    const bool have = history->load(m.tick(), *scratch);
    std::vector<std::uint64_t> digests, values;
    if (have) {
      switch (m.level()) {
        case wire::ProbeLevel::Blocks:
          if (m.block_size() == 0 || scratch->entity_count() / m.block_size() >= protocol::kMaxProbeHashes) return;
          digests = block_hashes(*scratch, m.block_size());
          break;
        case wire::ProbeLevel::Entities: digests = entity_hashes(*scratch, m.first(), m.count()); break;
        case wire::ProbeLevel::Fields:
          if (m.first() >= scratch->entity_count()) return;
          values = field_bits(scratch->entity_fields(m.first()));
          break;
        case wire::ProbeLevel::Global: values = field_bits(scratch->global_fields()); break;
      }
    }
    host->send(server, Channel::Control, protocol::desync_detail(m.tick(), m.level(), m.first(), have, digests, values));
    host->flush();
  }

  // Snapshots arrive in order on the reliable channel, in chunks; a chunk out of place drops the
  // partial state (the server sends a fresh snapshot when it needs to).
  void on_snapshot(const wire::Snapshot& m, std::int64_t now) {
    if (!sim) return;
    const std::size_t n = m.data() ? m.data()->size() : 0;
    if (m.offset() == 0) {
      snap.clear();
      snap.reserve(m.total_size());
      snap_tick = m.tick();
      snap_hash = m.hash();
      snap_total = m.total_size();
      snap_epoch = m.epoch();
      snap_join = m.join();
      snap_started = now;
    } else if (m.offset() != snap.size() || m.tick() != snap_tick || m.total_size() != snap_total) {
      LOCKSTEP_LOG_WARN("dropped a snapshot chunk out of place (tick %u offset %u)", m.tick(), m.offset());
      snap.clear();
      return;
    }
    if (n > 0) snap.insert(snap.end(), m.data()->begin(), m.data()->end());
    if (snap.size() < snap_total) return;
    auto loaded = sim->clone();
    if (!loaded->deserialize(snap) || loaded->tick() != snap_tick || loaded->hash() != snap_hash) {
      LOCKSTEP_LOG_ERROR("the snapshot of tick %u does not load or does not match its hash", snap_tick);
      snap.clear();
      return;
    }
    stats.snapshot_ns = now - snap_started;
    stats.snapshot_bytes = snap.size();
    snap.clear();
    if (snap_join) return join_from(std::move(loaded), now);
    resync_from(std::move(loaded), now);
  }

  // Rejoin or late join: start from the server's state; frames after it follow.
  void join_from(std::unique_ptr<Simulation> loaded, std::int64_t now) {
    const Tick s = loaded->tick();
    stats.snapshot_ns = now - welcome_at;  // the whole transfer: welcome, chunks, load and check
    sim = std::move(loaded);
    if (prev) prev->assign(*sim);
    have_frame.fill(false);
    executed = received = s;
    joined_at = s;
    last_input = std::max(last_input, s);
    if (first_input != 0 && first_input <= s) first_input = s + 1;
    history->record(*sim);
    hashes[s % kRing] = sim->hash();
    last_hash = hashes[s % kRing];
    hash_ack = s;
    joining = false;
    LOCKSTEP_LOG_INFO("loaded the session's state at tick %u (%llu bytes, hash %s, %lld us)", s,
                      static_cast<unsigned long long>(stats.snapshot_bytes), hash_hex(last_hash).c_str(),
                      static_cast<long long>(stats.snapshot_ns / 1000));
  }

  // Resync: take the server's state, re-execute the frames after it and play on.
  void resync_from(std::unique_ptr<Simulation> loaded, std::int64_t now) {
    const Tick s = loaded->tick();
    if (s > received || (executed > s && executed - s >= kRing)) {
      LOCKSTEP_LOG_ERROR("resync: snapshot of tick %u does not fit this client's frames (executed %u)", s, executed);
      return;
    }
    const Tick was = executed;
    sim = std::move(loaded);
    if (prev) prev->assign(*sim);
    executed = s;
    history->record(*sim);
    hashes[s % kRing] = sim->hash();
    epoch = snap_epoch;
    hash_ack = s;
    desynced = false;
    ++stats.resyncs;
    // Frames after the snapshot that were executed on the diverged state run again.
    for (Tick t = s + 1; t <= was && t <= received; ++t) {
      have_frame[t % kRing] = true;
      execute_next(now);
    }
    LOCKSTEP_LOG_INFO("resync: loaded the server's state of tick %u and caught up to tick %u", s, executed);
  }

  bool execute_next(std::int64_t now) {
    if (!sim || executed >= received) return false;
    if (cfg.last_tick != 0 && executed >= cfg.last_tick) return false;
    const Tick t = executed + 1;
    const InputFrame& f = frames[t % kRing];
    if (prev) prev->assign(*sim);
    sim->step(f);
    if (cfg.inject_desync_at != 0 && t == cfg.inject_desync_at) {
      sim->perturb(cfg.inject_selector);
      LOCKSTEP_LOG_WARN("test hook: perturbed one float by one ULP after tick %u", t);
    }
    if (cfg.after_step) cfg.after_step(t, *sim);
    last_hash = sim->hash();
    history->record(*sim);
    hashes[t % kRing] = last_hash;
    executed = t;
    have_frame[t % kRing] = false;
    if (hash_log) hash_log->write(t, last_hash);
    if (tick_fn) tick_fn(t, last_hash);
    if (stats.first_exec_ns == 0) stats.first_exec_ns = now;
    stats.last_exec_ns = now;
    ++stats.executed_ticks;
    if (slot >= 0 && ((f.filled >> slot) & 1u)) ++stats.inputs_filled;
    else if (slot >= 0 && input_tick[t % kRing] == t) stats.input_latency.add_us((now - sampled_at[t % kRing]) / 1000);
    if (cfg.last_tick != 0 && t >= cfg.last_tick) begin_leave(now, "reached its last tick");
    return true;
  }

  void begin_leave(std::int64_t now, const std::string& reason) {
    if (phase == Phase::Leaving || phase == Phase::Ended || !server) return;
    send_tick(now);  // the final hashes
    host->send(server, Channel::Control, protocol::leave(reason));
    peer_disconnect_later(server);
    host->flush();
    phase = Phase::Leaving;
    leave_deadline = now + 1'000'000'000;
    message = "left: " + reason;
  }

  void send_tick(std::int64_t now) {
    if (!server) return;
    // The newest unacknowledged inputs and hashes, at most kMaxWindow of each: every one is
    // carried by the next kMaxWindow messages, and on a long round trip the newest never waits
    // behind older ones whose acknowledgement is still on its way. A hash whose acknowledgement
    // has stood still for a round trip and more while newer ones went out (lost in every copy)
    // goes out again with the ones after it.
    const auto window = static_cast<Tick>(protocol::kMaxWindow);
    Tick in_from = std::max(input_ack + 1, first_input);
    if (last_input >= window) in_from = std::max(in_from, last_input - window + 1);
    std::vector<std::uint16_t> ins;
    if (slot >= 0 && first_input != 0)
      for (Tick t = in_from; t <= last_input && ins.size() < protocol::kMaxWindow; ++t) ins.push_back(input[t % kRing]);
    const Tick oldest = executed > kRing - 1 ? executed - static_cast<Tick>(kRing - 1) : 1;
    Tick h_from = std::max<Tick>(hash_ack + 1, oldest);
    if (executed >= window && executed - window + 1 > h_from) {
      const std::int64_t rtt_ns = std::int64_t{peer_rtt_ms(server)} * 1'000'000;
      if (now - hash_ack_moved > rtt_ns + 100'000'000 && now - last_gap_send > 100'000'000) last_gap_send = now;
      else h_from = executed - window + 1;
    }
    std::vector<std::uint64_t> hs;
    for (Tick t = h_from; t <= executed && hs.size() < protocol::kMaxWindow; ++t) hs.push_back(hashes[t % kRing]);
    const auto lead_us = static_cast<std::int32_t>(std::min<std::int64_t>(lead.lead_ns() / 1000, 10'000'000));
    host->send(server, Channel::Play, protocol::client_tick(in_from, ins, received, h_from, hs, epoch, lead_us));
  }

  void sample(std::int64_t now) {
    // Joining a running session: Start only says the session began, so the clock waits for the
    // first frames after the snapshot before any input is sampled (they would all be late).
    if (joining || (joined_running && stats.frames_received == 0)) return;
    // Every tick-clock reading that has come due samples once (a stalled client catches up,
    // bounded by the ring), then one message carries them all.
    bool due = false;
    sample_held = false;
    while (now >= due_at(sample_tick) - lead.lead_ns()) {
      if (now - due_at(sample_tick) > 32 * kTickNs) {  // far behind: resume at the present
        sample_tick = static_cast<Tick>(std::max<std::int64_t>(0, (now - origin) / kTickNs - clock_shift));
      }
      const Tick target = sample_tick + input_delay;
      // Never run far ahead of the frames actually received: if the server's clock slowed, the
      // local estimate of it is early for a while, and inputs past the server's window are lost.
      if (target > received + input_delay + kMaxSampleAhead) {
        sample_held = true;
        break;
      }
      if (slot >= 0 && target >= 1 && target > last_input && target > executed) {
        const PlayerInput in = input_source ? input_source(target) : PlayerInput{};
        input_tick[target % kRing] = target;
        input[target % kRing] = in.pack();
        sampled_at[target % kRing] = now;
        lead.sampled(target);
        if (first_input == 0) first_input = target;
        last_input = target;
      }
      ++sample_tick;
      due = true;
    }
    // While sampling waits for frames, hashes and acknowledgements still go out every tick.
    if (due || (sample_held && now - last_sent >= kTickNs)) {
      send_tick(now);
      host->flush();  // out now, not at the next poll
      last_sent = now;
    }
  }

  std::int64_t update(std::int64_t now) {
    if (started_at < 0) {
      started_at = attempt_at = now;
      last_heard = now;
      stats.connect_attempts = 1;
    }
    for (NetEvent ev = host->poll(); ev.type != NetEvent::Type::None; ev = host->poll()) {
      switch (ev.type) {
        case NetEvent::Type::Connect:
          connected = true;
          last_heard = now;
          join_sent_at = now;
          host->send(server, Channel::Control,
                     protocol::join_request(cfg.protocol_version, sim_fingerprint(), cfg.token, cfg.name, cfg.spectate,
                                            cfg.rejoin_secret));
          break;
        case NetEvent::Type::Disconnect:
          server = nullptr;
          if (phase == Phase::Leaving) end(desynced ? 3 : 0, message);
          else if (end_after_frames) break;  // the frames in hand are executed below
          else if (completed_without_end())
            end(0, "the session reached its last tick " + std::to_string(session_last_tick) +
                       "; the server left before its end message arrived");
          else if (phase == Phase::Connecting && !connected && now - started_at < cfg.connect_timeout_ns)
            break;  // a failed attempt: the next one starts below
          else if (phase == Phase::Connecting && stats.frames_received == 0 && last_heard == started_at)
            end(4, "could not connect to " + cfg.host + ":" + std::to_string(cfg.port));
          else end(4, "the connection to the server was lost");
          break;
        case NetEvent::Type::Receive: on_receive(ev, now); break;
        case NetEvent::Type::None: break;
      }
      if (phase == Phase::Ended) return now;
    }
    // A client that has fallen behind catches up a few frames per update, so the socket is
    // serviced in between and ENet never sees a silent peer.
    bool more_frames = false;
    if (cfg.execute_on_arrival) {
      int ran = 0;
      while (ran < kMaxFramesPerUpdate && execute_next(now)) ++ran;
      more_frames = ran == kMaxFramesPerUpdate && executed < received;
    }
    if (end_after_frames) {
      if (finish_after_end(now)) return now;
      return executed < received ? now : now + 10'000'000;
    }
    if (phase == Phase::Running) sample(now);
    // Waiting for the session to start: a heartbeat, as the server sends one (ENet's own pings
    // stop while a reliable message is being resent).
    if (phase == Phase::Joined && server && now - last_sent >= kLobbyBeatNs) {
      send_tick(now);
      host->flush();
      last_sent = now;
    }
    // A connection attempt that gets no answer (a lossy path, a server not up yet) is replaced by
    // a fresh one every connect_retry_ns, until connect_timeout_ns.
    if (phase == Phase::Connecting && !connected && now - attempt_at > cfg.connect_retry_ns &&
        now - started_at < cfg.connect_timeout_ns) {
      if (server) peer_reset(server);
      std::string err;
      server = host->connect(cfg.host, cfg.port, &err);
      if (server) peer_set_backstop_timeout(server, backstop_ms(cfg.silence_timeout_ns));
      attempt_at = now;
      ++stats.connect_attempts;
    }
    if (phase == Phase::Connecting && now - started_at > cfg.connect_timeout_ns)
      end(4, "could not connect to " + cfg.host + ":" + std::to_string(cfg.port) + " (no answer in " +
                 std::to_string(cfg.connect_timeout_ns / 1'000'000'000) + " s, " +
                 std::to_string(stats.connect_attempts) + " attempts)");
    else if (phase != Phase::Connecting && phase != Phase::Leaving &&
             now - std::max(last_heard, host->heard_ns(server)) > cfg.silence_timeout_ns) {
      if (completed_without_end())
        end(0, "the session reached its last tick " + std::to_string(session_last_tick) +
                   "; the server went quiet before its end message arrived");
      else
        end(4, "the server stopped answering at tick " + std::to_string(executed));
    }
    else if (phase == Phase::Leaving && now >= leave_deadline)
      end(desynced ? 3 : 0, message);
    if (server) {
      const PeerNet net = peer_net(server);
      stats.rtt_ms = net.rtt_us / 1000;
      stats.rtt_var_ms = net.rtt_var_us / 1000;
      stats.loss = static_cast<double>(net.loss_ppm) / 1e6;
    }
    std::int64_t next = now + 100'000'000;
    if (phase == Phase::Running)
      next = std::min(next, sample_held ? now + 5'000'000 : due_at(sample_tick) - lead.lead_ns());
    if (phase == Phase::Leaving) next = std::min(next, now + 10'000'000);
    if (more_frames) next = now;
    return next;
  }

  [[nodiscard]] std::int64_t tick_due_ns(Tick t) const { return clock_known ? due_at(t) : 0; }

  std::uint64_t sim_fingerprint() const {
    // The fingerprint is a property of the simulation's code; build a throwaway instance to ask.
    static std::uint64_t cached = 0;
    static SimulationFactory cached_for = nullptr;
    if (cached_for != cfg.factory) {
      auto probe = cfg.factory(WorldParams{1, 0, 1});
      cached = probe ? probe->fingerprint() : 0;
      cached_for = cfg.factory;
    }
    return cached;
  }
};

std::unique_ptr<ClientSession> ClientSession::create(const ClientConfig& config, std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<ClientSession> {
    if (error) *error = why;
    return nullptr;
  };
  if (!protocol::valid_name(config.name)) return fail("--name must be 1-32 printable ASCII characters");
  if (config.token.size() > protocol::kMaxTokenBytes) return fail("--token must be at most 128 bytes");
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->lead = LeadController(config.lead);
  impl->stats.lead_ns = impl->lead.lead_ns();
  std::string err;
  impl->host = NetHost::client(config.limits, &err);
  if (!impl->host) return fail(err);
  impl->server = impl->host->connect(config.host, config.port, &err);
  if (!impl->server) return fail(err);
  peer_set_backstop_timeout(impl->server, backstop_ms(config.silence_timeout_ns));
  return std::unique_ptr<ClientSession>(new ClientSession(std::move(impl)));
}

ClientSession::ClientSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientSession::~ClientSession() = default;
std::int64_t ClientSession::update(std::int64_t now_ns) { return impl_->update(now_ns); }
int ClientSession::fd() const { return impl_->host->fd(); }
void ClientSession::set_input_source(InputSource source) { impl_->input_source = std::move(source); }
void ClientSession::set_hash_log(HashLogWriter* log) { impl_->hash_log = log; }
void ClientSession::on_tick(std::function<void(Tick, std::uint64_t)> fn) { impl_->tick_fn = std::move(fn); }
void ClientSession::leave(const std::string& reason) {
  if (impl_->phase == Phase::Connecting || impl_->phase == Phase::Joined) impl_->end(0, "left: " + reason);
  else impl_->begin_leave(impl_->last_heard, reason);
}
std::int64_t ClientSession::tick_due_ns(Tick t) const { return impl_->tick_due_ns(t); }
std::size_t ClientSession::frames_buffered() const { return impl_->received - impl_->executed; }
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
const std::string& ClientSession::rejoin_secret() const { return impl_->secret; }
Tick ClientSession::joined_at() const { return impl_->joined_at; }
const ClientStats& ClientSession::stats() const { return impl_->stats; }
const NetHost& ClientSession::host() const { return *impl_->host; }

}  // namespace lockstep
