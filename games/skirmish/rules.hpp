// The skirmish's rules, shared by its files (private to games/skirmish): the constants, the
// state, the rock map, the start and one tick. Integers only: every pass goes over units in id
// order and every choice breaks ties by id, so results do not depend on the compiler, the
// optimizer or the machine.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/skirmish.hpp"

namespace lockstep::skirmish_rules {

// ---- constants (they enter the fingerprint) ----

struct SkirmishConstants {
  std::int32_t radius = 23'000;          // unit radius, fixed (0.35 units)
  std::int32_t speed = 5'243;            // per tick (8 units/s)
  std::int32_t sight = 7 * kFixedOne;    // enemies nearer than this are engaged
  std::int32_t range = 98'304;           // attack reach (1.5 units)
  std::int32_t arrive = kFixedOne / 2;   // a move ends this near its point
  std::int32_t hp = 100;
  std::int32_t damage = 8;
  std::int32_t cooldown = 50;            // ticks between attacks
  std::int32_t retarget = 10;            // ticks between looks for the nearest enemy
  std::int32_t cell_shift = kFixedShift;  // broad-phase cells of 1 unit (the separation reach)
  std::int32_t spacing = 52'429;         // between units at the start (0.8 units)
  std::int32_t base_clearance = 4;       // extra rock-free cells around a starting army
};
constexpr SkirmishConstants kC{};
constexpr std::uint32_t kNone = UINT32_MAX;
constexpr std::uint32_t kFields = 12;
constexpr std::array<const char*, kFields> kFieldNames{"x",  "y",      "vx",       "vy",    "tx",    "ty",
                                                       "hp", "target", "cooldown", "order", "owner", "selected"};

// Where the armies start, as fractions of the map side out of 1000; player p starts at kBases[p % 8].
constexpr std::array<std::array<std::int32_t, 2>, 8> kBases{{
    {150, 150}, {850, 850}, {850, 150}, {150, 850}, {500, 120}, {500, 880}, {120, 500}, {880, 500}}};

inline std::uint16_t read_u16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | (b[at + 1] << 8));
}
inline void put_u16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}


struct SkirmishState {
  Tick tick = 0;
  std::uint32_t players = 0;
  SkirmishSettings settings;
  // Per unit; unit u belongs to player u / settings.units.
  std::vector<Fixed> x, y, vx, vy, tx, ty;
  std::vector<std::int32_t> hp;
  std::vector<std::uint32_t> target, cooldown, order, owner, selected;

  [[nodiscard]] std::uint32_t count() const { return static_cast<std::uint32_t>(x.size()); }
  [[nodiscard]] Fixed side() const { return static_cast<Fixed>(settings.map) << kFixedShift; }
  void resize(std::uint32_t n) {
    for (auto* v : {&x, &y, &vx, &vy, &tx, &ty}) v->assign(n, 0);
    hp.assign(n, 0);
    for (auto* v : {&target, &cooldown, &order, &owner, &selected}) v->assign(n, 0);
  }
  // Field k of unit u as its 32 bits, in kFieldNames order.
  [[nodiscard]] std::uint32_t field(std::uint32_t u, std::uint32_t k) const {
    switch (k) {
      case 0: return static_cast<std::uint32_t>(x[u]);
      case 1: return static_cast<std::uint32_t>(y[u]);
      case 2: return static_cast<std::uint32_t>(vx[u]);
      case 3: return static_cast<std::uint32_t>(vy[u]);
      case 4: return static_cast<std::uint32_t>(tx[u]);
      case 5: return static_cast<std::uint32_t>(ty[u]);
      case 6: return static_cast<std::uint32_t>(hp[u]);
      case 7: return target[u];
      case 8: return cooldown[u];
      case 9: return order[u];
      case 10: return owner[u];
      default: return selected[u];
    }
  }
};

// The rock map: derived from the settings alone, so it is rebuilt, never serialized.
struct Rocks {
  std::uint32_t side = 0;
  std::vector<std::uint8_t> cell;  // side x side, 1 = rock
  [[nodiscard]] bool at(Fixed px, Fixed py) const {
    if (px < 0 || py < 0) return true;
    const auto cx = static_cast<std::uint32_t>(px >> kFixedShift), cy = static_cast<std::uint32_t>(py >> kFixedShift);
    return cx >= side || cy >= side || cell[std::size_t{cy} * side + cx] != 0;
  }
};

std::uint32_t army_side(std::uint32_t units);
Fixed base_coord(const SkirmishSettings& s, std::int32_t per_mille);
Rocks make_rocks(const SkirmishSettings& s, std::uint32_t players);
/// Tick 0: every army on its base.
void init(const SkirmishSettings& s, std::uint32_t players, const Rocks& rocks, SkirmishState& st);

// ---- one tick ----

struct Scratch {
  std::vector<std::uint32_t> cell_start, cell_items, cursor, cell_of;
  std::vector<std::uint32_t> owners;  // per cell: bit p = a unit of player p is in it
  std::vector<std::int32_t> damage;
  std::vector<Fixed> nx, ny;
  std::uint32_t grid = 0;  // cells per side
};

/// Advances `s` by one tick under `f` (f.tick == s.tick + 1); `g` is working memory only.
void skirmish_step(SkirmishState& s, const Rocks& rocks, const InputFrame& f, Scratch& g);

}  // namespace lockstep::skirmish_rules
