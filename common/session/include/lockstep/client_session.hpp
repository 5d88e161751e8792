// The client side of a session: joins, samples its input once per tick on the server's tick
// clock, sends it for tick `now + input delay`, executes confirmed frames strictly in order,
// hashes after every tick and reports the hash. It reads no clock: time is passed in.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/error.hpp"
#include "lockstep/export.h"
#include "lockstep/hash_log.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/histogram.hpp"
#include "lockstep/lead_config.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/session_event.hpp"
#include "lockstep/simulation.hpp"
#include "lockstep/version.hpp"

namespace lockstep {

class Network;

struct LOCKSTEP_API ClientConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7777;
  std::string bind;                     ///< local address to send from ("" = any)
  std::string name = "player";          ///< 1..32 printable ASCII characters
  std::string token;                    ///< the join secret (--token, LAN play; not a connect token)
  /// Join with this connect token (docs/PROTOCOL.md §4.6) instead: the join and everything after
  /// it is sealed with the connection's keys (§4.7). `host`/`port` still say where to connect;
  /// with `host` empty, the token's servers are tried in order, each for an equal share of
  /// connect_timeout_ns, until one welcomes the player (one that is full, has started without
  /// late joins, or is not named by the token hands over to the next).
  std::optional<ConnectToken> connect_token;
  bool spectate = false;                ///< join without a player slot
  std::string rejoin_secret;            ///< from an earlier welcome: come back into that slot
  Tick last_tick = 0;                   ///< leave cleanly after executing this tick, 0 = stay to the end
  /// When the server reports this client diverged, write a desync bundle (desync_bundle.hpp) of
  /// this client's states here (desync-<tick>-<slot>.client.bundle); "" = none.
  std::string desync_dir;
  std::string module_name;              ///< the game's module, named in the bundle's replay
  Tick inject_desync_at = 0;            ///< test hook: flip the lowest bit of one stored value right after this tick
  std::uint64_t inject_selector = 12345;  ///< which float the hook perturbs
  bool inject_forged_states = false;     ///< test hook: flip a byte of every saved state a relay server asks for
  Tick inject_wrong_hashes_from = 0;     ///< test hook: report every hash from this tick on with its lowest bit
                                         ///< flipped (the state itself stays right) ...
  Tick inject_wrong_hashes_until = 0;    ///< ... up to this tick (0: to the end)
  bool inject_trickled_states = false;   ///< test hook: answer a relay server's state request with one byte of
                                         ///< the state every 2 s
  LeadConfig lead;                      ///< how far ahead of the tick clock to sample (lead_config.hpp)
  /// Keep trying to connect and join this long: a new ENet connection every connect_retry_ns
  /// until connected, and again when the server has not said a word on a connection twice that
  /// long after it opened; the join and welcome ride ENet's reliable resends.
  std::int64_t connect_timeout_ns = 20'000'000'000;
  std::int64_t connect_retry_ns = 1'500'000'000;
  std::int64_t silence_timeout_ns = 3'000'000'000;  ///< nothing at all from the server for this long: lost
  bool execute_on_arrival = true;       ///< step frames inside update() as they arrive (in-process use); the
                                        ///< embedding API's Client steps them itself, on its playout schedule
  bool keep_previous = false;           ///< keep the state one tick back, for interpolation
  std::uint32_t protocol_version = kProtocolVersion;  ///< tests override it to check refusals
  WorldFactory factory;  ///< the simulation, the server's module's (required)
  /// The libraries the module's fingerprint covers (Module::libraries), sent with the join so a
  /// refusal can name one whose build differs from the server's.
  std::vector<LibraryBuild> libraries;
  /// The module file's machine code (Module::code), sent with the join: a server admits only its
  /// own or code the determinism gate showed equal to it. "" for rules not from a module file.
  std::string code;
  std::uint32_t code_fma = 0;  ///< fused multiply-adds in it (Module::fma_instructions)
  /// Snapshots arrive in 16 KiB chunks; a burst of them may wait in ENet before they are read.
  TransportLimits limits{64 * 1024, 4 * 1024 * 1024};
  /// Ticks of past states kept to answer desync probes, at least; more as the round trip to the
  /// server asks (history_for_round_trip), up to state_history_max.
  std::size_t state_history = 64;
  std::size_t state_history_max = 2000;
  /// Called with each confirmed frame just before it is executed (prediction keeps the latest).
  std::function<void(const InputFrame&)> on_confirmed;
  /// Test hook: called after each executed tick, before hashing (perturbations in tests).
  std::function<void(Tick, Simulation&)> after_step;
};

