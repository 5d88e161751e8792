// Bisection of two builds over a replay's keyframes (bisect.hpp).
#include "lockstep/bisect.hpp"

#include <map>
#include <memory>

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
  // Steps both through stretch i, stopping at the first tick they differ: that tick, 0 when they
  // agree throughout, or -1 on a failure to load.
  std::unique_ptr<Simulation> x, y;
  const auto run = [&](std::size_t i) -> std::int64_t {
    if (!worlds_at(bounds[i], &x, &y)) return -1;
    ++out.stretches_tested;
    for (Tick t = bounds[i] + 1; t <= bounds[i + 1]; ++t) {
      const InputFrame& f = r.frames[t - r.frames_from - 1];
      x->step(f);
      y->step(f);
      out.ticks_simulated += 2;
      if (x->hash() != y->hash()) return t;
    }
    return 0;
  };
  std::map<std::size_t, Tick> parted_at;  // tested stretches that part, and where
  const auto parts = [&](std::size_t i) -> int {
    const std::int64_t t = run(i);
    if (t < 0) return -1;
    if (t > 0) parted_at[i] = static_cast<Tick>(t);
    return t > 0 ? 1 : 0;
  };
  std::size_t found = out.stretches;  // none
  if (linear) {
    for (std::size_t i = 0; i < out.stretches; ++i) {
      const int p = parts(i);
      if (p < 0) return out;
      if (p == 1) {
        found = i;
        break;
      }
    }
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
    if (hi < out.stretches && parted_at.count(hi)) found = hi;
  }
  out.ok = true;
  if (found == out.stretches) {
    out.linear_ticks = 2ull * r.frames.size();
    return out;
  }
  // The parting stretch again, to its first differing tick, for the two states.
  const Tick tick = parted_at[found];
  if (!worlds_at(bounds[found], &x, &y)) {
    out.ok = false;
    return out;
  }
  for (Tick t = bounds[found] + 1; t <= tick; ++t) {
    const InputFrame& f = r.frames[t - r.frames_from - 1];
    x->step(f);
    y->step(f);
    out.ticks_simulated += 2;
  }
  out.parted = true;
  out.tick = tick;
  out.difference = locate_difference(*x, *y);
  out.a_hash = x->hash();
  out.b_hash = y->hash();
  out.linear_ticks = 2ull * (tick - r.frames_from);
  return out;
}

}  // namespace lockstep
