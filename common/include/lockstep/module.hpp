// Simulation modules: everything the stock executables need to host, join, record, replay and
// check one game without knowing which game it is. A module bundles the simulation's factory,
// its world settings (parsed from --world key=value,...), its bots, how a player's controls
// become its input, and its name and version. The executables pick one with --sim NAME.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

/// The keys a renderer reports, whatever the game: a module maps the ones it uses to its input.
enum class Key : std::uint8_t {
  Up, Down, Left, Right, Space, Enter,
  A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z,
  Count
};

/// What the local player is doing this frame: the keys held, and the pointer in world units.
struct Controls {
  std::bitset<static_cast<std::size_t>(Key::Count)> held;
  bool pointer_valid = false;  ///< the pointer is over the world
  float pointer_x = 0, pointer_y = 0;
  bool pointer_down = false;   ///< the primary button is held
  bool secondary_down = false; ///< the secondary button is held
  float world_width = 0, world_height = 0;  ///< the world's size in world units

  [[nodiscard]] bool is_held(Key k) const { return held.test(static_cast<std::size_t>(k)); }
  void hold(Key k) { held.set(static_cast<std::size_t>(k)); }
};

/// What a module keeps between one frame's controls and the next (a drag's start, the keys held
/// last frame, a cursor): zero at first, the module's alone.
using ControlMemory = std::array<std::int32_t, 16>;

/// One world setting, for --sim list and --help.
struct WorldSetting {
  std::string_view key;
  std::string_view default_value;
  std::string_view help;
};

struct Module {
  std::string_view name;         ///< what --sim takes
  std::uint32_t version = 1;     ///< the module's own version (the fingerprint covers it too)
  std::string_view description;  ///< one line
  std::span<const WorldSetting> settings;
  /// Applies "key=value,key=value" on top of `world`'s settings (none: the defaults) and writes
  /// them back as the module's canonical bytes; false with a sentence in `error` naming the bad
  /// key or value.
  bool (*parse_world)(std::string_view text, WorldParams* world, std::string* error) = nullptr;
  /// The settings as "key=value,..." text (every setting, in a fixed order), for logs and
  /// `lockstep-replay info`; "" when the bytes are not this module's settings.
  std::string (*settings_text)(std::span<const std::uint8_t> settings) = nullptr;
  /// Builds the tick-0 simulation; nullptr when the parameters are out of range.
  SimulationFactory create = nullptr;
  /// A bot's input and commands for a tick: a pure function of (seed, tick). `out->input` comes
  /// sized input_size and zeroed, `out->commands` empty.
  void (*bot)(std::uint64_t seed, Tick tick, PlayerTick* out) = nullptr;
  /// The local player's input from this frame's controls, and any commands they issue (a click
  /// that gives an order); `out` comes as for bot. The input counts until the next frame; the
  /// commands are sent once.
  void (*from_controls)(const Controls& controls, ControlMemory& memory, PlayerTick* out) = nullptr;
  std::string_view controls_help;  ///< e.g. "arrows/WASD steer"
  std::uint32_t input_size = 0;    ///< bytes of one player's input per tick, 0..kMaxInputBytes
  /// The world the golden trace and replay of this module use ("key=value,..."), with 4 players.
  std::string_view golden_world;
};

/// The fingerprint a JoinRequest carries: that of the module's default world (no settings, one
/// player), the one world a client can build before the welcome brings the server's settings. 0
/// when the module cannot build it.
std::uint64_t join_fingerprint(SimulationFactory factory);

/// A fresh PlayerTick of the module's input size, for bot() and from_controls().
PlayerTick blank_tick(const Module& m);

/// Every module built into this build, the default first.
std::span<const Module* const> builtin_modules();
/// The built-in module called `name`, or nullptr.
const Module* find_module(std::string_view name);
/// The module used when none is named.
const Module& default_module();
/// One line per built-in module: name, version, description and settings with their defaults
/// (what --sim list prints).
std::string module_list();

/// Loads the module of a shared library (--sim-lib FILE.so, the C ABI of module_abi.h). One
/// library per process. nullptr with a sentence in `error` when the file is missing, is not a
/// module, speaks another ABI version or lacks part of the table.
const Module* load_module_library(const std::string& path, std::string* error);

/// The module the options name: --sim-lib FILE when given, else --sim NAME (see choose_module).
/// nullptr after printing the list or logging why, with the exit code in `*exit_code`.
const Module* module_from_options(std::string_view sim, const std::string& sim_lib, int* exit_code);

/// What --sim NAME asks for: the built-in module, or nullptr after printing the list to stdout
/// for "list" (`*exit_code` 0) or logging the known names for an unknown one (`*exit_code` 2).
const Module* choose_module(std::string_view name, int* exit_code);

/// What --world ARG names: ARG itself ("k=v,k=v"), or for "@FILE" the settings in FILE (one
/// key=value per line or comma-separated; blank lines and lines from '#' on are skipped). False
/// with a sentence in `error` when the file cannot be read.
bool world_settings_text(const std::string& arg, std::string* text, std::string* error);

/// A world setting's whole number in [lo, hi]; false with a sentence naming the key otherwise.
bool parse_setting_number(const std::string& key, const std::string& value, std::uint64_t lo, std::uint64_t hi,
                          std::uint64_t* out, std::string* error);

/// Splits "k=v,k=v" into pairs; false with `error` set on an entry without '=' or an empty key.
bool split_settings(std::string_view text, std::vector<std::pair<std::string, std::string>>* out, std::string* error);

}  // namespace lockstep
