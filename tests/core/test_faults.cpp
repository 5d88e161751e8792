// The relay's fault model: seeded, repeatable, and close to the rates asked for.
#include <doctest/doctest.h>

#include "lockstep/faults.hpp"

using namespace lockstep;

TEST_SUITE("core/faults") {
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
}
