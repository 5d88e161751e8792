// The server side of a session: admits players, assembles each tick's input frame from their
// inputs, broadcasts it, steps its own simulation and compares every client's per-tick hash
// with its own. It reads no clock: the caller passes the time into update() and waits until
// the time it returns (or until the socket is readable).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/error.hpp"
#include "lockstep/export.h"
#include "lockstep/hash_log.hpp"
#include "lockstep/histogram.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/session_event.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/session_result.hpp"

namespace lockstep {

class Network;

/// What the server does once it has reported a desync: keep going, end the session (exit 3),
/// or send the desynced client the authoritative state so it plays on.
enum class OnDesync { Report, Stop, Resync };

/// The game a server hosts without its rules (relay mode): what joins are checked against and
/// what the welcome carries. `lockstep-synctest --describe` prints it for a module and world.
struct LOCKSTEP_API RelayGame {
  std::uint64_t join_fingerprint = 0;   ///< what a JoinRequest carries: the game's default world's fingerprint
  std::uint64_t world_fingerprint = 0;  ///< the fingerprint of the world of ServerConfig::world.settings
  std::uint32_t input_size = 0;         ///< bytes of one player's input per tick, 0..kMaxInputBytes
};

struct LOCKSTEP_API ServerConfig {
  std::string bind;                ///< listen address, "" = all
  std::uint16_t port = 7777;       ///< UDP port, 0 = any free port
  std::uint32_t players = 2;       ///< player slots, 1..32; the session starts when all are joined
  Tick last_tick = 0;              ///< stop after this tick, 0 = run until stopped
  std::uint32_t input_delay = 2;   ///< ticks between sampling and executing an input, 0..50
  /// Play messages go every this many ticks (1..5), the ticks between batched into one datagram:
  /// fewer headers for thin links. The session's input delay rises by send_every - 1 to match.
  std::uint32_t send_every = 1;
  WorldParams world;               ///< the module's settings bytes; world.players is set from `players`
  std::string token;               ///< the join secret (--token; not a connect token), "" = none required
  OnDesync on_desync = OnDesync::Report;
  /// With OnDesync::Resync: a player or spectator that diverges again after this many resyncs is
  /// dropped with the reason (its rules or its machine differ from the majority's), so that its
  /// reports and resyncs end. 0: no limit.
  std::uint32_t max_resyncs = 10;
  /// Relay mode: a player outvoted this many times by the same other players is reported as
  /// possibly outvoted by collusion (the summary, its desync reports, the result). 0: never.
  std::uint32_t collusion_episodes = 3;
  /// Wait at most this long past a tick's deadline for a late input, then fill it. Clients set
  /// their lead so their inputs arrive before the deadline; this only absorbs a stray one.
  std::int64_t input_grace_ns = 20'000'000;
  std::int64_t start_delay_ns = 200'000'000;   ///< from "everyone is in" to tick 0's deadline, at least
                                               ///< (more when a player's join round trip needs it)
  /// When 0 or more: every tick's deadline falls this many nanoseconds into a 10 ms period of the
  /// monotonic clock (tick 0 waits up to a tick more for it). A process hosting several sessions
  /// gives them phases apart, so that their ticks do not all fall due at once. -1: wherever the
  /// start puts them.
  std::int64_t tick_phase_ns = -1;
  std::int64_t drain_timeout_ns = 3'000'000'000;  ///< after the last tick, wait this long for final hashes
  /// After the session's end is sent, wait this long for every peer to take it (ENet resends it
  /// until acknowledged; at 10 % loss a 1 s wait left one client in a few hundred without it).
  std::int64_t close_timeout_ns = 5'000'000'000;
  std::int64_t join_timeout_ns = 20'000'000'000;  ///< a connection must send its join within this (as long as a client tries)
  std::uint32_t max_spectators = 8;
  std::string desync_dir = ".";    ///< where desync-<tick>-<player>.json reports and .bundle files are written
  bool desync_bundles = true;      ///< write a desync bundle (desync_bundle.hpp) beside each report
  std::string module_name;         ///< the game's module, named in bundles' replays
  std::string record_path;         ///< named in reports as the replay to look at ("" = none)
  /// Ticks of past states kept to examine a desync, at least; the server keeps more as the
  /// longest round trip of its peers asks (history_for_round_trip), up to state_history_max.
  std::size_t state_history = 64;
  std::size_t state_history_max = 2000;
  /// Give up localizing after this long, or eight of the peer's round trips if that is longer.
  std::int64_t probe_timeout_ns = 2'000'000'000;
  bool allow_late_join = false;    ///< admit new players into a vacated slot of a running session
  /// A player whose state hashes stop arriving for this long (while it is in play) is reported
  /// and dropped: desync detection does not depend on a client's good will.
  std::int64_t hash_silence_ns = 5'000'000'000;
  std::int64_t silent_drop_ns = 5'000'000'000;  ///< a peer from which nothing arrives (not even ENet's
                                                ///< acknowledgements) for this long is dropped
  /// A player in play sends every tick: one from which no message has come for this long (a crash,
  /// a pulled cable) is dropped, and its seat is vacant at once for its rejoin or a late joiner.
  /// 0: silent_drop_ns.
  std::int64_t play_silence_ns = 0;
  double max_messages_per_second = 400;  ///< per peer, sustained; a peer above it is dropped
  double message_burst = 800;            ///< per peer, messages it may send at once
  std::uint32_t max_bad_messages = 100;  ///< malformed or unexpected messages a peer may send before it is dropped
  /// Connections that have not joined yet. When all places are taken, a new connection makes room:
  /// the address holding the most gives up its oldest, or else the oldest silent for a second goes.
  std::uint32_t max_pending = 8;
  std::uint32_t max_pending_per_address = 4;  ///< of those, from one IP address (loopback, this machine's
                                              ///< own bots and relays, is not held to it)
  /// Connect tokens (docs/PROTOCOL.md §4.6): when set, a client joins only with a token sealed
  /// with this key, and every message after it is sealed with that connection's keys (§4.7).
  std::optional<SecretKey> token_key;
  /// Tokens are required, but the key comes later (set_token_key(): an Agones allocation hands it
  /// over); until then connect requests wait for it, within join_timeout_ns.
  bool token_key_later = false;
  std::uint64_t protocol_id = kDefaultProtocolId;  ///< tokens of another game are refused
  /// The addresses players reach this server at, of which a token must name one; empty: any
  /// address with this server's port.
  std::vector<TokenAddress> public_addresses;
  /// Status replies name players and give their figures only to askers that hold this key (§11);
  /// without it, a server that takes connect tokens tells only the public part.
  std::optional<SecretKey> status_key;
  /// Seconds since the Unix epoch, for token expiry (tests replace it); default: the wall clock.
  std::function<std::uint64_t()> unix_clock;
  WorldFactory factory;  ///< the simulation (required, unless `relay` is set)
  /// The libraries the module's fingerprint covers (Module::libraries; in relay mode the game
  /// description's), named in a refusal when a joining peer has another build of one.
  std::vector<LibraryBuild> libraries;
  /// The module file's machine code (Module::code; in relay mode the game description's): a peer
  /// that joins with other code is refused unless both are in `equal_builds`. "" = not checked.
  std::string code;
  std::uint32_t code_fma = 0;  ///< fused multiply-adds in it (Module::fma_instructions)
  /// Machine code the determinism gate replayed equal, one build to another (lockstep-gate's
  /// equal-builds report, --equal-builds FILE).
  std::vector<std::string> equal_builds;
  /// Set: the server runs no simulation (relay mode). It relays inputs and keeps time as always,
  /// and settles every tick by a strict majority of the voters' hashes; joins, rejoins and
  /// resyncs load a state a peer saved, forwarded only when its bytes hash to the settled value
  /// (docs/PROTOCOL.md §15). `factory` is not used.
  std::optional<RelayGame> relay;
  /// Relay mode: spectators' hashes count in the majority (a backend's trusted observer bot).
  bool spectators_vote = false;
  /// Relay mode: every this many ticks, ask a voter for its saved state of the newest settled tick
  /// (checked against the settled hash as any state is): the session's latest keyframe. Joins,
  /// rejoins and spectators are served from it at once while it is recent (kKeyframeReach), and a
  /// recorder writes it into the replay (on_keyframe). 0: none.
  Tick relay_keyframe_interval = 0;
  /// The key the session's result is authenticated with (result_key_from() of the token key a
  /// backend mints with); unset: derived from token_key when there is one, else unsigned.
  std::optional<SecretKey> result_key;
  /// ENet's packet cap applies both ways; snapshots go out in 16 KiB chunks, so 64 KiB is plenty.
  TransportLimits limits{64 * 1024, 256 * 1024};
  /// The WebSocket door for browser players (docs/PROTOCOL.md §17), on `bind` beside ENet: its
  /// TCP port (0 = any free one), none when unset. With tls_cert and tls_key (PEM files) it
  /// speaks wss:// and https://, without them plain ws:// (for loopback and tests). web_root, a
  /// folder, is served over HTTP on the same port (the browser client's page and its wasm).
  std::optional<std::uint16_t> websocket_port;
  std::string web_root, tls_cert, tls_key;
  /// Unfinished handshakes the door holds at once (0: its default, kDoorHandshakes); when full, a
  /// new connection takes the place of the oldest.
  std::size_t websocket_handshakes = 0;
  /// Proxies in front of the door (addresses, as "127.0.0.1"): their connections are held to
  /// the per-address bound by the browser's address, the last one of X-Forwarded-For.
  std::vector<std::string> trusted_proxies;
  /// The door's datagram path (docs/PROTOCOL.md §17.1): pages may move their play messages to a
  /// WebRTC data channel (unordered, unreliable), offered over their WebSocket, on UDP ports
  /// webrtc_port_min..webrtc_port_max (0, 0 = any free port). webrtc_advertise ("HOST" or
  /// "HOST:PORT") is the address the answer names, for a server behind NAT or a relay; "" names
  /// the local addresses.
  bool webrtc = false;
  std::uint16_t webrtc_port_min = 0, webrtc_port_max = 0;
  std::string webrtc_advertise;
};

/// Why an incoming message was dropped. Every drop is counted; the first few of each kind are logged.
enum class DropReason : std::uint8_t {
  TooLarge, Malformed, FieldOutOfRange, WrongChannel, UnexpectedMessage, NotJoined, InputTooFarAhead,
  HashForFutureTick, HashTooOld, FrameAckOutOfRange, BadInputs, Count
};
LOCKSTEP_API const char* to_string(DropReason r);

struct LOCKSTEP_API ServerStats {
  std::uint64_t ticks = 0;           ///< ticks executed
  std::uint64_t filled_inputs = 0;   ///< inputs repeated because they were late, lost or never sent
  std::uint64_t commands = 0;        ///< player commands executed
  std::uint64_t desyncs = 0;         ///< players found desynced (each time: again after a resync)
  std::uint64_t spectator_desyncs = 0;  ///< spectators found desynced: reported, never the session's exit code
  std::uint64_t divergent_ticks = 0; ///< hashes that differed from the server's, every one counted
  std::uint64_t hash_silences = 0;   ///< players dropped for not reporting hashes
  std::uint64_t hashes_compared = 0;
  std::uint64_t refused = 0;
  std::array<std::uint64_t, 13> refusals{};  ///< by wire::RefuseReason value
  std::uint64_t sealed_forged = 0;   ///< messages on a sealed connection that failed authentication, dropped unread
  std::uint64_t sealed_replayed = 0; ///< sealed play messages opened before (or older than the window), dropped
  std::uint64_t replies_withheld = 0;  ///< replies to a peer not yet authenticated that were larger than what it sent
  std::uint64_t pending_evicted = 0;   ///< pending connections (misbehaved, idle or stale) closed to make room
  std::uint64_t handshakes_cut = 0;    ///< half-open connection requests closed: for a new one when every slot was held,
                                       ///< replaced by a new one from the same source, or still half-open after 5 s
  std::uint64_t status_public = 0, status_full = 0;  ///< status replies without and with names and figures
  std::uint64_t resyncs = 0;         ///< snapshots sent to desynced clients
  /// Desync reports: divergences folded into their peer's episode report (not reported anew),
  /// and reports past the session's bound of files (DesyncReferee::kMaxReports), counted only.
  std::uint64_t desyncs_in_episodes = 0, reports_unwritten = 0;
  std::uint64_t collusion_suspected = 0;
  std::uint64_t ticks_settled_late = 0;  ///< relay mode: unvoted ticks (a stall) decided when their hashes came  ///< relay mode: players found outvoted by the same others collusion_episodes times
  std::uint64_t resyncs_not_taken = 0;  ///< resync snapshots a client still had not loaded long after
  std::uint64_t joins = 0;           ///< players seated in the lobby or as late joiners
  std::uint64_t rejoins = 0;         ///< players back in their own seat with its secret
  std::uint64_t joins_running = 0;   ///< rejoins and late joins admitted with a snapshot
  std::uint64_t verified = 0;        ///< of those, verified by a matching hash
  std::uint64_t join_mismatches = 0; ///< of those, a state that did not match: reported as a desync, then closed
  std::uint64_t state_history_ticks = 0;  ///< the most ticks of states the history held at once
  std::uint64_t kicked = 0;          ///< peers dropped for breaking a limit
  std::uint64_t pending_refused = 0; ///< connections turned away because too many were pending
  std::int64_t last_snapshot_bytes = 0;
  // Relay mode (no simulation): how the ticks were settled, and the states fetched from peers.
  std::uint64_t ticks_settled = 0;   ///< ticks a strict majority of the voters agreed on
  std::uint64_t ticks_split = 0;     ///< ticks the voters reported without a strict majority
  std::uint64_t ticks_unvoted = 0;   ///< ticks no voter reported in time
  std::uint64_t states_requested = 0;  ///< saved states asked of peers (joins, rejoins, resyncs)
  std::uint64_t states_forwarded = 0;  ///< of those, delivered: their bytes hashed to the settled value
  std::uint64_t states_forged = 0;     ///< answers whose bytes did not: that peer is never asked again
  std::uint64_t states_not_held = 0;   ///< answers that the peer no longer held the tick
  std::uint64_t states_unanswered = 0; ///< requests that got no whole answer in time
  std::uint64_t keyframes_fetched = 0;  ///< keyframes a voter sent that hashed to the settled value
  std::uint64_t joins_from_keyframe = 0;  ///< joins and rejoins served from the latest keyframe, no peer asked
  std::uint64_t results_received = 0;  ///< game results the players reported (each replaces the last)
  std::int64_t first_tick_ns = 0;    ///< monotonic time tick 1 was executed
  std::int64_t last_tick_ns = 0;     ///< monotonic time the latest tick was executed
  std::int64_t steady_tick_ns = 0;   ///< monotonic time tick 200 (2 s in) was executed
  std::uint64_t ticks_skipped = 0;   ///< ticks the session clock moved later because the server fell behind
  std::array<std::uint64_t, static_cast<std::size_t>(DropReason::Count)> drops{};
  Histogram lateness;  ///< tick executed vs its deadline, microseconds
  /// Tick executed vs the latest of its deadline, the arrival of the last input it took, the end of
  /// a wait for an input that did not come, and when the tick before it could run: the server's
  /// own delay, without the wait for players' late inputs, microseconds.
  Histogram own_lateness;
  Histogram join_latency;  ///< players and spectators admitted: from their connection to their seat, microseconds
  [[nodiscard]] std::uint64_t total_drops() const;
};

/// A player who went out of the session, and why ("left (REASON)", "disconnected", "dropped: REASON").
struct LOCKSTEP_API Departure {
  Tick tick = 0;  ///< the first tick it was not present
  std::uint32_t slot = 0;
  std::string name, reason;
};

class LOCKSTEP_API ServerSession {
 public:
  /// Relay mode: StateRequests one state fetch (a join, a resync, a comparison, a keyframe) may
  /// send in all, "not held" answers and silent sources included, before it gives up.
  static constexpr std::uint32_t kMaxRequestsPerFetch = 6;
  /// Binds the socket. nullptr with `error` set when the config is invalid (Usage) or the port
  /// cannot be bound (Runtime).
  static std::unique_ptr<ServerSession> create(const ServerConfig& config, Error* error);
  ~ServerSession();

