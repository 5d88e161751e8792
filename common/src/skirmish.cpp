// The skirmish (skirmish.hpp): integers only from the settings to the hash. Every pass goes over
// units in id order and every choice breaks ties by id, so results do not depend on the compiler,
// the optimizer or the machine.
#include "lockstep/skirmish.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <string>

#include "lockstep/bytes.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {

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

std::uint16_t read_u16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | (b[at + 1] << 8));
}
void put_u16(std::vector<std::uint8_t>& out, std::uint16_t v) {
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

std::uint32_t army_side(std::uint32_t units) {
  return static_cast<std::uint32_t>(isqrt64(std::uint64_t{units} - 1) + 1);
}

Fixed base_coord(const SkirmishSettings& s, std::int32_t per_mille) {
  return static_cast<Fixed>(std::int64_t{s.map} * kFixedOne * per_mille / 1000);
}

Rocks make_rocks(const SkirmishSettings& s, std::uint32_t players) {
  Rocks r;
  r.side = s.map;
  r.cell.assign(std::size_t{s.map} * s.map, 0);
  // Rock-free squares around every army's starting block.
  const std::int64_t half = (std::int64_t{army_side(s.units)} * kC.spacing / 2 >> kFixedShift) + kC.base_clearance;
  auto near_base = [&](std::int64_t cx, std::int64_t cy) {
    for (std::uint32_t p = 0; p < std::min<std::uint32_t>(players, 8); ++p) {
      const std::int64_t bx = base_coord(s, kBases[p][0]) >> kFixedShift, by = base_coord(s, kBases[p][1]) >> kFixedShift;
      if (cx >= bx - half && cx <= bx + half && cy >= by - half && cy <= by + half) return true;
    }
    return false;
  };
  Rng rng = Rng::seeded(s.seed, 0x726f636b73ULL);
  const std::uint64_t want = std::uint64_t{s.map} * s.map * s.rocks / 100;
  std::uint64_t placed = 0;
  for (std::uint32_t attempt = 0; attempt < 20'000 && placed < want; ++attempt) {
    const std::uint32_t w = 2 + rng.below(5), h = 2 + rng.below(5);
    const std::uint32_t x0 = rng.below(s.map), y0 = rng.below(s.map);
    for (std::uint32_t y = y0; y < std::min(s.map, y0 + h); ++y)
      for (std::uint32_t x = x0; x < std::min(s.map, x0 + w); ++x) {
        std::uint8_t& c = r.cell[std::size_t{y} * s.map + x];
        if (c == 0 && !near_base(x, y)) c = 1, ++placed;
      }
  }
  return r;
}

void init(const SkirmishSettings& s, std::uint32_t players, const Rocks& rocks, SkirmishState& st) {
  st.tick = 0;
  st.players = players;
  st.settings = s;
  st.resize(players * s.units);
  const std::uint32_t side = army_side(s.units);
  Rng rng = Rng::seeded(s.seed, 0x756e697473ULL);
  for (std::uint32_t u = 0; u < st.count(); ++u) {
    const std::uint32_t p = u / s.units, k = u % s.units;
    const Fixed bx = base_coord(s, kBases[p % 8][0]), by = base_coord(s, kBases[p % 8][1]);
    const std::int64_t ox = (std::int64_t{k % side} - side / 2) * kC.spacing + rng.below(kC.spacing / 4);
    const std::int64_t oy = (std::int64_t{k / side} - side / 2) * kC.spacing + rng.below(kC.spacing / 4);
    st.x[u] = static_cast<Fixed>(std::clamp<std::int64_t>(bx + ox, 0, st.side() - 1));
    st.y[u] = static_cast<Fixed>(std::clamp<std::int64_t>(by + oy, 0, st.side() - 1));
    if (rocks.at(st.x[u], st.y[u])) st.x[u] = bx, st.y[u] = by;  // a crowded map: start on the base point
    st.tx[u] = st.x[u];
    st.ty[u] = st.y[u];
    st.hp[u] = kC.hp;
    st.target[u] = kNone;
    st.owner[u] = p;
  }
}

// ---- one tick ----

struct Scratch {
  std::vector<std::uint32_t> cell_start, cell_items, cursor, cell_of;
  std::vector<std::uint32_t> owners;  // per cell: bit p = a unit of player p is in it
  std::vector<std::int32_t> damage;
  std::vector<Fixed> nx, ny;
  std::uint32_t grid = 0;  // cells per side
};

void build_grid(const SkirmishState& s, Scratch& g) {
  g.grid = (s.settings.map >> (kC.cell_shift - kFixedShift)) + 1;
  const std::size_t cells = std::size_t{g.grid} * g.grid;
  g.cell_start.assign(cells + 1, 0);
  g.owners.assign(cells, 0);
  g.cell_of.assign(s.count(), UINT32_MAX);
  for (std::uint32_t u = 0; u < s.count(); ++u) {
    if (s.hp[u] <= 0) continue;
    const auto c = static_cast<std::uint32_t>((s.y[u] >> kC.cell_shift) * g.grid + (s.x[u] >> kC.cell_shift));
    g.cell_of[u] = c;
    ++g.cell_start[c + 1];
    g.owners[c] |= 1u << s.owner[u];
  }
  for (std::size_t c = 0; c < cells; ++c) g.cell_start[c + 1] += g.cell_start[c];
  g.cursor.assign(g.cell_start.begin(), g.cell_start.end() - 1);
  g.cell_items.resize(g.cell_start[cells]);
  for (std::uint32_t u = 0; u < s.count(); ++u)  // ascending ids within a cell
    if (g.cell_of[u] != UINT32_MAX) g.cell_items[g.cursor[g.cell_of[u]]++] = u;
}

// Calls fn(v) for every live unit in the cells within `reach` cells of unit u's cell that hold a
// unit of a player in `owners` (a bit mask), in cell order.
template <class Fn>
void for_near(const SkirmishState& s, const Scratch& g, std::uint32_t u, std::int32_t reach, std::uint32_t owners,
              Fn&& fn) {
  const std::int32_t cx = s.x[u] >> kC.cell_shift, cy = s.y[u] >> kC.cell_shift;
  const auto n = static_cast<std::int32_t>(g.grid);
  for (std::int32_t y = std::max(0, cy - reach); y <= std::min(n - 1, cy + reach); ++y)
    for (std::int32_t x = std::max(0, cx - reach); x <= std::min(n - 1, cx + reach); ++x) {
      const std::size_t c = static_cast<std::size_t>(y) * g.grid + static_cast<std::size_t>(x);
      if ((g.owners[c] & owners) == 0) continue;
      for (std::uint32_t i = g.cell_start[c]; i < g.cell_start[c + 1]; ++i) fn(g.cell_items[i]);
    }
}

std::int64_t dist2(const SkirmishState& s, std::uint32_t a, std::uint32_t b) {
  const std::int64_t dx = std::int64_t{s.x[b]} - s.x[a], dy = std::int64_t{s.y[b]} - s.y[a];
  return dx * dx + dy * dy;
}

// (dx, dy) scaled to length `len` (zero stays zero); integer division truncates toward zero.
void scale_to(std::int64_t dx, std::int64_t dy, std::int64_t len, std::int64_t* ox, std::int64_t* oy) {
  const auto d = static_cast<std::int64_t>(isqrt64(static_cast<std::uint64_t>(dx * dx + dy * dy)));
  if (d == 0) {
    *ox = *oy = 0;
    return;
  }
  *ox = dx * len / d;
  *oy = dy * len / d;
}

Fixed fraction_to_fixed(const SkirmishState& s, std::uint16_t f) {
  return static_cast<Fixed>(std::int64_t{s.side()} * f / 65536);
}

// The orders of one slot's commands, in the order issued. Invalid commands do nothing.
void apply_command(SkirmishState& s, std::uint32_t slot, std::span<const std::uint8_t> c) {
  if (c.empty() || slot >= s.players) return;
  const std::uint32_t first = slot * s.settings.units, last = first + s.settings.units;  // the issuer's units
  switch (static_cast<SkirmishCommand>(c[0])) {
    case SkirmishCommand::SelectRange: {
      if (c.size() != 5) return;
      const std::uint32_t lo = read_u16(c, 1), hi = read_u16(c, 3);
      if (lo > hi) return;
      for (std::uint32_t u = first; u < last; ++u) s.selected[u] = (s.hp[u] > 0 && u >= lo && u <= hi) ? 1 : 0;
      return;
    }
    case SkirmishCommand::SelectArea: {
      if (c.size() != 9) return;
      const Fixed x0 = fraction_to_fixed(s, read_u16(c, 1)), y0 = fraction_to_fixed(s, read_u16(c, 3));
      const Fixed x1 = fraction_to_fixed(s, read_u16(c, 5)), y1 = fraction_to_fixed(s, read_u16(c, 7));
      if (x0 > x1 || y0 > y1) return;
      for (std::uint32_t u = first; u < last; ++u)
        s.selected[u] = (s.hp[u] > 0 && s.x[u] >= x0 && s.x[u] <= x1 && s.y[u] >= y0 && s.y[u] <= y1) ? 1 : 0;
      return;
    }
    case SkirmishCommand::Move:
    case SkirmishCommand::AttackMove: {
      if (c.size() != 5) return;
      const Fixed px = fraction_to_fixed(s, read_u16(c, 1)), py = fraction_to_fixed(s, read_u16(c, 3));
      const auto order = c[0] == static_cast<std::uint8_t>(SkirmishCommand::Move) ? SkirmishOrder::Move : SkirmishOrder::AttackMove;
      for (std::uint32_t u = first; u < last; ++u)
        if (s.selected[u] && s.hp[u] > 0) {
          s.order[u] = static_cast<std::uint32_t>(order);
          s.tx[u] = px, s.ty[u] = py;
          if (order == SkirmishOrder::Move) s.target[u] = kNone;
        }
      return;
    }
    case SkirmishCommand::Stop: {
      if (c.size() != 1) return;
      for (std::uint32_t u = first; u < last; ++u)
        if (s.selected[u] && s.hp[u] > 0) {
          s.order[u] = static_cast<std::uint32_t>(SkirmishOrder::Idle);
          s.tx[u] = s.x[u], s.ty[u] = s.y[u];
          s.target[u] = kNone;
        }
      return;
    }
  }
}

bool valid_enemy(const SkirmishState& s, std::uint32_t u, std::uint32_t v) {
  return v < s.count() && s.hp[v] > 0 && s.owner[v] != s.owner[u] && dist2(s, u, v) <= std::int64_t{kC.sight} * kC.sight;
}

void skirmish_step(SkirmishState& s, const Rocks& rocks, const InputFrame& f, Scratch& g) {
  assert(f.tick == s.tick + 1);
  // 1. Commands, in slot order and the order issued; a slot not present issues none.
  for (std::size_t i = 0; i < f.commands.size(); ++i)
    if ((f.present >> f.commands[i].slot) & 1u) apply_command(s, f.commands[i].slot, f.command(i));

  build_grid(s, g);
  const std::uint32_t n = s.count();
  const std::int32_t sight_cells = (kC.sight + (1 << kC.cell_shift) - 1) >> kC.cell_shift;  // ceil(sight / cell)
  const std::int64_t range2 = std::int64_t{kC.range} * kC.range, arrive2 = std::int64_t{kC.arrive} * kC.arrive;
  const std::int64_t sep = 2 * std::int64_t{kC.radius}, sep2 = sep * sep;
  g.damage.assign(n, 0);
  g.nx.assign(s.x.begin(), s.x.end());
  g.ny.assign(s.y.begin(), s.y.end());

  for (std::uint32_t u = 0; u < n; ++u) {
    if (s.hp[u] <= 0) continue;
    if (s.cooldown[u] > 0) --s.cooldown[u];
    const auto order = static_cast<SkirmishOrder>(s.order[u]);
    // 2. Targets: keep a valid one; look for the nearest enemy every few ticks (staggered by id).
    if (order == SkirmishOrder::Move || !valid_enemy(s, u, s.target[u])) s.target[u] = kNone;
    if (order != SkirmishOrder::Move && (s.tick + u) % static_cast<std::uint32_t>(kC.retarget) == 0) {
      std::uint32_t best = s.target[u];
      std::int64_t best_d = best == kNone ? INT64_MAX : dist2(s, u, best);
      for_near(s, g, u, sight_cells, ~(1u << s.owner[u]), [&](std::uint32_t v) {
        if (s.owner[v] == s.owner[u]) return;
        const std::int64_t d = dist2(s, u, v);
        if (d <= std::int64_t{kC.sight} * kC.sight && (d < best_d || (d == best_d && v < best))) best = v, best_d = d;
      });
      s.target[u] = best;
    }
    // 3. Where it wants to go this tick.
    std::int64_t wx = 0, wy = 0;
    if (s.target[u] != kNone) {
      const std::uint32_t v = s.target[u];
      if (dist2(s, u, v) <= range2) {
        if (s.cooldown[u] == 0) {
          g.damage[v] += kC.damage;
          s.cooldown[u] = static_cast<std::uint32_t>(kC.cooldown);
        }
      } else {
        scale_to(std::int64_t{s.x[v]} - s.x[u], std::int64_t{s.y[v]} - s.y[u], kC.speed, &wx, &wy);
      }
    } else if (order != SkirmishOrder::Idle) {
      const std::int64_t dx = std::int64_t{s.tx[u]} - s.x[u], dy = std::int64_t{s.ty[u]} - s.y[u];
      if (dx * dx + dy * dy <= arrive2) s.order[u] = static_cast<std::uint32_t>(SkirmishOrder::Idle);
      else scale_to(dx, dy, kC.speed, &wx, &wy);
    }
    s.vx[u] = static_cast<Fixed>(wx);
    s.vy[u] = static_cast<Fixed>(wy);
    // 4. Keep apart: each overlapping neighbour pushes half the overlap. A moving unit touching
    // one that already arrived at the same point has arrived too (a crowd cannot all stand on it).
    std::int64_t px = 0, py = 0;
    std::uint32_t crowd = 0;
    bool touches_arrived = false;
    for_near(s, g, u, 1, UINT32_MAX, [&](std::uint32_t v) {
      if (v == u) return;
      const std::int64_t dx = std::int64_t{s.x[u]} - s.x[v], dy = std::int64_t{s.y[u]} - s.y[v];
      const std::int64_t d2 = dx * dx + dy * dy;
      if (d2 >= sep2) return;
      ++crowd;
      if (s.order[v] == static_cast<std::uint32_t>(SkirmishOrder::Idle) && s.owner[v] == s.owner[u] &&
          s.tx[v] == s.tx[u] && s.ty[v] == s.ty[u])
        touches_arrived = true;
      const auto d = static_cast<std::int64_t>(isqrt64(static_cast<std::uint64_t>(d2)));
      const std::int64_t push = (sep - d) / 2;
      if (d == 0) {
        px += u < v ? push : -push;  // the same place: the lower id steps right
      } else {
        px += dx * push / d;
        py += dy * push / d;
      }
    });
    if (touches_arrived && s.target[u] == kNone && order != SkirmishOrder::Idle)
      s.order[u] = static_cast<std::uint32_t>(SkirmishOrder::Idle);
    // In a crowd the push outweighs the pull, so a crowd spreads instead of packing ever tighter.
    if (crowd >= 3) wx /= 2, wy /= 2;
    const std::int64_t cap = 2 * std::int64_t{kC.speed};
    px = std::clamp(px, -cap, cap);
    py = std::clamp(py, -cap, cap);
    // 5. Move, sliding along rock and the map's edge.
    const std::int64_t limit = s.side() - 1;
    const auto mx = static_cast<Fixed>(std::clamp<std::int64_t>(s.x[u] + wx + px, 0, limit));
    const auto my = static_cast<Fixed>(std::clamp<std::int64_t>(s.y[u] + wy + py, 0, limit));
    if (!rocks.at(mx, my)) g.nx[u] = mx, g.ny[u] = my;
    else if (!rocks.at(mx, s.y[u])) g.nx[u] = mx;
    else if (!rocks.at(s.x[u], my)) g.ny[u] = my;
  }
  // 6. Everyone moves and takes its damage at once.
  s.x.swap(g.nx);
  s.y.swap(g.ny);
  for (std::uint32_t u = 0; u < n; ++u) {
    if (g.damage[u] == 0 || s.hp[u] <= 0) continue;
    s.hp[u] = std::max(0, s.hp[u] - g.damage[u]);
    if (s.hp[u] == 0) {
      s.selected[u] = 0;
      s.order[u] = static_cast<std::uint32_t>(SkirmishOrder::Idle);
      s.target[u] = kNone;
      s.vx[u] = s.vy[u] = 0;
    }
  }
  s.tick = f.tick;
}

// ---- the Simulation ----

constexpr std::size_t kHeaderBytes = 4 + 4 + 20 + 4;

void write_state(const SkirmishState& s, std::vector<std::uint8_t>& out) {
  out.reserve(out.size() + kHeaderBytes + std::size_t{s.count()} * kFields * 4);
  ByteWriter w(out);
  w.u32(s.tick);
  w.u32(s.players);
  const auto settings = encode_skirmish_settings(s.settings);
  w.raw(settings.data(), settings.size());
  w.u32(s.count());
  for (const auto* v : {&s.x, &s.y, &s.vx, &s.vy, &s.tx, &s.ty, &s.hp}) w.array(std::span<const std::int32_t>(*v));
  for (const auto* v : {&s.target, &s.cooldown, &s.order, &s.owner, &s.selected})
    w.array(std::span<const std::uint32_t>(*v));
}

class SkirmishSimulation final : public Simulation {
 public:
  SkirmishSimulation(const SkirmishSettings& settings, std::uint32_t players) : rocks_(make_rocks(settings, players)) {
    init(settings, players, rocks_, s_);
  }
  SkirmishSimulation(const SkirmishSimulation& o) : s_(o.s_), rocks_(o.rocks_) {}

  Tick tick() const override { return s_.tick; }
  void step(const InputFrame& frame) override { skirmish_step(s_, rocks_, frame, scratch_); }
  std::uint32_t input_size() const override { return 0; }

  void serialize(std::vector<std::uint8_t>& out) const override { write_state(s_, out); }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    ByteReader r(bytes);
    SkirmishState n;
    n.tick = r.u32();
    n.players = r.u32();
    std::array<std::uint8_t, 20> settings{};
    r.raw(settings.data(), settings.size());
    const std::uint32_t count = r.u32();
    if (!r.ok() || !decode_skirmish_settings(settings, &n.settings) || n.players < 1 ||
        n.players > static_cast<std::uint32_t>(kMaxPlayers) || count != n.players * n.settings.units ||
        count > kSkirmishMaxUnits || r.remaining() != std::size_t{count} * kFields * 4)
      return false;
    n.resize(count);
    for (auto* v : {&n.x, &n.y, &n.vx, &n.vy, &n.tx, &n.ty, &n.hp}) r.array(std::span<std::int32_t>(*v));
    for (auto* v : {&n.target, &n.cooldown, &n.order, &n.owner, &n.selected}) r.array(std::span<std::uint32_t>(*v));
    // What stepping and drawing index by must be in range; any other value is a state the step
    // handles (a state that diverged by one bit must still load, to be localized).
    const Fixed side = n.side();
    for (std::uint32_t u = 0; u < count; ++u)
      if (n.x[u] < 0 || n.x[u] >= side || n.y[u] < 0 || n.y[u] >= side ||
          n.owner[u] >= static_cast<std::uint32_t>(kMaxPlayers))
        return false;
    if (n.settings.seed != s_.settings.seed || n.settings.map != s_.settings.map ||
        n.settings.rocks != s_.settings.rocks || n.settings.units != s_.settings.units || n.players != s_.players)
      rocks_ = make_rocks(n.settings, n.players);
    s_ = std::move(n);
    return true;
  }
  std::uint64_t hash() const override {
    scratch_bytes_.clear();
    write_state(s_, scratch_bytes_);
    return hash_bytes(scratch_bytes_);
  }

  std::uint32_t entity_count() const override { return s_.count(); }
  std::uint64_t entity_hash(std::uint32_t e) const override {
    std::array<std::uint32_t, kFields> bits{};
    for (std::uint32_t k = 0; k < kFields; ++k) bits[k] = s_.field(e, k);
    return hash_bytes({reinterpret_cast<const std::uint8_t*>(bits.data()), sizeof bits});
  }
  std::vector<FieldValue> entity_fields(std::uint32_t e) const override {
    std::vector<FieldValue> out;
    for (std::uint32_t k = 0; k < kFields; ++k) out.push_back({kFieldNames[k], FieldValue::Kind::U32, s_.field(e, k)});
    return out;
  }
  std::vector<FieldValue> global_fields() const override {
    return {{"tick", FieldValue::Kind::U32, s_.tick},
            {"players", FieldValue::Kind::U32, s_.players},
            {"seed", FieldValue::Kind::U64, s_.settings.seed},
            {"map", FieldValue::Kind::U32, s_.settings.map}};
  }

  std::unique_ptr<Simulation> clone() const override { return std::make_unique<SkirmishSimulation>(*this); }
  void assign(const Simulation& other) override {
    const auto& o = dynamic_cast<const SkirmishSimulation&>(other);
    s_ = o.s_;  // vectors reuse their storage
    if (rocks_.side != o.rocks_.side || rocks_.cell != o.rocks_.cell) rocks_ = o.rocks_;
  }

  std::uint64_t fingerprint() const override {
    return world_fingerprint(code_fingerprint(), encode_skirmish_settings(s_.settings));
  }
  static std::uint64_t code_fingerprint() {
    static const std::uint64_t fp = [] {
      std::vector<std::uint8_t> id{'s', 'k', 'i', 'r', 'm', 'i', 's', 'h'};
      ByteWriter w(id);
      w.u32(skirmish_module().version);
      w.raw(&kC, sizeof kC);
      w.raw(kBases.data(), sizeof kBases);
      return hash_bytes(id);
    }();
    return fp;
  }

  void draw(const Simulation& previous, float alpha, DrawList& out) const override {
    const auto& prev = dynamic_cast<const SkirmishSimulation&>(previous).s_;
    out.clear();
    constexpr float kUnit = 1.0f / static_cast<float>(kFixedOne);
    // Rock, as runs of cells along each row.
    for (std::uint32_t y = 0; y < rocks_.side; ++y)
      for (std::uint32_t x = 0; x < rocks_.side;) {
        if (!rocks_.cell[std::size_t{y} * rocks_.side + x]) {
          ++x;
          continue;
        }
        std::uint32_t end = x;
        while (end < rocks_.side && rocks_.cell[std::size_t{y} * rocks_.side + end]) ++end;
        out.push_back(DrawShape::rect(static_cast<float>(x), static_cast<float>(y), static_cast<float>(end - x), 1.0f, -1, 7));
        x = end;
      }
    std::vector<std::uint32_t> alive(kMaxPlayers, 0);
    const float r = static_cast<float>(kC.radius) * kUnit;
    const bool same = prev.count() == s_.count();
    for (std::uint32_t u = 0; u < s_.count(); ++u) {
      if (s_.hp[u] <= 0) continue;
      ++alive[s_.owner[u]];
      const float x0 = static_cast<float>(same ? prev.x[u] : s_.x[u]) * kUnit, x1 = static_cast<float>(s_.x[u]) * kUnit;
      const float y0 = static_cast<float>(same ? prev.y[u] : s_.y[u]) * kUnit, y1 = static_cast<float>(s_.y[u]) * kUnit;
      const float x = x0 + (x1 - x0) * alpha, y = y0 + (y1 - y0) * alpha;
      if (s_.selected[u]) out.push_back(DrawShape::circle(x, y, r * 1.5f, -1, 1));
      out.push_back(DrawShape::circle(x, y, r, static_cast<std::int32_t>(s_.owner[u])));
    }
    for (std::uint32_t p = 0; p < s_.players; ++p)
      out.push_back(DrawShape::label(1.0f + 12.0f * static_cast<float>(p % 8), 1.0f + 3.0f * static_cast<float>(p / 8),
                                     2.0f, "P" + std::to_string(p) + " " + std::to_string(alive[p]),
                                     static_cast<std::int32_t>(p)));
  }
  float width() const override { return static_cast<float>(s_.settings.map); }
  float height() const override { return static_cast<float>(s_.settings.map); }

  // Selector s names unit s % count and field (s / count) % 12 (kFieldNames order).
  void perturb(std::uint64_t selector) override {
    const std::uint32_t u = static_cast<std::uint32_t>(selector % s_.count());
    const auto k = static_cast<std::uint32_t>((selector / s_.count()) % kFields);
    switch (k) {
      case 0: s_.x[u] ^= 1; break;
      case 1: s_.y[u] ^= 1; break;
      case 2: s_.vx[u] ^= 1; break;
      case 3: s_.vy[u] ^= 1; break;
      case 4: s_.tx[u] ^= 1; break;
      case 5: s_.ty[u] ^= 1; break;
      case 6: s_.hp[u] ^= 1; break;
      case 7: s_.target[u] ^= 1; break;
      case 8: s_.cooldown[u] ^= 1; break;
      case 9: s_.order[u] ^= 1; break;
      case 10: s_.owner[u] ^= 1; break;
      default: s_.selected[u] ^= 1; break;
    }
  }

 private:
  SkirmishState s_;
  Rocks rocks_;
  Scratch scratch_;
  mutable std::vector<std::uint8_t> scratch_bytes_;
};

