// The demo world: determinism, bounds, serialization and interpolation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/detmath.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"

using namespace lockstep;

namespace {

std::vector<std::uint64_t> trace(const Scenario& sc, Tick ticks) {
  auto sim = make_arena(sc.world);
  std::vector<std::uint64_t> hashes;
  for (Tick t = 1; t <= ticks; ++t) {
    sim->step(scenario_frame(sc, t));
    hashes.push_back(sim->hash());
  }
  return hashes;
}

// Reads entity i's fields from the canonical serialization.
struct Fields { float x, y, vx, vy; };
std::vector<Fields> entities_of(const Simulation& sim) {
  std::vector<std::uint8_t> bytes;
  sim.serialize(bytes);
  const std::size_t header = 44, n = sim.entity_count();
  std::vector<Fields> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(&out[i].x, bytes.data() + header + i * 4, 4);
    std::memcpy(&out[i].y, bytes.data() + header + (n + i) * 4, 4);
    std::memcpy(&out[i].vx, bytes.data() + header + (2 * n + i) * 4, 4);
    std::memcpy(&out[i].vy, bytes.data() + header + (3 * n + i) * 4, 4);
  }
  return out;
}

}  // namespace

TEST_SUITE("games/arena") {
  TEST_CASE("identical inputs give identical hash traces") {
    const Scenario sc = golden_scenario(arena_module());
    CHECK(trace(sc, 500) == trace(sc, 500));
  }

  TEST_CASE("different inputs or seeds give different traces") {
    Scenario a = golden_scenario(arena_module()), b = golden_scenario(arena_module());
    b.bot_seed += 1;
    CHECK(trace(a, 200).back() != trace(b, 200).back());
    Scenario c = golden_scenario(arena_module());
    c.world = arena_world(20261122 + 1, 256, 4);
    CHECK(trace(a, 1).front() != trace(c, 1).front());
  }

  TEST_CASE("a one-ULP change to one coordinate changes that tick's hash") {
    const Scenario sc = golden_scenario(arena_module());
    auto a = make_arena(sc.world);
    for (Tick t = 1; t <= 50; ++t) a->step(scenario_frame(sc, t));
    for (std::uint64_t selector : {0ull, 5ull, 1000ull, 1036ull}) {
      auto b = a->clone();
      REQUIRE(b->hash() == a->hash());
      b->perturb(selector);
      CHECK(b->hash() != a->hash());
      // Exactly one entity's hash changed.
      int changed = 0;
      for (std::uint32_t e = 0; e < a->entity_count(); ++e) changed += a->entity_hash(e) != b->entity_hash(e);
      CHECK(changed == 1);
    }
  }

  TEST_CASE("the hash is XXH3 of the canonical serialization") {
    const Scenario sc = golden_scenario(arena_module());
    auto sim = make_arena(sc.world);
    for (Tick t = 1; t <= 20; ++t) sim->step(scenario_frame(sc, t));
    std::vector<std::uint8_t> bytes;
    sim->serialize(bytes);
    CHECK(bytes.size() == 44 + 260 * 16 + 4 * 4);
    CHECK(sim->hash() == hash_bytes(bytes));
  }

  TEST_CASE("bodies never leave the arena and nothing becomes NaN") {
    for (std::uint32_t bodies : {0u, 10u, 300u, 3000u}) {
      Scenario sc = golden_scenario(arena_module());
      sc.world = arena_world(20261122, bodies, sc.world.players);
      auto sim = make_arena(sc.world);
      for (Tick t = 1; t <= 1500; ++t) {
        sim->step(scenario_frame(sc, t));
        if (t % 50 != 0) continue;
        for (std::size_t i = 0; const Fields& f : entities_of(*sim)) {
          const float r = i++ < sc.world.players ? 1.0f : 0.5f;
          REQUIRE(std::isfinite(f.vx));
          REQUIRE(std::isfinite(f.vy));
          REQUIRE(f.x >= r);
          REQUIRE(f.x <= sim->width() - r);
          REQUIRE(f.y >= r);
          REQUIRE(f.y <= sim->height() - r);
        }
      }
    }
  }

  TEST_CASE("snapshot, restore, and both copies run in lockstep bit for bit") {
    const Scenario sc = golden_scenario(arena_module());
    auto a = make_arena(sc.world);
    for (Tick t = 1; t <= 300; ++t) a->step(scenario_frame(sc, t));
    std::vector<std::uint8_t> snapshot;
    a->serialize(snapshot);
    auto b = make_arena(arena_world(1, 0, 1));
    REQUIRE(b->deserialize(snapshot));
    CHECK(b->tick() == 300);
    for (Tick t = 301; t <= 800; ++t) {
      a->step(scenario_frame(sc, t));
      b->step(scenario_frame(sc, t));
      std::vector<std::uint8_t> sa, sb;
      a->serialize(sa);
      b->serialize(sb);
      REQUIRE(sa == sb);
    }
  }

  TEST_CASE("deserialize refuses malformed bytes and keeps its state") {
    const Scenario sc = golden_scenario(arena_module());
    auto sim = make_arena(sc.world);
    const std::uint64_t before = sim->hash();
    std::vector<std::uint8_t> good;
    sim->serialize(good);
    CHECK_FALSE(sim->deserialize({}));
    auto truncated = good;
    truncated.pop_back();
    CHECK_FALSE(sim->deserialize(truncated));
    auto longer = good;
    longer.push_back(0);
    CHECK_FALSE(sim->deserialize(longer));
    auto bad_magic = good;
    bad_magic[0] ^= 1;
    CHECK_FALSE(sim->deserialize(bad_magic));
    auto nan_x = good;
    const float nan = std::nanf("");
    std::memcpy(nan_x.data() + 44, &nan, 4);
    CHECK_FALSE(sim->deserialize(nan_x));
    auto huge_count = good;
    const std::uint32_t n = 0xffffffff;
    std::memcpy(huge_count.data() + 40, &n, 4);
    CHECK_FALSE(sim->deserialize(huge_count));
    CHECK(sim->hash() == before);
    CHECK(sim->deserialize(good));
  }

  TEST_CASE("out-of-range world parameters are refused") {
    CHECK(make_arena(arena_world(1, 64, 0)) == nullptr);
    CHECK(make_arena(arena_world(1, 64, 33)) == nullptr);
    CHECK(make_arena(arena_world(1, kMaxBodies + 1, 4)) == nullptr);
    CHECK(make_arena(arena_world(1, 0, 1)) != nullptr);
  }

  TEST_CASE("interpolation: alpha 0 is the previous tick, alpha near 1 approaches the current") {
    const Scenario sc = golden_scenario(arena_module());
    auto cur = make_arena(sc.world);
    for (Tick t = 1; t <= 40; ++t) cur->step(scenario_frame(sc, t));
    auto prev = cur->clone();
    cur->step(scenario_frame(sc, 41));
    // The arena draws the bodies' circles, the players' heading lines, then the players' circles:
    // its circles by entity id.
    auto circles = [&](float alpha) {
      DrawList all;
      cur->draw(*prev, alpha, all);
      std::vector<DrawShape> bodies, players;
      for (const DrawShape& s : all)
        if (s.kind == DrawShape::Kind::Circle) (s.player >= 0 ? players : bodies).push_back(s);
      players.insert(players.end(), bodies.begin(), bodies.end());
      return players;
    };
    const auto at0 = circles(0.0f), at1 = circles(1.0f), near1 = circles(0.999f);
    const auto p = entities_of(*prev), c = entities_of(*cur);
    REQUIRE(at0.size() == p.size());
    double far = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      CHECK(at0[i].x == p[i].x);
      CHECK(at0[i].y == p[i].y);
      CHECK(at1[i].x == doctest::Approx(c[i].x));
      far = std::max(far, std::fabs(static_cast<double>(near1[i].x - c[i].x)));
    }
    CHECK(far < 0.01);
  }

  TEST_CASE("angles crossing +-pi are blended the short way") {
    using detmath::kPi;
    const float a = kPi - 0.1f, b = -kPi + 0.1f;  // 0.2 rad apart across the seam
    const float mid = detmath::lerp_angle(a, b, 0.5f);
    CHECK(std::fabs(std::fabs(mid) - kPi) < 1e-5f);
    CHECK(detmath::lerp_angle(a, b, 0.0f) == doctest::Approx(a));
    CHECK(detmath::lerp_angle(a, b, 0.25f) == doctest::Approx(kPi - 0.05f));
    CHECK(detmath::lerp_angle(-0.5f, 0.5f, 0.5f) == doctest::Approx(0.0f));
  }

  TEST_CASE("the simulation's sin and cos are accurate from -pi to pi") {
    for (int i = -1000; i <= 1000; ++i) {
      const double x = i * 3.14159265358979 / 1000.0;
      CHECK(std::fabs(detmath::sin(static_cast<float>(x)) - std::sin(x)) < 1e-6);
      CHECK(std::fabs(detmath::cos(static_cast<float>(x)) - std::cos(x)) < 1e-6);
    }
  }
}

TEST_SUITE("games/hash") {
  TEST_CASE("the vector paths of XXH3 agree bit for bit") {
    lockstep::Rng rng = lockstep::Rng::seeded(5);
    for (std::size_t n : {0u, 1u, 3u, 16u, 17u, 128u, 129u, 240u, 241u, 1000u, 4096u, 100000u}) {
      std::vector<std::uint8_t> bytes(n);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(rng.next_u32());
      CHECK(lockstep::hash_bytes(bytes) == lockstep::hash_bytes_portable(bytes));
    }
  }
}
