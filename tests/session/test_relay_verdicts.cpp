// Relay mode's verdicts against voters that are not honest or not in step (docs/GUIDE.md, "Relay
// verdicts"): a player whose hash lost to the majority no longer votes until it is back in step,
// and a player outvoted again and again by the same others is reported as possible collusion.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/games.hpp"
#include "lockstep/server_session.hpp"
#include "support/report_dir.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

const lockstep::testing::ReportDir verdict_reports("relay-verdicts");

ServerConfig relay_server(std::uint32_t players, Tick last_tick, OnDesync on_desync) {
  ServerConfig cfg;
  cfg.desync_dir = verdict_reports.path.string();
  cfg.players = players;
  cfg.last_tick = last_tick;
  cfg.world = arena_world(3, 40, players);
  cfg.relay = describe_module(default_module(), cfg.world).game;
  cfg.on_desync = on_desync;
  cfg.max_resyncs = 0;
  return cfg;
}

// A player whose rules differ from the session's at every tick that is a multiple of `every`
// (the same difference for every player built so: they agree with each other).
ClientConfig other_rules(const std::string& name, Tick every) {
  ClientConfig c = client_named(name);
  c.after_step = [every](Tick t, Simulation& s) {
    if (t % every == 0) s.perturb(t);
  };
  return c;
}

}  // namespace

