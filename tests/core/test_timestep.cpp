// The step budget (the spiral-of-death guard as time, not a step count) and the view's alpha.
#include <doctest/doctest.h>

#include "lockstep/rng.hpp"
#include "lockstep/timestep.hpp"

using namespace lockstep;

namespace {
constexpr std::int64_t kMs = 1'000'000;
}  // namespace

TEST_SUITE("core/timestep") {
  TEST_CASE("the budget banks the real time that passed, up to the cap") {
    StepBudget b;
    b.refill(0);
    CHECK(b.credit_ns() == kTickNs);  // the first pass may run one step's worth
    b.refill(40 * kMs);
    CHECK(b.credit_ns() == 50 * kMs);
    b.refill(10'000 * kMs);  // a 10 s hitch banks only the cap
    CHECK(b.credit_ns() == b.config().max_credit_ns);
    b.refill(5'000 * kMs);  // a clock that goes back banks nothing
    CHECK(b.credit_ns() == b.config().max_credit_ns);
  }

  TEST_CASE("spending below zero stops stepping until real time refills the credit") {
    StepBudget b;
    b.refill(0);
    CHECK(b.has_credit());
    b.spend(15 * kMs);  // one step that costs more than the credit
    CHECK_FALSE(b.has_credit());
    b.refill(4 * kMs);
    CHECK_FALSE(b.has_credit());
    b.refill(6 * kMs);
    CHECK(b.has_credit());
    CHECK(b.mean_step_ns() == 15 * kMs);
  }

  TEST_CASE("the mean step cost follows the recent steps") {
    StepBudget b;
    for (int i = 0; i < 200; ++i) b.spend(2 * kMs);
    CHECK(b.mean_step_ns() == 2 * kMs);
    for (int i = 0; i < 200; ++i) b.spend(8 * kMs);
    CHECK(b.mean_step_ns() > 7 * kMs);
    CHECK(b.mean_step_ns() <= 8 * kMs);
  }

  TEST_CASE("alpha is the tick clock time past the current tick, from 0 up to below 1") {
    CHECK(view_alpha(100 * kMs, 100 * kMs) == 0.0);
    CHECK(view_alpha(104 * kMs, 100 * kMs) == doctest::Approx(0.4));
    CHECK(view_alpha(99 * kMs, 100 * kMs) == 0.0);  // drawn before the tick fell due
    CHECK(view_alpha(500 * kMs, 100 * kMs) < 1.0);  // no newer frame: rest on the current state
    CHECK(view_alpha(500 * kMs, 100 * kMs) > 0.99);
    Rng rng = Rng::seeded(3);
    for (int i = 0; i < 100000; ++i) {
      const double a = view_alpha(static_cast<std::int64_t>(rng.below(1'000'000'000)), 500 * kMs);
      REQUIRE(a >= 0.0);
      REQUIRE(a < 1.0);
    }
  }
}
