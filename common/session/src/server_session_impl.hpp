// ServerSession's insides: the state the session wires its parts with, and the functions of its
// files, each section headed by the file that defines them:
//   server_session.cpp    the phase machine (lobby, running, draining, closing), messages in
//   server_session_api.cpp  create() and its config checks, the public API
//   server_admission.cpp  connections, room for new ones, connect tokens, joins, seats, refusals, kicks, status
//   server_ticks.cpp      inputs in, each tick's frame assembled and stepped, presence, seat figures
//   server_send.cpp       everything sent (through the gate), the frames each round, start, snapshots
//   server_referee.cpp    hashes compared, joins verified, desyncs localized, reported and acted on
//   server_relay.cpp      without the simulation: ticks settled by the voters' majority, states fetched from peers
// The parts they wire together own their state and live in files of their own:
//   ServerSimulation (server_simulation.hpp)  the server's copy of the world, its hashes and past states
//   DesyncReferee (desync_referee.hpp)        each peer's audit (PeerAudit), votes of each tick, majority, reports
//   RelayMode (relay_mode.hpp)                relay mode: the votes (TickConsensus), states fetched, keyframe, standings
//   PeerGate (peer_gate.hpp)                  each connection's token, sealing, rate and budget
//   FrameFeed (frame_feed.hpp)                the executed frames and each peer's stream of them
//   admission.hpp, input_window.hpp, hash_ledger.hpp, resend.hpp, desync_probe.hpp, pacer.hpp
// A Peer is what every part needs; each part keeps its own record of a peer by the peer's index
// (erase_peer() forgets it everywhere). Time is passed into every function that needs it; nothing here reads a clock.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/admission.hpp"
#include "lockstep/desync_probe.hpp"
#include "lockstep/hash_ledger.hpp"
#include "lockstep/input_window.hpp"
#include "lockstep/seen_loss.hpp"
#include "lockstep/packet_seal.hpp"
#include "lockstep/pacer.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/resend.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/tick_consensus.hpp"
#include "lockstep/transport.hpp"
#include "desync_referee.hpp"
#include "frame_feed.hpp"
#include "peer_gate.hpp"
#include "relay_mode.hpp"
#include "server_simulation.hpp"

namespace lockstep {

struct LOCKSTEP_LOCAL ServerSession::Impl {
  enum class Phase { Lobby, Running, Draining, Closing, Finished };
  enum class Role { Pending, Player, Spectator };

  static constexpr std::size_t kHistory = HashLedger::kHistory;  // frames and hashes kept for resends and comparisons
  static constexpr int kMaxTicksPerUpdate = 5;                    // catch-up cap per update
  static constexpr std::size_t kMaxEvents = 1024;  // events kept for take_events()

  /// A connection: pending until it joins, then a player or a spectator. Its records belong to
  /// the part that keeps them.
  struct Peer {
    NetPeer* link = nullptr;     // null for an in-process peer (tests, fuzzing)
    std::uint32_t id = 0;        // never reused: logs, reports and votes name the peer by it
    std::uint32_t index = 0;     // its place in every part's records (peer_records.hpp), reused once it goes
    Role role = Role::Pending;
    std::int32_t slot = -1;
    std::string name;
    std::int64_t connected_at = 0;
    std::int64_t join_rtt = 0;   // connection to its join request: about one round trip
    bool closing = false;        // refused, timed out, kicked or told the session's end: ENet is closing it
  };

  /// A player slot: who holds it, whether it is in the session, and its inputs.
  struct Slot {
    bool taken = false;     // a player holds this slot
    bool present = false;   // in the session on the last assembled tick
    bool leaving = false;   // disconnected or left: removed at the next tick boundary
    std::string leave_reason;
    std::uint32_t peer_id = 0;
    std::string name;
    std::string secret;           // rejoin secret handed out at welcome
    bool bound = false;           // taken with a connect token of client `client_id`: rejoins need its token
    std::uint64_t client_id = 0;
    std::vector<std::uint8_t> user_data;  // that token's (the newest, after a rejoin)
    bool return_pending = false;  // verified after a rejoin or late join: present from the next tick
    std::int64_t last_heard = 0;  // when this player's last message arrived
    std::int32_t lead_us = 0;     // as the client reports it
    PeerNet net;                  // ENet's figures of its connection, as last measured while it was open
    bool stream = false;          // that connection came through the WebSocket door (net.loss_ppm: its data channel's)
    Tick hashes_checked = 0;      // its hashes compared with the server's up to here
    SeenLoss up_loss;             // its play messages that never came, counted by their newest input tick
    bool result_reported = false;  // its game reported a result (GameResult): the newest is kept
    std::vector<std::uint8_t> result;
    std::uint32_t outvoted = 0;    // relay mode: divergences its hash lost to a settled majority ...
    std::map<std::uint32_t, std::uint32_t> outvoted_by;  // ... by the majority's slots (a mask)
    InputWindow inputs;           // last: its figures follow the slot's, its rings after them
  };

