// ClientSession's insides, shared by its two files:
//   client_session.cpp  connecting, joining, the phase machine, ending, and the public API
//   client_play.cpp     play: Start, frames in, inputs sampled and sent with hashes, frames
//                       executed and hashed, snapshots loaded, desync probes answered
// The pure parts they wire together live in their own files: tick_clock.hpp, frame_intake.hpp,
// lead.hpp, resend.hpp, desync_probe.hpp. Time is passed into every function that needs it.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/client_session.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/frame_intake.hpp"
#include "lockstep/lead.hpp"
#include "lockstep/packet_seal.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/resend.hpp"
#include "lockstep/seen_loss.hpp"
#include "lockstep/tick_clock.hpp"
#include "lockstep/tick_ring.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

struct LOCKSTEP_LOCAL ClientSession::Impl {
  static constexpr std::size_t kRing = FrameIntake::kRing;  // inputs and hashes kept by tick
  static constexpr int kMaxFramesPerUpdate = 4;   // catch-up frames executed before the socket is serviced again
  static constexpr Tick kMaxSampleAhead = 200;    // ticks of sampling ahead of the newest frame seen (> the lead limit)
  static constexpr std::int64_t kLobbyBeatNs = 100'000'000;  // heartbeats while the lobby waits

  ClientConfig cfg;
  std::vector<SessionEvent> events;  // for take_events()
  void emit(SessionEvent e) {
    if (events.size() >= 1024) events.erase(events.begin());
    events.push_back(std::move(e));
  }
  std::unique_ptr<Transport> transport;
  NetPeer* server = nullptr;
  std::unique_ptr<PacketSeal> seal;  // joined with a connect token: set by the server's challenge
  bool stream_admitted = false;      // joined with a connect token through the WebSocket door (§17)
  std::vector<std::uint8_t> seal_scratch, send_scratch;
  std::vector<std::uint8_t> state_scratch;  // a saved state asked for by the server (relay mode)
  struct Trickle {  // test hook (ClientConfig::inject_trickled_states): the answer being trickled
    Tick tick;
    std::uint32_t request;
    std::uint64_t hash;
    std::vector<std::uint8_t> state;
    std::uint32_t sent;  // bytes sent so far
    std::int64_t sent_at;
  };
  Tick newest_frame_seen = 0;  // the newest frame tick in any ServerPlay, taken or not (a joiner catching up takes old ones)
  std::optional<Trickle> trickle;
  std::vector<std::uint8_t> result;         // the game's result (set_result), sent once joined
  bool result_set = false;
  Phase phase = Phase::Connecting;
  int exit = 0;
  std::string message;
  std::int64_t started_at = -1;
  bool connected = false;       // ENet's connection is up (the join may still be on its way)
  bool answered = false;        // the server has said something on this connection
  std::int64_t attempt_at = 0;  // when the current connection attempt started
  // Where to connect: ClientConfig's host and port, or a connect token's servers in turn; the
  // one being tried is cfg.host:cfg.port, since server_since.
  std::vector<std::pair<std::string, std::uint16_t>> servers;
  std::size_t server_index = 0;
  std::int64_t server_since = 0;
  std::int64_t last_heard = 0;
  std::int64_t leave_deadline = 0;
  std::int64_t welcome_at = 0;
  std::int64_t join_sent_at = 0;  // the join's round trip (to the welcome) seeds the input lead

  // From the welcome.
  std::int32_t slot = -1;
  std::uint32_t players = 0;
  std::uint32_t input_delay = 0;
  std::uint32_t send_every = 1;  // play messages every this many ticks (the Welcome's)
  SeenLoss down_loss;            // the server's play messages that never came, by their newest frame
  std::uint32_t due_unsent = 0;  // ticks sampled since the last play message
  Tick session_last_tick = 0;
  std::string secret;
  bool joining = false;         // the welcome said a snapshot comes first
  bool joined_running = false;  // ... and so the session was running when this client came in
  Tick joined_at = 0;
  std::unique_ptr<Simulation> sim, prev;
  WorldParams world;                 // the server's world, from the welcome
  std::vector<std::string> roster_names;  // by slot, from the welcome
  std::uint32_t bundles_written = 0;

  // Frames in, executed in order.
  FrameIntake intake;
  Tick executed = 0;
  TickClock clock;

  // Our inputs, sampled on the tick clock ahead of it by the lead, until acknowledged.
  Tick sample_tick = 0;  // the next tick clock reading at which to sample
  LeadController lead{LeadConfig{}};
  bool lead_limit_told = false;
  bool sample_held = false;  // sampling waits for frames to catch up
  std::int64_t last_sent = 0;
  struct Sampled {
    PlayerTick input;
    std::int64_t at = 0;  // when it was sampled
  };
  TickRing<Sampled> inputs{kRing};
  Tick first_input = 0, last_input = 0;  // range of sampled target ticks
  Tick input_ack = 0;

