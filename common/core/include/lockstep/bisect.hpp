// Where two builds of a module part on a replay, found from its keyframes: the stretches between
// keyframes are independent tests (both builds load the keyframe's bytes and step the recorded
// frames, compared tick by tick). By default every stretch is tested in order, so a difference
// confined to a few ticks is found and "they agree" means every tick was compared; a search that
// may assume a parting persists (FMA, another libm) gallops from the start and then halves. The
// first differing tick is located to the entity and field, and stepped again to make sure it is
// a difference between the builds, not a build that differs from itself.
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
  /// The parting did not happen again when its stretch was stepped a second time: a build gives
  /// two results for one input (uninitialised memory, an address, a clock), not the builds two
  /// results. `unsteady` names which ("a", "b" or "both"), at `tick`; `parted` is false.
  std::string unsteady;
  bool exhaustive = true;     ///< every tick before `tick` (or every tick, when none parted) was compared
  Tick tick = 0;              ///< the first tick whose states differ
  StateDifference difference;
  std::uint64_t a_hash = 0, b_hash = 0;
  std::size_t stretches = 0, stretches_tested = 0;
  std::uint64_t ticks_simulated = 0;  ///< by both builds together
  std::uint64_t linear_ticks = 0;     ///< what stepping both from the replay's start to the tick costs
};

/// `replay` read whole (its keyframes with their states). `linear` (the tool's default) tests every
/// stretch in order. Without it, a build that parts in one stretch is taken to part in every later
/// one too (a difference in the arithmetic: FMA, another libm or compiler): the search gallops and
/// halves, and `exhaustive` is false when it reports a parting; when it finds none it tests the
/// stretches it skipped, so "no parting" always means every tick was compared.
/// `a` and `b` build each side's worlds: two modules' create, or a module's and a game's own
/// implementation (lockstep_bisect_game).
LOCKSTEP_API BisectResult bisect_replay(const WorldFactory& a, const WorldFactory& b, const Replay& replay, bool linear);

}  // namespace lockstep
