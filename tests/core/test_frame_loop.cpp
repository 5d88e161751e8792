// The client's frame loop against a fake clock: frames arrive from a "server" at exactly 100 Hz,
// the loop runs one pass per drawn frame (the worst case: a client that wakes only to draw),
// and each step costs what the test says on the fake clock.
#include <doctest/doctest.h>

#include "lockstep/frame_loop.hpp"

using namespace lockstep;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kMs = 1'000'000;

struct FakeSession {
  std::int64_t clock = 0;     // the fake monotonic clock
  std::int64_t step_ns = 0;   // what one step costs on it
  std::int64_t executed = 0;
  std::int64_t arrived() const { return clock / kTickNs; }  // frame t arrives at t * 10 ms
  std::size_t buffered() const { return static_cast<std::size_t>(arrived() - executed); }
  bool execute() {
    if (executed >= arrived()) return false;
    clock += step_ns;
    ++executed;
    return true;
  }
};

// Runs `seconds` of fake time with a pass at every frame of `fps`; returns the passes.
std::vector<FramePass> run(FakeSession& s, FrameLoop& loop, double fps, int seconds) {
  std::vector<FramePass> passes;
  const auto period = static_cast<std::int64_t>(static_cast<double>(kSecond) / fps);
  std::int64_t next = 0;
  while (next <= seconds * kSecond) {
    s.clock = std::max(s.clock, next);
    passes.push_back(loop.pass(s.clock, s.buffered(), [&] { return s.execute(); }, [&] { return s.clock; }));
    next += period;
  }
  return passes;
}
}  // namespace

TEST_SUITE("core/frame_loop") {
  TEST_CASE("at 1, 2, 5, 12 and 1000 fps the client executes exactly 100 ticks per second") {
    for (std::int64_t fps : {1, 2, 5, 12, 1000}) {
      CAPTURE(fps);
      FakeSession s;
      s.step_ns = 20'000;  // 20 us a step: cheap
      FrameLoop loop;
      for (std::int64_t f = 0; f <= 10 * fps; ++f) {
        s.clock = std::max(s.clock, f * kSecond / fps);  // exact frame boundaries, no rounding drift
        const FramePass p = loop.pass(s.clock, s.buffered(), [&] { return s.execute(); }, [&] { return s.clock; });
        CHECK_FALSE(p.over_budget);
        CHECK(p.behind == 0);
        if (f % fps == 0) CHECK(s.executed == f / fps * 100);  // every frame that has arrived, no more
      }
    }
  }

  TEST_CASE("at 1 fps one pass executes the whole second's 100 frames") {
    FakeSession s;
    FrameLoop loop;
    const auto passes = run(s, loop, 1.0, 5);
    REQUIRE(passes.size() == 6);
    for (std::size_t i = 1; i < passes.size(); ++i) CHECK(passes[i].executed == 100);
  }

  TEST_CASE("a step that costs 15 ms of a 10 ms tick trips the report and never spirals") {
    FakeSession s;
    s.step_ns = 15 * kMs;
    FrameLoopConfig cfg;
    FrameLoop loop(cfg);
    int reports = 0;
    std::int64_t longest_pass = 0;
    // Passes as the real loop runs them: at once again while over budget, else at 60 fps.
    std::int64_t next = 0;
    while (s.clock < 20 * kSecond) {
      s.clock = std::max(s.clock, next);
      const std::int64_t start = s.clock;
      const FramePass p = loop.pass(s.clock, s.buffered(), [&] { return s.execute(); }, [&] { return s.clock; });
      longest_pass = std::max(longest_pass, s.clock - start);
      reports += p.report ? 1 : 0;
      next = p.over_budget ? s.clock : start + kSecond / 60;
    }
    CHECK(reports >= 1);
    CHECK(reports <= 20 / 5 + 1);  // rate-limited to one per 5 s
    // Stepping never runs longer than the credit it banked plus one step: no spiral.
    CHECK(longest_pass <= cfg.timestep.max_credit_ns + s.step_ns);
    // It used its time: 2/3 of real time's ticks, the most 15 ms steps can do.
    CHECK(s.executed >= 20 * 100 * 2 / 3 - 2);
    CHECK(s.executed <= 20 * 100 * 2 / 3 + 2);
    CHECK(loop.budget().mean_step_ns() == 15 * kMs);
  }

  TEST_CASE("drawing keeps its own schedule and never bursts after a late pass") {
    FrameLoopConfig cfg;
    cfg.frame_period_ns = kSecond / 60;
    FrameLoop loop(cfg);
    FakeSession s;
    int draws = 0;
    for (std::int64_t t = 0; t < kSecond; t += kMs) {  // passes every 1 ms (socket wakes)
      s.clock = t;
      draws += loop.pass(t, 0, [] { return false; }, [&] { return s.clock; }).draw ? 1 : 0;
    }
    CHECK(draws >= 59);
    CHECK(draws <= 61);
    // A 500 ms stall: one draw, then the normal rate again.
    s.clock = 1500 * kMs;
    CHECK(loop.pass(s.clock, 0, [] { return false; }, [&] { return s.clock; }).draw);
    CHECK_FALSE(loop.pass(s.clock + kMs, 0, [] { return false; }, [&] { return s.clock; }).draw);
  }
}
