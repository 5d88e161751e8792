// The accumulator against the cases of "Fix Your Timestep" and Unity's fixed update.
#include <doctest/doctest.h>

#include <vector>

#include "lockstep/rng.hpp"
#include "lockstep/timestep.hpp"

using namespace lockstep;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;

std::vector<int> run(FixedTimestep& ts, std::int64_t frame_ns, int frames) {
  std::vector<int> steps;
  for (int i = 0; i < frames; ++i) steps.push_back(ts.advance(frame_ns));
  return steps;
}
}  // namespace

TEST_SUITE("core/timestep") {
  TEST_CASE("50 fps display with a 100 Hz simulation takes two steps a frame") {
    FixedTimestep ts;
    for (int s : run(ts, kSecond / 50, 500)) CHECK(s == 2);
    CHECK(ts.accumulator_ns() == 0);
  }

  TEST_CASE("200 fps takes one step every second frame") {
    FixedTimestep ts;
    const auto steps = run(ts, kSecond / 200, 400);
    for (std::size_t i = 0; i < steps.size(); ++i) CHECK(steps[i] == (i % 2 == 1 ? 1 : 0));
  }

  TEST_CASE("60 fps alternates one and two steps and averages 100 steps per 60 frames") {
    FixedTimestep ts;
    // 1/60 s is not a whole number of nanoseconds; feed the exact frame boundaries instead.
    std::int64_t prev = 0, total = 0;
    for (int f = 1; f <= 6000; ++f) {
      const std::int64_t now = f * kSecond / 60;
      const int s = ts.advance(now - prev);
      prev = now;
      CHECK((s == 1 || s == 2));
      total += s;
      if (f % 60 == 0) CHECK(total == f / 60 * 100);
    }
  }

  TEST_CASE("a 1 s hitch is clamped to 250 ms and the steps per frame are capped") {
    FixedTimestep ts;
    CHECK(ts.advance(kSecond) == ts.config().max_steps_per_frame);
    CHECK(ts.clamped_ns() == 750'000'000);
    // The clamped 250 ms is worked off over the next frames, never more than the cap at once.
    int total = ts.config().max_steps_per_frame;
    for (int i = 0; i < 10; ++i) {
      const int s = ts.advance(0);
      CHECK(s <= ts.config().max_steps_per_frame);
      total += s;
    }
    CHECK(total == 25);
  }

  TEST_CASE("alpha stays at or above 0 and below 1 for any frame times") {
    FixedTimestep ts;
    Rng rng = Rng::seeded(3);
    for (int i = 0; i < 100000; ++i) {
      ts.advance(static_cast<std::int64_t>(rng.below(40'000'000)));
      REQUIRE(ts.alpha() >= 0.0);
      REQUIRE(ts.alpha() < 1.0);
    }
  }

  TEST_CASE("no drift over 1 000 000 frames of irregular length") {
    FixedTimestep ts;
    Rng rng = Rng::seeded(11);
    std::int64_t elapsed = 0, steps = 0;
    for (int i = 0; i < 1'000'000; ++i) {
      const auto frame = static_cast<std::int64_t>(1'000'000 + rng.below(30'000'000));  // 1..31 ms
      elapsed += frame;
      steps += ts.advance(frame);
    }
    // Every nanosecond is accounted for: consumed steps plus the remainder equal the time fed.
    CHECK(ts.clamped_ns() == 0);
    CHECK(steps * kTickNs + ts.accumulator_ns() == elapsed);
  }

  TEST_CASE("holding for missing input never piles up time") {
    FixedTimestep ts;
    for (int i = 0; i < 1000; ++i) ts.hold(ts.advance(kSecond / 30));
    CHECK(ts.accumulator_ns() < kTickNs);
    CHECK(ts.alpha() < 1.0);
    // Once frames are available again, it resumes at the normal rate.
    CHECK(ts.advance(kSecond / 50) <= 2);
  }
}
