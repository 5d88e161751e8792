// The checks of lockstep-synctest, in process: both built-in modules keep every one, and each
// check names what it finds when fed a difference.
#include <doctest/doctest.h>

#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/synctest.hpp"
#include "support/hooked_simulation.hpp"

using namespace lockstep;

namespace {

SyncTestConfig config(const Module& m, Tick ticks) {
  SyncTestConfig c;
  c.module = &m;
  c.world = WorldParams{{}, 2};
  std::string error;
  REQUIRE(m.parse_world(m.name == "skirmish" ? "units=40,map=48" : "bodies=40", &c.world, &error));
  c.ticks = ticks;
  c.sample = 4;
  return c;
}

// A C++ simulation whose hash() ignores a field: the skirmish, with hash() taken over its
// serialization minus the last 8 bytes (a unit's last field). Everything else is the skirmish's,
// so only the hash check can see it.
std::unique_ptr<Simulation> make_hash_ignores_a_field(const WorldParams& w) {
  return std::make_unique<lockstep::testing::HookedSimulation>(
      skirmish_module().create(w), [](Simulation& inner, const InputFrame& f) { inner.step(f); }, 0,
      [](const Simulation& inner) {
        std::vector<std::uint8_t> bytes;
        inner.serialize(bytes);
        bytes.resize(bytes.size() > 8 ? bytes.size() - 8 : 0);
        return hash_bytes(bytes);
      });
}

}  // namespace

TEST_SUITE("app/synctest") {
  TEST_CASE("a C++ simulation whose hash ignores a field fails the hash check and only that one") {
    Module broken = skirmish_module();
    broken.create = &make_hash_ignores_a_field;
    SyncTestConfig c = config(skirmish_module(), 60);
    c.module = &broken;
    std::vector<std::string> failed;
    for (const CheckResult& r : check_state_copies(c))
      if (!r.ok) failed.push_back(r.check);
    CHECK(failed == std::vector<std::string>{"hash"});
    CHECK(check_rollback(c).ok);
    CHECK(check_localization(c).ok);
  }

  TEST_CASE("the built-in modules keep every check") {
    for (const Module* m : builtin_modules()) {
      CAPTURE(m->name);
      const SyncTestConfig c = config(*m, 120);
      Trace a, b;
      std::string error;
      REQUIRE(run_trace(c, &a, &error));
      REQUIRE(parse_trace(trace_text(a), &b));  // the text the child processes print reads back
      CHECK(a.hashes.size() == 120);
      CHECK(check_replay(a, b).ok);
      const CheckResult rollback = check_rollback(c);
      CHECK_MESSAGE(rollback.ok, rollback.detail);
      for (const CheckResult& r : check_state_copies(c)) CHECK_MESSAGE(r.ok, r.check << ": " << r.detail);
      const CheckResult loc = check_localization(c);
      CHECK_MESSAGE(loc.ok, loc.detail);
    }
  }

  TEST_CASE("the stream exercises bots, random inputs and random commands, the same for the same seed") {
    const SyncTestConfig c = config(skirmish_module(), 400);
    std::size_t commands = 0;
    for (Tick t = 1; t <= 400; ++t) {
      const InputFrame f = synctest_frame(c, t);
      CHECK(f == synctest_frame(c, t));
      commands += f.commands.size();
    }
    CHECK(commands > 20);
    SyncTestConfig other = c;
    other.seed = 2;
    bool differ = false;
    for (Tick t = 1; t <= 50 && !differ; ++t) differ = !(synctest_frame(c, t) == synctest_frame(other, t));
    CHECK(differ);
  }

  TEST_CASE("each check names what it was fed") {
    Trace a, b;
    a.hashes = {1, 2, 3, 4};
    b.hashes = {1, 2, 9, 4};
    const CheckResult replay = check_replay(a, b);
    CHECK_FALSE(replay.ok);
    CHECK(replay.tick == 3);
    CHECK_FALSE(check_fingerprint(5, 6, 0).ok);  // another process, another fingerprint
    CHECK_FALSE(check_fingerprint(5, 5, 5).ok);  // a changed setting that changes nothing
    CHECK(check_fingerprint(5, 5, 7).ok);
    const Json j = result_json(replay);
    CHECK(j["check"] == "replay");
    CHECK(j["tick"] == 3);
    CHECK(j["ok"] == false);
  }

  TEST_CASE("the memory check names the first differing tick, the new worlds included") {
    Trace a, b;
    a.hashes = b.hashes = {1, 2, 3};
    CHECK(first_divergence(a, b) == -1);
    CHECK(check_memory(a, b).ok);
    b.initial = 7;  // the new worlds already differ: a field left unwritten at creation
    CHECK(first_divergence(a, b) == 0);
    const CheckResult at_creation = check_memory(a, b);
    CHECK_FALSE(at_creation.ok);
    CHECK(at_creation.tick == 0);
    CHECK(result_json(at_creation)["tick"] == 0);  // a failure always says its tick
    b.initial = a.initial;
    b.hashes.push_back(4);
    CHECK(first_divergence(a, b) == 4);  // a shorter run differs at its end
  }

  TEST_CASE("two states that differ are named by entity and field, or by the byte outside every field") {
    const SyncTestConfig c = config(skirmish_module(), 30);
    std::vector<std::uint8_t> x, y;
    std::string error;
    REQUIRE(run_state(c, 30, &x, &error));
    auto sim = c.module->create(c.world);
    REQUIRE(sim->deserialize(x));
    auto other = sim->clone();
    other->perturb(3);
    other->serialize(y);
    CheckResult r;
    r.ok = false;
    localize_states(c, x, y, &r);
    CHECK(r.entity >= 0);
    CHECK_FALSE(r.field.empty());
    CHECK(r.field != "bytes outside the declared fields");
    // The same bytes but one the skirmish does not load as a field: a changed trailing byte the
    // loader refuses is reported with its offset, never as a field.
    std::vector<std::uint8_t> z = x;
    z.push_back(0);
    CheckResult bad;
    bad.ok = false;
    localize_states(c, x, z, &bad);
    CHECK(bad.detail.find("byte offset " + std::to_string(x.size())) != std::string::npos);
    std::vector<std::uint8_t> back;
    CHECK(parse_bytes_hex(bytes_hex(x) + "\n", &back));
    CHECK(back == x);
    CHECK_FALSE(parse_bytes_hex("0g", &back));
    CHECK_FALSE(parse_bytes_hex("abc", &back));
  }

  TEST_CASE("the variants cross worlds and player counts, each with its own seed and a name") {
    const Module& m = skirmish_module();
    SyncTestConfig base;
    base.module = &m;
    base.seed = 10;
    std::vector<WorldChoice> worlds(2);
    std::string error;
    worlds[0].label = "default";
    REQUIRE(m.parse_world("", &worlds[0].world, &error));
    worlds[1].label = "golden";
    REQUIRE(m.parse_world(m.golden_world, &worlds[1].world, &error));
    const std::vector<std::uint32_t> counts = default_player_counts(m, worlds[0].world);
    REQUIRE(counts.size() == 3);
    CHECK(counts[0] == 1);
    CHECK(counts[1] == 2);
    CHECK(counts[2] == 8);
    const auto variants = synctest_variants(base, worlds, counts);
    REQUIRE(variants.size() == 6);
    CHECK(variants[0].variant == "world=default players=1 seed=10");
    CHECK(variants[5].variant == "world=golden players=8 seed=15");
    CHECK(variants[5].world.players == 8);
    CHECK(variants[5].world.settings == worlds[1].world.settings);
  }
}