/// Fills this player's input and commands for a tick; called once per tick, in tick order, with
/// `out->input` sized to the simulation's input size and zeroed, and no commands.
using InputSource = std::function<void(Tick, PlayerTick* out)>;


/// Why a message from the server was dropped. Every drop is counted; the first few of each kind are logged.
enum class ClientDrop : std::uint8_t {
  TooLarge, Malformed, FieldOutOfRange, UnexpectedMessage, InconsistentFrames, ProbeOutOfRange, SnapshotOutOfPlace,
  SnapshotInvalid, UnknownBase, Forged, Replayed, Count
};
LOCKSTEP_API const char* to_string(ClientDrop r);

struct LOCKSTEP_API ClientStats {
  std::uint64_t frames_received = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(ClientDrop::Count)> drops{};  ///< by ClientDrop
  [[nodiscard]] std::uint64_t total_drops() const;
  Histogram input_latency;  ///< sample -> execution of the same tick, microseconds
  std::int64_t first_exec_ns = 0;   ///< when the first tick was executed here (monotonic)
  std::int64_t last_exec_ns = 0;    ///< when the latest one was
  std::uint64_t executed_ticks = 0; ///< ticks executed here (re-executions after a resync included)
  std::uint64_t inputs_filled = 0;  ///< executed ticks whose input of ours the server filled (late or lost)
  std::uint64_t commands_sent = 0;  ///< commands this player issued (each goes to the server until acknowledged)
  std::uint32_t rtt_ms = 0;
  std::int64_t lead_ns = 0;  ///< current input lead
  std::uint32_t rtt_var_ms = 0;  ///< ENet's round-trip variance (jitter)
  double loss = 0;           ///< the server's play messages that never came (due every send_every ticks), 0..1
  double loss_enet = 0;      ///< ENet's own packet loss estimate, 0..1 (its datagrams and acknowledgements)
  std::uint32_t connect_attempts = 0;
  std::uint32_t resyncs = 0;  ///< authoritative states loaded after a desync
  std::uint32_t resyncs_waited = 0;  ///< of them, states that arrived before the frames up to them and waited
  std::uint32_t servers_tried = 1;   ///< a connect token's servers tried, this one included
  std::int64_t snapshot_ns = 0;     ///< last snapshot: welcome (a join) or first chunk (a resync) -> loaded and checked
  std::uint64_t snapshot_bytes = 0;
  std::uint32_t states_served = 0;  ///< saved states sent to a server without the simulation (for another peer)
  std::string refusal;  ///< why the server refused the join (RefuseReason's name), "" if it did not
};

class LOCKSTEP_API ClientSession {
 public:
  enum class Phase { Connecting, Joined, Running, Leaving, Ended };

  /// Starts connecting. nullptr with `error` set when the config is invalid (Usage), no socket
  /// can be made (Runtime) or the server's address does not resolve (Connection).
  static std::unique_ptr<ClientSession> create(const ClientConfig& config, Error* error);
  ~ClientSession();

  /// Handles everything that arrived and everything due at `now_ns`; returns when it next has work.
  std::int64_t update(std::int64_t now_ns);
  [[nodiscard]] int fd() const;

