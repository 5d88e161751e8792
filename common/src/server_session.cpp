#include "lockstep/server_session.hpp"

#include <algorithm>
#include <cassert>
#include <map>
#include <random>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"

namespace lockstep {

namespace {

constexpr std::size_t kHistory = 4096;      // frames and hashes kept for resends and comparisons
constexpr std::size_t kInputWindow = 256;   // ticks ahead of the next tick a client may send inputs for
constexpr int kMaxTicksPerUpdate = 5;       // catch-up cap per update
constexpr std::uint64_t kLogFirstDrops = 10;
constexpr std::int64_t kMaxStartDelayNs = 3'000'000'000;  // the start waits at most this long for far players
constexpr std::int64_t kStartRepeatNs = 20'000'000;  // Start's unreliable copies go out this often until tick 1
constexpr std::int64_t kReportIntervalNs = 100'000'000;  // at most one desync report per peer this often
constexpr Tick kHashSlackTicks = 50;  // hashes may lag this far (0.5 s) before hash silence is timed
constexpr std::int64_t kLobbyBeatNs = 100'000'000;  // lobby heartbeats on the play channel this often
constexpr std::int64_t kFinalAckNs = 100'000'000;  // the final hashes' acknowledgement repeats this long
constexpr Tick kSteadyTick = 2 * kTickRate;          // steady-state figures count from this tick (2 s in)
constexpr std::int64_t kSilentFillNs = 500'000'000;  // a fill counts as "silent" after this long without a message
constexpr std::int64_t kGapResendNs = 100'000'000;   // at most one resend of an old range per peer this often

// Constant-time comparison: the time taken does not depend on where the strings differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

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
    case DropReason::Count: break;
  }
  return "?";
}

std::uint64_t ServerStats::total_drops() const {
  std::uint64_t n = 0;
  for (auto d : drops) n += d;
  return n;
}

struct ServerSession::Impl {
  enum class Phase { Lobby, Running, Draining, Closing, Finished };
  enum class Role { Pending, Player, Spectator };

  struct Peer {
    EnetPeer* enet = nullptr;  // null for an in-process peer (tests, fuzzing)
    std::uint32_t id = 0;
    Role role = Role::Pending;
    std::int32_t slot = -1;
    std::string name;
    std::int64_t connected_at = 0;
    std::int64_t join_rtt = 0;  // connection to its join request: about one round trip
    Tick frame_ack = 0;  // all frames up to here received by the client
    Tick hash_ack = 0;   // all hashes up to here received from the client
    std::vector<Tick> compared = std::vector<Tick>(kHistory);  // compared[t % kHistory] == t: tick t's hash is in
    std::int64_t frame_ack_moved = 0;  // when frame_ack last advanced
    std::int64_t hash_ack_moved = 0;   // when hash_ack last advanced (or the peer began to owe hashes)
    std::uint64_t divergent = 0;       // hashes of this peer that differed from the server's
    std::int64_t last_report_at = INT64_MIN / 2;  // when its last desync report was started
    std::int64_t last_gap_send = 0;    // when the range after frame_ack was last sent again
    bool desynced = false;
    bool closing = false;  // refused or timed out: ENet is closing it
    std::uint32_t epoch = 0;  // resyncs sent; hashes from older epochs are stale
    bool verifying = false;   // joined a running session: not counted until a hash matches
    Tick verify_tick = 0;     // the snapshot's tick
    double tokens = 0;        // message rate limit (token bucket)
    std::int64_t tokens_at = 0;
    std::uint32_t bad = 0;    // dropped messages so far
    // The desync being localized, one probe at a time.
    bool probing = false;
    DesyncReport report;
    wire::ProbeLevel level = wire::ProbeLevel::Blocks;
    std::uint32_t block_size = 0;
    std::int64_t probe_started = 0;
  };

  struct Slot {
    bool taken = false;     // a player holds this slot
    bool present = false;   // in the session on the last assembled tick
    bool leaving = false;   // disconnected or left: removed at the next tick boundary
    std::string leave_reason;
    std::uint32_t peer_id = 0;
    std::string name;
    std::array<Tick, kInputWindow> input_tick{};
    std::array<PlayerInput, kInputWindow> input{};
    Tick input_ack = 0;
    PlayerInput last;
    std::string secret;           // rejoin secret handed out at welcome
    bool return_pending = false;  // verified after a rejoin or late join: present from the next tick
    std::int64_t last_heard = 0;  // when this player's last message arrived
    // Input timing: how long before its tick's deadline each input first arrived.
    Tick input_seen = 0;                             // the newest input tick seen
    std::array<std::int64_t, kInputWindow> input_arrived{};  // by tick: when that input first arrived
    std::int32_t slack_us = 0;                       // slack of the newest input first seen ...
    Tick slack_tick = 0;                             // ... and its tick (0: none yet)
    std::int32_t lead_us = 0;                        // as the client reports it
    PeerNet net;                                     // ENet's figures of its connection, kept past its end
    Tick hashes_checked = 0;                         // its hashes compared with the server's up to here
    // Network figures: fills by cause and the input latency estimate.
    std::uint64_t fills_late = 0, fills_lost = 0, fills_silent = 0;
    Histogram latency;  // first arrival -> execution, plus the round trip, microseconds
  };

  ServerConfig cfg;
  std::unique_ptr<NetHost> host;
  std::unique_ptr<Simulation> sim;
  Phase phase = Phase::Lobby;
  std::map<std::uint32_t, Peer> peers;  // by id; ordered, so broadcasts go out in a fixed order
  std::uint32_t next_peer_id = 1;
  std::uint32_t peak_peers = 0;
  std::vector<Slot> slots;
  std::vector<InputFrame> frames = std::vector<InputFrame>(kHistory);
  std::vector<std::uint64_t> hashes = std::vector<std::uint64_t>(kHistory);
  std::vector<InputFrame> batch_scratch;  // frames of one outgoing message, reused
  Tick next_tick = 1;
  Tick first_input_tick = 1;
  Pacer pacer;  // only its schedule is used here; waiting is the caller's
  std::int64_t phase_deadline = 0;
  std::int64_t last_resend = 0;
  std::int64_t last_overload_log = 0;
  bool stop_requested = false;
  int exit = 0;
  ServerStats stats;
  std::vector<DesyncEvent> desync_events;
  std::vector<DesyncReport> reports;
  std::unique_ptr<StateHistory> history;
  std::unique_ptr<Simulation> scratch;  // a past state, loaded to answer probes
  HashLogWriter* hash_log = nullptr;
  std::function<void(const InputFrame&, std::uint64_t)> tick_fn;

  Tick executed() const { return next_tick - 1; }

  // Steady play: nobody joining, being probed or verified, and ENet has nothing reliable to
  // deliver. Then every message can wait for the next tick's deadline.
  bool quiet() const {
    for (const auto& [id, p] : peers)
      if (p.role == Role::Pending || p.probing || p.verifying || p.closing) return false;
    return !host->reliable_in_flight();
  }

