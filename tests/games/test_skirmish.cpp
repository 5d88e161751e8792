// The skirmish, the built-in game of the other kind: settings, commands (and the invalid ones
// doing nothing), steering and combat in integers, and a desync named by unit and field.
#include <doctest/doctest.h>

#include <map>

#include "lockstep/desync_probe.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/skirmish.hpp"
#include "support/localize.hpp"

using namespace lockstep;

namespace {

const Module& skirmish() { return skirmish_module(); }

WorldParams world(const char* settings, std::uint32_t players) {
  WorldParams w{{}, players};
  std::string error;
  REQUIRE_MESSAGE(skirmish().parse_world(settings, &w, &error), error);
  return w;
}

// Tick t with these commands from these slots (every slot present).
InputFrame frame(Tick t, std::uint32_t players, const std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>>& cmds) {
  InputFrame f;
  f.reset(t, players, 0);
  f.present = (1u << players) - 1u;
  for (std::uint32_t p = 0; p < players; ++p) {
    Commands c;
    for (const auto& [slot, bytes] : cmds)
      if (slot == p) REQUIRE(c.add(bytes));
    f.add_commands(p, c);
  }
  return f;
}

std::map<std::string, std::uint64_t> fields(const Simulation& s, std::uint32_t unit) {
  std::map<std::string, std::uint64_t> out;
  for (const FieldValue& v : s.entity_fields(unit)) out[v.name] = v.bits;
  return out;
}

constexpr std::uint64_t kUnit = 65536;  // one world unit in fixed point

}  // namespace

