// The module registry: lookup, the list --sim list prints, world settings parsed and refused
// with a sentence, and the arena's controls.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "lockstep/arena.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"

using namespace lockstep;

TEST_SUITE("core/module") {
  TEST_CASE("modules are found by name, listed with their settings, and have every part") {
    REQUIRE_FALSE(builtin_modules().empty());
    CHECK(&default_module() == builtin_modules().front());
    CHECK(find_module("no such game") == nullptr);
    std::set<std::string_view> names;
    const std::string list = module_list();
    for (const Module* m : builtin_modules()) {
      CAPTURE(m->name);
      CHECK(names.insert(m->name).second);  // unique
      CHECK(find_module(m->name) == m);
      CHECK(static_cast<bool>(m->parse_world));
      CHECK(static_cast<bool>(m->create));
      CHECK(static_cast<bool>(m->bot));
      CHECK(static_cast<bool>(m->from_controls));
      CHECK(static_cast<bool>(m->settings_text));
      CHECK(list.find(std::string(m->name) + " " + std::to_string(m->version) + ":") != std::string::npos);
      for (const WorldSetting& s : m->settings) {
        CHECK(list.find(std::string(s.key) + "=" + std::string(s.default_value)) != std::string::npos);
        // Every setting's default parses, and the world it gives builds.
        WorldParams w;
        std::string error;
        CHECK_MESSAGE(m->parse_world(std::string(s.key) + "=" + std::string(s.default_value), &w, &error), error);
        CHECK(m->create(w) != nullptr);
      }
      WorldParams w;
      std::string error;
      CHECK(m->parse_world("", &w, &error));  // no settings: the defaults
    }
  }

  TEST_CASE("settings are split into pairs and bad ones refused with a sentence") {
    std::vector<std::pair<std::string, std::string>> pairs;
    std::string error;
    REQUIRE(split_settings("seed=5,bodies=10,empty=", &pairs, &error));
    CHECK(pairs == std::vector<std::pair<std::string, std::string>>{{"seed", "5"}, {"bodies", "10"}, {"empty", ""}});
    CHECK_FALSE(split_settings("seed", &pairs, &error));
    CHECK(error.find("'seed' is not key=value") != std::string::npos);
    CHECK_FALSE(split_settings("=5", &pairs, &error));
    const Module& arena = *find_module("arena");
    WorldParams w;
    REQUIRE(arena.parse_world("seed=18446744073709551615,bodies=1000000", &w, &error));
    CHECK(arena.settings_text(w.settings) == "seed=18446744073709551615,bodies=1000000");
    // Settings apply on top of the ones already there, and come out as canonical bytes.
    REQUIRE(arena.parse_world("bodies=3", &w, &error));
    CHECK(arena.settings_text(w.settings) == "seed=18446744073709551615,bodies=3");
    CHECK(w.settings == arena_world(UINT64_MAX, 3, 4).settings);
    CHECK(arena.settings_text(std::vector<std::uint8_t>(5, 0)).empty());  // not the arena's
    for (const char* bad : {"bodies=1000001", "bodies=-1", "bodies=1e3", "seed=18446744073709551616", "colour=red", "seed"}) {
      CAPTURE(bad);
      error.clear();
      CHECK_FALSE(arena.parse_world(bad, &w, &error));
      CHECK_FALSE(error.empty());
    }
  }

  TEST_CASE("the arena's controls: arrows or WASD, and opposite keys do not cancel to a drift") {
    const Module& arena = *find_module("arena");
    auto input_of = [&arena](const Controls& c) {
      PlayerTick t = blank_tick(arena);
      ControlMemory memory{};
      arena.from_controls(c, memory, &t);
      CHECK(t.commands.empty());
      return ArenaInput::decode(t.input);
    };
    Controls c;
    CHECK(input_of(c) == ArenaInput{});
    c.hold(Key::W);
    c.hold(Key::Left);
    CHECK(input_of(c) == ArenaInput{127, -127});
    Controls back;
    back.hold(Key::Down);
    back.hold(Key::D);
    CHECK(input_of(back) == ArenaInput{-127, 127});
    // Bots are pure functions of (seed, tick).
    PlayerTick a = blank_tick(arena), b = blank_tick(arena);
    arena.bot(7, 100, &a);
    arena.bot(7, 100, &b);
    CHECK(a == b);
  }

  TEST_CASE("a world's fingerprint covers the module and its settings, --world @FILE reads settings from a file") {
    for (const Module* m : builtin_modules()) {
      CAPTURE(m->name);
      WorldParams defaults{{}, 2}, same{{}, 2}, golden{{}, 2};
      std::string error;
      REQUIRE(m->parse_world("", &same, &error));  // the defaults, written out canonically
      REQUIRE(m->parse_world(m->golden_world, &golden, &error));
      const auto a = m->create(defaults), b = m->create(same), c = m->create(golden);
      CHECK(a->fingerprint() == b->fingerprint());  // the same world, however its settings were written
      CHECK(a->fingerprint() != c->fingerprint());  // another world
      CHECK(c->clone()->fingerprint() == c->fingerprint());
      for (const Module* other : builtin_modules())
        if (other != m) CHECK(other->create(WorldParams{{}, 2})->fingerprint() != a->fingerprint());
    }
    const std::string path = "/tmp/lockstep-world-" + std::to_string(::getpid()) + ".txt";
    {
      std::ofstream out(path);
      out << "# the skirmish, small\nunits = 40\n\nseed=9  # a comment\nmap=64,rocks=0\n";
    }
    std::string text, error;
    REQUIRE(world_settings_text("@" + path, &text, &error));
    CHECK(text == "units=40,seed=9,map=64,rocks=0");
    CHECK(world_settings_text("units=3", &text, &error));
    CHECK(text == "units=3");
    CHECK_FALSE(world_settings_text("@/no/such/file", &text, &error));
    CHECK_MESSAGE(error.find("/no/such/file") != std::string::npos, error);
    std::remove(path.c_str());
  }
}
