// The pacer's contract; its timing quality is measured by lockstep-bench, not asserted here.
#include <doctest/doctest.h>

#include "lockstep/clock.hpp"
#include "lockstep/pacer.hpp"

using namespace lockstep;

TEST_SUITE("session/pacer") {
  TEST_CASE("deadlines are absolute and a wait never returns early") {
    PacerConfig cfg;
    cfg.period_ns = 2'000'000;
    Pacer pacer(cfg);
    const std::int64_t t0 = monotonic_ns();
    pacer.start(t0);
    for (int i = 0; i < 20; ++i) {
      // Absolute: whole periods from the start, however late each wake-up was. (A wake-up
      // more than max_catch_up periods late on a loaded machine skips whole periods.)
      CHECK(pacer.next_deadline() == t0 + (i + static_cast<std::int64_t>(pacer.stats().skipped)) * cfg.period_ns);
      REQUIRE(pacer.wait());
      const std::int64_t now = monotonic_ns();
      CHECK(now >= pacer.next_deadline());
      pacer.reached(now);
    }
    CHECK(pacer.stats().ticks == 20);
  }

  TEST_CASE("a loop that falls far behind skips deadlines instead of spiralling") {
    Pacer pacer;
    pacer.start(0);
    pacer.reached(0);
    CHECK(pacer.stats().skipped == 0);
    // Served 1 s late: 100 periods behind, far over the catch-up cap of 5.
    pacer.reached(1'000'000'000 + kTickNs);
    CHECK(pacer.stats().late_ticks == 1);
    CHECK(pacer.stats().skipped > 90);
    CHECK(pacer.next_deadline() >= 1'000'000'000 + kTickNs - 5 * kTickNs);
  }

  TEST_CASE("the lateness histogram counts each deadline served unless it is turned off, the other figures either way") {
    for (const bool on : {true, false}) {
      PacerConfig cfg;
      cfg.lateness_histogram = on;
      Pacer pacer(cfg);
      pacer.start(0);
      pacer.reached(250'000);
      pacer.reached(kTickNs + 2 * kTickNs);
      CHECK(pacer.stats().ticks == 2);
      CHECK(pacer.stats().late_ticks == 1);
      CHECK(pacer.stats().max_lateness_ns == 2 * kTickNs);
      CHECK(pacer.stats().lateness.count() == (on ? 2u : 0u));
      if (on) CHECK(pacer.stats().lateness.max_us() == 20'000);
    }
  }

  TEST_CASE("a small backlog is caught up, not skipped") {
    Pacer pacer;
    pacer.start(0);
    pacer.reached(3 * kTickNs);  // three periods late: within the cap
    CHECK(pacer.stats().skipped == 0);
    CHECK(pacer.next_index() == 1);
  }

  TEST_CASE("percentiles interpolate between sorted values") {
    CHECK(percentile({}, 50) == 0.0);
    CHECK(percentile({3, 1, 2}, 50) == 2.0);
    CHECK(percentile({1, 2, 3, 4}, 100) == 4.0);
    CHECK(percentile({1, 2}, 50) == doctest::Approx(1.5));
  }

  TEST_CASE("the sleep-only pacer never spins and still never returns early") {
    PacerConfig cfg = PacerConfig::sleep_only();
    cfg.period_ns = 2'000'000;
    Pacer pacer(cfg);
    pacer.start(monotonic_ns() + 1'000'000);
    for (int i = 0; i < 10; ++i) {
      pacer.wait();
      const std::int64_t now = monotonic_ns();
      CHECK(now >= pacer.next_deadline());
      pacer.reached(now);
    }
    CHECK(pacer.spin_ns() == 0);
  }

  TEST_CASE("the tick CPU meter reads the clock once per period of ticks and always on the final tick") {
    TickCpuMeter m;
    m.every = 10;
    m.observe(1);
    const std::int64_t first = m.at_first;
    volatile std::uint64_t sink = 0;
    for (int i = 0; i < 5'000'000; ++i) sink = sink + static_cast<std::uint64_t>(i);
    m.observe(5);  // within the period: not sampled
    CHECK(m.last == 1);
    m.observe(11);
    CHECK(m.last == 11);
    CHECK(m.at_last > first);
    m.observe(14, /*final=*/true);
    CHECK(m.last == 14);
    CHECK(m.us_per_tick() > 0.0);
  }
}
