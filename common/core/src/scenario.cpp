// Scenarios: a module's world played by its bots, for golden traces, benchmarks and tools
// (scenario.hpp).
#include "lockstep/scenario.hpp"

#include <cstdlib>
#include <string>

#include "lockstep/log.hpp"

namespace lockstep {

Scenario golden_scenario(const Module& module) {
  Scenario sc{&module, WorldParams{{}, 4}, 7};
  std::string error;
  if (!module.parse_world(module.golden_world, &sc.world, &error)) {
    LOCKSTEP_LOG_ERROR("module %.*s: its golden world does not parse: %s", static_cast<int>(module.name.size()),
                       module.name.data(), error.c_str());
    std::abort();  // a module's own golden world must parse: a programmer's mistake
  }
  return sc;
}

InputFrame scenario_frame(const Scenario& scenario, Tick tick) {
  InputFrame f;
  f.reset(tick, scenario.world.players, scenario.module->input_size);
  PlayerTick in;
  for (std::uint32_t p = 0; p < scenario.world.players; ++p) {
    f.present |= 1u << p;
    in.input.assign(scenario.module->input_size, 0);
    in.commands.clear();
    scenario.module->bot(scenario.bot_seed + p, tick, &in);
    std::copy(in.input.begin(), in.input.end(), f.input(p).begin());
    f.add_commands(p, in.commands);
  }
  return f;
}

}  // namespace lockstep
