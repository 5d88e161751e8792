// The step-time workload the native and the web builds both run, for the browser's figure (wasm
// step time against native): a built-in game's default world of four players stepping the game's
// bot inputs from tick 1, timed in batches of 1000 steps (a browser's clock is coarse: 0.1 ms in
// Chromium without cross-origin isolation, so one step cannot be timed alone there). The same world and inputs give the same final
// hash in both builds: the figure doubles as a check that the wasm simulation is the native one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/input.hpp"
#include "lockstep/module.hpp"

namespace lockstep::bench {

struct StepTiming {
  std::uint64_t hash = 0;  ///< after the last tick
  double median_us = 0, p90_us = 0;  ///< per step, over the batches
  int ticks = 0;
};

inline StepTiming time_steps(const Module& m, int ticks) {
  WorldParams world;
  world.players = 4;
  std::string error;
  m.parse_world("", &world, &error);
  std::unique_ptr<Simulation> w = m.create(world);
  InputFrame frame;
  constexpr int kBatch = 1000;
  std::vector<double> us;
  PlayerTick pt;
  std::int64_t batch_ns = 0;
  for (int t = 1; t <= ticks; ++t) {
    frame.reset(static_cast<Tick>(t), 4, m.input_size);
    frame.present = 0xF;
    for (std::uint32_t p = 0; p < 4; ++p) {
      pt.input.assign(m.input_size, 0);
      pt.commands.clear();
      m.bot(p + 1, static_cast<Tick>(t), &pt);
      std::copy_n(pt.input.begin(), m.input_size, frame.input(p).begin());
      frame.add_commands(p, pt.commands);
    }
    const std::int64_t a = monotonic_ns();
    w->step(frame);
    batch_ns += monotonic_ns() - a;
    if (t % kBatch == 0) {
      us.push_back(static_cast<double>(batch_ns) / 1e3 / kBatch);
      batch_ns = 0;
    }
  }
  StepTiming out;
  out.ticks = ticks;
  out.hash = w->hash();
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    out.median_us = us[us.size() / 2];
    out.p90_us = us[us.size() * 9 / 10];
  }
  return out;
}

}  // namespace lockstep::bench