  ServerConfig cfg;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<ServerSimulation> simulation;  // the server's world; its hash settles each tick (null: relay mode)
  // What the game is, from the simulation or from cfg.relay.
  std::uint32_t input_size = 0;
  std::uint64_t join_fingerprint = 0, world_fingerprint = 0;
  RelayMode relay_mode;  // relay mode's state: the votes, the states fetched, the keyframe (relay_mode.hpp)
  std::function<void(Tick, std::uint64_t, std::span<const std::uint8_t>)> keyframe_fn;
  std::optional<SecretKey> result_key;         // cfg.result_key, or derived from the token key
  std::optional<SessionResult> result;         // settled at the end (server_referee.cpp)
  DesyncReferee referee;                         // votes, majority and reports of desyncs
  Phase phase = Phase::Lobby;
  std::map<std::uint32_t, Peer> peers;  // by id; ordered, so broadcasts go out in a fixed order
  std::uint32_t next_peer_id = 1;
  std::uint32_t next_index = 0;             // take_index()
  std::vector<std::uint32_t> free_indices;  // those of peers that went (erase_peer())
  std::uint32_t peak_peers = 0;
  std::vector<Slot> slots;
  FrameFeed feed;  // the executed frames, and each peer's stream of them (frame_feed.hpp)
  Tick next_tick = 1;
  Tick first_input_tick = 1;
  // Only its schedule is used here; waiting is the caller's, and the lateness is in `stats`.
  Pacer pacer{[] {
    PacerConfig c;
    c.lateness_histogram = false;
    return c;
  }()};
  std::int64_t phase_deadline = 0;
  std::int64_t last_resend = 0;
  // Datagrams dropped unread: one log line per window with the counts and the busiest source.
  static constexpr std::int64_t kDropNoteNs = 10'000'000'000;
  std::int64_t drops_noted_at = 0;
  std::array<std::uint64_t, 5> drops_noted{};  // refused, empty, oversized, unknown, socket buffer full
  std::int64_t last_overload_log = 0;
  std::int64_t last_ready = 0;  // when the last tick executed could have run (stats.own_lateness)
  std::int64_t last_start_send = INT64_MIN / 2;
  std::int64_t final_acks_from = 0;  // when every final hash was in (0: not yet)
  std::int64_t last_lobby_beat = 0;  // when the lobby's last heartbeat went out
  bool stop_requested = false;
  bool shutting_down = false;  // ServerSession::stop_admitting(): no new players or spectators
  bool incomplete = false;     // ended by the operator before its end: the result says so
  bool receive_can_wait = false;     // see ServerSession::receive_can_wait()
  int exit = 0;
  ServerStats stats;
  std::vector<Departure> departures;
  std::vector<SessionEvent> events;  // for take_events(), oldest first
  HashLogWriter* hash_log = nullptr;
  PeerGate gate;  // admission's record of each connection, and the door every message passes (peer_gate.hpp)
  std::function<void(const InputFrame&, std::uint64_t)> tick_fn;

