// The server's own copy of the simulation: one part of ServerSession among the others. It steps
// each assembled frame, keeps the server's hash of every recent tick and a window of past states
// (for desync probes), and serializes the current state for snapshots. Nothing here knows of
// peers, sockets or clocks; a session that runs without the rules would leave this part out.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/error.hpp"
#include "lockstep/hash_ledger.hpp"
#include "lockstep/input.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

class ServerSimulation {
 public:
  static constexpr std::size_t kHistory = HashLedger::kHistory;  ///< ticks whose hash is kept

  /// Builds the world of `world` with `factory`; `history` is the state window's first size.
  /// nullptr with `error` set (Usage) when the module cannot build it or its sizes are over the
  /// protocol's limits.
  static std::unique_ptr<ServerSimulation> create(const WorldFactory& factory, const WorldParams& world,
                                                  std::size_t history, Error* error);

  /// Steps `frame` (of the next tick), records the state, and returns its hash.
  std::uint64_t step(const InputFrame& frame);
  /// The server's hash of tick t, one of the last kHistory ticks (0 is the initial state).
  [[nodiscard]] std::uint64_t hash_at(Tick t) const { return hashes_[t % kHistory]; }
  /// The state of tick t, loaded from the window (valid until the next call), or nullptr when
  /// it is no longer held.
  const Simulation* state_at(Tick t);
  /// Keeps tick t's state past the window until unpin(t); false when it is not held.
  bool pin(Tick t) { return history_.pin(t); }
  void unpin(Tick t) { history_.unpin(t); }
  /// Sizes the window for the longest round trip `rtt_ns` among the peers, within [minimum,
  /// maximum] (history_for_round_trip); grows at once, shrinks only when far too long.
  /// Returns the window's capacity.
  std::size_t fit(std::int64_t rtt_ns, std::size_t minimum, std::size_t maximum);

  [[nodiscard]] const Simulation& current() const { return *sim_; }
  [[nodiscard]] std::uint32_t input_size() const { return sim_->input_size(); }
  /// The fingerprint of this world (what a welcome carries).
  [[nodiscard]] std::uint64_t fingerprint() const { return sim_->fingerprint(); }
  /// The fingerprint a JoinRequest carries: of the module's default world.
  [[nodiscard]] std::uint64_t join_fingerprint() const { return join_fingerprint_; }

 private:
  ServerSimulation() = default;
  std::unique_ptr<Simulation> sim_;
  std::unique_ptr<Simulation> scratch_;  // a past state, loaded to answer probes
  StateHistory history_;
  std::vector<std::uint64_t> hashes_ = std::vector<std::uint64_t>(kHistory);
  std::uint64_t join_fingerprint_ = 0;
};

}  // namespace lockstep
