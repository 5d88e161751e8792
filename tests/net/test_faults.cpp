// The relay's fault model: seeded, repeatable, and close to the rates asked for.
#include <doctest/doctest.h>

#include <optional>

#include "lockstep/faults.hpp"

using namespace lockstep;

TEST_SUITE("net/faults") {
  TEST_CASE("the same seed gives the same fault pattern, another seed another") {
    FaultConfig c{10, 2, 2, 40'000'000, 20'000'000, 7};
    FaultModel a(c, 1), b(c, 1), other_stream(c, 2);
    FaultConfig c2 = c;
    c2.seed = 8;
    FaultModel other_seed(c2, 1);
    int differ_stream = 0, differ_seed = 0;
    for (int i = 0; i < 1000; ++i) {
      const Fate x = a.next(), y = b.next(), z = other_stream.next(), w = other_seed.next();
      REQUIRE(x.lost == y.lost);
      REQUIRE(x.copies == y.copies);
      REQUIRE(x.hold_ns[0] == y.hold_ns[0]);
      differ_stream += x.hold_ns[0] != z.hold_ns[0];
      differ_seed += x.hold_ns[0] != w.hold_ns[0];
    }
    CHECK(differ_stream > 900);
    CHECK(differ_seed > 900);
  }

  TEST_CASE("rates and delays follow the configuration") {
    FaultConfig c{10, 2, 2, 40'000'000, 20'000'000, 3};
    FaultModel m(c, 1);
    int lost = 0, dup = 0, reo = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      const Fate f = m.next();
      lost += f.lost;
      dup += f.copies == 2;
      reo += f.reordered;
      const std::int64_t extra = f.reordered ? 30'000'000 : 0;
      CHECK(f.hold_ns[0] >= 20'000'000);
      CHECK(f.hold_ns[0] <= 60'000'000 + extra);
    }
    CHECK(lost == doctest::Approx(n * 0.10).epsilon(0.05));
    CHECK(dup == doctest::Approx(n * 0.02).epsilon(0.1));
    CHECK(reo == doctest::Approx(n * 0.02).epsilon(0.1));
  }

  TEST_CASE("the relay delivers each flow's datagrams at their due time, counts every fate, and bounds its queue") {
    FaultConfig c{20, 5, 5, 30'000'000, 10'000'000, 11};
    FaultRelay relay(c, 2, 1'000'000);
    REQUIRE(relay.add_flow() == std::optional<std::size_t>(0));
    REQUIRE(relay.add_flow() == std::optional<std::size_t>(1));
    CHECK_FALSE(relay.add_flow().has_value());  // two flows at most
    std::uint64_t delivered = 0;
    std::int64_t last_due = 0;
    for (int i = 0; i < 2000; ++i) {
      const std::uint8_t b[2] = {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i >> 8)};
      relay.push(i % 3 ? FaultRelay::Direction::Up : FaultRelay::Direction::Down, static_cast<std::size_t>(i % 2), b,
                 std::int64_t{i} * 1'000'000);
    }
    CHECK(relay.update(0, [](const FaultRelay::Datagram&) { FAIL("nothing is due at 0: the minimum delay is 20 ms"); }) >=
          20'000'000);
    for (std::int64_t now = 0; now <= 3'000'000'000; now += 1'000'000)
      relay.update(now, [&](const FaultRelay::Datagram& d) {
        ++delivered;
        CHECK(d.bytes.size() == 2);
        CHECK(now >= last_due);
        last_due = now;
      });
    const auto& up = relay.up();
    const auto& down = relay.down();
    CHECK(up.in + down.in == 2000);
    // Every datagram in is lost or out (twice when duplicated), nothing is left queued.
    CHECK(up.out + down.out == delivered);
    CHECK(up.in - up.lost + up.duplicated == up.out);
    CHECK(down.in - down.lost + down.duplicated == down.out);
    CHECK(relay.next_due() == INT64_MAX);
    CHECK(up.lost == doctest::Approx(0.2 * static_cast<double>(up.in)).epsilon(0.25));
    // The same seed and datagrams give the same faults; a full queue loses what comes.
    FaultRelay small(FaultConfig{0, 0, 0, 50'000'000, 0, 1}, 1, 3);
    REQUIRE(small.add_flow().has_value());
    const std::uint8_t b[1] = {1};
    for (int i = 0; i < 5; ++i) small.push(FaultRelay::Direction::Up, 0, b, 0);
    CHECK(small.up().lost == 2);
  }

  TEST_CASE("the relay counts what it hands out more than 10 ms after it was due: its own process held up") {
    FaultRelay relay(FaultConfig{0, 0, 0, 20'000'000, 0, 1}, 1, 100);
    REQUIRE(relay.add_flow().has_value());
    const std::uint8_t b[1] = {1};
    relay.push(FaultRelay::Direction::Up, 0, b, 0);          // due at 20 ms
    relay.push(FaultRelay::Direction::Down, 0, b, 15'000'000);  // due at 35 ms
    relay.update(25'000'000, [](const FaultRelay::Datagram&) {});  // 5 ms late: on time
    relay.update(60'000'000, [](const FaultRelay::Datagram&) {});  // 25 ms late
    CHECK(relay.up().late == 0);
    CHECK(relay.up().max_late_ns == 5'000'000);
    CHECK(relay.down().late == 1);
    CHECK(relay.down().max_late_ns == 25'000'000);
  }
}