  // ---- server_session.cpp: the phase machine ----
  std::int64_t update(std::int64_t now);
  void check_peers(std::int64_t now);
  void note_drops(std::int64_t now);
  std::int64_t run_lobby(std::int64_t now);
  std::int64_t run_ticks(std::int64_t now);
  std::int64_t run_draining(std::int64_t now);
  void begin(std::int64_t now);
  void end_session(wire::EndReason reason, const std::string& detail, std::int64_t now);
  std::int64_t repeat_start(std::int64_t now);
  [[nodiscard]] bool all_hashes_in() const;
  [[nodiscard]] bool quiet() const;
  [[nodiscard]] Tick executed() const { return next_tick - 1; }
  [[nodiscard]] bool relay() const { return simulation == nullptr; }
  /// The newest tick whose hash is settled, and that hash (the server's own with the simulation).
  [[nodiscard]] std::pair<Tick, std::uint64_t> latest_settled() const;
  /// Tick t's deadline on the server's schedule (monotonic ns).
  [[nodiscard]] std::int64_t deadline_of(Tick t) const {
    return pacer.next_deadline() + (static_cast<std::int64_t>(t) - static_cast<std::int64_t>(next_tick)) * kTickNs;
  }
  [[nodiscard]] std::uint32_t joined_players() const;
  [[nodiscard]] std::uint32_t active_players_count() const;
  [[nodiscard]] std::uint32_t count_role(Role role) const;
  [[nodiscard]] bool inputs_complete(Tick t, std::int64_t now) const;  // (server_ticks.cpp)
  /// A peer's round trip as ENet measures it, ns (0 in-process).
  [[nodiscard]] static std::int64_t rtt_ns(const Peer& p) { return p.link ? std::int64_t{peer_net(p.link).rtt_us} * 1000 : 0; }
  /// The longest round trip of the peers that `counts` (ns; 0 with none).
  template <class Counts>
  [[nodiscard]] std::int64_t longest_rtt(Counts counts) const {
    std::int64_t longest = 0;
    for (const auto& [id, p] : peers)
      if (counts(p)) longest = std::max(longest, rtt_ns(p));
    return longest;
  }
  void emit(SessionEvent::Kind kind, Tick t, std::int32_t slot, std::string name, std::string detail = "", int code = 0) {
    if (events.size() >= kMaxEvents) events.erase(events.begin());
    events.push_back({kind, t, slot, std::move(name), std::move(detail), code});
  }
  /// Admission's record of a connection (peer_gate.hpp).
  PeerGate::Entry& entry(const Peer& p) { return gate.entry(p.index); }
  [[nodiscard]] const PeerGate::Entry& entry(const Peer& p) const { return gate.entry(p.index); }
  /// The referee's record of a peer (desync_referee.hpp), and its standing in relay mode (relay_mode.hpp).
  PeerAudit& audit(const Peer& p) { return referee.audit(p.index); }
  [[nodiscard]] const PeerAudit& audit(const Peer& p) const { return referee.audit(p.index); }
  RelayMode::Standing& relay_of(const Peer& p) { return relay_mode.standing(p.index); }
  [[nodiscard]] const RelayMode::Standing& relay_of(const Peer& p) const { return relay_mode.standing(p.index); }
  /// "player N (name)" or "spectator (name)": how reports and logs name a peer.
  static std::string label(const Peer& p);
  /// An empty slot, its input window of the simulation's input size.
  [[nodiscard]] Slot fresh_slot() const {
    Slot s;
    s.inputs = InputWindow(input_size);
    return s;
  }
  /// Records the most players and spectators joined at once (after a peer joins).
  void note_peak() { peak_peers = std::max(peak_peers, static_cast<std::uint32_t>(peers.size()) - count_role(Role::Pending)); }

  // ---- server_session.cpp: messages in ----
  void on_receive(const NetEvent& ev, std::int64_t now);
  void receive(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel, std::int64_t now, std::int64_t arrived);
  void drop(Peer& p, DropReason r, const char* detail = "");