  /// Handles everything that arrived and everything due at `now_ns` (monotonic). Returns the
  /// monotonic time at which it next has work, unless the socket becomes readable sooner.
  std::int64_t update(std::int64_t now_ns);
  /// The socket to wait on.
  [[nodiscard]] int fd() const;
  [[nodiscard]] std::uint16_t port() const;
  /// The WebSocket door's TCP port (0: none) and its counters.
  [[nodiscard]] std::uint16_t websocket_port() const;
  [[nodiscard]] DoorStats door_stats() const;

  /// Ends the session at the next update (operator stop): clients are told, then it finishes. A
  /// match stopped after it started has its result marked incomplete (SessionResult::incomplete).
  void stop();
  /// A graceful shutdown's first step: from now on no new player or spectator is admitted (they
  /// are refused as Draining, and a connect token's client goes on to its next server); seated
  /// players still rejoin, and the running match plays on to its end.
  void stop_admitting();
  /// Whether the match has started (everyone joined; the lobby is over).
  [[nodiscard]] bool started() const;
  /// Whether a new player would be admitted now: a free seat in the lobby, or a vacant one in a
  /// running match with late joins on, and not shutting down (an ops server's readiness).
  [[nodiscard]] bool accepting_players() const;
  /// Sets the key connect tokens must be sealed with, and the addresses they must name (empty:
  /// keep the configured ones): a key an allocation hands the server after it started
  /// (--token-key agones). Requests waiting for the key are answered; connections already past
  /// their challenge keep their keys.
  void set_token_key(const SecretKey& key, const std::vector<TokenAddress>& public_addresses = {});
  [[nodiscard]] bool finished() const;
  /// 0 finished as asked, 3 a desync was detected (the exit codes in README.md).
  [[nodiscard]] int exit_code() const;

