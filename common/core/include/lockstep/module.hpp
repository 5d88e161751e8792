// Simulation modules: everything the stock executables need to host, join, record, replay and
// check one game without knowing which game it is. A module bundles the simulation's factory,
// its world settings (parsed from --world key=value,...), its bots, how a player's controls
// become its input, and its name and version. The built-in games are in games/ (games.hpp); a
// team's module comes from a shared library (load_module_library) or is passed in-process.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/module_abi.h"
#include "lockstep/settings.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

/// The keys a renderer reports, whatever the game: a module maps the ones it uses to its input.
enum class Key : std::uint8_t {
  Up, Down, Left, Right, Space, Enter,
  A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z,
  Count
};

/// What the local player is doing this frame: the keys held, and the pointer in world units.
struct LOCKSTEP_API Controls {
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

struct LOCKSTEP_API Module {
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
  /// The libraries a loaded module links, less the C and C++ runtimes: each one's build joins the
  /// fingerprint, except those the module opts out of (lockstep_uncovered_libraries), listed with
  /// the build "opted out"; empty for a module without any, or passed in-process.
  std::span<const LibraryBuild> libraries;
  /// A loaded or passed-in module's build id as its fingerprint takes it: the table's (or the
  /// library file's hash), with the covered libraries' builds folded in. What a game that owns
  /// its state presents as lockstep_game.build_id to join this module's sessions. 0 for a
  /// built-in module.
  std::uint64_t build_id = 0;
  /// For the desync tools, each optional (nullptr: the page shows raw values). What an entity is
  /// ("ship", "unit of player 2"); where it is in world units (false: nowhere to circle); one
  /// player's input for a tick, and one command, as a line of text ("thrust 127 turn -5").
  std::string (*entity_kind)(const Simulation& sim, std::uint32_t entity) = nullptr;
  bool (*entity_position)(const Simulation& sim, std::uint32_t entity, float* x, float* y) = nullptr;
  std::string (*input_text)(std::span<const std::uint8_t> input) = nullptr;
  std::string (*command_text)(std::span<const std::uint8_t> command) = nullptr;
  /// A loaded module's machine code: its library file's GNU build id (hex), or "xxh3:" and the
  /// hash of the file's bytes when it has none. Two builds of the same sources with other flags,
  /// for another architecture or with a statically linked library built otherwise differ here
  /// while their fingerprints agree; a server admits only its own code or code the determinism
  /// gate showed equal to it. "" for a built-in or passed-in module (not checked).
  std::string_view code = {};
  /// Fused multiply-add instructions in that machine code (counted at load): a build with FMA
  /// contraction computes other results, and a refusal at join names it by this count.
  std::uint32_t fma_instructions = 0;
};

/// The fingerprint a JoinRequest carries: that of the module's default world (no settings, one
/// player), the one world a client can build before the welcome brings the server's settings. 0
/// when the module cannot build it.
LOCKSTEP_API std::uint64_t join_fingerprint(const WorldFactory& factory);

/// A fresh PlayerTick of the module's input size, for bot() and from_controls().
LOCKSTEP_API PlayerTick blank_tick(const Module& m);

/// Loads the module of a shared library (--sim-lib FILE.so, the C ABI of module_abi.h). One
/// library per process. The libraries it needs join its build id (Module::libraries): the GNU
/// build id of each, read from memory at load (tens of microseconds). A module opts a library out
/// by exporting `const char lockstep_uncovered_libraries[]` ("libbox2d;libfoo.so.1": sonames or
/// their stems), as lockstep_add_module(... UNCOVERED ...) does. nullptr with a sentence in `error` when the file is missing, is not a
/// module, speaks another ABI version or lacks part of the table.
LOCKSTEP_API const Module* load_module_library(const std::string& path, std::string* error);
/// A confirmed frame as module_abi.h's lockstep_frame, its commands in `commands` (reused); valid
/// while `frame` and `commands` are unchanged.
LOCKSTEP_API lockstep_frame c_frame(const InputFrame& frame, std::vector<lockstep_command>* commands);
/// C fields (module_abi.h's lockstep_field) as FieldValues: a NULL name is "?", a kind past the
/// last is the last.
LOCKSTEP_API std::vector<FieldValue> field_values(std::span<const lockstep_field> fields);
/// The code part of a C module's fingerprint: its name, version, build id, ABI version and input
/// size (world_fingerprint adds the settings). A game that steps its own state (lockstep_session.h)
/// presents the same identity as the module the server hosts.
LOCKSTEP_API std::uint64_t module_code_fingerprint(std::string_view name, std::uint32_t version, std::uint64_t build_id,
                                      std::uint32_t input_size);
/// The module of a table a game passes in-process (no library to load), checked as a loaded
/// one's is; one module per process, as above. Its build_id must not be 0.
LOCKSTEP_API const Module* module_from_table(const lockstep_module_v2* table, std::string* error);

}  // namespace lockstep