  void set_input_source(InputSource source);
  void set_hash_log(HashLogWriter* log);  ///< not owned; must outlive the session
  /// Called after every executed tick with its hash (again for ticks re-executed after a resync).
  void on_tick(std::function<void(Tick, std::uint64_t)> fn);
  /// The events since the last call, oldest first (at most 1024 are kept; older ones are dropped).
  std::vector<SessionEvent> take_events();
  /// Ends the session at once with this exit code (a game's callback failed, say).
  void abort(int code, const std::string& why);
  /// Leaves cleanly (the server sees a clean leave), then the session ends with exit code 0.
  void leave(const std::string& reason);
  /// The game's result as it stands (a winner, scores: bytes the game defines, at most
  /// kMaxResultBytes = 256), sent to the server now (or once joined); a later call replaces it. At
  /// the end the server settles the players' results by majority and signs the session's result
  /// (docs/PROTOCOL.md §16). False when it is too long or the session has ended.
  bool set_result(std::span<const std::uint8_t> result);

  /// When tick `t`'s frame falls due on this client's copy of the server's tick clock (the
  /// server's deadline plus the least delay seen on the way here), monotonic ns; 0 before Start.
  [[nodiscard]] std::int64_t tick_due_ns(Tick t) const;
  /// The latest tick this player's input was sampled for (0: none yet), and when the tick clock
  /// samples the input for tick `t` (its due time less the input delay and the lead), monotonic ns.
  [[nodiscard]] Tick last_sampled() const;
  [[nodiscard]] Tick first_sampled() const;
  [[nodiscard]] std::int64_t sample_due_ns(Tick t) const;
  /// Confirmed frames received but not executed yet.
  [[nodiscard]] std::size_t frames_buffered() const;
  /// Executes the next buffered frame at `now_ns`; false when none is there.
  bool execute_next(std::int64_t now_ns);

  [[nodiscard]] Phase phase() const;
  [[nodiscard]] bool finished() const { return phase() == Phase::Ended; }
  /// 0 finished, 1 the welcome named a world this simulation cannot build, 3 desync, 4 connection
  /// failed, refused or lost.
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] const std::string& end_message() const;

  /// The simulation (nullptr before the welcome) and the state one tick before it (if kept).
  [[nodiscard]] const Simulation* simulation() const;
  [[nodiscard]] const Simulation* previous() const;
  [[nodiscard]] Tick executed_tick() const;
  [[nodiscard]] std::uint64_t last_hash() const;
  [[nodiscard]] std::int32_t slot() const;  ///< -1 for a spectator or before the welcome
  [[nodiscard]] bool desynced() const;
  /// Ended because the network went away (no connection, the connection lost, the server silent),
  /// not by the server's word (an end, a refusal, a kick): what a client may retry with its rejoin
  /// secret.
  [[nodiscard]] bool connection_lost() const;
  /// The secret that brings this player back into its slot after a lost connection ("" before the welcome).
  [[nodiscard]] const std::string& rejoin_secret() const;
  /// The world's player slots (0 before the welcome).
  [[nodiscard]] std::uint32_t players() const;
  /// The last tick this client will execute: the session's (from the welcome) or its own
  /// ClientConfig::last_tick, whichever comes first; 0: none.
  [[nodiscard]] Tick last_tick() const;
  /// Tick of the snapshot this client joined from (0: it played from the start).
  [[nodiscard]] Tick joined_at() const;
  [[nodiscard]] const ClientStats& stats() const;
  /// Bytes and datagrams sent and received so far.
  [[nodiscard]] NetTraffic traffic() const;

  struct Impl;

 private:
  friend struct SessionTesting;  // the test and fuzzing seam (session_testing.hpp)
  /// create() on another network than ENet over UDP (the tests' simulated one).
  static std::unique_ptr<ClientSession> create_on(Network& network, const ClientConfig& config, Error* error);
  explicit ClientSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