  void drop(Peer& p, DropReason r, const char* detail = "") {
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

  void send(Peer& p, Channel ch, const protocol::Bytes& bytes) { host->send(p.enet, ch, bytes); }
  void broadcast(Channel ch, const protocol::Bytes& bytes) {
    for (auto& [id, p] : peers)
      if (p.role != Role::Pending) send(p, ch, bytes);
  }

  std::uint32_t joined_players() const {
    std::uint32_t n = 0;
    for (const Slot& s : slots) n += s.taken ? 1u : 0u;
    return n;
  }
  std::uint32_t players_and_spectators() const {
    std::uint32_t n = 0;
    for (const auto& [id, p] : peers) n += p.role != Role::Pending ? 1u : 0u;
    return n;
  }
  std::uint32_t spectators() const {
    std::uint32_t n = 0;
    for (const auto& [id, p] : peers) n += p.role == Role::Spectator ? 1u : 0u;
    return n;
  }

  // ---- incoming ----

  void on_connect(EnetPeer* enet, std::int64_t now) {
    std::uint32_t pending = 0;
    for (const auto& [pid, q] : peers) pending += q.role == Role::Pending ? 1u : 0u;
    if (pending >= cfg.max_pending) {
      ++stats.pending_refused;
      if (stats.pending_refused <= kLogFirstDrops || stats.pending_refused % 1000 == 0)
        LOCKSTEP_LOG_WARN("refused a connection from %s: %u connections are already waiting to join",
                          peer_address(enet).c_str(), pending);
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
    auto& added = peers.emplace(id, std::move(p)).first->second;
    if (peer_channel_count(enet) < kChannelCount)
      refuse(added, wire::RefuseReason::TooFewChannels,
             "the connection opened " + std::to_string(peer_channel_count(enet)) + " ENet channel(s); the protocol uses " +
                 std::to_string(kChannelCount) + " (0 control, 1 play)");
  }

  void on_disconnect(EnetPeer* enet) {
    const auto it = peers.find(static_cast<std::uint32_t>(peer_tag(enet)));
    if (it == peers.end()) return;
    Peer& p = it->second;
    if (p.role == Role::Player) {
      Slot& s = slots[static_cast<std::size_t>(p.slot)];
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

  // Drops a peer that broke a limit; everyone else plays on.
  void kick(Peer& p, const std::string& reason) {
    if (p.closing) return;
    ++stats.kicked;
    LOCKSTEP_LOG_WARN("dropping %s (%s): %s", peer_address(p.enet).c_str(), p.name.empty() ? "not joined" : p.name.c_str(),
                      reason.c_str());
    if (p.role == Role::Player) {
      Slot& s = slots[static_cast<std::size_t>(p.slot)];
      s.leaving = true;
      s.leave_reason = "dropped: " + reason;
    }
    send(p, Channel::Control, protocol::kick(reason));  // reliable, so it arrives before the disconnect
    p.closing = true;
    peer_disconnect_later(p.enet);
  }

  // Rejoin secrets come from the OS's random source: they guard a seat, not the simulation.
  static std::string new_secret() {
    std::random_device rd;
    char buf[33];
    for (int i = 0; i < 4; ++i) std::snprintf(buf + 8 * i, 9, "%08x", static_cast<unsigned>(rd()));
    return std::string(buf, 32);
  }

  bool peer_connected(std::uint32_t id) const { return peers.count(id) != 0; }

  // A slot a late joiner may take: nobody holds it and it is out of the session.
  bool vacant(const Slot& s) const {
    return !s.taken || (!s.present && !s.return_pending && !peer_connected(s.peer_id));
  }

  void send_snapshot(Peer& p, bool join) {
    std::vector<std::uint8_t> state;
    sim->serialize(state);
    for (const auto& chunk : protocol::snapshot(executed(), p.epoch, sim->hash(), state, join)) send(p, Channel::Control, chunk);
    stats.last_snapshot_bytes = static_cast<std::int64_t>(state.size());
    host->flush();
  }

  // Brings a player into a running session: welcome, the tick clock, then the current state.
  // The slot counts again only once the player's first hash after the snapshot matches.
  void admit_running(Peer& p, std::size_t slot, const std::string& name, bool rejoin) {
    Slot& s = slots[slot];
    if (!rejoin) {
      s = Slot{};  // a new player: its disc joins the session once verified; the old secret is void
      s.secret = new_secret();
    }
    s.taken = true;
    s.leaving = false;
    s.name = name;
    s.peer_id = p.id;
    s.last_heard = now_cache;
    s.input_ack = std::max(s.input_ack, executed());
    p.role = Role::Player;
    p.slot = static_cast<std::int32_t>(slot);
    p.name = name;
    p.verifying = true;
    p.verify_tick = executed();
    p.frame_ack = executed();
    p.hash_ack = executed();
    ++stats.joins_running;
    send(p, Channel::Control,
         protocol::welcome(p.slot, cfg.input_delay, cfg.last_tick, cfg.world, roster(), s.secret, /*joining=*/true));
    send_start(p);
    send_snapshot(p, /*join=*/true);
    peak_peers = std::max(peak_peers, players_and_spectators());
    LOCKSTEP_LOG_INFO("player %zu (%s) %s at tick %u from %s: sent a %lld-byte snapshot", slot, name.c_str(),
                      rejoin ? "rejoins" : "joins late", executed(), peer_address(p.enet).c_str(),
                      static_cast<long long>(stats.last_snapshot_bytes));
  }

  void free_slot(std::size_t slot) {
    slots[slot] = Slot{};
    broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(slot), next_tick, "left"));
  }

  void refuse(Peer& p, wire::RefuseReason reason, const std::string& detail) {
    ++stats.refused;
    ++stats.refusals[std::min<std::size_t>(static_cast<std::size_t>(reason), stats.refusals.size() - 1)];
    LOCKSTEP_LOG_INFO("refused %s: %s", peer_address(p.enet).c_str(), detail.c_str());
    send(p, Channel::Control, protocol::refuse(reason, detail));
    peer_disconnect_later(p.enet);
    p.role = Role::Pending;
    p.closing = true;
  }

  void on_join(Peer& p, const wire::JoinRequest& m) {
    if (p.join_rtt == 0) p.join_rtt = std::max<std::int64_t>(1, arrived_cache - p.connected_at);
    using R = wire::RefuseReason;
    if (p.role != Role::Pending || p.closing) return drop(p, DropReason::UnexpectedMessage, " (second join)");
    const std::string name = m.name() ? m.name()->str() : "";
    const std::string token = m.token() ? m.token()->str() : "";
    if (m.protocol_version() != kProtocolVersion)
      return refuse(p, R::WrongVersion, "protocol version " + std::to_string(m.protocol_version()) +
                                            " is not this server's version " + std::to_string(kProtocolVersion));
    if (m.fingerprint() != sim->fingerprint())
      return refuse(p, R::WrongFingerprint, "simulation fingerprint " + hash_hex(m.fingerprint()) +
                                                " differs from the server's " + hash_hex(sim->fingerprint()));
    if (!same_secret(token, cfg.token)) return refuse(p, R::WrongToken, "wrong join token");
    if (!protocol::valid_name(name)) return refuse(p, R::BadRequest, "a name must be 1-32 printable ASCII characters");
    if (m.spectate()) {
      if (spectators() >= cfg.max_spectators) return refuse(p, R::Full, "no spectator seats left");
      p.role = Role::Spectator;
      p.name = name;
      send(p, Channel::Control, protocol::welcome(-1, cfg.input_delay, cfg.last_tick, cfg.world, roster(), "",
                                                  phase != Phase::Lobby));
      if (phase != Phase::Lobby) {
        p.frame_ack = p.hash_ack = executed();
        send_start(p);
        send_snapshot(p, /*join=*/true);
      }
      LOCKSTEP_LOG_INFO("spectator %s joined from %s", name.c_str(), peer_address(p.enet).c_str());
      peak_peers = std::max(peak_peers, players_and_spectators());
      return;
    }
    const std::string secret = m.rejoin_secret() ? m.rejoin_secret()->str() : "";
    if (!secret.empty()) {
      for (std::size_t i = 0; i < slots.size(); ++i) {
        Slot& s = slots[i];
        if (!s.taken || s.secret.empty() || !same_secret(secret, s.secret)) continue;
        if (phase == Phase::Lobby) return refuse(p, R::BadRequest, "the session has not started: join normally");
        // The old connection may not have timed out yet: the holder of the secret wins.
        if (s.peer_id != p.id) {
          if (const auto old = peers.find(s.peer_id); old != peers.end()) {
            LOCKSTEP_LOG_INFO("player %zu (%s) is back; closing its old connection", i, s.name.c_str());
            peer_disconnect_now(old->second.enet);
            peers.erase(old);
          }
        }
        return admit_running(p, i, name, /*rejoin=*/true);
      }
      return refuse(p, R::BadRequest, "unknown rejoin secret");
    }
    if (phase != Phase::Lobby) {
      const bool any_vacant = std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return vacant(s); });
      if (!cfg.allow_late_join && any_vacant)
        return refuse(p, R::AlreadyStarted, "the session has already started (late joins are off)");
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (vacant(slots[i])) return admit_running(p, i, name, /*rejoin=*/false);
      return refuse(p, R::Full, "all " + std::to_string(cfg.players) + " player slots are taken");
    }
    std::size_t slot = 0;
    while (slot < slots.size() && slots[slot].taken) ++slot;
    if (slot == slots.size()) return refuse(p, R::Full, "all " + std::to_string(cfg.players) + " player slots are taken");
    Slot& s = slots[slot];
    s.taken = true;
    s.name = name;
    s.secret = new_secret();
    s.peer_id = p.id;
    p.role = Role::Player;
    p.slot = static_cast<std::int32_t>(slot);
    p.name = name;
    send(p, Channel::Control, protocol::welcome(p.slot, cfg.input_delay, cfg.last_tick, cfg.world, roster(), s.secret));
    broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(slot), name));
    peak_peers = std::max(peak_peers, players_and_spectators());
    LOCKSTEP_LOG_INFO("player %zu (%s) joined from %s [%u/%u]", slot, name.c_str(), peer_address(p.enet).c_str(),
                      joined_players(), cfg.players);
  }

  std::vector<protocol::Seat> roster() const {
    std::vector<protocol::Seat> r;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].taken) r.push_back({static_cast<std::uint32_t>(i), slots[i].name});
    return r;
  }

  void on_client_tick(Peer& p, const wire::ClientTick& m) {
    if (p.role == Role::Pending) return drop(p, DropReason::NotJoined);
    // Frame ack: what the client has, used to choose which frames to send again.
    if (m.frame_ack() > executed()) return drop(p, DropReason::FrameAckOutOfRange);
    if (m.frame_ack() > p.frame_ack) {
      p.frame_ack = m.frame_ack();
      p.frame_ack_moved = now_cache;
    }

    if (p.role == Role::Player) slots[static_cast<std::size_t>(p.slot)].last_heard = now_cache;
    if (p.role == Role::Player)
      slots[static_cast<std::size_t>(p.slot)].lead_us = std::clamp<std::int32_t>(m.lead_us(), 0, 10'000'000);
    if (p.role == Role::Player && m.inputs() && m.inputs()->size() > 0) {
      Slot& s = slots[static_cast<std::size_t>(p.slot)];
      const Tick first = m.input_first_tick();
      bool too_far = false;
      // The slack reported back is the worst of the inputs this message brought first (one
      // that was lost before arrives late here); the client's lead controller takes the lead
      // that input was sampled with out of it (see lead.hpp).
      const Tick seen_before = s.input_seen;
      std::int64_t worst = INT64_MAX;
      Tick worst_tick = 0;
      for (flatbuffers::uoffset_t i = 0; i < m.inputs()->size(); ++i) {
        const Tick t = first + i;
        if (t < first) continue;
        if (t >= next_tick + kInputWindow) { too_far = true; continue; }
        if (t > seen_before) {
          const std::int64_t slack = deadline_of(t) - arrived_cache;
          if (slack < worst) worst = slack, worst_tick = t;
        }
        s.input_seen = std::max(s.input_seen, t);
        if (t < next_tick) continue;  // already assembled: a redundant copy, or too late
        if (s.input_tick[t % kInputWindow] != t) s.input_arrived[t % kInputWindow] = arrived_cache;
        s.input_tick[t % kInputWindow] = t;
        s.input[t % kInputWindow] = PlayerInput::unpack(m.inputs()->Get(i));
      }
      if (worst_tick > s.slack_tick) {
        s.slack_us = static_cast<std::int32_t>(std::clamp<std::int64_t>(worst / 1000, -10'000'000, 10'000'000));
        s.slack_tick = worst_tick;
      }
      if (too_far) drop(p, DropReason::InputTooFarAhead);
      advance_input_ack(s);
    }

    if (m.hashes() && m.hashes()->size() > 0 && m.epoch() == p.epoch) {
      const Tick first = m.hash_first_tick();
      for (flatbuffers::uoffset_t i = 0; i < m.hashes()->size(); ++i) {
        const Tick t = first + i;
        if (t < first || t == 0) continue;
        if (t <= p.hash_ack || p.compared[t % kHistory] == t) continue;  // compared already
        if (t > executed()) { drop(p, DropReason::HashForFutureTick); break; }
        if (executed() - t >= kHistory) { drop(p, DropReason::HashTooOld); continue; }
        if (p.verifying) {
          if (t <= p.verify_tick) continue;
          if (!verify(p, t, m.hashes()->Get(i))) return;
        }
        compare_hash(p, t, m.hashes()->Get(i));
        p.compared[t % kHistory] = t;
      }
      // Hashes arrive newest first; the acknowledgement covers every one up to a gap.
      const Tick before = p.hash_ack;
      while (p.hash_ack < executed() && p.compared[(p.hash_ack + 1) % kHistory] == p.hash_ack + 1) ++p.hash_ack;
      if (p.hash_ack != before) p.hash_ack_moved = now_cache;
      if (p.role == Role::Player) slots[static_cast<std::size_t>(p.slot)].hashes_checked = p.hash_ack;
    }
  }

  // The first hash after a join snapshot decides: equal, and the player counts from the next tick.
  bool verify(Peer& p, Tick t, std::uint64_t theirs) {
    p.verifying = false;
    if (theirs != hashes[t % kHistory]) {
      kick(p, "its state after the snapshot does not match the server's at tick " + std::to_string(t));
      return false;
    }
    ++stats.verified;
    if (p.role == Role::Player) {
      Slot& s = slots[static_cast<std::size_t>(p.slot)];
      if (!s.present) s.return_pending = true;
    }
    LOCKSTEP_LOG_INFO("%s %d (%s) verified: its hash at tick %u matches the server's", 
                      p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(), t);
    return true;
  }

  /// Tick t's deadline on the server's schedule (monotonic ns).
  [[nodiscard]] std::int64_t deadline_of(Tick t) const {
    return pacer.next_deadline() + (static_cast<std::int64_t>(t) - static_cast<std::int64_t>(next_tick)) * kTickNs;
  }

  /// One player's network figures (summary and status).
  [[nodiscard]] protocol::SeatStatus seat_status(std::size_t i) const {
    const Slot& s = slots[i];
    protocol::SeatStatus st;
    st.slot = static_cast<std::uint32_t>(i);
    st.name = s.name;
    st.rtt_us = s.net.rtt_us;
    st.jitter_us = s.net.rtt_var_us;
    st.loss_ppm = s.net.loss_ppm;
    st.lead_us = s.lead_us;
    st.hashes_checked = s.hashes_checked;
    st.fills_late = static_cast<std::uint32_t>(s.fills_late);
    st.fills_lost = static_cast<std::uint32_t>(s.fills_lost);
    st.fills_silent = static_cast<std::uint32_t>(s.fills_silent);
    st.latency_p50_us = static_cast<std::uint32_t>(s.latency.percentile_us(50));
    st.latency_p99_us = static_cast<std::uint32_t>(s.latency.percentile_us(99));
    return st;
  }

  [[nodiscard]] std::vector<protocol::SeatStatus> seat_statuses() const {
    std::vector<protocol::SeatStatus> r;
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].taken) r.push_back(seat_status(i));
    return r;
  }

  void on_status(Peer& p) {
    if (p.role != Role::Pending || p.closing) return drop(p, DropReason::UnexpectedMessage, " (status from a joined peer)");
    static const char* const names[] = {"lobby", "running", "draining", "closing", "finished"};
    protocol::Status st;
    st.phase = names[static_cast<int>(phase)];
    st.tick = executed();
    st.players = cfg.players;
    st.joined = joined_players();
    st.active = active_players_count();
    st.spectators = spectators();
    st.desyncs = static_cast<std::uint32_t>(stats.desyncs);
    st.lateness_p99_us = static_cast<std::uint32_t>(stats.lateness.percentile_us(99));
    st.seats = seat_statuses();
    st.protocol_version = kProtocolVersion;
    st.fingerprint = sim->fingerprint();
    st.last_tick = cfg.last_tick;
    send(p, Channel::Control, protocol::status_reply(st));
    peer_disconnect_later(p.enet);
    p.closing = true;
  }

  void advance_input_ack(Slot& s) {
    while (s.input_tick[(s.input_ack + 1) % kInputWindow] == s.input_ack + 1 && s.input_ack + 1 < next_tick + kInputWindow)
      ++s.input_ack;
  }

  void compare_hash(Peer& p, Tick t, std::uint64_t client_hash) {
    ++stats.hashes_compared;
    const std::uint64_t ours = hashes[t % kHistory];
    if (client_hash == ours) return;
    // Every divergent tick counts; the first of a divergence (again after a resync) is reported,
    // at most one report per peer every 100 ms.
    ++stats.divergent_ticks;
    ++p.divergent;
    if (p.desynced || p.probing || now_cache - p.last_report_at < kReportIntervalNs) return;
    p.desynced = true;
    p.last_report_at = now_cache;
    if (p.role == Role::Spectator) ++stats.spectator_desyncs;
    else ++stats.desyncs;
    DesyncEvent ev{t, p.slot, p.name, ours, client_hash};
    desync_events.push_back(ev);
    LOCKSTEP_LOG_ERROR("DESYNC at tick %u: %s %d (%s) reports %s, the server has %s", t,
                       p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(),
                       hash_hex(client_hash).c_str(), hash_hex(ours).c_str());
    send(p, Channel::Control, protocol::desync_notice(t, p.slot, ours, client_hash));
    start_probe(p, t, ours, client_hash);
  }

  // ---- localizing a desync: blocks, then entities, then fields ----

  void send_probe(Peer& p, wire::ProbeLevel level, std::uint32_t first, std::uint32_t count) {
    p.level = level;
    const auto bytes = protocol::desync_probe(p.report.tick, level, first, count, p.block_size);
    p.report.probe_bytes += bytes.size();
    send(p, Channel::Control, bytes);
  }

  void start_probe(Peer& p, Tick t, std::uint64_t ours, std::uint64_t theirs) {
    p.report = DesyncReport{};
    p.report.tick = t;
    p.report.slot = p.slot;
    p.report.name = p.name;
    p.report.server_hash = ours;
    p.report.client_hash = theirs;
    p.report.replay_file = cfg.record_path;
    p.probing = true;
    p.probe_started = now_cache;
    if (!history->load(t, *scratch)) {
      p.report.note = "the server no longer holds tick " + std::to_string(t);
      return finish_probe(p);
    }
    std::vector<std::uint8_t> state;
    scratch->serialize(state);
    p.report.state_bytes = state.size();
    p.block_size = probe_block_size(scratch->entity_count());
    send_probe(p, wire::ProbeLevel::Blocks, 0, 0);
  }

  void on_detail(Peer& p, const wire::DesyncDetail& m, std::size_t size) {
    if (!p.probing || m.tick() != p.report.tick || m.level() != p.level)
      return drop(p, DropReason::UnexpectedMessage, " (unasked desync detail)");
    p.report.probe_bytes += size;
    if (!m.available()) {
      p.report.note = "the client no longer holds tick " + std::to_string(p.report.tick);
      return finish_probe(p);
    }
    if (!history->load(p.report.tick, *scratch)) {
      p.report.note = "the server no longer holds tick " + std::to_string(p.report.tick);
      return finish_probe(p);
    }
    const bool by_hash = m.level() == wire::ProbeLevel::Blocks || m.level() == wire::ProbeLevel::Entities;
    const auto* list = by_hash ? m.hashes() : m.values();
    std::vector<std::uint64_t> theirs;
    if (list) theirs.assign(list->begin(), list->end());
    switch (m.level()) {
      case wire::ProbeLevel::Blocks: {
        const std::int64_t b = first_difference(block_hashes(*scratch, p.block_size), theirs);
        if (b < 0) return send_probe(p, wire::ProbeLevel::Global, 0, 0);
        const auto first = static_cast<std::uint32_t>(b) * p.block_size;
        return send_probe(p, wire::ProbeLevel::Entities, first, p.block_size);
      }
      case wire::ProbeLevel::Entities: {
        const std::int64_t e = first_difference(entity_hashes(*scratch, m.first(), p.block_size), theirs);
        if (e < 0) return send_probe(p, wire::ProbeLevel::Global, 0, 0);
        return send_probe(p, wire::ProbeLevel::Fields, m.first() + static_cast<std::uint32_t>(e), 1);
      }
      case wire::ProbeLevel::Fields:
      case wire::ProbeLevel::Global: {
        const bool global = m.level() == wire::ProbeLevel::Global;
        if (!global && m.first() >= scratch->entity_count()) return drop(p, DropReason::FieldOutOfRange);
        const std::vector<FieldValue> ours = global ? scratch->global_fields() : scratch->entity_fields(m.first());
        p.report.where = global ? "global" : "entity";
        p.report.entity = global ? -1 : static_cast<std::int64_t>(m.first());
        for (std::size_t i = 0; i < ours.size(); ++i) {
          const std::uint64_t bits = i < theirs.size() ? theirs[i] : 0;
          if (bits == ours[i].bits) continue;
          p.report.server_fields.push_back(ours[i]);
          FieldValue c = ours[i];
          c.bits = bits;
          p.report.client_fields.push_back(c);
        }
        if (p.report.server_fields.empty()) p.report.note = "hashes differ but no field does";
        return finish_probe(p);
      }
    }
  }

  // Writes the report, then does what --on-desync asks.
  void finish_probe(Peer& p) {
    record_report(p);
    // A spectator's divergence is its own: stop drops that spectator, never the session.
    if (p.role == Role::Spectator && cfg.on_desync == OnDesync::Stop)
      return kick(p, "its state diverged from the server's at tick " + std::to_string(p.report.tick));
    switch (cfg.on_desync) {
      case OnDesync::Report: break;
      case OnDesync::Stop:
        end_session(wire::EndReason::Desync, "desync at tick " + std::to_string(p.report.tick) + " of player " +
                                                 std::to_string(p.report.slot) + " (" + p.report.name + ")");
        break;
      case OnDesync::Resync: resync(p); break;
    }
  }

  void record_report(Peer& p) {
    p.probing = false;
    DesyncReport& r = p.report;
    std::string error;
    const std::string path = write_report(r, cfg.desync_dir, &error);
    if (path.empty()) LOCKSTEP_LOG_ERROR("desync report: %s", error.c_str());
    if (!r.server_fields.empty())
      LOCKSTEP_LOG_ERROR("desync at tick %u localized: %s %lld field %s: server %s (%s), client %s (%s); %llu probe bytes, "
                         "state %llu bytes; report %s",
                         r.tick, r.where.c_str(), static_cast<long long>(r.entity), r.server_fields[0].name.c_str(),
                         field_hex(r.server_fields[0]).c_str(), field_decimal(r.server_fields[0]).c_str(),
                         field_hex(r.client_fields[0]).c_str(), field_decimal(r.client_fields[0]).c_str(),
                         static_cast<unsigned long long>(r.probe_bytes), static_cast<unsigned long long>(r.state_bytes),
                         path.c_str());
    else
      LOCKSTEP_LOG_ERROR("desync at tick %u not localized: %s; report %s", r.tick, r.note.c_str(), path.c_str());
    reports.push_back(r);
  }

  // Sends the authoritative current state; the client loads it and plays on from there.
  void resync(Peer& p) {
    ++p.epoch;
    ++stats.resyncs;
    send_snapshot(p, /*join=*/false);
    p.hash_ack = executed();
    p.desynced = false;
    LOCKSTEP_LOG_INFO("resync: sent %s the state of tick %u (%lld bytes)", p.name.c_str(), executed(),
                      static_cast<long long>(stats.last_snapshot_bytes));
  }

  void on_receive(NetEvent& ev) {
    // Input slack counts from when the datagram reached the socket, not from when it was read.
    arrived_cache = ev.arrived_ns > 0 && ev.arrived_ns <= now_cache ? ev.arrived_ns : now_cache;
    const auto it = peers.find(static_cast<std::uint32_t>(peer_tag(ev.peer)));
    if (it != peers.end()) receive(it->second, ev.data, ev.channel);
  }

  void receive(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel) {
    if (p.closing) return;
    // Token bucket: a sustained rate and a burst; a peer above it is flooding.
    p.tokens = std::min(cfg.message_burst, p.tokens + static_cast<double>(now_cache - p.tokens_at) * 1e-9 * cfg.max_messages_per_second);
    p.tokens_at = now_cache;
    if ((p.tokens -= 1.0) < 0.0) return kick(p, "sent more than " + std::to_string(static_cast<int>(cfg.max_messages_per_second)) +
                                                 " messages a second");
    protocol::DecodeError err;
    const wire::Message* m = protocol::decode(data, &err, protocol::kMaxDetailMessageBytes);
    if (!m) {
      const DropReason r = err == protocol::DecodeError::TooLarge         ? DropReason::TooLarge
                           : err == protocol::DecodeError::FieldOutOfRange ? DropReason::FieldOutOfRange
                                                                           : DropReason::Malformed;
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
    // Play traffic on the play channel, everything else on the control channel.
    const auto want = m->body_type() == wire::Body::ClientTick ? Channel::Play : Channel::Control;
    if (channel != static_cast<std::uint8_t>(want)) return drop(p, DropReason::WrongChannel);
    switch (m->body_type()) {
      case wire::Body::JoinRequest: return on_join(p, *m->body_as_JoinRequest());
      case wire::Body::ClientTick: return on_client_tick(p, *m->body_as_ClientTick());
      case wire::Body::StatusRequest: return on_status(p);
      case wire::Body::DesyncDetail: return on_detail(p, *m->body_as_DesyncDetail(), data.size());
      case wire::Body::Leave:
        if (p.role == Role::Player) {
          Slot& s = slots[static_cast<std::size_t>(p.slot)];
          s.leaving = true;
          s.leave_reason = "left";
        }
        return;
      default: return drop(p, DropReason::UnexpectedMessage);
    }
  }

  // ---- the session clock ----

  void send_start(Peer& p, Channel channel = Channel::Control) {
    // Tell the time to tick 0's deadline; a peer joining later gets the same origin.
    const std::int64_t origin = pacer.next_deadline() - static_cast<std::int64_t>(next_tick) * kTickNs;
    const std::int64_t in = std::max<std::int64_t>(0, origin - now_cache);
    send(p, channel, protocol::start(0, static_cast<std::uint32_t>(std::min<std::int64_t>(in / 1000, 10'000'000))));
  }

  // Until tick 1, Start also goes out unreliably every kStartRepeatNs: a reliable Start waits
  // behind any lost reliable message before it, and a client's clock (and with it when its first
  // inputs are sampled) takes the earliest-arriving copy. Returns when to send again.
  std::int64_t repeat_start(std::int64_t now) {
    if (now - last_start_send >= kStartRepeatNs) {
      last_start_send = now;
      for (auto& [id, p] : peers)
        if (p.role != Role::Pending && !p.closing) send_start(p, Channel::Play);
      host->flush();
    }
    return last_start_send + kStartRepeatNs;
  }
  std::int64_t last_start_send = INT64_MIN / 2;
  std::int64_t final_acks_from = 0;  // when every final hash was in (0: not yet)
  std::int64_t last_lobby_beat = 0;  // when the lobby's last heartbeat went out
  std::int64_t start_delay = 0;  // from "everyone is in" to tick 0's deadline, this session
  std::int64_t now_cache = 0;
  std::int64_t arrived_cache = 0;  // when the message being handled reached the socket
  bool receive_can_wait = false;   // see ServerSession::receive_can_wait()

  void begin(std::int64_t now) {
    phase = Phase::Running;
    // Start must reach the farthest player, and its first inputs come back, before the first
    // tick that takes inputs: the delay grows with the longest join round trip (plus a quarter
    // and 50 ms for jitter), up to kMaxStartDelayNs.
    std::int64_t longest = 0;
    for (const auto& [id, p] : peers)
      if (p.role == Role::Player)
        longest = std::max({longest, p.join_rtt, p.enet ? std::int64_t{peer_net(p.enet).rtt_us} * 1000 : 0});
    start_delay = std::clamp(longest + longest / 4 + 50'000'000 - std::int64_t{cfg.input_delay} * kTickNs,
                             cfg.start_delay_ns, std::max(cfg.start_delay_ns, kMaxStartDelayNs));
    const std::int64_t origin = now + start_delay;  // tick 0's deadline
    pacer.start(origin + kTickNs);                         // the first deadline is tick 1's
    first_input_tick = std::max<Tick>(1, cfg.input_delay);
    for (Slot& s : slots) {
      s.present = s.taken;
      s.last_heard = now + start_delay;
    }
    for (auto& [id, p] : peers)
      if (p.role != Role::Pending) send_start(p);
    LOCKSTEP_LOG_INFO("session starting in %lld ms: %u players, seed %llu, %u bodies, input delay %u, %s",
                      static_cast<long long>(start_delay / 1'000'000), cfg.players,
                      static_cast<unsigned long long>(cfg.world.seed), cfg.world.bodies, cfg.input_delay,
                      cfg.last_tick ? ("until tick " + std::to_string(cfg.last_tick)).c_str() : "until stopped");
  }

  bool inputs_complete(Tick t) const {
    if (t < first_input_tick) return true;
    for (const Slot& s : slots)
      if (s.taken && s.present && !s.leaving && s.input_tick[t % kInputWindow] != t) return false;
    return true;
  }

  void assemble_and_step(std::int64_t now) {
    const Tick t = next_tick;
    for (const auto& [id, p] : peers)
      if (p.role == Role::Player && p.enet) slots[static_cast<std::size_t>(p.slot)].net = peer_net(p.enet);
    InputFrame f;
    f.tick = t;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      Slot& s = slots[i];
      if (s.taken && s.leaving && s.present) {
        s.present = false;
        broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(i), t, s.leave_reason));
        LOCKSTEP_LOG_INFO("player %zu (%s) is out of the session from tick %u", i, s.name.c_str(), t);
      }
      if (s.taken && s.return_pending) {
        s.return_pending = false;
        s.present = true;
        s.last = PlayerInput{};
        broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(i), s.name));
        LOCKSTEP_LOG_INFO("player %zu (%s) is in the session again from tick %u", i, s.name.c_str(), t);
      }
      if (!s.taken || !s.present) continue;
      f.present |= 1u << i;
      if (t < first_input_tick) continue;  // before the first sampled input: neutral
      if (s.input_tick[t % kInputWindow] == t) {
        s.last = s.input[t % kInputWindow];
        s.latency.add_us((now - s.input_arrived[t % kInputWindow]) / 1000 + s.net.rtt_us);
      } else {
        // Why: nothing heard for a while (silent), newer inputs came but not this one (lost),
        // or nothing this new has come yet (late: its lead is too short for its round trip).
        f.filled |= 1u << i;
        ++stats.filled_inputs;
        if (now - s.last_heard > kSilentFillNs) ++s.fills_silent;
        else if (s.input_seen > t) ++s.fills_lost;
        else ++s.fills_late;
      }
      f.inputs[i] = s.last;
      s.input_ack = std::max(s.input_ack, t);  // tick t is settled either way
      advance_input_ack(s);
    }
    sim->step(f);
    const std::uint64_t h = sim->hash();
    history->record(*sim);
    frames[t % kHistory] = f;
    hashes[t % kHistory] = h;
    ++next_tick;
    ++stats.ticks;
    if (stats.first_tick_ns == 0) stats.first_tick_ns = now;
    if (t == kSteadyTick) stats.steady_tick_ns = now;
    stats.last_tick_ns = now;
    stats.lateness.add_us((now - pacer.next_deadline()) / 1000);
    const std::uint64_t skipped_before = pacer.stats().skipped;
    // Waiting up to the grace for a late input is the schedule, not falling behind: only time
    // past that counts, so the clock moves later only when the server's own work is too slow.
    pacer.reached(now - cfg.input_grace_ns);
    if (pacer.stats().skipped != skipped_before && now - last_overload_log > 1'000'000'000) {
      last_overload_log = now;
      LOCKSTEP_LOG_WARN("cannot keep up: the server's own work fell more than %d ticks behind and slowed the "
                        "session clock (%llu ticks skipped so far; lateness p50 %.0f us, p99 %.0f us, max %lld us)",
                        PacerConfig{}.max_catch_up, static_cast<unsigned long long>(pacer.stats().skipped),
                        stats.lateness.percentile_us(50), stats.lateness.percentile_us(99),
                        static_cast<long long>(stats.lateness.max_us()));
    }
    if (hash_log) hash_log->write(t, h);
    if (tick_fn) tick_fn(f, h);
    if (t % (10 * kTickRate) == 0)
      LOCKSTEP_LOG_INFO("tick %u hash %s players %u filled %llu desyncs %llu", t, hash_hex(h).c_str(),
                        active_players_count(), static_cast<unsigned long long>(stats.filled_inputs),
                        static_cast<unsigned long long>(stats.desyncs));
  }

  std::uint32_t active_players_count() const {
    std::uint32_t n = 0;
    for (const Slot& s : slots) n += (s.taken && s.present && !s.leaving) ? 1u : 0u;
    return n;
  }

  void send_frames() {
    for (auto& [id, p] : peers) {
      if (p.role == Role::Pending) continue;
      const Tick from = p.frame_ack + 1;
      if (from > executed()) {
        // Nothing new: still acknowledge inputs and hashes, so the client trims its window.
        if (p.role == Role::Player || p.hash_ack > 0)
          send(p, Channel::Play, server_tick_for(p, {}));
        continue;
      }
      if (executed() - from >= kHistory - 1) {
        kick(p, "fell more than " + std::to_string(kHistory) + " ticks behind the session");
        continue;
      }
      // The newest frames go out in every message, so each is carried kMaxWindow times and a far
      // client's newest frame never waits behind older ones still in flight. When the
      // acknowledgement has stood still for a round trip and more, the range after it goes out
      // again too: a frame lost in every copy.
      const auto window = static_cast<Tick>(protocol::kMaxWindow);
      const Tick newest_from = executed() >= window ? std::max(from, executed() - window + 1) : from;
      send_range(p, newest_from, executed());
      const std::int64_t rtt_ns = p.enet ? std::int64_t{peer_rtt_ms(p.enet)} * 1'000'000 : 0;
      if (newest_from > from && now_cache - p.frame_ack_moved > rtt_ns + kGapResendNs &&
          now_cache - p.last_gap_send > kGapResendNs) {
        p.last_gap_send = now_cache;
        send_range(p, from, std::min<Tick>(executed(), from + window - 1));
      }
    }
  }

  void send_range(Peer& p, Tick from, Tick to) {
    batch_scratch.clear();
    for (Tick t = from; t <= to; ++t) batch_scratch.push_back(frames[t % kHistory]);
    send(p, Channel::Play, server_tick_for(p, batch_scratch));
  }


  protocol::Bytes server_tick_for(const Peer& p, std::span<const InputFrame> batch) const {
    // Clients time their inputs by this server's tick clock, so they are told when it moves.
    const auto shift = static_cast<std::uint32_t>(std::min<std::uint64_t>(pacer.stats().skipped, UINT32_MAX));
    if (p.role != Role::Player) return protocol::server_tick(batch, cfg.players, 0, p.hash_ack, 0, 0, shift);
    const Slot& s = slots[static_cast<std::size_t>(p.slot)];
    return protocol::server_tick(batch, cfg.players, s.input_ack, p.hash_ack, s.slack_us, s.slack_tick, shift);
  }

  void end_session(wire::EndReason reason, const std::string& detail) {
    if (phase == Phase::Closing || phase == Phase::Finished) return;
    for (auto& [id, p] : peers)
      if (p.probing) {  // reports still open are written, nothing more
        p.report.note = "the session ended before the desync was localized";
        record_report(p);
      }
    LOCKSTEP_LOG_INFO("session over at tick %u: %s", executed(), detail.c_str());
    broadcast(Channel::Control, protocol::session_end(reason, executed(), detail));
    for (auto& [id, p] : peers) peer_disconnect_later(p.enet);
    host->flush();
    phase = Phase::Closing;
    phase_deadline = now_cache + cfg.close_timeout_ns;
    if (reason == wire::EndReason::Desync || stats.desyncs > 0) exit = 3;
    for (const auto& [id, p] : peers)
      if (p.role == Role::Player && p.hash_ack < executed())
        LOCKSTEP_LOG_WARN("player %d (%s): hashes checked only up to tick %u of %u: not counted as in sync", p.slot,
                          p.name.c_str(), p.hash_ack, executed());
  }

  bool all_hashes_in() const {
    for (const auto& [id, p] : peers)
      // Players owe their final hashes; a spectator is waited for only if it reports any.
      if (p.role != Role::Pending && !p.closing && (p.role == Role::Player || p.hash_ack > 0) &&
          (p.hash_ack < cfg.last_tick || p.probing))
        return false;
    return true;
  }

  std::int64_t update(std::int64_t now) {
    now_cache = now;
    receive_can_wait = false;
    for (NetEvent ev = host->poll(); ev.type != NetEvent::Type::None; ev = host->poll()) {
      switch (ev.type) {
        case NetEvent::Type::Connect: on_connect(ev.peer, now); break;
        case NetEvent::Type::Disconnect: on_disconnect(ev.peer); break;
        case NetEvent::Type::Receive: on_receive(ev); break;
        case NetEvent::Type::None: break;
      }
      if (phase == Phase::Finished) return now;
    }
    // Connections that never send a join are closed.
    for (auto& [id, p] : peers)
      if (p.role == Role::Pending && !p.closing && now - p.connected_at > cfg.join_timeout_ns) {
        LOCKSTEP_LOG_WARN("%s sent no join within %lld ms; disconnecting", peer_address(p.enet).c_str(),
                          static_cast<long long>(cfg.join_timeout_ns / 1'000'000));
        peer_disconnect_later(p.enet);
        p.closing = true;
      }
    // A joined peer from which nothing at all has arrived for the silence bound, not even ENet's
    // acknowledgements, is gone; in play a player is held to more: its messages must keep coming.
    for (auto& [id, p] : peers) {
      if (p.role == Role::Pending || p.closing) continue;
      const bool gone = p.enet && now - std::max(p.connected_at, host->heard_ns(p.enet)) > cfg.silent_drop_ns;
      const bool mute = phase == Phase::Running && p.role == Role::Player &&
                        now - slots[static_cast<std::size_t>(p.slot)].last_heard > cfg.silent_drop_ns;
      if (gone || mute) {
        kick(p, "silent for " + std::to_string(cfg.silent_drop_ns / 1'000'000) + " ms");
        continue;
      }
      // A player in play must report its state hashes: one whose hashes stop is reported and dropped.
      if (phase == Phase::Running && p.role == Role::Player && !p.verifying && executed() > p.hash_ack + kHashSlackTicks) {
        if (p.hash_ack_moved == 0) p.hash_ack_moved = now;  // owes hashes from now
        if (now - p.hash_ack_moved > cfg.hash_silence_ns) {
          ++stats.hash_silences;
          LOCKSTEP_LOG_ERROR("hash silence: player %d (%s) reported no state hash past tick %u for %lld ms", p.slot,
                             p.name.c_str(), p.hash_ack, static_cast<long long>(cfg.hash_silence_ns / 1'000'000));
          kick(p, "hash silence: no state hashes for " + std::to_string(cfg.hash_silence_ns / 1'000'000) +
                      " ms; every player must report one per tick");
        }
      } else if (p.role == Role::Player) {
        p.hash_ack_moved = now;
      }
    }
    for (auto& [id, p] : peers)
      if (p.probing && now - p.probe_started > cfg.probe_timeout_ns) {
        p.report.note = "the client did not answer the desync probe in time";
        finish_probe(p);
      }
    if (stop_requested && phase != Phase::Closing && phase != Phase::Finished)
      end_session(wire::EndReason::Stopped, "stopped by the operator");

    switch (phase) {
      case Phase::Lobby:
        if (joined_players() == cfg.players) begin(now);
        else {
          // A heartbeat on the play channel while the lobby waits: ENet sends no pings while a
          // reliable message is being resent, and on a lossy path its resends back off for seconds.
          if (now - last_lobby_beat >= kLobbyBeatNs) {
            last_lobby_beat = now;
            for (auto& [id, p] : peers)
              if (p.role != Role::Pending && !p.closing) send(p, Channel::Play, server_tick_for(p, {}));
            host->flush();
          }
          return now + kLobbyBeatNs;
        }
        [[fallthrough]];
      case Phase::Running: {
        int ran = 0;
        while (phase == Phase::Running && ran < kMaxTicksPerUpdate) {
          const std::int64_t deadline = pacer.next_deadline();
          if (now < deadline) break;
          if (!inputs_complete(next_tick) && now < deadline + cfg.input_grace_ns) break;
          assemble_and_step(now);
          ++ran;
          if (cfg.last_tick != 0 && executed() >= cfg.last_tick) {
            phase = Phase::Draining;
            phase_deadline = now + cfg.drain_timeout_ns;
          }
        }
        if (ran > 0) {
          send_frames();
          host->flush();  // out now, not at the next poll
        }
        if (phase == Phase::Running && joined_players() > 0 && active_players_count() == 0 && ran > 0)
          end_session(wire::EndReason::Empty, "every player left");
        if (phase == Phase::Running) {
          const std::int64_t deadline = pacer.next_deadline();
          if (ran == kMaxTicksPerUpdate) return now;
          if (now >= deadline) return deadline + cfg.input_grace_ns;  // waiting for late inputs: read them as they come
          receive_can_wait = quiet();
          if (next_tick == 1) return std::min(deadline, repeat_start(now));
          return deadline;
        }
        last_resend = now;
        return now;
      }
      case Phase::Draining:
        // Once every final hash is in, its acknowledgement goes out every tick for kFinalAckNs
        // before the end message: a client that has it knows the session is complete even if
        // the end message never reaches it (a lossy path, a server gone after its close timeout).
        if (all_hashes_in() && final_acks_from == 0) final_acks_from = now;
        if ((final_acks_from != 0 && now - final_acks_from >= kFinalAckNs) || now >= phase_deadline) {
          if (!all_hashes_in()) LOCKSTEP_LOG_WARN("some clients did not report their final hashes in time");
          send_frames();
          end_session(wire::EndReason::Complete, "reached the last tick " + std::to_string(cfg.last_tick));
          return now + 10'000'000;
        }
        if (now - last_resend >= kTickNs) {
          send_frames();
          host->flush();
          last_resend = now;
        }
        return now + kTickNs / 2;
      case Phase::Closing:
        if (peers.empty() || now >= phase_deadline) {
          host->flush();
          phase = Phase::Finished;
          return now;
        }
        return now + 10'000'000;
      case Phase::Finished: return now + 1'000'000'000;
    }
    return now;
  }
};

