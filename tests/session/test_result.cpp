// The session's result as the seats settle it (docs/PROTOCOL.md §16): a claim settles the result
// only when more than half of all the seats, played to the end, make it; a seat that left has no
// say unless every seat agrees; anything less is disputed, with every seat's claim and no bytes
// chosen by slot.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/session_result.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A 3-player arena session of 400 ticks with a result key; `claims[i]` empty: player i reports
// nothing; `leaves_at[i]` non-zero: player i leaves after that tick.
SessionResult play(const std::vector<std::string>& claims, const std::vector<Tick>& leaves_at = {0, 0, 0}) {
  ServerConfig cfg;
  cfg.players = 3;
  cfg.last_tick = 400;
  cfg.world = arena_world(5, 30, cfg.players);
  cfg.result_key = SecretKey{9};
  Session s(cfg);
  for (std::size_t i = 0; i < 3; ++i) {
    ClientConfig c = client_named("p" + std::to_string(i));
    c.last_tick = leaves_at[i];
    ClientSession& client = s.add_client(c, 10 + i);
    if (!claims[i].empty()) CHECK(client.set_result(bytes(claims[i])));
  }
  REQUIRE(s.run(60 * kSeconds));
  REQUIRE(s.server->result().has_value());
  const SessionResult r = *s.server->result();
  CHECK(verify_result(r, SecretKey{9}));
  REQUIRE(r.seats.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(r.seats[i].claim == bytes(claims[i]));
  return r;
}

}  // namespace

TEST_SUITE("session/result") {
  TEST_CASE("one claim alone among three seats is disputed, not settled by whoever reported") {
    const SessionResult r = play({"", "LIAR-WINS", ""});
    CHECK(r.disputed);
    CHECK(r.result.empty());  // no bytes chosen for a disputed result
    CHECK(r.seats[1].reported);
    CHECK_FALSE(r.seats[1].agreed);
  }

  TEST_CASE("two of three seats settle the result, and the third's claim stays in the document") {
    const SessionResult r = play({"A", "A", "B"});
    CHECK_FALSE(r.disputed);
    CHECK(r.result == bytes("A"));
    CHECK(r.seats[0].agreed);
    CHECK(r.seats[1].agreed);
    CHECK_FALSE(r.seats[2].agreed);
  }

  TEST_CASE("a seat that left before the end has no say unless every seat agrees") {
    const SessionResult left = play({"", "LIAR-WINS", ""}, {0, 150, 0});
    CHECK_FALSE(left.seats[1].present);
    CHECK(left.seats[0].present);
    CHECK(left.disputed);
    CHECK(left.result.empty());
    // Two present seats and the departed one agree: settled.
    const SessionResult all = play({"A", "A", "A"}, {0, 150, 0});
    CHECK_FALSE(all.disputed);
    CHECK(all.result == bytes("A"));
    // The departed seat's claim cannot make a majority with one present seat.
    const SessionResult half = play({"A", "A", "B"}, {0, 150, 0});
    CHECK(half.disputed);
  }
}
