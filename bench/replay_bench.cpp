// Replay verification speed: re-simulating and hashing every tick, as a multiple of real time.
#include <string>

#include "bench.hpp"
#include "lockstep/arena.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/pacer.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"

namespace lockstep::bench {

void run_replay(const Options& opt, std::vector<Row>& rows) {
  for (std::uint32_t bodies : {64u, 1000u, 10000u}) {
    Scenario sc = golden_scenario(arena_module());
    sc.world = arena_world(20261122, bodies, sc.world.players);
    const Tick ticks = opt.quick ? 50 : (bodies >= 10000 ? 300 : 2000);
    const Replay r = scenario_replay(sc, ticks);
    std::vector<double> rates;
    for (int rep = 0; rep < (opt.quick ? 1 : 3); ++rep) {
      auto sim = make_arena(r.header.world);
      const std::int64_t t0 = monotonic_ns();
      std::size_t ok = 0;
      for (std::size_t i = 0; i < r.frames.size(); ++i) {
        sim->step(r.frames[i]);
        ok += sim->hash() == r.hashes[i];
      }
      const double secs = static_cast<double>(monotonic_ns() - t0) / 1e9;
      if (ok != r.frames.size()) std::abort();
      rates.push_back(static_cast<double>(r.frames.size()) / secs);
    }
    const double tps = percentile(rates, 50);
    rows.push_back({"replay", "verify @" + std::to_string(bodies) + " bodies", tps / kTickRate, "x real", 100, "100x",
                    bodies == 1000 ? ">= 100x" : "", bodies != 1000 || tps / kTickRate >= 100,
                    std::to_string(static_cast<int>(tps)) + " ticks/s"});
  }
}

}  // namespace lockstep::bench
