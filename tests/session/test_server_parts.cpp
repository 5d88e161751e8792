// The server session's own parts, without a session: the simulation part (ServerSimulation) and
// the desync referee (DesyncReferee). What the session does with them is in test_session.cpp.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "desync_referee.hpp"
#include "server_simulation.hpp"
#include "support/tiny_sim.hpp"

using namespace lockstep;

namespace {

constexpr std::int64_t kMs = 1'000'000;

WorldFactory tiny() { return [](const WorldParams& w) { return lockstep::testing::make_tiny_sim(w); }; }

WorldParams players(std::uint32_t n) {
  WorldParams w;
  w.players = n;
  return w;
}

InputFrame frame(Tick t, const Simulation& sim, std::uint8_t input) {
  InputFrame f;
  f.reset(t, 2, sim.input_size());
  f.present = 3;
  for (auto& b : f.input(0)) b = input;
  return f;
}

DesyncReport report_of(Tick t, std::uint64_t server_hash) {
  DesyncReport r;
  r.tick = t;
  r.slot = 1;
  r.name = "bob";
  r.server_hash = server_hash;
  r.client_hash = server_hash ^ 1;
  r.where = "global";
  return r;
}

}  // namespace

TEST_SUITE("session/server_parts") {
  TEST_CASE("the simulation part steps, hashes every tick and loads any tick of its window") {
    Error err;
    auto part = ServerSimulation::create(tiny(), players(2), 8, &err);
    REQUIRE(part);
    auto twin = lockstep::testing::make_tiny_sim(players(2));  // the same world, stepped by hand
    CHECK(part->hash_at(0) == twin->hash());
    CHECK(part->join_fingerprint() != 0);
    std::vector<std::uint64_t> hashes{twin->hash()};
    for (Tick t = 1; t <= 30; ++t) {
      const InputFrame f = frame(t, *twin, static_cast<std::uint8_t>(t * 7));
      twin->step(f);
      hashes.push_back(twin->hash());
      CHECK(part->step(f) == twin->hash());
      if (t == 20) CHECK(part->pin(20));
    }
    for (Tick t = 0; t <= 30; ++t) CHECK(part->hash_at(t) == hashes[t]);
    CHECK(part->current().hash() == hashes[30]);
    // The window of 8 holds ticks 23..30; a pinned tick stays past it.
    CHECK(part->state_at(22) == nullptr);
    REQUIRE(part->state_at(23) != nullptr);
    CHECK(part->state_at(23)->hash() == hashes[23]);
    REQUIRE(part->state_at(20) != nullptr);
    CHECK(part->state_at(20)->hash() == hashes[20]);
    part->unpin(20);
    CHECK(part->state_at(20) == nullptr);
    // The window follows the longest round trip, and shrinks only when far too long.
    const std::size_t near = history_for_round_trip(0, 8, 2000), far = history_for_round_trip(500 * kMs, 8, 2000);
    REQUIRE(2 * history_for_round_trip(400 * kMs, 8, 2000) > far);
    CHECK(part->fit(0, 8, 2000) == near);
    CHECK(part->fit(500 * kMs, 8, 2000) == far);
    CHECK(part->fit(400 * kMs, 8, 2000) == far);  // a little shorter: kept
    CHECK(part->fit(0, 8, 2000) == near);         // under half: shrunk
  }

  TEST_CASE("the simulation part refuses a world it cannot build, with a reason") {
    Error err;
    WorldParams w = players(2);
    w.settings.assign(kMaxSettingsBytes + 1, 0);
    CHECK_FALSE(ServerSimulation::create(tiny(), w, 8, &err));
    CHECK(err.kind == ErrorKind::Usage);
    CHECK(err.detail.find("settings") != std::string::npos);
    CHECK_FALSE(ServerSimulation::create([](const WorldParams&) { return std::unique_ptr<Simulation>(); }, players(2), 8, &err));
    CHECK(err.detail.find("cannot build") != std::string::npos);
  }

  TEST_CASE("the referee names the odd one out only with three voters or more and a strict majority") {
    constexpr std::uint64_t kGood = 0x1111, kBad = 0x2222, kOther = 0x3333;
    DesyncReferee ref;
    for (std::uint32_t id = 1; id <= 5; ++id) ref.set_label(id, "player " + std::to_string(id));
    // Tick 10: the server and players 1, 2 agree; player 3 differs.
    CHECK(ref.vote(1, 10, kGood, kGood));
    CHECK(ref.vote(2, 10, kGood, kGood));
    CHECK_FALSE(ref.vote(3, 10, kBad, kGood));
    DesyncReport r = report_of(10, kGood);
    ref.decide(r);
    REQUIRE(r.votes.size() == 2);
    CHECK(r.votes[0].first == kGood);
    CHECK(r.votes[0].second == std::vector<std::string>{"server", "player 1", "player 2"});
    CHECK(r.votes[1].second == std::vector<std::string>{"player 3"});
    CHECK(r.odd_one_out == "player 3");
    // Tick 11: a 1v1 against the server (two voters): reported, nobody named.
    CHECK_FALSE(ref.vote(1, 11, kBad, kGood));
    r = report_of(11, kGood);
    ref.decide(r);
    CHECK(r.votes.size() == 2);
    CHECK(r.odd_one_out.empty());
    // Tick 12: an even split of four: no strict majority.
    ref.vote(1, 12, kGood, kGood);
    ref.vote(2, 12, kBad, kGood);
    ref.vote(3, 12, kBad, kGood);
    r = report_of(12, kGood);
    ref.decide(r);
    CHECK(r.odd_one_out.empty());
    // Tick 13: the server is the one outside the majority; three different hashes group apart.
    ref.vote(1, 13, kBad, kGood);
    ref.vote(2, 13, kBad, kGood);
    ref.vote(3, 13, kBad, kGood);
    ref.vote(4, 13, kOther, kGood);
    r = report_of(13, kGood);
    ref.decide(r);
    REQUIRE(r.votes.size() == 3);
    CHECK(r.odd_one_out == "server, player 4");
    // A peer without a label is named by its id.
    ref.vote(9, 13, kBad, kGood);
    r = report_of(13, kGood);
    ref.decide(r);
    CHECK(r.votes[1].second.back() == "peer 9");
  }

  TEST_CASE("the referee forgets a tick's votes when the ring comes round to it") {
    DesyncReferee ref;
    ref.vote(1, 5, 1, 2);
    ref.vote(1, 5 + DesyncReferee::kHistory, 2, 2);  // the same slot of the ring, another tick
    DesyncReport r = report_of(5, 2);
    ref.decide(r);
    CHECK(r.votes.empty());  // nothing known of tick 5 any more
  }

  TEST_CASE("the referee holds a report until its tick's votes are in, or its wait is over, in queue order") {
    DesyncReferee ref;
    ref.queue({7, report_of(100, 1), 0, ""});
    ref.queue({8, report_of(101, 1), 10 * kMs, "kick"});
    CHECK(ref.has_pending());
    const auto none_in = [](Tick) { return false; };
    CHECK(ref.take_ready(100 * kMs, 300 * kMs, false, none_in).empty());
    // Tick 101's votes are in: that one goes, the other still waits.
    auto ready = ref.take_ready(100 * kMs, 300 * kMs, false, [](Tick t) { return t == 101; });
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].peer_id == 8);
    CHECK(ready[0].kick_reason == "kick");
    // Its wait is over.
    ready = ref.take_ready(300 * kMs, 300 * kMs, false, none_in);
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].peer_id == 7);
    CHECK_FALSE(ref.has_pending());
    // force takes everything at once, oldest first.
    ref.queue({1, report_of(1, 1), 0, ""});
    ref.queue({2, report_of(2, 1), 0, ""});
    ready = ref.take_ready(0, 300 * kMs, true, none_in);
    REQUIRE(ready.size() == 2);
    CHECK(ready[0].peer_id == 1);
  }

  TEST_CASE("the referee writes each report with its majority and keeps it and the desyncs found") {
    const auto dir = std::filesystem::temp_directory_path() / ("lockstep-referee-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    DesyncReferee ref;
    ref.set_label(1, "player 0 (ann)");
    ref.set_label(2, "player 1 (bob)");
    ref.set_label(3, "player 2 (cat)");
    ref.vote(1, 40, 5, 5);
    ref.vote(2, 40, 6, 5);
    ref.vote(3, 40, 5, 5);
    ref.note(DesyncEvent{40, 1, "bob", 5, 6});
    const DesyncReport& kept = ref.record(report_of(40, 5), dir.string());
    CHECK(kept.odd_one_out == "player 1 (bob)");
    REQUIRE(ref.reports().size() == 1);
    REQUIRE(ref.events().size() == 1);
    CHECK(ref.events()[0].client_hash == 6);
    std::size_t files = 0;
    std::string text;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      ++files;
      std::ifstream in(e.path());
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    CHECK(files == 1);
    CHECK(text.find("player 1 (bob)") != std::string::npos);
    std::filesystem::remove_all(dir);
  }
}
