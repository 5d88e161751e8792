// The arena's module: its world settings, controls, bot and table.
#include <array>

#include "lockstep/arena.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/settings.hpp"

namespace lockstep {

namespace {

constexpr std::array kArenaSettings{
    WorldSetting{"seed", "1", "world generation seed", 0, UINT64_MAX},
    WorldSetting{"bodies", "64", "passive bodies, 0..1000000", 0, kMaxBodies},
};

bool arena_parse_world(std::string_view text, WorldParams* world, std::string* error) {
  ArenaSettings settings;
  if (!decode_arena_settings(world->settings, &settings)) settings = ArenaSettings{};
  std::array<std::uint64_t, 2> v{settings.seed, settings.bodies};
  if (!apply_settings("arena", kArenaSettings, text, v, error)) return false;
  settings.seed = v[0];
  settings.bodies = static_cast<std::uint32_t>(v[1]);
  world->settings = encode_arena_settings(settings);
  return true;
}

std::string arena_settings_text(std::span<const std::uint8_t> bytes) {
  ArenaSettings s;
  if (!decode_arena_settings(bytes, &s)) return "";
  return settings_values_text(kArenaSettings, std::array<std::uint64_t, 2>{s.seed, s.bodies});
}

void arena_controls(const Controls& c, ControlMemory&, PlayerTick* out) {
  ArenaInput in;
  if (c.is_held(Key::Up) || c.is_held(Key::W)) in.thrust = 127;
  else if (c.is_held(Key::Down) || c.is_held(Key::S)) in.thrust = -127;
  if (c.is_held(Key::Left) || c.is_held(Key::A)) in.turn = -127;
  else if (c.is_held(Key::Right) || c.is_held(Key::D)) in.turn = 127;
  in.encode(out->input);
}

void arena_bot(std::uint64_t seed, Tick tick, PlayerTick* out) { bot_input(seed, tick).encode(out->input); }

// For the desync page: the first `players` entities are the players' ships, the rest bodies.
std::string arena_entity_kind(const Simulation& sim, std::uint32_t entity) {
  for (const FieldValue& f : sim.global_fields())
    if (f.name == "players") return entity < f.bits ? "ship of player " + std::to_string(entity) : "body";
  return "";
}

std::string arena_input_text(std::span<const std::uint8_t> input) {
  if (input.size() != ArenaInput::kBytes) return "";
  const ArenaInput in = ArenaInput::decode(input);
  return "thrust " + std::to_string(in.thrust) + " turn " + std::to_string(in.turn);
}

const Module kArena{
    "arena",
    1,
    "discs steered by thrust and turn among passive bodies bouncing in a walled arena",
    kArenaSettings,
    &arena_parse_world,
    &arena_settings_text,
    &make_arena,
    &arena_bot,
    &arena_controls,
    "arrows/WASD steer",
    ArenaInput::kBytes,
    "seed=20261122,bodies=256",
    {},  // no library to cover: built in
    0,
    &arena_entity_kind,
    nullptr,  // the page finds a body by its x and y fields
    &arena_input_text,
    nullptr,  // no commands
};

}  // namespace

const Module& arena_module() { return kArena; }

}  // namespace lockstep