std::unique_ptr<ServerSession> ServerSession::create(const ServerConfig& config, std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<ServerSession> {
    if (error) *error = why;
    return nullptr;
  };
  if (config.players < 1 || config.players > static_cast<std::uint32_t>(kMaxPlayers)) return fail("--players must be 1..32");
  if (config.input_delay > protocol::kMaxInputDelay) return fail("--input-delay must be 0..50");
  if (config.token.size() > protocol::kMaxTokenBytes) return fail("--token must be at most 128 bytes");
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->cfg.world.players = config.players;
  impl->sim = config.factory(impl->cfg.world);
  if (!impl->sim) return fail("the world parameters are out of range");
  std::string err;
  impl->host = NetHost::listen(config.bind, config.port, config.players + config.max_spectators + 16, config.limits, &err);
  if (!impl->host) return fail(err);
  impl->slots.resize(config.players);
  impl->hashes[0] = impl->sim->hash();
  impl->history = std::make_unique<StateHistory>(std::max<std::size_t>(1, config.state_history));
  impl->history->record(*impl->sim);
  impl->scratch = impl->sim->clone();
  return std::unique_ptr<ServerSession>(new ServerSession(std::move(impl)));
}

ServerSession::ServerSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServerSession::~ServerSession() = default;
std::int64_t ServerSession::update(std::int64_t now_ns) { return impl_->update(now_ns); }
int ServerSession::fd() const { return impl_->host->fd(); }
std::uint16_t ServerSession::port() const { return impl_->host->port(); }
void ServerSession::stop() { impl_->stop_requested = true; }
bool ServerSession::finished() const { return impl_->phase == Impl::Phase::Finished; }
int ServerSession::exit_code() const { return impl_->exit; }
Tick ServerSession::executed_tick() const { return impl_->executed(); }
const Simulation& ServerSession::simulation() const { return *impl_->sim; }
const ServerStats& ServerSession::stats() const { return impl_->stats; }
std::vector<protocol::SeatStatus> ServerSession::seats() const { return impl_->seat_statuses(); }
const NetHost& ServerSession::host() const { return *impl_->host; }
const std::vector<DesyncEvent>& ServerSession::desyncs() const { return impl_->desync_events; }
const std::vector<DesyncReport>& ServerSession::reports() const { return impl_->reports; }
std::vector<std::string> ServerSession::player_names() const {
  std::vector<std::string> names;
  for (const auto& s : impl_->slots) names.push_back(s.name);
  return names;
}
const ServerConfig& ServerSession::config() const { return impl_->cfg; }
bool ServerSession::receive_can_wait() const { return impl_->receive_can_wait; }
std::uint32_t ServerSession::attach_test_peer(std::int64_t now_ns) {
  Impl& m = *impl_;
  const std::uint32_t id = m.next_peer_id++;
  Impl::Peer p;
  p.id = id;
  p.connected_at = now_ns;
  p.tokens = m.cfg.message_burst;
  p.tokens_at = now_ns;
  m.peers.emplace(id, std::move(p));
  return id;
}
void ServerSession::receive_for_test(std::uint32_t peer, std::span<const std::uint8_t> bytes, std::uint8_t channel) {
  impl_->arrived_cache = impl_->now_cache;
  if (auto it = impl_->peers.find(peer); it != impl_->peers.end()) impl_->receive(it->second, bytes, channel);
}
std::uint32_t ServerSession::peak_peers() const { return impl_->peak_peers; }
std::uint32_t ServerSession::active_players() const { return impl_->active_players_count(); }
void ServerSession::on_tick(std::function<void(const InputFrame&, std::uint64_t)> fn) { impl_->tick_fn = std::move(fn); }
void ServerSession::set_hash_log(HashLogWriter* log) { impl_->hash_log = log; }

}  // namespace lockstep
