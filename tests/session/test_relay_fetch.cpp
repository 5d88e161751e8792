// Relay mode's state fetches (docs/PROTOCOL.md §15) against sources that cannot or will not
// answer: a search that finds only ticks nobody holds any more, and a source that trickles. Each
// fetch has a deadline for the whole, a pause after every "not held" and a bound on its requests;
// an honest player is never dropped for answering what the server asked of it.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/games.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/faults.hpp"
#include "support/report_dir.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

// Where the tests' desync reports go, removed at the end of the run.
const lockstep::testing::ReportDir fetch_reports("relay-fetch");

// A relay server of the arena for `players`, until `last_tick`, that reports desyncs.
ServerConfig relay_server(std::uint32_t players, Tick last_tick) {
  ServerConfig cfg;
  cfg.desync_dir = fetch_reports.path.string();
  cfg.players = players;
  cfg.last_tick = last_tick;
  cfg.world = arena_world(3, 40, players);
  cfg.relay = describe_module(default_module(), cfg.world).game;
  cfg.allow_late_join = true;
  return cfg;
}

// Two honest players and "liar", whose state is right but whose reported hashes are wrong from
// tick 200, in a 1500-tick session that resyncs desyncs at most `max_resyncs` times (0: no
// limit), with the simulation on the server or in relay mode; run to its end.
void run_liar_session(Session& s) {
  s.add_client(client_named("one"), 1);
  s.add_client(client_named("two"), 2);
  ClientConfig liar = client_named("liar");
  liar.inject_wrong_hashes_from = 200;
  s.add_client(liar, 3);
  REQUIRE(s.run(60 * kSeconds));
  CHECK(s.server->executed_tick() == 1500);
}
ServerConfig liar_server(bool relay, std::uint32_t max_resyncs) {
  ServerConfig cfg = relay_server(3, 1500);
  if (!relay) cfg.relay.reset();
  cfg.on_desync = OnDesync::Resync;
  cfg.max_resyncs = max_resyncs;
  return cfg;
}

}  // namespace

