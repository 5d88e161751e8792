#include "lockstep/scenario.hpp"

#include "lockstep/arena.hpp"
#include "lockstep/bot.hpp"

namespace lockstep {

Scenario golden_scenario() { return {arena_world(20261122, 256, 4), 7}; }

InputFrame scenario_frame(const Scenario& scenario, Tick tick) {
  InputFrame f;
  f.tick = tick;
  for (std::uint32_t p = 0; p < scenario.world.players; ++p) {
    f.present |= 1u << p;
    f.inputs[p] = bot_input(scenario.bot_seed + p, tick);
  }
  return f;
}

}  // namespace lockstep
