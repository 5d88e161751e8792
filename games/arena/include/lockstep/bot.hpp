// Scripted players: deterministic pseudo-random input as a pure function of (seed, tick).
#pragma once

#include <cstdint>

#include "lockstep/arena.hpp"
#include "lockstep/export.h"
#include "lockstep/input.hpp"

namespace lockstep {

/// A bot's input for `tick`. It holds one choice for a quarter second, then picks anew, so the
/// discs move purposefully; the same (seed, tick) gives the same input on every machine.
LOCKSTEP_API ArenaInput bot_input(std::uint64_t seed, Tick tick);

}  // namespace lockstep