  // ---- server_admission.cpp: connections, tokens, joins, seats ----
  void on_connect(NetPeer* link, std::int64_t now);
  /// Makes room for a connection from `ip`; false when it must be turned away.
  bool admit_pending(std::uint32_t ip, std::int64_t now);
  void on_disconnect(NetPeer* link, std::int64_t now);
  /// An index for a new peer's records: one a peer that went left, or the next.
  std::uint32_t take_index() {
    if (free_indices.empty()) return next_index++;
    const std::uint32_t i = free_indices.back();
    free_indices.pop_back();
    return i;
  }
  /// A peer gone: out of `peers` and out of every part's records. The next peer in order.
  std::map<std::uint32_t, Peer>::iterator erase_peer(std::map<std::uint32_t, Peer>::iterator it, std::int64_t now);
  void kick(Peer& p, const std::string& reason);
  void refuse(Peer& p, wire::RefuseReason reason, const std::string& detail);
  /// Players must bring a connect token: the server has its key, or will be handed it.
  [[nodiscard]] bool tokens_required() const { return cfg.token_key.has_value() || cfg.token_key_later; }
  [[nodiscard]] std::uint64_t unix_now() const { return cfg.unix_clock ? cfg.unix_clock() : unix_seconds(); }
  void on_connect_request(Peer& p, const wire::ConnectRequest& m);
  /// The key (and the addresses players reach this server at) arrive after it started.
  void take_token_key(const SecretKey& key, const std::vector<TokenAddress>& addresses);
  void open_token(Peer& p, std::span<const std::uint8_t> sealed_token);
  /// Opens a message from a sealed connection into the gate's buffer (PeerGate::opened()); false when it was dropped.
  bool open_sealed(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel);
  bool claim_token(Peer& p);
  [[nodiscard]] std::function<bool(std::uint64_t)> seated_client() const;
  [[nodiscard]] bool names_this_server(const std::vector<TokenAddress>& servers) const;
  void on_join(Peer& p, const wire::JoinRequest& m, std::int64_t now, std::int64_t arrived);
  void seat_spectator(Peer& p, const std::string& name, std::int64_t now);
  [[nodiscard]] std::string token_note(const Peer& p) const;
  void bind_seat(Slot& s, const Peer& p);
  void seat_in_lobby(Peer& p, std::size_t slot, const std::string& name);
  void admit_running(Peer& p, std::size_t slot, const std::string& name, bool rejoin, std::int64_t now);
  void free_slot(std::size_t slot);
  void on_leave(Peer& p, const wire::Leave& m);
  [[nodiscard]] bool vacant(const Slot& s) const;
  void close_old_holder(std::size_t slot, const Peer& p, const char* why, std::int64_t now);
  void on_status(Peer& p, const wire::StatusRequest& m, std::size_t request_bytes);

  // ---- server_ticks.cpp: inputs, frames, stepping ----
  void on_client_play(Peer& p, const protocol::ClientPlay& m, std::int64_t now, std::int64_t arrived);
  void assemble_and_step(std::int64_t now);
  void update_presence(std::size_t i, Tick t);
  void after_step(Tick t, std::int64_t now);
  /// Tick t's hash is decided (h; 0 and not `settled` for a relay tick without a majority): the
  /// hash log (settled ticks only) and the tick callback.
  void record_tick(Tick t, std::uint64_t h, bool settled = true);
  [[nodiscard]] std::vector<protocol::Seat> roster() const;
  [[nodiscard]] PeerNet net_of(const Slot& s) const;
  /// A player's connection as the slot keeps it (ENet resets its figures before it reports the
  /// disconnect, and the summary and status give them after): its figures, and whether it came
  /// through the WebSocket door. At the seat's binding, each update while open, and at a kick.
  void remember_link(Slot& s, NetPeer* link);
  [[nodiscard]] protocol::SeatStatus seat_status(std::size_t i) const;
  [[nodiscard]] std::vector<protocol::SeatStatus> seat_statuses() const;

  // ---- server_send.cpp: what goes out ----
  void send(Peer& p, Channel ch, std::span<const std::uint8_t> bytes);
  void broadcast(Channel ch, std::span<const std::uint8_t> bytes);
  void send_start(Peer& p, std::int64_t now, Channel channel = Channel::Control);
  void send_snapshot(Peer& p, bool join);
  void send_frames(std::int64_t now);
  /// Sends p its ServerPlay of frames from..to (all acknowledgements when from > to).
  void send_play(Peer& p, Tick from, Tick to);
  /// What every ServerPlay to p acknowledges from the session's side: the clock's shifts and its hashes.
  [[nodiscard]] protocol::ServerPlayHeader play_header(const Peer& p) const;
  /// A player's input window (its acknowledgement and slack go out with its frames); null for a spectator.
  [[nodiscard]] const InputWindow* inputs_of(const Peer& p) const {
    return p.role == Role::Player ? &slots[static_cast<std::size_t>(p.slot)].inputs : nullptr;
  }

