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

/// The tick from which it agrees again (a difference confined to a window); 0: never.
inline Tick& parting_until() {
  static Tick t = 0;
  return t;
}

/// Worlds the parting build has made: with `parting_only_in_world`, only that one (counted from 1)
/// parts, as a build that differs from itself would (uninitialised memory).
inline int& parting_worlds_made() {
  static int n = 0;
  return n;
}
inline int& parting_only_in_world() {
  static int n = 0;
  return n;
}

/// A WorldFactory / SimulationFactory of the parting build.
inline std::unique_ptr<Simulation> parting_arena(const WorldParams& w) {
  auto s = arena_module().create(w);
  if (!s) return nullptr;
  const int made = ++parting_worlds_made();
  return std::make_unique<HookedSimulation>(
      std::move(s),
      [made](Simulation& inner, const InputFrame& f) {
        inner.step(f);
        const bool in_window = inner.tick() >= parting_tick() && (parting_until() == 0 || inner.tick() < parting_until());
        if (in_window && (parting_only_in_world() == 0 || parting_only_in_world() == made)) inner.perturb(7);
      },
      1);
}

}  // namespace lockstep::testing
