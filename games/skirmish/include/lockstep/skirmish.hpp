// The skirmish: an RTS-style battle in fixed-point integer arithmetic (no floating point in the
// simulation at all). Each player owns a few hundred units on a grid map with rock cells; players
// give orders by commands (select by id range or area, move, stop, attack-move); units steer,
// keep apart and fight with integer math. It has no per-tick input (input size 0): everything a
// player does is a command.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

/// Fixed point: 16 fractional bits (one world unit is 65536).
using Fixed = std::int32_t;
inline constexpr int kFixedShift = 16;
inline constexpr Fixed kFixedOne = 1 << kFixedShift;

inline constexpr std::uint32_t kSkirmishMaxUnits = 20'000;  ///< all players' units together

/// The skirmish's world settings. Canonical bytes: seed (u64), units per player (u32), map side
/// in cells (u32), rock percentage (u32), little-endian, 20 bytes; no bytes: the defaults.
struct LOCKSTEP_API SkirmishSettings {
  std::uint64_t seed = 1;
  std::uint32_t units = 200;  ///< per player, 1..kSkirmishMaxUnits / players
  std::uint32_t map = 128;    ///< cells per side (a cell is one world unit), 32..1024
  std::uint32_t rocks = 6;    ///< percent of the map's cells that are rock, 0..30
};
LOCKSTEP_API std::vector<std::uint8_t> encode_skirmish_settings(const SkirmishSettings& s);
/// False when `bytes` are not 0 or 20 bytes or a value is out of range.
LOCKSTEP_API bool decode_skirmish_settings(std::span<const std::uint8_t> bytes, SkirmishSettings* out);

/// Commands. Points are fractions of the map side, 0..65535 (so a bot needs no map size);
/// integers little-endian. Anything else (unknown kind, wrong length, first > last) does nothing.
enum class SkirmishCommand : std::uint8_t {
  SelectRange = 1,  ///< [1][u16 first id][u16 last id]: select the issuer's live units with ids in range
  SelectArea = 2,   ///< [2][u16 x0][u16 y0][u16 x1][u16 y1]: select the issuer's live units inside
  Move = 3,         ///< [3][u16 x][u16 y]: selected units go there, ignoring enemies
  Stop = 4,         ///< [4]: selected units stop (and defend where they stand)
  AttackMove = 5,   ///< [5][u16 x][u16 y]: selected units go there, fighting what they meet
};
LOCKSTEP_API std::vector<std::uint8_t> skirmish_select_range(std::uint16_t first, std::uint16_t last);
LOCKSTEP_API std::vector<std::uint8_t> skirmish_select_area(std::uint16_t x0, std::uint16_t y0, std::uint16_t x1, std::uint16_t y1);
LOCKSTEP_API std::vector<std::uint8_t> skirmish_order(SkirmishCommand kind, std::uint16_t x = 0, std::uint16_t y = 0);

/// Unit orders.
enum class SkirmishOrder : std::uint32_t { Idle = 0, Move = 1, AttackMove = 2 };

/// The skirmish module (--sim skirmish).
LOCKSTEP_API const Module& skirmish_module();
/// Tick 0 of a skirmish world; nullptr when the settings or players are out of range.
LOCKSTEP_API std::unique_ptr<Simulation> make_skirmish(const WorldParams& params);

/// Integer square root: the largest r with r*r <= v.
LOCKSTEP_API std::uint64_t isqrt64(std::uint64_t v);

}  // namespace lockstep