TEST_SUITE("session/relay_verdicts") {
  // Two players with the same other rules outvote the honest third at every divergence and resync
  // it into their world. Nothing can tell them from an honest majority, but the same majority
  // winning against the same player again and again is reported: in the summary's figures, the
  // player's desync report and the session's result.
  TEST_CASE("a player outvoted three times by the same two is reported as possible collusion") {
    Session s(relay_server(3, 1000, OnDesync::Resync));
    s.add_client(client_named("honest"), 1);
    s.add_client(other_rules("patched-a", 150), 2);
    s.add_client(other_rules("patched-b", 150), 3);
    REQUIRE(s.run(60 * kSeconds));
    CHECK(s.server->executed_tick() == 1000);
    const ServerStats& st = s.server->stats();
    CHECK(st.collusion_suspected == 1);
    const auto outvoted = s.server->outvoted();
    REQUIRE(outvoted.size() == 1);
    CHECK(outvoted[0].name == "honest");
    CHECK(outvoted[0].times >= 3);
    CHECK(outvoted[0].by_mask == 0b110u);  // slots 1 and 2, the patched players
    CHECK(outvoted[0].suspected);
    REQUIRE(!s.server->reports().empty());
    const DesyncReport& r = s.server->reports().back();
    CHECK(r.name == "honest");
    CHECK(r.collusion.find("outvoted") != std::string::npos);
    CHECK(r.collusion.find("1 (patched-a), 2 (patched-b)") != std::string::npos);
    REQUIRE(s.server->result());
    const SessionResult& result = *s.server->result();
    REQUIRE(result.seats.size() == 3);
    CHECK(result.seats[0].collusion_suspected);
    CHECK(result.seats[0].outvoted >= 3);
    CHECK(!result.seats[1].collusion_suspected);
    CHECK(result.seats[1].outvoted == 0);
  }

  // A player that diverged at tick 200 and is not resynced (--on-desync report) stays out of step.
  // When a second one diverges at tick 400, the two honest players' hash is still a strict majority
  // of the voters that are in step: the ticks settle and the second is named. While the first one
  // still voted, 2 of 4 was no majority and every tick from 400 on was split.
  TEST_CASE("a player out of step with the majority no longer votes: the honest majority still settles") {
    Session s(relay_server(4, 900, OnDesync::Report));
    s.add_client(client_named("one"), 1);
    s.add_client(client_named("two"), 2);
    ClientConfig early = client_named("early");
    early.inject_desync_at = 200;
    s.add_client(early, 3);
    ClientConfig later = client_named("later");
    later.inject_desync_at = 400;
    later.inject_selector = 777;
    s.add_client(later, 4);
    REQUIRE(s.run(60 * kSeconds));
    CHECK(s.server->executed_tick() == 900);
    const ServerStats& st = s.server->stats();
    CHECK(st.ticks_split == 0);
    CHECK(st.ticks_settled >= 890);
    bool later_named = false;
    for (const DesyncReport& r : s.server->reports())
      if (r.name == "later") later_named = r.tick >= 400 && r.tick <= 402;
    CHECK(later_named);
  }

  // Every player's play datagrams to the server held 2.5 s while the server plays ticks 300 to 339
  // (a stall on the server's side of the network that the connections' pings do not see, so the
  // round trips stay short): those ticks are decided with no hash, past the 1 s wait. Their hashes then come and are votes after all: the ticks settle late, and a player that
  // lied about ticks 320 and 321 only is named at tick 320. Before, such hashes were dropped,
  // those ticks were never checked, and a difference confined to them was never seen.
  TEST_CASE("ticks a stall left unvoted are settled when their hashes come, and checked") {
    Session s(relay_server(3, 700, OnDesync::Report));
    s.net.set_hold([&](const lockstep::testing::SimNetwork::Datagram& d) -> std::int64_t {
      const Tick t = s.server->executed_tick();
      const bool play = d.kind == lockstep::testing::SimNetwork::Datagram::Kind::Data;
      return play && d.to_port == s.server->port() && t >= 300 && t < 450 ? 2'500'000'000 : 0;
    });
    s.add_client(client_named("one"), 1);
    s.add_client(client_named("two"), 2);
    ClientConfig liar = client_named("liar");
    liar.inject_wrong_hashes_from = 320;  // its hashes of ticks 320 and 321 only are wrong (its state is right)
    liar.inject_wrong_hashes_until = 321;
    s.add_client(liar, 3);
    REQUIRE(s.run(60 * kSeconds));
    CHECK(s.server->executed_tick() == 700);
    const ServerStats& st = s.server->stats();
    MESSAGE("settled " << st.ticks_settled << " split " << st.ticks_split << " late " << st.ticks_settled_late << " filled " << st.filled_inputs << " silences " << st.hash_silences);
    CHECK(st.ticks_settled_late > 10);
    CHECK(st.ticks_unvoted == 0);
    CHECK(st.ticks_settled + st.ticks_split == 700);
    REQUIRE(!s.server->reports().empty());
    CHECK(s.server->reports()[0].name == "liar");
    CHECK(s.server->reports()[0].tick == 320);
  }

  // A 1v1 that disagrees has no majority: nobody is resynced and nobody is blamed. Each side
  // compares its own state of the tick with the other side's (held to that side's own hash) and
  // names the entity and field, with both values; before, both reports said only "no majority".
  TEST_CASE("a 1v1 disagreement is localized to entity and field by both sides, without blame") {
    Session s(relay_server(2, 600, OnDesync::Report));
    s.add_client(client_named("ann"), 1);
    ClientConfig bob = client_named("bob");
    bob.inject_desync_at = 300;
    s.add_client(bob, 2);
    REQUIRE(s.run(60 * kSeconds));
    CHECK(s.server->executed_tick() == 600);
    REQUIRE(s.server->reports().size() == 2);
    std::set<std::string> names;
    for (const DesyncReport& r : s.server->reports()) {
      CAPTURE(r.name);
      CAPTURE(r.note);
      names.insert(r.name);
      CHECK(r.tick == 300);  // the hook flips a value right after executing tick 300
      CHECK(r.odd_one_out.empty());
      CHECK(r.where == "entity");
      REQUIRE(!r.server_fields.empty());
      CHECK(r.server_fields[0].name == r.client_fields[0].name);
      CHECK(r.server_fields[0].bits != r.client_fields[0].bits);
      CHECK(r.note.find("neither side is blamed") != std::string::npos);
    }
    CHECK(names == std::set<std::string>{"ann", "bob"});
    // Each side's values are the other's reference: the same field, the two values swapped.
    const DesyncReport &a = s.server->reports()[0], &b = s.server->reports()[1];
    CHECK(a.entity == b.entity);
    CHECK(a.server_fields[0].bits == b.client_fields[0].bits);
    CHECK(a.client_fields[0].bits == b.server_fields[0].bits);
    CHECK(s.server->stats().resyncs == 0);
  }
}
