// The embedding API's client: join a session from the game's own loop, with the game's own
// clock, renderer and frame rate (docs/EMBEDDING.md). The game calls update() as often as it
// likes with its monotonic time; it sets its input whenever it changes (the session samples it
// on every tick of the server's clock), takes events, and draws between the previous and current
// confirmed states at alpha(). Frames are executed on a playout schedule a little behind their
// due time, sized from how late they arrive, so alpha blends instead of resting at 1 when the
// network jitters. No thread is hidden: start_service() runs one only when the game asks.
//
// Stepping ("Fix Your Timestep" in a session). Alone, a game's renderer produces time and the
// simulation consumes it in fixed steps; in a session the server's tick clock produces it: a
// confirmed frame exists only once the server has reached its tick. Each update() executes the
// frames whose playout time has come, so a client at 1 fps keeps the session's pace as one at
// 1000 fps does, and a client 25 frames or more behind executes what it holds at once. The
// spiral-of-death guard is a budget of time per update (ClientOptions::step_budget_ns): past it
// the update returns, the game draws and services its window, and the next update steps on; a
// client that stays behind says `cannot keep up: N confirmed frames wait at tick T` at most every
// 5 s. A slow machine thus slows only itself, never into a spiral, and never the session.
//
// The budget is adaptive unless the game sets it: one frame interval of the game's own (the median
// of the last 16 intervals between drawn frames), or, when predicting, what re-simulating the
// predicted world's lead and a quarter more costs at the game's measured step cost (the median of
// the last 32 updates' cost per step), whichever is more, within 8..50 ms. So a 60 Hz game may
// spend a frame re-simulating after a misprediction, and a game with costly steps (a Python one at
// 250 ms, whose world runs 50 ticks ahead) the time its rollback takes, as GGPO's does. The
// prediction depth is the budget's worth of steps, never above `predict`, and back up as soon as
// steps get cheaper again (a busy machine lowers it for a while, not for good).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/client_session.hpp"
#include "lockstep/error.hpp"
#include "lockstep/export.h"
#include "lockstep/histogram.hpp"
#include "lockstep/module.hpp"

