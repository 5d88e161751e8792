// Replay verification speed: re-simulating and hashing every tick, as a multiple of real time.
#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "bench.hpp"
#include "lockstep/arena.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/games.hpp"
#include "lockstep/pacer.hpp"
#include "lockstep/bisect.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "support/parting_arena.hpp"

namespace lockstep::bench {

namespace {

// Seeking in a long recording of a 4-player arena session (one hour; a minute with --quick):
// the state at a tick from the latest keyframe, against verifying from tick 0 to it; the file's
// size with keyframes at the default interval against without; bisection's time for partings
// early, late and confined to a window.
void run_keyframes(const Options& opt, std::vector<Row>& rows) {
  const Scenario sc = golden_scenario(arena_module());
  const Tick ticks = opt.quick ? 6000 : 360000;
  const Replay with = scenario_replay(sc, ticks, kDefaultKeyframeInterval);
  Replay without = with;
  without.keyframes.clear();
  without.header.keyframe_interval = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const std::string a = (dir / ("lockstep-bench-kf-" + std::to_string(::getpid()))).string(), b = a + "-none";
  std::string error;
  if (!write_replay(a, with, &error) || !write_replay(b, without, &error)) std::abort();
  const double size_with = static_cast<double>(std::filesystem::file_size(a));
  const double size_without = static_cast<double>(std::filesystem::file_size(b));
  std::vector<double> verify_ms;
  for (int k = 0; k < (opt.quick ? 3 : 7); k += 2) {  // verifying from tick 0 is slow: 4 ticks spread over it
    const Tick t = static_cast<Tick>(static_cast<std::uint64_t>(ticks) * static_cast<std::uint64_t>(2 * k + 1) / 14 + 537);
    const std::int64_t t0 = monotonic_ns();
    Replay full;
    if (read_replay(b, &full, &error) != ReplayError::None) std::abort();
    auto from0 = make_arena(full.header.world);
    for (Tick s = 0; s < t; ++s) {
      from0->step(full.frames[s]);
      if (from0->hash() != full.hashes[s]) std::abort();
    }
    verify_ms.push_back(static_cast<double>(monotonic_ns() - t0) / 1e6);
  }
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  const std::string span = opt.quick ? "1-minute" : "1-hour";
  const double verify = percentile(verify_ms, 50);
  // Seek as `lockstep-replay seek` does it: the file read once and checked, the frames from the
  // latest keyframe at or before the tick decoded, the keyframe loaded and stepped to the tick;
  // for every built-in game, at its first tick, the middle (999 ticks past a keyframe) and the end.
  for (const Module* m : builtin_modules()) {
    const std::string path = a + "-" + std::string(m->name);
    const Replay rec = scenario_replay(golden_scenario(*m), ticks, kDefaultKeyframeInterval);
    if (!write_replay(path, rec, &error)) std::abort();
    for (const Tick t : {Tick{0}, ticks / 2 + kDefaultKeyframeInterval - 1, ticks - 1}) {
      std::vector<double> ms;
      for (int rep = 0; rep < (opt.quick ? 1 : 5); ++rep) {
        const std::int64_t t0 = monotonic_ns();
        Replay r;
        if (read_replay(path, &r, &error, {t, t, t != 0}) != ReplayError::None) std::abort();
        auto sim = m->create(r.header.world);
        if (r.frames_from != 0 && !sim->deserialize(r.keyframe(r.frames_from)->state)) std::abort();
        for (const InputFrame& f : r.frames) sim->step(f);
        if (t != 0 && sim->hash() != rec.hashes[t - 1]) std::abort();
        ms.push_back(static_cast<double>(monotonic_ns() - t0) / 1e6);
      }
      const double seek = percentile(ms, 50);
      rows.push_back({"replay", "seek in a " + span + " 4-player " + std::string(m->name) + " replay, tick " + std::to_string(t), seek,
                      "ms", verify, "verify the arena from tick 0 (median)", "<= 100 ms", seek <= 100,
                      "median of " + std::to_string(ms.size()) + "; " + std::to_string(std::filesystem::file_size(path)) + " bytes"});
    }
    std::filesystem::remove(path);
  }
  rows.push_back({"replay", "size with keyframes every 10 s", size_with / size_without, "x", 1, "without keyframes",
                  "<= 1.25x", size_with / size_without <= 1.25,
                  std::to_string(static_cast<long long>(size_with)) + " vs " + std::to_string(static_cast<long long>(size_without)) + " bytes"});
  // Bisection (lockstep-replay bisect): the time to find a parting at tick 1, one in the middle,
  // and one confined to 100 ticks, every stretch tested in order (the default) and galloping
  // (--gallop, which assumes a parting lasts); medians of 3.
  Module other = arena_module();
  other.create = &testing::parting_arena;
  struct Case {
    const char* what;
    Tick from, until;  // until 0: it lasts
  };
  const Case cases[] = {{"at tick 1", 1, 0}, {"from the middle", ticks / 2 + 123, 0}, {"confined to 100 ticks", ticks * 2 / 3 + 123, ticks * 2 / 3 + 223}};
  for (const Case& c : cases) {
    testing::parting_tick() = c.from;
    testing::parting_until() = c.until;
    for (const bool linear : {true, false}) {
      std::vector<double> ms;
      BisectResult res;
      for (int rep = 0; rep < (opt.quick ? 1 : 3); ++rep) {
        const std::int64_t t0 = monotonic_ns();
        res = bisect_replay(arena_module().create, other.create, with, linear);
        ms.push_back(static_cast<double>(monotonic_ns() - t0) / 1e6);
        if (!res.parted || res.tick != c.from) std::abort();
      }
      rows.push_back({"replay", std::string("bisect a ") + span + " replay, a parting " + c.what + (linear ? "" : ", --gallop"),
                      percentile(ms, 50), "ms", static_cast<double>(res.linear_ticks), "ticks every stretch in order", "report",
                      true,
                      std::to_string(res.ticks_simulated) + " ticks simulated, " + std::to_string(res.stretches_tested) + " of " +
                          std::to_string(res.stretches) + " stretches tested" +
                          (res.exhaustive ? "; every tick before it compared" : "; stretches before it skipped")});
    }
  }
  testing::parting_tick() = 0;
  testing::parting_until() = 0;
}

}  // namespace

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
  run_keyframes(opt, rows);
}

}  // namespace lockstep::bench
