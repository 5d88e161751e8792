// The demo world: a 2D arena where each player steers a disc by thrust and turn, and passive
// discs bounce off each other and the walls through a uniform-grid broad phase.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/module.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

inline constexpr std::uint32_t kMaxBodies = 1'000'000;  ///< passive bodies per world
inline constexpr float kDt = 1.0f / static_cast<float>(kTickRate);  ///< seconds per tick

/// One player's arena input, quantized (floats never cross the network): 2 bytes, thrust then
/// turn, each a signed byte.
struct LOCKSTEP_API ArenaInput {
  std::int8_t thrust = 0;  ///< forward thrust, -127..127 (full reverse .. full forward)
  std::int8_t turn = 0;    ///< turn rate, -127..127 (full right .. full left)

  static constexpr std::uint32_t kBytes = 2;
  /// Writes the 2 bytes into `out` (at least 2 bytes).
  void encode(std::span<std::uint8_t> out) const {
    out[0] = static_cast<std::uint8_t>(thrust);
    out[1] = static_cast<std::uint8_t>(turn);
  }
  /// Inverse of encode(); every 2 bytes are a valid input (-128 is read as -127), anything else
  /// is no input.
  [[nodiscard]] static ArenaInput decode(std::span<const std::uint8_t> in) {
    if (in.size() != kBytes) return {};
    auto clamp = [](std::uint8_t b) {
      const auto v = static_cast<std::int8_t>(b);
      return v == -128 ? std::int8_t{-127} : v;
    };
    return {clamp(in[0]), clamp(in[1])};
  }
  friend constexpr bool operator==(ArenaInput, ArenaInput) = default;
};

/// Arena constants; they enter the fingerprint, so changing one refuses old peers.
struct LOCKSTEP_API ArenaConstants {
  float player_radius = 1.0f;     ///< world units
  float body_radius = 0.5f;       ///< world units
  float area_per_entity = 8.0f;   ///< world units^2: the arena grows with the entity count
  float min_side = 24.0f;         ///< world units
  float thrust_accel = 40.0f;     ///< units/s^2 at full thrust
  float turn_rate = 3.0f;         ///< rad/s at full turn
  float player_drag = 0.995f;     ///< velocity factor per tick for player discs
  float max_speed = 30.0f;        ///< units/s: below radius per tick, so nothing tunnels
  float initial_speed = 6.0f;     ///< units/s, largest initial passive velocity component
  std::uint32_t kick_interval = 64;  ///< every this many ticks one random body is kicked
  float kick_speed = 8.0f;        ///< units/s added by a kick
  float cell_size = 2.0f;         ///< broad-phase cell, >= the largest contact distance
};

/// The whole state. Structure of arrays; entity i is the player disc of slot i for
/// i < players, a passive body after that. Every field is serialized and hashed.
struct LOCKSTEP_API ArenaState {
  Tick tick = 0;
  std::uint32_t players = 0;
  float width = 0, height = 0;
  Rng rng;
  std::vector<float> x, y, vx, vy;  ///< per entity, world units and units/s
  std::vector<float> heading;       ///< per player, radians in [-pi, pi)

  [[nodiscard]] std::uint32_t entities() const { return static_cast<std::uint32_t>(x.size()); }
};

/// Reusable broad-phase storage; contents never affect results.
struct LOCKSTEP_API ArenaScratch {
  std::vector<std::uint32_t> cell_of;     ///< per entity
  std::vector<std::uint32_t> cell_start;  ///< per cell + 1, prefix sums
  std::vector<std::uint32_t> cell_items;  ///< entity ids grouped by cell, ascending within a cell
  std::vector<std::uint32_t> cursor;      ///< per cell, next write position while sorting
  std::vector<float> gx, gy, gr;          ///< positions and radii in cell order, for the overlap test
};

/// The arena's world settings. Canonical bytes: the seed (u64) and the bodies (u32), little-endian,
/// 12 bytes; no bytes at all mean the defaults.
struct LOCKSTEP_API ArenaSettings {
  std::uint64_t seed = 1;      ///< world generation seed
  std::uint32_t bodies = 64;   ///< passive bodies, 0..kMaxBodies
};
LOCKSTEP_API std::vector<std::uint8_t> encode_arena_settings(const ArenaSettings& s);
/// False when `bytes` are not 0 or 12 bytes or name more than kMaxBodies bodies.
LOCKSTEP_API bool decode_arena_settings(std::span<const std::uint8_t> bytes, ArenaSettings* out);
/// An arena world of `players` with these settings.
LOCKSTEP_API WorldParams arena_world(std::uint64_t seed, std::uint32_t bodies, std::uint32_t players);

/// Builds the tick-0 state (valid ranges: players 1..kMaxPlayers, bodies 0..kMaxBodies).
LOCKSTEP_API void arena_init(const ArenaSettings& settings, std::uint32_t players, ArenaState& out);

/// Advances `s` by one tick under `frame` (frame.tick == s.tick + 1): the result is a pure
/// function of the state before the call and the frame. `scratch` is working memory only.
LOCKSTEP_API void arena_step(ArenaState& s, const InputFrame& frame, ArenaScratch& scratch);

/// The arena module (--sim arena): its settings, bot, controls and factory.
LOCKSTEP_API const Module& arena_module();
/// The Simulation implementation of the arena. Returns nullptr when `params` are out of range.
LOCKSTEP_API std::unique_ptr<Simulation> make_arena(const WorldParams& params);

/// Checks `params` and decodes its settings.
LOCKSTEP_API bool arena_params(const WorldParams& params, ArenaSettings* settings, std::string* reason);

}  // namespace lockstep
