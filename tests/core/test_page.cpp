// The desync page: how far apart two values are, every party's held states for the state browser,
// the two parties set side by side, the module's words for entities and inputs, the commands it
// offers, and the static HTML and SVG that read without script.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_page.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/games.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/state_hash.hpp"

using namespace lockstep;

namespace {

FieldValue f32(float v) { return {"v", FieldValue::Kind::F32, std::bit_cast<std::uint32_t>(v)}; }
FieldValue f64(double v) { return {"v", FieldValue::Kind::F64, std::bit_cast<std::uint64_t>(v)}; }
FieldValue u32(std::uint32_t v) { return {"v", FieldValue::Kind::U32, v}; }

// A bundle of three parties over ticks from..to of the module's golden scenario: the server, a
// player that agrees, and one whose state is perturbed (selector `which`) after tick `to`'s step.
// `keyframe`: whether the replay holds its start state (a relay server's bundle does not).
DesyncBundle three_party_bundle(const Module& m, Tick from, Tick to, std::uint64_t which, bool keyframe = true) {
  const Scenario sc = golden_scenario(m);
  auto sim = m.create(sc.world);
  for (Tick t = 1; t <= from; ++t) sim->step(scenario_frame(sc, t));
  DesyncBundle b;
  b.written_by = "server";
  b.tick = to;
  Replay& r = b.replay;
  r.header.world = sc.world;
  r.header.input_size = m.input_size;
  r.header.module = std::string(m.name);
  r.header.names = {"ann", "bob", "cy", "di"};
  r.header.start_tick = r.frames_from = from;
  std::vector<std::uint8_t> start;
  sim->serialize(start);
  if (keyframe) r.keyframes.push_back({from, hash_bytes(start), start});
  BundleParty server{"server", {}, {}}, agrees{"player 0 (ann)", {}, {}}, odd{"player 1 (bob)", {}, {}};
  for (Tick t = from + 1; t <= to; ++t) {
    r.frames.push_back(scenario_frame(sc, t));
    sim->step(r.frames.back());
    r.hashes.push_back(sim->hash());
    std::vector<std::uint8_t> bytes;
    sim->serialize(bytes);
    for (BundleParty* p : {&server, &agrees}) {
      p->hashes.emplace_back(t, hash_bytes(bytes));
      p->states.push_back({t, hash_bytes(bytes), bytes});
    }
    if (t == to) {
      auto wrong = sim->clone();
      wrong->perturb(which);
      bytes.clear();
      wrong->serialize(bytes);
    }
    odd.hashes.emplace_back(t, hash_bytes(bytes));
    odd.states.push_back({t, hash_bytes(bytes), bytes});
  }
  b.parties = {server, agrees, odd};
  b.report = Json{{"tick", to}, {"votes", Json::array({Json{{"hash", hash_hex(server.hashes.back().second)}, {"peers", {"server", "p0"}}},
                                                       Json{{"hash", hash_hex(odd.hashes.back().second)}, {"peers", {"p1"}}}})}};
  return b;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("core/page") {
  TEST_CASE("how far apart two values are: their difference and, for floats, the ulps between them") {
    CHECK(field_gap(f32(1.0f), f32(std::nextafter(1.0f, 2.0f))).ulps == 1u);
    CHECK(field_gap(f32(std::nextafter(1.0f, 2.0f)), f32(1.0f)).ulps == 1u);
    CHECK(field_gap(f32(1.0f), f32(std::nextafter(1.0f, 2.0f))).difference == "+1.1920929e-07");
    CHECK(field_gap(f32(0.0f), f32(-0.0f)).ulps == 0u);
    // Across zero: the steps down to zero on one side and up from it on the other.
    CHECK(field_gap(f32(std::numeric_limits<float>::denorm_min()), f32(-std::numeric_limits<float>::denorm_min())).ulps == 2u);
    CHECK(field_gap(f64(1.0), f64(std::nextafter(1.0, 0.0))).ulps == 1u);
    CHECK(field_gap(f64(2.0), f64(1.5)).difference == "-0.5");
    CHECK_FALSE(field_gap(f32(std::nanf("")), f32(1.0f)).ulps.has_value());
    CHECK(field_gap(u32(7), u32(3)).difference == "-4");
    CHECK(field_gap(u32(0), u32(0xffffffffu)).difference == "+4294967295");
    CHECK_FALSE(field_gap(u32(1), u32(2)).ulps.has_value());
  }

  TEST_CASE("the page sets the odd party beside the majority, and holds every party's every state for stepping") {
    const DesyncBundle b = three_party_bundle(arena_module(), 116, 120, 5);
    const Json data = bundle_page_data(arena_module(), b, "b.bundle");
    // The two side by side: the server (the majority's hash) and player 1, not the agreeing player 0.
    CHECK(data["difference"]["a_name"] == "server");
    CHECK(data["difference"]["b_name"] == "player 1 (bob)");
    CHECK(data["difference"]["where"] != "none");
    CHECK(data["sides"] == Json::array({0, 2}));
    // Every held tick, every party; only the odd one differs, only at 120.
    const Json& ticks = data["states"]["ticks"];
    REQUIRE(ticks.size() == 4);
    for (const Json& t : ticks) {
      CHECK(t["parties"].size() == 3);
      CHECK(t["reference"] == 0);
      CHECK(t["values"].size() == t["entities"]);
      for (const Json& p : t["parties"]) {
        if (p["party"] == 0) continue;
        const bool odd = p["party"] == 2 && t["tick"] == 120;
        CHECK_MESSAGE(p["differs"].size() == (odd ? 1u : 0u), std::string(t["tick"].dump() + " " + p.dump()));
      }
    }
    const Json& differ = ticks[3]["parties"][2]["differs"][0];
    if (data["difference"]["where"] == "entity") CHECK(differ[0] == data["difference"]["entity"]);
    // The module's words: what the entity is, what an input says.
    CHECK(data["states"]["kinds"].dump().find("ship of player 0") != std::string::npos);
    CHECK(data["inputs"][0]["players"][0]["text"].get<std::string>().rfind("thrust ", 0) == 0);
    CHECK(data["difference"]["fields"][0]["ulps"].is_number());
    // The commands: a re-simulation from the bundle's start, the two stored states and their comparison.
    const std::string commands = data["commands"].dump();
    CHECK(has(commands, "seek b.bundle 120 -o state-120.bin"));
    CHECK(has(commands, "seek b.bundle 120 --party 0 -o party0-120.state"));
    CHECK(has(commands, "seek b.bundle 120 --party 2 -o party2-120.state"));
    CHECK(has(commands, "compare b.bundle party0-120.state --with party2-120.state"));
  }

  TEST_CASE("with the session's replay the timeline's reference covers the whole session, and agrees with the parties") {
    const DesyncBundle b = three_party_bundle(arena_module(), 116, 120, 5);
    const Replay session = scenario_replay(golden_scenario(arena_module()), 120, 0);
    CHECK(bundle_page_data(arena_module(), b, "b.bundle")["reference"].size() == 4);
    const Json data = bundle_page_data(arena_module(), b, "b.bundle", &session);
    CHECK(data["reference"].size() == 120);
    CHECK(data["reference_name"] == "reference (the session's replay)");
    for (const Json& point : data["reference"])
      if (point[0] >= 117) CHECK(point[1] == data["parties"][0]["hashes"][point[0].get<std::size_t>() - 117][1]);
  }

  TEST_CASE("the page reads without script: its tables, timeline and drawings are HTML and SVG") {
    const DesyncBundle b = three_party_bundle(arena_module(), 116, 120, 5);
    const std::string html = bundle_page(arena_module(), b, "b.bundle");
    for (const char* part : {"<svg id=\"timeline\"", "class=\"first-divergent\"", "<table id=\"agreement\"", "<table id=\"difference-fields\"",
                             "<table id=\"state-differs\"", "<table id=\"state-entities\"", "<table id=\"inputs-table\"", "<figure class=\"view\"",
                             "<circle", "tick 120 · player 1 (bob) against server (the reference)", "thrust ", "ship of player 0"})
      CHECK_MESSAGE(has(html, part), part);
    CHECK_FALSE(has(html, "<canvas"));
    // The votes of a tick on hover, from the parties' hashes.
    CHECK(has(html, "server, player 0 (ann)"));
    // The odd party's first divergent tick, in the table as in the drawing.
    CHECK(has(html, "<span class=\"bad\">tick 120</span>"));
  }

  TEST_CASE("a skirmish page circles the differing unit and reads its commands, and a bundle without its start state offers no re-simulation") {
    const Module& m = skirmish_module();
    // A window holding a tick where the bots give orders.
    const Scenario sc = golden_scenario(m);
    Tick orders = 10;
    while (orders < 2000 && scenario_frame(sc, orders).commands.empty()) ++orders;
    REQUIRE(orders < 2000);
    // Perturb until an entity (a unit) differs: the selector picks among every stored value.
    DesyncBundle b;
    Json data;
    for (std::uint64_t which = 0; which < 64; ++which) {
      b = three_party_bundle(m, orders - 2, orders + 2, which);
      data = bundle_page_data(m, b, "s.bundle");
      if (data["difference"]["where"] == "entity") break;
    }
    REQUIRE(data["difference"]["where"] == "entity");
    CHECK(has(data["difference"]["entity_kind"].get<std::string>(), "unit of player"));
    REQUIRE(data["views"].size() == 3);
    CHECK(data["views"][0]["mark"].is_array());
    std::string commands;
    for (const Json& f : data["inputs"])
      for (const Json& p : f["players"])
        for (const Json& c : p["commands"]) commands += c.get<std::string>() + ";";
    CHECK_MESSAGE((has(commands, "select") || has(commands, "move")), commands);
    // Relay mode's bundle: the stored states only.
    const DesyncBundle relay = three_party_bundle(m, 30, 34, 3, false);
    const std::string offered = bundle_page_data(m, relay, "r.bundle")["commands"].dump();
    CHECK_FALSE(has(offered, "-o state-34.bin"));
    CHECK(has(bundle_page_data(m, three_party_bundle(m, 30, 34, 3, true), "r.bundle")["commands"].dump(), "-o state-34.bin"));
    CHECK(has(offered, "--party 2"));
  }
}
