// Step and hash cost per body, and the hash beside memcpy and serialization of the same bytes; the
// skirmish's step and hash at 1000 and 5000 units beside the tick.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lockstep/arena.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/state_hash.hpp"
#include "step_timing.hpp"

namespace lockstep::bench {

namespace {

// The skirmish's golden world with `units` units in all (1000 for 4 bot players, 5000 for 8),
// after 4 s of play (the bots have sent their armies out), stepped with its bots' commands.
void run_skirmish(const Options& opt, std::vector<Row>& rows) {
  const int ticks = opt.quick ? 5 : 50;
  for (const std::uint32_t units : {1000u, 5000u}) {
    Scenario sc = golden_scenario(skirmish_module());
    sc.world.players = units >= 5000 ? 8 : 4;
    std::string error;
    if (!sc.module->parse_world("units=" + std::to_string(units / sc.world.players), &sc.world, &error)) {
      std::fprintf(stderr, "lockstep-bench: skirmish world: %s\n", error.c_str());
      g_section_failed = true;
      return;
    }
    auto sim = sc.module->create(sc.world);
    Tick t = 0;
    while (t < 400) sim->step(scenario_frame(sc, ++t));
    std::vector<InputFrame> frames;  // built before timing: the bots' work is not the simulation's
    for (int r = 0; r <= opt.repetitions; ++r)
      for (int i = 0; i < ticks; ++i) frames.push_back(scenario_frame(sc, t + 1 + static_cast<Tick>(frames.size())));
    std::size_t next = 0;
    std::uint64_t sink = 0;
    const double step_hash_ns = median_ns(opt.repetitions, [&] {
      for (int i = 0; i < ticks; ++i) {
        sim->step(frames[next++]);
        sink += sim->hash();
      }
    }) / ticks;
    const double hash_ns = median_ns(opt.repetitions * 3, [&] { sink += sim->hash(); });
    if (sink == 42) std::puts("");
    const std::string n = std::to_string(units);
    rows.push_back({"sim", "skirmish step+hash @" + n + " units, " + std::to_string(sc.world.players) + "p", step_hash_ns / 1e6, "ms", 10.0, "one tick", "< 5 ms",
                    step_hash_ns < 5e6, "hash alone " + std::to_string(static_cast<int>(hash_ns / 1e3)) + " us"});
  }
}

}  // namespace

void run_sim(const Options& opt, std::vector<Row>& rows) {
  run_skirmish(opt, rows);
  const std::vector<std::uint32_t> sizes = opt.quick ? std::vector<std::uint32_t>{1000, 5000}
                                                     : std::vector<std::uint32_t>{1000, 10000, 100000};
  const int ticks = opt.quick ? 5 : 20;  // ticks per repetition
  double per_body_smallest = 0;
  for (std::uint32_t bodies : sizes) {
    Scenario sc = golden_scenario(arena_module());
    sc.world = arena_world(20261122, bodies, sc.world.players);
    auto sim = make_arena(sc.world);
    Tick t = 0;
    for (; t < 100; ) sim->step(scenario_frame(sc, ++t));  // settle initial contacts
    const double step_ns = median_ns(opt.repetitions, [&] {
      for (int i = 0; i < ticks; ++i) sim->step(scenario_frame(sc, ++t));
    }) / ticks;
    std::uint64_t sink = 0;
    const double hash_ns = median_ns(opt.repetitions * 3, [&] { sink += sim->hash(); });
    std::vector<std::uint8_t> bytes, copy;
    const double ser_ns = median_ns(opt.repetitions * 3, [&] { bytes.clear(); sim->serialize(bytes); });
    copy.resize(bytes.size());
    const double memcpy_ns = median_ns(opt.repetitions * 3, [&] {
      std::memcpy(copy.data(), bytes.data(), bytes.size());
      sink += copy[bytes.size() / 2];
    });
    if (sink == 42) std::puts("");  // keep the work observable
    const std::string n = std::to_string(bodies);
    const double per_body = step_ns / bodies;
    if (per_body_smallest == 0) per_body_smallest = per_body;
    rows.push_back({"sim", "step ns/body @" + n, per_body, "ns", per_body_smallest, "step ns/body @" + std::to_string(sizes[0]),
                    "<= 1.5x", per_body <= 1.5 * per_body_smallest, ""});
    rows.push_back({"sim", "step+hash @" + n, (step_ns + hash_ns) / 1e6, "ms", 5.0, "half a tick", "< 5 ms",
                    step_ns + hash_ns < 5e6, ""});
    rows.push_back({"sim", "hash @" + n + " (" + std::to_string(bytes.size() / 1024) + " KiB)", hash_ns / 1e3, "us",
                    memcpy_ns / 1e3, "memcpy same bytes", "<= 2x", hash_ns <= 2 * memcpy_ns, ""});
    rows.push_back({"sim", "serialize+hash @" + n, (ser_ns + hash_ns) / 1e3, "us", step_ns * 0.05 / 1e3, "5% of step",
                    "<= 5%", ser_ns + hash_ns <= step_ns * 0.05, ""});
  }
}

}  // namespace lockstep::bench

namespace lockstep::bench {

// The native half of the browser's step-time figure (tools/measure-web.sh runs the wasm half in
// Chromium on the same workload, bench/step_timing.hpp, and prints the ratio).
void run_web(const Options& opt, std::vector<Row>& rows) {
  const int ticks = opt.quick ? 2000 : 30000;
  std::vector<double> medians;
  StepTiming last;
  for (int r = 0; r < std::max(1, opt.repetitions / 2); ++r) {
    last = time_steps(arena_module(), ticks);
    medians.push_back(last.median_us);
  }
  std::sort(medians.begin(), medians.end());
  rows.push_back({"web", "arena step, native (wasm: tools/measure-web.sh)", medians[medians.size() / 2], "us", 0, "", "", true,
                  "hash after " + std::to_string(ticks) + " ticks " + hash_hex(last.hash)});
}

}  // namespace lockstep::bench
