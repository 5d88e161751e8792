// A server shutting down gracefully (ServerSession::stop_admitting, lockstep-server's SIGTERM):
// no one new comes in, the running match plays to its end and its result is complete; a match
// stopped before its end has its result marked incomplete.
#include <doctest/doctest.h>

#include "lockstep/arena.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/server_session.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

ServerConfig two_players(Tick last_tick) {
  ServerConfig cfg;
  cfg.players = 2;
  cfg.last_tick = last_tick;
  cfg.world = arena_world(3, 20, cfg.players);
  cfg.result_key = SecretKey{4};
  return cfg;
}

}  // namespace

TEST_SUITE("session/drain") {
  TEST_CASE("a draining server admits no one new, and its running match plays to its last tick with a complete result") {
    ServerConfig cfg = two_players(400);
    cfg.allow_late_join = true;
    Session s(cfg);
    CHECK(s.server->accepting_players());  // the lobby has seats
    s.add_client(client_named("a"), 1);
    s.add_client(client_named("b"), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() >= 100; }, 20 * kSeconds));
    CHECK(s.server->started());
    CHECK_FALSE(s.server->accepting_players());  // every seat is held
    s.server->stop_admitting();
    ClientConfig watcher = client_named("w");
    watcher.spectate = true;
    ClientSession& w = s.add_client(watcher, 3);
    REQUIRE(s.until([&] { return w.finished(); }, 10 * kSeconds));
    CHECK(w.stats().refusal == "Draining");
    CHECK(s.server->stats().refusals[static_cast<std::size_t>(wire::RefuseReason::Draining)] == 1);
    REQUIRE(s.until([&] { return s.server->finished(); }, 30 * kSeconds));
    CHECK(s.server->executed_tick() == 400);
    REQUIRE(s.server->result().has_value());
    CHECK_FALSE(s.server->result()->incomplete);
    CHECK(s.server->result()->ticks == 400);
    CHECK(verify_result(*s.server->result(), SecretKey{4}));
    CHECK(s.server->exit_code() == 0);
  }

  TEST_CASE("a match stopped before its last tick has its result marked incomplete, under the MAC") {
    Session s(two_players(2000));
    s.add_client(client_named("a"), 1);
    s.add_client(client_named("b"), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() >= 150; }, 20 * kSeconds));
    s.server->stop();
    REQUIRE(s.until([&] { return s.server->finished(); }, 20 * kSeconds));
    CHECK(s.server->executed_tick() < 2000);
    REQUIRE(s.server->result().has_value());
    CHECK(s.server->result()->incomplete);
    CHECK(verify_result(*s.server->result(), SecretKey{4}));
    SessionResult flipped = *s.server->result();
    flipped.incomplete = false;
    CHECK_FALSE(verify_result(flipped, SecretKey{4}));
  }

  TEST_CASE("in the lobby a server accepts players until its seats are taken or it stops admitting") {
    Session s(two_players(300));
    s.add_client(client_named("a"), 1);
    REQUIRE(s.until([&] { return s.server->player_names()[0] == "a"; }, 10 * kSeconds));
    CHECK(s.server->accepting_players());
    CHECK_FALSE(s.server->started());
    s.server->stop_admitting();
    CHECK_FALSE(s.server->accepting_players());
    ClientSession& late = s.add_client(client_named("b"), 2);
    REQUIRE(s.until([&] { return late.finished(); }, 10 * kSeconds));
    CHECK(late.stats().refusal == "Draining");
    CHECK_FALSE(s.server->started());
  }
}
