// The skirmish's module: its world settings, bots, controls, command encoders and table.
#include <algorithm>
#include <string>

#include "lockstep/bytes.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/settings.hpp"
#include "rules.hpp"

namespace lockstep {

namespace {

using skirmish_rules::put_u16;

// ---- the module ----

constexpr std::array kSettings{
    WorldSetting{"seed", "1", "map and army seed", 0, UINT64_MAX},
    WorldSetting{"units", "200", "units per player; all players' together at most 20000", 1, kSkirmishMaxUnits},
    WorldSetting{"map", "128", "cells per side, 32..1024", 32, 1024},
    WorldSetting{"rocks", "6", "percent of the cells that are rock, 0..30", 0, 30},
};

std::array<std::uint64_t, 4> values_of(const SkirmishSettings& s) { return {s.seed, s.units, s.map, s.rocks}; }

bool parse_world(std::string_view text, WorldParams* world, std::string* error) {
  SkirmishSettings s;
  if (!decode_skirmish_settings(world->settings, &s)) s = SkirmishSettings{};
  auto v = values_of(s);
  if (!apply_settings("skirmish", kSettings, text, v, error)) return false;
  s.seed = v[0];
  s.units = static_cast<std::uint32_t>(v[1]);
  s.map = static_cast<std::uint32_t>(v[2]);
  s.rocks = static_cast<std::uint32_t>(v[3]);
  if (std::uint64_t{s.units} * world->players > kSkirmishMaxUnits) {
    *error = "the world setting units=" + std::to_string(s.units) + " for " + std::to_string(world->players) +
             " players is over " + std::to_string(kSkirmishMaxUnits) + " units in all";
    return false;
  }
  world->settings = encode_skirmish_settings(s);
  return true;
}

std::string settings_text(std::span<const std::uint8_t> bytes) {
  SkirmishSettings s;
  if (!decode_skirmish_settings(bytes, &s)) return "";
  return settings_values_text(kSettings, values_of(s));
}

// A bot thinks every 4 s (at its own phase): it picks a group and sends it somewhere, usually
// fighting on the way; now and then it halts a group or just repositions.
void bot(std::uint64_t seed, Tick tick, PlayerTick* out) {
  constexpr Tick kPeriod = 400;
  const Tick phase = static_cast<Tick>(mix64(seed) % (kPeriod / 2)) + 1;
  if (tick < phase || (tick - phase) % (kPeriod / 2) != 0) return;
  const std::uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ULL + tick);
  auto frac = [&](int shift) { return static_cast<std::uint16_t>((h >> shift) & 0xffff); };
  if ((tick - phase) % kPeriod == 0) {
    out->commands.add(skirmish_select_range(0, 65535));  // the whole army
    out->commands.add(skirmish_order(SkirmishCommand::AttackMove, frac(0), frac(16)));
    return;
  }
  const std::uint16_t x0 = frac(32) / 2, y0 = frac(48) / 2;
  out->commands.add(skirmish_select_area(x0, y0, static_cast<std::uint16_t>(x0 + 32768), static_cast<std::uint16_t>(y0 + 32768)));
  switch (h % 4) {
    case 0: out->commands.add(skirmish_order(SkirmishCommand::Stop)); break;
    case 1: out->commands.add(skirmish_order(SkirmishCommand::Move, frac(8), frac(24))); break;
    default: out->commands.add(skirmish_order(SkirmishCommand::AttackMove, frac(8), frac(24))); break;
  }
}

std::uint16_t to_fraction(float v, float side) {
  if (!(side > 0)) return 0;
  const float f = v / side * 65536.0f;
  return static_cast<std::uint16_t>(std::clamp(f, 0.0f, 65535.0f));
}

// Mouse: drag with the primary button to select (a click selects what is under it), secondary
// click to attack-move there (to move, hold M). Keys (the terminal has no mouse): Space selects
// the whole army, W E R / S D F / X C V attack-move it to that ninth of the map, Enter stops it.
// memory: 0 primary held, 1-2 drag start, 3 secondary held, 4 keys held.
void from_controls(const Controls& c, ControlMemory& m, PlayerTick* out) {
  const auto held = static_cast<std::int32_t>(c.held.to_ulong() & 0xffffffffu);
  auto pressed = [&](Key k) { return c.is_held(k) && !((m[4] >> static_cast<int>(k)) & 1); };
  const std::uint16_t px = to_fraction(c.pointer_x, c.world_width), py = to_fraction(c.pointer_y, c.world_height);
  if (c.pointer_valid && c.pointer_down && !m[0]) m[1] = px, m[2] = py;
  if (!c.pointer_down && m[0]) {
    std::int32_t x0 = std::min<std::int32_t>(m[1], px), x1 = std::max<std::int32_t>(m[1], px);
    std::int32_t y0 = std::min<std::int32_t>(m[2], py), y1 = std::max<std::int32_t>(m[2], py);
    if (x1 - x0 < 300 && y1 - y0 < 300) x0 -= 600, x1 += 600, y0 -= 600, y1 += 600;  // a click: what is under it
    auto clip = [](std::int32_t v) { return static_cast<std::uint16_t>(std::clamp(v, 0, 65535)); };
    out->commands.add(skirmish_select_area(clip(x0), clip(y0), clip(x1), clip(y1)));
  }
  if (c.pointer_valid && c.secondary_down && !m[3])
    out->commands.add(skirmish_order(c.is_held(Key::M) ? SkirmishCommand::Move : SkirmishCommand::AttackMove, px, py));
  m[0] = c.pointer_down ? 1 : 0;
  m[3] = c.secondary_down ? 1 : 0;
  if (pressed(Key::Space)) out->commands.add(skirmish_select_range(0, 65535));
  if (pressed(Key::Enter)) out->commands.add(skirmish_order(SkirmishCommand::Stop));
  constexpr std::array<Key, 9> kNinths{Key::W, Key::E, Key::R, Key::S, Key::D, Key::F, Key::X, Key::C, Key::V};
  for (std::size_t i = 0; i < kNinths.size(); ++i)
    if (pressed(kNinths[i]))
      out->commands.add(skirmish_order(SkirmishCommand::AttackMove, static_cast<std::uint16_t>(10923 + 21845 * (i % 3)),
                                       static_cast<std::uint16_t>(10923 + 21845 * (i / 3))));
  m[4] = held;
}

// For the desync page: a unit and its owner, where it stands, and what a command says.
std::string entity_kind(const Simulation& sim, std::uint32_t entity) {
  const std::vector<FieldValue> f = sim.entity_fields(entity);
  for (const FieldValue& v : f)
    if (v.name == "owner") return "unit of player " + std::to_string(v.bits);
  return "unit";
}

bool entity_position(const Simulation& sim, std::uint32_t entity, float* x, float* y) {
  const std::vector<FieldValue> f = sim.entity_fields(entity);
  if (f.size() < 2 || f[0].name != "x" || f[1].name != "y") return false;
  constexpr float kUnit = 1.0f / static_cast<float>(kFixedOne);
  *x = static_cast<float>(static_cast<std::int32_t>(f[0].bits)) * kUnit;
  *y = static_cast<float>(static_cast<std::int32_t>(f[1].bits)) * kUnit;
  return true;
}

std::string command_text(std::span<const std::uint8_t> c) {
  const auto u16 = [&](std::size_t at) { return std::to_string(skirmish_rules::read_u16(c, at)); };
  const auto point = [&](std::size_t at) { return u16(at) + "," + u16(at + 2); };
  if (c.empty()) return "";
  switch (static_cast<SkirmishCommand>(c[0])) {
    case SkirmishCommand::SelectRange: return c.size() == 5 ? "select ids " + u16(1) + ".." + u16(3) : "";
    case SkirmishCommand::SelectArea: return c.size() == 9 ? "select area " + point(1) + " to " + point(5) : "";
    case SkirmishCommand::Move: return c.size() == 5 ? "move to " + point(1) : "";
    case SkirmishCommand::Stop: return c.size() == 1 ? "stop" : "";
    case SkirmishCommand::AttackMove: return c.size() == 5 ? "attack-move to " + point(1) : "";
  }
  return "";
}

}  // namespace

