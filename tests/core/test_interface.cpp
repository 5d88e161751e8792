// The Simulation contract, checked against both implementations.
#include <doctest/doctest.h>

#include "lockstep/arena.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "support/tiny_sim.hpp"

using namespace lockstep;

namespace {

// The contract on a module's golden scenario (its bots give the inputs and commands).
void check_contract(SimulationFactory make, const Scenario& sc) {
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
  CHECK(a->input_size() == sc.module->input_size);

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
  for (std::uint32_t e = 0; e < a->entity_count(); ++e) REQUIRE(d->entity_hash(e) == a->entity_hash(e));
  d->perturb(1);
  CHECK(d->hash() != a->hash());
  CHECK(a->fingerprint() == d->fingerprint());
  // A one-bit change shows in exactly one entity's hash (or in the state outside entities).
  std::uint32_t differ = 0;
  for (std::uint32_t e = 0; e < a->entity_count(); ++e) differ += d->entity_hash(e) != a->entity_hash(e) ? 1u : 0u;
  if (differ == 0) CHECK(d->global_fields().size() == a->global_fields().size());
  CHECK(differ <= 1);
  if (a->entity_count() > 0) CHECK(a->entity_fields(0).size() == d->entity_fields(0).size());
  // Untrusted bytes are refused and the state kept.
  const std::uint64_t before = c->hash();
  CHECK_FALSE(c->deserialize(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2)));
  CHECK(c->hash() == before);

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
  TEST_CASE("the arena keeps the Simulation contract") { check_contract(&make_arena, golden_scenario(arena_module())); }
  TEST_CASE("the tiny test simulation keeps the Simulation contract") {
    check_contract(&testing::make_tiny_sim, golden_scenario(arena_module()));  // the arena's 2-byte bot inputs
  }
  TEST_CASE("every built-in module's simulation keeps the Simulation contract") {
    for (const Module* m : builtin_modules()) {
      CAPTURE(m->name);
      check_contract(m->create, golden_scenario(*m));
    }
  }
}