  // Our hashes, until acknowledged.
  TickRing<std::uint64_t> hashes{kRing};
  std::uint64_t last_hash = 0;
  Tick hash_ack = 0;
  Tick hashes_sent = 0;  // every hash up to this tick went out at least once
  std::int64_t hash_ack_moved = 0;  // when hash_ack last advanced
  GapResend hash_gap;
  bool desynced = false;
  bool connection_lost = false;  // ended by the network (no answer, no connection), not by a word from the server
  std::uint32_t epoch = 0;

  // The session's end.
  bool end_after_frames = false;  // SessionEnd arrived: end once every frame up to end_tick is executed
  int end_code_after_frames = 0;
  Tick end_tick = 0;              // the session's last executed tick, from SessionEnd
  std::int64_t end_deadline = 0;  // give up waiting for missing final frames then

  // Past states, to answer probes; a snapshot being received in chunks.
  std::unique_ptr<StateHistory> history;
  std::unique_ptr<Simulation> scratch;
  std::vector<std::uint8_t> snap;
  Tick snap_tick = 0;
  std::uint64_t snap_hash = 0;
  std::uint32_t snap_total = 0, snap_epoch = 0;
  bool snap_join = false;
  bool snap_compare = false;  // relay mode: the majority's state to compare with ours, not to load
  std::int64_t snap_started = 0;
  // A resync snapshot that outran the frames up to its tick (they travel unreliably, it reliably):
  // loaded once they are in. Its epoch is the one it came with.
  std::unique_ptr<Simulation> held_resync;
  std::uint32_t held_epoch = 0;

  InputSource input_source;
  HashLogWriter* hash_log = nullptr;
  std::function<void(Tick, std::uint64_t)> tick_fn;
  ClientStats stats;

  // ---- client_session.cpp ----
  std::int64_t update(std::int64_t now);
  void on_event(const NetEvent& ev, std::int64_t now);
  void on_disconnect(std::int64_t now);
  void check_connection(std::int64_t now);
  bool next_server(std::int64_t now, const std::string& why);
  void attempt(std::int64_t now);
  void reconnect(std::int64_t now);
  void on_receive(const NetEvent& ev, std::int64_t now);
  void on_message(std::uint8_t channel, std::span<const std::uint8_t> data, std::int64_t now);
  /// Sends to the server, sealed once the connection has its keys.
  void send(Channel channel, const protocol::Bytes& bytes);
  void on_welcome(const wire::Welcome& m);
  void on_session_end(const wire::SessionEnd& m, std::int64_t now);
  bool finish_after_end(std::int64_t now);
  [[nodiscard]] bool completed_without_end() const;
  [[nodiscard]] Tick end_target() const { return cfg.last_tick != 0 ? std::min(cfg.last_tick, end_tick) : end_tick; }
  void begin_leave(std::int64_t now, const std::string& reason);
  void end(int code, const std::string& why);
  void lose(const std::string& why);  // end(4, why), the network having gone away (connection_lost)
  void drop(ClientDrop reason, const std::string& detail);
  [[nodiscard]] std::uint64_t sim_fingerprint() const;
  /// The JoinRequest, presenting the simulation's fingerprint; a simulation that cannot build its
  /// default world (a game's reset that fails) ends the session instead, exit 1: there is nothing
  /// to present, and a server would only refuse a fingerprint of 0.
  void send_join();

  // ---- client_play.cpp ----
  void on_start(const wire::SessionStart& m, std::int64_t now);
  std::int32_t lead_sent = -1;  // the lead last reported to the server
  std::uint32_t plays_sent = 0;
  void on_server_play(const protocol::ServerPlay& m, std::int64_t now);
  void take_slack(const protocol::ServerPlay& m);
  // The confirmed frame of tick t this client holds (the base of a ServerPlay), or nullptr.
  std::function<const InputFrame*(Tick)> base_frame = [this](Tick t) -> const InputFrame* {
    return t <= intake.received() && intake.at(t).tick == t ? &intake.at(t) : nullptr;
  };
  void on_probe(const wire::DesyncProbe& m);
  /// The server says we diverged at tick t: our states of it and the ticks before, our hashes,
  /// the frames from our first state, into a bundle under cfg.desync_dir.
  void write_desync_bundle(Tick t, std::uint64_t ours, std::uint64_t server_hash);
  void on_state_request(const wire::StateRequest& m);
  void send_result() {
    send(Channel::Control, protocol::game_result(executed, result));
    transport->flush();
  }
  /// Relay mode: the majority's state of a tick we diverged at, compared with ours by our rules.
  void compare_with(const Simulation& reference);
  void on_snapshot(const wire::Snapshot& m, std::int64_t now);
  void join_from(std::unique_ptr<Simulation> loaded, std::int64_t now);
  void resync_from(std::unique_ptr<Simulation> loaded, std::uint32_t with_epoch, std::int64_t now);
  bool execute_next(std::int64_t now);
  void sample(std::int64_t now);
  void send_tick(std::int64_t now);
};

}  // namespace lockstep