TEST_SUITE("session/relay_fetch") {
  // Two players that disagree from tick 150 on leave every later tick split. The keyframe due at
  // tick 300 finds only tick 150 settled, a state both players dropped long ago (they keep 64
  // ticks): each "not held" once made the server ask the other at once, back and forth, until
  // the answers passed the message limit and both players were dropped for flooding.
  TEST_CASE("a keyframe fetch in a split 2-player session pauses after each not-held answer and drops nobody") {
    ServerConfig cfg = relay_server(2, 900);
    cfg.relay_keyframe_interval = 300;
    Session s(cfg);
    s.add_client(client_named("one"), 1);
    ClientConfig other = client_named("other");
    other.inject_desync_at = 150;
    s.add_client(other, 2);
    REQUIRE(s.run(60 * kSeconds));
    const ServerStats& st = s.server->stats();
    CHECK(s.server->executed_tick() == 900);
    CHECK(st.ticks_split > 600);      // the disagreement was real
    CHECK(st.states_not_held >= 1);   // and the keyframe's tick was gone from both
    // A handful of requests each for the keyframes at 300 and 600, never a spin.
    CHECK(st.states_requested <= 2 * ServerSession::kMaxRequestsPerFetch);
    CHECK(st.keyframes_fetched == 0);
    for (std::size_t i = 0; i < s.clients.size(); ++i) {
      INFO("client " << i);
      CHECK(s.clients[i]->executed_tick() == 900);
      CHECK(s.clients[i]->exit_code() == 3);  // told of the split (a desync), never dropped
    }
  }

  // A player next to the server answers every state request with one byte of the state every 2 s.
  // Each chunk once renewed its patience, so a spectator's join waited on it to the session's end,
  // uncounted. Now a source must bring its answer at the slowest honest pace (64 KiB/s) once its
  // patience is past: it is passed over, counted, benched, and another player serves the spectator.
  TEST_CASE("a source that trickles its state is passed over and counted, and the joiner is served by another") {
    ServerConfig cfg = relay_server(3, 1500);
    Session s(cfg);
    lockstep::FaultConfig far;
    far.delay_ns = 30'000'000;
    s.net.set_link_faults(far);  // the honest players are farther than the trickler
    s.add_client(client_named("one"), 1);
    s.add_client(client_named("two"), 2);
    s.net.set_link_faults(lockstep::FaultConfig{});
    ClientConfig trickler = client_named("trickler");
    trickler.inject_trickled_states = true;
    s.add_client(trickler, 3);
    REQUIRE(s.until([&] { return s.server->executed_tick() >= 300; }, 30 * kSeconds));
    ClientConfig watcher = client_named("watcher");
    watcher.spectate = true;
    s.add_client(watcher, 4);
    REQUIRE(s.run(60 * kSeconds));
    const ServerStats& st = s.server->stats();
    CHECK(s.server->executed_tick() == 1500);
    CHECK(st.states_unanswered >= 1);  // the trickler, passed over
    CHECK(st.states_forwarded >= 1);   // the spectator's state, from an honest player
    CHECK(s.clients[2]->stats().states_served == 0);  // the trickler never sent a whole state
    CHECK(s.clients[3]->exit_code() == 0);
    // Served within a few seconds of asking, not at the session's end.
    REQUIRE_FALSE(s.traces[3]->hashes.empty());
    CHECK(s.traces[3]->hashes.begin()->first < 300 + 800);
    CHECK(s.traces[3]->hashes.rbegin()->first == 1500);
    for (const auto& [t, h] : s.traces[3]->hashes) REQUIRE_MESSAGE(h == s.server_trace.hashes[t], "spectator at tick " << t);
  }

  // A player whose state is right but whose reported hashes are wrong was reported and resynced
  // about 9 times a second to the session's end. After ServerConfig::max_resyncs it is dropped
  // with the reason, and its reports end with it: bounded files and memory for any match.
  TEST_CASE("a player that diverges again after every resync is dropped after max_resyncs, in both server modes") {
    for (const bool relay : {false, true}) {
      CAPTURE(relay);
      Session s(liar_server(relay, 3));
      run_liar_session(s);
      const ServerStats& st = s.server->stats();
      CHECK(st.resyncs == 3);
      // One report for the liar's whole episode, its divergences counted in it.
      REQUIRE(s.server->reports().size() == 1);
      CHECK(s.server->reports()[0].name == "liar");
      CHECK(s.server->reports()[0].episode_divergences == 4);
      CHECK(s.clients[2]->exit_code() == 4);  // dropped
      bool named = false;
      for (const Departure& d : s.server->departures())
        if (d.name == "liar") named = d.reason.find("after 3 resyncs") != std::string::npos;
      CHECK(named);
      for (std::size_t i = 0; i < 2; ++i) {
        CHECK(s.clients[i]->exit_code() == 0);  // the desyncs were the liar's; never dropped
        CHECK(s.traces[i]->hashes.rbegin()->first == 1500);
      }
    }
  }

  // Without a resync limit the same player is resynced to the session's end: one report file,
  // whatever the match's length, with every divergence counted in it (537 files in 57 s before).
  TEST_CASE("a player resynced without a limit gets one report for its episode, in both server modes") {
    for (const bool relay : {false, true}) {
      CAPTURE(relay);
      const lockstep::testing::ReportDir dir(relay ? "episode-relay" : "episode");
      ServerConfig cfg = liar_server(relay, 0);
      cfg.desync_dir = dir.path.string();
      Session s(cfg);
      run_liar_session(s);
      const ServerStats& st = s.server->stats();
      CHECK(st.resyncs >= 5);
      REQUIRE(s.server->reports().size() == 1);
      const DesyncReport& r = s.server->reports()[0];
      CHECK(r.episode_divergences >= st.resyncs);
      CHECK(r.episode_last_tick > r.tick);
      CHECK(st.desyncs_in_episodes + 1 == r.episode_divergences);
      std::size_t files = 0;
      for (const auto& e : std::filesystem::directory_iterator(dir.path))
        files += e.path().filename().string().rfind("desync-", 0) == 0 && e.path().extension() == ".json";
      CHECK(files == 1);
    }
  }
}
