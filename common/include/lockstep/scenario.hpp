// The shared scenario: one fixed world and scripted inputs that the golden-trace test, the
// benchmarks and the replay tooling all use, so they speak of the same simulation.
#pragma once

#include <cstdint>

#include "lockstep/input.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

struct Scenario {
  WorldParams world;
  std::uint64_t bot_seed = 0;  ///< player p plays bot_input(bot_seed + p, tick)
};

/// The golden scenario: seed 20261122, 256 bodies, 4 bot players.
Scenario golden_scenario();

/// Every player present, each with its bot's input for `tick`.
InputFrame scenario_frame(const Scenario& scenario, Tick tick);

}  // namespace lockstep
