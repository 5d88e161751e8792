// The skirmish's rules (rules.hpp): the start of a world and one tick, in integers only.
#include "rules.hpp"

#include <algorithm>
#include <cassert>
#include <cstdlib>

#include "lockstep/rng.hpp"

namespace lockstep {

namespace skirmish_rules {

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


}  // namespace skirmish_rules


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

}  // namespace lockstep
