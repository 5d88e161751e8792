// The golden traces: each built-in module's golden scenario's hashes at fixed ticks, checked in. Any change that
// alters the simulation's results fails here and must update golden/<module>_trace.txt on purpose.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"

using namespace lockstep;

namespace {

// Module m's golden scenario against golden/<name>_trace.txt.
void check_trace(const Module& m) {
  {
    const std::string file = std::string(m.name) + "_trace.txt";
    std::ifstream in(std::string(LOCKSTEP_GOLDEN_DIR) + "/" + file);
    REQUIRE(in.good());
    std::map<Tick, std::uint64_t> expected;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto parsed = parse_hash_line(line);
      REQUIRE_MESSAGE(parsed.has_value(), "bad line in " << file << ": " << line);
      expected[parsed->tick] = parsed->hash;
    }
    REQUIRE(expected.size() == 5);

    const Scenario sc = golden_scenario(m);
    auto sim = m.create(sc.world);
    for (Tick t = 1; t <= expected.rbegin()->first; ++t) {
      sim->step(scenario_frame(sc, t));
      if (const auto it = expected.find(t); it != expected.end()) {
        // On mismatch the actual line is printed, ready to paste after a deliberate change.
        CHECK_MESSAGE(sim->hash() == it->second, "actual: " << format_hash_line(t, sim->hash()));
      }
    }
  }
}

}  // namespace

TEST_SUITE("core/golden") {
  TEST_CASE("the golden scenario reproduces the checked-in hashes") { check_trace(*find_module("arena")); }
  TEST_CASE("the skirmish's golden scenario reproduces its checked-in hashes") { check_trace(skirmish_module()); }
}
