// Scenarios: a module's world played by its bots, one per slot. The golden-trace tests, the
// benchmarks and the replay tooling all use them, so they speak of the same simulation.
#pragma once

#include <cstdint>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

struct LOCKSTEP_API Scenario {
  const Module* module = nullptr;
  WorldParams world;
  std::uint64_t bot_seed = 0;  ///< player p plays module->bot(bot_seed + p, tick)
};

/// The golden scenario of a module: its golden world, 4 bot players, bot seed 7.
LOCKSTEP_API Scenario golden_scenario(const Module& module);

/// Every player present, each with its bot's input and commands for `tick`.
LOCKSTEP_API InputFrame scenario_frame(const Scenario& scenario, Tick tick);

}  // namespace lockstep
