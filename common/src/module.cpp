#include "lockstep/module.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <cerrno>
#include <cstdlib>

#include "lockstep/arena.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/log.hpp"
#include "lockstep/skirmish.hpp"

namespace lockstep {

bool split_settings(std::string_view text, std::vector<std::pair<std::string, std::string>>* out, std::string* error) {
  out->clear();
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      *error = "'" + std::string(item) + "' is not key=value";
      return false;
    }
    out->emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return true;
}

bool world_settings_text(const std::string& arg, std::string* text, std::string* error) {
  if (arg.empty() || arg[0] != '@') {
    *text = arg;
    return true;
  }
  const std::string path = arg.substr(1);
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read the world settings file " + path + ": " + std::strerror(errno);
    return false;
  }
  text->clear();
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c) != 0; }), line.end());
    if (line.empty()) continue;
    *text += (text->empty() ? "" : ",") + line;
  }
  return true;
}

bool parse_setting_number(const std::string& key, const std::string& value, std::uint64_t lo, std::uint64_t hi,
                          std::uint64_t* out, std::string* error) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || errno == ERANGE || *end != '\0' ||
      v < lo || v > hi) {
    *error = "the world setting " + key + " must be a whole number from " + std::to_string(lo) + " to " +
             std::to_string(hi) + ", not '" + value + "'";
    return false;
  }
  *out = v;
  return true;
}

namespace {

// ---- the arena ----

constexpr std::array kArenaSettings{
    WorldSetting{"seed", "1", "world generation seed"},
    WorldSetting{"bodies", "64", "passive bodies, 0..1000000"},
};

bool arena_parse_world(std::string_view text, WorldParams* world, std::string* error) {
  ArenaSettings settings;
  if (!decode_arena_settings(world->settings, &settings)) settings = ArenaSettings{};
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!split_settings(text, &pairs, error)) return false;
  for (const auto& [key, value] : pairs) {
    std::uint64_t v = 0;
    if (key == "seed") {
      if (!parse_setting_number(key, value, 0, UINT64_MAX, &v, error)) return false;
      settings.seed = v;
    } else if (key == "bodies") {
      if (!parse_setting_number(key, value, 0, kMaxBodies, &v, error)) return false;
      settings.bodies = static_cast<std::uint32_t>(v);
    } else {
      *error = "the arena has no world setting '" + key + "' (it has seed, bodies)";
      return false;
    }
  }
  world->settings = encode_arena_settings(settings);
  return true;
}

std::string arena_settings_text(std::span<const std::uint8_t> bytes) {
  ArenaSettings s;
  if (!decode_arena_settings(bytes, &s)) return "";
  return "seed=" + std::to_string(s.seed) + ",bodies=" + std::to_string(s.bodies);
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
};

const std::array<const Module*, 2> kBuiltin{&kArena, &skirmish_module()};

}  // namespace

std::uint64_t join_fingerprint(SimulationFactory factory) {
  const auto probe = factory ? factory(WorldParams{{}, 1}) : nullptr;
  return probe ? probe->fingerprint() : 0;
}

PlayerTick blank_tick(const Module& m) {
  PlayerTick t;
  t.input.assign(m.input_size, 0);
  return t;
}

std::span<const Module* const> builtin_modules() { return kBuiltin; }

const Module* find_module(std::string_view name) {
  for (const Module* m : kBuiltin)
    if (m->name == name) return m;
  return nullptr;
}

const Module& default_module() { return *kBuiltin.front(); }

const Module* module_from_options(std::string_view sim, const std::string& sim_lib, int* exit_code) {
  if (sim_lib.empty()) return choose_module(sim, exit_code);
  std::string error;
  const Module* m = load_module_library(sim_lib, &error);
  if (!m) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    *exit_code = 2;
  }
  return m;
}

const Module* choose_module(std::string_view name, int* exit_code) {
  if (name == "list") {
    std::fputs(module_list().c_str(), stdout);
    *exit_code = 0;
    return nullptr;
  }
  if (const Module* m = find_module(name)) return m;
  std::string known;
  for (const Module* m : kBuiltin) known += (known.empty() ? "" : ", ") + std::string(m->name);
  LOCKSTEP_LOG_ERROR("--sim: no built-in simulation module '%.*s' (built in: %s; --sim list describes them)",
                     static_cast<int>(name.size()), name.data(), known.c_str());
  *exit_code = 2;
  return nullptr;
}

std::string module_list() {
  std::string out;
  for (const Module* m : kBuiltin) {
    out += std::string(m->name) + " " + std::to_string(m->version) + ": " + std::string(m->description) + "; settings:";
    for (const WorldSetting& s : m->settings)
      out += " " + std::string(s.key) + "=" + std::string(s.default_value) + " (" + std::string(s.help) + ")";
    out += "\n";
  }
  return out;
}

}  // namespace lockstep