std::vector<std::uint8_t> encode_skirmish_settings(const SkirmishSettings& s) {
  std::vector<std::uint8_t> out;
  ByteWriter w(out);
  w.u64(s.seed);
  w.u32(s.units);
  w.u32(s.map);
  w.u32(s.rocks);
  return out;
}

bool decode_skirmish_settings(std::span<const std::uint8_t> bytes, SkirmishSettings* out) {
  if (bytes.empty()) {
    *out = SkirmishSettings{};
    return true;
  }
  if (bytes.size() != 20) return false;
  ByteReader r(bytes);
  SkirmishSettings s;
  s.seed = r.u64();
  s.units = r.u32();
  s.map = r.u32();
  s.rocks = r.u32();
  if (s.units < 1 || s.units > kSkirmishMaxUnits || s.map < 32 || s.map > 1024 || s.rocks > 30) return false;
  *out = s;
  return true;
}

std::vector<std::uint8_t> skirmish_select_range(std::uint16_t first, std::uint16_t last) {
  std::vector<std::uint8_t> c{static_cast<std::uint8_t>(SkirmishCommand::SelectRange)};
  put_u16(c, first);
  put_u16(c, last);
  return c;
}

std::vector<std::uint8_t> skirmish_select_area(std::uint16_t x0, std::uint16_t y0, std::uint16_t x1, std::uint16_t y1) {
  std::vector<std::uint8_t> c{static_cast<std::uint8_t>(SkirmishCommand::SelectArea)};
  for (const std::uint16_t v : {x0, y0, x1, y1}) put_u16(c, v);
  return c;
}

std::vector<std::uint8_t> skirmish_order(SkirmishCommand kind, std::uint16_t x, std::uint16_t y) {
  std::vector<std::uint8_t> c{static_cast<std::uint8_t>(kind)};
  if (kind == SkirmishCommand::Move || kind == SkirmishCommand::AttackMove) {
    put_u16(c, x);
    put_u16(c, y);
  }
  return c;
}

const Module& skirmish_module() {
  static const Module m{
      "skirmish",
      1,
      "an RTS battle in integer arithmetic: armies on a rock-strewn map, ordered by commands",
      kSettings,
      &parse_world,
      &settings_text,
      &make_skirmish,
      &bot,
      &from_controls,
      "drag to select, right-click attack-moves (M: move); keys: Space all, WER/SDF/XCV attack-move, Enter stop",
      0,
      "seed=20261123,units=100",
      {},  // no library to cover: built in
      0,
      &entity_kind,
      &entity_position,
      nullptr,  // no per-tick input: commands only
      &command_text,
  };
  return m;
}

}  // namespace lockstep
