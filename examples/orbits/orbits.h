// orbits' state, for a game that links the module in and draws the state itself
// (examples/embed-sdl): the layout behind the module's lockstep_sim*, and its table.
#pragma once

#include <lockstep/module_abi.h>

#include <cstdint>

constexpr uint32_t kMaxPlayers = 32;
constexpr uint32_t kMaxMoons = 64;

struct Body {
  double x, y, vx, vy;
};

struct Ship {
  double x, y, vx, vy, hx, hy;  // position, velocity, heading (a unit vector)
  uint32_t crashes;
};

struct lockstep_sim {
  uint32_t tick, players, moons;
  uint64_t seed;
  Body moon[kMaxMoons];
  Ship ship[kMaxPlayers];
};

/// The module's table, for a game that passes it in-process (no dlopen).
const lockstep_module_v2* orbits_table();
