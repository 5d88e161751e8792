// The client's frame loop against a fake clock and a fake frame supply.
#include <doctest/doctest.h>

#include "lockstep/frame_loop.hpp"

using namespace lockstep;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;

// Frames arrive from a "server" at exactly 100 Hz of the fake clock.
struct FakeSupply {
  std::int64_t arrived = 0, executed = 0;
  std::size_t buffered() const { return static_cast<std::size_t>(arrived - executed); }
  bool execute() {
    if (executed >= arrived) return false;
    ++executed;
    return true;
  }
};
}  // namespace

TEST_SUITE("core/frame_loop") {
  TEST_CASE("at 60 fps the client executes 100 ticks per 60 frames and alpha stays below 1") {
    FrameLoopConfig cfg;
    cfg.rate_gain = 0;  // no time sync: pure accumulator behaviour
    FrameLoop loop(cfg);
    std::int64_t executed = 0, prev = 0;
    for (int f = 1; f <= 600; ++f) {
      const std::int64_t now = f * kSecond / 60;
      const FrameResult r = loop.frame(now - prev, 100, [] { return true; });
      prev = now;
      executed += r.executed;
      CHECK(r.alpha >= 0.0);
      CHECK(r.alpha < 1.0);
      if (f % 60 == 0) CHECK(executed == f / 60 * 100);
    }
  }

  TEST_CASE("a 2 s stall followed by fast frames never executes more than the cap per frame") {
    FrameLoop loop;
    FrameResult r = loop.frame(2 * kSecond, 1000, [] { return true; });
    CHECK(r.executed <= loop.timestep().config().max_steps_per_frame);
    for (int i = 0; i < 100; ++i) {
      r = loop.frame(kSecond / 1000, 1000, [] { return true; });
      CHECK(r.executed <= loop.timestep().config().max_steps_per_frame);
    }
  }

  TEST_CASE("held frames do not accumulate time, and play resumes smoothly") {
    FrameLoop loop;
    for (int i = 0; i < 300; ++i) {
      const FrameResult r = loop.frame(kSecond / 60, 0, [] { return false; });
      CHECK(r.executed == 0);
      CHECK(r.alpha < 1.0);
    }
    CHECK(loop.timestep().accumulator_ns() < kTickNs);
    // Frames are back: at most the normal one or two per 60 fps frame, not a burst.
    const FrameResult r = loop.frame(kSecond / 60, 2, [] { return true; });
    CHECK(r.executed <= 2);
  }

  TEST_CASE("time sync settles the buffer near its target without jumps") {
    FrameLoop loop;
    FakeSupply supply;
    supply.arrived = 12;  // start with a backlog: far above the target of 2
    std::int64_t server_ns = 0;
    for (int f = 0; f < 60 * 30; ++f) {  // 30 s at 60 fps
      const std::int64_t frame = kSecond / 60;
      server_ns += frame;
      supply.arrived = 12 + server_ns / kTickNs;
      const FrameResult r = loop.frame(frame, supply.buffered(), [&] { return supply.execute(); });
      CHECK(r.rate >= 0.95);
      CHECK(r.rate <= 1.05);
      CHECK(r.executed <= 3);
    }
    CHECK(supply.buffered() <= 4);
  }
}