// ---- the module ----

constexpr std::array kSettings{
    WorldSetting{"seed", "1", "map and army seed"},
    WorldSetting{"units", "200", "units per player; all players' together at most 20000"},
    WorldSetting{"map", "128", "cells per side, 32..1024"},
    WorldSetting{"rocks", "6", "percent of the cells that are rock, 0..30"},
};

bool parse_world(std::string_view text, WorldParams* world, std::string* error) {
  SkirmishSettings s;
  if (!decode_skirmish_settings(world->settings, &s)) s = SkirmishSettings{};
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!split_settings(text, &pairs, error)) return false;
  for (const auto& [key, value] : pairs) {
    std::uint64_t v = 0;
    if (key == "seed") {
      if (!parse_setting_number(key, value, 0, UINT64_MAX, &v, error)) return false;
      s.seed = v;
    } else if (key == "units") {
      if (!parse_setting_number(key, value, 1, kSkirmishMaxUnits, &v, error)) return false;
      s.units = static_cast<std::uint32_t>(v);
    } else if (key == "map") {
      if (!parse_setting_number(key, value, 32, 1024, &v, error)) return false;
      s.map = static_cast<std::uint32_t>(v);
    } else if (key == "rocks") {
      if (!parse_setting_number(key, value, 0, 30, &v, error)) return false;
      s.rocks = static_cast<std::uint32_t>(v);
    } else {
      *error = "the skirmish has no world setting '" + key + "' (it has seed, units, map, rocks)";
      return false;
    }
  }
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
  return "seed=" + std::to_string(s.seed) + ",units=" + std::to_string(s.units) + ",map=" + std::to_string(s.map) +
         ",rocks=" + std::to_string(s.rocks);
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

}  // namespace

std::uint64_t isqrt64(std::uint64_t v) {
  if (v == 0) return 0;
  // Digit by digit from the highest power of four at most v (found by counting leading zeros).
  std::uint64_t r = 0, bit = std::uint64_t{1} << ((63 - __builtin_clzll(v)) & ~1);
  while (bit != 0) {
    if (v >= r + bit) {
      v -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

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

std::unique_ptr<Simulation> make_skirmish(const WorldParams& params) {
  SkirmishSettings s;
  if (params.players < 1 || params.players > static_cast<std::uint32_t>(kMaxPlayers) ||
      !decode_skirmish_settings(params.settings, &s) || std::uint64_t{s.units} * params.players > kSkirmishMaxUnits)
    return nullptr;
  return std::make_unique<SkirmishSimulation>(s, params.players);
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
  };
  return m;
}

}  // namespace lockstep
