// A module from a shared library (tests/modules/walkers.c, plain C) behind the Simulation
// interface: refusals of libraries that are not modules, then the contract and the desync probe.
#include <doctest/doctest.h>

#include "lockstep/desync_probe.hpp"
#include "lockstep/module.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "support/localize.hpp"

using namespace lockstep;

TEST_SUITE("core/module-lib") {
  TEST_CASE("a C module library loads once, keeps the Simulation contract and its desyncs are localized") {
    std::string error;
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/nothing-here.so", &error) == nullptr);
    CHECK(error.find("cannot load it") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_no_entry.so", &error) == nullptr);
    CHECK(error.find("not a lockstep module") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_abi99.so", &error) == nullptr);
    CHECK(error.find("speaks module ABI version 99") != std::string::npos);
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_uncovered_typo.so", &error) == nullptr);
    CHECK_MESSAGE(error.find("its UNCOVERED list names \"box2d\", which is no library it links (it links none besides") !=
                      std::string::npos,
                  error);
    const Module* m = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers.so", &error);
    REQUIRE_MESSAGE(m != nullptr, error);
    CHECK(m->name == "walkers");
    CHECK(load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers.so", &error) == m);  // the same library: the same module
    // Another build of it loads beside it (bisect compares two), its worlds its own.
    const Module* other = load_module_library(LOCKSTEP_MODULE_DIR "/libwalkers_rules2.so", &error);
    REQUIRE_MESSAGE(other != nullptr, error);
    CHECK(other != m);
    CHECK(other->build_id != m->build_id);

    WorldParams world;
    world.players = 3;
    REQUIRE(m->parse_world("seed=9", &world, &error));
    CHECK(m->settings_text(world.settings) == "seed=9");
    CHECK_FALSE(m->parse_world("speed=2", &world, &error));
    auto a = m->create(world);
    REQUIRE(a != nullptr);
    auto b = a->clone();
    auto without = a->clone();  // the same frames with their commands left out
    const Scenario sc{m, world, 0};
    std::size_t commands = 0;
    for (Tick t = 1; t <= 200; ++t) {
      InputFrame f = scenario_frame(sc, t);
      CHECK(f.input_size == 2);
      commands += f.commands.size();
      a->step(f);
      b->step(f);
      REQUIRE(a->hash() == b->hash());
      f.commands.clear();
      f.command_bytes.clear();
      without->step(f);
    }
    CHECK(commands == 6);  // each of 3 bots on ticks 97 and 194
    CHECK(without->hash() != a->hash());  // the module read them
    CHECK(a->tick() == 200);
    std::vector<std::uint8_t> bytes;
    a->serialize(bytes);
    CHECK(a->hash() == hash_bytes(bytes));
    auto c = m->create(world);
    REQUIRE(c->deserialize(bytes));
    CHECK(c->hash() == a->hash());
    CHECK_FALSE(c->deserialize(std::vector<std::uint8_t>(7, 0)));  // untrusted bytes refused, state kept
    CHECK(c->hash() == a->hash());
    CHECK(a->fingerprint() == c->fingerprint());
    DrawList shapes;
    a->draw(*b, 0.5f, shapes);
    CHECK(shapes.size() == 4);  // a label and three walkers
    CHECK(shapes[0].kind == DrawShape::Kind::Text);
    CHECK(shapes[0].text == "WALKERS");

    // A one-bit change to walker 2's velocity, found and named.
    b->assign(*a);
    b->perturb(2 * 2 + 1);
    REQUIRE(b->hash() != a->hash());
    const DesyncReport report = lockstep::testing::localize(*a, *b);
    CHECK(report.entity == 2);
    REQUIRE(report.server_fields.size() == 1);
    CHECK(report.server_fields[0].name == "vel");
  }
}
