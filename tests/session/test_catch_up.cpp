// A joiner served a state far behind the session (relay mode's keyframe, up to 30 s old) catches
// up at any latency: the server streams the frames after its acknowledgement ahead of the newest
// ones, a window of them in flight, instead of one window a stall.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/faults.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/games.hpp"
#include "lockstep/server_session.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

TEST_SUITE("session/catch_up") {
  // At 150 ms one way with 2 % loss, a late joiner at tick 1800 is served the keyframe of tick
  // 1000 (8 s behind). It once gained about 13 ticks a round trip and never caught up; now it is
  // at the session's pace within a few seconds and plays to the end hash-equal.
  TEST_CASE("a late joiner from an 8 s old keyframe at 80 to 250 ms one way with 2 % loss catches up and plays to the end") {
    struct Leg {
      bool relay;
      std::int64_t one_way_ms;
    };
    for (const Leg leg : {Leg{true, 80}, Leg{true, 150}, Leg{true, 250}, Leg{false, 150}}) {
      const bool relay = leg.relay;
      CAPTURE(relay);
      CAPTURE(leg.one_way_ms);
      ServerConfig cfg;
      cfg.players = 3;
      cfg.last_tick = 3000;
      cfg.world = arena_world(7, 60, cfg.players);
      cfg.allow_late_join = true;
      if (relay) {
        cfg.relay = describe_module(default_module(), cfg.world).game;
        cfg.relay_keyframe_interval = 1000;
      }
      Session s(cfg);
      FaultConfig far;
      far.delay_ns = leg.one_way_ms * 1'000'000;
      far.jitter_ns = 10'000'000;
      far.loss_pct = 2;
      far.seed = 3;
      s.net.set_link_faults(far);
      s.add_client(client_named("one"), 1);
      s.add_client(client_named("two"), 2);
      ClientConfig early = client_named("early");
      early.last_tick = 600;
      s.add_client(early, 3);
      REQUIRE(s.until([&] { return s.server->executed_tick() >= 1800; }, 60 * kSeconds));
      const std::int64_t asked = s.now();
      const Tick asked_at = s.server->executed_tick();
      s.add_client(client_named("late"), 4);
      // At the session's pace: behind the server by no more than the path's one way and 10 ticks.
      const Tick behind = static_cast<Tick>(leg.one_way_ms / 10 + 10);
      REQUIRE(s.until([&] { return s.clients[3]->executed_tick() + behind >= s.server->executed_tick() &&
                                   s.clients[3]->executed_tick() > 1800; }, 60 * kSeconds));
      const double caught_s = static_cast<double>(s.now() - asked) / 1e9;
      const Tick first = std::max<Tick>(1, s.traces[3]->hashes.begin()->first);
      // The figure: ticks the joiner executed from its state to the session's pace, a second.
      const double rate = static_cast<double>(s.clients[3]->executed_tick() - (first - 1)) / caught_s;
      MESSAGE(std::string(relay ? "relay" : "simulating") << " server, " << leg.one_way_ms << " ms one way: the late joiner asked at tick "
                       << asked_at << ", started from tick " << first - 1 << ", was at the session's pace "
                       << caught_s << " s later (tick " << s.server->executed_tick() << "), " << rate << " ticks/s");
      CHECK(caught_s < 8.0);
      // It knows who is seated: a PlayerJoined for each player already there, with the name.
      std::set<std::string> seated;
      for (const SessionEvent& e : s.clients[3]->take_events())
        if (e.kind == SessionEvent::Kind::PlayerJoined) seated.insert(e.name);
      CHECK(seated.count("one") == 1);
      CHECK(seated.count("two") == 1);
      // Its own inputs are filled only until its first ones arrive, not while it catches up or after.
      const std::uint64_t filled_at_pace = s.server->stats().filled_inputs;
      REQUIRE(s.run(90 * kSeconds));
      CHECK(s.server->executed_tick() == 3000);
      CHECK(s.clients[3]->exit_code() == 0);
      CHECK(s.server->stats().filled_inputs <= filled_at_pace + 60);  // the path's loss, at most
      // Nor while it joined: it samples its first input at the session's time, not its state's
      // (the newest frames come with the state). Once about 100 of its inputs, 8 s late, were filled.
      CHECK(filled_at_pace <= 20);
      CHECK(s.traces[3]->hashes.rbegin()->first == 3000);
      for (const auto& [t, h] : s.traces[3]->hashes) REQUIRE_MESSAGE(h == s.server_trace.hashes[t], "late joiner at tick " << t);
    }
  }
}
