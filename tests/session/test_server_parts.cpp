// The server session's own parts, without a session: the simulation part (ServerSimulation), the
// desync referee (DesyncReferee), relay mode's hash consensus (TickConsensus) and the game
// description it is started from. What the session does with them is in test_session.cpp.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "desync_referee.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/session_result.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/tick_consensus.hpp"
#include "server_simulation.hpp"
#include "support/tiny_sim.hpp"
#include "support/time.hpp"

using namespace lockstep;

namespace {

using lockstep::testing::kMs;

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

  TEST_CASE("consensus settles a tick by a strict majority of the voters, and only of them") {
    TickConsensus c;
    const std::vector<std::uint32_t> three{1, 2, 3};
    c.vote(1, 5, 0xaa);
    c.vote(2, 5, 0xbb);
    c.vote(3, 5, 0xaa);
    c.vote(3, 5, 0xbb);  // a second hash of the same tick does not count
    c.vote(9, 5, 0xbb);  // not a voter: recorded, never counted
    CHECK(c.voted(3, 5));
    CHECK_FALSE(c.voted(3, 6));
    CHECK(c.votes(5).size() == 4);
    const auto v = c.settle(5, three);
    CHECK(v.settled);
    CHECK(v.hash == 0xaa);
    CHECK(v.voters == 3);
    CHECK(v.majority == 2);
    // Two of three agree before the third reports: the third cannot change the verdict.
    c.vote(1, 6, 0xcc);
    CHECK(c.leading(6, three) == 1);
    c.vote(3, 6, 0xcc);
    CHECK(c.leading(6, three) == 2);
    CHECK(2 * c.leading(6, three) > three.size());
    std::uint64_t h = 0;
    CHECK(c.settled_hash(5, &h));
    CHECK(h == 0xaa);
    CHECK(c.decided_through() == 5);
    CHECK_FALSE(c.split(5));
  }

  TEST_CASE("consensus: a 1v1 or an even split settles nothing, and a tick nobody reported is no split") {
    TickConsensus c;
    const std::vector<std::uint32_t> two{1, 2}, four{1, 2, 3, 4};
    c.vote(1, 1, 7);
    c.vote(2, 1, 8);
    const auto duel = c.settle(1, two);
    CHECK_FALSE(duel.settled);
    CHECK(duel.hash == 0);
    CHECK(c.split(1));
    CHECK_FALSE(c.settled_hash(1, nullptr));
    for (std::uint32_t p = 1; p <= 4; ++p) c.vote(p, 2, p <= 2 ? 7 : 8);
    CHECK_FALSE(c.settle(2, four).settled);
    const auto empty = c.settle(3, four);
    CHECK_FALSE(empty.settled);
    CHECK(empty.voters == 0);
    CHECK_FALSE(c.split(3));
    CHECK(c.split_count() == 2);
    CHECK(c.unvoted_count() == 1);
    // Three of four agree: settled; one voter alone is its own majority.
    for (std::uint32_t p = 1; p <= 4; ++p) c.vote(p, 4, p == 4 ? 8 : 7);
    CHECK(c.settle(4, four).hash == 7);
    c.vote(1, 5, 9);
    CHECK(c.settle(5, two).settled);
    CHECK(c.settled_count() == 2);
  }

  TEST_CASE("consensus: a resynced peer's hashes of undecided ticks are taken back, decided ones stay") {
    TickConsensus c;
    c.vote(1, 1, 5);
    c.vote(2, 1, 5);
    c.settle(1, std::vector<std::uint32_t>{1, 2});
    c.vote(2, 2, 6);
    c.vote(2, 3, 6);
    c.forget(2);
    CHECK(c.voted(2, 1));
    CHECK_FALSE(c.voted(2, 2));
    CHECK_FALSE(c.voted(2, 3));
    // A tick far behind the ring is no longer held.
    c.vote(3, 1 + TickConsensus::kHistory, 4);
    CHECK(c.votes(1).empty());
    c.vote(3, 1, 4);  // older than the ring's tick in that place: ignored
    CHECK(c.votes(1).empty());
  }

  TEST_CASE("the referee without a reference voter: the majority's group first, no 'server', and a split names nobody") {
    DesyncReferee ref;
    ref.set_reference_voter("");
    ref.set_label(1, "player 0 (ann)");
    ref.set_label(2, "player 1 (bob)");
    ref.set_label(3, "player 2 (cat)");
    ref.vote(1, 7, 5, 5);
    ref.vote(2, 7, 6, 5);
    ref.vote(3, 7, 5, 5);
    DesyncReport r = report_of(7, 5);
    ref.decide(r);
    REQUIRE(r.votes.size() == 2);
    CHECK(r.votes[0].first == 5);
    CHECK(r.votes[0].second == std::vector<std::string>{"player 0 (ann)", "player 2 (cat)"});
    CHECK(r.odd_one_out == "player 1 (bob)");
    // A 1v1 split: no reference hash (0), two groups, nobody the odd one out.
    ref.vote(1, 8, 5, 0);
    ref.vote(2, 8, 6, 0);
    DesyncReport s = report_of(8, 0);
    ref.decide(s);
    CHECK(s.votes.size() == 2);
    CHECK(s.odd_one_out.empty());
  }

