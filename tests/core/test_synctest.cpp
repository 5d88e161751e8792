// The checks of lockstep-synctest, in process: both built-in modules keep every one, and each
// check names what it finds when fed a difference.
#include <doctest/doctest.h>

#include "lockstep/module.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/synctest.hpp"

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

}  // namespace

TEST_SUITE("core/synctest") {
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
}