namespace lockstep {

struct LOCKSTEP_API ClientOptions {
  ClientConfig session;             ///< where and how to join; session.factory is the simulation (required)
  std::uint32_t input_size = 0;     ///< bytes of this game's input (the module's input_size)
  /// Playout: frames are executed this long after they fall due at least, and longer when they
  /// arrive later than that (the 95th percentile of the last second's lateness, plus a slack of
  /// its spread between 0.5 and 2 ms).
  std::int64_t playout_min_ns = 0;
  std::int64_t playout_max_ns = 150'000'000;
  /// The longest a game's update may spend stepping frames and re-simulating the predicted world
  /// before it returns (the spiral-of-death guard); frames left over are stepped on the next
  /// update. 0: adaptive (above).
  std::int64_t step_budget_ns = 0;
  /// Prediction (0: lockstep only): the most ticks the predicted world runs ahead of the
  /// verified one. The verified world is stepped, hashed, reported and probed as without it.
  std::uint32_t predict = 0;
};

/// Figures of the connection and the view, for the game's own overlay.
struct LOCKSTEP_API ClientFigures {
  std::uint32_t rtt_ms = 0, jitter_ms = 0;  ///< round trip and its variance (ENet's)
  double loss = 0;                          ///< packet loss estimate, 0..1
  std::int64_t lead_ns = 0;                 ///< how far ahead of the tick clock inputs are sampled
  std::int64_t playout_ns = 0;              ///< how far behind their due time frames are executed
  std::size_t frames_behind = 0;            ///< confirmed frames received and not executed yet
  std::uint64_t inputs_filled = 0;          ///< our inputs the server had to fill (late or lost)
  std::uint64_t frames_drawn = 0;           ///< alpha() calls that counted as a drawn frame
  std::uint64_t frames_clamped = 0;         ///< of those, frames whose alpha rested at its limit
  Tick tick = 0;                            ///< the executed (confirmed) tick
  std::int32_t slot = -1;
  /// Own input to screen: from the tick's input being sampled to the first drawn frame showing
  /// that tick (the predicted one when predicting), milliseconds.
  double input_to_screen_p50_ms = 0, input_to_screen_p99_ms = 0;
  std::uint32_t predict = 0;                ///< the prediction depth now (lowered when it cannot keep up)
  std::uint64_t predicted_ticks = 0;        ///< ticks stepped on the predicted world, re-simulations included
  std::uint64_t rebuilds = 0;               ///< times the predicted world was rebuilt from the verified one
  std::uint64_t verified_predictions = 0;   ///< confirmed ticks that had been predicted ...
  std::uint64_t mispredictions = 0;         ///< ... and of those, ones whose predicted hash was wrong
  std::int64_t predict_ns = 0;              ///< time spent predicting, all told
  std::int64_t step_budget_ns = 0;          ///< the step budget now (set, or adaptive)
  std::int64_t step_cost_ns = 0;            ///< one step's measured cost, recent median (0: none measured yet)
  std::int64_t frame_ns = 0;                ///< the game's frame interval, recent median of drawn frames (0: unknown)
};

class LOCKSTEP_API Client {
 public:
  /// Starts joining. nullptr with `error` set for a bad configuration (its field named), no
  /// socket or an unknown host.
  static std::unique_ptr<Client> create(ClientOptions options, Error* error);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Handles the network and samples inputs for the ticks due by `now_ns` (the game's monotonic
  /// clock), then executes the frames whose playout time has come, within the step budget.
  /// Returns when it next has work (the game may call it earlier or later).
  std::int64_t update(std::int64_t now_ns);

  /// This player's input from now on (input_size bytes; shorter is zero-padded); false when too
  /// long. It is sampled on every tick until it is set again.
  bool set_input(std::span<const std::uint8_t> input);
  /// A command (1..512 bytes) for the next sampled tick; commands over a tick's limits (8, 512
  /// bytes) go with the ticks after it. False when empty, too long, or 64 are already waiting.
  bool add_command(std::span<const std::uint8_t> command);

  /// For input that is a function of the tick (a bot, a recording): called for every sampled tick
  /// instead of the input and commands set above.
  void set_input_source(InputSource source);

  /// What happened since the last call (joined, started, players in and out, desyncs, the end).
  std::vector<SessionEvent> take_events();

  /// The blend factor for a frame drawn at `now_ns`, 0..1: previous() to current(). `drawn`:
  /// count this call as a drawn frame in the figures (false for a second query of one frame).
  double alpha(std::int64_t now_ns, bool drawn = true);
  /// The game presented the frame it drew last at `now_ns` (its swap or present returned). Own
  /// input to screen is counted to this time from the first call on; without it, to one frame
  /// interval after the frame's alpha() or predicted_alpha() (the next vsync of a loop that
  /// presents every frame it draws).
  void presented(std::int64_t now_ns);
  /// The current confirmed state and the one before it (nullptr before the welcome). Valid until
  /// the next update().
  [[nodiscard]] const Simulation* current() const;
  [[nodiscard]] const Simulation* previous() const;
  /// The verified state (the same as current()): stepped only on confirmed frames.
  [[nodiscard]] const Simulation* verified() const { return current(); }
  /// With prediction on: the predicted world (the verified one stepped ahead with this player's
  /// sampled inputs and everyone else's last confirmed input, no commands; rebuilt from the
  /// verified one when a confirmed frame differs from its prediction) and the state a tick before
  /// it, for drawing; never hashed or reported. nullptr with prediction off.
  [[nodiscard]] const Simulation* predicted() const;
  [[nodiscard]] const Simulation* predicted_previous() const;
  /// The blend factor for drawing predicted_previous() to predicted() at `now_ns`.
  double predicted_alpha(std::int64_t now_ns, bool drawn = true);
  /// The game's own state type, for in-process modules: nullptr when the simulation is another type.
  template <class T>
  [[nodiscard]] const T* state() const {
    return dynamic_cast<const T*>(current());
  }

  [[nodiscard]] ClientFigures figures() const;
  [[nodiscard]] bool finished() const;
  /// 0 finished, 1 runtime failure, 3 desync, 4 connection failed, refused or lost.
  [[nodiscard]] int exit_code() const;
  [[nodiscard]] std::string end_message() const;
  /// The rejoin secret from the welcome ("" before it): a copy, taken under the lock the service thread holds.
  [[nodiscard]] std::string rejoin_secret() const;
  /// Leaves cleanly; the session ends with exit code 0 once the server has been told.
  void leave(const std::string& reason);
  /// The game's result as it stands (a winner, scores: at most 256 bytes the game defines); a
  /// later call replaces it. The server settles the players' results by majority at the end and
  /// authenticates the session's result for the game's backend (ClientSession::set_result).
  bool set_result(std::span<const std::uint8_t> result);

  /// A thread that calls update() at every tick of the server's clock with CLOCK_MONOTONIC, for
  /// games whose loop runs slower than 100 Hz (so no tick's input is sampled late). While it
  /// runs, every call of this class takes a lock, and update() may still be called. Stops with
  /// stop_service() or the destructor.
  void start_service();
  void stop_service();

  /// The session underneath, for what this class does not cover (the stock client's HUD).
  [[nodiscard]] const ClientSession& session() const { return *session_; }
  [[nodiscard]] ClientSession& session() { return *session_; }

 private:
  explicit Client(ClientOptions options, std::unique_ptr<ClientSession> session);
  std::int64_t update_locked(std::int64_t now_ns);
  void note_arrivals(std::int64_t now_ns);
  void step_due(std::int64_t now_ns);
  std::int64_t playout_time(Tick t) const;
  void predict(std::int64_t now_ns);
  void note_drawn(Tick shown, std::int64_t now_ns);
  void note_step_cost(std::int64_t spent_ns, std::uint32_t steps);
  [[nodiscard]] std::int64_t step_budget() const;
  void fit_depth();

  ClientOptions options_;
  std::unique_ptr<ClientSession> session_;
  mutable std::recursive_mutex mutex_;
  std::vector<std::uint8_t> input_;
  std::vector<std::vector<std::uint8_t>> pending_;
  InputSource source_;  // commands not yet taken by a tick, oldest first
  std::vector<SessionEvent> events_;
  std::string secret_;
  Tick received_ = 0;                       // frames received so far (executed + buffered)
  std::vector<std::int64_t> lateness_;      // arrival minus due time of recent frames, ns
  std::size_t lateness_at_ = 0;
  std::int64_t playout_ns_ = 0;
  std::uint64_t drawn_ = 0, clamped_ = 0;
  // Prediction.
  std::uint32_t depth_ = 0;
  std::unique_ptr<Simulation> predicted_, predicted_prev_;
  struct Rings;                                   // by tick: own samples, predicted frames and hashes (client.cpp)
  std::unique_ptr<Rings> rings_;
  Tick predicted_base_ = UINT32_MAX;              // the verified tick the predicted world grew from
  Tick shown_ = 0;                                // the latest tick a drawn frame showed
  Histogram screen_latency_;                      // own input to screen, steady state
  struct ConfirmedFrames;                         // by tick, filled by the session with each confirmed frame
  std::shared_ptr<ConfirmedFrames> confirmed_source_;
  std::int64_t now_ = 0;
  bool said_depth_ = false;
  std::int64_t last_behind_report_ = INT64_MIN / 2;
  ClientFigures counters_;
  // The adaptive step budget and depth (above): recent samples, oldest overwritten first.
  std::vector<std::int64_t> step_costs_, frame_intervals_;
  std::size_t step_costs_at_ = 0, frame_intervals_at_ = 0;
  std::int64_t step_cost_ns_ = 0, frame_ns_ = 0, last_drawn_at_ = 0;
  std::int64_t last_depth_report_ = INT64_MIN / 2;
  bool said_lowered_ = false;  // a lowered depth was logged; its return to the most is logged once
  // Own input to screen with presentation: sample times of the ticks the last drawn frames showed.
  bool presents_ = false;
  std::vector<std::int64_t> awaiting_present_;
  std::thread service_;
  bool service_stop_ = false;
};

}  // namespace lockstep