TEST_SUITE("games/skirmish") {
  TEST_CASE("settings are parsed into 20 canonical bytes and bad ones refused with a sentence") {
    const WorldParams w = world("seed=5,units=300,map=200,rocks=10", 8);
    CHECK(w.settings.size() == 20);
    CHECK(skirmish().settings_text(w.settings) == "seed=5,units=300,map=200,rocks=10");
    CHECK(make_skirmish(w) != nullptr);
    std::string error;
    for (const char* bad : {"units=0", "units=20001", "map=31", "map=1025", "rocks=31", "colour=red", "seed=-1"}) {
      CAPTURE(bad);
      WorldParams x{{}, 4};
      error.clear();
      CHECK_FALSE(skirmish().parse_world(bad, &x, &error));
      CHECK_FALSE(error.empty());
    }
    WorldParams many{{}, 8};
    CHECK_FALSE(skirmish().parse_world("units=2501", &many, &error));  // 20008 units in all
    CHECK_MESSAGE(error.find("20000") != std::string::npos, error);
    CHECK(make_skirmish(WorldParams{{1, 2, 3}, 2}) == nullptr);  // not 0 or 20 bytes
  }

  TEST_CASE("the integer square root is exact") {
    Rng rng = Rng::seeded(3);
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t v = (std::uint64_t{rng.next_u32()} << 32 | rng.next_u32()) >> rng.below(64);
      const std::uint64_t r = isqrt64(v);
      CHECK(r * r <= v);
      CHECK((r + 1) * (r + 1) > v);
    }
    CHECK(isqrt64(0) == 0);
    CHECK(isqrt64(UINT64_MAX) == 0xffffffffull);
  }

  TEST_CASE("selected units move to the commanded point and stop there, a stop halts them") {
    const WorldParams w = world("seed=2,units=9,map=64,rocks=0", 2);
    auto sim = make_skirmish(w);
    REQUIRE(sim);
    // Player 0 selects its units 0..8 and sends them to the map's centre (32, 32).
    sim->step(frame(1, 2, {{0, skirmish_select_range(0, 8)}, {0, skirmish_order(SkirmishCommand::Move, 32768, 32768)}}));
    CHECK(fields(*sim, 0)["selected"] == 1);
    CHECK(fields(*sim, 9)["selected"] == 0);  // player 1's unit
    for (Tick t = 2; t <= 1500; ++t) sim->step(frame(t, 2, {}));
    for (std::uint32_t u = 0; u < 9; ++u) {
      auto f = fields(*sim, u);
      const auto x = static_cast<std::int32_t>(f["x"]), y = static_cast<std::int32_t>(f["y"]);
      CHECK(std::abs(x - static_cast<std::int32_t>(32 * kUnit)) < static_cast<std::int32_t>(3 * kUnit));
      CHECK(std::abs(y - static_cast<std::int32_t>(32 * kUnit)) < static_cast<std::int32_t>(3 * kUnit));
      CHECK(f["order"] == static_cast<std::uint64_t>(SkirmishOrder::Idle));  // arrived
    }
    // Sent off again and stopped after 100 ticks: they stand where they are.
    sim->step(frame(1501, 2, {{0, skirmish_order(SkirmishCommand::Move, 0, 0)}}));
    for (Tick t = 1502; t <= 1600; ++t) sim->step(frame(t, 2, {}));
    sim->step(frame(1601, 2, {{0, skirmish_order(SkirmishCommand::Stop)}}));
    auto at_stop = fields(*sim, 4);
    for (Tick t = 1602; t <= 1700; ++t) sim->step(frame(t, 2, {}));
    auto later = fields(*sim, 4);
    CHECK(later["order"] == static_cast<std::uint64_t>(SkirmishOrder::Idle));
    CHECK(std::abs(static_cast<std::int32_t>(later["x"]) - static_cast<std::int32_t>(at_stop["x"])) < static_cast<std::int32_t>(kUnit));
  }

  TEST_CASE("invalid commands and orders for another player's units do nothing, on every peer alike") {
    const WorldParams w = world("seed=4,units=20,map=64", 2);
    auto a = make_skirmish(w), b = make_skirmish(w);
    const std::vector<std::vector<std::uint8_t>> invalid{
        {},                                                       // (not sent: commands are 1.. bytes)
        {0},                                                      // unknown kind
        {9, 1, 2},                                                // unknown kind
        {1, 0, 0},                                                // select range cut short
        {1, 5, 0, 1, 0},                                          // first > last
        {2, 0, 0, 0, 0, 0, 0, 0},                                 // select area cut short
        {2, 0xff, 0xff, 0, 0, 0, 0, 0, 0},                        // x0 > x1
        {3, 0, 0, 0, 0, 0},                                       // move too long
        {4, 0},                                                   // stop with a payload
    };
    for (Tick t = 1; t <= 300; ++t) {
      std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> junk;
      if (t < invalid.size() && !invalid[t].empty()) junk.push_back({1, invalid[t]});
      // Player 1 selects ids 0..19: only its own (20..39) can be, so none is.
      if (t == 20) junk.push_back({1, skirmish_select_range(0, 19)});
      if (t == 21) junk.push_back({1, skirmish_order(SkirmishCommand::Move, 0, 0)});
      a->step(frame(t, 2, junk));
      b->step(frame(t, 2, {}));
      REQUIRE_MESSAGE(a->hash() == b->hash(), "tick " << t);
    }
  }

  TEST_CASE("armies sent at each other fight with integer damage until one side thins out") {
    const WorldParams w = world("seed=8,units=40,map=48,rocks=0", 2);
    auto sim = make_skirmish(w);
    // Both attack-move to the centre.
    sim->step(frame(1, 2, {{0, skirmish_select_range(0, 79)}, {0, skirmish_order(SkirmishCommand::AttackMove, 32768, 32768)},
                           {1, skirmish_select_range(0, 79)}, {1, skirmish_order(SkirmishCommand::AttackMove, 32768, 32768)}}));
    for (Tick t = 2; t <= 3000; ++t) sim->step(frame(t, 2, {}));
    std::uint32_t dead = 0, hurt = 0;
    for (std::uint32_t u = 0; u < sim->entity_count(); ++u) {
      const auto hp = static_cast<std::int32_t>(fields(*sim, u)["hp"]);
      dead += hp == 0 ? 1u : 0u;
      hurt += hp > 0 && hp < 100 ? 1u : 0u;
    }
    CHECK(dead >= 20);
    CHECK(dead + hurt > 0);
    for (const FieldValue& v : sim->entity_fields(0)) CHECK(v.kind == FieldValue::Kind::U32);  // integers only
  }

  TEST_CASE("units never enter rock or leave the map") {
    const Scenario sc = golden_scenario(skirmish());
    auto sim = make_skirmish(sc.world);
    const std::uint64_t side = 128 * kUnit;
    for (Tick t = 1; t <= 2000; ++t) {
      sim->step(scenario_frame(sc, t));
      if (t % 100 != 0) continue;
      for (std::uint32_t u = 0; u < sim->entity_count(); ++u) {
        auto f = fields(*sim, u);
        REQUIRE(f["x"] < side);
        REQUIRE(f["y"] < side);
      }
    }
    // Rock is drawn as rectangles (palette 7), and no unit circle centre lies inside one.
    DrawList shapes;
    sim->draw(*sim, 1.0f, shapes);
    std::vector<DrawShape> rocks;
    for (const DrawShape& s : shapes)
      if (s.kind == DrawShape::Kind::Rect && s.palette == 7) rocks.push_back(s);
    CHECK(!rocks.empty());
    for (const DrawShape& s : shapes)
      if (s.kind == DrawShape::Kind::Circle && s.player >= 0)
        for (const DrawShape& r : rocks)
          REQUIRE_FALSE((s.x >= r.x && s.x < r.x + r.a && s.y >= r.y && s.y < r.y + r.b));
  }

  TEST_CASE("a one-bit divergence is localized to its unit and field") {
    const Scenario sc = golden_scenario(skirmish());
    auto a = make_skirmish(sc.world);
    for (Tick t = 1; t <= 500; ++t) a->step(scenario_frame(sc, t));
    const std::uint32_t n = a->entity_count();
    const char* names[] = {"x", "y", "vx", "vy", "tx", "ty", "hp", "target", "cooldown", "order", "owner", "selected"};
    for (const std::uint64_t selector : std::vector<std::uint64_t>{17, n + 250ull, 6ull * n + 3, 11ull * n + 399}) {
      CAPTURE(selector);
      auto b = a->clone();
      b->perturb(selector);
      REQUIRE(b->hash() != a->hash());
      const DesyncReport report = lockstep::testing::localize(*a, *b);
      CHECK(report.entity == selector % n);
      REQUIRE(report.server_fields.size() == 1);
      CHECK(report.server_fields[0].name == names[(selector / n) % 12]);
    }
  }

  TEST_CASE("controls: a drag selects, a right click orders, keys order the whole army, each once") {
    const Module& m = skirmish();
    ControlMemory memory{};
    auto frame_of = [&](const Controls& c) {
      PlayerTick t = blank_tick(m);
      m.from_controls(c, memory, &t);
      CHECK(t.input.empty());  // input size 0: commands only
      std::vector<std::vector<std::uint8_t>> out;
      for (std::size_t i = 0; i < t.commands.size(); ++i) {
        const auto b = t.commands.at(i);
        out.emplace_back(b.begin(), b.end());
      }
      return out;
    };
    Controls c;
    c.world_width = c.world_height = 128;
    c.pointer_valid = true;
    c.pointer_x = 32, c.pointer_y = 32;
    c.pointer_down = true;
    CHECK(frame_of(c).empty());  // the drag starts
    c.pointer_x = 64, c.pointer_y = 96;
    CHECK(frame_of(c).empty());  // still dragging
    c.pointer_down = false;
    CHECK(frame_of(c) == std::vector<std::vector<std::uint8_t>>{skirmish_select_area(16384, 16384, 32768, 49152)});
    c.secondary_down = true;
    CHECK(frame_of(c) == std::vector<std::vector<std::uint8_t>>{skirmish_order(SkirmishCommand::AttackMove, 32768, 49152)});
    CHECK(frame_of(c).empty());  // held: once
    c.secondary_down = false;
    frame_of(c);
    c.hold(Key::M);
    c.secondary_down = true;
    CHECK(frame_of(c) == std::vector<std::vector<std::uint8_t>>{skirmish_order(SkirmishCommand::Move, 32768, 49152)});
    Controls keys;
    keys.hold(Key::Space);
    CHECK(frame_of(keys) == std::vector<std::vector<std::uint8_t>>{skirmish_select_range(0, 65535)});
    CHECK(frame_of(keys).empty());  // held: once
    keys.hold(Key::W);  // the top-left ninth
    CHECK(frame_of(keys) == std::vector<std::vector<std::uint8_t>>{skirmish_order(SkirmishCommand::AttackMove, 10923, 10923)});
    keys.hold(Key::Enter);
    CHECK(frame_of(keys) == std::vector<std::vector<std::uint8_t>>{skirmish_order(SkirmishCommand::Stop)});
  }
}
