// The input lead controller on a simulated path: the client samples one input per tick with its
// current lead, the input's slack is (input delay - round trip + lead), and the server's report
// of it comes back one round trip later.
#include <doctest/doctest.h>

#include <deque>

#include "lockstep/lead.hpp"
#include "lockstep/rng.hpp"
#include "support/time.hpp"

using namespace lockstep;

namespace {
using lockstep::testing::kMs;
constexpr std::int64_t kDelay = 2 * kTickNs;  // input delay

struct Path {
  std::int64_t rtt_ns = 100 * kMs;
  std::int64_t jitter_ns = 0;  // uniform 0..jitter added to a round trip
};

struct Run {
  int late = 0;                 // inputs that would miss their deadline
  std::int64_t lead_at_end = 0;
  std::int64_t worst_excess = 0;  // most lead above the need, after convergence
};

// Runs `ticks` ticks; `path_at(tick)` gives the path; checks convergence from `settle_from`.
template <typename PathAt>
Run simulate(LeadController& lead, Tick first, Tick ticks, PathAt path_at, Tick settle_from, Rng& rng) {
  struct Report {
    Tick due;
    Tick tick;
    std::int64_t slack;
  };
  std::deque<Report> in_flight;
  Run r;
  for (Tick t = first; t < first + ticks; ++t) {
    while (!in_flight.empty() && in_flight.front().due <= t) {
      lead.report(in_flight.front().tick, in_flight.front().slack);
      in_flight.pop_front();
    }
    const Path p = path_at(t);
    lead.sampled(t);
    const std::int64_t rtt = p.rtt_ns + (p.jitter_ns ? static_cast<std::int64_t>(rng.below(static_cast<std::uint32_t>(p.jitter_ns))) : 0);
    const std::int64_t slack = kDelay - rtt + lead.lead_ns();
    if (slack < 0) ++r.late;
    if (t >= settle_from) r.worst_excess = std::max(r.worst_excess, slack);
    const Tick back = t + static_cast<Tick>((rtt + kTickNs - 1) / kTickNs);
    // Reports are sent in order; one that would overtake a slower one waits behind it.
    in_flight.push_back({std::max(back, in_flight.empty() ? back : in_flight.back().due), t, slack});
  }
  r.lead_at_end = lead.lead_ns();
  return r;
}
}  // namespace

TEST_SUITE("session/lead") {
  TEST_CASE("from the initial lead, the lead reaches the path's need within 2 s") {
    for (std::int64_t rtt : {0 * kMs, 50 * kMs, 100 * kMs, 300 * kMs, 1000 * kMs}) {
      CAPTURE(rtt);
      LeadController lead;
      Rng rng = Rng::seeded(1);
      const Run r = simulate(lead, 1, 600, [&](Tick) { return Path{rtt, 0}; }, 200, rng);
      const std::int64_t need = std::max(rtt - kDelay, lead.config().min_ns);
      CHECK(r.lead_at_end >= need);
      CHECK(r.lead_at_end <= need + lead.config().margin_ns + kMs);
      // Only the inputs sampled before the first report came back can be late.
      CHECK(r.late <= static_cast<int>(rtt / kTickNs) + 2);
    }
  }

  TEST_CASE("a step up in delay costs at most one round trip of late inputs, then none") {
    LeadController lead;
    Rng rng = Rng::seeded(2);
    simulate(lead, 1, 400, [](Tick) { return Path{100 * kMs, 0}; }, 1000, rng);
    const Run up = simulate(lead, 401, 400, [](Tick) { return Path{300 * kMs, 0}; }, 601, rng);
    CHECK(up.late <= 300 / 10 + 2);  // the ones already on their way when the path changed
    CHECK(up.lead_at_end >= 280 * kMs);
    CHECK(up.lead_at_end <= 280 * kMs + lead.config().margin_ns + kMs);
  }

  TEST_CASE("a step down in delay lowers the lead within 2 s without a single late input") {
    LeadController lead;
    Rng rng = Rng::seeded(3);
    simulate(lead, 1, 400, [](Tick) { return Path{300 * kMs, 0}; }, 1000, rng);
    const Run down = simulate(lead, 401, 200, [](Tick) { return Path{60 * kMs, 0}; }, 10000, rng);
    CHECK(down.late == 0);
    CHECK(down.lead_at_end <= 40 * kMs + lead.config().margin_ns + kMs);
    CHECK(down.lead_at_end >= 40 * kMs);
  }

  TEST_CASE("with jitter the lead covers the worst recent round trip and inputs stay on time") {
    LeadController lead;
    Rng rng = Rng::seeded(4);
    simulate(lead, 1, 300, [](Tick) { return Path{200 * kMs, 80 * kMs}; }, 1000, rng);
    const Run steady = simulate(lead, 301, 3000, [](Tick) { return Path{200 * kMs, 80 * kMs}; }, 10000, rng);
    CHECK(steady.late <= 3000 / 200);  // at most 0.5 %
    CHECK(lead.lead_ns() <= 200 * kMs + 80 * kMs - kDelay + lead.config().margin_ns + kMs);
  }

  TEST_CASE("the margin follows the path's jitter: little on a steady path, the whole margin on a jittery one") {
    // Input delay 2 ticks and a 30 ms round trip: the need is 10 ms of lead.
    LeadController steady_lead;
    Rng rng = Rng::seeded(6);
    simulate(steady_lead, 1, 600, [](Tick) { return Path{30 * kMs, 0}; }, 10000, rng);
    CHECK(steady_lead.lead_ns() >= 10 * kMs + steady_lead.config().margin_min_ns);
    CHECK(steady_lead.lead_ns() <= 10 * kMs + steady_lead.config().margin_min_ns + kMs / 10);
    LeadController jittery_lead;
    simulate(jittery_lead, 1, 600, [](Tick) { return Path{30 * kMs, 20 * kMs}; }, 10000, rng);
    // A spread near 20 ms asks for half of it, past the 4 ms cap.
    CHECK(jittery_lead.wanted_ns() >= 30 * kMs + 19 * kMs - kDelay + jittery_lead.config().margin_ns - kMs / 10);
    CHECK(jittery_lead.margin(20 * kMs) == jittery_lead.config().margin_ns);
    CHECK(jittery_lead.margin(0) == jittery_lead.config().margin_min_ns);
    CHECK(jittery_lead.margin(2 * kMs) == jittery_lead.config().margin_min_ns + kMs);
  }

  TEST_CASE("a round trip beyond the limit is told and the lead stays at the limit") {
    LeadConfig cfg;
    cfg.max_ns = 500 * kMs;
    LeadController lead(cfg);
    Rng rng = Rng::seeded(5);
    simulate(lead, 1, 500, [](Tick) { return Path{900 * kMs, 0}; }, 1000, rng);
    CHECK(lead.over_limit());
    CHECK(lead.lead_ns() == 500 * kMs);
  }

  TEST_CASE("reports for ticks it did not sample, or older than the newest, are ignored") {
    LeadController lead;
    lead.report(7, -50 * kMs);
    CHECK(lead.lead_ns() == lead.config().initial_ns);
    lead.sampled(10);
    lead.sampled(11);
    lead.report(11, -30 * kMs);
    const std::int64_t after = lead.lead_ns();
    CHECK(after > 30 * kMs);
    lead.report(10, -90 * kMs);  // older than tick 11: stale
    CHECK(lead.lead_ns() == after);
  }
}
