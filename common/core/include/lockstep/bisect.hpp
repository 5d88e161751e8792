// Where two builds of a module part on a replay, found from its keyframes: the stretches between
// keyframes are independent tests (both builds load the keyframe's bytes and step the recorded
// frames, compared tick by tick), searched galloping from the start and then by halves for the
// first stretch where they part; its first differing tick is located to the entity and field.
#pragma once

#include <cstdint>

#include "lockstep/desync.hpp"
#include "lockstep/export.h"
#include "lockstep/module.hpp"
#include "lockstep/replay.hpp"

namespace lockstep {

struct LOCKSTEP_API BisectResult {
  bool ok = false;            ///< false: a keyframe did not load into a build (`error` says which)
  std::string error;
  bool parted = false;
  Tick tick = 0;              ///< the first tick whose states differ
  StateDifference difference;
  std::uint64_t a_hash = 0, b_hash = 0;
  std::size_t stretches = 0, stretches_tested = 0;
  std::uint64_t ticks_simulated = 0;  ///< by both builds together
  std::uint64_t linear_ticks = 0;     ///< what stepping both from the replay's start to the tick costs
};

/// `replay` read whole (its keyframes with their states). Without `linear`, a build that parts in
/// one stretch is taken to part in every later one too (a difference in the arithmetic: FMA,
/// another libm or compiler); `linear` tests every stretch in order, exact for a difference that
/// shows only now and then.
/// `a` and `b` build each side's worlds: two modules' create, or a module's and a game's own
/// implementation (lockstep_bisect_game).
LOCKSTEP_API BisectResult bisect_replay(const WorldFactory& a, const WorldFactory& b, const Replay& replay, bool linear);

}  // namespace lockstep