  // ---- server_referee.cpp: hashes and desyncs ----
  void check_hash_silence(Peer& p, std::int64_t now);
  void expire_probes(std::int64_t now);
  void close_reports(std::int64_t now);
  void close_report(Peer& p, const std::string& cause, std::int64_t now);
  /// A desync of p's is being localized (a probe, or in relay mode its own comparison).
  [[nodiscard]] bool examined(const Peer& p) const { return audit(p).probe.active() || relay_of(p).locating; }
  void take_hashes(Peer& p, const protocol::ClientPlay& m, std::int64_t now);
  bool verify(Peer& p, Tick t, std::uint64_t theirs, std::uint64_t ours, std::int64_t now);
  void compare_hash(Peer& p, Tick t, std::uint64_t theirs, std::uint64_t ours, std::int64_t now, bool split = false);
  void note_outvoted(Peer& p, Tick t, std::uint64_t settled);
  void fit_history();
  void start_probe(Peer& p, Tick t, std::uint64_t ours, std::uint64_t theirs, std::int64_t now);
  void on_detail(Peer& p, const wire::DesyncDetail& m, std::size_t size, std::int64_t now);
  void follow_probe(Peer& p, DesyncLocalizer::Outcome outcome, std::int64_t now);
  /// A probe that ends (done, given up) queues its report for its tick's votes.
  void queue_report(Peer& p, std::int64_t now);
  [[nodiscard]] bool votes_in(Tick t) const;
  void settle_reports(std::int64_t now, bool force, bool act);
  void record_report(DesyncReport r, std::vector<BundleState> states, std::uint32_t peer, std::int64_t now);
  std::vector<BundleState> bundle_states(Tick t);
  std::string write_desync_bundle(const DesyncReport& decided, std::vector<BundleState> states);
  /// Bundles a session writes at most: a peer that keeps diverging (and being resynced) fills no
  /// disk; its reports go on being written.
  static constexpr std::uint32_t kMaxBundles = 64;
  std::uint32_t bundles_written = 0;
  void resync(Peer& p, std::int64_t now, bool again = false);
  void resync_not_taken(Peer& p, std::int64_t now);
  void on_game_result(Peer& p, const wire::GameResult& m);
  /// The players' results settled by strict majority, with the settled final hash and the seats,
  /// authenticated with the result key: the session's result (at its end).
  void settle_result();

  // ---- server_relay.cpp: relay mode, settled by consensus, states from peers ----
  /// Whether p's hash counts in the majority.
  [[nodiscard]] bool votes(const Peer& p) const;
  /// A hash of tick t from p: compared at once when t is decided, else a vote until it is.
  void take_vote(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now);
  /// Decides every executed tick whose votes are in (or waited long enough; all with `force`).
  void settle_ticks(std::int64_t now, bool force);
  void decide_tick(Tick t, const std::vector<std::uint32_t>& voters, std::int64_t now);
  void late_vote(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now);
  void compare_votes(Tick t, const TickConsensus::Verdict& v, const std::vector<std::uint32_t>& voters, std::int64_t now);
  /// Asks a peer for the newest settled state, for p to join from or resync to; for Compare, the
  /// settled state of tick `want`, for p to localize its divergence against.
  void serve_state(Peer& p, StateFetch::Purpose purpose, std::int64_t now, Tick want = 0, std::uint32_t from = 0);
  /// Sends f's request for `source`'s state of tick t, which must hash to `hash`.
  void request_state(StateFetch& f, Peer& source, Tick t, std::uint64_t hash, std::int64_t now);
  void on_located(Peer& p, const wire::DesyncLocated& m, std::int64_t now);
  /// A localization that cannot be had (or the session ends): the report goes as it is.
  void locate_failed(Peer& p, const std::string& note, std::int64_t now);
  bool ask_for_state(StateFetch& f, std::int64_t now);
  bool may_source(const StateFetch& f, const Peer& q, Tick t, std::int64_t now) const;
  void fail_fetch(std::size_t i, const std::string& why, std::int64_t now);
  bool asked_for(const Peer& p, std::span<const std::uint8_t> data) const;
  void on_state_answer(Peer& p, const wire::Snapshot& m, std::int64_t now);
  void deliver_state(StateFetch& f, std::int64_t now);
  void check_fetches(std::int64_t now);
  void pass_over_silent_source(StateFetch& f, std::int64_t now);
  void fetch_keyframe(std::int64_t now);
  bool serve_from_keyframe(Peer& p, std::int64_t now);
};

}  // namespace lockstep
