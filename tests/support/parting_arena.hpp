// Another "build" of the arena, for bisection's tests and benchmark: the arena's worlds, except
// that from tick parting_tick() on one value is nudged by one bit every tick, so it parts from
// the arena at a tick the caller knows.
#pragma once

#include <memory>

#include "lockstep/arena.hpp"
#include "lockstep/simulation.hpp"
#include "support/hooked_simulation.hpp"

namespace lockstep::testing {

/// The tick from which the parting build differs.
inline Tick& parting_tick() {
  static Tick t = 0;
  return t;
}

/// A WorldFactory / SimulationFactory of the parting build.
inline std::unique_ptr<Simulation> parting_arena(const WorldParams& w) {
  auto s = arena_module().create(w);
  if (!s) return nullptr;
  return std::make_unique<HookedSimulation>(
      std::move(s),
      [](Simulation& inner, const InputFrame& f) {
        inner.step(f);
        if (inner.tick() >= parting_tick()) inner.perturb(7);
      },
      1);
}

}  // namespace lockstep::testing
