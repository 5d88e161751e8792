// Bisection of two builds over a replay's keyframes (bisect.hpp).
#include "lockstep/bisect.hpp"

#include <map>
#include <memory>
#include <utility>

namespace lockstep {

BisectResult bisect_replay(const WorldFactory& a, const WorldFactory& b, const Replay& r, bool linear) {
  BisectResult out;
  std::vector<Tick> bounds{r.frames_from};
  for (const ReplayKeyframe& k : r.keyframes)
    if (k.tick > r.frames_from && k.tick < r.frames_from + r.frames.size()) bounds.push_back(k.tick);
  bounds.push_back(r.frames_from + static_cast<Tick>(r.frames.size()));
  out.stretches = bounds.size() - 1;
  // Both builds at `from`: the replay's state there, loaded by each.
  const auto worlds_at = [&](Tick from, std::unique_ptr<Simulation>* x, std::unique_ptr<Simulation>* y) {
    *x = a(r.header.world);
    *y = b(r.header.world);
    if (!*x || !*y) {
      out.error = "a build cannot create this replay's world";
      return false;
    }
    if (from == 0) return true;
    const ReplayKeyframe* k = r.keyframe(from);
    if (!k || !(*x)->deserialize(k->state) || !(*y)->deserialize(k->state)) {
      out.error = "the keyframe of tick " + std::to_string(from) + " does not load into both builds";
      return false;
    }
    // A build that loads the bytes into another state parts at the load, not at the next tick.
    if ((*x)->hash() != k->hash || (*y)->hash() != k->hash) {
      out.error = "the keyframe of tick " + std::to_string(from) + " does not load as recorded into the " +
                  ((*x)->hash() != k->hash ? "first" : "second") + " build (its hash after loading is another)";
      return false;
    }
    return true;
  };
  // Steps both through stretch i, stopping at the first tick they differ (or at `until`): that
  // tick, 0 when they agree throughout, or -1 on a failure to load. Leaves the worlds in x and y.
  std::unique_ptr<Simulation> x, y;
  const auto run = [&](std::size_t i, Tick until) -> std::int64_t {
    if (!worlds_at(bounds[i], &x, &y)) return -1;
    for (Tick t = bounds[i] + 1; t <= std::min(bounds[i + 1], until); ++t) {
      const InputFrame& f = r.frames[t - r.frames_from - 1];
      x->step(f);
      y->step(f);
      out.ticks_simulated += 2;
      if (x->hash() != y->hash()) return t;
    }
    return 0;
  };
  std::map<std::size_t, std::pair<Tick, std::pair<std::uint64_t, std::uint64_t>>> parted_at;  // and both hashes
  std::vector<bool> tested(out.stretches, false);
  const auto parts = [&](std::size_t i) -> int {
    const std::int64_t t = run(i, bounds[i + 1]);
    if (t < 0) return -1;
    tested[i] = true;
    ++out.stretches_tested;
    if (t > 0) parted_at[i] = {static_cast<Tick>(t), {x->hash(), y->hash()}};
    return t > 0 ? 1 : 0;
  };
  // The first stretch from `from` on (untested ones only) that parts, in order; stretches when none.
  const auto first_in_order = [&](std::size_t from, std::size_t* found) {
    for (std::size_t i = from; i < out.stretches; ++i) {
      if (tested[i]) {
        if (parted_at.count(i)) return *found = i, true;
        continue;
      }
      const int p = parts(i);
      if (p < 0) return false;
      if (p == 1) return *found = i, true;
    }
    return *found = out.stretches, true;
  };
  std::size_t found = out.stretches;  // none
  if (linear) {
    if (!first_in_order(0, &found)) return out;
  } else {
    // Galloping from the start (stretches 0, 1, 3, 7, ...): an early parting costs little; then
    // halves between the last that held and the first that parted.
    std::size_t lo = 0, hi = out.stretches;  // the first parting stretch is in [lo, hi)
    for (std::size_t step = 1, i = 0; i < out.stretches; i += step, step *= 2) {
      const int p = parts(i);
      if (p < 0) return out;
      if (p == 1) {
        hi = i;
        break;
      }
      lo = i + 1;
    }
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const int p = parts(mid);
      if (p < 0) return out;
      if (p == 1) hi = mid;
      else lo = mid + 1;
    }
    if (hi < out.stretches && parted_at.count(hi)) {
      found = hi;
      for (std::size_t i = 0; i < hi; ++i) out.exhaustive = out.exhaustive && tested[i];
    } else if (!first_in_order(0, &found)) {  // no parting where it looked: every stretch it skipped
      return out;
    }
  }
  out.ok = true;
  if (found == out.stretches) {
    out.linear_ticks = 2ull * r.frames.size();
    return out;
  }
  // The parting stretch again, to its first differing tick, for the two states; a build whose
  // second run gives another hash there differs from itself, and the parting is not the builds'.
  const auto [tick, first_hashes] = parted_at[found];
  if (run(found, tick) < 0) {
    out.ok = false;
    return out;
  }
  bool x_steady = x->hash() == first_hashes.first, y_steady = y->hash() == first_hashes.second;
  if (x->tick() != tick) {
    // The second run parted before `tick`, where the first agreed: the build off the recording
    // there gave another result than its first run (both, when the recording does not tell).
    const auto rec = r.hash_at(x->tick());
    x_steady = rec && x->hash() == *rec;  // they differ there: at most one is the recording's
    y_steady = rec && y->hash() == *rec;
  }
  out.tick = tick;
  out.a_hash = x->hash();
  out.b_hash = y->hash();
  out.linear_ticks = 2ull * (tick - r.frames_from);
  if (!x_steady || !y_steady) {
    out.unsteady = !x_steady && !y_steady ? "both" : !x_steady ? "a" : "b";
    return out;
  }
  out.parted = true;
  out.difference = locate_difference(*x, *y);
  return out;
}

}  // namespace lockstep
