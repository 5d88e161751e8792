// The golden trace: the shared scenario's hashes at fixed ticks, checked in. Any change that
// alters the simulation's results fails here and must update golden/arena_trace.txt on purpose.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"

using namespace lockstep;

TEST_SUITE("core/golden") {
  TEST_CASE("the golden scenario reproduces the checked-in hashes") {
    std::ifstream in(std::string(LOCKSTEP_GOLDEN_DIR) + "/arena_trace.txt");
    REQUIRE(in.good());
    std::map<Tick, std::uint64_t> expected;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto parsed = parse_hash_line(line);
      REQUIRE_MESSAGE(parsed.has_value(), "bad line in arena_trace.txt: " << line);
      expected[parsed->tick] = parsed->hash;
    }
    REQUIRE(expected.size() == 5);

    const Scenario sc = golden_scenario();
    auto sim = make_arena(sc.world);
    for (Tick t = 1; t <= expected.rbegin()->first; ++t) {
      sim->step(scenario_frame(sc, t));
      if (const auto it = expected.find(t); it != expected.end()) {
        // On mismatch the actual line is printed, ready to paste after a deliberate change.
        CHECK_MESSAGE(sim->hash() == it->second, "actual: " << format_hash_line(t, sim->hash()));
      }
    }
  }
}