  TEST_CASE("a game description: a module's read back, one made from name, version and build id, bad ones refused by field") {
    GameDescription d;
    d.name = "tiny";
    d.version = 3;
    d.game = RelayGame{0x1234, 0x5678, 2};
    d.settings = {1, 2, 3};
    GameDescription back;
    std::string error;
    REQUIRE(parse_description(json_text(description_json(d)), &back, &error));
    CHECK(back.game.join_fingerprint == 0x1234);
    CHECK(back.game.world_fingerprint == 0x5678);
    CHECK(back.game.input_size == 2);
    CHECK(back.settings == d.settings);
    // Without fingerprints: made as lockstep_session.h's games make theirs.
    const std::string by_identity =
        R"({"format": "lockstep-game/1", "name": "tanks", "version": 2, "build_id": "00000000000000ff", "input_size": 4, "settings": "0a0b"})";
    REQUIRE(parse_description(by_identity, &back, &error));
    const std::uint64_t code = module_code_fingerprint("tanks", 2, 0xff, 4);
    CHECK(back.game.join_fingerprint == world_fingerprint(code, {}));
    const std::vector<std::uint8_t> settings{0x0a, 0x0b};
    CHECK(back.game.world_fingerprint == world_fingerprint(code, settings));
    for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
             {"[]", "object"},
             {R"({"format": "other"})", "format"},
             {R"({"format": "lockstep-game/1", "input_size": 65})", "input_size"},
             {R"({"format": "lockstep-game/1", "input_size": 2, "settings": "zz"})", "settings"},
             {R"({"format": "lockstep-game/1", "input_size": 2, "join_fingerprint": "0000000000000001"})", "neither"},
             {R"({"format": "lockstep-game/1", "input_size": 2, "join_fingerprint": "0000000000000000", "world_fingerprint": "0000000000000001"})", "join_fingerprint"},
             {R"({"format": "lockstep-game/1", "input_size": 2, "name": "x", "version": 1})", "build_id"}}) {
      CAPTURE(text);
      CHECK_FALSE(parse_description(text, &back, &error));
      CHECK(error.find(field) != std::string::npos);
    }
    // A built-in module's description carries the fingerprints its sessions present.
    Module m;
    m.name = "tiny";
    m.create = [](const WorldParams& w) { return lockstep::testing::make_tiny_sim(w); };
    const GameDescription tiny_d = describe_module(m, players(2));
    CHECK(tiny_d.game.join_fingerprint == join_fingerprint(tiny()));
    CHECK(tiny_d.game.world_fingerprint == lockstep::testing::make_tiny_sim(players(2))->fingerprint());
  }

  TEST_CASE("a session's result: authentic under its key, not once any field changes, read back from its JSON") {
    SessionResult r;
    r.protocol_id = 42;
    r.ticks = 1500;
    r.settled_tick = 1500;
    r.final_hash = 0x1234;
    r.issued_at = 1'700'000'000;
    r.seats = {{0, "ann", 11, true, true, true, {1, 2, 3}}, {1, "bob", 12, true, true, true, {1, 2, 3}},
               {2, "cat", 0, false, false, false, {}}};
    r.result = {1, 2, 3};
    const SecretKey token_key{5};
    const SecretKey key = result_key_from(token_key);
    CHECK(key != token_key);
    CHECK_FALSE(verify_result(r, key));  // unsigned
    sign_result(r, key);
    CHECK(verify_result(r, key));
    CHECK_FALSE(verify_result(r, token_key));
    SessionResult back;
    std::string error;
    REQUIRE(parse_result(json_text(result_json(r)), &back, &error));
    CHECK(verify_result(back, key));
    // Each field is covered.
    CHECK(back.seats[1].claim == r.seats[1].claim);
    CHECK(back.seats[2].present == false);
    std::vector<SessionResult> changed(10, r);
    changed[0].protocol_id ^= 1;
    changed[1].ticks ^= 1;
    changed[2].final_hash ^= 1;
    changed[3].disputed = true;
    changed[4].seats[1].client_id ^= 1;
    changed[5].seats[2].reported = true;
    changed[6].result.back() ^= 1;
    changed[7].seats[0].name = "amy";
    changed[8].seats[2].present = true;
    changed[9].seats[0].claim.back() ^= 1;
    for (const auto& c : changed) CHECK_FALSE(verify_result(c, key));
    // A match stopped before its end says so, under the MAC, and reads back so.
    SessionResult stopped = r;
    stopped.incomplete = true;
    CHECK_FALSE(verify_result(stopped, key));
    sign_result(stopped, key);
    REQUIRE(parse_result(json_text(result_json(stopped)), &back, &error));
    CHECK(back.incomplete);
    CHECK(verify_result(back, key));
    CHECK_FALSE(parse_result(R"({"format": "lockstep-result/4"})", &back, &error));
    for (const std::string bad : {"{}", R"({"format": "lockstep-result/1"})", R"({"format": "lockstep-result/3"})", "[1]"}) {
      CAPTURE(bad);
      CHECK_FALSE(parse_result(bad, &back, &error));
    }
  }
}