  [[nodiscard]] Tick executed_tick() const;
  /// The server's world; nullptr in relay mode (ServerConfig::relay), which has none.
  [[nodiscard]] const Simulation* simulation() const;
  /// The fingerprint of the session's world (what the welcome carries), in either mode.
  [[nodiscard]] std::uint64_t world_fingerprint() const;
  /// Bytes of one player's input per tick.
  [[nodiscard]] std::uint32_t input_size() const;
  /// The session's result, settled from the players' reports by majority and authenticated, once
  /// the session has ended (finished()); nullopt before.
  [[nodiscard]] const std::optional<SessionResult>& result() const;
  /// The newest tick whose hash is settled, and that hash: the server's own with the
  /// simulation; in relay mode the voters' majority (0, 0 before any).
  [[nodiscard]] std::pair<Tick, std::uint64_t> settled() const;
  [[nodiscard]] const ServerStats& stats() const;
  /// Each taken player slot's network figures: round trip, jitter, loss, lead, fills by cause,
  /// input latency estimate.
  /// The connect token a seat was taken with (docs/PROTOCOL.md §4.6): the matchmaker's client id
  /// and the token's user data, for the game's server side. nullopt for a free seat or one taken
  /// without a token.
  struct SeatToken {
    std::uint64_t client_id = 0;
    std::vector<std::uint8_t> user_data;
  };
  [[nodiscard]] std::optional<SeatToken> seat_token(std::uint32_t slot) const;
  [[nodiscard]] std::vector<SeatStatus> seats() const;
  /// Bytes and datagrams sent and received so far, to and from every peer.
  [[nodiscard]] NetTraffic traffic() const;
  [[nodiscard]] const std::vector<DesyncEvent>& desyncs() const;
  /// Every player that went out of the running session, in order.
  [[nodiscard]] const std::vector<Departure>& departures() const;
  /// Relay mode: every player whose hash lost to a settled majority, with how often and by whom.
  struct Outvoted {
    std::uint32_t slot = 0;
    std::string name;
    std::uint32_t times = 0;     ///< divergences its hash lost to a settled majority
    std::uint32_t by_mask = 0;   ///< the slots (a mask) that outvoted it most often ...
    std::uint32_t by_times = 0;  ///< ... and how often
    bool suspected = false;      ///< by_times reached ServerConfig::collusion_episodes
  };
  [[nodiscard]] std::vector<Outvoted> outvoted() const;
  /// The localized reports written so far, in the order they were completed.
  [[nodiscard]] const std::vector<DesyncReport>& reports() const;
  /// Player names by slot ("" for a free slot).
  [[nodiscard]] std::vector<std::string> player_names() const;
  [[nodiscard]] const ServerConfig& config() const;
  /// True after an update() in steady play: nothing that arrives before the wake time it
  /// returned needs handling sooner, so the caller may sleep to that time without watching the
  /// socket. Inputs still count as early as they reached the socket (kernel timestamps). One
  /// wake-up per tick instead of one per packet is most of what a server costs per client.
  [[nodiscard]] bool receive_can_wait() const;
  /// The most clients (players and spectators) connected at once.
  [[nodiscard]] std::uint32_t peak_peers() const;
  /// Players currently in the session.
  [[nodiscard]] std::uint32_t active_players() const;

  /// What happened since the last call, oldest first: PlayerJoined (a rejoin: code 1),
  /// PlayerLeft, Desync (detail: where it was localized, and the odd one out), Ended (code: the
  /// exit code). At most 1024 are kept; older ones are dropped.
  std::vector<SessionEvent> take_events();
  /// Called after every executed tick with its frame and the server's hash.
  void on_tick(std::function<void(const InputFrame&, std::uint64_t)> fn);
  /// Relay mode: called with each keyframe a voter sent, once its bytes hashed to the settled hash
  /// of its tick (ServerConfig::relay_keyframe_interval); the tick is one already executed.
  void on_keyframe(std::function<void(Tick, std::uint64_t, std::span<const std::uint8_t>)> fn);
  /// Writes every executed tick's hash to `log` (not owned; must outlive the session).
  void set_hash_log(HashLogWriter* log);

  struct Impl;

 private:
  friend struct SessionTesting;  // the test and fuzzing seam (session_testing.hpp)
  /// create() on another network than ENet over UDP (the tests' simulated one).
  static std::unique_ptr<ServerSession> create_on(Network& network, const ServerConfig& config, Error* error);
  explicit ServerSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
