// The Simulation contract, checked against both implementations.
#include <doctest/doctest.h>

#include "lockstep/arena.hpp"
#include "lockstep/module.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "support/tiny_sim.hpp"

using namespace lockstep;

namespace {

void check_contract(SimulationFactory make) {
  const Scenario sc = golden_scenario();
  auto a = make(sc.world);
  REQUIRE(a != nullptr);
  CHECK(a->tick() == 0);
  auto b = a->clone();
  for (Tick t = 1; t <= 100; ++t) {
    a->step(scenario_frame(sc, t));
    b->step(scenario_frame(sc, t));
    REQUIRE(a->hash() == b->hash());
  }
  CHECK(a->tick() == 100);

  std::vector<std::uint8_t> bytes;
  a->serialize(bytes);
  CHECK(a->hash() == hash_bytes(bytes));

  auto c = make(sc.world);
  REQUIRE(c->deserialize(bytes));
  CHECK(c->hash() == a->hash());
  CHECK(c->tick() == 100);

  auto d = make(sc.world);
  d->assign(*a);
  CHECK(d->hash() == a->hash());
  d->perturb(1);
  CHECK(d->hash() != a->hash());
  CHECK(a->fingerprint() == d->fingerprint());

  DrawList shapes;
  a->draw(*b, 0.0f, shapes);
  std::size_t players_drawn = 0;
  for (const DrawShape& s : shapes) {
    players_drawn += s.player >= 0 && s.kind == DrawShape::Kind::Circle ? 1u : 0u;
    CHECK(s.player < static_cast<std::int32_t>(sc.world.players));
    CHECK(s.palette < kPaletteSize);
  }
  CHECK(players_drawn >= sc.world.players);
}

}  // namespace

TEST_SUITE("core/interface") {
  TEST_CASE("the arena keeps the Simulation contract") { check_contract(&make_arena); }
  TEST_CASE("the tiny test simulation keeps the Simulation contract") { check_contract(&testing::make_tiny_sim); }
  TEST_CASE("every built-in module's simulation keeps the Simulation contract") {
    for (const Module* m : builtin_modules()) {
      CAPTURE(m->name);
      check_contract(m->create);
    }
  }
}
